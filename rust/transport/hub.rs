//! Wake-ups for an event loop: the streams an event loop reads register with its hub; when one
//! has something new, the hub writes one byte to a socket the loop waits on (the loop's own
//! readiness machinery, whatever the loop: asyncio, uvloop, trio), and the loop then drains
//! every stream ready at that moment. One byte, whatever the number of streams or reads, until
//! the loop drains: never a wake-up per TCP read.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

#[cfg(unix)]
type Socket = std::os::unix::net::UnixStream;
#[cfg(windows)]
type Socket = std::net::TcpStream;

pub struct Hub {
    /// The ids of the streams with something new since the last drain.
    ready: Mutex<Vec<u64>>,
    /// A byte was written and the loop has not drained since: no other byte is needed.
    armed: AtomicBool,
    /// The write end of the loop's socket pair: a duplicate of its own, so it stays open as
    /// long as a stream may write to it, whenever the loop closes its end.
    socket: Socket,
    closed: AtomicBool,
}

impl Hub {
    /// `socket`: the write end of a socket pair, made non-blocking here.
    pub fn new(socket: Socket) -> std::io::Result<Self> {
        socket.set_nonblocking(true)?;
        Ok(Self {
            ready: Mutex::new(Vec::new()),
            armed: AtomicBool::new(false),
            socket,
            closed: AtomicBool::new(false),
        })
    }

    /// Stream `id` has something new (bytes, its head, its end).
    pub fn notify(&self, id: u64) {
        self.ready
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(id);
        if !self.armed.swap(true, Ordering::AcqRel) && !self.closed.load(Ordering::Acquire) {
            // A full socket buffer (WouldBlock) means bytes are waiting to be read already:
            // the loop wakes anyway. Any other error means the loop is gone: nobody to wake.
            let _ = (&self.socket).write(b"\0");
        }
    }

    /// The streams that had something new since the last drain (each once). Disarms first, so
    /// a notification racing with the drain writes a byte of its own: none is lost.
    pub fn drain(&self) -> Vec<u64> {
        self.armed.store(false, Ordering::Release);
        let mut ids =
            std::mem::take(&mut *self.ready.lock().unwrap_or_else(PoisonError::into_inner));
        if ids.len() > 1 {
            ids.sort_unstable();
            ids.dedup();
        }
        ids
    }

    /// No byte is written from now on (the loop is gone).
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }
}
