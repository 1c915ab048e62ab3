//! `SSEDecoder`, `ServerSentEvent` and `JsonLinesDecoder` for Python.
//!
//! One call per chunk: the decoder runs over the whole chunk and the frames come back as one
//! list. Events are built straight from the decoder's buffers; the strings that repeat from
//! event to event (types, ids) are made once per decoder and shared.
//!
//! Errors keep their place in the stream. `feed` returns the frames before the first error
//! inside it; if there is an error, it is raised with those frames in `.events`, and whatever
//! the same chunk held after it is kept and comes first from the next `feed` or `close`.

use std::sync::{Mutex, MutexGuard, OnceLock};

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyMemoryView, PyString, PyTuple};
use pyo3::{intern, IntoPyObjectExt};

use super::errors::make_error;
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

fn poisoned(what: &str) -> PyErr {
    PyRuntimeError::new_err(format!("{what} is unusable after a panic"))
}

fn closed(what: &str) -> PyErr {
    PyValueError::new_err(format!("{what}.feed() after close()"))
}

/// One server-sent event, with the attribute names of httpx-sse.
///
/// The data is kept as the bytes received and becomes a `str` on first access: most events
/// are only ever parsed as JSON, which `json()` does straight from those bytes.
#[pyclass(frozen, module = "streamfold._core")]
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
    /// A `bytes` rather than a Rust allocation: Python's small-object allocator is faster.
    raw: Py<PyBytes>,
    /// The data as `str`, once asked for. A plain `OnceLock` filled without blocking (see
    /// `data`): `PyOnceLock` detaches from the interpreter to initialise, which costs more than
    /// making the string.
    text: OnceLock<Py<PyString>>,
}

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
        let raw = PyBytes::new(py, data.to_string_lossy().as_bytes()).unbind();
        let text = OnceLock::new();
        let _ = text.set(data.unbind());
        ServerSentEvent {
            event: event.unbind(),
            id: id.unwrap_or_else(|| intern!(py, "").clone()).unbind(),
            retry,
            raw,
            text,
        }
    }

    /// The data, decoded as UTF-8 (invalid bytes become U+FFFD); made on first access.
    #[getter]
    fn data(&self, py: Python<'_>) -> Py<PyString> {
        if let Some(text) = self.text.get() {
            return text.clone_ref(py);
        }
        let raw = self.raw.as_bytes(py);
        let text = if raw.is_empty() {
            intern!(py, "").clone()
        } else if raw.len() >= LARGE_TEXT {
            large_pystring(py, &decode_lossy(raw))
        } else {
            // CPython validates as it decodes: one pass over valid text, the common case.
            PyString::from_bytes(py, raw)
                .unwrap_or_else(|_| PyString::new(py, &String::from_utf8_lossy(raw)))
        };
        // Two threads may both get here; whichever stores first wins and both return that one.
        // `set` never runs Python code while it holds the cell, so it cannot deadlock.
        let _ = self.text.set(text.clone().unbind());
        self.text.get().map_or(text.unbind(), |t| t.clone_ref(py))
    }

    /// The data as the bytes received (UTF-8, not validated). Cheaper than `data` when only a
    /// part of the payload is wanted: the providers' chunk templates compare these bytes and
    /// decode only the varying part, so the whole `str` is never made.
    #[getter]
    fn data_bytes(&self, py: Python<'_>) -> Py<PyBytes> {
        self.raw.clone_ref(py)
    }

    /// The data parsed as JSON (raises `ProtocolError`, a `ValueError`, when it is not JSON).
    fn json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let text = decode_lossy(self.raw.as_bytes(py));
        parse_json(py, text.as_bytes()).map_err(|e| {
            let msg = format!(
                "data of event {:?} is not valid JSON: {} at byte {} of the data",
                self.event.bind(py).to_string(),
                e.error_type,
                e.index
            );
            make_error(
                py,
                "ProtocolError",
                &msg,
                &[("event", self.event.bind(py).clone().into_any())],
            )
        })
    }

    fn __eq__(&self, py: Python<'_>, other: &Self) -> PyResult<bool> {
        let same = |a: &Py<PyString>, b: &Py<PyString>| PyAnyMethods::eq(a.bind(py).as_any(), b);
        Ok(self.retry == other.retry
            && decode_lossy(self.raw.as_bytes(py)) == decode_lossy(other.raw.as_bytes(py))
            && same(&self.event, &other.event)?
            && same(&self.id, &other.id)?)
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        PyTuple::new(
            py,
            [
                self.event.bind(py).clone().into_any(),
                self.data(py).into_bound(py).into_any(),
                self.id.bind(py).clone().into_any(),
                self.retry.into_bound_py_any(py)?,
            ],
        )?
        .hash()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "ServerSentEvent(event={}, data={}, id={}, retry={})",
            self.event.bind(py).repr()?,
            self.data(py).bind(py).repr()?,
            self.id.bind(py).repr()?,
            self.retry.into_bound_py_any(py)?.repr()?,
        ))
    }
}

