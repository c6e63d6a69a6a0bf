//! The kernels written in C (`c/`), declared for Rust. `build.rs` compiles them for the device
//! and for the host; they speak the same protocol as their Rust twins, message for message.

#[allow(unused_imports)]
use dpakit_dev::abi::args::{DmaOffloadArgs, MsgqPathArgs};

dpakit_dev::extern_thread_kernel! {
    /// The C twin of [`ECHO`](crate::ECHO) (`c/echo.c`): replies to each received immediate
    /// with the same bytes.
    pub ECHO_C: fn echo_c(args: &MsgqPathArgs);
}

dpakit_dev::extern_thread_kernel! {
    /// The C twin of [`DMA_OFFLOAD`](crate::DMA_OFFLOAD) (`c/dma_offload.c`): checks each
    /// descriptor's ranges, checksums and DMA-copies the source, replies with an
    /// `OffloadResult`.
    pub DMA_OFFLOAD_C: fn dma_offload_c(args: &DmaOffloadArgs);
}
