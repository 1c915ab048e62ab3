//! `SSEDecoder`, `ServerSentEvent` and `JsonLinesDecoder` for Python.

use std::sync::Mutex;

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyMemoryView, PyString};
use pyo3::IntoPyObjectExt;

use super::errors::make_error;
use crate::jsonl;
use crate::sse::{self, EventRef, SseError};

/// Parse JSON text into Python objects the way `json.loads` does (NaN and Infinity included).
pub fn parse_json<'py>(py: Python<'py>, text: &[u8]) -> Result<Bound<'py, PyAny>, jiter::JsonError> {
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

/// One server-sent event, with the attribute names of httpx-sse.
#[pyclass(frozen, module = "streamfold._core", eq)]
#[derive(PartialEq)]
pub struct ServerSentEvent {
    event: String,
    data: String,
    id: String,
    retry: Option<u64>,
}

#[pymethods]
impl ServerSentEvent {
    #[new]
    #[pyo3(signature = (event = None, data = None, id = None, retry = None))]
    fn new(event: Option<String>, data: Option<String>, id: Option<String>, retry: Option<u64>) -> Self {
        ServerSentEvent {
            event: event.filter(|e| !e.is_empty()).unwrap_or_else(|| "message".to_owned()),
            data: data.unwrap_or_default(),
            id: id.unwrap_or_default(),
            retry,
        }
    }

    /// The event type; `"message"` when the stream named none.
    #[getter]
    fn event(&self) -> &str {
        &self.event
    }

    #[getter]
    fn data(&self) -> &str {
        &self.data
    }

    /// The last event id at the time this event was dispatched.
    #[getter]
    fn id(&self) -> &str {
        &self.id
    }

    /// The `retry` value given inside this event, if any.
    #[getter]
    fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// The data parsed as JSON (raises `ProtocolError`, a `ValueError`, when it is not JSON).
    fn json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        parse_json(py, self.data.as_bytes()).map_err(|e| {
            let msg = format!(
                "event {:?}: data is not valid JSON: {} at byte {} of the data",
                self.event, e.error_type, e.index
            );
            make_error(py, "ProtocolError", &msg, &[("event", self.event.clone().into_bound_py_any(py).unwrap_or_else(|_| py.None().into_bound(py)))])
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "ServerSentEvent(event={:?}, data={:?}, id={:?}, retry={:?})",
            self.event, self.data, self.id, self.retry
        )
    }
}

impl From<EventRef<'_>> for ServerSentEvent {
    fn from(e: EventRef<'_>) -> Self {
        ServerSentEvent {
            event: e.event.to_owned(),
            data: e.data.to_owned(),
            id: e.id.to_owned(),
            retry: e.retry,
        }
    }
}

fn sse_error(py: Python<'_>, err: &SseError, events: &Bound<'_, PyList>) -> PyErr {
    let SseError::EventTooLarge { limit, offset } = err;
    let kwargs = [
        ("position", offset.into_bound_py_any(py)),
        ("limit", limit.into_bound_py_any(py)),
        ("events", Ok(events.clone().into_any())),
    ];
    let kwargs: Vec<_> = kwargs.into_iter().filter_map(|(k, v)| v.ok().map(|v| (k, v))).collect();
    make_error(py, "ProtocolError", &err.to_string(), &kwargs)
}

/// Incremental `text/event-stream` decoder (WHATWG rules, UTF-8 always).
#[pyclass(frozen, module = "streamfold._core")]
pub struct SSEDecoder {
    inner: Mutex<sse::SseDecoder>,
}

impl SSEDecoder {
    fn run<'py>(
        &self,
        py: Python<'py>,
        op: impl FnOnce(&mut sse::SseDecoder, &mut dyn FnMut(EventRef<'_>)) -> Result<(), SseError>,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut guard = self
            .inner
            .lock_py_attached(py)
            .map_err(|_| PyRuntimeError::new_err("SSEDecoder is unusable after a panic"))?;
        let out = PyList::empty(py);
        let mut push_err: Option<PyErr> = None;
        let mut sink = |e: EventRef<'_>| {
            if push_err.is_none() {
                let item = Bound::new(py, ServerSentEvent::from(e)).and_then(|ev| out.append(ev));
                if let Err(err) = item {
                    push_err = Some(err);
                }
            }
        };
        let result = op(&mut guard, &mut sink);
        drop(guard);
        if let Some(err) = push_err {
            return Err(err);
        }
        match result {
            Ok(()) => Ok(out),
            Err(e) => Err(sse_error(py, &e, &out)),
        }
    }
}

#[pymethods]
impl SSEDecoder {
    #[new]
    #[pyo3(signature = (*, max_event_bytes = sse::DEFAULT_MAX_EVENT_BYTES))]
    fn new(max_event_bytes: usize) -> Self {
        SSEDecoder {
            inner: Mutex::new(sse::SseDecoder::new(max_event_bytes)),
        }
    }

