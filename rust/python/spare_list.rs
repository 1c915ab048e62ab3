//! The empty list `SSEDecoder.feed` returns for a read that ends no event, made once and
//! handed out again.
//!
//! Most reads end no event: a stream read in small pieces makes several reads per event, and a
//! big event read in 4 KiB pieces thousands. Making and freeing a list for each was about a
//! tenth of such a call. The list last handed out is handed out again when the decoder is the
//! only one holding it and it is still empty: nobody can then tell it from a new one (`CPython`
//! reuses a freed list's memory the same way). A list the caller kept or filled stays the
//! caller's, and a new one is made.
//!
//! Only with a GIL: while it is held, a reference count read is exact. A free-threaded build
//! makes a new list every time.

use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3::{PyTraverseError, PyVisit};

#[derive(Default)]
pub struct SpareList {
    #[cfg(not(Py_GIL_DISABLED))]
    list: Option<Py<PyList>>,
}

impl SpareList {
    /// An empty list to return.
    #[cfg(not(Py_GIL_DISABLED))]
    pub fn take<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyList> {
        if let Some(list) = &self.list {
            let list = list.bind(py);
            // SAFETY: `list` is a live object; attached with a GIL, nothing else changes its
            // count while we read it. One reference, ours, means no one else can see it.
            if unsafe { pyo3::ffi::Py_REFCNT(list.as_ptr()) } == 1 && list.is_empty() {
                return list.clone();
            }
        }
        let list = PyList::empty(py);
        self.list = Some(list.clone().unbind());
        list
    }

    #[cfg(Py_GIL_DISABLED)]
    #[allow(clippy::unused_self)]
    pub fn take<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyList> {
        PyList::empty(py)
    }

    /// For the decoder's `__traverse__`: a caller may have put the decoder in a list it was
    /// handed and dropped, a cycle through this reference.
    pub fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        #[cfg(not(Py_GIL_DISABLED))]
        visit.call(&self.list)?;
        #[cfg(Py_GIL_DISABLED)]
        let _ = visit;
        Ok(())
    }

    /// For the decoder's `__clear__`.
    pub fn clear(&mut self) {
        #[cfg(not(Py_GIL_DISABLED))]
        {
            self.list = None;
        }
    }
}
