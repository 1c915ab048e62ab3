//! Python `str`s from UTF-8 bytes, and a `str` cell filled on first use.

use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::sse::decode_lossy;

/// The `str` of UTF-8 bytes; invalid sequences become U+FFFD, as the event-stream spec says.
///
/// `CPython`'s decoder starts a narrow buffer as long as the bytes, widens and copies it when a
/// wider character turns up and shrinks it at the end. Here the text is measured first
/// ([`crate::utf8::shape`]: its length and widest character, 16 bytes a step) and written
/// once into a `str` of its final width and length ([`crate::utf8::decode_into`], which also
/// validates). Pure ASCII, most payloads, is one copy. Invalid UTF-8 (rare) is repaired first.
pub fn str_from_utf8<'py>(py: Python<'py>, bytes: &[u8]) -> Bound<'py, PyString> {
    if let Some(s) = build(py, bytes) {
        return s;
    }
    let text = decode_lossy(bytes);
    build(py, text.as_bytes()).unwrap_or_else(|| PyString::new(py, &text))
}

/// The `str` of `bytes`, if they are valid UTF-8 (and memory allows).
#[cfg(not(feature = "abi3"))]
fn build<'py>(py: Python<'py>, bytes: &[u8]) -> Option<Bound<'py, PyString>> {
    use std::mem::MaybeUninit;

    use crate::utf8::{decode_into, shape, Width};

    let shape = shape(bytes);
    let chars = shape.chars;
    if chars <= 1 && shape.width.max_char() <= 0xFF {
        // CPython hands out its cached empty and one-character strings (and their cached
        // UTF-8): the same objects, as `bytes.decode` gives.
        return PyString::from_bytes(py, bytes).ok();
    }
    let size = ffi::Py_ssize_t::try_from(chars).ok()?;
    // SAFETY: `PyUnicode_New` returns a new reference to an uninitialised string of `size`
    // characters of the kind `max_char` calls for, or null with an error set (out of memory:
    // cleared, and the caller's `PyString::new` then raises it properly). Each slice covers
    // exactly those `chars` units, of the type that kind uses, as `MaybeUninit` since they are
    // not written yet. ASCII (no byte above 0x7F) is one unit per byte and copied whole;
    // otherwise `decode_into` returns `Ok` only once it has written every unit, each a
    // character that fits it. The width is the narrowest that fits (`shape` takes it from the
    // widest character), which CPython requires of every `str`. A string left unfinished
    // (invalid UTF-8) is released unseen: deallocation reads no characters.
    unsafe {
        let ptr = ffi::PyUnicode_New(size, shape.width.max_char());
        if ptr.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        let data = ffi::PyUnicode_DATA(ptr);
        let written = match shape.width {
            Width::Ascii => {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), data.cast::<u8>(), bytes.len());
                Ok(())
            }
            Width::Latin1 => decode_into(
                bytes,
                std::slice::from_raw_parts_mut(data.cast::<MaybeUninit<u8>>(), chars),
            ),
            Width::Ucs2 => decode_into(
                bytes,
                std::slice::from_raw_parts_mut(data.cast::<MaybeUninit<u16>>(), chars),
            ),
            Width::Ucs4 => decode_into(
                bytes,
                std::slice::from_raw_parts_mut(data.cast::<MaybeUninit<u32>>(), chars),
            ),
        };
        let s = Bound::from_owned_ptr(py, ptr);
        written.ok().map(|()| s.cast_into_unchecked())
    }
}

/// The limited API has no access to a `str`'s buffer: `CPython` decodes.
#[cfg(feature = "abi3")]
fn build<'py>(py: Python<'py>, bytes: &[u8]) -> Option<Bound<'py, PyString>> {
    PyString::from_bytes(py, bytes).ok()
}

/// For benchmarks and tests only: `str_from_utf8(data)`, or `CPython`'s decoder with
/// `cpython=True`, made `repeat` times (the last one is returned).
#[pyfunction]
#[pyo3(name = "_bench_str_from_utf8", signature = (data, cpython = false, repeat = 1))]
pub fn bench_str_from_utf8<'py>(
    py: Python<'py>,
    data: &[u8],
    cpython: bool,
    repeat: usize,
) -> Bound<'py, PyString> {
    let make = || {
        if cpython {
            PyString::from_bytes(py, data)
                .unwrap_or_else(|_| PyString::new(py, &decode_lossy(data)))
        } else {
            str_from_utf8(py, data)
        }
    };
    for _ in 1..repeat {
        drop(std::hint::black_box(make()));
    }
    make()
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
        new: impl FnOnce() -> Bound<'py, PyString>,
    ) -> Bound<'py, PyString> {
        let current = self.0.load(Ordering::Acquire);
        if !current.is_null() {
            // SAFETY: a non-null pointer is a reference this cell owns until it is dropped;
            // we are attached, and borrowing it makes a new strong reference.
            return unsafe { Bound::from_borrowed_ptr(py, current).cast_into_unchecked() };
        }
        let made = new();
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
