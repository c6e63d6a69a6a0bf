//! Raw bindings to DOCA's C API: Core (devices, progress engine, contexts, mmap, buffers),
//! Comch MsgQ with its consumers and producers, and the DPA host API.
//!
//! bindgen generates them at build time from DOCA's headers: by default the soft device's own
//! (`dpakit-emu`, linked in), with feature `doca` an installed DOCA SDK's (linked dynamically).
//! The names, types and values are DOCA's; [`soft`] adds the soft device's own controls, found
//! at run time when the library underneath is the soft device.
//!
//! Everything here is `unsafe` C. `dpakit-host` is the safe API on top.

/// What bindgen generated, re-exported at the crate root.
#[allow(
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    missing_docs,
    missing_debug_implementations,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::undocumented_unsafe_blocks
)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
}
pub use generated::*;

pub mod soft;

// The soft device is linked in through its Rust crate; naming it makes rustc link it.
#[cfg(all(feature = "soft", not(feature = "doca")))]
extern crate dpakit_emu as _;

/// Compile-time proof that the soft device defines every bound function with exactly the
/// signature its header declares.
#[cfg(all(feature = "soft", not(feature = "doca")))]
#[allow(unused_imports, non_camel_case_types, clippy::all)]
mod sig_check {
    use ::dpakit_emu::capi::types::*;
    include!(concat!(env!("OUT_DIR"), "/sig_check.rs"));
}
