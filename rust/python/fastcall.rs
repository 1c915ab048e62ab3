//! The hottest entry point of the framing API, `SSEDecoder.feed` (once per network read),
//! called through `CPython`'s own calling convention rather than `PyO3`'s trampoline: the one
//! place streamfold reaches into `CPython`'s descriptor API, and only through `install`.
//!
//! Why: a `PyO3` method wraps each call in generic argument parsing and bookkeeping. A stream
//! read in small pieces makes several `feed` calls per event, and that wrapper is a good part
//! of such a call: measured under callgrind (release build, the 10,000-event `OpenAI` stream of
//! `benches/per_event.py` in random 1-64 byte reads, every event's `data` read), the framing
//! loop costs 135.0M instructions through `PyO3`'s `feed` and 118.5M through this one (14%
//! more); at 16 KiB reads the two are within 0.1%. The fold and `events` never call it (they
//! read through `feed_folding`, `feed_stepping` and `feed_events`). `ServerSentEvent.data`
//! was replaced here too; `PyO3`'s getter costs 2% at 16 KiB reads (34.9M against 34.2M), so
//! it is `PyO3`'s again.
//!
//! `feed` takes its one argument straight from `CPython`'s vector of arguments
//! (`METH_FASTCALL`), calls the same Rust method, raises the same errors, and turns a panic
//! into `PanicException`, as `PyO3` does; its signature is unchanged (`feed(chunk)`, by
//! position or by name).

use std::ffi::CStr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple, PyTupleMethods, PyType};

use super::sse::SSEDecoder;

const FEED_DOC: &CStr =
    c"feed($self, chunk)\n--\n\nDecode one chunk of bytes; returns the events it completed.";

/// Put `feed` on `SSEDecoder` (module init).
pub fn install(py: Python<'_>) -> PyResult<()> {
    // The method table must live as long as the class: for the process.
    let feed = Box::leak(Box::new(ffi::PyMethodDef {
        ml_name: c"feed".as_ptr(),
        ml_meth: ffi::PyMethodDefPointer {
            PyCFunctionFastWithKeywords: feed,
        },
        ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
        ml_doc: FEED_DOC.as_ptr(),
    }));
    let decoder = py.get_type::<SSEDecoder>();
    DECODER_TYPE.store(type_ptr(&decoder), Ordering::Release);
    // SAFETY: the type is a live class object and `feed` a method table that is never freed;
    // a null result (out of memory) becomes the error it set.
    let method = unsafe {
        Bound::from_owned_ptr_or_err(py, ffi::PyDescr_NewMethod(type_ptr(&decoder), feed))?
    };
    decoder.setattr("feed", method)
}

fn type_ptr(ty: &Bound<'_, PyType>) -> *mut ffi::PyTypeObject {
    ty.as_ptr().cast()
}

/// The `SSEDecoder` class, kept at install: `feed` checks its `self` against it with one
/// comparison, where `PyO3`'s `cast` first looks the class up (a cost paid on every read).
static DECODER_TYPE: AtomicPtr<ffi::PyTypeObject> = AtomicPtr::new(null_mut());

/// `SSEDecoder.feed(chunk)`.
///
/// # Safety
/// Called by `CPython` only, attached, as a `METH_FASTCALL | METH_KEYWORDS` method: `args`
/// holds `nargs` positional arguments followed by one value per name in `kwnames` (a tuple,
/// or null when there are none).
unsafe extern "C" fn feed(
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls methods attached to the interpreter.
    let py = unsafe { Python::assume_attached() };
    answer(py, || {
        // SAFETY: `slf` and the arguments are borrowed references valid for the call.
        let (slf, chunk) = unsafe {
            (
                Bound::from_borrowed_ptr(py, slf),
                only_argument(py, args, nargs, kwnames)?,
            )
        };
        // SAFETY: `slf` is a live object, so its class can be read.
        let exact = unsafe { ffi::Py_TYPE(slf.as_ptr()) } == DECODER_TYPE.load(Ordering::Relaxed);
        let decoder = if exact {
            // SAFETY: `slf`'s class is exactly `SSEDecoder`, which is what the cast needs.
            unsafe { slf.cast_unchecked::<SSEDecoder>() }
        } else {
            slf.cast::<SSEDecoder>()?
        };
        decoder.get().feed(py, &chunk)
    })
}

/// The one argument of `feed`, given by position or as `chunk=`.
///
/// # Safety
/// As for [`feed`].
unsafe fn only_argument(
    py: Python<'_>,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> PyResult<Bound<'_, PyAny>> {
    let names = if kwnames.is_null() {
        None
    } else {
        // SAFETY: a non-null `kwnames` is a tuple of `str`, borrowed for the call.
        Some(unsafe { Bound::from_borrowed_ptr(py, kwnames).cast_into_unchecked::<PyTuple>() })
    };
    let by_name = names.as_ref().map_or(0, PyTupleMethods::len);
    let named_chunk = || {
        names
            .as_ref()
            .and_then(|n| n.get_item(0).ok())
            .is_some_and(|name| name.cast::<PyString>().is_ok_and(|s| s == "chunk"))
    };
    if (nargs == 1 && by_name == 0) || (nargs == 0 && by_name == 1 && named_chunk()) {
        // SAFETY: there is exactly one argument value, at the start of `args`.
        return Ok(unsafe { Bound::from_borrowed_ptr(py, *args) });
    }
    Err(PyTypeError::new_err(
        "SSEDecoder.feed() takes exactly one argument, chunk",
    ))
}

/// What `CPython` expects back: a new reference, or null with the error set. A panic does not
/// cross into C: it is raised as `PanicException`.
fn answer<'py, T>(
    py: Python<'py>,
    call: impl FnOnce() -> PyResult<Bound<'py, T>>,
) -> *mut ffi::PyObject {
    let err = match catch_unwind(AssertUnwindSafe(call)) {
        Ok(Ok(value)) => return value.into_ptr(),
        Ok(Err(err)) => err,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic in streamfold".to_owned());
            PanicException::new_err(message)
        }
    };
    err.restore(py);
    null_mut()
}
