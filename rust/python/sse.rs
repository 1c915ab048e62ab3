//! `SSEDecoder`, `ServerSentEvent` and `JsonLinesDecoder` for Python.
//!
//! One call per chunk: the decoder runs over the whole chunk and the frames come back as one
//! list. Events are built straight from the decoder's buffers; the strings that repeat from
//! event to event (types, ids) are made once per decoder and shared.
//!
//! Errors keep their place in the stream. `feed` returns the frames before the first error
//! inside it; if there is an error, it is raised with those frames in `.events`, and whatever
//! the same chunk held after it is kept and comes first from the next `feed` or `close`.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::{PyRecursionError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::{MutexExt, PyOnceLock};
use pyo3::types::{PyByteArray, PyBytes, PyInt, PyList, PyMemoryView, PyString, PyTuple, PyType};
use pyo3::{intern, IntoPyObjectExt, PyTraverseError, PyVisit};

use super::clock::ReadClock;
use super::errors::{event_json_error, line_exception, sse_exception, LineError};
use super::json::JsonAccumulator;
use super::slots::SlotBuilder;
use super::spare_list::SpareList;
use super::template::{CutText, NumberedCut, TemplateCut};
use super::text::{str_from_utf8, OnceStr};
use super::text_buffer::TextBuffer;
use crate::jsonl;
use crate::sse::{self, decode_lossy, EventRef, SseError};

/// Parse JSON text into Python objects the way `json.loads` does (NaN and Infinity included).
pub fn parse_json<'py>(
    py: Python<'py>,
    text: &[u8],
) -> Result<Bound<'py, PyAny>, jiter::JsonError> {
    jiter::PythonParse {
        allow_inf_nan: true,
        cache_mode: jiter::StringCacheMode::Keys,
        ..jiter::PythonParse::default()
    }
    .python_parse(py, text)
}

static JSON_LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `json.loads(text)`, for a text jiter refused: `Ok(None)` when `json.loads` refuses it too.
///
/// jiter refuses a few texts `json.loads` accepts, chiefly a lone surrogate escape
/// (`"\ud83d"`: a server that cuts its text by UTF-16 units sends one when a token ends
/// inside an emoji) and nesting deeper than 200. The SDKs parse with `json.loads`, so a stream
/// they read must not abort here. Only a payload jiter refused pays for the second parse.
#[cold]
pub fn loads_fallback<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    match JSON_LOADS.import(py, "json", "loads")?.call1((text,)) {
        Ok(value) => Ok(Some(value)),
        // Not JSON (`JSONDecodeError`, an integer over the digit limit) or nested past the
        // recursion limit: the caller reports jiter's error. Anything else (memory) is raised.
        Err(e)
            if e.is_instance_of::<PyValueError>(py) || e.is_instance_of::<PyRecursionError>(py) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Borrow the bytes of a chunk; `bytes` is not copied. A `str` is refused with a clear message.
pub fn with_chunk_bytes<R>(chunk: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> R) -> PyResult<R> {
    if let Ok(b) = chunk.cast::<PyBytes>() {
        return Ok(f(b.as_bytes()));
    }
    if let Ok(b) = chunk.cast::<PyByteArray>() {
        // A copy: another thread could resize the bytearray while we read it.
        return Ok(f(&b.to_vec()));
    }
    if chunk.is_instance_of::<PyMemoryView>() {
        let b = chunk.call_method0("tobytes")?;
        return Ok(f(b.cast::<PyBytes>()?.as_bytes()));
    }
    if chunk.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(
            "streamfold decoders take bytes, not str: pass the raw response bytes \
             (httpx: response.iter_bytes(), not iter_text()/iter_lines())",
        ));
    }
    Err(PyTypeError::new_err(format!(
        "expected bytes, bytearray or memoryview, got {}",
        chunk.get_type().name()?
    )))
}

pub(super) fn poisoned(what: &str) -> PyErr {
    PyRuntimeError::new_err(format!("{what} is unusable after a panic"))
}

fn closed(what: &str) -> PyErr {
    PyValueError::new_err(format!("{what}.feed() after close()"))
}

/// One server-sent event, with the attribute names of httpx-sse.
///
/// `event` (`"message"` when the stream named none), `data`, `id` (the last event id when
/// the event was dispatched) and `retry` (`None` unless the event set one); `data_bytes` is
/// the data as received and `json()` parses it. Events compare equal, hash, pickle and copy
/// by those four fields. An event refers to the chunks it was read from rather than copying
/// them: to keep a few events of a long stream, keep their `data` or `json()`.
//
// The data is kept as the bytes received and becomes a `str` on first access: most events
// are only ever parsed as JSON, which `json()` does straight from those bytes. The bytes are
// a range of a buffer shared with other events: the `bytes` chunk that was fed, or one made
// per `feed` call (see `SSEDecoder::run`); an event of `LARGE_DATA` bytes or more that is not
// in the chunk has a buffer of its own, or is the list of chunks it was read in (see
// `sse::SseDecoder::hold_data`). Keeping an event keeps its buffers alive.
//
// A free list: a framing loop makes and drops these by the thousand, and taking one back
// from the list skips the allocator and the zeroing of a fresh object.
#[pyclass(frozen, freelist = 1024, module = "streamfold")]
pub struct ServerSentEvent {
    /// The event type; `"message"` when the stream named none.
    #[pyo3(get)]
    event: Py<PyString>,
    /// The last event id at the time this event was dispatched.
    #[pyo3(get)]
    id: Py<PyString>,
    /// The `retry` value given inside this event's block, if any.
    #[pyo3(get)]
    retry: Option<u64>,
    bytes: DataBytes,
    /// The data as `str`, once asked for.
    text: OnceStr,
}

/// What `ServerSentEvent(event, data, id, retry)` is rebuilt from (see `__reduce__`).
type Fields<'py> = (
    Py<PyString>,
    Bound<'py, PyString>,
    Py<PyString>,
    Option<u64>,
);

#[pymethods]
impl ServerSentEvent {
    #[new]
    #[pyo3(signature = (event = None, data = None, id = None, retry = None))]
    fn new(
        py: Python<'_>,
        event: Option<Bound<'_, PyString>>,
        data: Option<Bound<'_, PyString>>,
        id: Option<Bound<'_, PyString>>,
        retry: Option<u64>,
    ) -> Self {
        let event = event
            .filter(|e| e.len().is_ok_and(|n| n > 0))
            .unwrap_or_else(|| intern!(py, "message").clone());
        let data = data.unwrap_or_else(|| intern!(py, "").clone());
        let buffer = PyBytes::new(py, data.to_string_lossy().as_bytes()).unbind();
        ServerSentEvent {
            event: event.unbind(),
            id: id.unwrap_or_else(|| intern!(py, "").clone()).unbind(),
            retry,
            bytes: DataBytes::Range(buffer.clone_ref(py), 0..buffer.as_bytes(py).len()),
            text: OnceStr::with(data),
        }
    }

