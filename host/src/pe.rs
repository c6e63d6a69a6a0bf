//! The progress engine (`doca_pe`): runs the completion callbacks of its contexts, and offers a
//! pollable handle to sleep on until there is work.

use crate::error::{Result, bail, doca};
use dpakit_sys as sys;
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::rc::Rc;
use std::time::{Duration, Instant};

struct PeInner {
    raw: *mut sys::doca_pe,
    handle: RawFd,
    /// A panic of a callback, carried out of the C call and resumed when progress returns.
    panic: Cell<Option<Box<dyn Any + Send>>>,
    /// `doca_pe_progress` calls of this PE on the stack: callbacks are running while non-zero.
    depth: Cell<u32>,
    /// Teardowns of contexts dropped inside a callback, finished when the outermost progress
    /// call returns (see [`Pe::defer_teardown`]).
    teardowns: RefCell<Vec<Box<dyn FnOnce()>>>,
    /// The notification handle in a tokio reactor, once an async wait registered it.
    #[cfg(feature = "tokio")]
    reactor: std::cell::OnceCell<tokio::io::unix::AsyncFd<ReactorHandle>>,
}

/// The notification handle as a tokio reactor holds it (the PE owns and closes it).
#[cfg(feature = "tokio")]
#[derive(Debug)]
pub(crate) struct ReactorHandle(pub(crate) RawFd);

#[cfg(feature = "tokio")]
impl AsRawFd for ReactorHandle {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

impl Drop for PeInner {
    #[doc(alias = "doca_pe_destroy")]
    fn drop(&mut self) {
        // Out of the reactor while the handle is still open: once closed, its number may name
        // another descriptor.
        #[cfg(feature = "tokio")]
        drop(self.reactor.take());
        // Contexts keep a clone of their PE, so none is connected any more.
        let _ = doca!(doca_pe_destroy(self.raw));
    }
}

/// `doca_pe`. Clones share it. Like DOCA's, a PE and its contexts belong to one thread.
#[derive(Clone)]
pub struct Pe {
    inner: Rc<PeInner>,
}

impl fmt::Debug for Pe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pe")
            .field("notification_handle", &self.inner.handle)
            .finish()
    }
}

impl Pe {
    /// `doca_pe_create`.
    #[doc(alias = "doca_pe_create")]
    pub fn new() -> Result<Self> {
        let mut raw = std::ptr::null_mut();
        doca!(doca_pe_create(&mut raw))?;
        let mut handle = -1;
        if let Err(e) = doca!(doca_pe_get_notification_handle(raw, &mut handle)) {
            let _ = doca!(doca_pe_destroy(raw));
            return Err(e);
        }
        Ok(Self {
            inner: Rc::new(PeInner {
                raw,
                handle,
                panic: Cell::new(None),
                depth: Cell::new(0),
                teardowns: RefCell::new(Vec::new()),
                #[cfg(feature = "tokio")]
                reactor: Default::default(),
            }),
        })
    }

    #[cfg(feature = "tokio")]
    pub(crate) fn reactor_cell(
        &self,
    ) -> &std::cell::OnceCell<tokio::io::unix::AsyncFd<ReactorHandle>> {
        &self.inner.reactor
    }

    pub(crate) fn raw(&self) -> *mut sys::doca_pe {
        self.inner.raw
    }

    /// The `struct doca_pe *`, for calls through `dpakit-sys`; valid while a clone lives.
    pub fn as_raw(&self) -> *mut sys::doca_pe {
        self.inner.raw
    }

    /// `doca_pe_progress`: runs the callbacks of what is ready; whether anything ran. A panic
    /// in a callback resumes here.
    #[doc(alias = "doca_pe_progress")]
    #[inline]
    pub fn progress(&self) -> bool {
        let inner = &*self.inner;
        inner.depth.set(inner.depth.get() + 1);
        // SAFETY: a live PE; callbacks run on this thread, inside this call.
        let ran = unsafe { sys::doca_pe_progress(inner.raw) } != 0;
        let depth = inner.depth.get() - 1;
        inner.depth.set(depth);
        if depth == 0 && !inner.teardowns.borrow().is_empty() {
            self.finish_teardowns();
        }
        if let Some(panic) = inner.panic.take() {
            resume_unwind(panic);
        }
        ran
    }

