//! DPAs and what runs on them: DPAs (app, start and stop, scheduling, workers, trace, RPC,
//! EU affinities), device memory, threads, DPA completions and notification completions
//! (codes 24 to 29).

use crate::capi::{K, World};
use crate::support::Bytes;
use crate::{ignore, kernel, out, size};
use dpakit_sys::*;
use std::ptr::null_mut;

pub fn create(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any device handle; the out-parameter is a local or NULL (then `dpa` stays
    // NULL, which the scheduling call refuses).
    unsafe {
        let mut dpa = null_mut();
        doca_dpa_create(w.one(b, K::Dev), out(b, &mut dpa));
        w.add(K::Dpa, dpa.cast());
        // Worker threads busy-poll: deterministic steps keep inputs fast and reproducible, so
        // most DPAs use them.
        if !b.u8().is_multiple_of(8) {
            dpakit_soft_dpa_set_sched_mode(dpa, DPAKIT_SOFT_SCHED_DETERMINISTIC, 1);
        }
    }
}

/// A started DPA with the kit's app, stepped deterministically (a happy path).
pub fn create_started(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any device handle, the kit's app; the out-parameter is a local.
    unsafe {
        let mut dpa = null_mut();
        if doca_dpa_create(w.one(b, K::Dev), &mut dpa) == DOCA_SUCCESS {
            w.add(K::Dpa, dpa.cast());
            doca_dpa_set_app(dpa.cast(), dpakit_kernels::APP.raw().cast());
            dpakit_soft_dpa_set_sched_mode(dpa, DPAKIT_SOFT_SCHED_DETERMINISTIC, 1);
            doca_dpa_start(dpa);
        }
    }
}

pub fn dpa_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any DPA and affinity handles, kernels or not, and device addresses (all
    // checked); the app is the kit's, NULL or a `w.near` address the soft device rejects;
    // out-parameters and the trace, error and CPU buffers are locals at least as long as the
    // lengths given.
    unsafe {
        let d = w.one::<doca_dpa>(b, K::Dpa);
        let (mut h, mut eus) = (0u64, 0u32);
        match b.u8() % 14 {
            0 => ignore(doca_dpa_destroy(d)),
            1 | 2 => {
                let app = match b.u8() % 4 {
                    0 => w.near(b),
                    1 => null_mut(),
                    _ => dpakit_kernels::APP.raw(),
                };
                doca_dpa_set_app(d, app.cast());
            }
            3 | 4 => ignore(doca_dpa_start(d)),
            5 => ignore(doca_dpa_stop(d)),
            6 => {
                doca_dpa_get_dpa_handle(d, out(b, &mut h));
                doca_dpa_get_total_num_eus_available(d, out(b, &mut eus));
            }
            7 => {
                // Deterministic mostly: no worker threads, reproducible runs.
                let mode = if b.u8().is_multiple_of(8) {
                    b.u32() % 4
                } else {
                    DPAKIT_SOFT_SCHED_DETERMINISTIC
                };
                dpakit_soft_dpa_set_sched_mode(d, mode, b.u64());
            }
            8 => {
                // A few workers at most: each busy-polls a core of this 2-core budget.
                let n = [0, 1, 2, 3, 257, u32::MAX][usize::from(b.u8() % 6)];
                dpakit_soft_dpa_set_num_workers(d, n);
            }
            9 => {
                let cpus = [0u32, 1, 4096];
                dpakit_soft_dpa_set_worker_cpus(d, cpus.as_ptr(), u32::from(b.u8() % 4));
            }
            10 => {
                let mut ran = 0u8;
                for _ in 0..b.u8() % 16 {
                    dpakit_soft_dpa_step(d, out(b, &mut ran));
                }
            }
            11 => {
                let mut events = [dpakit_soft_trace_event::default(); 8];
                let (mut n, mut stats) = (0usize, dpakit_soft_dpa_stats::default());
                dpakit_soft_dpa_get_trace(
                    d,
                    events.as_mut_ptr(),
                    usize::from(b.u8() % 9),
                    out(b, &mut n),
                );
                dpakit_soft_dpa_get_stats(d, out(b, &mut stats));
                let mut msg = [0 as std::ffi::c_char; 64];
                dpakit_soft_dpa_get_error(d, msg.as_mut_ptr(), usize::from(b.u8() % 65));
            }
            12 => {
                let mut ret = 0u64;
                let (a0, a1) = (w.dev_ptr(b), u64::from(b.u8()));
                doca_dpa_rpc(d, kernel(b), out(b, &mut ret), a0, a1);
            }
            _ => {
                let mut aff = null_mut();
                match b.u8() % 3 {
                    0 => {
                        doca_dpa_eu_affinity_create(d, out(b, &mut aff));
                        w.add(K::Affinity, aff.cast());
                    }
                    1 => ignore(doca_dpa_eu_affinity_set(
                        w.one(b, K::Affinity),
                        b.u32() % 300,
                    )),
                    _ => ignore(doca_dpa_eu_affinity_destroy(w.one(b, K::Affinity))),
                }
            }
        }
    }
}

pub fn dpa_memory(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any DPA handle and device addresses (checked); host ranges lie in the world's
    // memory; out-parameters are locals.
    unsafe {
        let d = w.one::<doca_dpa>(b, K::Dpa);
        match b.u8() % 4 {
            0 => {
                let mut p = 0u64;
                let len = if b.bool() {
                    size(b) as usize
                } else {
                    b.u64() as usize
                };
                if doca_dpa_mem_alloc(d, len, out(b, &mut p)) == DOCA_SUCCESS {
                    w.dev_ptrs.push(p);
                }
            }
            1 => ignore(doca_dpa_mem_free(d, w.dev_ptr(b))),
            2 => {
                let (src, len) = w.range(b);
                doca_dpa_h2d_memcpy(d, w.dev_ptr(b), src.cast(), len);
            }
            _ => {
                let (dst, len) = w.range(b);
                doca_dpa_d2h_memcpy(d, dst.cast(), w.dev_ptr(b), len);
            }
        }
    }
}

pub fn thread_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any thread, DPA and affinity handles, kernels or not, and device addresses
    // (all checked); out-parameters are locals.
    unsafe {
        let t = w.one::<doca_dpa_thread>(b, K::Thread);
        match b.u8() % 9 {
            0 | 1 => {
                let mut n = null_mut();
                doca_dpa_thread_create(w.one(b, K::Dpa), out(b, &mut n));
                w.add(K::Thread, n.cast());
            }
            2 => ignore(doca_dpa_thread_destroy(t)),
            3 => ignore(doca_dpa_thread_set_func_arg(t, kernel(b), w.dev_ptr(b))),
            4 => ignore(doca_dpa_thread_set_local_storage(t, w.dev_ptr(b))),
            5 => ignore(doca_dpa_thread_set_affinity(t, w.one(b, K::Affinity))),
            6 => ignore(doca_dpa_thread_start(t)),
            7 => ignore(doca_dpa_thread_run(t)),
            _ => ignore(doca_dpa_thread_stop(t)),
        }
    }
}

