//! Building DOCA errors that name the broken rule.

use std::borrow::Cow;
use std::fmt;

pub use dpakit_abi::ErrorCode;

pub use dpakit_abi::Error;

/// The result of a soft-device call.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// An error with `code` and a message.
pub(crate) fn err(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Error {
    Error::new(code, message)
}

/// An error with `code` and a formatted message, built out of line: error paths stay out of
/// the datapath functions that check them (no formatting code, fewer saved registers).
#[cold]
#[inline(never)]
pub(crate) fn err_fmt(code: ErrorCode, message: fmt::Arguments<'_>) -> Error {
    match message.as_str() {
        Some(text) => Error::new(code, text),
        None => Error::new(code, message.to_string()),
    }
}

/// `return Err(...)` with `code` and a `format!`-style message.
macro_rules! bail {
    ($code:ident, $($fmt:tt)+) => {
        return Err($crate::error::err_fmt($crate::error::ErrorCode::$code, format_args!($($fmt)+)))
    };
}
pub(crate) use bail;