impl ServerSentEvent {
    /// The data as received (see `data_bytes`).
    pub(crate) fn raw_bytes<'a>(&'a self, py: Python<'a>) -> &'a [u8] {
        self.raw.as_bytes(py)
    }
}

/// From this size on, `str`s are built at their final width (see `large_pystring`).
const LARGE_TEXT: usize = 64 * 1024;

/// A `str` built in place at its final width. Python's own decoder widens its buffer as wider
/// characters turn up, so one emoji at the end of a 16 MiB text holds a 2-byte copy and the
/// 4-byte one at once; counting first and filling once keeps the peak at the result itself.
#[cfg(not(feature = "abi3"))]
fn large_pystring<'py>(py: Python<'py>, text: &str) -> Bound<'py, PyString> {
    use pyo3::ffi;

    let (count, max) = if text.is_ascii() {
        (text.len(), 0x7F)
    } else {
        text.chars()
            .fold((0usize, 0u32), |(n, m), c| (n + 1, m.max(u32::from(c))))
    };
    let Ok(size) = ffi::Py_ssize_t::try_from(count) else {
        return PyString::new(py, text);
    };
    // SAFETY: `PyUnicode_New` returns a new reference to a string of `count` characters whose
    // kind fits `max`, or null (out of memory, then we let `PyString::new` report it). Every
    // character is below `max`, so each one fits the kind's width, and `count` of them fill
    // the buffer exactly.
    unsafe {
        let ptr = ffi::PyUnicode_New(size, max);
        if ptr.is_null() {
            ffi::PyErr_Clear();
            return PyString::new(py, text);
        }
        let data = ffi::PyUnicode_DATA(ptr);
        match ffi::PyUnicode_KIND(ptr) {
            ffi::PyUnicode_1BYTE_KIND if max < 0x80 => {
                std::ptr::copy_nonoverlapping(text.as_ptr(), data.cast::<u8>(), count);
            }
            ffi::PyUnicode_1BYTE_KIND => fill(text, data.cast::<u8>()),
            ffi::PyUnicode_2BYTE_KIND => fill(text, data.cast::<u16>()),
            _ => fill(text, data.cast::<u32>()),
        }
        Bound::from_owned_ptr(py, ptr).cast_into_unchecked()
    }
}

/// Write the characters of `text` as code units of `T`, which each of them fits.
///
/// # Safety
/// `out` must have room for as many `T` as `text` has characters.
#[cfg(not(feature = "abi3"))]
unsafe fn fill<T: TryFrom<u32>>(text: &str, out: *mut T) {
    for (i, c) in text.chars().enumerate() {
        if let Ok(unit) = T::try_from(u32::from(c)) {
            // SAFETY: `i` is below the character count the caller allocated for.
            unsafe { out.add(i).write(unit) };
        }
    }
}

