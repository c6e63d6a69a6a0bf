//! Types that cross between CPU code and DPA kernels.
//!
//! Everything here is `#![no_std]`, `#[repr(C)]` and free of padding, so the host build, the soft
//! device and the riscv64 device build agree on every byte. Layouts are checked at compile time;
//! `include/dpakit_abi.h` mirrors them for C kernels and a test checks the two agree.
//!
//! * [`ImmMessage`]: the 32-byte immediate message (an 8-byte [`MsgHeader`] plus 24 payload bytes)
//!   with typed views ([`Echo`], [`DmaOffloadDesc`], [`OffloadResult`]).
//! * [`Pod`] and [`Immediate`]: the unsafe marker traits for types allowed to cross; implement them
//!   with [`pod_struct!`] and [`impl_immediate!`], which prove the layout rules at compile time.
//! * Device handles ([`handles`]), submit flags ([`SubmitFlags`]), DOCA error codes ([`ErrorCode`])
//!   and context states ([`CtxState`]); with feature `alloc`, the CPU side's `Error` (a code and
//!   the rule that was broken), one type for the soft device and the host API.
//! * Typed references to kernels and apps ([`kernel`]), and the soft device's app descriptor.
#![cfg_attr(not(any(test, feature = "std")), no_std)]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;

pub mod args;
mod checksum;
mod ctx_state;
pub mod device;
mod error;
#[cfg(feature = "alloc")]
mod failure;
mod flags;
pub mod handles;
pub mod kernel;
mod message;
mod pod;
pub mod soft;
mod word;

pub use checksum::checksum64;
pub use ctx_state::CtxState;
pub use error::{AbiError, ErrorCode};
#[cfg(feature = "alloc")]
pub use failure::Error;
pub use flags::SubmitFlags;
pub use kernel::{DpaApp, RawArg, RpcKernel, RpcSignature, ThreadEntry, ThreadKernel};
pub use message::{
    DmaOffloadDesc, Echo, HEADER_LEN, ImmMessage, MsgHeader, OffloadResult, Opcode, PAYLOAD_LEN,
    Payload, PingPong,
};
pub use pod::{Immediate, Pod, bytes_of, from_imm_bytes};
pub use word::{Word, WordTuple};

/// Largest immediate a MsgQ producer may send or a consumer receive, in bytes.
pub const MAX_IMM_DATA_LEN: usize = 32;

/// The raw submit flag values shared with DOCA's `doca_dpa_dev_submit_flag`.
pub mod submit_flag {
    /// No flag.
    pub const NONE: u32 = 0;
    /// Ring the doorbell now instead of batching the operation with later ones.
    pub const FLUSH: u32 = 1 << 0;
    /// Do not report a completion for this operation (completion moderation).
    pub const OPTIMIZE_REPORTS: u32 = 1 << 1;
}

#[doc(hidden)]
pub mod __private {
    pub use core::mem::size_of;
    pub use static_assertions::const_assert;
}
