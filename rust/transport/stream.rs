//! One streamed response: a tokio task reads it into a buffer that the reader (a thread
//! blocked in `wait`, or an event loop woken through a [`Hub`]) takes whole, however many TCP
//! reads filled it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::error::{Error, Kind};
use super::hub::Hub;

/// Past this many bytes taken by nobody, the task stops reading until the reader takes them:
/// a reader slower than the server holds the rest in the kernel's buffers and TCP's window,
/// not in memory without bound.
const HIGH_WATER: usize = 256 * 1024;

/// A reader that wants the body only whole (a fold: nothing of it is seen before the final
/// message) is woken when this much is waiting, or at the end: a few wake-ups for a whole
/// stream instead of one per read. Below `HIGH_WATER`, so the task never waits for a reader
/// that is not woken.
pub const LAZY_BATCH: usize = 64 * 1024;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The response's status line and headers.
#[derive(Debug)]
pub struct Head {
    pub status: u16,
    pub reason: String,
    pub version: &'static str,
    /// Names lower-cased (as HTTP/2 sends them), values as sent.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The URL that answered (after redirects, when they are followed).
    pub url: String,
}

/// What a read gives.
#[derive(Debug)]
pub enum Read {
    /// Every byte that arrived since the last read.
    Data(Vec<u8>),
    /// The body ended.
    End,
    /// The connection failed (the bytes before the failure were given first).
    Failed(Error),
    /// Nothing yet (only from `try_read`, or `wait` timing out).
    Pending,
}

/// The head, from the task until the reader takes it.
#[derive(Default)]
enum HeadSlot {
    #[default]
    Awaited,
    Came(Head),
    Failed(Error),
    /// Handed over: the reader keeps it, the stream holds nothing of it.
    Taken,
}

#[derive(Default)]
struct State {
    head: HeadSlot,
    buf: Vec<u8>,
    end: Option<Result<(), Error>>,
    closed: bool,
    /// Wake the reader only once this many bytes wait (0: as soon as any does).
    batch: usize,
    /// Batched, where each read of the connection ended in `buf` and when it came: a reader
    /// that takes many reads at once can still tell when each arrived (`Message.timing`).
    marks: Vec<(usize, Instant)>,
    /// Threads blocked in `wait` or `wait_head`: the condition variable is signalled only
    /// when there is one (a reader in an event loop never blocks; each signal is a system
    /// call).
    waiting: u32,
}

pub struct Stream {
    pub id: u64,
    state: Mutex<State>,
    changed: Condvar,
    /// Wakes the task held at `HIGH_WATER` once the reader took the buffer.
    space: Notify,
    hub: Option<Arc<Hub>>,
    task: Mutex<Option<AbortHandle>>,
}