    /// The data, decoded as UTF-8 (invalid bytes become U+FFFD); made on first access.
    #[getter]
    pub(crate) fn data<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
        self.text
            .get_or_make(py, || str_from_utf8(py, &self.raw_bytes(py)))
    }

    /// The data as the bytes received (UTF-8, not validated). Cheaper than `data` when only a
    /// part of the payload is wanted: the providers' chunk templates compare these bytes and
    /// decode only the varying part, so the whole `str` is never made.
    #[getter]
    fn data_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        if let DataBytes::Range(buffer, range) = &self.bytes {
            if range.start == 0 && range.end == buffer.as_bytes(py).len() {
                return buffer.bind(py).clone();
            }
        }
        PyBytes::new(py, &self.raw_bytes(py))
    }

    /// The data parsed as JSON, as `json.loads` parses it (lone surrogate escapes kept).
    /// Data that is not JSON raises `InvalidEventJsonError`: a `ProtocolError` that is also
    /// the `json.JSONDecodeError` httpx-sse raises.
    // A text jiter refuses is tried again with `json.loads` (see `loads_fallback`).
    fn json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let raw = self.raw_bytes(py);
        let text = decode_lossy(&raw);
        match parse_json(py, text.as_bytes()) {
            Ok(value) => Ok(value),
            // `data` is the same lossy decoding of the bytes as `text`.
            Err(e) => loads_fallback(py, &self.data(py))?.ok_or_else(|| self.not_json(py, &e)),
        }
    }

    fn __eq__(&self, py: Python<'_>, other: &Self) -> PyResult<bool> {
        let same = |a: &Py<PyString>, b: &Py<PyString>| PyAnyMethods::eq(a.bind(py).as_any(), b);
        Ok(self.retry == other.retry
            && decode_lossy(&self.raw_bytes(py)) == decode_lossy(&other.raw_bytes(py))
            && same(&self.event, &other.event)?
            && same(&self.id, &other.id)?)
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        PyTuple::new(
            py,
            [
                self.event.bind(py).clone().into_any(),
                self.data(py).into_any(),
                self.id.bind(py).clone().into_any(),
                self.retry.into_bound_py_any(py)?,
            ],
        )?
        .hash()
    }

    /// Pickling and `copy`: the event is rebuilt from its four fields (its data as the `str`
    /// it reads as). A folded message keeps frames in its notices' and events' `raw`, and a
    /// message must survive a cache, a queue or another process.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, PyType>, Fields<'py>) {
        let py = slf.py();
        let this = slf.get();
        let fields = (
            this.event.clone_ref(py),
            this.data(py),
            this.id.clone_ref(py),
            this.retry,
        );
        (slf.get_type(), fields)
    }

    /// The event as `text/event-stream` bytes: its `event` unless `"message"` (the name a
    /// reader gives an unnamed event), its `id` unless empty, its `retry` and its data.
    fn encode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let event = self.event.bind(py).to_str()?;
        let id = self.id.bind(py).to_str()?;
        let data = self.data(py);
        super::encode::encode_to_bytes(
            py,
            data.to_str()?,
            crate::sse::encode::Fields {
                event: (event != "message").then_some(event),
                id: (!id.is_empty()).then_some(id),
                retry: self.retry,
            },
        )
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "ServerSentEvent(event={}, data={}, id={}, retry={})",
            self.event.bind(py).repr()?,
            self.data(py).repr()?,
            self.id.bind(py).repr()?,
            self.retry.into_bound_py_any(py)?.repr()?,
        ))
    }
}

impl ServerSentEvent {
    /// A new event, as a Python object.
    fn made(
        py: Python<'_>,
        event: Py<PyString>,
        id: Py<PyString>,
        retry: Option<u64>,
        bytes: DataBytes,
    ) -> PyResult<Py<PyAny>> {
        let event = ServerSentEvent {
            event,
            id,
            retry,
            bytes,
            text: OnceStr::empty(),
        };
        Bound::new(py, event).map(|e| e.into_any().unbind())
    }

    #[cold]
    fn not_json(&self, py: Python<'_>, e: &jiter::JsonError) -> PyErr {
        event_json_error(py, self.event.bind(py), self.data(py), e)
    }

    /// The data as received (see `data_bytes`); joined when it came in pieces.
    pub(crate) fn raw_bytes<'a>(&'a self, py: Python<'a>) -> Cow<'a, [u8]> {
        match &self.bytes {
            DataBytes::Range(buffer, range) => Cow::Borrowed(&buffer.as_bytes(py)[range.clone()]),
            DataBytes::Pieces(pieces) => Cow::Owned(
                pieces
                    .iter()
                    .map(|p| p.as_bytes(py))
                    .collect::<Vec<_>>()
                    .concat(),
            ),
        }
    }
}

/// Where an event's data is.
enum DataBytes {
    /// A range of a buffer, usually shared with other events: a `bytes` rather than a Rust
    /// allocation, since Python's small-object allocator is faster, and an event that is its
    /// buffer's only one hands it out as `data_bytes` uncopied.
    Range(Py<PyBytes>, Range<usize>),
    /// A big event read in pieces: the chunks the decoder held rather than copied (see
    /// `sse::SseDecoder::hold_data`), in order, with the data read between them.
    Pieces(Box<[Py<PyBytes>]>),
}

/// From this size on an event's data gets a buffer of its own, copied once from the
/// decoder: going through the shared one would hold a third copy of a big event at the peak.
const LARGE_DATA: usize = 64 * 1024;

/// The smallest chunk an event keeps rather than copies: each kept one costs a `bytes` header
/// and a pointer (about 60 bytes), which a tiny read would multiply.
const HOLD_MIN_CHUNK: usize = 1024;

/// How many distinct event types a decoder keeps as ready-made strings.
const TYPE_CACHE: usize = 16;

/// The strings that repeat from event to event, made once per decoder.
#[derive(Default)]
struct Strings {
    types: Vec<(Box<str>, Py<PyString>)>,
    next_evicted: usize,
    id: Option<(Box<str>, Py<PyString>)>,
}

impl Strings {
    fn event_type(&mut self, py: Python<'_>, name: &str) -> Py<PyString> {
        if name == "message" {
            return intern!(py, "message").clone().unbind();
        }
        if let Some((_, s)) = self.types.iter().find(|(k, _)| **k == *name) {
            return s.clone_ref(py);
        }
        let s = PyString::new(py, name).unbind();
        let entry = (Box::from(name), s.clone_ref(py));
        if self.types.len() < TYPE_CACHE {
            self.types.push(entry);
        } else {
            self.types[self.next_evicted] = entry;
            self.next_evicted = (self.next_evicted + 1) % TYPE_CACHE;
        }
        s
    }

