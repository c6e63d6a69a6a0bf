//! `dpakit_soft.h`, ISA mode: run the app's DPA image in the interpreter, and read what it
//! counted.

use super::types::*;
use super::{call, dpa, dpa_thread, out};
use crate::dpa::{ExecMode, Profile};
use crate::error::{Result, bail};
use std::ffi::{CStr, c_char};

/// Every DOCA device function's C name, NUL-terminated, in `DEVICE_API` order.
fn function_names() -> &'static [&'static CStr] {
    use std::sync::OnceLock;
    static NAMES: OnceLock<Vec<&'static CStr>> = OnceLock::new();
    NAMES.get_or_init(|| {
        dpakit_abi::device::DEVICE_API
            .iter()
            .map(|name| {
                let owned = std::ffi::CString::new(*name).expect("a C identifier has no NUL");
                &*Box::leak(owned.into_boxed_c_str())
            })
            .collect()
    })
}

/// `dpakit_soft_dpa_set_exec_mode`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_dpa_set_exec_mode(
    dpa: *mut doca_dpa,
    mode: dpakit_soft_exec_mode,
) -> doca_error_t {
    call("dpakit_soft_dpa_set_exec_mode", || {
        let d = dpa::dpa(dpa, "dpa")?;
        d.require_idle("setting the execution mode")?;
        d.soft.borrow_mut().exec = match mode {
            0 => ExecMode::Native,
            1 => ExecMode::Isa,
            other => bail!(
                InvalidValue,
                "execution mode {other} is not DPAKIT_SOFT_EXEC_NATIVE (0) or _ISA (1)"
            ),
        };
        Ok(())
    })
}

/// `dpakit_soft_dpa_set_isa_image`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_dpa_set_isa_image(
    dpa: *mut doca_dpa,
    path: *const c_char,
) -> doca_error_t {
    call("dpakit_soft_dpa_set_isa_image", || {
        let d = dpa::dpa(dpa, "dpa")?;
        d.require_idle("naming the DPA image")?;
        let path = crate::checked_read::read_c_string_limited(path, 4096, "path")?;
        if path.is_empty() {
            bail!(InvalidValue, "path is empty: name the DPA image file");
        }
        d.soft.borrow_mut().isa.image = Some(path.into());
        Ok(())
    })
}

/// `dpakit_soft_dpa_set_isa_budget`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_dpa_set_isa_budget(
    dpa: *mut doca_dpa,
    max_instructions: u64,
) -> doca_error_t {
    call("dpakit_soft_dpa_set_isa_budget", || {
        let d = dpa::dpa(dpa, "dpa")?;
        d.require_idle("setting the ISA instruction budget")?;
        if max_instructions == 0 {
            bail!(InvalidValue, "an instruction budget of 0 runs nothing");
        }
        d.soft.borrow_mut().isa.budget = max_instructions;
        Ok(())
    })
}

/// The ISA profile of a started thread; NOT_SUPPORTED in native mode.
fn thread_profile(thread: *mut doca_dpa_thread) -> Result<Profile> {
    let t = dpa_thread::thread(thread, "thread")?;
    let model = t.model()?;
    match model.isa_profile() {
        Some(profile) => Ok(profile),
        None => bail!(
            NotSupported,
            "the thread's DPA context runs kernels natively: instructions are counted in ISA \
             mode (dpakit_soft_dpa_set_exec_mode or DPAKIT_SOFT_EXEC=isa)"
        ),
    }
}

/// `dpakit_soft_dpa_thread_get_isa_profile`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_dpa_thread_get_isa_profile(
    thread: *mut doca_dpa_thread,
    profile: *mut dpakit_soft_isa_profile,
) -> doca_error_t {
    call("dpakit_soft_dpa_thread_get_isa_profile", || {
        let p = thread_profile(thread)?;
        let value = dpakit_soft_isa_profile {
            activations: p.activations,
            instructions: p.instructions,
            max_instructions: p.max_instructions,
            device_calls: p.device_calls(),
        };
        // SAFETY: the caller passes a writable profile or NULL (refused).
        unsafe { out(profile, "profile", value) }
    })
}

/// `dpakit_soft_dpa_thread_get_isa_calls`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_dpa_thread_get_isa_calls(
    thread: *mut doca_dpa_thread,
    counts: *mut u64,
    capacity: usize,
    num_functions: *mut usize,
) -> doca_error_t {
    call("dpakit_soft_dpa_thread_get_isa_calls", || {
        let p = thread_profile(thread)?;
        if counts.is_null() && capacity > 0 {
            bail!(InvalidValue, "counts is NULL with a capacity of {capacity}");
        }
        for (i, &n) in p.calls.iter().take(capacity).enumerate() {
            // SAFETY: the caller passes room for `capacity` counts.
            unsafe { counts.add(i).write(n) };
        }
        // SAFETY: the caller passes a writable count or NULL (refused).
        unsafe { out(num_functions, "num_functions", p.calls.len()) }
    })
}

/// `dpakit_soft_device_function_name`.
#[unsafe(no_mangle)]
pub extern "C" fn dpakit_soft_device_function_name(index: usize) -> *const c_char {
    function_names()
        .get(index)
        .map_or(std::ptr::null(), |name| name.as_ptr())
}
