//! DOCA's C headers as the soft device declares them: the host API (`doca_*.h`), the device API
//! kernels include (`doca_dpa_dev*.h`, `dpaintrin.h`) and the soft device's own controls
//! (`dpakit_soft.h`), in `include/`. Every crate that compiles C against DOCA or binds it (the
//! model, the C API, the kit's C kernels, `dpakit-sys`) depends on this crate and reads the
//! directory its build script publishes (`links = "dpakit_doca_headers"`:
//! `DEP_DPAKIT_DOCA_HEADERS_INCLUDE` in a dependent's build script), never a path into another
//! crate's folder. Programs such as `cargo xtask soft-sdk` read [`INCLUDE_DIR`].
//!
//! `no_std` and empty of code: the kit's kernel crates depend on it for the DPA too.
#![no_std]

/// The published copy of `include/` (in this crate's `OUT_DIR`), current for the checkout that
/// built it: the same directory the dependents' build scripts read.
pub const INCLUDE_DIR: &str = concat!(env!("OUT_DIR"), "/include");
