//! The dpakit soft device as a library: DOCA's own C API ([`capi`]) over the model of DOCA
//! (`dpakit-model`), with the C half of the API (`csrc/`: what stable Rust cannot define,
//! variadic functions, and DOCA's logging and argument parser), compiled against the headers of
//! `dpakit-doca-headers`. `dpakit-sys` links it; `cargo xtask soft-sdk` lays it out as a DOCA
//! installation.
//!
//! Everything DOCA offers for CPU↔DPA messaging runs here on any Linux machine, and every call is
//! checked: misuse that real hardware answers with a hang, a silent drop or a fatal context error
//! is a DOCA error code with a message naming the rule.
#![warn(missing_docs)]

pub mod capi;
/// Doors for the fuzz targets into the soft device's private decoders (feature `fuzzing`).
#[cfg(feature = "fuzzing")]
pub mod fuzzing;

// The model's modules under the names the C API has always used for them.
use dpakit_model::{
    buf, checked_read, comch, comch_ctrl, comm_channel, ctx, dev, dma, dpa, error, limits, mmap,
    msgq, pe, retry_timer, ring, set_log_level, sync_event,
};
// The concurrency facade (loom under cfg(loom)): dpakit-sync.
use dpakit_sync as sync;

pub use dpakit_model::error::{Error, ErrorCode, Result};
