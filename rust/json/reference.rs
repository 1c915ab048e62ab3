//! A slow, obviously correct recursive-descent reading of a whole text, for the tests and the
//! fuzz target: what the incremental scanner must agree with, whatever the split.

use super::error::JsonError;
use super::scanner::MAX_DEPTH;

/// What a text is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Complete,
    Incomplete,
    /// Invalid from this byte offset on.
    Invalid(usize),
}

impl Verdict {
    /// The verdict of a scanner's or accumulator's `status()`.
    pub fn of(status: &Result<(), JsonError>) -> Verdict {
        match status {
            Ok(()) => Verdict::Complete,
            Err(e) if e.is_invalid() => Verdict::Invalid(e.offset),
            Err(_) => Verdict::Incomplete,
        }
    }
}

enum Stop {
    /// Ran out of input where more was needed.
    End,
    /// The byte at this offset cannot continue the text.
    Bad(usize),
}

pub struct Reference<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
}

impl Reference<'_> {
    pub fn verdict(text: &str) -> Verdict {
        let mut r = Reference {
            b: text.as_bytes(),
            i: 0,
            depth: 0,
        };
        match r.value() {
            Ok(()) => {
                r.ws();
                if r.i < r.b.len() {
                    Verdict::Invalid(r.i)
                } else {
                    Verdict::Complete
                }
            }
            Err(Stop::End) => Verdict::Incomplete,
            Err(Stop::Bad(at)) => Verdict::Invalid(at),
        }
    }

    fn peek(&self) -> Result<u8, Stop> {
        self.b.get(self.i).copied().ok_or(Stop::End)
    }

    fn ws(&mut self) {
        while matches!(self.b.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn expect(&mut self, want: u8) -> Result<(), Stop> {
        if self.peek()? != want {
            return Err(Stop::Bad(self.i));
        }
        self.i += 1;
        Ok(())
    }

    fn value(&mut self) -> Result<(), Stop> {
        self.ws();
        match self.peek()? {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => self.string(),
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.word(b"null"),
            b'N' => self.word(b"NaN"),
            b'I' => self.word(b"Infinity"),
            _ => Err(Stop::Bad(self.i)),
        }
    }

    fn enter(&mut self) -> Result<(), Stop> {
        if self.depth == MAX_DEPTH {
            return Err(Stop::Bad(self.i));
        }
        self.depth += 1;
        self.i += 1;
        Ok(())
    }

    fn object(&mut self) -> Result<(), Stop> {
        self.enter()?;
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            self.ws();
            if self.peek()? != b'"' {
                return Err(Stop::Bad(self.i));
            }
            self.string()?;
            self.ws();
            self.expect(b':')?;
            self.value()?;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                _ => return Err(Stop::Bad(self.i)),
            }
        }
    }

    fn array(&mut self) -> Result<(), Stop> {
        self.enter()?;
        self.ws();
        if self.peek()? == b']' {
            self.i += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            self.value()?;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                _ => return Err(Stop::Bad(self.i)),
            }
        }
    }

    fn string(&mut self) -> Result<(), Stop> {
        self.i += 1;
        loop {
            match self.peek()? {
                b'"' => {
                    self.i += 1;
                    return Ok(());
                }
                b'\\' => {
                    self.i += 1;
                    match self.peek()? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 1,
                        b'u' => {
                            self.i += 1;
                            for _ in 0..4 {
                                if !self.peek()?.is_ascii_hexdigit() {
                                    return Err(Stop::Bad(self.i));
                                }
                                self.i += 1;
                            }
                        }
                        _ => return Err(Stop::Bad(self.i)),
                    }
                }
                c if c < 0x20 => return Err(Stop::Bad(self.i)),
                _ => self.i += 1,
            }
        }
    }

    fn digits(&mut self) -> Result<(), Stop> {
        if !self.peek()?.is_ascii_digit() {
            return Err(Stop::Bad(self.i));
        }
        while matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        Ok(())
    }

    /// A number; running out of input after a digit ends it (the caller decides).
    fn number(&mut self) -> Result<(), Stop> {
        if self.peek()? == b'-' {
            self.i += 1;
            if self.peek()? == b'I' {
                return self.word(b"Infinity");
            }
        }
        if self.peek()? == b'0' {
            self.i += 1;
        } else {
            self.digits()?;
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            self.digits()?;
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek()?, b'+' | b'-') {
                self.i += 1;
            }
            self.digits()?;
        }
        Ok(())
    }

    fn word(&mut self, word: &[u8]) -> Result<(), Stop> {
        for &w in word {
            self.expect(w)?;
        }
        Ok(())
    }
}
