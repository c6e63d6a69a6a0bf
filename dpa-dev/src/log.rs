//! Device logging to the host (`doca_dpa_dev_log`).

use crate::sys;
use core::ffi::CStr;

/// `doca_dpa_dev_log_level_t`, from least to most verbose.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Logging off.
    Disable = 10,
    /// Critical.
    Crit = 20,
    /// Error.
    Error = 30,
    /// Warning.
    Warning = 40,
    /// Informational.
    Info = 50,
    /// Debug.
    Debug = 60,
}

impl LogLevel {
    /// The level for DOCA's raw value.
    #[inline]
    pub const fn from_raw(raw: u32) -> Option<Self> {
        match raw {
            10 => Some(LogLevel::Disable),
            20 => Some(LogLevel::Crit),
            30 => Some(LogLevel::Error),
            40 => Some(LogLevel::Warning),
            50 => Some(LogLevel::Info),
            60 => Some(LogLevel::Debug),
            _ => None,
        }
    }
}

/// Logs `message` at `level`. Logging costs time on the device; keep it off the datapath.
#[inline]
pub fn log(level: LogLevel, message: &CStr) {
    // SAFETY: the format consumes exactly one C string argument, which is NUL-terminated.
    unsafe { sys::doca_dpa_dev_log(level as u32, c"%s\n".as_ptr(), message.as_ptr()) }
}

/// Logs `message` followed by `value` in decimal.
#[inline]
pub fn log_value(level: LogLevel, message: &CStr, value: u64) {
    // SAFETY: "%s%lu" consumes a C string and an unsigned long, which is 64 bits on both the DPA
    // (riscv64 LP64) and the host targets the soft device runs on.
    unsafe { sys::doca_dpa_dev_log(level as u32, c"%s%lu\n".as_ptr(), message.as_ptr(), value) }
}
