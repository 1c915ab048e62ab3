//! `encode_sse`, `encode_sse_comment` and the writers' JSON frame helper for Python: thin
//! shells over [`crate::sse::encode`].

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyInt, PyString};

use crate::sse::encode::{encode_comment, encode_event, json_string_body, EncodeError, Fields};

#[cold]
fn refused(err: EncodeError) -> PyErr {
    PyValueError::new_err(err.to_string())
}

/// `retry` as milliseconds: an `int` from 0 to 2**64 - 1.
fn retry_millis(retry: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    let Some(retry) = retry.filter(|r| !r.is_none()) else {
        return Ok(None);
    };
    if !retry.is_instance_of::<PyInt>() || retry.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "retry must be an int (milliseconds), got {}",
            retry.get_type().name()?
        )));
    }
    retry.extract::<u64>().map(Some).map_err(|_| {
        PyValueError::new_err(format!(
            "retry must be a number of milliseconds from 0 to 2**64 - 1, got {retry}"
        ))
    })
}

/// Encode one event; see [`crate::sse::encode`] for what is refused and why.
pub fn encode_to_bytes<'py>(
    py: Python<'py>,
    data: &str,
    fields: Fields<'_>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::new();
    encode_event(&mut out, data, fields).map_err(refused)?;
    Ok(PyBytes::new(py, &out))
}

/// One server-sent event as the bytes of a `text/event-stream`.
#[pyfunction]
#[pyo3(signature = (data, *, event = None, id = None, retry = None))]
pub fn encode_sse<'py>(
    py: Python<'py>,
    data: &str,
    event: Option<&str>,
    id: Option<&str>,
    retry: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let retry = retry_millis(retry)?;
    encode_to_bytes(py, data, Fields { event, id, retry })
}

/// A comment (a keep-alive such as `: ping`) as the bytes of a `text/event-stream`.
#[pyfunction]
pub fn encode_sse_comment<'py>(py: Python<'py>, text: &str) -> Bound<'py, PyBytes> {
    let mut out = Vec::new();
    encode_comment(&mut out, text);
    PyBytes::new(py, &out)
}

static JSON_DUMPS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `head + text as the inside of a JSON string + tail`: the frame of a writer's hot event
/// (a text delta), whose fixed parts were written once. `head` and `tail` hold the quotes.
/// A `str` that is not valid Unicode (a lone surrogate, which a provider cutting its text by
/// UTF-16 units sends) is escaped as `json.dumps` escapes it, so it reads back the same.
#[pyfunction]
pub fn json_frame<'py>(
    py: Python<'py>,
    head: &[u8],
    text: &Bound<'py, PyString>,
    tail: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::with_capacity(head.len() + tail.len() + 16);
    out.extend_from_slice(head);
    if let Ok(text) = text.to_str() {
        json_string_body(&mut out, text);
    } else {
        let quoted = JSON_DUMPS.import(py, "json", "dumps")?.call1((text,))?;
        let quoted = quoted.cast::<PyString>()?.to_str()?;
        out.extend_from_slice(&quoted.as_bytes()[1..quoted.len() - 1]);
    }
    out.extend_from_slice(tail);
    Ok(PyBytes::new(py, &out))
}
