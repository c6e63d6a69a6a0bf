//! The dpakit soft device: a software model of DOCA Core, Comch MsgQ and the DPA, behind DOCA's
//! own C API ([`capi`]).
//!
//! Everything DOCA offers for CPU↔DPA messaging runs here on any Linux machine: devices and
//! capabilities (`dev`), the progress engine (`pe`) and context state machine (`ctx`), memory
//! maps and buffers (`mmap`, `buf`), MsgQs (`msgq`) with their CPU and DPA endpoints (`comch`),
//! and the DPA itself (`dpa`): threads running kernels compiled for the host, completions, RPC,
//! device memory, and the device functions kernels call. The model's Rust API is public only
//! with feature `testing` (the crate's own tests); programs reach it through the C API, in Rust
//! through the `dpakit` crate.
//!
//! It is also a validation layer: misuse that real hardware answers with a hang, a silent drop or
//! a fatal context error is reported as a DOCA error code with a message naming the rule.
#![warn(missing_docs)]
// Without feature `testing` the model's API is the crate's own: what only its tests call is
// unused here, not dead.
#![cfg_attr(not(feature = "testing"), allow(dead_code, unused_imports))]

/// A module of the model: its Rust API is the soft device's own, public only with feature
/// `testing` (its tests drive the model directly); programs use DOCA's C API ([`capi`]) or the
/// kit's `dpakit` crate over it.
macro_rules! model_mod {
    ($name:ident) => {
        #[cfg(feature = "testing")]
        pub mod $name;
        #[cfg(not(feature = "testing"))]
        pub(crate) mod $name;
    };
}

model_mod!(buf);
pub mod capi;
mod checked_read;
model_mod!(comch);
model_mod!(ctx);
model_mod!(dev);
model_mod!(dpa);
pub mod error;
/// Doors for the fuzz targets into the soft device's private decoders (feature `fuzzing`).
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod limits;
model_mod!(mmap);
model_mod!(msgq);
model_mod!(pe);
model_mod!(ring);
// The concurrency facade (loom under cfg(loom)) and the wake-up handshake: dpakit-sync.
use dpakit_sync as sync;
model_mod!(sync_event);
mod sync_hint;
mod table;
use dpakit_sync::wake;

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
