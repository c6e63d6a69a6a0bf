//! MsgQs and what hangs off them: queues, their consumers and producers (on CPU or DPA), the
//! completion callbacks of their tasks, and consumer completions (codes 18 to 21 and 23).

use crate::capi::{K, World};
use crate::support::Bytes;
use crate::{FREE_IN_CALLBACK, ignore, out, reenter, size};
use dpakit_sys::*;
use std::cell::Cell;
use std::ptr::null_mut;

pub fn create(w: &mut World, b: &mut Bytes<'_>) {
    let mut q = null_mut();
    // SAFETY: any device handle; the out-parameter is a local or NULL.
    unsafe { doca_comch_msgq_create(w.one(b, K::Dev), out(b, &mut q)) };
    w.add(K::Msgq, q.cast());
}

pub fn msgq_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any MsgQ and DPA handles; out-parameters are locals.
    unsafe {
        let q = w.one::<doca_comch_msgq>(b, K::Msgq);
        match b.u8() % 10 {
            0 => ignore(doca_comch_msgq_destroy(q)),
            1 => ignore(doca_comch_msgq_set_max_num_consumers(q, size(b))),
            2 => ignore(doca_comch_msgq_set_max_num_producers(q, size(b))),
            3 => ignore(doca_comch_msgq_set_dpa_consumer(q, w.one(b, K::Dpa))),
            4 => ignore(doca_comch_msgq_set_dpa_producer(q, w.one(b, K::Dpa))),
            5 | 6 => ignore(doca_comch_msgq_start(q)),
            7 => ignore(doca_comch_msgq_stop(q)),
            8 => {
                let mut c = null_mut();
                doca_comch_msgq_consumer_create(q, out(b, &mut c));
                w.add(K::Consumer, c.cast());
            }
            _ => {
                let mut p = null_mut();
                doca_comch_msgq_producer_create(q, out(b, &mut p));
                w.add(K::Producer, p.cast());
            }
        }
    }
}

pub unsafe extern "C" fn recv_done(
    task: *mut doca_comch_consumer_task_post_recv,
    _: doca_data,
    _: doca_data,
) {
    // SAFETY: the completed task, handed back to the program.
    let task = unsafe { doca_comch_consumer_task_post_recv_as_task(task) };
    // SAFETY: as above.
    unsafe { reenter::act(null_mut(), task, null_mut()) };
    if FREE_IN_CALLBACK.with(Cell::get) {
        // SAFETY: as above (refused if the call above freed it already).
        unsafe { doca_task_free(task) };
    }
}

pub unsafe extern "C" fn send_done(
    task: *mut doca_comch_producer_task_send,
    _: doca_data,
    _: doca_data,
) {
    // SAFETY: the completed task, handed back to the program.
    let task = unsafe { doca_comch_producer_task_send_as_task(task) };
    // SAFETY: as above.
    unsafe { reenter::act(null_mut(), task, null_mut()) };
    if FREE_IN_CALLBACK.with(Cell::get) {
        // SAFETY: as above (refused if the call above freed it already).
        unsafe { doca_task_free(task) };
    }
}

