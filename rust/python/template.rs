//! `TemplateCut`, `NumberedCut`: the hot half of `providers/_chunk_template.py` in one call per
//! frame (the byte cuts themselves are in `crate::template`).
//!
//! A learned chunk template is `prefix` + JSON string body + `rest`. Checking a payload against
//! it from Python costs a handful of method calls (compare, compare, slice, decode, scans), and
//! on the interpreter each call costs more than the memory compares themselves. This does the
//! common case at once on the frame's bytes and answers only when the answer is sure; every
//! other payload gets `None` and goes through the Python reader (for `NumberedCut`, the JSON
//! parse), which decides it fully.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use super::sse::ServerSentEvent;
use super::text::str_from_utf8;
use crate::template::{cut, cut_numbered, End};

/// `TemplateCut(prefix, rest).read(frame)`: the body between `prefix` and `rest` of the frame's
/// data as a `str`, when the data is exactly `prefix` + body + `rest` (or one of the padded
/// shapes, see [`Shape`]) and the body is a plain
/// JSON string body (not empty, valid UTF-8, no quote, no backslash, every character printable
/// by `str.isprintable`) or one with escapes that `decode_body` decodes; else `None`.
#[pyclass(frozen, module = "streamfold._core")]
pub struct TemplateCut {
    shape: Shape,
}

/// `NumberedCut(prefix, middle, rest).read(frame)`: `(number, body)` of a frame whose data is
/// `prefix` + an unsigned integer as JSON writes it (no sign, fraction or leading zero; at most
/// `u64::MAX`) + `middle` + body + `rest` (or a padded shape), the body read as `TemplateCut`
/// reads it; else `None`. Without `middle` the template has no number: the data is `prefix` +
/// body + `rest` and the number is `None`. `OpenAI` Responses numbers every event
/// (`sequence_number`), so its deltas differ in a number besides their text.
#[pyclass(frozen, module = "streamfold._core")]
pub struct NumberedCut {
    shape: Shape,
    middle: Option<Py<PyBytes>>,
}

/// The fixed parts of a template around its body.
struct Shape {
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

impl Shape {
    fn new(
        prefix: Bound<'_, PyBytes>,
        rest: Bound<'_, PyBytes>,
        padded_end: bool,
        padding_end: Option<Bound<'_, PyBytes>>,
    ) -> Self {
        Shape {
            prefix: prefix.unbind(),
            rest: rest.unbind(),
            padded_end,
            padding_end: padding_end.map(Bound::unbind),
        }
    }

    fn end<'a>(&'a self, py: Python<'a>) -> End<'a> {
        match (&self.padding_end, self.padded_end) {
            (Some(tail), _) => End::PaddingValue(tail.as_bytes(py)),
            (None, true) => End::Spaces,
            (None, false) => End::Exact,
        }
    }
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
            shape: Shape::new(prefix, rest, padded_end, padding_end),
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
        Ok(self.text_of(py, &raw)?.map(|text| text.into_str(py)))
    }
}

impl TemplateCut {
    /// What `read` answers for a frame whose data is `raw`: the decoder's folding path
    /// (`SSEDecoder.feed_folding`) reads its frames' bytes with it before any frame is made.
    #[inline]
    pub(crate) fn text_of<'a, 'py>(
        &self,
        py: Python<'py>,
        raw: &'a [u8],
    ) -> PyResult<Option<CutText<'a, 'py>>> {
        let shape = &self.shape;
        let (prefix, rest) = (shape.prefix.as_bytes(py), shape.rest.as_bytes(py));
        match cut(raw, prefix, rest, shape.end(py)) {
            Some((body, value)) => text(py, body, value),
            None => Ok(None),
        }
    }
}

#[pymethods]
impl NumberedCut {
    #[new]
    #[pyo3(signature = (prefix, middle, rest, padded_end = false, padding_end = None))]
    fn new(
        prefix: Bound<'_, PyBytes>,
        middle: Option<Bound<'_, PyBytes>>,
        rest: Bound<'_, PyBytes>,
        padded_end: bool,
        padding_end: Option<Bound<'_, PyBytes>>,
    ) -> Self {
        NumberedCut {
            shape: Shape::new(prefix, rest, padded_end, padding_end),
            middle: middle.map(Bound::unbind),
        }
    }

