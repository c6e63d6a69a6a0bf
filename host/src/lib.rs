//! The safe host/Arm API of dpakit.
//!
//! The object model mirrors DOCA name for name — devices ([`dev`]), progress engine ([`pe`]),
//! contexts ([`ctx`]), memory maps ([`mmap`]) and buffers ([`buf`]), MsgQs ([`msgq`]) and their
//! endpoints ([`comch`]), the DPA ([`dpa`]) — configured with builders, torn down by `Drop`, and
//! every fallible call returns [`Result<T, Error>`](Result), where [`Error`] carries DOCA's
//! `doca_error_t` code ([`ErrorCode`]) and a message naming the rule that was broken.
//!
//! The backend is the soft device (`dpakit-emu`): everything runs on any Linux machine. Kernels
//! come from `dpakit-kernels` as typed references ([`kernels`]); [`kit_app`] is the DPA app
//! holding all of them. [`MsgqPath`] wires the usual CPU → DPA → CPU conversation in one call and
//! offers blocking send/receive helpers built on progress and the PE's notification handle.
#![warn(missing_docs)]

mod path;

pub use dpakit_abi as abi;
pub use dpakit_abi::{ErrorCode, ImmMessage, SubmitFlags};
pub use dpakit_emu::Error;
pub use dpakit_emu::{buf, comch, ctx, dev, dpa, limits, mmap, msgq, pe};
pub use path::{MsgqPath, MsgqPathBuilder, Received};

/// The kit's kernels, as typed references (re-exported from `dpakit-kernels`).
pub mod kernels {
    pub use dpakit_kernels::{DMA_OFFLOAD, ECHO, PING_PONG, PREPOST_CREDITS, RANKED_ECHO, SINK};
}

/// The result of a dpakit call.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// The DPA app containing every kernel of `dpakit-kernels`.
pub fn kit_app() -> dpa::App {
    use kernels::*;
    dpa::App::new("dpakit_kernels")
        .thread_kernel(&ECHO)
        .thread_kernel(&PING_PONG)
        .thread_kernel(&DMA_OFFLOAD)
        .thread_kernel(&RANKED_ECHO)
        .thread_kernel(&SINK)
        .rpc_kernel(&PREPOST_CREDITS)
}

/// Opens the first host-side device with a DPA in the soft device's topology — what a program
/// does before `Dpa::builder`: list devices, pick one that supports the DPA, open it.
pub fn open_dpa_dev() -> Result<dev::Dev> {
    let candidates = dev::Topology::global().devinfo_list_for(dev::Side::Host);
    let info = candidates
        .iter()
        .find(|info| info.dpa_cap_is_supported().is_ok())
        .ok_or_else(|| {
            Error::new(
                ErrorCode::NotFound,
                "no host-side device with a DPA in the topology",
            )
        })?;
    dev::Dev::open(info)
}
