//! The incremental JSON scanner: a push-down state machine fed fragments of one text.
//!
//! All of its state is explicit (nesting stack, inside a string or a key, escape and `\u`
//! progress, number or literal in progress), so feeding costs the length of the fragment and
//! nothing else, whatever came before. It accepts exactly what `json.loads` accepts: RFC 8259
//! plus `NaN`, `Infinity` and `-Infinity`, with whitespace limited to space, tab, LF and CR and
//! raw control characters refused inside strings.
//!
//! The scanner reports what it sees to an [`Events`] sink; `()` is the sink that only
//! validates. Decoding stays with the sink: unescaped runs arrive as `&str` slices of the input
//! and escapes as text or raw UTF-16 code units (a `\u` surrogate pair is two units, and a lone
//! surrogate is legal JSON, so pairing is the sink's decision).

use super::error::{ErrorKind, JsonError};

/// The deepest nesting of arrays and objects accepted. It bounds the cost of a change path
/// (one element per level) and stays below Python's recursion limit, so the parsed value can
/// still be printed, compared and copied.
pub const MAX_DEPTH: usize = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Literal {
    True,
    False,
    Null,
    NaN,
    Infinity,
    NegInfinity,
}

impl Literal {
    /// The letters to match; for `-Infinity` the ones after the sign.
    fn word(self) -> &'static [u8] {
        match self {
            Literal::True => b"true",
            Literal::False => b"false",
            Literal::Null => b"null",
            Literal::NaN => b"NaN",
            Literal::Infinity | Literal::NegInfinity => b"Infinity",
        }
    }

    fn expected(self) -> &'static str {
        match self {
            Literal::True => "the rest of `true`",
            Literal::False => "the rest of `false`",
            Literal::Null => "the rest of `null`",
            Literal::NaN => "the rest of `NaN`",
            Literal::Infinity => "the rest of `Infinity`",
            Literal::NegInfinity => "the rest of `-Infinity`",
        }
    }
}

/// What the scanner saw, in text order. Every method defaults to doing nothing.
///
/// A string (or key) is `begin_*`, any number of `text`/`code_unit`, `end_*`; a number is
/// any number of `number` pieces (concatenated, its text) then `end_number`, which comes
/// only once a byte after it proves it finished (or from [`Scanner::finish`]). Any split of
/// the text into fragments gives the same events, up to how text and number pieces are cut.
pub trait Events {
    fn begin_object(&mut self) {}
    fn end_object(&mut self) {}
    fn begin_array(&mut self) {}
    fn end_array(&mut self) {}
    fn begin_key(&mut self) {}
    fn end_key(&mut self) {}
    fn begin_string(&mut self) {}
    fn end_string(&mut self) {}
    /// Decoded text of the current string or key: a raw run or a simple escape.
    fn text(&mut self, _text: &str) {}
    /// A `\uXXXX` escape of the current string or key.
    fn code_unit(&mut self, _unit: u16) {}
    /// A piece of the current number's text.
    fn number(&mut self, _piece: &str) {}
    fn end_number(&mut self) {}
    fn literal(&mut self, _literal: Literal) {}
}

/// Validation only.
impl Events for () {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    None,
    Backslash,
    Hex { digits: u8, unit: u16 },
}

