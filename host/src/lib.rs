//! The safe host/Arm API of dpakit.
//!
//! Every fallible call returns [`Result<T, Error>`](Result), where [`Error`] carries DOCA's
//! `doca_error_t` code ([`ErrorCode`]) and a message naming the rule that was broken.
#![warn(missing_docs)]

pub use dpakit_abi::{Error, ErrorCode};

/// The result of a dpakit call.
pub type Result<T, E = Error> = core::result::Result<T, E>;
