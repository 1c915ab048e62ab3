//! `TemplateCut`: the hot half of `providers/_chunk_template.py` in one call per frame.
//!
//! A learned chunk template is `prefix` + JSON string body + `rest`. Checking a payload against
//! it from Python costs a handful of method calls (compare, compare, slice, decode, scans), and
//! on the interpreter each call costs more than the memory compares themselves. This does the
//! common case at once on the frame's bytes and answers only when the answer is sure; every
//! other payload gets `None` and goes through the Python reader, which decides it fully.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use super::sse::ServerSentEvent;

/// `TemplateCut(prefix, rest).read(frame)`: the body between `prefix` and `rest` of the frame's
/// data as a `str`, when the data is exactly `prefix` + body + `rest` and the body is a plain
/// JSON string body (not empty, valid UTF-8, no quote, no backslash, every character printable
/// by `str.isprintable`) or one with escapes that `decode_body` decodes; else `None`.
#[pyclass(frozen, module = "streamfold._core")]
pub struct TemplateCut {
    prefix: Py<PyBytes>,
    rest: Py<PyBytes>,
}

#[pymethods]
impl TemplateCut {
    #[new]
    fn new(prefix: Bound<'_, PyBytes>, rest: Bound<'_, PyBytes>) -> Self {
        TemplateCut {
            prefix: prefix.unbind(),
            rest: rest.unbind(),
        }
    }

    /// A named method rather than `__call__`: a method call passes its argument without
    /// packing a tuple (vectorcall), which is measurable at one call per frame.
    fn read<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyString>>> {
        let Ok(frame) = frame.cast::<ServerSentEvent>() else {
            return Ok(None); // not ours to read: the Python reader decides
        };
        let raw = frame.get().raw_bytes(py);
        let (prefix, rest) = (self.prefix.as_bytes(py), self.rest.as_bytes(py));
        if raw.len() <= prefix.len() + rest.len()
            || !raw.starts_with(prefix)
            || !raw.ends_with(rest)
        {
            return Ok(None);
        }
        let body = &raw[prefix.len()..raw.len() - rest.len()];
        let mut ascii = true;
        for &b in body {
            match b {
                b'"' | b'\\' => return Ok(escaped_body(py, body)),
                0..=0x1f | 0x7f => return Ok(None),
                0x80.. => ascii = false,
                _ => {}
            }
        }
        let Ok(text) = std::str::from_utf8(body) else {
            return Ok(None);
        };
        let text = PyString::new(py, text);
        // Python's notion of printable (U+2028, format characters, unassigned code points…),
        // asked only when the body has a character beyond ASCII.
        if !ascii && !text.call_method0(intern!(py, "isprintable"))?.is_truthy()? {
            return Ok(None);
        }
        Ok(Some(text))
    }
}

/// A body with a quote or a backslash: its text as `decode_body` gives it (`json.loads` of the
/// quoted body), or `None` where that leaves the payload to the parser (a `\\u` escape, whose
/// lone surrogates it does not try to copy; an invalid body). Tool-call arguments, JSON inside
/// JSON, are mostly such bodies. A body that is not valid UTF-8 is left to the parser too.
fn escaped_body<'py>(py: Python<'py>, body: &[u8]) -> Option<Bound<'py, PyString>> {
    if memchr::memmem::find(body, b"\\u").is_some() || std::str::from_utf8(body).is_err() {
        return None;
    }
    let mut quoted = Vec::with_capacity(body.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(body);
    quoted.push(b'"');
    match jiter::JsonValue::parse(&quoted, false) {
        Ok(jiter::JsonValue::Str(text)) if !text.is_empty() => Some(PyString::new(py, &text)),
        _ => None,
    }
}