pub fn dpa_comp_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any completion, DPA and thread handles; out-parameters are locals.
    unsafe {
        let c = w.one::<doca_dpa_completion>(b, K::DpaComp);
        let mut h = 0u64;
        match b.u8() % 6 {
            0 => {
                let mut n = null_mut();
                doca_dpa_completion_create(w.one(b, K::Dpa), size(b), out(b, &mut n));
                w.add(K::DpaComp, n.cast());
            }
            1 => ignore(doca_dpa_completion_destroy(c)),
            2 => ignore(doca_dpa_completion_set_thread(c, w.one(b, K::Thread))),
            3 => ignore(doca_dpa_completion_start(c)),
            4 => ignore(doca_dpa_completion_stop(c)),
            _ => ignore(doca_dpa_completion_get_dpa_handle(c, out(b, &mut h))),
        }
    }
}

pub fn notif_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any notification, DPA and thread handles; out-parameters are locals.
    unsafe {
        let c = w.one::<doca_dpa_notification_completion>(b, K::Notif);
        let mut h = 0u64;
        match b.u8() % 5 {
            0 => {
                let mut n = null_mut();
                doca_dpa_notification_completion_create(
                    w.one(b, K::Dpa),
                    w.one(b, K::Thread),
                    out(b, &mut n),
                );
                w.add(K::Notif, n.cast());
            }
            1 => ignore(doca_dpa_notification_completion_destroy(c)),
            2 => ignore(doca_dpa_notification_completion_start(c)),
            3 => ignore(doca_dpa_notification_completion_stop(c)),
            _ => ignore(doca_dpa_notification_completion_get_dpa_handle(
                c,
                out(b, &mut h),
            )),
        }
    }
}