    /// Decode one chunk of bytes; returns the events it completed.
    fn feed<'py>(&self, py: Python<'py>, chunk: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        with_chunk_bytes(chunk, |bytes| self.run(py, |dec, sink| dec.feed(bytes, &mut |e| sink(e))))?
    }

    /// End of input. An event not closed by a blank line is discarded (see `dropped_partial`).
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.run(py, |dec, sink| dec.close(&mut |e| sink(e)))
    }

    #[getter]
    fn last_event_id(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.lock(py)?.last_event_id().to_owned())
    }

    /// The reconnection time in milliseconds from the last valid `retry:` field, if any.
    #[getter]
    fn retry(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        Ok(self.lock(py)?.retry())
    }

    /// After `close()`: whether an event not closed by a blank line was discarded.
    #[getter]
    fn dropped_partial(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.lock(py)?.dropped_partial())
    }

    /// Bytes fed so far.
    #[getter]
    fn position(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.lock(py)?.position())
    }

    #[getter]
    fn max_event_bytes(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.lock(py)?.max_event_bytes())
    }
}

impl SSEDecoder {
    fn lock(&self, py: Python<'_>) -> PyResult<std::sync::MutexGuard<'_, sse::SseDecoder>> {
        self.inner
            .lock_py_attached(py)
            .map_err(|_| PyRuntimeError::new_err("SSEDecoder is unusable after a panic"))
    }
}

/// Incremental newline-delimited JSON decoder: returns the parsed value of every line.
#[pyclass(frozen, module = "streamfold._core")]
pub struct JsonLinesDecoder {
    inner: Mutex<jsonl::JsonLinesDecoder>,
}

enum LineError {
    Frame(jsonl::JsonLinesError),
    Json { line: u64, offset: u64, message: String },
    Py(PyErr),
}

impl From<jsonl::JsonLinesError> for LineError {
    fn from(e: jsonl::JsonLinesError) -> Self {
        LineError::Frame(e)
    }
}

impl JsonLinesDecoder {
    fn run<'py>(
        &self,
        py: Python<'py>,
        op: impl FnOnce(
            &mut jsonl::JsonLinesDecoder,
            &mut dyn FnMut(jsonl::Line<'_>) -> Result<(), LineError>,
        ) -> Result<(), LineError>,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut guard = self
            .inner
            .lock_py_attached(py)
            .map_err(|_| PyRuntimeError::new_err("JsonLinesDecoder is unusable after a panic"))?;
        let out = PyList::empty(py);
        let mut sink = |line: jsonl::Line<'_>| -> Result<(), LineError> {
            match parse_json(py, line.bytes) {
                Ok(v) => out.append(v).map_err(LineError::Py),
                Err(e) => Err(LineError::Json {
                    line: line.number,
                    offset: line.offset + e.index as u64,
                    message: format!("line {} is not JSON: {} at column {}", line.number, e.error_type, e.index + 1),
                }),
            }
        };
        let result = op(&mut guard, &mut sink);
        drop(guard);
        match result {
            Ok(()) => Ok(out),
            Err(LineError::Py(e)) => Err(e),
            Err(LineError::Frame(e)) => {
                let jsonl::JsonLinesError::LineTooLong { line, offset, .. } = &e;
                Err(line_error(py, &e.to_string(), *line, *offset, &out))
            }
            Err(LineError::Json { line, offset, message }) => Err(line_error(py, &message, line, offset, &out)),
        }
    }
}

fn line_error(py: Python<'_>, message: &str, line: u64, offset: u64, events: &Bound<'_, PyList>) -> PyErr {
    let kwargs: Vec<(&str, Bound<'_, PyAny>)> = [
        ("line", line.into_bound_py_any(py)),
        ("position", offset.into_bound_py_any(py)),
        ("events", Ok(events.clone().into_any())),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.ok().map(|v| (k, v)))
    .collect();
    make_error(py, "ProtocolError", message, &kwargs)
}

#[pymethods]
impl JsonLinesDecoder {
    #[new]
    #[pyo3(signature = (*, max_line_bytes = jsonl::DEFAULT_MAX_LINE_BYTES))]
    fn new(max_line_bytes: usize) -> Self {
        JsonLinesDecoder {
            inner: Mutex::new(jsonl::JsonLinesDecoder::new(max_line_bytes)),
        }
    }

    /// Decode one chunk; returns the parsed values of the lines it completed.
    fn feed<'py>(&self, py: Python<'py>, chunk: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        with_chunk_bytes(chunk, |bytes| self.run(py, |dec, sink| dec.feed(bytes, &mut |l| sink(l))))?
    }

    /// End of input: a last line without a newline is still parsed.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.run(py, |dec, sink| dec.close(&mut |l| sink(l)))
    }
}
