//! The device-side API that DPA kernels call.
//!
//! [`sys`] declares DOCA's device functions under their C names; the modules around it wrap them
//! safely: handles are typed, immediate lengths are checked against 32 bytes before anything is
//! sent, flags are a typed [`SubmitFlags`] set, and a received immediate cannot outlive the
//! completion it belongs to.
//!
//! Kernels are declared with [`thread_kernel!`] and [`rpc_kernel!`], apps with [`dpa_app!`]: one
//! source that compiles to exported entry points for the DPA (riscv64) and, on the host, to the
//! functions the soft device runs, plus typed references ([`ThreadKernel`], [`RpcKernel`],
//! [`DpaApp`]) that host code uses to name them. With feature `doca`, host builds only declare
//! the kernels: the DPA app library (dpacc's output) provides them.
#![cfg_attr(not(test), no_std)]
#![warn(missing_docs)]

pub mod comch;
pub mod completion;
mod kernel;
pub mod log;
pub mod mmap;
pub mod panic;
pub mod runtime;
pub mod serve;
pub mod sync_event;
#[allow(non_camel_case_types)]
pub mod sys;
pub mod thread;

pub use dpakit_abi as abi;
/// The list of DOCA device functions, written once in `dpakit-abi`.
pub use dpakit_abi::for_each_device_function;
pub use dpakit_abi::kernel::{DpaApp, RawArg, RpcKernel, RpcSignature, ThreadEntry, ThreadKernel};
pub use dpakit_abi::{AbiError, ImmMessage, Immediate, MAX_IMM_DATA_LEN, Pod, SubmitFlags};

#[doc(hidden)]
pub mod __private {
    use core::ffi::CStr;

    /// A NUL-terminated string literal as a `CStr` (the macros build kernel names with it).
    pub const fn cstr(s: &'static str) -> &'static CStr {
        match CStr::from_bytes_with_nul(s.as_bytes()) {
            Ok(c) => c,
            Err(_) => panic!("kernel names are identifiers: no interior NUL"),
        }
    }

    /// `s` and a NUL in a fixed array (`N` = `s.len() + 1`; `s` must have no NUL).
    pub const fn nul_terminated<const N: usize>(s: &str) -> [u8; N] {
        let bytes = s.as_bytes();
        assert!(bytes.len() + 1 == N);
        let mut out = [0u8; N];
        let mut i = 0;
        while i < bytes.len() {
            assert!(bytes[i] != 0, "a path with a NUL byte");
            out[i] = bytes[i];
            i += 1;
        }
        out
    }

    /// The build id a kernel crate's build script set (`DPAKIT_BUILD_ID`, 16 hex digits, from
    /// `dpakit_build::build_id`), or 0 when it set none.
    pub const fn build_id(env: Option<&str>) -> u64 {
        let Some(hex) = env else { return 0 };
        let bytes = hex.as_bytes();
        assert!(
            bytes.len() == 16,
            "DPAKIT_BUILD_ID is not 16 hex digits: set it with dpakit_build::build_id"
        );
        let mut id = 0u64;
        let mut i = 0;
        while i < bytes.len() {
            let digit = match bytes[i] {
                b'0'..=b'9' => bytes[i] - b'0',
                b'a'..=b'f' => bytes[i] - b'a' + 10,
                _ => panic!(
                    "DPAKIT_BUILD_ID is not 16 hex digits: set it with dpakit_build::build_id"
                ),
            };
            id = id << 4 | digit as u64;
            i += 1;
        }
        id
    }

    /// Copies a string into a fixed array (the kernel marker records).
    pub const fn str_to_array<const N: usize>(s: &str) -> [u8; N] {
        let bytes = s.as_bytes();
        assert!(bytes.len() == N);
        let mut out = [0u8; N];
        let mut i = 0;
        while i < N {
            out[i] = bytes[i];
            i += 1;
        }
        out
    }
}
