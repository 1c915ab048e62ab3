//! Converting core errors to the exception classes of `streamfold._errors` (defined in Python
//! so that they can carry the partial message and other Python-side state).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};

static ERRORS_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn error_class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    let module =
        ERRORS_MODULE.get_or_try_init(py, || py.import("streamfold._errors").map(Bound::unbind))?;
    Ok(module.bind(py).getattr(name)?.cast_into::<PyType>()?)
}

/// Build `streamfold._errors.<name>(message, **kwargs)` as a `PyErr`.
#[cold]
pub fn make_error(
    py: Python<'_>,
    name: &str,
    message: &str,
    kwargs: &[(&str, Bound<'_, PyAny>)],
) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let cls = error_class(py, name)?;
        let kw = PyDict::new(py);
        for (k, v) in kwargs {
            kw.set_item(k, v)?;
        }
        let exc = cls.call((message,), Some(&kw))?;
        Ok(PyErr::from_value(exc))
    };
    build().unwrap_or_else(|e| e)
}
