//! `ReadClock`: a fold's [`ReadTimes`], shared by the Python path and the decoder's folding
//! path, so the reads of both are marked on one clock.

use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use pyo3::prelude::*;
use pyo3::sync::MutexExt;

use super::sse::poisoned;
use crate::timing::{epoch_seconds, ReadTimes};

/// `ReadClock(now=None)`: the arrival times of one fold's reads, in seconds since it was made.
/// `now` is a clock to read instead of the monotonic one (seconds, as `time.monotonic`), for a
/// caller that keeps its own. The fold that reads on it says its room first (`follow`).
#[pyclass(frozen, module = "streamfold._core")]
pub struct ReadClock {
    /// When the clock was made, in [`epoch_seconds`].
    start: f64,
    /// `now` and its reading when the clock was made.
    own: Option<(Py<PyAny>, f64)>,
    times: Mutex<Clocked>,
}

/// The times, and the arrival the next read takes instead of now (`pin`).
struct Clocked {
    times: ReadTimes,
    pinned: Option<f64>,
}

impl ReadClock {
    fn times(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, Clocked>> {
        self.times
            .lock_py_attached(py)
            .map_err(|_| poisoned("ReadClock"))
    }

    /// Seconds since the clock was made: the arrival `pin` set, else now.
    fn arrival(&self, py: Python<'_>) -> PyResult<(MutexGuard<'_, Clocked>, f64)> {
        // Read before locking: a clock of the caller's is Python code.
        let now = match &self.own {
            None => epoch_seconds(Instant::now()) - self.start,
            Some((now, start)) => now.bind(py).call0()?.extract::<f64>()? - start,
        };
        let mut clocked = self.times(py)?;
        let at = clocked.pinned.take().unwrap_or(now);
        Ok((clocked, at))
    }

    /// A read the folding path handled whole: see [`ReadTimes::folded`].
    pub(super) fn folded(&self, py: Python<'_>, events: bool, characters: u64) -> PyResult<()> {
        let (mut clocked, at) = self.arrival(py)?;
        clocked.times.folded(at, events, characters);
        Ok(())
    }
}

#[pymethods]
impl ReadClock {
    #[new]
    #[pyo3(signature = (now = None))]
    fn new(py: Python<'_>, now: Option<Py<PyAny>>) -> PyResult<Self> {
        let own = match now {
            None => None,
            Some(now) => {
                let start = now.bind(py).call0()?.extract::<f64>()?;
                Some((now, start))
            }
        };
        Ok(ReadClock {
            start: epoch_seconds(Instant::now()),
            own,
            times: Mutex::new(Clocked {
                times: ReadTimes::new(0),
                pinned: None,
            }),
        })
    }

    /// A read arrived (now, or when `pin` said).
    fn arrive(&self, py: Python<'_>) -> PyResult<()> {
        let (mut clocked, at) = self.arrival(py)?;
        clocked.times.arrive(at);
        Ok(())
    }

    /// The fold on this clock may keep `room` more characters now (a driver starting on it).
    fn follow(&self, py: Python<'_>, room: i64) -> PyResult<()> {
        self.times(py)?.times.follow(room);
        Ok(())
    }

    /// The next read arrived at `at`, in the process's epoch seconds (a transport's own
    /// record of when a read came, handed over later in a batch).
    fn pin(&self, py: Python<'_>, at: f64) -> PyResult<()> {
        self.times(py)?.pinned = Some(at - self.start);
        Ok(())
    }

    /// The events of the read that arrived last were folded, and the fold may now keep
    /// `room` more characters (fewer than before: the read added to the answer).
    fn handled(&self, py: Python<'_>, room: i64) -> PyResult<()> {
        self.times(py)?.times.handled(true, room);
        Ok(())
    }

    /// `(first_byte, first_token, last_token, largest_gap, reads)`: seconds since the clock
    /// was made (`None`: not yet), and the number of reads.
    #[allow(clippy::type_complexity)] // the Python tuple
    fn times_so_far(
        &self,
        py: Python<'_>,
    ) -> PyResult<(Option<f64>, Option<f64>, Option<f64>, Option<f64>, u64)> {
        let t = self.times(py)?.times;
        Ok((
            t.first_byte,
            t.first_token,
            t.last_token,
            t.largest_gap,
            t.reads,
        ))
    }
}
