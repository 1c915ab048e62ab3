//! The one file that turns core errors into Python exceptions.
//!
//! The exception classes are defined once, in Python (`streamfold/_errors.py`: they carry the
//! partial message and other Python-side state), and handed to Rust once, when that module is
//! imported (`register_errors`). Every core error stays a Rust type until a function here
//! converts it.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyType};
use pyo3::IntoPyObjectExt;

use crate::json::JsonError;
use crate::jsonl;
use crate::sse::SseError;
use crate::transport;

/// The classes of `streamfold._errors` that Rust raises.
struct Classes {
    protocol: Py<PyType>,
    invalid_event_json: Py<PyType>,
    invalid_json: Py<PyType>,
    incomplete_json: Py<PyType>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

/// Called by `streamfold._errors` at import, with its classes.
#[pyfunction]
pub fn register_errors(
    py: Python<'_>,
    protocol: Bound<'_, PyType>,
    invalid_event_json: Bound<'_, PyType>,
    invalid_json: Bound<'_, PyType>,
    incomplete_json: Bound<'_, PyType>,
) {
    // A second call (the module reloaded) keeps the first classes: errors already raised and
    // caught by them stay the same classes.
    let _ = CLASSES.set(
        py,
        Classes {
            protocol: protocol.unbind(),
            invalid_event_json: invalid_event_json.unbind(),
            invalid_json: invalid_json.unbind(),
            incomplete_json: incomplete_json.unbind(),
        },
    );
}

/// The native client's classes, in the order of `transport::Kind`.
static TRANSPORT_CLASSES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();

/// Called by `streamfold._errors` at import, with the native client's classes, one per kind
/// of `transport::Error` in the order of `transport::Kind`.
#[pyfunction]
#[pyo3(signature = (*classes))]
pub fn register_transport_errors(py: Python<'_>, classes: Vec<Bound<'_, PyType>>) {
    let _ = TRANSPORT_CLASSES.set(py, classes.into_iter().map(Bound::unbind).collect());
}

/// A native client's error as its class, with the timeout that fired for a read timeout.
#[cold]
pub fn transport_error(py: Python<'_>, err: &transport::Error) -> PyErr {
    let Some(class) = TRANSPORT_CLASSES
        .get(py)
        .and_then(|classes| classes.get(err.kind as usize))
    else {
        return PyRuntimeError::new_err(format!("streamfold._errors is not loaded: {err}"));
    };
    let build = || -> PyResult<PyErr> {
        let exc = class.bind(py).call1((err.message.as_str(),))?;
        if let Some(timeout) = err.timeout {
            exc.setattr("timeout", timeout)?;
        }
        Ok(PyErr::from_value(exc))
    };
    build().unwrap_or_else(|e| e)
}

/// `class(message, **kwargs)` as a `PyErr`.
#[cold]
fn make_error(
    py: Python<'_>,
    class: fn(&Classes) -> &Py<PyType>,
    message: &str,
    kwargs: &[(&str, Bound<'_, PyAny>)],
) -> PyErr {
    let Some(classes) = CLASSES.get(py) else {
        // `import streamfold` imports `_errors` before anything can be decoded.
        return PyRuntimeError::new_err(format!("streamfold._errors is not loaded: {message}"));
    };
    let build = || -> PyResult<PyErr> {
        let kw = PyDict::new(py);
        for (k, v) in kwargs {
            kw.set_item(k, v)?;
        }
        let exc = class(classes).bind(py).call((message,), Some(&kw))?;
        Ok(PyErr::from_value(exc))
    };
    build().unwrap_or_else(|e| e)
}

/// `InvalidJsonError` or `IncompleteJsonError` of a `JsonAccumulator`.
#[cold]
pub fn json_error(py: Python<'_>, err: &JsonError) -> PyErr {
    let class: fn(&Classes) -> &Py<PyType> = if err.is_invalid() {
        |c| &c.invalid_json
    } else {
        |c| &c.incomplete_json
    };
    let kwargs: Vec<(&str, Bound<'_, PyAny>)> = [
        ("offset", err.offset.into_bound_py_any(py)),
        ("expected", err.expected.into_bound_py_any(py)),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.ok().map(|v| (k, v)))
    .collect();
    make_error(py, class, &err.to_string(), &kwargs)
}

/// The `ProtocolError` of an SSE decoder, with the events decoded before it (`events`).
#[cold]
pub fn sse_exception<'py>(py: Python<'py>, err: SseError, events: Bound<'py, PyList>) -> PyErr {
    let SseError::EventTooLarge { limit, offset } = err;
    let mut kwargs = vec![("events", events.into_any())];
    if let (Ok(position), Ok(limit)) = (offset.into_bound_py_any(py), limit.into_bound_py_any(py)) {
        kwargs.push(("position", position));
        kwargs.push(("limit", limit));
    }
    make_error(py, |c| &c.protocol, &err.to_string(), &kwargs)
}

/// What breaks a JSON-lines stream: a line over the limit, or a line that is not JSON.
pub enum LineError {
    Frame(jsonl::JsonLinesError),
    Json {
        line: u64,
        offset: u64,
        message: String,
    },
}

/// The `ProtocolError` of a JSON-lines decoder, with the values decoded before it.
#[cold]
pub fn line_exception<'py>(py: Python<'py>, err: LineError, values: Bound<'py, PyList>) -> PyErr {
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
    make_error(py, |c| &c.protocol, &message, &kwargs)
}

/// The `ProtocolError` of an event whose data is not JSON, placed by jiter's error: an
/// `InvalidEventJsonError`, also the `json.JSONDecodeError` httpx-sse's `json()` raises.
#[cold]
pub fn event_json_error(
    py: Python<'_>,
    event: &Bound<'_, PyString>,
    data: Bound<'_, PyString>,
    e: &jiter::JsonError,
) -> PyErr {
    let msg = format!(
        "data of event {:?} is not valid JSON: {} at byte {} of the data",
        event.to_string(),
        e.error_type,
        e.index
    );
    let byte = match e.index.into_bound_py_any(py) {
        Ok(byte) => byte,
        Err(err) => return err,
    };
    make_error(
        py,
        |c| &c.invalid_event_json,
        &msg,
        &[
            ("event", event.clone().into_any()),
            ("doc", data.into_any()),
            ("byte", byte),
        ],
    )
}
