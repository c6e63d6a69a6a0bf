//! Ctrl-C (SIGINT) and SIGTERM for the kit's waits, so a program needs no signal handler of its
//! own: the first wait of any [`Pe`](crate::pe::Pe) installs the kit's handler (for a signal
//! whose disposition is still the default: a program's own handler is left alone), and from then on
//! a signal ends the wait that is sleeping (or the next one) with `SHUTDOWN`, once. The program
//! then stops its contexts as usual, and those waits run normally. A second signal before the
//! program exits ends it as the default action would (so a program stuck outside the kit's waits
//! can still be stopped).
//!
//! The handler writes one byte to a pipe the waits poll beside the PE's notification handle,
//! which is what makes a sleeping wait return at once; [`requested`] says whether a signal came.

// A signal handler may only touch lock-free atomics: bare statics, outside any facade.
#![allow(clippy::disallowed_types)]

use std::os::fd::RawFd;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// A signal arrived (stays set).
static REQUESTED: AtomicBool = AtomicBool::new(false);
/// A signal arrived that no wait has reported yet.
static UNREPORTED: AtomicBool = AtomicBool::new(false);
static PIPE_READ: AtomicI32 = AtomicI32::new(-1);
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(signal: libc::c_int) {
    if REQUESTED.swap(true, Ordering::SeqCst) {
        // The second one: the default action, as if the kit had never caught it.
        // SAFETY: signal and raise are async-signal-safe.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
        return;
    }
    UNREPORTED.store(true, Ordering::SeqCst);
    let fd = PIPE_WRITE.load(Ordering::SeqCst);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: write is async-signal-safe; one byte from a live local. A full pipe (it never
        // is: one byte is ever written) would only mean it is readable already.
        unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
    }
}

/// Installs the kit's SIGINT and SIGTERM handler, once per process. Waits call it; a program may
/// call it early to catch a signal that comes before its first wait.
pub fn catch() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let mut fds = [-1; 2];
        // SAFETY: a two-element array for pipe2 to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } == 0 {
            PIPE_READ.store(fds[0], Ordering::SeqCst);
            PIPE_WRITE.store(fds[1], Ordering::SeqCst);
        }
        for signal in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: a zeroed sigaction for sigaction to fill, then one with our handler; no
            // SA_RESTART, so a blocking call returns EINTR as well. The handler touches only
            // atomics and async-signal-safe calls.
            unsafe {
                let mut current: libc::sigaction = std::mem::zeroed();
                libc::sigaction(signal, std::ptr::null(), &mut current);
                // A program with a disposition of its own (a handler, or ignoring the signal)
                // keeps it: the kit only takes the default action's place.
                if current.sa_sigaction != libc::SIG_DFL {
                    continue;
                }
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
    });
}

/// Whether SIGINT or SIGTERM arrived since the kit's handler was installed.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// The descriptor that becomes readable when a signal arrives (-1 before [`catch`]).
pub(crate) fn fd() -> RawFd {
    PIPE_READ.load(Ordering::SeqCst)
}

/// After the descriptor polled readable: empties the pipe, and takes the signal no wait has
/// reported yet (true once per signal).
pub(crate) fn take_unreported() -> bool {
    let fd = fd();
    let mut bytes = [0u8; 16];
    // SAFETY: a non-blocking read into a live local buffer; it stops at EAGAIN.
    while fd >= 0 && unsafe { libc::read(fd, bytes.as_mut_ptr().cast(), bytes.len()) } > 0 {}
    UNREPORTED.swap(false, Ordering::SeqCst)
}

/// Polls `fd` for reading for up to `ms` milliseconds (-1: for ever) beside the signal pipe,
/// installing the handler first: whether `fd` turned readable. `SHUTDOWN` naming `what` when
/// SIGINT or SIGTERM arrived (once per signal), `OPERATING_SYSTEM` if poll itself failed.
pub(crate) fn poll_readable(fd: RawFd, ms: i32, what: &str) -> crate::Result<bool> {
    catch();
    let mut pfds = [
        libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: self::fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: two valid pollfds for the duration of the call (a negative fd is skipped).
    let rc = unsafe { libc::poll(pfds.as_mut_ptr(), 2, ms) };
    let e = std::io::Error::last_os_error();
    let interrupted = rc < 0 && e.kind() == std::io::ErrorKind::Interrupted;
    if (interrupted || (rc > 0 && pfds[1].revents != 0)) && take_unreported() {
        return Err(shutdown_error(what));
    }
    if rc < 0 && !interrupted {
        return Err(crate::Error::new(
            crate::ErrorCode::OperatingSystem,
            format!("{what}: poll failed: {e}"),
        ));
    }
    Ok(rc > 0 && pfds[0].revents != 0)
}

/// The error a wait ends with on a signal.
#[cold]
pub(crate) fn shutdown_error(what: &str) -> crate::Error {
    crate::Error::new(
        crate::ErrorCode::Shutdown,
        format!(
            "{what}: interrupted by SIGINT or SIGTERM (Ctrl-C); stop the program's contexts and \
             exit (a second signal ends the program at once)"
        ),
    )
}