#[cfg(feature = "abi3")]
fn large_pystring<'py>(py: Python<'py>, text: &str) -> Bound<'py, PyString> {
    PyString::new(py, text)
}

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

    fn event(&mut self, py: Python<'_>, e: EventRef<'_>) -> PyResult<Py<PyAny>> {
        let event = ServerSentEvent {
            event: self.event_type(py, e.event),
            id: self.id(py, e.id),
            retry: e.retry,
            raw: PyBytes::new(py, e.data).unbind(),
            text: OnceLock::new(),
        };
        Ok(Bound::new(py, event)?.into_any().unbind())
    }
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
    fn new(backlog: Vec<Item<E>>) -> Self {
        let mut out = Outbox {
            head: Vec::new(),
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

struct SseState {
    decoder: sse::SseDecoder,
    strings: Strings,
    backlog: Vec<Item<SseError>>,
}

fn sse_exception<'py>(py: Python<'py>, err: SseError, events: Bound<'py, PyList>) -> PyErr {
    let SseError::EventTooLarge { limit, offset } = err;
    let mut kwargs = vec![("events", events.into_any())];
    if let (Ok(position), Ok(limit)) = (offset.into_bound_py_any(py), limit.into_bound_py_any(py)) {
        kwargs.push(("position", position));
        kwargs.push(("limit", limit));
    }
    make_error(py, "ProtocolError", &err.to_string(), &kwargs)
}

/// Incremental `text/event-stream` decoder (WHATWG rules, UTF-8 always).
#[pyclass(frozen, module = "streamfold._core")]
pub struct SSEDecoder {
    inner: Mutex<SseState>,
}

impl SSEDecoder {
    fn lock(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, SseState>> {
        self.inner
            .lock_py_attached(py)
            .map_err(|_| poisoned("SSEDecoder"))
    }

    fn run<'py>(&self, py: Python<'py>, chunk: Option<&[u8]>) -> PyResult<Bound<'py, PyList>> {
        let mut guard = self.lock(py)?;
        let state = &mut *guard;
        if chunk.is_some() && state.decoder.is_closed() {
            return Err(closed("SSEDecoder"));
        }
        let mut out = Outbox::new(std::mem::take(&mut state.backlog));
        let strings = &mut state.strings;
        let mut sink = |frame: sse::Frame<'_>| match frame {
            Ok(e) => out.push_frame(strings.event(py, e)),
            Err(e) => out.push(Item::Error(e)),
        };
        match chunk {
            Some(bytes) => state.decoder.feed(bytes, &mut sink),
            None => state.decoder.close(&mut sink),
        }
        out.finish(py, &mut state.backlog, sse_exception)
    }
}

#[pymethods]
impl SSEDecoder {
    #[new]
    #[pyo3(
        signature = (*, max_event_bytes = sse::DEFAULT_MAX_EVENT_BYTES),
        text_signature = "(*, max_event_bytes=16777216)"
    )]
    fn new(max_event_bytes: usize) -> Self {
        SSEDecoder {
            inner: Mutex::new(SseState {
                decoder: sse::SseDecoder::new(max_event_bytes),
                strings: Strings::default(),
                backlog: Vec::new(),
            }),
        }
    }

    /// Decode one chunk of bytes; returns the events it completed.
    fn feed<'py>(
        &self,
        py: Python<'py>,
        chunk: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        with_chunk_bytes(chunk, |bytes| self.run(py, Some(bytes)))?
    }

    /// End of input. An event not closed by a blank line is discarded (see `dropped_partial`).
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.run(py, None)
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

enum LineError {
    Frame(jsonl::JsonLinesError),
    Json {
        line: u64,
        offset: u64,
        message: String,
    },
}

fn line_exception<'py>(py: Python<'py>, err: LineError, values: Bound<'py, PyList>) -> PyErr {
    let (message, line, offset, limit) = match err {
        LineError::Frame(e) => {
            let jsonl::JsonLinesError::LineTooLong {
                limit,
                line,
                offset,
            } = e;
            (e.to_string(), line, offset, Some(limit))
        }
        LineError::Json {
            line,
            offset,
            message,
        } => (message, line, offset, None),
    };
    let mut kwargs = vec![("events", values.into_any())];
    for (name, value) in [("line", Some(line)), ("position", Some(offset))] {
        if let Ok(v) = value.into_bound_py_any(py) {
            kwargs.push((name, v));
        }
    }
    if let Some(Ok(limit)) = limit.map(|l| l.into_bound_py_any(py)) {
        kwargs.push(("limit", limit));
    }
    make_error(py, "ProtocolError", &message, &kwargs)
}

struct JsonLinesState {
    decoder: jsonl::JsonLinesDecoder,
    backlog: Vec<Item<LineError>>,
}

/// Incremental newline-delimited JSON decoder: returns the parsed value of every line.
#[pyclass(frozen, module = "streamfold._core")]
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
        let mut out = Outbox::new(std::mem::take(&mut state.backlog));
        let mut sink = |frame: jsonl::Frame<'_>| match frame {
            Ok(line) => match parse_json(py, line.bytes) {
                Ok(value) => out.push(Item::Frame(value.unbind())),
                Err(e) => out.push(Item::Error(LineError::Json {
                    line: line.number,
                    offset: line.offset + e.index as u64,
                    message: format!(
                        "line {} is not JSON: {} at byte {} of the line (stream offset {})",
                        line.number,
                        e.error_type,
                        e.index,
                        line.offset + e.index as u64
                    ),
                })),
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
    fn new(max_line_bytes: usize) -> Self {
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
