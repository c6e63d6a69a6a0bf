//! The soft device's model of DOCA (dpakit-model): Core (devices and representors, the progress
//! engine, the context state machine, memory maps and buffers), MsgQs with their CPU and DPA
//! endpoints, and the DPA itself (threads running kernels compiled for the host or from the DPA
//! image, completions, RPC, device memory, the scheduler), with the device functions kernels
//! call above it all (`device_abi`).
//!
//! It is a validation layer: misuse that real hardware answers with a hang, a silent drop or a
//! fatal context error is an error with DOCA's code and a message naming the rule.
//!
//! Its Rust API is public only with feature `api`, for the layer above it — DOCA's C API,
//! `dpakit-emu` — and for the model's own tests; it is the soft device's own and unstable.
//! Programs use the C API, in Rust through the `dpakit` crate. Below it: the DPA runtime
//! (`dpakit-dpa-runtime`, with ISA mode), the transport between processes (`dpakit-wire`) and
//! the concurrency facade (`dpakit-sync`).
#![warn(missing_docs)]
// Without feature `api` the model's API is the crate's own: what only its clients call is unused
// here, not dead.
#![cfg_attr(not(feature = "api"), allow(dead_code, unused_imports))]

/// A module of the model: public only with feature `api` (the C API above it, the model's tests).
macro_rules! model_mod {
    ($name:ident) => {
        #[cfg(feature = "api")]
        pub mod $name;
        #[cfg(not(feature = "api"))]
        pub(crate) mod $name;
    };
}

/// A module of the DPA runtime the model uses under its old name: public only with feature
/// `api`, as the model's own.
macro_rules! runtime_mod {
    ($name:ident) => {
        #[cfg(feature = "api")]
        pub use dpakit_dpa_runtime::$name;
        #[cfg(not(feature = "api"))]
        pub(crate) use dpakit_dpa_runtime::$name;
    };
}

model_mod!(buf);
runtime_mod!(checked_read);
model_mod!(comch);
model_mod!(comch_ctrl);
model_mod!(comm_channel);
runtime_mod!(ctx);
model_mod!(dev);
/// The device C ABI kernels call (`doca_dpa_dev_*`): the layer above the DPA runtime and Comch.
mod device_abi;
model_mod!(dma);
model_mod!(dpa);
pub mod error;
pub mod limits;
model_mod!(mmap);
model_mod!(msgq);
model_mod!(pe);
model_mod!(retry_timer);
runtime_mod!(ring);
/// The live view and the dump at exit (`DPAKIT_SOFT_STATS`).
mod stats;
// The concurrency facade (loom under cfg(loom)) and the wake-up handshake: dpakit-sync.
use dpakit_sync as sync;
model_mod!(sync_event);
mod sync_hint;
use dpakit_dpa_runtime::table;
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
