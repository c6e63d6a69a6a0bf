//! dpakit's DPA kernels.
//!
//! Each kernel is written once, in Rust against `dpakit-dev` or in C against DOCA's device
//! headers (`c/`, compiled by `build.rs`). `cargo xtask build-dpa` compiles this crate for
//! `riscv64imac-unknown-none-elf` into `libdpakit_kernels.a`; host builds link it with the soft
//! device, which provides the device functions.
//!
//! | kernel | language | kind | argument | does |
//! |---|---|---|---|---|
//! | [`ECHO`] | Rust | thread | `MsgqPathArgs` | replies with the same immediate |
//! | [`ECHO_C`] | C | thread | `MsgqPathArgs` | the same as `ECHO` |
//! | [`PING_PONG`] | Rust | thread | `MsgqPathArgs` | replies with `PingPong.count + 1` |
//! | [`DMA_OFFLOAD`] | Rust | thread | `DmaOffloadArgs` | DMA-copies a range, replies with its checksum |
//! | [`DMA_OFFLOAD_C`] | C | thread | `DmaOffloadArgs` | the same as `DMA_OFFLOAD` |
//! | [`RANKED_ECHO`] | Rust | thread | `RankedPathArgs` | echo stamped with the thread's rank (N threads) |
//! | [`SINK`] | Rust | thread | `MsgqPathArgs` | consumes and counts, no replies (one-way throughput) |
//! | [`SYNC_STEP`] | Rust | RPC | sync event, bound, step | waits on a sync event, then advances it |
//! | [`SYNC_SET`] | Rust | RPC | sync event, value | sets a sync event |
//! | [`LAUNCH_MARK`] | Rust | thread (launched) | sync event | adds `1 << rank` to a sync event |
//!
//! [`APP`] names the app holding all of them (and the runtime's RPC that posts a DPA consumer's
//! first credits, `dpakit_dev::runtime::CONSUMER_ACK`): the `dpakit_kernels` symbol
//! (`struct doca_dpa_app *`) that dpacc makes on hardware and that this crate defines for the
//! soft device.
#![cfg_attr(not(test), no_std)]
#![warn(missing_docs)]
// With feature `doca` the kernel bodies are not compiled (the app library provides the kernels),
// which leaves their imports unused.
#![cfg_attr(feature = "doca", allow(unused))]

mod c_kernels;
mod dma_offload;
mod echo;
mod ping_pong;
mod ranked_echo;
mod sink;
mod sync_step;

pub use c_kernels::{DMA_OFFLOAD_C, ECHO_C, dma_offload_c, echo_c};
pub use dma_offload::{DMA_OFFLOAD, dma_offload};
pub use echo::{ECHO, echo};
pub use ping_pong::{PING_PONG, ping_pong};
pub use ranked_echo::{RANKED_ECHO, ranked_echo};
pub use sink::{SINK, sink};
pub use sync_step::{LAUNCH_MARK, SYNC_SET, SYNC_STEP, launch_mark, sync_set, sync_step};

dpakit_dev::dpa_app! {
    /// The kit's DPA app: every kernel of this crate, under the symbol `dpakit_kernels`.
    pub APP = dpakit_kernels [ECHO, PING_PONG, DMA_OFFLOAD, RANKED_ECHO, SINK, SYNC_STEP, SYNC_SET, LAUNCH_MARK, ECHO_C, DMA_OFFLOAD_C]
}

/// The file of the DPA image this build of the crate embeds in [`APP`] (its build script builds
/// it, `dpakit_build::kernel_crate`): what tools that read an image (a debugger, a C program's
/// `DPAKIT_SOFT_DPA_IMAGE`) are given. `None` where no image was built (the device build, feature
/// `doca`, or a machine without the DPA's toolchain: the build warned why).
pub const IMAGE: Option<&str> = option_env!("DPAKIT_DPA_IMAGE");

/// A panic is a bug in the kernel: on the device (and in the soft app library, built without
/// std) it fails the DPA context with its message and location (`dpakit_dev::panic`). Host
/// builds linked with std unwind instead, and the soft device reports the same error.
#[cfg(any(all(target_arch = "riscv64", target_os = "none"), feature = "soft-app"))]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    dpakit_dev::panic::report(info)
}

/// The soft app library is built with `panic = "abort"` and never unwinds, but the precompiled
/// `core` it links still names the unwinding personality routine; this one is never called.
#[cfg(all(
    feature = "soft-app",
    not(all(target_arch = "riscv64", target_os = "none"))
))]
#[unsafe(no_mangle)]
extern "C" fn rust_eh_personality() {}
