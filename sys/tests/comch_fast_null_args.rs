//! The Comch fast path's C API (`doca_comch_consumer_*` and `doca_comch_producer_*` on a
//! connection) refuses what is not a live object of the right kind: every function answers a
//! NULL parameter, a destroyed consumer, producer or connection and a handle of another kind
//! with `DOCA_ERROR_INVALID_VALUE` (NULL, for the functions that answer a pointer) and an
//! explanation that names the rule, never a crash. One table per subject, a row per call.
//!
//! These run against the soft device (the default configuration of `dpakit-sys`). Servers of
//! this binary listen in a runtime directory of its own, each test under its own name, so
//! tests on parallel threads never meet.
#![cfg(all(feature = "soft", not(feature = "doca")))]

#[macro_use]
#[path = "support/comch.rs"]
mod support;
#[path = "support/comch_fast.rs"]
mod fast;

use dpakit_sys::*;
use fast::*;
use std::ptr::{null, null_mut};
use support::*;

#[test]
fn null_parameters_are_invalid_value() {
    setup();
    let c = Conn::open(c"fast-capi-null");
    let mut mem = Memory::new(c.host, 2, DOCA_ACCESS_FLAG_PCI_READ_WRITE, true);
    let buf = mem.buf(0, 0);
    let mut imm = [7u8; 8];
    let imm = imm.as_mut_ptr();
    let mmap = mem.mmap;
    let consumer = configured_consumer(c.cconn, mmap, c.cpe);
    let producer = configured_producer(c.sconn, c.spe);

    expect_refused(
        DOCA_ERROR_INVALID_VALUE,
        [
            // Creation: NULL connection, mmap or out-parameter.
            row!(
                doca_comch_consumer_create(null_mut(), mmap, &mut null_mut()),
                "comch_connection is NULL"
            ),
            row!(
                doca_comch_consumer_create(c.cconn, null_mut(), &mut null_mut()),
                "buf_mmap is NULL"
            ),
            row!(
                doca_comch_consumer_create(c.cconn, mmap, null_mut()),
                "consumer is NULL"
            ),
            row!(
                doca_comch_producer_create(null_mut(), &mut null_mut()),
                "comch_connection is NULL"
            ),
            row!(
                doca_comch_producer_create(c.cconn, null_mut()),
                "producer is NULL"
            ),
            // NULL endpoints everywhere else.
            row!(doca_comch_consumer_destroy(null_mut())),
            row!(doca_comch_producer_destroy(null_mut())),
            row!(doca_comch_consumer_as_ctx(null_mut())),
            row!(doca_comch_producer_as_ctx(null_mut())),
            row!(doca_comch_consumer_get_id(null(), &mut 0)),
            row!(doca_comch_producer_get_id(null(), &mut 0)),
            row!(doca_comch_consumer_set_imm_data_len(null_mut(), 8)),
            row!(doca_comch_consumer_task_post_recv_set_conf(
                null_mut(),
                Some(recv_done),
                Some(recv_done),
                4
            )),
            row!(doca_comch_producer_task_send_set_conf(
                null_mut(),
                Some(send_done),
                Some(send_done),
                4
            )),
            row!(
                doca_comch_consumer_task_post_recv_alloc_init(null_mut(), buf, &mut null_mut()),
                "consumer is NULL"
            ),
            row!(
                doca_comch_producer_task_send_alloc_init(
                    null_mut(),
                    buf,
                    imm,
                    8,
                    1,
                    &mut null_mut()
                ),
                "producer is NULL"
            ),
            row!(doca_comch_consumer_task_post_recv_as_task(null_mut())),
            row!(doca_comch_producer_task_send_as_task(null_mut())),
            // Endpoints not started yet: NULL out-parameters and callbacks.
            row!(doca_comch_consumer_get_id(consumer, null_mut())),
            row!(doca_comch_producer_get_id(producer, null_mut())),
            row!(
                doca_comch_consumer_task_post_recv_set_conf(consumer, None, Some(recv_done), 4),
                "both the completion and the error callback"
            ),
            row!(
                doca_comch_producer_task_send_set_conf(producer, Some(send_done), None, 4),
                "both the completion and the error callback"
            ),
        ],
    );

    expect!(doca_comch_producer_destroy(producer), DOCA_SUCCESS);
    expect!(doca_comch_consumer_destroy(consumer), DOCA_SUCCESS);
    drop(mem);
    c.close();
}