    fn id(&mut self, py: Python<'_>, id: &str) -> Py<PyString> {
        if id.is_empty() {
            return intern!(py, "").clone().unbind();
        }
        match &self.id {
            Some((k, s)) if **k == *id => s.clone_ref(py),
            _ => {
                let s = PyString::new(py, id).unbind();
                self.id = Some((Box::from(id), s.clone_ref(py)));
                s
            }
        }
    }

    /// Phase one of a call: the event's strings, and its data appended to `arena`.
    /// `chunk` is the `bytes` being fed, when it is one: data lying inside it (the decoder
    /// hands out slices of the chunk for blocks it holds whole) is referenced, not copied.
    fn step(
        &mut self,
        py: Python<'_>,
        e: EventRef<'_>,
        chunk: Option<&Bound<'_, PyBytes>>,
        arena: &mut Vec<u8>,
        held: &mut Vec<(usize, Py<PyBytes>)>,
    ) -> Step {
        let data = match chunk.and_then(|c| Some((c, within(e.data, c.as_bytes())?))) {
            // Chunks held while its block was open: this event, the block's, is where they go.
            _ if !held.is_empty() => Data::Ready(DataBytes::Pieces(pieces(py, e.data, held))),
            Some((chunk, range)) => Data::Ready(DataBytes::Range(chunk.clone().unbind(), range)),
            None if e.data.len() >= LARGE_DATA => Data::Ready(DataBytes::Range(
                PyBytes::new(py, e.data).unbind(),
                0..e.data.len(),
            )),
            None => {
                let start = arena.len();
                arena.extend_from_slice(e.data);
                Data::Arena(start..arena.len())
            }
        };
        Step::Event {
            event: self.event_type(py, e.event),
            id: self.id(py, e.id),
            retry: e.retry,
            data,
        }
    }
}

/// The data of an event of which the decoder let us hold some chunks: the data it read
/// (`data`) with each chunk put back at its offset there, as a list of `bytes`.
fn pieces(py: Python<'_>, data: &[u8], held: &mut Vec<(usize, Py<PyBytes>)>) -> Box<[Py<PyBytes>]> {
    let mut out = Vec::with_capacity(held.len() * 2 + 1);
    let mut from = 0;
    for (at, chunk) in held.drain(..) {
        let at = at.clamp(from, data.len());
        if at > from {
            out.push(PyBytes::new(py, &data[from..at]).unbind());
        }
        out.push(chunk);
        from = at;
    }
    if from < data.len() {
        out.push(PyBytes::new(py, &data[from..]).unbind());
    }
    out.into_boxed_slice()
}

/// Where `part` lies in `whole`, when it is a (non-empty) slice of it.
fn within(part: &[u8], whole: &[u8]) -> Option<Range<usize>> {
    let start = part.as_ptr().addr().checked_sub(whole.as_ptr().addr())?;
    let end = start + part.len();
    (!part.is_empty() && end <= whole.len()).then_some(start..end)
}

/// Where an event's data is, between the two phases of a call: its place already, or a range
/// of the call's shared buffer, made once the call's events are all known.
enum Data {
    Ready(DataBytes),
    Arena(Range<usize>),
}

/// What the decoder produced, before the Python objects are made.
enum Step {
    Event {
        event: Py<PyString>,
        id: Py<PyString>,
        retry: Option<u64>,
        data: Data,
    },
    Error(SseError),
}

enum Item<E> {
    Frame(Py<PyAny>),
    Error(E),
}

/// The frames of one call: those before the first error, that error, and everything after it
/// (which waits for the next call).
struct Outbox<E> {
    head: Vec<Py<PyAny>>,
    error: Option<E>,
    tail: Vec<Item<E>>,
    /// A Python error while building a frame (out of memory): raised instead of the rest.
    failure: Option<PyErr>,
}

impl<E> Outbox<E> {
    /// `expected`: how many frames the call made (or a guess), to size the list once.
    fn new(backlog: Vec<Item<E>>, expected: usize) -> Self {
        let mut out = Outbox {
            head: Vec::with_capacity(backlog.len() + expected),
            error: None,
            tail: Vec::new(),
            failure: None,
        };
        for item in backlog {
            out.push(item);
        }
        out
    }

    fn push(&mut self, item: Item<E>) {
        if self.error.is_some() {
            self.tail.push(item);
            return;
        }
        match item {
            Item::Frame(f) => self.head.push(f),
            Item::Error(e) => self.error = Some(e),
        }
    }

    fn push_frame(&mut self, frame: PyResult<Py<PyAny>>) {
        match frame {
            Ok(f) => self.push(Item::Frame(f)),
            Err(e) => {
                self.failure.get_or_insert(e);
            }
        }
    }

    /// The list to return, or the error to raise with the frames before it; the rest of the
    /// frames go back to `backlog`.
    fn finish<'py>(
        self,
        py: Python<'py>,
        backlog: &mut Vec<Item<E>>,
        to_exception: impl FnOnce(Python<'py>, E, Bound<'py, PyList>) -> PyErr,
    ) -> PyResult<Bound<'py, PyList>> {
        *backlog = self.tail;
        if let Some(failure) = self.failure {
            return Err(failure);
        }
        let list = PyList::new(py, self.head)?;
        match self.error {
            None => Ok(list),
            Some(e) => Err(to_exception(py, e, list)),
        }
    }
}

/// What one call decodes: a `bytes` chunk (events may reference it), other bytes (copied
/// before decoding: a `bytearray` can change under us), nothing (`resume`: only the frames a
/// stepping call left), or the end of input.
#[derive(Clone, Copy)]
enum Input<'a, 'py> {
    Bytes(&'a Bound<'py, PyBytes>),
    Copy(&'a [u8]),
    Resume,
    End,
}

/// How a call hands its frames over.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Every frame, as one list (`feed`, `close`).
    Plain,
    /// The fold's (`feed_folding`, `feed_stepping`, `resume`): the armed path folds what it
    /// reads, and the call stops after a frame the fold must handle first, since handling it
    /// may arm the path again; the rest waits for `resume`. Unarmed, it stops after a few
    /// frames, more on each call that stays unarmed (see `FoldingPath::unarmed`).
    Step,
    /// `events`' (`feed_events`): the armed path makes its events, and the first frame it
    /// does not read disarms it for the rest of the call.
    Events,
}

struct SseState {
    decoder: sse::SseDecoder,
    strings: Strings,
    /// The events and errors of a call, then the data of its events not in the chunk, back to
    /// back: empty between calls, kept for their capacity when that is small (`KEEP_STEPS`,
    /// `KEEP_ARENA`).
    steps: Vec<Step>,
    arena: Vec<u8>,
    /// The chunks of the open block held rather than copied, each with its offset in the
    /// decoder's data buffer (see `sse::SseDecoder::hold_data`).
    held: Vec<(usize, Py<PyBytes>)>,
    backlog: Vec<Item<SseError>>,
    /// The frames a stepping call stopped before (`Mode::Step`), in order, their data in
    /// buffers of their own: they come first from the next call (`resume`, `feed`, `close`).
    rest: VecDeque<Step>,
    /// What a call that ends no event returns.
    spare: SpareList,
    /// The folding path (`feed_folding`): frames read as fragments of one open block go
    /// straight to the fold, and no frame object is made for them.
    folding: FoldingPath,
}

