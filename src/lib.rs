//! dpakit: offload datapath loops to the BlueField DPA from Rust.
//!
//! This facade re-exports the host API ([`dpakit_host`]), the shared ABI ([`abi`]), what a
//! kernel author needs to write and name kernels ([`thread_kernel!`], [`rpc_kernel!`],
//! [`extern_thread_kernel!`] for C kernels, [`dpa_app!`], [`ThreadKernel`], [`RpcKernel`]) and
//! the kit's own kernels ([`kernels`], [`kit_app`]).
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

/// Where `cargo xtask build-dpa --release` writes the DPA image of the kit's own kernels, in the
/// kit's workspace: what the soft device runs in ISA mode (`SoftSettings::isa_image`). A program's
/// own kernels are found with [`dpa_image!`].
pub fn kit_image() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join("dpa")
        .join("release")
        .join("dpakit_kernels.elf")
}

/// The DPA image of `app` (a [`dpa::App`], e.g. `my_kernels::APP`) for the soft device's ISA mode
/// ([`soft::SoftSettings::isa_image`]): the one `cargo xtask build-dpa` linked in the workspace of
/// the crate that uses the macro (see [`image::find`]). A `Result<PathBuf>`.
///
/// ```ignore
/// use dpakit::soft::{ExecMode, SoftSettings};
/// let dpa = Dpa::builder(&dev)
///     .app(&my_kernels::APP)
///     .exec_mode(ExecMode::Isa)
///     .isa_image(dpakit::dpa_image!(my_kernels::APP)?)
///     .start()?;
/// ```
#[macro_export]
macro_rules! dpa_image {
    ($app:expr) => {
        $crate::image::find(
            ::std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
            $app.name(),
        )
    };
}
