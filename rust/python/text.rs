//! Python `str`s from UTF-8 bytes, and a `str` cell filled on first use.

use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::sse::decode_lossy;

const LARGE: usize = 64 * 1024;

/// The `str` of UTF-8 bytes; invalid sequences become U+FFFD, as the event-stream spec says.
///
/// Pure ASCII (most payloads) goes straight to CPython, whose ASCII decoder is a copy. Other
/// text is measured first ([`crate::utf8::shape`]) and written once into a `str` of its final
/// width and length, where CPython's decoder would widen and copy its buffer as wider
/// characters turn up and shrink it at the end (see `crate::utf8`).
pub fn str_from_utf8<'py>(py: Python<'py>, bytes: &[u8]) -> Bound<'py, PyString> {
    if bytes.len() < LARGE {
        if let Ok(s) = PyString::from_bytes(py, bytes) {
            return s;
        }
    }
    build(py, &decode_lossy(bytes))
}

#[cfg(not(feature = "abi3"))]
fn build<'py>(py: Python<'py>, text: &str) -> Bound<'py, PyString> {
    use crate::utf8::{decode_into, shape, Width};

    let shape = shape(text);
    let Ok(size) = ffi::Py_ssize_t::try_from(shape.chars) else {
        return PyString::new(py, text);
    };
    let max_char: ffi::Py_UCS4 = shape.width.max_char();
    // SAFETY: `PyUnicode_New` returns a new reference to an uninitialised string of `size`
    // characters of the kind `max_char` calls for, or null with an error set (out of memory:
    // cleared, and `PyString::new` then raises it properly). The slice covers exactly those
    // `size` units, of the type that kind uses, and `decode_into` writes every one of them
    // (`shape` counted them) before the string is handed out; every character fits the unit
    // (`shape` chose the width from the widest). The width is the narrowest that fits, which
    // CPython requires of every `str`.
    unsafe {
        let ptr = ffi::PyUnicode_New(size, max_char);
        if ptr.is_null() {
            ffi::PyErr_Clear();
            return PyString::new(py, text);
        }
        let data = ffi::PyUnicode_DATA(ptr);
        match shape.width {
            Width::Ascii => std::ptr::copy_nonoverlapping(text.as_ptr(), data.cast(), shape.chars),
            Width::Latin1 => decode_into(
                text,
                std::slice::from_raw_parts_mut(data.cast::<u8>(), shape.chars),
            ),
            Width::Ucs2 => decode_into(
                text,
                std::slice::from_raw_parts_mut(data.cast::<u16>(), shape.chars),
            ),
            Width::Ucs4 => decode_into(
                text,
                std::slice::from_raw_parts_mut(data.cast::<u32>(), shape.chars),
            ),
        }
        Bound::from_owned_ptr(py, ptr).cast_into_unchecked()
    }
}

/// The limited API has no access to a `str`'s buffer: CPython decodes.
#[cfg(feature = "abi3")]
fn build<'py>(py: Python<'py>, text: &str) -> Bound<'py, PyString> {
    PyString::new(py, text)
}

/// A `str` made on first use and then kept, safe to share between threads.
///
/// An atomic pointer rather than a `OnceLock`: reading an event's `data` is the hot path of
/// every framing loop, and the `Once` machinery costs more than a compare-and-swap. Two
/// threads may both make the string; the first to store it wins and the other's is dropped.
pub struct OnceStr(AtomicPtr<ffi::PyObject>);

impl OnceStr {
    pub fn empty() -> Self {
        OnceStr(AtomicPtr::new(std::ptr::null_mut()))
    }

    pub fn with(text: Bound<'_, PyString>) -> Self {
        OnceStr(AtomicPtr::new(text.into_ptr()))
    }

    pub fn get_or_make<'py>(
        &self,
        py: Python<'py>,
        make: impl FnOnce() -> Bound<'py, PyString>,
    ) -> Bound<'py, PyString> {
        let current = self.0.load(Ordering::Acquire);
        if !current.is_null() {
            // SAFETY: a non-null pointer is a reference this cell owns until it is dropped;
            // we are attached, and borrowing it makes a new strong reference.
            return unsafe { Bound::from_borrowed_ptr(py, current).cast_into_unchecked() };
        }
        let made = make();
        match self.0.compare_exchange(
            std::ptr::null_mut(),
            made.clone().into_ptr(),
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => made,
            Err(winner) => {
                // SAFETY: the exchange failed, so the reference we offered is still ours to
                // release; `winner` is owned by the cell, as above.
                unsafe {
                    drop(Bound::<PyAny>::from_owned_ptr(py, made.as_ptr()));
                    Bound::from_borrowed_ptr(py, winner).cast_into_unchecked()
                }
            }
        }
    }
}

impl Drop for OnceStr {
    fn drop(&mut self) {
        let ptr = *self.0.get_mut();
        if !ptr.is_null() {
            // Events are dropped by their deallocator, attached; `attach` is then a counter.
            // SAFETY: the cell owns this reference and nothing can read it any more.
            Python::attach(|py| unsafe { drop(Bound::<PyAny>::from_owned_ptr(py, ptr)) });
        }
    }
}