impl SseState {
    /// No frame waits to be returned (after an error, or where a stepping call stopped).
    fn idle(&self) -> bool {
        self.backlog.is_empty() && self.rest.is_empty()
    }
}

/// What `arm` set, and what `feed_folding` took since `take_folded` last asked: the frames,
/// the bytes of every chunk, the characters of text. The pipeline's counts (frame numbers in
/// errors, bytes read) and the fold's `max_message_bytes` catch up from them.
#[derive(Default)]
struct FoldingPath {
    armed: Option<Armed>,
    frames: u64,
    bytes: u64,
    characters: u64,
    /// The events `feed_events` made in the current call, in order.
    made: Vec<Py<PyAny>>,
    /// The number of the last numbered frame the path read (`Cut::Numbered`).
    sequence: Option<u64>,
    /// How many frames the next stepping call makes when it starts unarmed, before it
    /// stops: 1 after an `arm`, doubled by each such call, so a stretch the fold cannot arm
    /// costs a few calls per read, not one per frame.
    unarmed: usize,
    /// The fold's clock (`arm(clock=)`): each read `feed_folding` gets is marked on it.
    clock: Option<Py<ReadClock>>,
}

/// What the armed path does with a frame.
enum Read<'py> {
    /// Its text went to the fold.
    Folded,
    /// It is a text delta: the frame is made, then its event (`feed_events`).
    Event(Bound<'py, PyString>),
    /// Not an armed frame: it is made and returned, and the path disarmed.
    Frame,
}

impl FoldingPath {
    /// What the armed path does with `step`. Any frame it does not read may change where text
    /// goes: the path then disarms, so that frame and all after it are made, and the fold
    /// (or `events`) arms it again once it has handled them. A Python error (out of memory)
    /// is raised after the frames before it.
    fn read<'py, E>(
        &mut self,
        py: Python<'py>,
        step: &Step,
        chunk: Option<&[u8]>,
        arena: &[u8],
        out: &mut Outbox<E>,
    ) -> Read<'py> {
        let Some(armed) = self.armed.as_mut() else {
            return Read::Frame;
        };
        let read = armed.fold(py, step, chunk, arena);
        if let Cut::Numbered {
            sequence: Some(number),
            ..
        } = armed.cut
        {
            self.sequence = Some(number);
        }
        let read = match read {
            Ok(Folded::Taken(length)) => {
                self.frames += 1;
                self.characters += length;
                return Read::Folded;
            }
            Ok(Folded::Event(text)) => {
                self.frames += 1;
                return Read::Event(text);
            }
            Ok(Folded::Last(length)) => {
                self.frames += 1;
                self.characters += length;
                Read::Folded
            }
            Ok(Folded::No) => Read::Frame,
            Err(e) => {
                out.push_frame(Err(e));
                Read::Frame
            }
        };
        self.armed = None;
        read
    }

    /// How many frames a stepping call makes before it stops: 1 armed (the frame that
    /// disarms the path), else `unarmed`, which doubles.
    fn budget(&mut self) -> usize {
        if self.armed.is_some() {
            return 1;
        }
        let frames = self.unarmed.max(1);
        self.unarmed = frames.saturating_mul(2);
        frames
    }

    /// The text delta event of an armed frame, kept in `made`.
    fn make(
        &mut self,
        py: Python<'_>,
        text: Bound<'_, PyString>,
        frame: Py<PyAny>,
    ) -> PyResult<()> {
        let Some(Armed {
            sink: Sink::Events { build, values },
            ..
        }) = &self.armed
        else {
            return Ok(());
        };
        let [index, kind, choice] = values;
        let args = PyTuple::new(
            py,
            [
                index.bind(py).clone(),
                kind.bind(py).clone(),
                text.into_any(),
                choice.bind(py).clone(),
                frame.into_bound(py),
            ],
        )?;
        self.made.push(build.get().build(py, &args)?.unbind());
        Ok(())
    }
}

/// What `SSEDecoder.arm` set: a frame of type `event` whose data `cut` reads is a fragment
/// of one block of the fold, which goes to `sink`.
struct Armed {
    cut: Cut,
    event: Py<PyString>,
    sink: Sink,
    /// Characters the sink may still take (the fold's `max_message_bytes` left): a text past
    /// it is not folded here, so the fold raises its limit's error.
    room: usize,
}

/// What reads an armed frame's text.
enum Cut {
    Plain(Py<TemplateCut>),
    /// `OpenAI` Responses' deltas, numbered (`sequence_number`): a frame is the armed block's
    /// text only while its number is above `sequence` (the last one read), as the provider
    /// checks; one that is not is the provider's to warn about.
    Numbered {
        cut: Py<NumberedCut>,
        sequence: Option<u64>,
    },
}

impl Cut {
    /// `cut` (a `TemplateCut` or a `NumberedCut`), numbered from `sequence`.
    fn new(cut: &Bound<'_, PyAny>, sequence: Option<u64>) -> PyResult<Self> {
        if let Ok(plain) = cut.cast::<TemplateCut>() {
            return Ok(Cut::Plain(plain.clone().unbind()));
        }
        Ok(Cut::Numbered {
            cut: cut.cast::<NumberedCut>()?.clone().unbind(),
            sequence,
        })
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        match self {
            Cut::Plain(cut) => visit.call(cut),
            Cut::Numbered { cut, .. } => visit.call(cut),
        }
    }

    /// The text `raw` holds, with its number if it has one; `None` for a number that does
    /// not follow `sequence`.
    fn text_of<'a, 'py>(
        &self,
        py: Python<'py>,
        raw: &'a [u8],
    ) -> PyResult<Option<(Option<u64>, CutText<'a, 'py>)>> {
        match self {
            Cut::Plain(cut) => Ok(cut.get().text_of(py, raw)?.map(|text| (None, text))),
            Cut::Numbered { cut, sequence } => {
                Ok(cut
                    .get()
                    .text_of(py, raw)?
                    .filter(|(number, _)| match (number, sequence) {
                        (Some(number), Some(last)) => number > last,
                        _ => true,
                    }))
            }
        }
    }

    /// A frame numbered `number` was read.
    fn read(&mut self, number: Option<u64>) {
        if let (Cut::Numbered { sequence, .. }, Some(_)) = (self, number) {
            *sequence = number;
        }
    }
}