#[test]
fn running_endpoints_refuse_null_tasks_and_immediate_data() {
    setup();
    let c = Conn::open(c"fast-capi-null-running");
    let mut mem = Memory::new(c.host, 1, DOCA_ACCESS_FLAG_PCI_READ_WRITE, true);
    let buf = mem.buf(0, 0);
    let mut src = Memory::new(c.arm, 1, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE, true);
    let data = src.buf(0, 64);
    let mut imm = [7u8; 8];
    let imm = imm.as_mut_ptr();
    let consumer = configured_consumer(c.cconn, mem.mmap, c.cpe);
    let producer = configured_producer(c.sconn, c.spe);
    start_consumer(consumer, c.cpe);
    expect!(doca_ctx_start(producer_ctx(producer)), DOCA_SUCCESS);

    expect_refused(
        DOCA_ERROR_INVALID_VALUE,
        [
            row!(
                doca_comch_consumer_task_post_recv_alloc_init(consumer, buf, null_mut()),
                "task is NULL"
            ),
            row!(
                doca_comch_producer_task_send_alloc_init(producer, data, imm, 8, 1, null_mut()),
                "task is NULL"
            ),
            row!(
                doca_comch_producer_task_send_alloc_init(
                    producer,
                    data,
                    null_mut(),
                    8,
                    1,
                    &mut null_mut()
                ),
                "imm_data is NULL with imm_data_len 8"
            ),
        ],
    );
    // No immediate data at all is fine, NULL or not.
    let mut send = null_mut();
    expect!(
        doca_comch_producer_task_send_alloc_init(producer, data, null_mut(), 0, 1, &mut send),
        DOCA_SUCCESS
    );
    // SAFETY: allocated above, never submitted.
    unsafe { doca_task_free(doca_comch_producer_task_send_as_task(send)) };

    stop(producer_ctx(producer), c.spe);
    expect!(doca_comch_producer_destroy(producer), DOCA_SUCCESS);
    stop(consumer_ctx(consumer), c.cpe);
    expect!(doca_comch_consumer_destroy(consumer), DOCA_SUCCESS);
    drop((src, mem));
    c.close();
}

#[test]
fn destroyed_connections_and_endpoints_are_invalid_value() {
    setup();
    let c = Conn::open(c"fast-capi-destroyed");
    let mut mem = Memory::new(c.host, 1, DOCA_ACCESS_FLAG_PCI_READ_WRITE, true);
    let buf = mem.buf(0, 0);
    let mmap = mem.mmap;

    let mut consumer = null_mut();
    expect!(
        doca_comch_consumer_create(c.cconn, mmap, &mut consumer),
        DOCA_SUCCESS
    );
    expect!(doca_comch_consumer_destroy(consumer), DOCA_SUCCESS);
    expect_refused(
        DOCA_ERROR_INVALID_VALUE,
        [
            row!(
                doca_comch_consumer_get_id(consumer, &mut 0),
                "was destroyed"
            ),
            row!(doca_comch_consumer_as_ctx(consumer)),
            row!(doca_ctx_start(consumer.cast())),
            row!(
                doca_comch_consumer_task_post_recv_alloc_init(consumer, buf, &mut null_mut()),
                "was destroyed"
            ),
            row!(doca_comch_consumer_destroy(consumer)),
        ],
    );

    let mut producer = null_mut();
    expect!(
        doca_comch_producer_create(c.sconn, &mut producer),
        DOCA_SUCCESS
    );
    expect!(doca_comch_producer_destroy(producer), DOCA_SUCCESS);
    let mut imm = [0u8; 8];
    let imm = imm.as_mut_ptr();
    expect_refused(
        DOCA_ERROR_INVALID_VALUE,
        [
            row!(
                doca_comch_producer_get_id(producer, &mut 0),
                "was destroyed"
            ),
            row!(
                doca_comch_producer_task_send_alloc_init(
                    producer,
                    null(),
                    imm,
                    8,
                    1,
                    &mut null_mut()
                ),
                "was destroyed"
            ),
            row!(doca_comch_producer_destroy(producer)),
            // A handle of another kind is not a connection.
            row!(
                doca_comch_consumer_create(c.server.cast(), mmap, &mut null_mut()),
                "is a struct doca_comch_server, not a struct doca_comch_connection"
            ),
        ],
    );

    // Once the client has stopped, neither end of the connection takes endpoints.
    let (sconn, cconn) = (c.sconn, c.cconn);
    c.stop_client();
    expect_refused(
        DOCA_ERROR_INVALID_VALUE,
        [
            row!(
                doca_comch_consumer_create(cconn, mmap, &mut null_mut()),
                "was destroyed"
            ),
            row!(
                doca_comch_producer_create(cconn, &mut null_mut()),
                "was destroyed"
            ),
            row!(
                doca_comch_consumer_create(sconn, mmap, &mut null_mut()),
                "was destroyed"
            ),
            row!(doca_comch_producer_create(sconn, &mut null_mut())),
        ],
    );
    drop(mem);
    c.close();
}
