//! The soft device's own controls (`dpakit_soft.h`), reached at run time.
//!
//! They exist only when the DOCA library underneath is the soft device: linked in (the default
//! configuration) or loaded as `libdoca_*.so` from the soft SDK prefix (feature `doca` pointed at
//! `cargo xtask soft-sdk`'s output). With DOCA's own libraries [`api`] returns `None`.

use crate::{doca_dpa, doca_dpa_thread, doca_error_t};
use core::ffi::c_char;

/// `DPAKIT_SOFT_SCHED_BUSY_POLL`.
pub const SCHED_BUSY_POLL: u32 = 0;
/// `DPAKIT_SOFT_SCHED_SLEEP`.
pub const SCHED_SLEEP: u32 = 1;
/// `DPAKIT_SOFT_SCHED_DETERMINISTIC`.
pub const SCHED_DETERMINISTIC: u32 = 2;

/// `DPAKIT_SOFT_EXEC_NATIVE`.
pub const EXEC_NATIVE: u32 = 0;
/// `DPAKIT_SOFT_EXEC_ISA`.
pub const EXEC_ISA: u32 = 1;

#[cfg(all(feature = "soft", not(feature = "doca")))]
pub use crate::{dpakit_soft_dpa_stats, dpakit_soft_isa_profile, dpakit_soft_trace_event};

/// `struct dpakit_soft_isa_profile`.
#[cfg(any(feature = "doca", not(feature = "soft")))]
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Default, Copy, Clone)]
pub struct dpakit_soft_isa_profile {
    pub activations: u64,
    pub instructions: u64,
    pub max_instructions: u64,
    pub device_calls: u64,
}

/// `struct dpakit_soft_trace_event`.
#[cfg(any(feature = "doca", not(feature = "soft")))]
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Default, Copy, Clone)]
pub struct dpakit_soft_trace_event {
    pub thread: u32,
    pub ending: u32,
    pub activation: u64,
}

/// `struct dpakit_soft_dpa_stats`.
#[cfg(any(feature = "doca", not(feature = "soft")))]
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Default, Copy, Clone)]
pub struct dpakit_soft_dpa_stats {
    pub activations: u64,
    pub workers: u32,
    pub reserved: u32,
}

/// The `dpakit_soft_*` functions.
#[allow(missing_docs)]
#[derive(Debug)]
pub struct SoftApi {
    pub dpa_set_sched_mode: unsafe extern "C" fn(*mut doca_dpa, u32, u64) -> doca_error_t,
    pub dpa_set_num_workers: unsafe extern "C" fn(*mut doca_dpa, u32) -> doca_error_t,
    pub dpa_set_worker_cpus: unsafe extern "C" fn(*mut doca_dpa, *const u32, u32) -> doca_error_t,
    pub dpa_step: unsafe extern "C" fn(*mut doca_dpa, *mut u8) -> doca_error_t,
    pub dpa_get_trace: unsafe extern "C" fn(
        *mut doca_dpa,
        *mut dpakit_soft_trace_event,
        usize,
        *mut usize,
    ) -> doca_error_t,
    pub dpa_get_stats:
        unsafe extern "C" fn(*mut doca_dpa, *mut dpakit_soft_dpa_stats) -> doca_error_t,
    pub dpa_get_max_completions_per_thread:
        unsafe extern "C" fn(*mut doca_dpa, *mut u32) -> doca_error_t,
    pub dpa_get_error: unsafe extern "C" fn(*mut doca_dpa, *mut c_char, usize) -> doca_error_t,
    pub last_error: unsafe extern "C" fn(*mut c_char, usize) -> doca_error_t,
    pub pin_current_thread: unsafe extern "C" fn(u32) -> doca_error_t,
    pub set_gdb: unsafe extern "C" fn(*const c_char) -> doca_error_t,
    pub dpa_set_exec_mode: unsafe extern "C" fn(*mut doca_dpa, u32) -> doca_error_t,
    pub dpa_set_isa_image: unsafe extern "C" fn(*mut doca_dpa, *const c_char) -> doca_error_t,
    pub dpa_set_isa_budget: unsafe extern "C" fn(*mut doca_dpa, u64) -> doca_error_t,
    pub dpa_thread_get_isa_profile:
        unsafe extern "C" fn(*mut doca_dpa_thread, *mut dpakit_soft_isa_profile) -> doca_error_t,
    pub dpa_thread_get_isa_calls:
        unsafe extern "C" fn(*mut doca_dpa_thread, *mut u64, usize, *mut usize) -> doca_error_t,
    pub device_function_name: unsafe extern "C" fn(usize) -> *const c_char,
    pub dpa_thread_describe:
        unsafe extern "C" fn(*const doca_dpa_thread, *mut c_char, usize) -> doca_error_t,
    pub describe_long_activations: unsafe extern "C" fn(u64, *mut c_char, usize) -> doca_error_t,
}

