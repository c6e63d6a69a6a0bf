//! Errors: DOCA's code and what went wrong.

use dpakit_abi::ErrorCode;
use dpakit_sys as sys;

pub use dpakit_abi::Error;

/// The error a DOCA call returned: `raw` and, on the soft device, its diagnostic of the failure
/// (else DOCA's description of the code).
#[cold]
pub(crate) fn from_call(api: &'static str, raw: sys::doca_error_t) -> Error {
    let code = ErrorCode::from_raw(raw as i32).unwrap_or(ErrorCode::Unknown);
    let soft = sys::soft::api().and_then(|soft| {
        let mut buf = [0u8; 1024];
        // SAFETY: a writable buffer of its length.
        let last = unsafe { (soft.last_error)(buf.as_mut_ptr().cast(), buf.len()) };
        let text = std::ffi::CStr::from_bytes_until_nul(&buf)
            .ok()?
            .to_str()
            .ok()?;
        (last == raw && text.starts_with(api)).then(|| text.to_string())
    });
    let message = soft.unwrap_or_else(|| format!("{api}: {}", code.description()));
    Error::new(code, message)
}

/// The result of a dpakit call.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// `Ok(())` for `DOCA_SUCCESS`, else the error of call `api`.
#[inline]
pub(crate) fn check(api: &'static str, raw: sys::doca_error_t) -> Result<()> {
    if raw == sys::DOCA_SUCCESS {
        Ok(())
    } else {
        Err(from_call(api, raw))
    }
}

/// Calls a DOCA function and turns its code into a `Result`, naming the function in errors:
/// `doca!(doca_pe_progress(pe))`.
macro_rules! doca {
    ($f:ident($($arg:expr),* $(,)?)) => {
        $crate::error::check(
            stringify!($f),
            // SAFETY: every call site passes handles this crate owns and live pointers, as
            // the C function's contract asks; see the function's wrapper.
            unsafe { ::dpakit_sys::$f($($arg),*) },
        )
    };
}
pub(crate) use doca;

pub(crate) use dpakit_abi::bail;
