//! `TextBuffer`: a text block's text while it is folded ([`TextBytes`]), appended to by the
//! fold's Python handlers and by the decoder's folding path, and made one `str` when the
//! message is built.

use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyBytes, PyString};

use super::sse::poisoned;
use super::template::CutText;
use super::text::str_from_utf8;
use crate::text_bytes::{Joined, TextBytes};

/// `TextBuffer()`: text appended a fragment at a time (`append`, as to a list of pieces) and
/// read whole (`text()`), where a character a host cut into two UTF-16 halves, one per
/// fragment, is one character again. It holds the text's UTF-8 bytes, not an object per
/// fragment.
#[pyclass(frozen, module = "streamfold._core")]
pub struct TextBuffer {
    text: Mutex<TextBytes>,
}

impl TextBuffer {
    fn text(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, TextBytes>> {
        self.text
            .lock_py_attached(py)
            .map_err(|_| poisoned("TextBuffer"))
    }

    /// Append what the decoder's folding path cut from a frame.
    pub(super) fn take(&self, py: Python<'_>, text: CutText<'_, '_>) -> PyResult<()> {
        match text {
            // Printable ASCII, checked by the cut.
            CutText::Ascii(bytes) => {
                if self.text(py)?.push_ascii(bytes) {
                    Ok(())
                } else {
                    Err(PyValueError::new_err("a cut's ASCII text is not ASCII"))
                }
            }
            CutText::Str(text) => self.push(py, &text),
        }
    }

    /// Append `fragment`; text read from a stream's bytes is UTF-8, so `to_str` takes it
    /// as it is, and only a fragment with a lone surrogate (parsed from a `\u` escape) is
    /// encoded with `surrogatepass`.
    pub(super) fn push(&self, py: Python<'_>, fragment: &Bound<'_, PyString>) -> PyResult<()> {
        if let Ok(text) = fragment.to_str() {
            self.text(py)?.push_str(text);
        } else {
            let bytes = fragment.call_method1(
                intern!(py, "encode"),
                (intern!(py, "utf-8"), intern!(py, "surrogatepass")),
            )?;
            let bytes = bytes.cast_into::<PyBytes>()?;
            self.text(py)?.push_with_surrogates(bytes.as_bytes());
        }
        Ok(())
    }
}

#[pymethods]
impl TextBuffer {
    #[new]
    fn new() -> Self {
        TextBuffer {
            text: Mutex::new(TextBytes::new()),
        }
    }

    /// Append a fragment of text.
    fn append(&self, py: Python<'_>, fragment: &Bound<'_, PyString>) -> PyResult<()> {
        self.push(py, fragment)
    }

    /// All of the text so far, as one new `str`.
    #[pyo3(name = "text")]
    fn whole<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        let text = self.text(py)?;
        match text.joined() {
            Joined::Utf8(joined) => Ok(str_from_utf8(py, joined.as_bytes())),
            Joined::WithSurrogates(bytes) => {
                let bytes = PyBytes::new(py, &bytes);
                drop(text);
                Ok(PyString::from_encoded_object(
                    &bytes,
                    Some(c"utf-8"),
                    Some(c"surrogatepass"),
                )?)
            }
        }
    }

    /// The UTF-8 length of the text so far (a lone surrogate counts three bytes).
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.text(py)?.len())
    }

    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(!self.text(py)?.is_empty())
    }
}
