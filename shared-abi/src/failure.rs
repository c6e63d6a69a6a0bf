//! The error of a DOCA call on the CPU side, shared by the soft device and the host API: DOCA's
//! code and a message naming the rule that was broken (feature `alloc`; kernels have no use for
//! it).

use crate::{AbiError, ErrorCode};
use alloc::borrow::Cow;
use alloc::string::ToString;
use core::fmt;

/// A failed DOCA call: the `doca_error_t` code and a message that names the call, the rule that
/// was broken and what to do about it.
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

    /// An error with `code` and a formatted message, built out of line: the checks that fail
    /// with it keep no formatting code on their fast path. [`bail!`](crate::bail) calls it.
    #[cold]
    #[inline(never)]
    pub fn from_args(code: ErrorCode, message: fmt::Arguments<'_>) -> Self {
        match message.as_str() {
            Some(text) => Self::new(code, text),
            None => Self::new(code, message.to_string()),
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

impl core::error::Error for Error {}

impl From<AbiError> for Error {
    fn from(e: AbiError) -> Self {
        Error::new(e.code(), e.to_string())
    }
}

/// `return Err(Error)` with an [`ErrorCode`] variant and a `format!`-style message naming the
/// broken rule: `bail!(InvalidValue, "queue size {n} is not a power of two")`.
#[macro_export]
macro_rules! bail {
    ($code:ident, $($fmt:tt)+) => {
        return ::core::result::Result::Err($crate::Error::from_args(
            $crate::ErrorCode::$code,
            ::core::format_args!($($fmt)+),
        ))
    };
}
