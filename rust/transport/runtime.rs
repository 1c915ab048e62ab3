//! The one tokio runtime of the process, started on first use.

use std::sync::{Arc, Mutex, PoisonError};

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
            .enable_all()
            .build()?,
    );
    if let Some(parent) = slot.replace((pid, Arc::clone(&runtime))) {
        std::mem::forget(parent);
    }
    Ok(runtime)
}
