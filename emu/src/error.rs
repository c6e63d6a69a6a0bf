//! Building DOCA errors that name the broken rule.

pub use dpakit_abi::{Error, ErrorCode};

/// The result of a soft-device call.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// An error with `code` and a message.
pub(crate) fn err(code: ErrorCode, message: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(code, message)
}

/// `Err(err(code, format!(...)))`.
macro_rules! bail {
    ($code:ident, $($fmt:tt)+) => {
        return Err($crate::error::err($crate::error::ErrorCode::$code, format!($($fmt)+)))
    };
}
pub(crate) use bail;
