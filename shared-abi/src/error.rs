//! DOCA's error vocabulary (`doca_error_t`) and the ABI's own decoding errors.

use crate::MAX_IMM_DATA_LEN;
use core::fmt;

macro_rules! error_codes {
    ($( $(#[$doc:meta])* $variant:ident = $value:literal, $name:literal, $text:literal; )*) => {
        /// A `doca_error_t` value, numbered exactly as DOCA numbers them.
        #[repr(i32)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $( $(#[$doc])* $variant = $value, )*
        }

        impl ErrorCode {
            /// Every code, in numeric order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),*];

            /// The code for a raw `doca_error_t` value, if DOCA defines one.
            pub const fn from_raw(raw: i32) -> Option<Self> {
                match raw {
                    $( $value => Some(ErrorCode::$variant), )*
                    _ => None,
                }
            }

            /// DOCA's C name for the code, e.g. `DOCA_ERROR_INVALID_VALUE`.
            pub const fn name(self) -> &'static str {
                match self { $( ErrorCode::$variant => $name, )* }
            }

            /// DOCA's one-line description of the code.
            pub const fn description(self) -> &'static str {
                match self { $( ErrorCode::$variant => $text, )* }
            }
        }
    };
}

error_codes! {
    /// Success.
    Success = 0, "DOCA_SUCCESS", "success";
    /// Unknown error.
    Unknown = 1, "DOCA_ERROR_UNKNOWN", "unknown error";
    /// Operation not permitted.
    NotPermitted = 2, "DOCA_ERROR_NOT_PERMITTED", "operation not permitted";
    /// Resource already in use.
    InUse = 3, "DOCA_ERROR_IN_USE", "resource already in use";
    /// Operation not supported.
    NotSupported = 4, "DOCA_ERROR_NOT_SUPPORTED", "operation not supported";
    /// Resource temporarily unavailable, try again.
    Again = 5, "DOCA_ERROR_AGAIN", "resource temporarily unavailable, try again";
    /// Invalid input.
    InvalidValue = 6, "DOCA_ERROR_INVALID_VALUE", "invalid input";
    /// Memory allocation failure.
    NoMemory = 7, "DOCA_ERROR_NO_MEMORY", "memory allocation failure";
    /// Resource initialisation failure.
    Initialization = 8, "DOCA_ERROR_INITIALIZATION", "resource initialization failure";
    /// Timer expired waiting for resource.
    TimeOut = 9, "DOCA_ERROR_TIME_OUT", "timer expired waiting for resource";
    /// Shut down in process or completed.
    Shutdown = 10, "DOCA_ERROR_SHUTDOWN", "shut down in process or completed";
    /// Connection reset by peer.
    ConnectionReset = 11, "DOCA_ERROR_CONNECTION_RESET", "connection reset by peer";
    /// Connection aborted.
    ConnectionAborted = 12, "DOCA_ERROR_CONNECTION_ABORTED", "connection aborted";
    /// Connection in progress.
    ConnectionInProgress = 13, "DOCA_ERROR_CONNECTION_INPROGRESS", "connection in progress";
    /// Not connected.
    NotConnected = 14, "DOCA_ERROR_NOT_CONNECTED", "not connected";
    /// Unable to acquire required lock.
    NoLock = 15, "DOCA_ERROR_NO_LOCK", "unable to acquire required lock";
    /// Resource not found.
    NotFound = 16, "DOCA_ERROR_NOT_FOUND", "resource not found";
    /// Input/output operation failed.
    IoFailed = 17, "DOCA_ERROR_IO_FAILED", "input/output operation failed";
    /// Bad state.
    BadState = 18, "DOCA_ERROR_BAD_STATE", "bad state";
    /// Unsupported version.
    UnsupportedVersion = 19, "DOCA_ERROR_UNSUPPORTED_VERSION", "unsupported version";
    /// Operating system call failure.
    OperatingSystem = 20, "DOCA_ERROR_OPERATING_SYSTEM", "operating system call failure";
    /// DOCA driver call failure.
    Driver = 21, "DOCA_ERROR_DRIVER", "DOCA driver call failure";
    /// An unexpected scenario was detected.
    Unexpected = 22, "DOCA_ERROR_UNEXPECTED", "an unexpected scenario was detected";
    /// Resource already exists.
    AlreadyExist = 23, "DOCA_ERROR_ALREADY_EXIST", "resource already exists";
    /// No more space in resource.
    Full = 24, "DOCA_ERROR_FULL", "no more space in resource";
    /// No entry is available in resource.
    Empty = 25, "DOCA_ERROR_EMPTY", "no entry is available in resource";
    /// Operation is in progress.
    InProgress = 26, "DOCA_ERROR_IN_PROGRESS", "operation is in progress";
    /// Requested operation too big to be contained.
    TooBig = 27, "DOCA_ERROR_TOO_BIG", "requested operation too big to be contained";
    /// Authentication failure.
    Authentication = 28, "DOCA_ERROR_AUTHENTICATION", "authentication failure";
    /// Bad configuration.
    BadConfig = 29, "DOCA_ERROR_BAD_CONFIG", "bad configuration";
    /// The operation was skipped.
    Skipped = 30, "DOCA_ERROR_SKIPPED", "operation skipped";
}