    /// Whether a callback of this PE is running (we are inside its [`progress`]): a context
    /// of it can then be stopped but not waited for, since that would progress the PE from
    /// its own callback.
    ///
    /// [`progress`]: Self::progress
    pub(crate) fn in_callback(&self) -> bool {
        self.inner.depth.get() > 0
    }

    /// `BAD_STATE` inside a callback of this PE: `what` would wait for progress of the PE whose
    /// callback is running, which cannot come until the callback returns.
    pub(crate) fn require_outside_callback(&self, what: &str) -> Result<()> {
        if self.in_callback() {
            bail!(
                BadState,
                "{what} waits for progress of the PE whose callback is running: return from the \
                 callback and call it from the program's own loop"
            );
        }
        Ok(())
    }

    /// Runs `teardown` (which progresses this PE) now, or — inside a callback of this PE — when
    /// the outermost [`progress`](Self::progress) call returns, after the callback and every
    /// frame that ran it have unwound.
    pub(crate) fn defer_teardown(&self, teardown: Box<dyn FnOnce()>) {
        if self.in_callback() {
            self.inner.teardowns.borrow_mut().push(teardown);
        } else {
            teardown();
        }
    }

    #[cold]
    fn finish_teardowns(&self) {
        // A teardown progresses the PE, whose callbacks may drop more contexts: until none
        // are left.
        loop {
            let batch = std::mem::take(&mut *self.inner.teardowns.borrow_mut());
            if batch.is_empty() {
                return;
            }
            let mut panicked = None;
            for teardown in batch {
                // Each one runs, whatever another did: a teardown left undone would leave a
                // context whose callbacks point at freed memory.
                if let Err(panic) = catch_unwind(AssertUnwindSafe(teardown)) {
                    panicked.get_or_insert(panic);
                }
            }
            if let Some(panic) = panicked {
                resume_unwind(panic);
            }
        }
    }

    /// Runs a callback body on behalf of C: a panic is kept and resumed by [`progress`] instead
    /// of unwinding into C.
    ///
    /// [`progress`]: Self::progress
    #[inline]
    pub(crate) fn catch(&self, body: impl FnOnce()) {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(body)) {
            self.inner.panic.set(Some(panic));
        }
    }

    /// `doca_pe_get_notification_handle`: a file descriptor that becomes readable after
    /// [`request_notification`](Self::request_notification) when work arrives.
    #[doc(alias = "doca_pe_get_notification_handle")]
    pub fn notification_handle(&self) -> RawFd {
        self.inner.handle
    }

    /// `doca_pe_request_notification`: arms the handle.
    #[doc(alias = "doca_pe_request_notification")]
    pub fn request_notification(&self) -> Result<()> {
        doca!(doca_pe_request_notification(self.inner.raw))
    }

    /// `doca_pe_clear_notification`: consumes a signal after waking.
    #[doc(alias = "doca_pe_clear_notification")]
    pub fn clear_notification(&self) -> Result<()> {
        doca!(doca_pe_clear_notification(
            self.inner.raw,
            self.inner.handle
        ))
    }

    /// Sleeps on the notification handle until work arrives or `timeout` passes; whether work
    /// woke it. `SHUTDOWN` if SIGINT or SIGTERM (Ctrl-C) arrives, once per signal (see
    /// [`interrupt`](crate::interrupt)).
    pub fn wait(&self, timeout: Duration) -> Result<bool> {
        self.request_notification()?;
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        let woken = crate::interrupt::poll_readable(self.inner.handle, ms, "Pe::wait");
        // Cleared whatever the poll found: the next wait arms afresh.
        self.clear_notification()?;
        woken
    }

    /// Progresses until `done()` holds: spins for a short while, then sleeps on the
    /// notification handle between bursts. `TIME_OUT` after `timeout`, naming on the soft device
    /// the kernels whose activation had run for a while meanwhile (what the wait may be for).
    /// `BAD_STATE` inside a callback of this PE, which cannot progress until the callback
    /// returns. `SHUTDOWN` on SIGINT or SIGTERM (Ctrl-C), once per signal.
    pub fn progress_until(&self, timeout: Duration, done: impl FnMut() -> bool) -> Result<()> {
        self.require_outside_callback("Pe::progress_until")?;
        if self.progress_within(timeout, done)? {
            Ok(())
        } else {
            Err(timed_out(timeout))
        }
    }

    /// [`progress_until`](Self::progress_until) for a caller to whom the timeout is an answer
    /// (a wait for an event that may not come): `false` after `timeout`, with no error built.
    /// The caller checks it is outside a callback of this PE.
    pub(crate) fn progress_within(
        &self,
        timeout: Duration,
        mut done: impl FnMut() -> bool,
    ) -> Result<bool> {
        const SPIN: Duration = Duration::from_micros(50);
        // Reading the clock costs about a progress pass; look at it every so often.
        const CLOCK_EVERY: u32 = 64;
        let deadline = Instant::now() + timeout;
        let mut idle_since = Instant::now();
        let mut passes = 0u32;
        loop {
            let progressed = self.progress();
            if done() {
                return Ok(true);
            }
            passes += 1;
            if progressed {
                passes = 0;
                idle_since = Instant::now();
            }
            if passes % CLOCK_EVERY != 0 {
                std::hint::spin_loop();
                continue;
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            if crate::interrupt::requested() && crate::interrupt::take_unreported() {
                return Err(crate::interrupt::shutdown_error("Pe::progress_until"));
            }
            // Idle for the spin time and for a few clock checks: a pass that makes system calls
            // (a Comch context polling its socket) takes microseconds, and a round trip needs
            // more than one check's worth of passes before sleeping pays.
            if now - idle_since > SPIN && passes >= 4 * CLOCK_EVERY {
                self.wait((deadline - now).min(Duration::from_millis(10)))?;
                idle_since = Instant::now();
            }
        }
    }
}

