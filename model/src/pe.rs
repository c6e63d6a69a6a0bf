//! The progress engine (`doca_pe`): runs the completion callbacks of the contexts connected to
//! it, and offers a pollable notification handle so a thread can sleep until there is work.
//!
//! A PE and the CPU contexts connected to it belong to one thread, as in DOCA (the PE is not
//! thread safe), so they are `!Send`. Work produced by other threads (the DPA) reaches them
//! through lock-free rings; the producer wakes a sleeping PE through its [`PeWaker`] only when
//! the PE asked for a notification, so a busy-polling PE costs the producer no system call.

use crate::error::{Result, bail};
use crate::wake::Arm;
use dpakit_wire::Poller;
use std::cell::RefCell;
use std::fmt;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::time::Duration;

/// A context the PE drives.
pub(crate) trait PeClient {
    /// Runs pending completions and callbacks; returns how many it ran.
    fn progress(&self) -> usize;
    /// Whether `progress` would find something to do right now.
    fn has_pending(&self) -> bool;
}

/// The wake-up side of a PE's notification handle, shared with whoever produces work for it.
#[derive(Debug)]
pub struct PeWaker {
    fd: OwnedFd,
    armed: Arm,
}

impl PeWaker {
    fn new() -> Result<Self> {
        Ok(Self {
            fd: dpakit_wire::eventfd()?,
            armed: Arm::new(false),
        })
    }

    /// Signals the handle if the PE asked for a notification. Call after publishing the work.
    #[inline]
    pub fn wake(&self) {
        light_barrier();
        self.wake_after_barrier();
    }

    /// [`wake`](Self::wake) for a caller that has just run [`light_barrier`] itself (one barrier
    /// before checking several wakers).
    #[inline]
    pub(crate) fn wake_after_barrier(&self) {
        if self.armed.take_after_barrier() {
            self.signal();
        }
    }

    fn signal(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to an eventfd we own. A full counter (EAGAIN)
        // already means "signalled", so the result can be ignored.
        unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    fn clear(&self) {
        let mut value: u64 = 0;
        // SAFETY: reads 8 bytes into a live u64; EAGAIN (nothing pending) is fine.
        unsafe { libc::read(self.fd.as_raw_fd(), (&mut value as *mut u64).cast(), 8) };
    }
}

/// The publishing side's half of the wake-up handshake (see [`crate::wake`]), between
/// publishing work and checking whether the PE asked to be notified.
pub(crate) use crate::wake::light_barrier;

struct PeInner {
    clients: RefCell<Vec<Weak<dyn PeClient>>>,
    waker: Arc<PeWaker>,
    /// The notification handle: the waker's eventfd and the sockets of Comch contexts, so one
    /// readable descriptor says "progress me" whatever the work is. Made by the first call that
    /// needs it: a PE only ever progressed by hand needs no epoll set.
    poller: std::cell::OnceCell<Poller>,
}

/// `doca_pe`.
#[derive(Clone)]
pub struct Pe {
    inner: Rc<PeInner>,
}

impl fmt::Debug for Pe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pe")
            .field("contexts", &self.inner.clients.borrow().len())
            .finish()
    }
}

impl Pe {
    /// `doca_pe_create`.
    pub fn new() -> Result<Self> {
        let waker = Arc::new(PeWaker::new()?);
        Ok(Self {
            inner: Rc::new(PeInner {
                clients: RefCell::new(Vec::new()),
                waker,
                poller: std::cell::OnceCell::new(),
            }),
        })
    }

    /// The notification handle's epoll set, made with the waker's eventfd in it on first use.
    fn poller(&self) -> Result<&Poller> {
        if let Some(poller) = self.inner.poller.get() {
            return Ok(poller);
        }
        let poller = Poller::new()?;
        poller.add(self.inner.waker.fd.as_raw_fd(), 0)?;
        Ok(self.inner.poller.get_or_init(|| poller))
    }

    /// Makes the notification handle readable whenever `fd` is (a context's socket or epoll
    /// set).
    pub fn watch_fd(&self, fd: RawFd) -> Result<()> {
        self.poller()?.add(fd, fd as u64)
    }

    /// Undoes [`watch_fd`](Self::watch_fd).
    pub fn unwatch_fd(&self, fd: RawFd) {
        if let Some(poller) = self.inner.poller.get() {
            poller.remove(fd);
        }
    }

