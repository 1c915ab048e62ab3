//! The one tokio runtime of the process, started on first use.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::runtime::{Builder, Runtime};

/// The runtime and the process that started it.
static RUNTIME: Mutex<Option<(u32, Arc<Runtime>)>> = Mutex::new(None);

/// The process's runtime, started lazily: one scheduler on one thread of its own, which runs
/// every task spawned on it.
///
/// One thread, not a work-stealing pool: the I/O of thousands of streams needs little CPU (a
/// few µs per read), and the pool's queues and wake-ups cost about 0.8 µs per event more on
/// `benches/transport.py cpu sf.Client URL 500 100 0.05` (9.7 against 8.9 µs, two cores).
///
/// After `fork()` the child has the parent's memory but none of its threads: the runtime's
/// thread is gone, so a task spawned on it would never run. The child (told by its process
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
    let runtime = Arc::new(Builder::new_current_thread().enable_all().build()?);
    let driver = Arc::clone(&runtime);
    std::thread::Builder::new()
        .name("streamfold-io".into())
        .spawn(move || driver.block_on(std::future::pending::<()>()))?;
    if let Some(parent) = slot.replace((pid, Arc::clone(&runtime))) {
        std::mem::forget(parent);
    }
    Ok(runtime)
}
