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
