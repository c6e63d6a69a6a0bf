//! The kernels written in C (`c/`), declared for Rust. `build.rs` compiles them for the device
//! and for the host; they speak the same protocol as their Rust twins, message for message.

dpakit_dev::extern_thread_kernel! {
    /// The C twin of [`ECHO`](crate::ECHO) (`c/echo.c`): replies to each received immediate
    /// with the same bytes. `arg` is the device address of a `MsgqPathArgs`.
    pub ECHO_C: fn echo_c(arg: u64);
}

dpakit_dev::extern_thread_kernel! {
    /// The C twin of [`DMA_OFFLOAD`](crate::DMA_OFFLOAD) (`c/dma_offload.c`): checks each
    /// descriptor's ranges, checksums and DMA-copies the source, replies with an
    /// `OffloadResult`. `arg` is the device address of a `DmaOffloadArgs`.
    pub DMA_OFFLOAD_C: fn dma_offload_c(arg: u64);
}