/// Where inside a number we are; `Zero`, `Int`, `Frac` and `ExpInt` may end the number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpInt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A value is due; right after `[` a `]` is also fine.
    Value {
        array_first: bool,
    },
    /// A key is due; right after `{` a `}` is also fine.
    Key {
        first: bool,
    },
    Colon,
    /// A value inside a container ended: `,` or the closer is due.
    After,
    /// The root value ended: only whitespace may follow.
    End,
    Str {
        key: bool,
        escape: Escape,
    },
    Num(Num),
    Lit {
        literal: Literal,
        matched: u8,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    Object,
    Array,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[derive(Debug, Clone)]
pub struct Scanner {
    state: State,
    stack: Vec<Container>,
    /// Bytes fed so far.
    offset: usize,
    /// The first invalid byte; the scanner refuses everything after it.
    error: Option<JsonError>,
}

impl Default for Scanner {
    fn default() -> Self {
        Self::new()
    }
}

impl Scanner {
    pub fn new() -> Self {
        Scanner {
            state: State::Value { array_first: false },
            stack: Vec::new(),
            offset: 0,
            error: None,
        }
    }

    /// Heap bytes the scanner holds (its nesting stack), for `__sizeof__`.
    pub fn heap_bytes(&self) -> usize {
        self.stack.capacity() * std::mem::size_of::<Container>()
    }

    /// Bytes fed so far (up to the error, if any).
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Arrays and objects currently open.
    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    pub fn error(&self) -> Option<&JsonError> {
        self.error.as_ref()
    }

    /// Whether the text so far is one complete value (followed by whitespace only). A bare
    /// top-level number counts as complete although more digits could still extend it.
    pub fn is_complete(&self) -> bool {
        self.error.is_none()
            && (self.state == State::End
                || (self.stack.is_empty()
                    && matches!(
                        self.state,
                        State::Num(Num::Zero | Num::Int | Num::Frac | Num::ExpInt)
                    )))
    }

    /// Inside a string (or key) and not inside an escape: where any character may come next.
    pub fn in_string_text(&self) -> bool {
        matches!(
            self.state,
            State::Str {
                escape: Escape::None,
                ..
            }
        )
    }

    /// `Ok` when complete; otherwise the invalid byte or why the text is incomplete.
    pub fn status(&self) -> Result<(), JsonError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if self.is_complete() {
            return Ok(());
        }
        Err(JsonError {
            kind: ErrorKind::Incomplete,
            offset: self.offset,
            expected: self.expected(),
        })
    }

    /// Mark the text invalid from outside (the binding's lone surrogates). Later feeds fail.
    pub fn poison(&mut self, error: JsonError) {
        if self.error.is_none() {
            self.error = Some(error);
        }
    }

    /// End of input: a top-level number in progress ends here. Fails unless complete.
    pub fn finish<E: Events + ?Sized>(&mut self, events: &mut E) -> Result<(), JsonError> {
        self.status()?;
        if let State::Num(_) = self.state {
            events.end_number();
            self.state = State::End;
        }
        Ok(())
    }

    /// What is valid next, in words.
    fn expected(&self) -> &'static str {
        match self.state {
            State::Value { array_first: true } => "a value or ']'",
            State::Value { array_first: false } => "a value",
            State::Key { first: true } => "a string key or '}'",
            State::Key { first: false } => "a string key",
            State::Colon => "':'",
            State::After => match self.stack.last() {
                Some(Container::Object) => "',' or '}'",
                _ => "',' or ']'",
            },
            State::End => "the end of the text (only whitespace may follow the value)",
            State::Str {
                escape: Escape::None,
                ..
            } => "more of the string or its closing '\"'",
            State::Str {
                escape: Escape::Backslash,
                ..
            } => "an escape: one of \" \\ / b f n r t u",
            State::Str {
                escape: Escape::Hex { .. },
                ..
            } => "a hex digit of the \\u escape",
            State::Num(Num::Minus) => "a digit or `Infinity` after '-'",
            State::Num(Num::Dot) => "a digit after '.'",
            State::Num(Num::Exp) => "a digit or sign of the exponent",
            State::Num(Num::ExpSign) => "a digit of the exponent",
            State::Num(Num::Zero | Num::Int | Num::Frac | Num::ExpInt) => match self.stack.last() {
                Some(Container::Object) => "more of the number, ',' or '}'",
                Some(Container::Array) => "more of the number, ',' or ']'",
                None => "more of the number or the end of the text",
            },
            State::Lit { literal, .. } => literal.expected(),
        }
    }

    #[cold]
    fn fail(
        &mut self,
        text: &str,
        at: usize,
        kind: Option<ErrorKind>,
        expected: &'static str,
    ) -> JsonError {
        let found = text
            .get(at..)
            .and_then(|s| s.chars().next())
            .unwrap_or('\0');
        let error = JsonError {
            kind: kind.unwrap_or(ErrorKind::Unexpected { found }),
            offset: self.offset + at,
            expected,
        };
        self.error = Some(error.clone());
        error
    }

    #[cold]
    fn unexpected(&mut self, text: &str, at: usize) -> JsonError {
        let expected = self.expected();
        self.fail(text, at, None, expected)
    }

    fn value_done(&mut self) {
        self.state = if self.stack.is_empty() {
            State::End
        } else {
            State::After
        };
    }

    fn open(&mut self, container: Container, text: &str, at: usize) -> Result<(), JsonError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(self.fail(
                text,
                at,
                Some(ErrorKind::TooDeep),
                "a value nested at most 512 arrays and objects deep",
            ));
        }
        self.stack.push(container);
        Ok(())
    }

    fn close<E: Events + ?Sized>(&mut self, events: &mut E) {
        match self.stack.pop() {
            Some(Container::Object) => events.end_object(),
            Some(Container::Array) => events.end_array(),
            None => {}
        }
        self.value_done();
    }

    /// Scan one fragment. After the first invalid byte every call returns that error.
    pub fn feed<E: Events + ?Sized>(
        &mut self,
        text: &str,
        events: &mut E,
    ) -> Result<(), JsonError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let bytes = text.as_bytes();
        let mut i = 0;
        // Where the number in progress starts in this fragment (0 when it began earlier).
        let mut num_start = 0;
        while let Some(&b) = bytes.get(i) {
            i = match self.state {
                State::Str { key, escape } => self.in_string(text, i, key, escape, events)?,
                State::Num(num) => self.in_number(text, i, num, num_start, events)?,
                State::Lit { literal, matched } => {
                    self.in_literal(text, i, literal, matched, events)?
                }
                _ if is_ws(b) => i + 1,
                _ => {
                    self.in_structure(text, i, b, events)?;
                    if let State::Num(_) = self.state {
                        num_start = i;
                    }
                    i + 1
                }
            };
        }
        // A lone `-` waits: it may start `-Infinity` rather than a number.
        if let State::Num(num) = self.state {
            if num != Num::Minus {
                if let Some(piece) = text.get(num_start..).filter(|p| !p.is_empty()) {
                    events.number(piece);
                }
            }
        }
        self.offset += bytes.len();
        Ok(())
    }

    /// Between tokens: whitespace, punctuation, or the first byte of a value.
    fn in_structure<E: Events + ?Sized>(
        &mut self,
        text: &str,
        i: usize,
        b: u8,
        events: &mut E,
    ) -> Result<(), JsonError> {
        match self.state {
            _ if is_ws(b) => {}
            State::Value { array_first } => {
                self.state = match b {
                    b'{' => {
                        self.open(Container::Object, text, i)?;
                        events.begin_object();
                        State::Key { first: true }
                    }
                    b'[' => {
                        self.open(Container::Array, text, i)?;
                        events.begin_array();
                        State::Value { array_first: true }
                    }
                    b'"' => {
                        events.begin_string();
                        State::Str {
                            key: false,
                            escape: Escape::None,
                        }
                    }
                    b'-' => State::Num(Num::Minus),
                    b'0' => State::Num(Num::Zero),
                    b'1'..=b'9' => State::Num(Num::Int),
                    b't' | b'f' | b'n' | b'N' | b'I' => {
                        let literal = match b {
                            b't' => Literal::True,
                            b'f' => Literal::False,
                            b'n' => Literal::Null,
                            b'N' => Literal::NaN,
                            _ => Literal::Infinity,
                        };
                        State::Lit {
                            literal,
                            matched: 1,
                        }
                    }
                    b']' if array_first => {
                        self.close(events);
                        return Ok(());
                    }
                    _ => return Err(self.unexpected(text, i)),
                };
            }
            State::Key { first } => match b {
                b'"' => {
                    events.begin_key();
                    self.state = State::Str {
                        key: true,
                        escape: Escape::None,
                    };
                }
                b'}' if first => self.close(events),
                _ => return Err(self.unexpected(text, i)),
            },
            State::Colon => match b {
                b':' => self.state = State::Value { array_first: false },
                _ => return Err(self.unexpected(text, i)),
            },
            State::After => match (b, self.stack.last()) {
                (b',', Some(Container::Object)) => self.state = State::Key { first: false },
                (b',', _) => self.state = State::Value { array_first: false },
                (b'}', Some(Container::Object)) | (b']', Some(Container::Array)) => {
                    self.close(events);
                }
                _ => return Err(self.unexpected(text, i)),
            },
            State::End | State::Str { .. } | State::Num(_) | State::Lit { .. } => {
                return Err(self.unexpected(text, i));
            }
        }
        Ok(())
    }

    /// Inside a string or key: reads on to its end or the fragment's; returns where to
    /// continue.
    fn in_string<E: Events + ?Sized>(
        &mut self,
        text: &str,
        mut i: usize,
        key: bool,
        mut escape: Escape,
        events: &mut E,
    ) -> Result<usize, JsonError> {
        let bytes = text.as_bytes();
        loop {
            if escape == Escape::None {
                let run_end = string_run_end(bytes, i);
                if run_end > i {
                    // Both ends sit at an ASCII byte or at an end of the fragment, so the
                    // slice falls on character boundaries.
                    if let Some(run) = text.get(i..run_end) {
                        events.text(run);
                    }
                    i = run_end;
                }
            }
            let Some(&b) = bytes.get(i) else {
                break;
            };
            escape = match escape {
                Escape::None => match b {
                    b'"' => {
                        if key {
                            events.end_key();
                            self.state = State::Colon;
                        } else {
                            events.end_string();
                            self.value_done();
                        }
                        return Ok(i + 1);
                    }
                    b'\\' => Escape::Backslash,
                    _ => {
                        return Err(self.fail(
                            text,
                            i,
                            None,
                            "a character of the string (control characters must be escaped)",
                        ))
                    }
                },
                Escape::Backslash => {
                    let unescaped = match b {
                        b'"' => "\"",
                        b'\\' => "\\",
                        b'/' => "/",
                        b'b' => "\u{8}",
                        b'f' => "\u{c}",
                        b'n' => "\n",
                        b'r' => "\r",
                        b't' => "\t",
                        b'u' => "",
                        _ => {
                            self.state = State::Str { key, escape };
                            return Err(self.unexpected(text, i));
                        }
                    };
                    if b == b'u' {
                        Escape::Hex { digits: 0, unit: 0 }
                    } else {
                        events.text(unescaped);
                        Escape::None
                    }
                }
                Escape::Hex { digits, unit } => {
                    let Some(v) = hex_value(b) else {
                        self.state = State::Str { key, escape };
                        return Err(self.unexpected(text, i));
                    };
                    let unit = unit << 4 | u16::from(v);
                    if digits == 3 {
                        events.code_unit(unit);
                        Escape::None
                    } else {
                        Escape::Hex {
                            digits: digits + 1,
                            unit,
                        }
                    }
                }
            };
            i += 1;
        }
        self.state = State::Str { key, escape };
        Ok(i)
    }

    /// Inside a literal: matches its letters up to its end or the fragment's.
    fn in_literal<E: Events + ?Sized>(
        &mut self,
        text: &str,
        mut i: usize,
        literal: Literal,
        mut matched: u8,
        events: &mut E,
    ) -> Result<usize, JsonError> {
        let word = literal.word();
        while let Some(&b) = text.as_bytes().get(i) {
            if word.get(usize::from(matched)) != Some(&b) {
                return Err(self.unexpected(text, i));
            }
            i += 1;
            matched += 1;
            if usize::from(matched) == word.len() {
                events.literal(literal);
                self.value_done();
                return Ok(i);
            }
            self.state = State::Lit { literal, matched };
        }
        Ok(i)
    }

    /// Inside a number: reads on to its end or the fragment's; returns where to continue
    /// (at the byte that ended the number, which is read again as what follows a value).
    fn in_number<E: Events + ?Sized>(
        &mut self,
        text: &str,
        mut i: usize,
        mut num: Num,
        num_start: usize,
        events: &mut E,
    ) -> Result<usize, JsonError> {
        if num == Num::Minus && i == 0 {
            // A `-` that ended the previous fragment was held back (it could have started
            // `-Infinity`); a digit now shows it is a number's.
            if text.as_bytes().first().is_some_and(u8::is_ascii_digit) {
                events.number("-");
            }
        }
        while let Some(&b) = text.as_bytes().get(i) {
            num = match (num, b) {
                (Num::Int | Num::Frac | Num::ExpInt, b'0'..=b'9') => num,
                (Num::Minus, b'0') => Num::Zero,
                (Num::Minus, b'1'..=b'9') => Num::Int,
                (Num::Minus, b'I') => {
                    self.state = State::Lit {
                        literal: Literal::NegInfinity,
                        matched: 1,
                    };
                    return Ok(i + 1);
                }
                (Num::Zero | Num::Int, b'.') => Num::Dot,
                (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Num::Exp,
                (Num::Dot, b'0'..=b'9') => Num::Frac,
                (Num::Exp, b'+' | b'-') => Num::ExpSign,
                (Num::Exp | Num::ExpSign, b'0'..=b'9') => Num::ExpInt,
                (Num::Zero | Num::Int | Num::Frac | Num::ExpInt, _) => {
                    if let Some(piece) = text.get(num_start..i).filter(|p| !p.is_empty()) {
                        events.number(piece);
                    }
                    events.end_number();
                    self.value_done();
                    return Ok(i);
                }
                _ => {
                    self.state = State::Num(num);
                    return Err(self.unexpected(text, i));
                }
            };
            i += 1;
        }
        self.state = State::Num(num);
        Ok(i)
    }
}

/// The end of the plain run of string text starting at `i`: the next quote, backslash or
/// control character, or the end of `bytes`.
fn string_run_end(bytes: &[u8], i: usize) -> usize {
    let rest = bytes.get(i..).unwrap_or_default();
    let stop = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
    let run = rest.get(..stop).unwrap_or_default();
    // Control characters are rare: check the whole run at once (vectorized), and find the
    // first one only when there is one.
    if run.iter().fold(u8::MAX, |low, &c| low.min(c)) < 0x20 {
        return i + run.iter().position(|&c| c < 0x20).unwrap_or(stop);
    }
    i + stop
}