/// The soft device's controls, or `None` when the library underneath is not the soft device.
#[cfg(all(feature = "soft", not(feature = "doca")))]
pub fn api() -> Option<&'static SoftApi> {
    static API: SoftApi = SoftApi {
        dpa_set_sched_mode: crate::dpakit_soft_dpa_set_sched_mode,
        dpa_set_num_workers: crate::dpakit_soft_dpa_set_num_workers,
        dpa_set_worker_cpus: crate::dpakit_soft_dpa_set_worker_cpus,
        dpa_step: crate::dpakit_soft_dpa_step,
        dpa_get_trace: crate::dpakit_soft_dpa_get_trace,
        dpa_get_stats: crate::dpakit_soft_dpa_get_stats,
        dpa_get_max_completions_per_thread: crate::dpakit_soft_dpa_get_max_completions_per_thread,
        dpa_get_error: crate::dpakit_soft_dpa_get_error,
        last_error: crate::dpakit_soft_last_error,
        pin_current_thread: crate::dpakit_soft_pin_current_thread,
        set_gdb: crate::dpakit_soft_set_gdb,
        dpa_set_exec_mode: crate::dpakit_soft_dpa_set_exec_mode,
        dpa_set_isa_image: crate::dpakit_soft_dpa_set_isa_image,
        dpa_set_isa_budget: crate::dpakit_soft_dpa_set_isa_budget,
        dpa_thread_get_isa_profile: crate::dpakit_soft_dpa_thread_get_isa_profile,
        dpa_thread_get_isa_calls: crate::dpakit_soft_dpa_thread_get_isa_calls,
        device_function_name: crate::dpakit_soft_device_function_name,
        dpa_thread_describe: crate::dpakit_soft_dpa_thread_describe,
        describe_long_activations: crate::dpakit_soft_describe_long_activations,
    };
    Some(&API)
}

/// The soft device's controls, or `None` when the library underneath is not the soft device.
#[cfg(any(feature = "doca", not(feature = "soft")))]
// Each transmute's target is the type of the field it initialises.
#[allow(clippy::missing_transmute_annotations)]
pub fn api() -> Option<&'static SoftApi> {
    use std::sync::OnceLock;
    static API: OnceLock<Option<SoftApi>> = OnceLock::new();
    API.get_or_init(|| {
        macro_rules! find {
            ($name:literal) => {{
                // SAFETY: dlsym with a NUL-terminated name; the handle is the global scope.
                let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, $name.as_ptr()) };
                if f.is_null() {
                    return None;
                }
                // SAFETY: the soft device defines the symbol with the signature of
                // dpakit_soft.h, which the field's type spells out.
                unsafe { std::mem::transmute::<*mut libc::c_void, _>(f) }
            }};
        }
        Some(SoftApi {
            dpa_set_sched_mode: find!(c"dpakit_soft_dpa_set_sched_mode"),
            dpa_set_num_workers: find!(c"dpakit_soft_dpa_set_num_workers"),
            dpa_set_worker_cpus: find!(c"dpakit_soft_dpa_set_worker_cpus"),
            dpa_step: find!(c"dpakit_soft_dpa_step"),
            dpa_get_trace: find!(c"dpakit_soft_dpa_get_trace"),
            dpa_get_stats: find!(c"dpakit_soft_dpa_get_stats"),
            dpa_get_max_completions_per_thread: find!(
                c"dpakit_soft_dpa_get_max_completions_per_thread"
            ),
            dpa_get_error: find!(c"dpakit_soft_dpa_get_error"),
            last_error: find!(c"dpakit_soft_last_error"),
            pin_current_thread: find!(c"dpakit_soft_pin_current_thread"),
            set_gdb: find!(c"dpakit_soft_set_gdb"),
            dpa_set_exec_mode: find!(c"dpakit_soft_dpa_set_exec_mode"),
            dpa_set_isa_image: find!(c"dpakit_soft_dpa_set_isa_image"),
            dpa_set_isa_budget: find!(c"dpakit_soft_dpa_set_isa_budget"),
            dpa_thread_get_isa_profile: find!(c"dpakit_soft_dpa_thread_get_isa_profile"),
            dpa_thread_get_isa_calls: find!(c"dpakit_soft_dpa_thread_get_isa_calls"),
            device_function_name: find!(c"dpakit_soft_device_function_name"),
            dpa_thread_describe: find!(c"dpakit_soft_dpa_thread_describe"),
            describe_long_activations: find!(c"dpakit_soft_describe_long_activations"),
        })
    })
    .as_ref()
}
