//! `dpakit_soft.h`: the soft device's own controls, and the environment variables an
//! unmodified DOCA program can set them with.

use super::dpa;
use super::soft_config::{MAX_WORKERS, check_cpu};
use super::types::*;
use super::{call, last_error, out};
use crate::dpa::{Ending, SchedMode, pin_current_thread};
use crate::error::{ErrorCode, bail};
use std::ffi::c_char;

/// `dpakit_soft_dpa_set_sched_mode`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_dpa_set_sched_mode(
    dpa: *mut doca_dpa,
    mode: dpakit_soft_sched_mode,
    seed: u64,
) -> doca_error_t {
    call("dpakit_soft_dpa_set_sched_mode", || {
        let d = dpa::dpa(dpa, "dpa")?;
        d.require_idle("setting the scheduling mode")?;
        d.soft.borrow_mut().mode = match mode {
            0 => SchedMode::BusyPoll,
            1 => SchedMode::Sleep,
            2 => SchedMode::Deterministic { seed },
            other => bail!(
                InvalidValue,
                "scheduling mode {other} is not DPAKIT_SOFT_SCHED_BUSY_POLL (0), _SLEEP (1) or \
                 _DETERMINISTIC (2)"
            ),
        };
        Ok(())
    })
}

/// `dpakit_soft_dpa_set_num_workers`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_dpa_set_num_workers(
    dpa: *mut doca_dpa,
    num_workers: u32,
) -> doca_error_t {
    call("dpakit_soft_dpa_set_num_workers", || {
        let d = dpa::dpa(dpa, "dpa")?;
        d.require_idle("setting the number of workers")?;
        let n = num_workers as usize;
        if !(1..=MAX_WORKERS).contains(&n) {
            bail!(
                InvalidValue,
                "{num_workers} workers: a DPA context runs on 1..={MAX_WORKERS} workers"
            );
        }
        d.soft.borrow_mut().workers = Some(n);
        Ok(())
    })
}

/// `dpakit_soft_dpa_set_worker_cpus`: `num_cpus` 0 clears the pinning.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_dpa_set_worker_cpus(
    dpa: *mut doca_dpa,
    cpus: *const u32,
    num_cpus: u32,
) -> doca_error_t {
    call("dpakit_soft_dpa_set_worker_cpus", || {
        let d = dpa::dpa(dpa, "dpa")?;
        d.require_idle("pinning its workers")?;
        let list: Vec<usize> = if num_cpus == 0 {
            Vec::new()
        } else {
            super::non_null(cpus, "cpus")?;
            // SAFETY: `num_cpus` readable values at `cpus` by the C contract.
            unsafe { std::slice::from_raw_parts(cpus, num_cpus as usize) }
                .iter()
                .map(|&c| c as usize)
                .collect()
        };
        for &cpu in &list {
            check_cpu(cpu)?;
        }
        d.soft.borrow_mut().pin = list;
        Ok(())
    })
}

/// `dpakit_soft_dpa_step`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_dpa_step(dpa: *mut doca_dpa, ran: *mut u8) -> doca_error_t {
    call("dpakit_soft_dpa_step", || {
        let d = dpa::dpa(dpa, "dpa")?;
        super::non_null(ran, "ran")?;
        let did = d.model()?.step();
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(ran, "ran", u8::from(did)) }
    })
}

/// `dpakit_soft_dpa_get_trace`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_dpa_get_trace(
    dpa: *mut doca_dpa,
    events: *mut dpakit_soft_trace_event,
    capacity: usize,
    num_events: *mut usize,
) -> doca_error_t {
    call("dpakit_soft_dpa_get_trace", || {
        let d = dpa::dpa(dpa, "dpa")?;
        super::non_null(num_events, "num_events")?;
        if capacity > 0 {
            super::non_null(events, "events")?;
        }
        let trace = d.model()?.trace();
        for (i, e) in trace.iter().take(capacity).enumerate() {
            let ending = match e.ending {
                Ending::Reschedule => 0,
                Ending::Return => 1,
                Ending::Finish => 2,
                Ending::Fault => 3,
            };
            // SAFETY: `capacity` writable elements at `events` by the C contract.
            unsafe {
                events.add(i).write(dpakit_soft_trace_event {
                    thread: e.thread as u32,
                    ending,
                    activation: e.activation,
                })
            };
        }
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(num_events, "num_events", trace.len()) }
    })
}

/// `dpakit_soft_dpa_get_max_completions_per_thread`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_dpa_get_max_completions_per_thread(
    dpa: *mut doca_dpa,
    max_completions: *mut u32,
) -> doca_error_t {
    call("dpakit_soft_dpa_get_max_completions_per_thread", || {
        dpa::dpa(dpa, "dpa")?;
        let max = crate::limits::DPA_THREAD_MAX_COMPLETIONS as u32;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(max_completions, "max_completions", max) }
    })
}

