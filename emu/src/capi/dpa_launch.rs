//! `doca_dpa_kernel_launch_update_set` / `_add` (the Rust side: the variadic C half in
//! `csrc/launch.c` asks how to read the kernel's arguments, then hands them over), and the
//! launch limits `doca_dpa_get_max_threads_per_kernel` and `doca_dpa_get_kernel_max_run_time`.

use super::dpa::dpa;
use super::sync_event::event;
use super::types::*;
use super::{call, out};
use crate::dpa::{KernelKind, LaunchEvent, launch::CompletionUpdate};
use crate::error::{ErrorCode, Result, bail, err};
use dpakit_abi::kernel::KERNEL_MAX_ARGS;
use std::ffi::{c_uint, c_ulonglong};
use std::sync::Arc;

/// The C name of the launch call `add` stands for.
fn name(add: bool) -> &'static str {
    if add {
        "doca_dpa_kernel_launch_update_add"
    } else {
        "doca_dpa_kernel_launch_update_set"
    }
}

/// How many arguments thread kernel `func` takes and which are 32-bit (the C half reads them so
/// from its variadic list). Validates the DPA and the function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_internal_launch_args(
    dpa: *mut doca_dpa,
    func: doca_dpa_func_t,
    add: bool,
    num_args: *mut u32,
    narrow_args: *mut u32,
) -> doca_error_t {
    call(name(add), || {
        let d = self::dpa(dpa, "dpa")?;
        let Some(func) = func else {
            bail!(InvalidValue, "func is NULL: pass the kernel's address");
        };
        let model = d.model()?;
        let Some(kernel) = model
            .app()
            .kernel(func as usize, KernelKind::Thread)
            .copied()
        else {
            // Let the model explain which kernels exist.
            return model.kernel_launch(func as usize, &[], 1, None, None);
        };
        // SAFETY: the C half passes its own locals.
        unsafe {
            out(num_args, "num_args", kernel.num_args)?;
            out(narrow_args, "narrow_args", kernel.narrow_args)
        }
    })
}

/// Queues the launch (the C half of both launch calls, with the arguments read).
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dpakit_soft_internal_launch(
    dpa: *mut doca_dpa,
    wait_event: *mut doca_sync_event,
    wait_threshold: u64,
    comp_event: *mut doca_sync_event,
    comp_count: u64,
    num_threads: c_uint,
    func: doca_dpa_func_t,
    add: bool,
    args: *const u64,
    num_args: u32,
) -> doca_error_t {
    call(name(add), || {
        let d = self::dpa(dpa, "dpa")?;
        let func = func.ok_or_else(|| err(ErrorCode::InvalidValue, "func is NULL"))?;
        let wait = if wait_event.is_null() {
            None
        } else {
            let value: Arc<dyn LaunchEvent> =
                event(wait_event)?.launch_value(dpa.cast(), "wait_event", false)?;
            Some((value, wait_threshold))
        };
        let completion = if comp_event.is_null() {
            None
        } else {
            let value: Arc<dyn LaunchEvent> =
                event(comp_event)?.launch_value(dpa.cast(), "comp_event", true)?;
            let how = if add {
                CompletionUpdate::Add
            } else {
                CompletionUpdate::Set
            };
            Some((value, comp_count, how))
        };
        let n = (num_args as usize).min(KERNEL_MAX_ARGS);
        let args: &[u64] = if n == 0 {
            &[]
        } else {
            super::non_null(args, "args")?;
            // SAFETY: the C half passes its array of `num_args` (at most 16) values.
            unsafe { std::slice::from_raw_parts(args, n) }
        };
        d.model()?
            .kernel_launch(func as usize, args, num_threads, wait, completion)
    })
}

/// `doca_dpa_get_max_threads_per_kernel`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_get_max_threads_per_kernel(
    dpa: *const doca_dpa,
    value: *mut c_uint,
) -> doca_error_t {
    call("doca_dpa_get_max_threads_per_kernel", || -> Result<()> {
        let n = self::dpa(dpa, "dpa")?.model()?.max_threads_per_kernel();
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(value, "value", n) }
    })
}

/// `doca_dpa_get_kernel_max_run_time`: in seconds.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_get_kernel_max_run_time(
    dpa: *const doca_dpa,
    value: *mut c_ulonglong,
) -> doca_error_t {
    call("doca_dpa_get_kernel_max_run_time", || -> Result<()> {
        let t = self::dpa(dpa, "dpa")?.model()?.kernel_max_run_time();
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(value, "value", t) }
    })
}
