//! Incremental JSON: the fragments of one JSON text (tool-call arguments) validated as they
//! arrive, with events a builder can turn into values without reading anything twice.
//!
//! [`Scanner`] is the state machine; [`Accumulator`] keeps the text beside one. The Python
//! binding (`python/json.rs`) runs a second scanner over the text when a partial view is
//! asked for, building Python objects from its [`Events`] and extending them in place.

mod accumulator;
mod error;
pub mod record;
pub mod reference;
mod scanner;

pub use accumulator::Accumulator;
pub use error::{ErrorKind, JsonError};
pub use scanner::{Events, Literal, Scanner, MAX_DEPTH};

#[cfg(test)]
mod tests;
