//! dpakit: offload datapath loops to the BlueField DPA from Rust.
//!
//! This facade re-exports the host API ([`dpakit_host`]) and the shared ABI ([`abi`]).
pub use dpakit_abi as abi;
pub use dpakit_host::*;