/// Where the fragments of the armed block go.
enum Sink {
    /// A text block's text (its `TextBuffer`), which the fold makes a `str` once.
    Text(Py<TextBuffer>),
    /// A tool call's `JsonAccumulator`, pushed to from here; should it refuse a fragment,
    /// `refused(fragment, error)` records the refusal as the fold would, and the path disarms
    /// (the call's text goes elsewhere from then on).
    Accumulator {
        acc: Py<JsonAccumulator>,
        refused: Py<PyAny>,
    },
    /// Any other `push(fragment)` (a refused call's text, kept as it came), with `refused` as
    /// above.
    Call { push: Py<PyAny>, refused: Py<PyAny> },
    /// No fold (`events`): each text becomes a `BlockDelta`, made by `build` from the
    /// block's `(index, kind, choice)`, the text and the frame (`feed_events`).
    Events {
        build: Py<SlotBuilder>,
        values: [Py<PyAny>; 3],
    },
}

impl Sink {
    /// Hand `text` over; `Ok(false)`: it went, but the sink may not take more.
    fn take(&self, py: Python<'_>, text: CutText<'_, '_>) -> PyResult<bool> {
        match self {
            Sink::Events { .. } => Ok(true),
            Sink::Text(buffer) => buffer.get().take(py, text).map(|()| true),
            Sink::Accumulator { acc, refused } => {
                Self::refuse(py, acc.get().take(py, &text), refused, &text)
            }
            Sink::Call { push, refused } => {
                let pushed = push.bind(py).call1((text.to_str(py),)).map(drop);
                Self::refuse(py, pushed, refused, &text)
            }
        }
    }

    /// `Ok(true)` if the fragment was pushed; else `refused(fragment, error)` is told and the
    /// sink takes no more.
    fn refuse(
        py: Python<'_>,
        pushed: PyResult<()>,
        refused: &Py<PyAny>,
        text: &CutText<'_, '_>,
    ) -> PyResult<bool> {
        match pushed {
            Ok(()) => Ok(true),
            Err(e) => {
                refused
                    .bind(py)
                    .call1((text.to_str(py), e.into_value(py)))?;
                Ok(false)
            }
        }
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        match self {
            Sink::Text(buffer) => visit.call(buffer),
            Sink::Accumulator { acc, refused } => {
                visit.call(acc)?;
                visit.call(refused)
            }
            Sink::Call { push, refused } => {
                visit.call(push)?;
                visit.call(refused)
            }
            Sink::Events { build, values } => {
                visit.call(build)?;
                values.iter().try_for_each(|v| visit.call(v))
            }
        }
    }
}

/// What `Armed::fold` did with a frame.
enum Folded<'py> {
    /// Its text (of this many characters) went to the sink.
    Taken(u64),
    /// Its text went to the sink, which takes no more (a call's refused fragment).
    Last(u64),
    /// Its text, for the event to make of it (`Sink::Events`).
    Event(Bound<'py, PyString>),
    /// Not an armed frame: it is made and returned.
    No,
}

impl Armed {
    /// Hand the text of `step` to the sink if it is one of the armed frames.
    fn fold<'py>(
        &mut self,
        py: Python<'py>,
        step: &Step,
        chunk: Option<&[u8]>,
        arena: &[u8],
    ) -> PyResult<Folded<'py>> {
        let Some((number, text)) = self.text(py, step, chunk, arena)? else {
            return Ok(Folded::No);
        };
        if let Sink::Events { .. } = self.sink {
            self.cut.read(number);
            return Ok(Folded::Event(text.into_str(py)));
        }
        let length = text.chars()?;
        if length > self.room {
            return Ok(Folded::No);
        }
        self.cut.read(number);
        self.room -= length;
        let length = length as u64;
        Ok(if self.sink.take(py, text)? {
            Folded::Taken(length)
        } else {
            Folded::Last(length)
        })
    }

    /// The text of `step` if it is one of the armed frames: its type is `event` and `cut`
    /// reads its data.
    fn text<'a, 'py>(
        &self,
        py: Python<'py>,
        step: &'a Step,
        chunk: Option<&'a [u8]>,
        arena: &'a [u8],
    ) -> PyResult<Option<(Option<u64>, CutText<'a, 'py>)>> {
        let Step::Event { event, data, .. } = step else {
            return Ok(None);
        };
        let raw = match data {
            Data::Arena(range) => &arena[range.clone()],
            Data::Ready(DataBytes::Range(buffer, range)) => {
                // Most events lie in the chunk being fed: its bytes are already borrowed.
                match chunk {
                    Some(c) if c.as_ptr() == buffer.as_bytes(py).as_ptr() => &c[range.clone()],
                    _ => &buffer.as_bytes(py)[range.clone()],
                }
            }
            Data::Ready(DataBytes::Pieces(_)) => return Ok(None),
        };
        let same_type = event.as_ptr() == self.event.as_ptr()
            || event.bind(py).as_any().eq(self.event.bind(py))?;
        if !same_type {
            return Ok(None);
        }
        self.cut.text_of(py, raw)
    }
}

/// Incremental `text/event-stream` decoder (WHATWG rules, UTF-8 always).
#[pyclass(frozen, module = "streamfold")]
pub struct SSEDecoder {
    inner: Mutex<SseState>,
}

