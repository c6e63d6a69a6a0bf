//! dpakit: offload datapath loops to the BlueField DPA from Rust.
//!
//! This facade re-exports the host API ([`dpakit_host`]), the shared ABI ([`abi`]) and what a
//! kernel author needs to write and name kernels ([`thread_kernel!`], [`rpc_kernel!`],
//! [`extern_thread_kernel!`] for C kernels, [`dpa_app!`], [`ThreadKernel`], [`RpcKernel`]).
#![cfg_attr(
    feature = "kit-kernels",
    doc = "With feature `kit-kernels` (a default) it also carries the kit's own kernels \
           ([`kernels`], [`kit_app`], [`kit_image`])."
)]
//!
//! `use dpakit::prelude::*` brings the names most programs use.
//!
//! # DOCA's objects and their Rust types
//!
//! Every type keeps DOCA's name as a search alias (`doca_comch_server` finds [`comch::Server`]).
//!
//! | DOCA | Rust |
//! |---|---|
//! | `doca_devinfo`, `doca_dev`, `doca_dev_rep` | [`dev::Devinfo`], [`dev::Dev`], [`dev::DevRep`] |
//! | `doca_pe` | [`pe::Pe`] (also `AsFd`; async waits with feature `tokio`) |
//! | `doca_ctx` states | [`ctx::CtxState`] |
//! | `doca_mmap` | [`mmap::Mmap`] |
//! | `doca_buf`, `doca_buf_inventory`, `doca_buf_pool` | [`buf::Buf`], [`buf::BufInventory`], [`buf_pool::BufPool`] |
//! | `doca_dma` | [`dma::Dma`] |
//! | `doca_dpa`, `doca_dpa_thread` | [`dpa::Dpa`], [`dpa::DpaThread`] |
//! | `doca_dpa_completion`, `doca_comch_consumer_completion`, `doca_dpa_notification_completion` | [`dpa::DpaCompletion`], [`dpa::ConsumerCompletion`], [`dpa::NotificationCompletion`] |
//! | `doca_dpa_kernel_launch_update_*` | [`dpa::KernelLaunch`] |
//! | `doca_comch_msgq` | [`msgq::Msgq`] |
//! | `doca_comch_producer` of a MsgQ, on the CPU / the DPA | [`comch::CpuProducer`] / [`comch::DpaProducer`] |
//! | `doca_comch_consumer` of a MsgQ, on the CPU / the DPA | [`comch::CpuConsumer`] / [`comch::DpaConsumer`] |
//! | the usual CPU → DPA → CPU pair of MsgQs, wired | [`MsgqPath`] |
//! | `doca_comch_server`, `doca_comch_client`, `doca_comch_connection` | [`comch::Server`], [`comch::Client`], [`comch::Connection`] |
//! | `doca_comch_event_*` callbacks | [`comch::Event`] values, or the builders' `on_*` callbacks |
//! | `doca_comch_producer`, `doca_comch_consumer` on a connection | [`comch::Producer`], [`comch::Consumer`] |
//! | `doca_comm_channel_ep_t` | [`comm_channel::Endpoint`] |
//! | `doca_sync_event` | [`sync_event::SyncEvent`] |
//! | `doca_error_t` | [`ErrorCode`], carried by [`Error`] |
//! | DPA kernels (`__dpa_global__`), RPCs | [`thread_kernel!`], [`rpc_kernel!`], [`ThreadKernel`], [`RpcKernel`] |
//! | the soft device's own settings (`dpakit_soft.h`) | [`soft`], [`soft::SoftSettings`] |
pub use dpakit_abi as abi;
pub use dpakit_abi::{RpcKernel, ThreadKernel};
pub use dpakit_dev::{dpa_app, extern_thread_kernel, rpc_kernel, thread_kernel};
pub use dpakit_host::*;

/// The names most programs use, in one import: `use dpakit::prelude::*;`.
///
/// DOCA's objects (device, progress engine, DPA context and thread, mmap, DMA, MsgQ path, Comch
/// server and client with their events), the error types, the immediate message type and the
/// kernel macros. The soft device's own settings stay in [`soft`], so code meant for hardware
/// does not reach them by accident.
///
/// ```
/// use dpakit::prelude::*;
/// use std::os::fd::AsFd;
///
/// fn main() -> Result<()> {
///     let pe = Pe::new()?;
///     // The notification handle, for poll/epoll or an async runtime's reactor.
///     let _handle = pe.as_fd();
///     assert!(!pe.progress(), "nothing connected, nothing to do");
///     Ok(())
/// }
/// ```
pub mod prelude {
    pub use dpakit_abi::{ImmMessage, RpcKernel, SubmitFlags, ThreadKernel};
    pub use dpakit_dev::{dpa_app, rpc_kernel, thread_kernel};
    pub use dpakit_host::comch::{Client, ClientEvent, Connection, Server, ServerEvent};
    pub use dpakit_host::dev::{Dev, DevRep};
    pub use dpakit_host::dma::Dma;
    pub use dpakit_host::dpa::{Dpa, DpaThread};
    pub use dpakit_host::mmap::Mmap;
    pub use dpakit_host::pe::Pe;
    pub use dpakit_host::{Error, ErrorCode, MsgqPath, Reply, Result, open_dpa_dev};
}

/// The kit's kernels, as typed references (from `dpakit-kernels`; feature `kit-kernels`).
#[cfg(feature = "kit-kernels")]
pub mod kernels {
    pub use dpakit_kernels::{
        DMA_OFFLOAD, DMA_OFFLOAD_C, ECHO, ECHO_C, LAUNCH_MARK, PING_PONG, RANKED_ECHO, SINK,
        SYNC_SET, SYNC_STEP,
    };
}

/// The DPA app holding every kernel of the kit (the `dpakit_kernels` symbol; feature
/// `kit-kernels`).
#[cfg(feature = "kit-kernels")]
pub fn kit_app() -> &'static dpa::App {
    &dpakit_kernels::APP
}

/// The file of the DPA image of the kit's own kernels, which [`kit_app`] embeds: built with
/// the kernels by their build script wherever dpakit comes from (this checkout, a registry, git).
/// ISA mode needs no path (the app carries its image); this is for tools that read the file.
/// `None` when the build could not make one (the DPA's toolchain missing: the build warned) or
/// with feature `doca` (feature `kit-kernels`).
#[cfg(feature = "kit-kernels")]
pub fn kit_image() -> Option<&'static std::path::Path> {
    dpakit_kernels::IMAGE.map(std::path::Path::new)
}
