//! Building DOCA errors that name the broken rule.

use std::borrow::Cow;

pub use dpakit_abi::ErrorCode;

pub use dpakit_abi::Error;

/// The result of a soft-device call.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// An error with `code` and a message.
pub fn err(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Error {
    Error::new(code, message)
}

pub use dpakit_abi::bail;

use std::cell::RefCell;

thread_local! {
    /// The last failure on this thread: code and explanation (`dpakit_soft_last_error`).
    static LAST_ERROR: RefCell<Option<(ErrorCode, String)>> = const { RefCell::new(None) };
}

/// Whether failures are printed (`DPAKIT_SOFT_LOG=1`).
fn log_failures() -> bool {
    static LOG: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *LOG.get_or_init(|| std::env::var("DPAKIT_SOFT_LOG").is_ok_and(|v| !v.is_empty() && v != "0"))
}

/// Records why `scope` (a call, or a context's background work) failed: kept as the thread's
/// last error, printed with `DPAKIT_SOFT_LOG=1`.
pub fn record(scope: &str, e: &Error) {
    if log_failures() {
        eprintln!("dpakit soft device: {scope}: {e}");
    }
    LAST_ERROR.with(|last| {
        *last.borrow_mut() = Some((e.code(), format!("{scope}: {}", e.message())));
    });
}

/// Records an error found during progress rather than in a call (a protocol error from a
/// peer, a failed accept).
pub fn note(scope: &str, e: &Error) {
    record(scope, e);
}

/// Records an error the program must hear of even without logging on (a refused Comch
/// connection): kept as the last error and printed to stderr.
pub fn report(scope: &str, e: &Error) {
    if !log_failures() {
        eprintln!("dpakit soft device: {scope}: {e}");
    }
    record(scope, e);
}

/// The last recorded failure of this thread.
pub fn last_error() -> Option<(ErrorCode, String)> {
    LAST_ERROR.with(|last| last.borrow().clone())
}
