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
    /// The payload ends in spaces and one `}` after `rest` (Anthropic pads its JSON so), and
    /// the body ends at the first `rest` (the `PADDED_END` mode of `_chunk_template`).
    padded_end: bool,
}

#[pymethods]
impl TemplateCut {
    #[new]
    #[pyo3(signature = (prefix, rest, padded_end = false))]
    fn new(prefix: Bound<'_, PyBytes>, rest: Bound<'_, PyBytes>, padded_end: bool) -> Self {
        TemplateCut {
            prefix: prefix.unbind(),
            rest: rest.unbind(),
            padded_end,
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
        let Some(body) = cut(&raw, prefix, rest, self.padded_end) else {
            return Ok(None);
        };
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

/// The body of `raw` between `prefix` and `rest`, if `raw` has that shape and the body is not
/// empty. Padded: `raw` is `prefix` + body + `rest` + spaces + `}`, the body ending at the
/// first `rest`; should that lie inside the real body (after an escaped quote), the body cut
/// there ends in an odd run of backslashes and is refused as a body later, as in Python.
fn cut<'r>(raw: &'r [u8], prefix: &[u8], rest: &[u8], padded_end: bool) -> Option<&'r [u8]> {
    let after_prefix = raw.strip_prefix(prefix)?;
    let body = if padded_end {
        let (&b'}', head) = raw.split_last()? else {
            return None;
        };
        let end = memchr::memmem::find(after_prefix, rest)?;
        let after = prefix.len() + end + rest.len();
        if after > head.len() || head[after..].iter().any(|&b| b != b' ') {
            return None;
        }
        &after_prefix[..end]
    } else {
        after_prefix.strip_suffix(rest)?
    };
    (!body.is_empty()).then_some(body)
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
