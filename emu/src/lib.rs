//! The dpakit soft device: a software model of DOCA Core, Comch MsgQ and the DPA.
//!
//! Everything DOCA offers for CPU↔DPA messaging runs here on any Linux machine: devices and
//! capabilities ([`dev`]), the progress engine ([`pe`]) and context state machine ([`ctx`]),
//! memory maps and buffers ([`mmap`], [`buf`]), MsgQs ([`msgq`]) with their CPU and DPA
//! endpoints ([`comch`]), and the DPA itself ([`dpa`]): threads running kernels compiled for the
//! host, completions, RPC, device memory, and the device functions kernels call.
//!
//! It is also a validation layer: misuse that real hardware answers with a hang, a silent drop or
//! a fatal context error is reported as a DOCA error code with a message naming the rule.
#![warn(missing_docs)]

pub mod buf;
pub mod capi;
mod checked_read;
pub mod comch;
pub mod ctx;
pub mod dev;
pub mod dpa;
pub mod error;
/// Doors for the fuzz targets into the soft device's private decoders (feature `fuzzing`).
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod limits;
pub mod mmap;
pub mod msgq;
pub mod pe;
pub mod ring;
// The concurrency facade (loom under cfg(loom)) and the wake-up handshake: dpakit-sync.
use dpakit_sync as sync;
pub mod sync_event;
mod sync_hint;
mod table;
use dpakit_sync::wake;
mod wire;

pub use error::{Error, ErrorCode, Result};

use sync::Ordering;
use sync::plain::AtomicU32;

static LOG_LEVEL: AtomicU32 = AtomicU32::new(u32::MAX);

/// The most verbose `doca_dpa_dev_log` level printed (DOCA's numbering: 20 critical … 60
/// debug). Defaults to `DPAKIT_DPA_LOG_LEVEL` from the environment, else 50 (info).
pub fn log_level() -> u32 {
    let level = LOG_LEVEL.load(Ordering::Relaxed);
    if level != u32::MAX {
        return level;
    }
    let from_env = std::env::var("DPAKIT_DPA_LOG_LEVEL")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    LOG_LEVEL.store(from_env, Ordering::Relaxed);
    from_env
}

/// Sets the most verbose device log level printed (`doca_dpa_set_log_level`).
pub fn set_log_level(level: u32) {
    LOG_LEVEL.store(level, Ordering::Relaxed);
}
