//! dpakit's DPA kernels.
//!
//! Each kernel is written once against `dpakit-dev`. `cargo xtask build-dpa` compiles this crate
//! for `riscv64imac-unknown-none-elf` into `libdpakit_kernels.a`; host builds link it with the
//! soft device, which provides the device functions.
//!
//! | kernel | kind | argument | does |
//! |---|---|---|---|
//! | [`ECHO`] | thread | `MsgqPathArgs` | replies with the same immediate |
//! | [`PING_PONG`] | thread | `MsgqPathArgs` | replies with `PingPong.count + 1` |
//! | [`DMA_OFFLOAD`] | thread | `DmaOffloadArgs` | DMA-copies a range, replies with its checksum |
//! | [`RANKED_ECHO`] | thread | `RankedPathArgs` | echo stamped with the thread's rank (N threads) |
//! | [`SINK`] | thread | `MsgqPathArgs` | consumes and counts, no replies (one-way throughput) |
//! | [`PREPOST_CREDITS`] | RPC | consumer handle, count | posts a DPA consumer's first credits |
#![cfg_attr(not(test), no_std)]
#![warn(missing_docs)]

mod dma_offload;
mod echo;
mod ping_pong;
mod ranked_echo;
mod serve;
mod sink;

pub use dma_offload::{DMA_OFFLOAD, dma_offload};
pub use echo::{ECHO, PREPOST_CREDITS, echo, prepost_credits};
pub use ping_pong::{PING_PONG, ping_pong};
pub use ranked_echo::{RANKED_ECHO, ranked_echo};
pub use sink::{SINK, sink};

/// On the device a panic is a bug in the kernel: report it and retire the thread so it is not
/// triggered again. (Host builds unwind instead; the soft device turns that into a fatal error
/// on the DPA context.)
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    dpakit_dev::log::log(
        dpakit_dev::log::LogLevel::Crit,
        c"dpakit kernel panicked; finishing the thread",
    );
    dpakit_dev::thread::finish()
}