pub fn consumer_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any consumer, buffer, completion and task handles; out-parameters are locals;
    // the callback is this module's.
    unsafe {
        let c = w.one::<doca_comch_consumer>(b, K::Consumer);
        let (mut id, mut h) = (0u32, 0u64);
        match b.u8() % 10 {
            0 => ignore(doca_comch_consumer_destroy(c)),
            1 => ignore(doca_comch_consumer_get_id(c, out(b, &mut id))),
            2 => ignore(doca_comch_consumer_set_imm_data_len(c, size(b))),
            3 => {
                let cb = if b.u8().is_multiple_of(8) {
                    None
                } else {
                    Some(recv_done as _)
                };
                doca_comch_consumer_task_post_recv_set_conf(c, cb, cb, size(b));
            }
            4 | 5 => {
                let mut t = null_mut();
                doca_comch_consumer_task_post_recv_alloc_init(c, w.one(b, K::Buf), out(b, &mut t));
                w.add(K::RecvTask, t.cast());
            }
            6 => ignore(doca_comch_consumer_set_dev_max_num_recv(c, size(b))),
            7 => ignore(doca_comch_consumer_set_completion(
                c,
                w.one(b, K::ConsComp),
                b.u32(),
            )),
            8 => ignore(doca_comch_consumer_get_dpa_handle(c, out(b, &mut h))),
            _ => {
                let t = w.one::<doca_comch_consumer_task_post_recv>(b, K::RecvTask);
                doca_comch_consumer_task_post_recv_get_buf(t);
                doca_comch_consumer_task_post_recv_get_imm_data(t);
                doca_comch_consumer_task_post_recv_get_imm_data_len(t);
                doca_comch_consumer_task_post_recv_get_producer_id(t);
            }
        }
    }
}

pub fn producer_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any producer, buffer, completion and task handles; the immediate data is a
    // local of 64 bytes (`imm_len` is at most 64); out-parameters are locals.
    unsafe {
        let p = w.one::<doca_comch_producer>(b, K::Producer);
        let (mut id, mut h) = (0u32, 0u64);
        match b.u8() % 9 {
            0 => ignore(doca_comch_producer_destroy(p)),
            1 => ignore(doca_comch_producer_get_id(p, out(b, &mut id))),
            2 => {
                let cb = if b.u8().is_multiple_of(8) {
                    None
                } else {
                    Some(send_done as _)
                };
                doca_comch_producer_task_send_set_conf(p, cb, cb, size(b));
            }
            3..=5 => {
                let mut imm = [0u8; 64];
                let imm_len = u32::from(b.u8() % 65);
                let imm_ptr = if b.u8().is_multiple_of(8) {
                    null_mut()
                } else {
                    imm.as_mut_ptr()
                };
                let mut t = null_mut();
                doca_comch_producer_task_send_alloc_init(
                    p,
                    w.one(b, K::Buf),
                    imm_ptr,
                    imm_len,
                    b.u32() % 4,
                    out(b, &mut t),
                );
                w.add(K::SendTask, t.cast());
            }
            6 => ignore(doca_comch_producer_set_dev_max_num_send(p, size(b))),
            7 => ignore(doca_comch_producer_dpa_completion_attach(
                p,
                w.one(b, K::DpaComp),
            )),
            _ => {
                doca_comch_producer_get_dpa_handle(p, out(b, &mut h));
                doca_comch_producer_task_send_get_buf(w.one(b, K::SendTask));
            }
        }
    }
}

pub fn cons_comp_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any completion, DPA and thread handles; out-parameters are locals.
    unsafe {
        let c = w.one::<doca_comch_consumer_completion>(b, K::ConsComp);
        let mut h = 0u64;
        match b.u8() % 9 {
            0 => {
                let mut n = null_mut();
                doca_comch_consumer_completion_create(out(b, &mut n));
                w.add(K::ConsComp, n.cast());
            }
            1 => ignore(doca_comch_consumer_completion_destroy(c)),
            2 => ignore(doca_comch_consumer_completion_set_max_num_consumers(
                c,
                size(b),
            )),
            3 => ignore(doca_comch_consumer_completion_set_max_num_recv(c, size(b))),
            4 => ignore(doca_comch_consumer_completion_set_imm_data_len(c, size(b))),
            5 => ignore(doca_comch_consumer_completion_set_dpa_thread(
                c,
                w.one(b, K::Thread),
            )),
            6 => ignore(doca_comch_consumer_completion_start(c)),
            7 => ignore(doca_comch_consumer_completion_stop(c)),
            _ => ignore(doca_comch_consumer_completion_get_dpa_handle(
                c,
                out(b, &mut h),
            )),
        }
    }
}
