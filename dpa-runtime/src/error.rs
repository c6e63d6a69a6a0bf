//! DOCA errors (dpakit-abi's): a code and a message naming the broken rule.

use std::borrow::Cow;

pub use dpakit_abi::{Error, ErrorCode, bail};

/// The result of a soft-device call.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// An error with `code` and a message.
pub fn err(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Error {
    Error::new(code, message)
}
