//! The one tokio runtime of the process, started on first use.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::runtime::{Builder, Runtime};

/// The runtime and the process that started it.
static RUNTIME: Mutex<Option<(u32, Arc<Runtime>)>> = Mutex::new(None);

/// The process's runtime, started lazily.
///
/// On a machine of two cores or fewer, one current-thread scheduler on a thread of its own:
/// the I/O of thousands of streams needs little CPU (a few µs per read), and a work-stealing
/// pool of one worker costs about 0.8 µs per event more in its queues and wake-ups
/// (`benches/transport.py cpu sf.Client URL 500 100 0.05`: 9.7 against 8.9 µs). With more
/// cores, a pool of two workers: at about 6 µs of that thread's time per event, kernel
/// included, one thread would cap a process near 160,000 events a second, below what its
/// event loop can fold.
///
/// After `fork()` the child has the parent's memory but none of its threads: the runtime's
/// threads are gone, so a task spawned on it would never run. The child (told by its process
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
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let runtime = if cores <= 2 {
        let runtime = Arc::new(Builder::new_current_thread().enable_all().build()?);
        let driver = Arc::clone(&runtime);
        // The scheduler runs its tasks only while a thread blocks on it: this one, for good.
        std::thread::Builder::new()
            .name("streamfold-io".into())
            .spawn(move || driver.block_on(std::future::pending::<()>()))?;
        runtime
    } else {
        Arc::new(
            Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("streamfold-io")
                .enable_all()
                .build()?,
        )
    };
    if let Some(parent) = slot.replace((pid, Arc::clone(&runtime))) {
        std::mem::forget(parent);
    }
    Ok(runtime)
}
