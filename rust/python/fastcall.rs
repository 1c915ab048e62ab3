//! The two hottest entry points, called through `CPython`'s own calling conventions rather than
//! `PyO3`'s trampolines: `SSEDecoder.feed` (once per network read) and `ServerSentEvent.data`
//! (once per event).
//!
//! Why: a `PyO3` method or getter wraps each call in generic argument parsing and bookkeeping
//! that costs about 25 ns. A stream read in small pieces makes several `feed` calls per event,
//! and that wrapper was about a quarter of such a call. Here `feed` takes
//! its one argument straight from `CPython`'s vector of arguments (`METH_FASTCALL`), and `data`
//! is a plain getter. Both call the same Rust methods the `PyO3` ones did, raise the same
//! errors, and turn a panic into `PanicException`, as `PyO3` does; their signatures are
//! unchanged (`feed(chunk)`, by position or by name).

use std::ffi::{c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple, PyTupleMethods, PyType};

use super::sse::{SSEDecoder, ServerSentEvent};

const FEED_DOC: &CStr =
    c"feed($self, chunk)\n--\n\nDecode one chunk of bytes; returns the events it completed.";
const DATA_DOC: &CStr =
    c"The data, decoded as UTF-8 (invalid bytes become U+FFFD); made on first access.";

/// Put `feed` and `data` on their classes, in place of the `PyO3` ones (module init).
pub fn install(py: Python<'_>) -> PyResult<()> {
    // The method and getter tables must live as long as the classes: for the process.
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
    decoder.setattr("feed", method)?;

    let data = Box::leak(Box::new(ffi::PyGetSetDef {
        name: c"data".as_ptr(),
        get: Some(data),
        set: None,
        doc: DATA_DOC.as_ptr(),
        closure: null_mut(),
    }));
    let event = py.get_type::<ServerSentEvent>();
    // SAFETY: as above, with a getter table.
    let getter = unsafe {
        Bound::from_owned_ptr_or_err(py, ffi::PyDescr_NewGetSet(type_ptr(&event), data))?
    };
    event.setattr("data", getter)
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

/// `ServerSentEvent.data`.
///
/// # Safety
/// Called by `CPython` only, attached, as a getter of `ServerSentEvent` instances.
unsafe extern "C" fn data(slf: *mut ffi::PyObject, _closure: *mut c_void) -> *mut ffi::PyObject {
    // SAFETY: CPython calls getters attached to the interpreter.
    let py = unsafe { Python::assume_attached() };
    answer(py, || {
        // SAFETY: `slf` is a borrowed reference valid for the call.
        let slf = unsafe { Bound::from_borrowed_ptr(py, slf) };
        Ok(slf.cast::<ServerSentEvent>()?.get().data(py))
    })
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
