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
/// data as a `str`, when the data is exactly `prefix` + body + `rest` (or one of the padded
/// shapes, see the fields) and the body is a plain
/// JSON string body (not empty, valid UTF-8, no quote, no backslash, every character printable
/// by `str.isprintable`) or one with escapes that `decode_body` decodes; else `None`.
#[pyclass(frozen, module = "streamfold._core")]
pub struct TemplateCut {
    prefix: Py<PyBytes>,
    rest: Py<PyBytes>,
    /// The payload ends in spaces and one `}` after `rest` (Anthropic pads its JSON so), and
    /// the body ends at the first `rest` (the `PADDED_END` mode of `_chunk_template`).
    padded_end: bool,
    /// A padding value follows `rest` (which ends with its opening quote), then these bytes:
    /// the `obfuscation` of `OpenAI`, the `p` of Mistral (the `PADDED_VALUE` mode). The body
    /// ends at the first `rest`, the value at the next quote, and the value is alphanumeric.
    padding_end: Option<Py<PyBytes>>,
}

/// How a payload ends after the body.
#[derive(Clone, Copy)]
enum End<'a> {
    Exact,
    Spaces,
    PaddingValue(&'a [u8]),
}

#[pymethods]
impl TemplateCut {
    #[new]
    #[pyo3(signature = (prefix, rest, padded_end = false, padding_end = None))]
    fn new(
        prefix: Bound<'_, PyBytes>,
        rest: Bound<'_, PyBytes>,
        padded_end: bool,
        padding_end: Option<Bound<'_, PyBytes>>,
    ) -> Self {
        TemplateCut {
            prefix: prefix.unbind(),
            rest: rest.unbind(),
            padded_end,
            padding_end: padding_end.map(Bound::unbind),
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
        let end = match (&self.padding_end, self.padded_end) {
            (Some(tail), _) => End::PaddingValue(tail.as_bytes(py)),
            (None, true) => End::Spaces,
            (None, false) => End::Exact,
        };
        let Some((body, value)) = cut(&raw, prefix, rest, end) else {
            return Ok(None);
        };
        if !value.is_empty() && !value.iter().all(u8::is_ascii_alphanumeric) {
            // Python's `isalnum`, which takes letters and digits of every script.
            let Ok(value) = std::str::from_utf8(value) else {
                return Ok(None);
            };
            let value = PyString::new(py, value);
            if !value.call_method0(intern!(py, "isalnum"))?.is_truthy()? {
                return Ok(None);
            }
        }
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

/// The body of `raw` between `prefix` and `rest`, and the padding value (empty when there is
/// none), if `raw` has that shape and the body is not empty. Padded (spaces or a value), the
/// body ends at the first `rest`; should that lie inside the real body (after an escaped
/// quote), the body cut there ends in an odd run of backslashes and is refused as a body
/// later, as in Python.
fn cut<'r>(
    raw: &'r [u8],
    prefix: &[u8],
    rest: &[u8],
    end: End<'_>,
) -> Option<(&'r [u8], &'r [u8])> {
    let after_prefix = raw.strip_prefix(prefix)?;
    let (body, value): (&[u8], &[u8]) = match end {
        End::Exact => (after_prefix.strip_suffix(rest)?, &[]),
        End::Spaces => {
            let (&b'}', head) = raw.split_last()? else {
                return None;
            };
            let end = memchr::memmem::find(after_prefix, rest)?;
            let after = prefix.len() + end + rest.len();
            if after > head.len() || head[after..].iter().any(|&b| b != b' ') {
                return None;
            }
            (&after_prefix[..end], &[])
        }
        End::PaddingValue(tail) => {
            let end = memchr::memmem::find(after_prefix, rest)?;
            let value_and_tail = &after_prefix[end + rest.len()..];
            let value_end = memchr::memchr(b'"', value_and_tail)?;
            if &value_and_tail[value_end..] != tail {
                return None;
            }
            (&after_prefix[..end], &value_and_tail[..value_end])
        }
    };
    (!body.is_empty()).then_some((body, value))
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
