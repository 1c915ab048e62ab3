//! [`Recorder`]: an [`Events`] sink that keeps what it is told, normalized so that any split
//! of a text into fragments records the same list. For tests, fuzzing and debugging.

use super::scanner::{Events, Literal};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    BeginObject,
    EndObject,
    BeginArray,
    EndArray,
    BeginKey,
    EndKey,
    BeginString,
    EndString,
    /// Adjacent text pieces, joined.
    Text(String),
    CodeUnit(u16),
    /// The pieces of one number, joined; `end` once the number is known to have ended.
    Number {
        text: String,
        end: bool,
    },
    Literal(Literal),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recorder {
    pub events: Vec<Event>,
}

impl Events for Recorder {
    fn begin_object(&mut self) {
        self.events.push(Event::BeginObject);
    }
    fn end_object(&mut self) {
        self.events.push(Event::EndObject);
    }
    fn begin_array(&mut self) {
        self.events.push(Event::BeginArray);
    }
    fn end_array(&mut self) {
        self.events.push(Event::EndArray);
    }
    fn begin_key(&mut self) {
        self.events.push(Event::BeginKey);
    }
    fn end_key(&mut self) {
        self.events.push(Event::EndKey);
    }
    fn begin_string(&mut self) {
        self.events.push(Event::BeginString);
    }
    fn end_string(&mut self) {
        self.events.push(Event::EndString);
    }
    fn text(&mut self, text: &str) {
        if let Some(Event::Text(t)) = self.events.last_mut() {
            t.push_str(text);
        } else {
            self.events.push(Event::Text(text.to_owned()));
        }
    }
    fn code_unit(&mut self, unit: u16) {
        self.events.push(Event::CodeUnit(unit));
    }
    fn number(&mut self, piece: &str) {
        if let Some(Event::Number { text, end: false }) = self.events.last_mut() {
            text.push_str(piece);
        } else {
            self.events.push(Event::Number {
                text: piece.to_owned(),
                end: false,
            });
        }
    }
    fn end_number(&mut self) {
        if let Some(Event::Number { end, .. }) = self.events.last_mut() {
            *end = true;
        }
    }
    fn literal(&mut self, literal: Literal) {
        // A `-` already recorded as a number turned out to start `-Infinity`.
        if let Some(Event::Number { end: false, .. }) = self.events.last() {
            self.events.pop();
        }
        self.events.push(Event::Literal(literal));
    }
}
