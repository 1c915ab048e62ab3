//! `SlotBuilder`: make instances of a frozen, slotted dataclass without its `__init__`.
//!
//! A provider makes one `BlockDelta` per text fragment, thousands per stream. The dataclass's
//! `__init__` parses keywords and sets every field through `object.__setattr__`; doing the same
//! from Python (`object.__new__` plus each slot's `__set__`) still costs a Python-level call per
//! field, which made the event the largest single cost of a text delta. Here it is one call:
//! allocate as `object.__new__(cls)` does, then store each value as `object.__setattr__` does
//! (through the class's slot descriptors; the frozen `__setattr__` is what both skip).

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

/// `SlotBuilder(cls, names, fixed).build(*values)` is `obj = object.__new__(cls)`, then
/// `object.__setattr__(obj, name, value)` for each of `names` with `values`, and for each
/// `(name, value)` of `fixed`.
#[pyclass(frozen, module = "streamfold._core")]
pub struct SlotBuilder {
    cls: Py<PyType>,
    names: Vec<Py<PyString>>,
    fixed: Vec<(Py<PyString>, Py<PyAny>)>,
    /// The default of each of `names`, if it has one (`init`).
    defaults: Vec<Option<Py<PyAny>>>,
}

#[pymethods]
impl SlotBuilder {
    #[new]
    #[pyo3(signature = (cls, names, fixed, defaults = None, /))]
    fn new(
        cls: Bound<'_, PyType>,
        names: Vec<Bound<'_, PyString>>,
        fixed: Vec<(Bound<'_, PyString>, Bound<'_, PyAny>)>,
        defaults: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        // `object.__new__` refuses abstract classes; so does this, once, here.
        let abstract_ = cls
            .getattr("__abstractmethods__")
            .is_ok_and(|m| m.is_truthy().unwrap_or(true));
        if abstract_ {
            return Err(PyTypeError::new_err(
                "SlotBuilder: cannot build an abstract class",
            ));
        }
        let defaults = names
            .iter()
            .map(|name| match defaults {
                Some(d) => d.get_item(name).map(|v| v.map(Bound::unbind)),
                None => Ok(None),
            })
            .collect::<PyResult<_>>()?;
        Ok(SlotBuilder {
            cls: cls.unbind(),
            names: names.into_iter().map(Bound::unbind).collect(),
            fixed: fixed
                .into_iter()
                .map(|(n, v)| (n.unbind(), v.unbind()))
                .collect(),
            defaults,
        })
    }

    /// A named method rather than `__call__`: a method call skips the generic call protocol's
    /// argument tuple (vectorcall), which is measurable at one call per event.
    #[pyo3(signature = (*values))]
    pub(crate) fn build<'py>(
        &self,
        py: Python<'py>,
        values: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.check(values)?;
        // SAFETY: `PyType_GenericAlloc` returns a new reference or NULL with an exception set;
        // it is what `object.__new__` calls for a class that does not override allocation.
        let obj = unsafe {
            Bound::from_owned_ptr_or_err(py, ffi::PyType_GenericAlloc(self.cls.as_ptr().cast(), 0))
        }?;
        self.store(&obj, values)?;
        Ok(obj)
    }

    /// `fill(obj, *values)`: the stores of `build` on an object already made, for a frozen
    /// dataclass's `__init__` (`_frozen_init`): one call for every field instead of one
    /// slot `__set__` per field, the larger part of making an event by calling its class.
    #[pyo3(signature = (obj, *values))]
    fn fill(&self, obj: &Bound<'_, PyAny>, values: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.check(values)?;
        self.store(obj, values)
    }

    /// `init(obj, kwargs)`: the stores of a keyword-only dataclass `__init__` called with
    /// `kwargs`, each field absent from them taking its default (`defaults`). `False`, with
    /// nothing stored, when `kwargs` name another field or lack one that has no default: the
    /// caller then calls the dataclass's own `__init__`, for its exact error.
    #[pyo3(signature = (obj, kwargs, /))]
    fn init(&self, obj: &Bound<'_, PyAny>, kwargs: &Bound<'_, PyDict>) -> PyResult<bool> {
        let py = obj.py();
        let mut values: Vec<Option<Bound<'_, PyAny>>> = vec![None; self.names.len()];
        for (key, value) in kwargs {
            let Some(k) = self.field_of(&key)? else {
                return Ok(false);
            };
            values[k] = Some(value);
        }
        for (value, default) in values.iter_mut().zip(&self.defaults) {
            if value.is_none() {
                match default {
                    Some(default) => *value = Some(default.bind(py).clone()),
                    None => return Ok(false),
                }
            }
        }
        for (name, value) in self.names.iter().zip(values.iter().flatten()) {
            set_slot(obj, name, value)?;
        }
        for (name, value) in &self.fixed {
            set_slot(obj, name, value.bind(py))?;
        }
        Ok(true)
    }
}

/// `object.__setattr__(obj, name, value)`: the generic store, through the class's slot
/// descriptor (a frozen dataclass's own `__setattr__` refuses).
fn set_slot(obj: &Bound<'_, PyAny>, name: &Py<PyString>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    // SAFETY: all three pointers are live for the call; -1 means an exception is set.
    let rc = unsafe { ffi::PyObject_GenericSetAttr(obj.as_ptr(), name.as_ptr(), value.as_ptr()) };
    if rc < 0 {
        Err(PyErr::fetch(obj.py()))
    } else {
        Ok(())
    }
}

impl SlotBuilder {
    /// Which of `names` the keyword `key` is: the same (interned) string object, as a call's
    /// keywords and the dataclass's field names are, else an equal one.
    fn field_of(&self, key: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        if let Some(k) = self.names.iter().position(|n| n.as_ptr() == key.as_ptr()) {
            return Ok(Some(k));
        }
        for (k, name) in self.names.iter().enumerate() {
            if key.eq(name)? {
                return Ok(Some(k));
            }
        }
        Ok(None)
    }

    fn check(&self, values: &Bound<'_, PyTuple>) -> PyResult<()> {
        if values.len() == self.names.len() {
            return Ok(());
        }
        Err(PyTypeError::new_err(format!(
            "SlotBuilder: expected {} values, got {}",
            self.names.len(),
            values.len()
        )))
    }

    /// Each field's value into `obj`'s slot, then the fixed ones, as `object.__setattr__`
    /// would (a frozen dataclass's own `__setattr__` refuses).
    fn store(&self, obj: &Bound<'_, PyAny>, values: &Bound<'_, PyTuple>) -> PyResult<()> {
        let py = obj.py();
        let set = |name: &Py<PyString>, value: &Bound<'_, PyAny>| -> PyResult<()> {
            // SAFETY: all three pointers are live for the call; -1 means an exception is set.
            let rc = unsafe {
                ffi::PyObject_GenericSetAttr(obj.as_ptr(), name.as_ptr(), value.as_ptr())
            };
            if rc < 0 {
                Err(PyErr::fetch(py))
            } else {
                Ok(())
            }
        };
        for (name, value) in self.names.iter().zip(values.iter()) {
            set(name, &value)?;
        }
        for (name, value) in &self.fixed {
            set(name, value.bind(py))?;
        }
        Ok(())
    }
}