/// The notification handle ([`Pe::notification_handle`]), for `poll`, `epoll` or an async
/// runtime's reactor: readable once work arrives after [`Pe::request_notification`].
impl AsFd for Pe {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the handle belongs to the PE, which closes it only when destroyed, after the
        // last clone (and so the last borrow of `self`) is gone.
        unsafe { BorrowedFd::borrow_raw(self.inner.handle) }
    }
}

impl AsRawFd for Pe {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.handle
    }
}

/// `progress_until`'s TIME_OUT, naming the kernels that were in one activation meanwhile: what
/// the program is likely waiting for.
#[cold]
fn timed_out(timeout: Duration) -> crate::Error {
    // Activations last microseconds: one running a tenth of a second is worth naming.
    let long = crate::soft::long_activations(Duration::from_millis(100));
    let meanwhile = if long.is_empty() {
        String::new()
    } else {
        format!("; meanwhile {}", long.join("; "))
    };
    crate::Error::new(
        dpakit_abi::ErrorCode::TimeOut,
        format!("Pe::progress_until: condition not met within {timeout:?} of progress{meanwhile}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpakit_abi::ErrorCode;

    #[test]
    fn an_interrupted_wait_is_no_error() {
        extern "C" fn nothing(_: libc::c_int) {}
        // SAFETY: installs a handler that does nothing, without SA_RESTART, so poll sees EINTR.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = nothing as extern "C" fn(libc::c_int) as usize;
            libc::sigaction(libc::SIGUSR2, &sa, std::ptr::null_mut());
        }
        // SAFETY: the calling thread's own id.
        let me = unsafe { libc::pthread_self() } as usize;
        let signaller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            // SAFETY: the test thread is alive: it waits for this thread below.
            unsafe { libc::pthread_kill(me as libc::pthread_t, libc::SIGUSR2) };
        });
        let pe = Pe::new().unwrap();
        let started = Instant::now();
        assert!(!pe.wait(Duration::from_secs(10)).unwrap());
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the signal ended the wait"
        );
        signaller.join().unwrap();
    }

    #[test]
    fn progress_until_times_out_with_time_out() {
        let pe = Pe::new().unwrap();
        let e = pe
            .progress_until(Duration::from_millis(5), || false)
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::TimeOut);
    }

    #[test]
    fn progress_until_returns_once_the_condition_holds() {
        let pe = Pe::new().unwrap();
        let mut polls = 0;
        pe.progress_until(Duration::from_secs(5), || {
            polls += 1;
            polls == 3
        })
        .unwrap();
        assert_eq!(polls, 3);
    }
}