    /// Named, as `TemplateCut.read` is, for the same reason.
    fn read<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'py, PyAny>,
    ) -> PyResult<Option<(Option<u64>, Bound<'py, PyString>)>> {
        let Ok(frame) = frame.cast::<ServerSentEvent>() else {
            return Ok(None); // not ours to read: the payload is parsed
        };
        let raw = frame.get().raw_bytes(py);
        Ok(self
            .text_of(py, &raw)?
            .map(|(number, text)| (number, text.into_str(py))))
    }
}

impl NumberedCut {
    /// What `read` answers for a frame whose data is `raw` (see `TemplateCut::text_of`).
    #[inline]
    pub(crate) fn text_of<'a, 'py>(
        &self,
        py: Python<'py>,
        raw: &'a [u8],
    ) -> PyResult<Option<(Option<u64>, CutText<'a, 'py>)>> {
        let shape = &self.shape;
        let (prefix, rest) = (shape.prefix.as_bytes(py), shape.rest.as_bytes(py));
        let end = shape.end(py);
        let found = match &self.middle {
            Some(middle) => cut_numbered(raw, prefix, middle.as_bytes(py), rest, end)
                .map(|(number, body, value)| (Some(number), body, value)),
            None => cut(raw, prefix, rest, end).map(|(body, value)| (None, body, value)),
        };
        let Some((number, body, value)) = found else {
            return Ok(None);
        };
        Ok(text(py, body, value)?.map(|text| (number, text)))
    }
}

/// The text of a cut `body` whose padding value is `value` (empty when there is none): `None`
/// when the value is not alphanumeric (Python's `isalnum`) or the body is not one this reads
/// (see `TemplateCut`). Always inlined into both readers, as it was into `TemplateCut.read`
/// alone: a plain `#[inline]` left it a call (measured under callgrind).
#[allow(clippy::inline_always)]
#[inline(always)]
fn text<'a, 'py>(
    py: Python<'py>,
    body: &'a [u8],
    value: &[u8],
) -> PyResult<Option<CutText<'a, 'py>>> {
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
            b'"' | b'\\' => return Ok(escaped_body(py, body).map(CutText::Str)),
            0..=0x1f | 0x7f => return Ok(None),
            0x80.. => ascii = false,
            _ => {}
        }
    }
    if ascii {
        return Ok(Some(CutText::Ascii(body)));
    }
    let Ok(text) = std::str::from_utf8(body) else {
        return Ok(None);
    };
    let text = PyString::new(py, text);
    // Python's notion of printable (U+2028, format characters, unassigned code points…),
    // asked only when the body has a character beyond ASCII.
    if !text.call_method0(intern!(py, "isprintable"))?.is_truthy()? {
        return Ok(None);
    }
    Ok(Some(CutText::Str(text)))
}

/// The text a cut reads: printable ASCII as the frame's own bytes, so that a fold which keeps
/// bytes (`TextBuffer`) makes no `str` of it; any other text as the `str` it reads as.
pub(crate) enum CutText<'a, 'py> {
    Ascii(&'a [u8]),
    Str(Bound<'py, PyString>),
}

impl<'py> CutText<'_, 'py> {
    pub(crate) fn into_str(self, py: Python<'py>) -> Bound<'py, PyString> {
        match self {
            CutText::Ascii(bytes) => str_from_utf8(py, bytes),
            CutText::Str(text) => text,
        }
    }

    /// The text as a `str` (a new one for ASCII bytes, else the one it holds).
    pub(crate) fn to_str(&self, py: Python<'py>) -> Bound<'py, PyString> {
        match self {
            CutText::Ascii(bytes) => str_from_utf8(py, bytes),
            CutText::Str(text) => text.clone(),
        }
    }

    /// Its length in characters, as Python's `len` counts them.
    pub(crate) fn chars(&self) -> PyResult<usize> {
        match self {
            CutText::Ascii(bytes) => Ok(bytes.len()),
            CutText::Str(text) => text.len(),
        }
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