impl SSEDecoder {
    /// Decode one chunk of bytes; returns the events it completed. Python calls it through
    /// `fastcall`'s method.
    pub(crate) fn feed<'py>(
        &self,
        py: Python<'py>,
        chunk: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        if let Ok(bytes) = chunk.cast::<PyBytes>() {
            let mut guard = self.lock(py)?;
            let state = &mut *guard;
            let b = bytes.as_bytes();
            // Most small reads fall inside a payload: appended, no event, nothing else to do,
            // so none of `run`'s setup is paid. A bigger read goes to `run`, which may keep it
            // uncopied; so does any read while frames held back after an error wait to be
            // returned. (A closed decoder takes no data: `run` raises.)
            if b.len() < HOLD_MIN_CHUNK && state.idle() && state.decoder.append_data(b) {
                return Ok(state.spare.take(py));
            }
            return Self::run(py, guard, Input::Bytes(bytes), Mode::Plain);
        }
        with_chunk_bytes(chunk, |bytes| {
            Self::run(py, self.lock(py)?, Input::Copy(bytes), Mode::Plain)
        })?
    }

    fn lock(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, SseState>> {
        self.inner
            .lock_py_attached(py)
            .map_err(|_| poisoned("SSEDecoder"))
    }

    /// `feed_folding` and `feed_events`: the chunk's bytes counted, then read in `mode`.
    fn feed_path<'py>(
        &self,
        py: Python<'py>,
        chunk: &Bound<'py, PyAny>,
        mode: Mode,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let Ok(bytes) = chunk.cast_exact::<PyBytes>() else {
            return Ok(None);
        };
        let mut guard = self.lock(py)?;
        let state = &mut *guard;
        let b = bytes.as_bytes();
        state.folding.bytes += b.len() as u64;
        let (frames, characters) = (state.folding.frames, state.folding.characters);
        let out = if b.len() < HOLD_MIN_CHUNK && state.idle() && state.decoder.append_data(b) {
            Ok(state.spare.take(py))
        } else {
            Self::run_state(py, state, Input::Bytes(bytes), mode)
        };
        if let Some(clock) = &state.folding.clock {
            let path = &state.folding;
            let events = path.frames != frames || out.as_ref().map_or(true, |out| !out.is_empty());
            clock
                .get()
                .folded(py, events, path.characters.saturating_sub(characters))?;
        }
        out.map(Some)
    }

    /// Two phases: the decoder runs over the whole chunk collecting events, then the Python
    /// objects are made. An event's data is a range of the chunk itself when the decoder saw its
    /// block whole there (most events, no copy), else of one buffer for the call holding the
    /// data of all the other events back to back (one allocation, not one per event).
    fn run<'py>(
        py: Python<'py>,
        mut guard: MutexGuard<'_, SseState>,
        input: Input<'_, 'py>,
        mode: Mode,
    ) -> PyResult<Bound<'py, PyList>> {
        Self::run_state(py, &mut guard, input, mode)
    }

    /// `run` on the state a caller holds locked.
    fn run_state<'py>(
        py: Python<'py>,
        state: &mut SseState,
        input: Input<'_, 'py>,
        mode: Mode,
    ) -> PyResult<Bound<'py, PyList>> {
        if matches!(input, Input::Bytes(_) | Input::Copy(_)) && state.decoder.is_closed() {
            return Err(closed("SSEDecoder"));
        }
        let (chunk, owner) = match input {
            Input::Bytes(b) => (b.as_bytes(), Some(b)),
            Input::Copy(bytes) => (bytes, None),
            Input::Resume | Input::End => (&[][..], None),
        };
        let SseState {
            decoder,
            strings,
            steps,
            arena,
            held,
            backlog,
            rest,
            spare,
            folding: path,
        } = state;
        // What a stepping call left comes before anything decoded now.
        if !rest.is_empty() {
            steps.extend(rest.drain(..));
        }
        // A big event read in pieces: a piece that is all data is kept, not copied.
        let kept = owner.is_some_and(|owner| {
            chunk.len() >= HOLD_MIN_CHUNK
                && decoder
                    .hold_data(chunk, LARGE_DATA)
                    .map(|at| held.push((at, owner.clone().unbind())))
                    .is_some()
        });
        // When the list must grow, it grows once to what a read of this size usually ends
        // (payloads of a few hundred bytes): a 16 KiB read would otherwise regrow it 4 times.
        let room = chunk.len() / STEP_BYTES_GUESS;
        let mut sink = |frame: sse::Frame<'_>| {
            if steps.len() == steps.capacity() {
                steps.reserve(room);
            }
            steps.push(match frame {
                Ok(e) => strings.step(py, e, owner, arena, held),
                Err(e) => {
                    held.clear(); // the error drops the open block
                    Step::Error(e)
                }
            });
        };
        match input {
            Input::End => decoder.close(&mut sink),
            Input::Resume => {}
            _ if kept => {}
            // Most small reads fall inside a payload: appended, nothing else to find out.
            _ if decoder.append_data(chunk) => {}
            _ => decoder.feed(chunk, &mut sink),
        }
        if matches!(input, Input::End) {
            held.clear(); // an unterminated block is dropped
        }
        if steps.is_empty() && backlog.is_empty() {
            return Ok(spare.take(py)); // most small reads end no event
        }
        // Frames held back after an error come first: none after them may be folded before.
        if mode != Mode::Plain && !backlog.is_empty() {
            path.armed = None;
        }
        let mut out = Outbox::new(std::mem::take(backlog), steps.len());
        let stop = (mode == Mode::Step).then(|| path.budget());
        let folding = (mode != Mode::Plain).then_some(path);
        Self::emit(py, steps, arena, owner, folding, stop, rest, &mut out);
        arena.clear();
        // A decoder idling between reads (thousands of open streams) keeps no buffers sized
        // by a big read; small ones are kept, since small reads would allocate every time.
        if steps.capacity() > KEEP_STEPS {
            *steps = Vec::new();
        }
        if arena.capacity() > KEEP_ARENA {
            *arena = Vec::new();
        }
        out.finish(py, backlog, sse_exception)
    }

    /// Phase two of a call: the Python objects of its steps, into `out`; with the folding
    /// `path`, its frames are first offered to the path, which folds them or makes their
    /// events (`feed_folding`, `feed_events`). With `stop` (`Mode::Step`), the call ends after
    /// that many frames are made (1 when armed: the frame that disarmed the path) unless an
    /// error came; the steps not reached go to `rest`, their data given buffers of their own.
    #[allow(clippy::too_many_arguments)]
    fn emit<'py>(
        py: Python<'py>,
        steps: &mut Vec<Step>,
        arena: &[u8],
        owner: Option<&Bound<'py, PyBytes>>,
        mut path: Option<&mut FoldingPath>,
        mut stop: Option<usize>,
        rest: &mut VecDeque<Step>,
        out: &mut Outbox<SseError>,
    ) {
        let mut shared: Option<Bound<'py, PyBytes>> = None;
        let mut steps = steps.drain(..);
        while let Some(step) = steps.next() {
            if stop == Some(0) {
                rest.push_back(step.detached(py, arena, &mut shared));
                for step in steps.by_ref() {
                    rest.push_back(step.detached(py, arena, &mut shared));
                }
                return;
            }
            let read = match path.as_deref_mut() {
                Some(path) => path.read(py, &step, owner.map(PyBytesMethods::as_bytes), arena, out),
                None => Read::Frame,
            };
            if let Read::Folded = read {
                continue;
            }
            match step {
                Step::Event {
                    event,
                    id,
                    retry,
                    data,
                } => {
                    let bytes = match data {
                        // The call's one buffer for the data not in the chunk, made when the
                        // first frame that needs it is.
                        Data::Arena(range) => DataBytes::Range(
                            shared
                                .get_or_insert_with(|| PyBytes::new(py, arena))
                                .clone()
                                .unbind(),
                            range,
                        ),
                        Data::Ready(bytes) => bytes,
                    };
                    let frame = ServerSentEvent::made(py, event, id, retry, bytes);
                    match (read, frame) {
                        (Read::Event(text), Ok(frame)) => {
                            if let Some(Err(e)) =
                                path.as_deref_mut().map(|p| p.make(py, text, frame))
                            {
                                out.push_frame(Err(e));
                            }
                        }
                        (_, frame) => out.push_frame(frame),
                    }
                    stop = stop.map(|left| left - 1);
                }
                Step::Error(e) => {
                    out.push(Item::Error(e));
                    // What follows an error waits in the backlog, made: nothing to step.
                    stop = None;
                }
            }
        }
    }
}

impl Step {
    /// The step with its data out of the call's `arena`, for a later call.
    fn detached<'py>(
        self,
        py: Python<'py>,
        arena: &[u8],
        shared: &mut Option<Bound<'py, PyBytes>>,
    ) -> Step {
        match self {
            Step::Event {
                event,
                id,
                retry,
                data: Data::Arena(range),
            } => Step::Event {
                event,
                id,
                retry,
                data: Data::Ready(DataBytes::Range(
                    shared
                        .get_or_insert_with(|| PyBytes::new(py, arena))
                        .clone()
                        .unbind(),
                    range,
                )),
            },
            step => step,
        }
    }
}

