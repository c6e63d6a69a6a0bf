//! The safe host/Arm API of dpakit, over DOCA's C API.
//!
//! The object model mirrors DOCA name for name — devices ([`dev`]), progress engine ([`pe`]),
//! contexts ([`ctx`]), memory maps ([`mmap`]) and buffers ([`buf`]), DMA ([`dma`]), MsgQs
//! ([`msgq`]) and their endpoints ([`comch`]), the DPA ([`dpa`]) — configured with builders,
//! torn down by `Drop` in DOCA's order (every object keeps alive what it was created on), and
//! every fallible call returns [`Result<T, Error>`](Result), where [`Error`] carries DOCA's
//! `doca_error_t` code ([`ErrorCode`]) and a message naming the rule that was broken.
//!
//! Everything goes through `dpakit-sys`: by default the soft device (linked in, runs anywhere);
//! with feature `doca`, an installed DOCA SDK, so the same program runs on a BlueField. The soft
//! device's own controls are in [`soft`]. [`MsgqPath`] wires the usual CPU → DPA → CPU
//! conversation in one call.
//!
//! Objects are not `Send`: like DOCA's, a progress engine and the contexts it drives belong to
//! one thread.
#![warn(missing_docs)]

pub mod buf;
pub mod buf_pool;
pub mod comch;
pub mod comm_channel;
pub mod ctx;
pub mod dev;
pub mod dma;
pub mod dpa;
mod error;
pub mod interrupt;
pub mod mmap;
pub mod msgq;
mod path;
pub mod pe;
#[cfg(feature = "tokio")]
mod pe_async;
mod pulled;
pub mod soft;
pub mod sync_event;
mod user_data;

pub use dev::open_dpa_dev;
pub use dpakit_abi as abi;
pub use dpakit_abi::{ErrorCode, ImmMessage, SubmitFlags};
pub use error::{Error, Result};
pub use path::{MsgqPath, MsgqPathBuilder, Reply};
pub use user_data::UserData;

/// The 64 bits of a `union doca_data`, whichever member was written.
#[inline]
pub(crate) fn data_bits(data: dpakit_sys::doca_data) -> u64 {
    // SAFETY: both members are 8 plain bytes; every bit pattern is a valid u64.
    unsafe { data.u64_ }
}