/// `dpakit_soft_dpa_get_stats`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_dpa_get_stats(
    dpa: *mut doca_dpa,
    stats: *mut dpakit_soft_dpa_stats,
) -> doca_error_t {
    call("dpakit_soft_dpa_get_stats", || {
        let s = dpa::dpa(dpa, "dpa")?.model()?.stats();
        // SAFETY: writable by the C contract (checked non-null).
        unsafe {
            out(
                stats,
                "stats",
                dpakit_soft_dpa_stats {
                    activations: s.activations,
                    workers: s.workers as u32,
                    reserved: 0,
                },
            )
        }
    })
}

/// Copies `text` into `message` (truncated to `size` bytes with its NUL); NULL skips it.
///
/// # Safety
/// A non-null `message` must be valid for `size` bytes of writes.
unsafe fn copy_truncated(message: *mut c_char, size: usize, text: &str) {
    if message.is_null() || size == 0 {
        return;
    }
    let n = text.len().min(size - 1);
    // SAFETY: `n + 1 <= size` writable bytes by the caller's contract.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), message.cast::<u8>(), n);
        *message.add(n) = 0;
    }
}

/// `dpakit_soft_dpa_get_error`: the context's fatal error (`DOCA_SUCCESS` while healthy).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_dpa_get_error(
    dpa: *mut doca_dpa,
    message: *mut c_char,
    size: usize,
) -> doca_error_t {
    let d = match dpa::dpa(dpa, "dpa") {
        Ok(d) => d,
        Err(e) => return call("dpakit_soft_dpa_get_error", || Err(e)),
    };
    let fatal = d.model().ok().and_then(|m| m.error());
    match fatal {
        Some(e) => {
            // SAFETY: `size` writable bytes by the C contract.
            unsafe { copy_truncated(message, size, e.message()) };
            e.code().raw() as doca_error_t
        }
        None => {
            // SAFETY: as above.
            unsafe { copy_truncated(message, size, "") };
            ErrorCode::Success.raw() as doca_error_t
        }
    }
}

/// `dpakit_soft_dpa_thread_describe`: what a started thread is doing, as text.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_dpa_thread_describe(
    dpa_thread: *const doca_dpa_thread,
    text: *mut c_char,
    size: usize,
) -> doca_error_t {
    call("dpakit_soft_dpa_thread_describe", || {
        let t = super::dpa_thread::thread(dpa_thread, "dpa_thread")?;
        super::non_null(text, "text")?;
        let described = t.model()?.describe();
        // SAFETY: `size` writable bytes at `text` by the C contract.
        unsafe { copy_truncated(text, size, &described) };
        Ok(())
    })
}

/// `dpakit_soft_describe_long_activations`: kernels of the process in one activation for
/// `min_usec` µs or longer, a line each.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_describe_long_activations(
    min_usec: u64,
    text: *mut c_char,
    size: usize,
) -> doca_error_t {
    call("dpakit_soft_describe_long_activations", || {
        super::non_null(text, "text")?;
        let min = std::time::Duration::from_micros(min_usec);
        let described = crate::dpa::long_activations(min).join("\n");
        // SAFETY: `size` writable bytes at `text` by the C contract.
        unsafe { copy_truncated(text, size, &described) };
        Ok(())
    })
}

/// `dpakit_soft_last_error`: why the calling thread's last failed call failed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_last_error(message: *mut c_char, size: usize) -> doca_error_t {
    match last_error() {
        Some((code, text)) => {
            // SAFETY: `size` writable bytes by the C contract.
            unsafe { copy_truncated(message, size, &text) };
            code.raw() as doca_error_t
        }
        None => {
            // SAFETY: as above.
            unsafe { copy_truncated(message, size, "") };
            0
        }
    }
}

/// `dpakit_soft_set_gdb`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_set_gdb(address: *const c_char) -> doca_error_t {
    call("dpakit_soft_set_gdb", || {
        let address = if address.is_null() {
            None
        } else {
            Some(crate::checked_read::read_c_string_limited(
                address, 256, "address",
            )?)
        };
        crate::dpa::set_gdb_address(address.as_deref())
    })
}

/// `dpakit_soft_pin_current_thread`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_pin_current_thread(cpu: u32) -> doca_error_t {
    call("dpakit_soft_pin_current_thread", || {
        check_cpu(cpu as usize)?;
        pin_current_thread(cpu as usize);
        Ok(())
    })
}