const KEEP_STEPS: usize = 8;

/// Bytes per event assumed when the list of a call's steps first grows (see `SSEDecoder::run`).
const STEP_BYTES_GUESS: usize = 128;
const KEEP_ARENA: usize = 1024;

/// A size limit given from Python: zero, a negative or an immense one is a `ValueError` naming
/// the option, not the `OverflowError` of a conversion to `usize`.
fn size_limit(value: &Bound<'_, PyAny>, name: &str) -> PyResult<usize> {
    let limit: i128 = value.extract().map_err(|err| {
        if value.is_instance_of::<PyInt>() {
            PyValueError::new_err(format!("{name} is too large: {value}"))
        } else {
            err
        }
    })?;
    // A limit of 0 would refuse every event that carries a byte: a mistake, not a setting.
    if limit < 1 {
        return Err(PyValueError::new_err(format!(
            "{name} must be 1 or more, got {limit}"
        )));
    }
    usize::try_from(limit)
        .map_err(|_| PyValueError::new_err(format!("{name} is too large: {limit}")))
}

fn event_limit(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    size_limit(value, "max_event_bytes")
}

fn line_limit(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    size_limit(value, "max_line_bytes")
}

#[pymethods]
impl SSEDecoder {
    #[new]
    #[pyo3(
        signature = (*, max_event_bytes = sse::DEFAULT_MAX_EVENT_BYTES),
        text_signature = "(*, max_event_bytes=16777216)"
    )]
    fn new(#[pyo3(from_py_with = event_limit)] max_event_bytes: usize) -> Self {
        SSEDecoder {
            inner: Mutex::new(SseState {
                decoder: sse::SseDecoder::new(max_event_bytes),
                strings: Strings::default(),
                steps: Vec::new(),
                arena: Vec::new(),
                held: Vec::new(),
                backlog: Vec::new(),
                rest: VecDeque::new(),
                spare: SpareList::default(),
                folding: FoldingPath::default(),
            }),
        }
    }

    // A decoder busy in a call (the collection may run inside one) is not looked into: what
    // it holds is then only kept alive a little longer.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        match self.inner.try_lock() {
            Ok(state) => {
                if let Some(armed) = &state.folding.armed {
                    armed.cut.traverse(&visit)?;
                    armed.sink.traverse(&visit)?;
                }
                if let Some(clock) = &state.folding.clock {
                    visit.call(clock)?;
                }
                state.spare.traverse(&visit)
            }
            Err(_) => Ok(()),
        }
    }

    fn __clear__(&self) {
        if let Ok(mut state) = self.inner.try_lock() {
            state.folding.armed = None;
            state.folding.clock = None;
            state.spare.clear();
        }
    }

    /// The folding path: from now on, `feed_folding` hands the text of each frame of type
    /// `event` whose data `cut` reads to the fold instead of returning the frame: appended to
    /// `sink` when it is a `TextBuffer` (a text block's), pushed when it is a `JsonAccumulator`
    /// (a tool call's), else `sink(text)`, and `refused(text, error)` when that raises. The first frame that is not such
    /// a frame disarms it and is returned, since handling it may change where text goes; the
    /// rest of its read waits for `resume`. A `NumberedCut` reads only frames numbered above
    /// `sequence` and the number before them (see `take_folded`).
    #[pyo3(signature = (cut, event, sink, refused = None, *, room = usize::MAX, sequence = None, clock = None))]
    #[allow(clippy::too_many_arguments)] // the Python signature
    fn arm(
        &self,
        py: Python<'_>,
        cut: &Bound<'_, PyAny>,
        event: Py<PyString>,
        sink: &Bound<'_, PyAny>,
        refused: Option<Py<PyAny>>,
        room: usize,
        sequence: Option<u64>,
        clock: Option<Py<ReadClock>>,
    ) -> PyResult<()> {
        let cut = Cut::new(cut, sequence)?;
        let sink = if let Ok(buffer) = sink.cast_exact::<TextBuffer>() {
            Sink::Text(buffer.clone().unbind())
        } else {
            let Some(refused) = refused else {
                return Err(PyTypeError::new_err(
                    "arm() takes a TextBuffer, or a JsonAccumulator or a callable with refused=",
                ));
            };
            match sink.cast_exact::<JsonAccumulator>() {
                Ok(acc) => Sink::Accumulator {
                    acc: acc.clone().unbind(),
                    refused,
                },
                Err(_) => Sink::Call {
                    push: sink.clone().unbind(),
                    refused,
                },
            }
        };
        let path = &mut self.lock(py)?.folding;
        path.armed = Some(Armed {
            cut,
            event,
            sink,
            room,
        });
        path.unarmed = 1;
        if clock.is_some() {
            path.clock = clock;
        }
        Ok(())
    }

    /// The folding path for `events`: a frame of type `event` whose data `cut` reads becomes
    /// the `BlockDelta` that `build(index, kind, text, choice, frame)` makes (`block` is
    /// `(index, kind, choice)`), returned by
    /// `feed_events` before the other frames (see `arm`).
    #[pyo3(signature = (cut, event, build, block, *, sequence = None))]
    fn arm_events(
        &self,
        py: Python<'_>,
        cut: &Bound<'_, PyAny>,
        event: Py<PyString>,
        build: Py<SlotBuilder>,
        block: (Py<PyAny>, Py<PyAny>, Py<PyAny>),
        sequence: Option<u64>,
    ) -> PyResult<()> {
        let (index, kind, choice) = block;
        let cut = Cut::new(cut, sequence)?;
        self.lock(py)?.folding.armed = Some(Armed {
            cut,
            event,
            sink: Sink::Events {
                build,
                values: [index, kind, choice],
            },
            room: usize::MAX,
        });
        Ok(())
    }

    /// `feed` for `events`: `(events, frames)`, the text deltas `arm_events` names made here,
    /// then the other frames; `None` (nothing read) when `chunk` is not a `bytes`.
    fn feed_events<'py>(
        &self,
        py: Python<'py>,
        chunk: &Bound<'py, PyAny>,
    ) -> PyResult<Option<(Bound<'py, PyList>, Bound<'py, PyList>)>> {
        let Some(frames) = self.feed_path(py, chunk, Mode::Events)? else {
            return Ok(None);
        };
        let made = std::mem::take(&mut self.lock(py)?.folding.made);
        Ok(Some((PyList::new(py, made)?, frames)))
    }

    /// The events `feed_events` made before the error it raised (its frames are the error's
    /// `events`): they come first.
    fn take_events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let made = std::mem::take(&mut self.lock(py)?.folding.made);
        PyList::new(py, made)
    }

    /// Forget what `arm` set.
    fn disarm(&self, py: Python<'_>) -> PyResult<()> {
        self.lock(py)?.folding.armed = None;
        Ok(())
    }

    /// Whether `feed_folding` reads text now (`arm` was called and no other frame came since).
    #[getter]
    fn armed(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.lock(py)?.folding.armed.is_some())
    }

    /// `feed` for a fold: the frames `arm` names are folded here, and the others returned,
    /// the call stopping after each (see `resume`); `None` (nothing read) when `chunk` is not
    /// a `bytes`, which `feed_stepping` then takes. The bytes are counted (`take_folded`).
    fn feed_folding<'py>(
        &self,
        py: Python<'py>,
        chunk: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        self.feed_path(py, chunk, Mode::Step)
    }

    /// `feed` as the fold reads when the path is not armed: the frames returned in steps, as
    /// `feed_folding` returns them, so that the fold may arm the path within one read. The
    /// bytes are not counted: the caller counts them, as it does for `feed`.
    fn feed_stepping<'py>(
        &self,
        py: Python<'py>,
        chunk: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        if let Ok(bytes) = chunk.cast_exact::<PyBytes>() {
            return Self::run(py, self.lock(py)?, Input::Bytes(bytes), Mode::Step);
        }
        with_chunk_bytes(chunk, |bytes| {
            Self::run(py, self.lock(py)?, Input::Copy(bytes), Mode::Step)
        })?
    }

    /// The next step of the read a stepping call (`feed_folding`, `feed_stepping`, `resume`)
    /// stopped in: armed, the frames it folds and then the first it does not; unarmed, a few
    /// frames. `None` when that read is all returned.
    fn resume<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let guard = self.lock(py)?;
        if guard.idle() {
            return Ok(None);
        }
        Self::run(py, guard, Input::Resume, Mode::Step).map(Some)
    }

    /// `(frames, bytes, characters, sequence)` that `feed_folding` (or `feed_events`) took
    /// since the last call: frames folded as text, bytes of every chunk it was given,
    /// characters of the text it folded, the number of the last numbered frame it read
    /// (`None`: none); and reset them.
    fn take_folded(&self, py: Python<'_>) -> PyResult<(u64, u64, u64, Option<u64>)> {
        let path = &mut self.lock(py)?.folding;
        let counts = (
            path.frames,
            path.bytes,
            path.characters,
            path.sequence.take(),
        );
        (path.frames, path.bytes, path.characters) = (0, 0, 0);
        Ok(counts)
    }

    /// End of input. An event not closed by a blank line is discarded (see `dropped_partial`).
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        Self::run(py, self.lock(py)?, Input::End, Mode::Plain)
    }

    /// The last event id committed by a blank line.
    #[getter]
    fn last_event_id(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.lock(py)?.decoder.last_event_id().to_owned())
    }

    /// The reconnection time in milliseconds from the last valid `retry:` field, if any.
    #[getter]
    fn retry(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        Ok(self.lock(py)?.decoder.retry())
    }

    /// After `close()`: whether an event not closed by a blank line was discarded.
    #[getter]
    fn dropped_partial(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.lock(py)?.decoder.dropped_partial())
    }

    /// Bytes fed so far.
    #[getter]
    fn position(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.lock(py)?.decoder.position())
    }

    #[getter]
    fn max_event_bytes(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.lock(py)?.decoder.max_event_bytes())
    }
}

