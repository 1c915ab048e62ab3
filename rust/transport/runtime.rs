//! The one tokio runtime of the process, started on first use.

use std::cell::Cell;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};

/// The runtime and the process that started it.
static RUNTIME: Mutex<Option<(u32, Arc<Runtime>)>> = Mutex::new(None);

/// How many worker threads: the I/O of thousands of streams needs little CPU, and every thread
/// more is one more to wake; two at most, one on a machine of two cores or fewer.
fn worker_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if cores <= 2 {
        1
    } else {
        2
    }
}

/// The process's runtime, started lazily.
///
/// After `fork()` the child has the parent's memory but none of its threads: the runtime's
/// workers are gone, so a task spawned on it would never run. The child (told by its process
/// id) starts a runtime of its own; the parent's is leaked there, not dropped, since dropping
/// it would wait for threads that do not exist. Connections pooled before the fork belong to
/// the parent's runtime: each client rebuilds its pool too (see `Client::http`).
pub fn runtime() -> std::io::Result<Arc<Runtime>> {
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((owner, runtime)) = slot.as_ref() {
        if *owner == pid {
            return Ok(Arc::clone(runtime));
        }
    }
    let runtime = Arc::new(
        Builder::new_multi_thread()
            .worker_threads(worker_threads())
            .thread_name("streamfold-io")
            .on_thread_park(coalesce)
            .enable_all()
            .build()?,
    );
    if let Some(parent) = slot.replace((pid, Arc::clone(&runtime))) {
        std::mem::forget(parent);
    }
    Ok(runtime)
}

/// How long a worker that has just handed on body bytes waits before it sleeps in the kernel's
/// poll: what arrives meanwhile is taken in one wake-up, each connection's in one read, rather
/// than a wake-up (a context switch each way) and a read every few events. At 1,000 streams of
/// one event per write this is a fifth of the context switches and a sixth of the `recv` calls,
/// the I/O thread's CPU per event down by about two fifths (`benches/transport.py cpu`). An
/// event that arrives in the window waits at most this much more: a fraction of the event
/// loop's own latency at that load (`benches/transport.py latency`).
const COALESCE: Duration = Duration::from_micros(200);

thread_local! {
    /// Body chunks this worker has handed on since it last slept.
    static READS: Cell<u32> = const { Cell::new(0) };
}

/// A body chunk was handed on (called by the task that read it, on its worker).
pub fn note_read() {
    READS.with(|reads| reads.set(reads.get().saturating_add(1)));
}

/// Tokio calls this before a worker sleeps: when it woke for body bytes, it waits `COALESCE`
/// first. A worker woken for anything else (a timer, a request started) sleeps at once, so an
/// idle process pays nothing. Work given from another thread meanwhile is not stranded: tokio
/// counts the worker as still searching until after this returns, leaves that work to it, and
/// the last worker to stop searching looks at the queues once more before it sleeps
/// (`tests/test_transport.py`, `..._is_not_stranded`).
fn coalesce() {
    if READS.with(|reads| reads.replace(0)) > 0 {
        std::thread::sleep(COALESCE);
    }
}