impl Stream {
    pub fn new(hub: Option<Arc<Hub>>) -> Arc<Self> {
        Arc::new(Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            space: Notify::new(),
            hub,
            task: Mutex::new(None),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wake the reader: the thread blocked on the stream when there is one (`waiting`, read
    /// under the lock), the event loop through its hub.
    fn wake(&self, waiting: bool) {
        if waiting {
            self.changed.notify_all();
        }
        if let Some(hub) = &self.hub {
            hub.notify(self.id);
        }
    }

    pub(super) fn set_task(&self, handle: AbortHandle) {
        let closed = self.lock().closed;
        if closed {
            handle.abort();
        } else {
            *self.task.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle);
        }
    }

    // -- the task's side --

    pub(super) fn put_head(&self, head: Result<Head, Error>) {
        let waiting = {
            let mut state = self.lock();
            if state.closed {
                return;
            }
            state.head = match head {
                Ok(head) => HeadSlot::Came(head),
                Err(err) => {
                    state.end = Some(Err(err.clone()));
                    HeadSlot::Failed(err)
                }
            };
            state.waiting > 0
        };
        self.wake(waiting);
    }

    /// Append `bytes`; returns whether the reader is still there.
    pub(super) async fn put(&self, bytes: &[u8]) -> bool {
        loop {
            let wait = {
                let mut state = self.lock();
                if state.closed {
                    return false;
                }
                if state.buf.len() < HIGH_WATER {
                    let before = state.buf.len();
                    state.buf.extend_from_slice(bytes);
                    if state.batch > 0 {
                        let end = state.buf.len();
                        state.marks.push((end, Instant::now()));
                    }
                    // A reader woken already will take these bytes too: one wake-up for as
                    // many reads as arrive before it runs (or, batched, before the batch is
                    // full).
                    let wake = if state.batch == 0 {
                        before == 0
                    } else {
                        before < state.batch && state.buf.len() >= state.batch
                    };
                    let waiting = state.waiting > 0;
                    drop(state);
                    if wake {
                        self.wake(waiting);
                    }
                    return true;
                }
                self.space.notified()
            };
            wait.await;
        }
    }

    pub(super) fn put_end(&self, end: Result<(), Error>) {
        let waiting = {
            let mut state = self.lock();
            if state.closed || state.end.is_some() {
                return;
            }
            state.end = Some(end);
            state.waiting > 0
        };
        self.wake(waiting);
    }

    // -- the reader's side --

    /// The head, handed over once: the stream keeps nothing of it (`None`: not come yet).
    fn take_head(state: &mut State) -> Option<Result<Head, Error>> {
        if state.closed {
            return Some(Err(Error::new(Kind::Closed, "the response was closed")));
        }
        match std::mem::replace(&mut state.head, HeadSlot::Taken) {
            HeadSlot::Came(head) => Some(Ok(head)),
            HeadSlot::Awaited => {
                state.head = HeadSlot::Awaited;
                None
            }
            HeadSlot::Failed(err) => {
                state.head = HeadSlot::Failed(err.clone());
                Some(Err(err))
            }
            HeadSlot::Taken => Some(Err(Error::new(
                Kind::Closed,
                "the response's head was taken already",
            ))),
        }
    }

    /// The head once it came, handed over (`None`: not yet); a second call is refused.
    pub fn try_head(&self) -> Option<Result<Head, Error>> {
        Self::take_head(&mut self.lock())
    }

    /// Wait up to `timeout` for the head, and hand it over as `try_head`.
    pub fn wait_head(&self, timeout: Duration) -> Option<Result<Head, Error>> {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        loop {
            if let Some(head) = Self::take_head(&mut state) {
                return Some(head);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            state.waiting += 1;
            state = self
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            state.waiting -= 1;
        }
    }

    fn take(&self, state: &mut State) -> Read {
        if state.closed {
            return Read::Failed(Error::new(Kind::Closed, "the response was closed"));
        }
        if !state.buf.is_empty() {
            let full = state.buf.len() >= HIGH_WATER;
            let data = std::mem::take(&mut state.buf);
            state.marks.clear();
            if full {
                self.space.notify_one();
            }
            return Read::Data(data);
        }
        match &state.end {
            Some(Ok(())) => Read::End,
            Some(Err(err)) => Read::Failed(err.clone()),
            None => Read::Pending,
        }
    }

    /// Wake the reader only once `batch` bytes wait, or at the end (0: at every first byte).
    /// Capped below the high-water mark.
    pub fn set_batch(&self, batch: usize) {
        let batch = batch.min(LAZY_BATCH);
        let wake = {
            let mut state = self.lock();
            state.batch = batch;
            if batch > 0 && !state.buf.is_empty() && state.marks.is_empty() {
                // What came before: it arrived by now.
                let end = state.buf.len();
                state.marks.push((end, Instant::now()));
            }
            // Lowered to bytes already waiting: their wake-up is now due.
            (!state.buf.is_empty() && state.buf.len() >= batch).then_some(state.waiting > 0)
        };
        if let Some(waiting) = wake {
            self.wake(waiting);
        }
    }

    /// Everything that arrived since the last read, or the end, without waiting.
    pub fn try_read(&self) -> Read {
        let mut state = self.lock();
        self.take(&mut state)
    }

    /// `try_read`, with where each read of the connection ended in the data and when it
    /// came (batched; empty otherwise).
    pub fn try_read_marked(&self) -> (Read, Vec<(usize, Instant)>) {
        let mut state = self.lock();
        let marks = std::mem::take(&mut state.marks);
        (self.take(&mut state), marks)
    }

    /// Wait up to `timeout` for something to read (`Pending` when the time is up).
    pub fn wait(&self, timeout: Duration) -> Read {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        loop {
            let read = self.take(&mut state);
            if !matches!(read, Read::Pending) {
                return read;
            }
            let now = Instant::now();
            if now >= deadline {
                return Read::Pending;
            }
            state.waiting += 1;
            state = self
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            state.waiting -= 1;
        }
    }

    /// Whether the whole body has arrived (some of it may still wait to be read).
    pub fn complete(&self) -> bool {
        matches!(self.lock().end, Some(Ok(())))
    }

    /// Close at once: the task is aborted, which drops the connection (an HTTP/1.1 connection
    /// is closed, an HTTP/2 stream reset), so the server sees the client leave. A reader
    /// blocked in another thread wakes with `Closed`.
    pub fn close(&self) {
        let waiting = {
            let mut state = self.lock();
            if state.closed {
                return;
            }
            state.closed = true;
            state.buf = Vec::new();
            state.waiting > 0
        };
        if let Some(task) = self
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
        self.space.notify_one();
        // A task awaiting this stream in an event loop wakes too, and reads `Closed`.
        self.wake(waiting);
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if let Some(task) = self
            .task
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
    }
}
