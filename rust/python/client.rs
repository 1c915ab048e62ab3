//! The binding of the native HTTP client (`crate::transport`): a client, the hub an event
//! loop is woken through, and a streamed response. Waits happen with the GIL released; the
//! errors become the classes `streamfold._errors` registers (`errors::transport_error`).

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use super::errors::transport_error;
use crate::timing::epoch_seconds;
use crate::transport::{self, Config, Error, Head, Hub, Read, Request, Verify};

/// A sync wait gives the interpreter back this often, so Ctrl-C (a signal handler that
/// raises) reaches a thread blocked on a silent server.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

fn to_py(py: Python<'_>, err: &Error) -> PyErr {
    transport_error(py, err)
}

/// A timeout in seconds; past a year it is no limit (a wait that long is not a timeout, and
/// a deadline that far could overflow the clock's arithmetic).
fn seconds(value: Option<f64>, what: &str) -> PyResult<Option<Duration>> {
    const YEAR: f64 = 365.0 * 86_400.0;
    match value {
        None => Ok(None),
        Some(s) if s > YEAR => Ok(None),
        Some(s) if s > 0.0 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(PyValueError::new_err(format!(
            "{what} must be a positive number of seconds or None, got {s}"
        ))),
    }
}

/// The core client, shared by threads (its pool is).
#[pyclass(frozen, module = "streamfold._core")]
pub struct NativeClient {
    inner: transport::Client,
}

#[pymethods]
impl NativeClient {
    #[new]
    #[pyo3(signature = (*, verify, ca_pem, identity_pem, proxy, connect_timeout, http2))]
    #[allow(clippy::too_many_arguments, clippy::needless_pass_by_value)]
    fn new(
        py: Python<'_>,
        verify: bool,
        ca_pem: Option<Vec<u8>>,
        identity_pem: Option<Vec<u8>>,
        proxy: Option<String>,
        connect_timeout: Option<f64>,
        http2: bool,
    ) -> PyResult<Self> {
        let verify = match (verify, ca_pem) {
            (false, _) => Verify::Off,
            (true, Some(pem)) => Verify::Bundle(pem),
            (true, None) => Verify::System,
        };
        let config = Config {
            verify,
            identity: identity_pem,
            proxy,
            connect_timeout: seconds(connect_timeout, "connect_timeout")?,
            http2,
        };
        // Loading the system's trust store reads files: without the GIL.
        let inner = py
            .detach(|| transport::Client::new(config))
            .map_err(|err| to_py(py, &err))?;
        Ok(Self { inner })
    }

    /// Check the request and start it; nothing is sent when it is refused.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (method, url, headers, body, read_timeout, max_redirects, hub = None))]
    fn start(
        &self,
        py: Python<'_>,
        method: String,
        url: String,
        headers: Vec<(String, Vec<u8>)>,
        body: Option<Vec<u8>>,
        read_timeout: Option<f64>,
        max_redirects: usize,
        hub: Option<&NativeHub>,
    ) -> PyResult<NativeStream> {
        let request = Request {
            method,
            url,
            headers,
            body,
            read_timeout: seconds(read_timeout, "the read timeout")?,
            max_redirects,
        };
        let stream = self
            .inner
            .start(request, hub.map(|h| Arc::clone(&h.inner)))
            .map_err(|err| to_py(py, &err))?;
        Ok(NativeStream { inner: stream })
    }

    fn close(&self) {
        self.inner.close();
    }

    /// Refuse headers that cannot be sent, as `start` would (the client's defaults are checked
    /// when it is made).
    #[staticmethod]
    #[allow(clippy::needless_pass_by_value)] // pyo3 extracts a Vec
    fn check_headers(py: Python<'_>, headers: Vec<(String, Vec<u8>)>) -> PyResult<()> {
        transport::check_headers(&headers)
            .map(drop)
            .map_err(|err| to_py(py, &err))
    }
}

/// The wake-ups of one event loop: `fd` is the write end of its socket pair.
#[pyclass(frozen, module = "streamfold._core")]
pub struct NativeHub {
    inner: Arc<Hub>,
}

#[pymethods]
impl NativeHub {
    /// `fd`: a duplicate of the write end's descriptor (socket handle on Windows), owned
    /// from now on.
    #[new]
    fn new(fd: i64) -> PyResult<Self> {
        #[cfg(unix)]
        let socket = {
            use std::os::fd::FromRawFd;
            let raw = std::os::fd::RawFd::try_from(fd)
                .map_err(|_| PyValueError::new_err(format!("not a file descriptor: {fd}")))?;
            // SAFETY: the caller hands over a descriptor of its own (a dup) to own here.
            unsafe { std::os::unix::net::UnixStream::from_raw_fd(raw) }
        };
        #[cfg(windows)]
        let socket = {
            use std::os::windows::io::FromRawSocket;
            let raw = std::os::windows::io::RawSocket::try_from(fd)
                .map_err(|_| PyValueError::new_err(format!("not a socket: {fd}")))?;
            // SAFETY: as above, a socket handle detached for us.
            unsafe { std::net::TcpStream::from_raw_socket(raw) }
        };
        let hub = Hub::new(socket).map_err(|err| PyValueError::new_err(err.to_string()))?;
        Ok(Self {
            inner: Arc::new(hub),
        })
    }