/// The value of one line, or its `LineError` when it is not JSON. Lone surrogate escapes are
/// kept, as `json.loads` keeps them (see `loads_fallback`); a line that is not UTF-8 stays an
/// error. `Err`: a Python error while parsing (out of memory).
fn line_value(py: Python<'_>, line: &jsonl::Line<'_>) -> PyResult<Item<LineError>> {
    let error = match parse_json(py, line.bytes) {
        Ok(value) => return Ok(Item::Frame(value.unbind())),
        Err(e) => e,
    };
    if let Ok(text) = std::str::from_utf8(line.bytes) {
        if let Some(value) = loads_fallback(py, &PyString::new(py, text))? {
            return Ok(Item::Frame(value.unbind()));
        }
    }
    let offset = line.offset + error.index as u64;
    Ok(Item::Error(LineError::Json {
        line: line.number,
        offset,
        message: format!(
            "line {} is not JSON: {} at byte {} of the line (stream offset {offset})",
            line.number, error.error_type, error.index,
        ),
    }))
}

struct JsonLinesState {
    decoder: jsonl::JsonLinesDecoder,
    backlog: Vec<Item<LineError>>,
}

/// Incremental newline-delimited JSON decoder: returns the parsed value of every line.
#[pyclass(frozen, module = "streamfold")]
pub struct JsonLinesDecoder {
    inner: Mutex<JsonLinesState>,
}

impl JsonLinesDecoder {
    fn lock(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, JsonLinesState>> {
        self.inner
            .lock_py_attached(py)
            .map_err(|_| poisoned("JsonLinesDecoder"))
    }

    fn run<'py>(&self, py: Python<'py>, chunk: Option<&[u8]>) -> PyResult<Bound<'py, PyList>> {
        let mut guard = self.lock(py)?;
        let state = &mut *guard;
        if chunk.is_some() && state.decoder.is_closed() {
            return Err(closed("JsonLinesDecoder"));
        }
        let mut out = Outbox::new(std::mem::take(&mut state.backlog), 0);
        let mut sink = |frame: jsonl::Frame<'_>| match frame {
            Ok(line) => match line_value(py, &line) {
                Ok(item) => out.push(item),
                Err(failure) => out.push_frame(Err(failure)),
            },
            Err(e) => out.push(Item::Error(LineError::Frame(e))),
        };
        match chunk {
            Some(bytes) => state.decoder.feed(bytes, &mut sink),
            None => state.decoder.close(&mut sink),
        }
        out.finish(py, &mut state.backlog, line_exception)
    }
}

#[pymethods]
impl JsonLinesDecoder {
    #[new]
    #[pyo3(
        signature = (*, max_line_bytes = jsonl::DEFAULT_MAX_LINE_BYTES),
        text_signature = "(*, max_line_bytes=16777216)"
    )]
    fn new(#[pyo3(from_py_with = line_limit)] max_line_bytes: usize) -> Self {
        JsonLinesDecoder {
            inner: Mutex::new(JsonLinesState {
                decoder: jsonl::JsonLinesDecoder::new(max_line_bytes),
                backlog: Vec::new(),
            }),
        }
    }

    /// Decode one chunk; returns the parsed values of the lines it completed.
    fn feed<'py>(
        &self,
        py: Python<'py>,
        chunk: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        with_chunk_bytes(chunk, |bytes| self.run(py, Some(bytes)))?
    }

    /// End of input: a last line without a newline is still parsed.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.run(py, None)
    }

    /// Bytes fed so far.
    #[getter]
    fn position(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.lock(py)?.decoder.position())
    }

    #[getter]
    fn max_line_bytes(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.lock(py)?.decoder.max_line_bytes())
    }
}
