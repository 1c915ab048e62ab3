//! Why a JSON text is not (or not yet) a value: a byte offset and what was expected there.

use std::fmt;

use super::scanner::MAX_DEPTH;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// This character can never continue the text into valid JSON.
    Unexpected { found: char },
    /// An array or object opened deeper than [`MAX_DEPTH`].
    TooDeep,
    /// A lone UTF-16 surrogate in the pushed text: it has no UTF-8 form (only the binding,
    /// which receives Python strings, can meet one).
    LoneSurrogate { unit: u16 },
    /// The text is a valid prefix that ends before the value does (the empty text included).
    Incomplete,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    pub kind: ErrorKind,
    /// Byte offset in the UTF-8 text: the first bad byte, or the length of an incomplete text.
    pub offset: usize,
    /// What would have been valid at `offset`.
    pub expected: &'static str,
}

impl JsonError {
    /// Whether the text can never become valid, whatever follows.
    pub fn is_invalid(&self) -> bool {
        self.kind != ErrorKind::Incomplete
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (offset, expected) = (self.offset, self.expected);
        match self.kind {
            ErrorKind::Unexpected { found } => write!(
                f,
                "invalid JSON at byte {offset}: found {found:?}, expected {expected}"
            ),
            ErrorKind::TooDeep => write!(
                f,
                "invalid JSON at byte {offset}: arrays and objects nested deeper than {MAX_DEPTH}"
            ),
            ErrorKind::LoneSurrogate { unit } => write!(
                f,
                "invalid JSON at byte {offset}: lone surrogate U+{unit:04X} in the text has no \
                 UTF-8 form (send it escaped, as \\u{unit:04x})"
            ),
            ErrorKind::Incomplete => write!(
                f,
                "incomplete JSON: the text ends after {offset} bytes, expected {expected}"
            ),
        }
    }
}

impl std::error::Error for JsonError {}
