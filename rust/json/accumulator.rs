//! The text of one JSON value pushed in fragments, validated as it arrives.

use super::error::JsonError;
use super::scanner::Scanner;

/// Everything pushed so far plus the scanner that has validated it.
///
/// `push` costs the length of the fragment: the scanner carries its state over, so the
/// completeness of the text is known at once and the first byte that can never be valid JSON
/// is reported by the push that brings it. The fragment that carries it is still appended to
/// the text (so the offset points into [`Accumulator::text`]); every later push is refused
/// with the same error, its fragment appended too: the text stays every fragment joined, so
/// nothing the stream delivered is lost.
#[derive(Debug, Clone, Default)]
pub struct Accumulator {
    text: String,
    scanner: Scanner,
}

impl Accumulator {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, fragment: &str) -> Result<(), JsonError> {
        self.text.push_str(fragment);
        if let Some(e) = self.scanner.error() {
            return Err(e.clone());
        }
        self.scanner.feed(fragment, &mut ())
    }

    /// Everything pushed (including the fragment that made it invalid and those after it).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Heap bytes held (the text's buffer and the scanner's stack): proportional to what was
    /// pushed, nothing reserved up front.
    pub fn heap_bytes(&self) -> usize {
        self.text.capacity() + self.scanner.heap_bytes()
    }

    pub fn is_complete(&self) -> bool {
        self.scanner.is_complete()
    }

    /// `Ok` when the text is one complete value; otherwise why not (see [`JsonError`]).
    pub fn status(&self) -> Result<(), JsonError> {
        self.scanner.status()
    }

    /// The first invalid byte, once one has arrived.
    pub fn error(&self) -> Option<&JsonError> {
        self.scanner.error()
    }

    /// The validating scanner (its state tells, for instance, whether the text ends inside a
    /// string).
    pub fn scanner(&self) -> &Scanner {
        &self.scanner
    }

    /// Declare the text invalid at its current end (the binding's lone surrogates).
    pub fn poison(&mut self, error: JsonError) {
        self.scanner.poison(error);
    }
}