impl ErrorCode {
    /// The raw `doca_error_t` value.
    pub const fn raw(self) -> i32 {
        self as i32
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.raw())
    }
}

/// Why bytes could not become (or stay) an ABI value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbiError {
    /// More bytes than one immediate holds.
    TooLong {
        /// The length that was offered.
        len: usize,
    },
    /// A fixed-size type was read from bytes of another length.
    SizeMismatch {
        /// `size_of` the type.
        expected: usize,
        /// The length that was offered.
        found: usize,
    },
    /// The header's opcode is not one the kit defines.
    UnknownOpcode(u16),
    /// A typed view was asked of a message that carries another opcode.
    WrongOpcode {
        /// The opcode of the view.
        expected: u16,
        /// The opcode in the header.
        found: u16,
    },
    /// A submit flags word with bits DOCA does not define.
    UnknownFlags(u32),
}

impl AbiError {
    /// The DOCA error code this maps to when it reaches an API boundary.
    pub const fn code(&self) -> ErrorCode {
        ErrorCode::InvalidValue
    }
}

impl fmt::Display for AbiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AbiError::TooLong { len } => write!(
                f,
                "immediate data of {len} bytes exceeds the limit of {MAX_IMM_DATA_LEN} bytes \
                 (MAX_IMM_DATA_LEN); send larger data with DMA copy or a fast-path buffer"
            ),
            AbiError::SizeMismatch { expected, found } => {
                write!(f, "expected {expected} bytes for this type, got {found}")
            }
            AbiError::UnknownOpcode(op) => write!(f, "unknown opcode {op:#06x} in message header"),
            AbiError::WrongOpcode { expected, found } => write!(
                f,
                "message carries opcode {found:#06x}, but the view expects {expected:#06x}"
            ),
            AbiError::UnknownFlags(bits) => write!(
                f,
                "submit flags {bits:#x} contain bits outside NONE/FLUSH/OPTIMIZE_REPORTS"
            ),
        }
    }
}

impl core::error::Error for AbiError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_doca_numbering() {
        assert_eq!(ErrorCode::ALL.len(), 31);
        for (i, code) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(code.raw(), i as i32);
            assert_eq!(ErrorCode::from_raw(i as i32), Some(*code));
        }
        assert_eq!(ErrorCode::InvalidValue.raw(), 6);
        assert_eq!(ErrorCode::BadState.raw(), 18);
        assert_eq!(ErrorCode::TooBig.name(), "DOCA_ERROR_TOO_BIG");
        assert_eq!(ErrorCode::BadConfig.raw(), 29);
        assert_eq!(ErrorCode::from_raw(31), None);
        assert_eq!(ErrorCode::from_raw(-1), None);
    }

    #[test]
    fn too_long_names_the_limit() {
        let text = format!("{}", AbiError::TooLong { len: 40 });
        assert!(text.contains("40 bytes"), "{text}");
        assert!(text.contains("limit of 32 bytes"), "{text}");
    }
}
