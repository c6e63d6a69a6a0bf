//! Progress engines, the contexts they run and the tasks those submit: creating and
//! destroying PEs, PE calls, context calls and task calls on contexts and tasks of any kind,
//! and progress bursts (codes 8 to 11, 22 and 33).

use crate::capi::{CTX, K, TASK, World};
use crate::support::Bytes;
use crate::{ignore, out};
use dpakit_sys::*;
use std::ptr::null_mut;

pub fn create(w: &mut World, b: &mut Bytes<'_>) {
    let mut pe = null_mut();
    // SAFETY: the out-parameter is a local or NULL.
    unsafe { doca_pe_create(out(b, &mut pe)) };
    w.add(K::Pe, pe.cast());
}

/// Creates a PE into a valid out-parameter (a happy path).
pub fn create_valid(w: &mut World) {
    let mut pe = null_mut();
    // SAFETY: the out-parameter is a local.
    unsafe { doca_pe_create(&mut pe) };
    w.add(K::Pe, pe.cast());
}

pub fn destroy(w: &mut World, b: &mut Bytes<'_>) {
    let pe = w.one(b, K::Pe);
    // SAFETY: any PE handle.
    ignore(unsafe { doca_pe_destroy(pe) });
}

/// A PE call: connect a context, progress, notifications.
pub fn pe_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any PE and context handles; out-parameters are locals.
    unsafe {
        let pe = w.one::<doca_pe>(b, K::Pe);
        let mut handle = -1;
        match b.u8() % 5 {
            0 => ignore(doca_pe_connect_ctx(pe, w.pick(b, CTX).cast())),
            1 => {
                for _ in 0..b.u8() % 16 {
                    doca_pe_progress(pe);
                }
            }
            2 => ignore(doca_pe_get_notification_handle(pe, out(b, &mut handle))),
            3 => ignore(doca_pe_request_notification(pe)),
            _ => {
                doca_pe_get_notification_handle(pe, &mut handle);
                let h = if b.bool() { handle } else { b.u8() as i32 - 2 };
                doca_pe_clear_notification(pe, h);
            }
        }
    }
}

unsafe extern "C" fn state_changed(_: doca_data, ctx: *mut doca_ctx, _: u32, _: u32) {
    // SAFETY: the context the soft device passed.
    unsafe { crate::reenter::act(ctx, null_mut(), null_mut()) };
}

/// A context call, on a context of any kind.
pub fn ctx_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any context and DPA handles; out-parameters are locals; the callback is a
    // plain function.
    unsafe {
        let ctx = w.pick(b, CTX).cast::<doca_ctx>();
        let (mut state, mut n, mut ud) = (0u32, 0usize, doca_data { u64_: 0 });
        match b.u8() % 8 {
            0 | 1 => ignore(doca_ctx_start(ctx)),
            2 => ignore(doca_ctx_stop(ctx)),
            3 => ignore(doca_ctx_get_state(ctx, out(b, &mut state))),
            4 => ignore(doca_ctx_get_num_inflight_tasks(ctx, out(b, &mut n))),
            5 => {
                doca_ctx_set_user_data(ctx, doca_data { u64_: b.u64() });
                doca_ctx_get_user_data(ctx, out(b, &mut ud));
            }
            6 => ignore(doca_ctx_set_state_changed_cb(
                ctx,
                if b.bool() { Some(state_changed) } else { None },
            )),
            _ => ignore(doca_ctx_set_datapath_on_dpa(ctx, w.one(b, K::Dpa))),
        }
    }
}

/// A task call, on a task of any kind.
pub fn task_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any task handles (a task freed twice is the soft device's to refuse).
    unsafe {
        let t = w.pick(b, TASK).cast::<doca_task>();
        match b.u8() % 6 {
            0 | 1 => ignore(doca_task_submit(t)),
            2 => ignore(doca_task_submit_ex(t, b.u32() % 8)),
            3 => doca_task_free(t),
            4 => ignore(doca_task_get_status(t)),
            _ => {
                doca_task_set_user_data(t, doca_data { u64_: b.u64() });
                doca_task_get_user_data(t);
            }
        }
    }
}

/// A progress burst on every PE, and deterministic steps of every DPA.
pub fn progress_all(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: handles of the world, live or destroyed (the soft device checks them); the
    // out-parameter is a local.
    unsafe {
        for &(k, h) in w.objs.clone().iter() {
            match k {
                K::Pe => {
                    for _ in 0..b.u8() % 8 {
                        doca_pe_progress(h.cast());
                    }
                }
                K::Dpa => {
                    let mut ran = 0u8;
                    for _ in 0..b.u8() % 8 {
                        dpakit_soft_dpa_step(h.cast(), &mut ran);
                    }
                }
                _ => {}
            }
        }
    }
}
