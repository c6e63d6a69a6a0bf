//! SIGINT and SIGTERM as a flag a test service polls, so it stops cleanly (its clients are told):
//! the service of a test that checks a program with a handler of its own.
// A signal handler may only touch a lock-free atomic: a bare static one, outside any facade.
#![allow(clippy::disallowed_types)]

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Routes SIGINT and SIGTERM to the flag.
pub fn install() {
    let handler: extern "C" fn(libc::c_int) = on_signal;
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe { libc::signal(signal, handler as libc::sighandler_t) };
    }
}

/// Whether a signal arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}
