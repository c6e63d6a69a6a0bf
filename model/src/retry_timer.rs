//! A periodic timer in a progress engine's notification handle, for work that waits on a
//! condition no descriptor signals (a peer posting a receive, a sync event reaching a value, a
//! server appearing): while it waits, the PE's handle becomes readable every period, so a
//! program sleeping on it comes back to try again instead of sleeping forever, and one that
//! does not wait never pays for it.

use crate::error::{Result, bail};
use std::cell::RefCell;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// A timer that runs while something waits.
#[derive(Debug)]
pub struct RetryTimer {
    period: Duration,
    fd: RefCell<Option<OwnedFd>>,
}

impl RetryTimer {
    /// A timer that, once on, ticks every `period`.
    pub fn new(period: Duration) -> Self {
        Self {
            period,
            fd: RefCell::new(None),
        }
    }

    /// Whether it runs.
    pub fn is_on(&self) -> bool {
        self.fd.borrow().is_some()
    }

    /// Turns the timer on: made and handed to `watch` the first time, its ticks so far
    /// consumed after that. A timer that cannot be made or watched stays off (the error
    /// says why): the waiting work is then found at the next progress only.
    pub fn on(&self, watch: impl FnOnce(RawFd) -> Result<()>) -> Result<()> {
        let mut fd = self.fd.borrow_mut();
        match fd.as_ref() {
            Some(t) => drain(t.as_raw_fd()),
            None => {
                let t = periodic(self.period)?;
                watch(t.as_raw_fd())?;
                *fd = Some(t);
            }
        }
        Ok(())
    }

    /// Turns the timer off: handed to `unwatch` and closed.
    pub fn off(&self, unwatch: impl FnOnce(RawFd)) {
        if let Some(t) = self.fd.borrow_mut().take() {
            unwatch(t.as_raw_fd());
        }
    }

    /// Consumes the ticks so far, if it runs (the handle stays readable until they are read).
    pub fn drain(&self) {
        if let Some(t) = self.fd.borrow().as_ref() {
            drain(t.as_raw_fd());
        }
    }
}

/// A non-blocking timerfd that ticks every `period`.
fn periodic(period: Duration) -> Result<OwnedFd> {
    // SAFETY: no pointers; the result is checked.
    let fd = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
        )
    };
    if fd < 0 {
        bail!(
            OperatingSystem,
            "timerfd_create: {}",
            std::io::Error::last_os_error()
        );
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let every = libc::timespec {
        tv_sec: period.as_secs() as libc::time_t,
        tv_nsec: period.subsec_nanos() as libc::c_long,
    };
    let spec = libc::itimerspec {
        it_interval: every,
        it_value: every,
    };
    // SAFETY: a valid timerfd and a live itimerspec; no old value is asked for.
    let rc = unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
    if rc != 0 {
        bail!(
            OperatingSystem,
            "timerfd_settime: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(fd)
}

/// Consumes the ticks so far (the handle stays readable until they are read).
fn drain(fd: RawFd) {
    let mut ticks = 0u64;
    // SAFETY: reads 8 bytes into a live u64; EAGAIN means no tick.
    unsafe { libc::read(fd, (&mut ticks as *mut u64).cast(), 8) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    #[cfg_attr(miri, ignore = "timerfd: miri does not run it")]
    fn on_watches_once_and_off_unwatches() {
        let timer = RetryTimer::new(Duration::from_millis(1));
        let watched = Cell::new(0);
        let unwatched = Cell::new(0);
        let watch = |_| {
            watched.set(watched.get() + 1);
            Ok(())
        };
        timer.on(watch).unwrap();
        timer.on(watch).unwrap();
        assert!(timer.is_on());
        assert_eq!(watched.get(), 1, "made and watched once");
        timer.off(|_| unwatched.set(unwatched.get() + 1));
        timer.off(|_| unwatched.set(unwatched.get() + 1));
        assert!(!timer.is_on());
        assert_eq!(unwatched.get(), 1, "unwatched once");
    }

    #[test]
    #[cfg_attr(miri, ignore = "timerfd: miri does not run it")]
    fn a_refused_watch_leaves_it_off() {
        let timer = RetryTimer::new(Duration::from_millis(1));
        let e = timer
            .on(|_| crate::error::bail!(NoMemory, "full"))
            .unwrap_err();
        assert_eq!(e.code(), crate::error::ErrorCode::NoMemory);
        assert!(!timer.is_on());
    }

    #[test]
    #[cfg_attr(miri, ignore = "timerfd: miri does not run it")]
    fn a_running_timer_makes_its_descriptor_readable() {
        let timer = RetryTimer::new(Duration::from_millis(1));
        let fd = Cell::new(-1);
        timer
            .on(|f| {
                fd.set(f);
                Ok(())
            })
            .unwrap();
        let mut pfd = libc::pollfd {
            fd: fd.get(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let ready = unsafe { libc::poll(&mut pfd, 1, 5_000) };
        assert_eq!(ready, 1, "a tick within 5 s");
        timer.drain();
        timer.off(|_| {});
    }
}