    /// Signals the notification handle now if it is armed: for work the PE's clients do not
    /// report as pending (`PeClient::has_pending`).
    pub fn signal_if_armed(&self) {
        if self.inner.waker.armed.take() {
            self.inner.waker.signal();
        }
    }

    /// `doca_pe_connect_ctx`: the PE will progress `client`.
    pub(crate) fn connect(&self, client: Weak<dyn PeClient>) {
        let mut clients = self.inner.clients.borrow_mut();
        clients.retain(|c| c.strong_count() > 0);
        clients.push(client);
    }

    /// The waker producers of this PE's work signal.
    pub(crate) fn waker(&self) -> Arc<PeWaker> {
        self.inner.waker.clone()
    }

    /// `doca_pe_progress`: runs what is ready on every connected context; returns how many
    /// completions and events it delivered.
    pub fn progress(&self) -> usize {
        let mut done = 0;
        // Index loop: a callback may connect a new context.
        let mut i = 0;
        loop {
            let client = match self.inner.clients.borrow().get(i) {
                Some(c) => c.upgrade(),
                None => break,
            };
            if let Some(client) = client {
                done += client.progress();
            }
            i += 1;
        }
        done
    }

    /// `doca_pe_get_notification_handle`: a file descriptor that becomes readable after
    /// [`request_notification`](Self::request_notification) when work arrives. Use it with
    /// poll/epoll.
    pub fn notification_handle(&self) -> Result<RawFd> {
        Ok(self.poller()?.fd())
    }

    /// `doca_pe_request_notification`: arms the handle. If work is already pending the handle is
    /// signalled at once, so no wake-up is lost between the last progress and sleeping.
    pub fn request_notification(&self) {
        let waker = &self.inner.waker;
        if waker
            .armed
            .request(crate::wake::heavy_barrier, || self.has_pending())
        {
            waker.signal();
        }
    }

    /// `doca_pe_clear_notification`: consumes a signal after waking.
    pub fn clear_notification(&self) {
        self.inner.waker.armed.disarm();
        self.inner.waker.clear();
    }

    fn has_pending(&self) -> bool {
        self.inner
            .clients
            .borrow()
            .iter()
            .filter_map(Weak::upgrade)
            .any(|c| c.has_pending())
    }

    /// Sleeps on the notification handle until work arrives or `timeout` passes. Returns whether
    /// it was woken by work.
    pub fn wait(&self, timeout: Duration) -> Result<bool> {
        let fd = self.notification_handle()?;
        self.request_notification();
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd for the duration of the call.
        let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
        self.clear_notification();
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                return Ok(false);
            }
            bail!(
                OperatingSystem,
                "poll on the PE notification handle failed: {e}"
            );
        }
        Ok(rc > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    struct Counter {
        pending: Cell<usize>,
    }
    impl PeClient for Counter {
        fn progress(&self) -> usize {
            self.pending.replace(0)
        }
        fn has_pending(&self) -> bool {
            self.pending.get() > 0
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a level-triggered epoll set: miri runs only edge-triggered ones"
    )]
    fn progress_runs_connected_contexts() {
        let pe = Pe::new().unwrap();
        let c: Rc<Counter> = Rc::new(Counter {
            pending: Cell::new(3),
        });
        let weak: Weak<dyn PeClient> = Rc::downgrade(&c) as Weak<dyn PeClient>;
        pe.connect(weak);
        assert_eq!(pe.progress(), 3);
        assert_eq!(pe.progress(), 0);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "poll(2) on the notification handle: miri does not run it"
    )]
    fn notification_is_not_lost_when_work_is_already_pending() {
        let pe = Pe::new().unwrap();
        let c: Rc<Counter> = Rc::new(Counter {
            pending: Cell::new(1),
        });
        pe.connect(Rc::downgrade(&c) as Weak<dyn PeClient>);
        assert!(
            pe.wait(Duration::from_secs(5)).unwrap(),
            "pending work must signal at once"
        );
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "poll(2) on the notification handle: miri does not run it"
    )]
    fn a_waker_on_another_thread_wakes_the_pe() {
        let pe = Pe::new().unwrap();
        let waker = pe.waker();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            waker.wake();
        });
        // Armed by wait(); the other thread's wake signals the handle.
        assert!(pe.wait(Duration::from_secs(5)).unwrap());
        t.join().unwrap();
        assert!(
            !pe.wait(Duration::from_millis(1)).unwrap(),
            "a signal is consumed once"
        );
    }
}
