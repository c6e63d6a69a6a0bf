//! Building DOCA errors that name the broken rule.

use std::borrow::Cow;
use std::fmt;

pub use dpakit_abi::ErrorCode;

/// A failed soft-device call: the `doca_error_t` code and a message that names the rule that was
/// broken and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    code: ErrorCode,
    message: Cow<'static, str>,
}

impl Error {
    /// An error with `code` and an explanation.
    pub fn new(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The DOCA error code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The explanation.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for Error {}

impl From<dpakit_abi::AbiError> for Error {
    fn from(e: dpakit_abi::AbiError) -> Self {
        Error::new(e.code(), e.to_string())
    }
}

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