    /// The ids of the streams with something new since the last drain.
    fn drain<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.inner.drain())
    }

    fn close(&self) {
        self.inner.close();
    }
}

/// One streamed response.
#[pyclass(frozen, module = "streamfold._core")]
pub struct NativeStream {
    inner: Arc<transport::Stream>,
}

/// The head as Python: `(status, reason, version, [(name, value)], url)`. A value is read as
/// Latin-1 (every byte a character, as httpx reads them); the names, the reason and the version
/// are interned, so the open streams share one `"content-type"` rather than each keeping its
/// own.
fn head_tuple<'py>(py: Python<'py>, head: &Head) -> PyResult<Bound<'py, PyTuple>> {
    let headers = PyList::empty(py);
    for (name, value) in &head.headers {
        let value: String = value.iter().map(|&byte| char::from(byte)).collect();
        headers.append((PyString::intern(py, name), value))?;
    }
    (
        head.status,
        PyString::intern(py, &head.reason),
        PyString::intern(py, head.version),
        headers,
        head.url.as_str(),
    )
        .into_pyobject(py)
}

/// A read as Python: the bytes; `b""` at the end; `None` for nothing yet.
fn read_result(py: Python<'_>, read: Read) -> PyResult<Option<Bound<'_, PyBytes>>> {
    match read {
        Read::Data(data) => Ok(Some(PyBytes::new(py, &data))),
        Read::End => Ok(Some(PyBytes::new(py, b""))),
        Read::Failed(err) => Err(to_py(py, &err)),
        Read::Pending => Ok(None),
    }
}

#[pymethods]
impl NativeStream {
    #[getter]
    fn id(&self) -> u64 {
        self.inner.id
    }

    /// The head `(status, reason, version, [(name, value)], url)`, or None when it has not come.
    fn try_head<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        match self.inner.try_head() {
            None => Ok(None),
            Some(Ok(head)) => head_tuple(py, &head).map(Some),
            Some(Err(err)) => Err(to_py(py, &err)),
        }
    }

    /// Wait for the head without the GIL (the read timeout, if any, is the task's).
    fn wait_head<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        loop {
            let stream = Arc::clone(&self.inner);
            match py.detach(move || stream.wait_head(SIGNAL_CHECK)) {
                None => py.check_signals()?,
                Some(Ok(head)) => return head_tuple(py, &head),
                Some(Err(err)) => return Err(to_py(py, &err)),
            }
        }
    }

    /// Everything that arrived since the last read, waiting for it without the GIL; `b""` at
    /// the end of the body.
    fn read<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        if let Some(bytes) = read_result(py, self.inner.try_read())? {
            return Ok(bytes);
        }
        loop {
            let stream = Arc::clone(&self.inner);
            let read = py.detach(move || stream.wait(SIGNAL_CHECK));
            match read_result(py, read)? {
                Some(bytes) => return Ok(bytes),
                None => py.check_signals()?,
            }
        }
    }

    /// `read()` without waiting: None when nothing came since the last read.
    fn try_read<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        read_result(py, self.inner.try_read())
    }

    /// `try_read()` with `[(end, at)]`: where each read of the connection ended in the bytes
    /// and when it came, in the epoch seconds `ReadClock.pin` takes (batched; else empty).
    #[allow(clippy::type_complexity)] // the Python tuple
    fn try_read_marked<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Option<(Bound<'py, PyBytes>, Vec<(usize, f64)>)>> {
        let (read, marks) = self.inner.try_read_marked();
        let marks = marks
            .into_iter()
            .map(|(end, at)| (end, epoch_seconds(at)))
            .collect();
        Ok(read_result(py, read)?.map(|bytes| (bytes, marks)))
    }

    /// Wake the reader only once `batch` bytes wait (at most 64 KiB), or at the end; 0: as soon
    /// as anything arrives.
    fn set_batch(&self, batch: usize) {
        self.inner.set_batch(batch);
    }

    /// The whole body has arrived (some of it may still wait to be read).
    fn complete(&self) -> bool {
        self.inner.complete()
    }

    /// Close the connection at once (from any thread: a blocked `read` wakes).
    fn close(&self) {
        self.inner.close();
    }
}

impl Drop for NativeStream {
    fn drop(&mut self) {
        self.inner.close();
    }
}
