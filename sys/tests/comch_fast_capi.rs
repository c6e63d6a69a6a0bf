//! The Comch fast path's behaviour at the C boundary (`doca_comch_consumer_*` and
//! `doca_comch_producer_*` on a connection), called the way C calls it: consumer memory without
//! PCI access or not started, buffers of another mmap, oversized immediate data, buffers on MsgQ
//! endpoints, connections that close under live endpoints: DOCA errors that name the rule,
//! never a crash. (NULL, destroyed and wrong-kind handles: `comch_fast_null_args.rs`.)
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
use std::cell::{Cell, RefCell};
use std::ptr::{null, null_mut};
use support::*;

fn started_dpa(dev: *mut doca_dev) -> *mut doca_dpa {
    let mut dpa = null_mut();
    expect!(doca_dpa_create(dev, &mut dpa), DOCA_SUCCESS);
    expect!(
        doca_dpa_set_app(dpa, dpakit_kernels::APP.raw().cast()),
        DOCA_SUCCESS
    );
    expect!(
        dpakit_soft_dpa_set_sched_mode(dpa, dpakit_sys::soft::SCHED_DETERMINISTIC, 7),
        DOCA_SUCCESS
    );
    expect!(doca_dpa_start(dpa), DOCA_SUCCESS);
    dpa
}

thread_local! {
    /// An mmap `probe` tries to put a consumer on the closing connection with.
    static PROBE_MMAP: Cell<*mut doca_mmap> = const { Cell::new(null_mut()) };
    /// What that attempt answered, and the explanation.
    static PROBED: RefCell<Option<(doca_error_t, String)>> = const { RefCell::new(None) };
    /// Receives whose callback ran (`recv_counted`).
    static RECV_CALLBACKS: Cell<usize> = const { Cell::new(0) };
}

/// Called by the disconnect callback (`ON_DISCONNECT`): tries a consumer on the closing
/// connection.
fn probe(conn: *mut doca_comch_connection) {
    let mut consumer = null_mut();
    // SAFETY: the connection is live during its disconnect callback; the mmap is the test's.
    let rc = unsafe { doca_comch_consumer_create(conn, PROBE_MMAP.with(Cell::get), &mut consumer) };
    PROBED.with(|p| *p.borrow_mut() = Some((rc, last_error())));
    if rc == DOCA_SUCCESS {
        // SAFETY: the consumer just created, never started.
        unsafe { doca_comch_consumer_destroy(consumer) };
    }
}

unsafe extern "C" fn recv_counted(
    task: *mut doca_comch_consumer_task_post_recv,
    _: doca_data,
    _: doca_data,
) {
    RECV_CALLBACKS.with(|n| n.set(n.get() + 1));
    // SAFETY: a completed task, freed once.
    unsafe { doca_task_free(doca_comch_consumer_task_post_recv_as_task(task)) };
}

#[test]
fn consumer_memory_needs_pci_read_write_and_a_started_mmap() {
    setup();
    let c = Conn::open(c"fast-capi-mmap");

    // Local access only: the peer could not write into it.
    let local = Memory::new(c.host, 1, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE, true);
    let consumer = configured_consumer(c.cconn, local.mmap, c.cpe);
    expect!(
        doca_ctx_start(consumer_ctx(consumer)),
        DOCA_ERROR_INVALID_VALUE
    );
    explained("DOCA_ACCESS_FLAG_PCI_READ_WRITE");
    assert_eq!(state(consumer_ctx(consumer)), DOCA_CTX_STATE_IDLE);
    expect!(doca_comch_consumer_destroy(consumer), DOCA_SUCCESS);
    drop(local);

    // Not started yet: the consumer waits for it.
    let pending = Memory::new(c.host, 1, DOCA_ACCESS_FLAG_PCI_READ_WRITE, false);
    let consumer = configured_consumer(c.cconn, pending.mmap, c.cpe);
    expect!(doca_ctx_start(consumer_ctx(consumer)), DOCA_ERROR_BAD_STATE);
    explained("doca_mmap_start");
    assert_eq!(state(consumer_ctx(consumer)), DOCA_CTX_STATE_IDLE);
    expect!(doca_mmap_start(pending.mmap), DOCA_SUCCESS);
    start_consumer(consumer, c.cpe);
    stop(consumer_ctx(consumer), c.cpe);
    expect!(doca_comch_consumer_destroy(consumer), DOCA_SUCCESS);
    drop(pending);
    c.close();
}

/// A program may free its posted receives before it stops its consumer (DOCA programs do):
/// each is released when the stop flushes it, its callback does not run, and the stop ends.
#[test]
fn posted_receives_freed_before_a_stop_are_released_by_it() {
    setup();
    let c = Conn::open(c"fast-capi-free-posted");
    let mut mem = Memory::new(c.host, 4, DOCA_ACCESS_FLAG_PCI_READ_WRITE, true);
    let bufs: Vec<_> = (0..4).map(|i| mem.buf(i, 0)).collect();
    let consumer = configured_consumer(c.cconn, mem.mmap, c.cpe);
    expect!(
        doca_comch_consumer_task_post_recv_set_conf(
            consumer,
            Some(recv_counted),
            Some(recv_counted),
            4
        ),
        DOCA_SUCCESS
    );
    start_consumer(consumer, c.cpe);
    let mut tasks = Vec::new();
    for &buf in &bufs {
        let mut task = null_mut();
        expect!(
            doca_comch_consumer_task_post_recv_alloc_init(consumer, buf, &mut task),
            DOCA_SUCCESS
        );
        // SAFETY: a task just allocated.
        let t = unsafe { doca_comch_consumer_task_post_recv_as_task(task) };
        expect!(doca_task_submit(t), DOCA_SUCCESS);
        tasks.push(t);
    }
    for &t in &tasks {
        // SAFETY: a submitted task of this consumer.
        unsafe { doca_task_free(t) };
    }
    RECV_CALLBACKS.with(|n| n.set(0));
    stop(consumer_ctx(consumer), c.cpe);
    assert_eq!(
        RECV_CALLBACKS.with(Cell::get),
        0,
        "a released task's callback ran"
    );
    // Every task is back in the pool: a restarted consumer allocates all four again.
    start_consumer(consumer, c.cpe);
    for &buf in &bufs {
        let mut task = null_mut();
        expect!(
            doca_comch_consumer_task_post_recv_alloc_init(consumer, buf, &mut task),
            DOCA_SUCCESS
        );
        // SAFETY: allocated, never submitted.
        unsafe { doca_task_free(doca_comch_consumer_task_post_recv_as_task(task)) };
    }
    stop(consumer_ctx(consumer), c.cpe);
    expect!(doca_comch_consumer_destroy(consumer), DOCA_SUCCESS);
    drop(mem);
    c.close();
}

#[test]
fn a_receive_into_another_mmap_is_refused_at_submit() {
    setup();
    let c = Conn::open(c"fast-capi-other-mmap");
    let mut own = Memory::new(c.host, 1, DOCA_ACCESS_FLAG_PCI_READ_WRITE, true);
    let mut other = Memory::new(c.host, 1, DOCA_ACCESS_FLAG_PCI_READ_WRITE, true);
    let consumer = configured_consumer(c.cconn, own.mmap, c.cpe);
    start_consumer(consumer, c.cpe);

    let mut task = null_mut();
    expect!(
        doca_comch_consumer_task_post_recv_alloc_init(consumer, other.buf(0, 0), &mut task),
        DOCA_SUCCESS
    );
    // SAFETY: a task just allocated.
    let t = unsafe { doca_comch_consumer_task_post_recv_as_task(task) };
    expect!(doca_task_submit(t), DOCA_ERROR_INVALID_VALUE);
    explained("not from the consumer's mmap");
    // The refused task is still the program's, and a buffer of the consumer's mmap posts.
    // SAFETY: never submitted.
    unsafe { doca_task_free(t) };
    expect!(
        doca_comch_consumer_task_post_recv_alloc_init(consumer, own.buf(0, 0), &mut task),
        DOCA_SUCCESS
    );
    expect!(
        doca_task_submit(doca_comch_consumer_task_post_recv_as_task(task)),
        DOCA_SUCCESS
    );
    // The stop flushes the posted receive (recv_done frees it).
    stop(consumer_ctx(consumer), c.cpe);
    expect!(doca_comch_consumer_destroy(consumer), DOCA_SUCCESS);
    drop((own, other));
    c.close();
}

#[test]
fn immediate_data_takes_at_most_32_bytes() {
    setup();
    let v = DOCA_ERROR_INVALID_VALUE;
    let c = Conn::open(c"fast-capi-imm");
    let mut src = Memory::new(c.arm, 1, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE, true);
    let data = src.buf(0, 64);
    let producer = configured_producer(c.sconn, c.spe);
    expect!(doca_ctx_start(producer_ctx(producer)), DOCA_SUCCESS);
    let mut imm = [1u8; MAX_IMM as usize + 1];
    let mut task = null_mut();
    expect!(
        doca_comch_producer_task_send_alloc_init(
            producer,
            data,
            imm.as_mut_ptr(),
            MAX_IMM + 1,
            1,
            &mut task
        ),
        v
    );
    explained("immediate data of 33 bytes");
    expect!(
        doca_comch_producer_task_send_alloc_init(
            producer,
            data,
            imm.as_mut_ptr(),
            MAX_IMM,
            1,
            &mut task
        ),
        DOCA_SUCCESS
    );
    // SAFETY: allocated above, never submitted.
    unsafe { doca_task_free(doca_comch_producer_task_send_as_task(task)) };
    stop(producer_ctx(producer), c.spe);
    expect!(doca_comch_producer_destroy(producer), DOCA_SUCCESS);

    // A consumer announces at most 32 bytes of room too.
    let mem = Memory::new(c.host, 1, DOCA_ACCESS_FLAG_PCI_READ_WRITE, true);
    let mut consumer = null_mut();
    expect!(
        doca_comch_consumer_create(c.cconn, mem.mmap, &mut consumer),
        DOCA_SUCCESS
    );
    expect!(
        doca_comch_consumer_set_imm_data_len(consumer, MAX_IMM + 1),
        v
    );
    expect!(
        doca_comch_consumer_set_imm_data_len(consumer, MAX_IMM),
        DOCA_SUCCESS
    );
    expect!(doca_comch_consumer_destroy(consumer), DOCA_SUCCESS);
    drop((src, mem));
    c.close();
}

#[test]
fn msgq_endpoints_take_no_buffers() {
    setup();
    let ns = DOCA_ERROR_NOT_SUPPORTED;
    let dev = open_dev(HOST);
    let dpa = started_dpa(dev);
    let pe = new_pe();
    let mut mem = Memory::new(dev, 1, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE, true);
    let buf = mem.buf(0, 8);
    let mut imm = [3u8; 8];

    // The CPU consumer of a DPA -> CPU queue, running.
    let mut from_dpa = null_mut();
    expect!(doca_comch_msgq_create(dev, &mut from_dpa), DOCA_SUCCESS);
    expect!(
        doca_comch_msgq_set_dpa_producer(from_dpa, dpa),
        DOCA_SUCCESS
    );
    expect!(doca_comch_msgq_start(from_dpa), DOCA_SUCCESS);
    let mut consumer = null_mut();
    expect!(
        doca_comch_msgq_consumer_create(from_dpa, &mut consumer),
        DOCA_SUCCESS
    );
    expect!(
        doca_comch_consumer_task_post_recv_set_conf(consumer, Some(recv_done), Some(recv_done), 4),
        DOCA_SUCCESS
    );
    expect!(
        doca_pe_connect_ctx(pe, consumer_ctx(consumer)),
        DOCA_SUCCESS
    );
    expect!(doca_ctx_start(consumer_ctx(consumer)), DOCA_SUCCESS);
    let mut recv = null_mut();
    expect!(
        doca_comch_consumer_task_post_recv_alloc_init(consumer, buf, &mut recv),
        ns
    );
    explained("pass buf = NULL");
    expect!(
        doca_comch_consumer_task_post_recv_alloc_init(consumer, null_mut(), &mut recv),
        DOCA_SUCCESS
    );
    // SAFETY: allocated above, never submitted.
    unsafe { doca_task_free(doca_comch_consumer_task_post_recv_as_task(recv)) };
    stop(consumer_ctx(consumer), pe);
    expect!(doca_comch_consumer_destroy(consumer), DOCA_SUCCESS);

    // The CPU producer of a CPU -> DPA queue, running.
    let mut to_dpa = null_mut();
    expect!(doca_comch_msgq_create(dev, &mut to_dpa), DOCA_SUCCESS);
    expect!(doca_comch_msgq_set_dpa_consumer(to_dpa, dpa), DOCA_SUCCESS);
    expect!(doca_comch_msgq_start(to_dpa), DOCA_SUCCESS);
    let mut producer = null_mut();
    expect!(
        doca_comch_msgq_producer_create(to_dpa, &mut producer),
        DOCA_SUCCESS
    );
    expect!(
        doca_comch_producer_task_send_set_conf(producer, Some(send_done), Some(send_done), 4),
        DOCA_SUCCESS
    );
    expect!(
        doca_pe_connect_ctx(pe, producer_ctx(producer)),
        DOCA_SUCCESS
    );
    expect!(doca_ctx_start(producer_ctx(producer)), DOCA_SUCCESS);
    let mut send = null_mut();
    expect!(
        doca_comch_producer_task_send_alloc_init(producer, buf, imm.as_mut_ptr(), 8, 1, &mut send),
        ns
    );
    explained("pass buf = NULL");
    expect!(
        doca_comch_producer_task_send_alloc_init(
            producer,
            null(),
            imm.as_mut_ptr(),
            8,
            1,
            &mut send
        ),
        DOCA_SUCCESS
    );
    // SAFETY: allocated above, never submitted.
    unsafe { doca_task_free(doca_comch_producer_task_send_as_task(send)) };
    stop(producer_ctx(producer), pe);
    expect!(doca_comch_producer_destroy(producer), DOCA_SUCCESS);

    for q in [from_dpa, to_dpa] {
        expect!(doca_comch_msgq_stop(q), DOCA_SUCCESS);
        expect!(doca_comch_msgq_destroy(q), DOCA_SUCCESS);
    }
    drop(mem);
    expect!(doca_pe_destroy(pe), DOCA_SUCCESS);
    expect!(doca_dpa_destroy(dpa), DOCA_SUCCESS);
    expect!(doca_dev_close(dev), DOCA_SUCCESS);
}

#[test]
fn a_connection_with_live_endpoints_does_not_close() {
    setup();
    let in_use = DOCA_ERROR_IN_USE;
    let c = Conn::open(c"fast-capi-in-use");
    // A running consumer on the server's end, a running producer on the client's.
    let mem = Memory::new(c.arm, 1, DOCA_ACCESS_FLAG_PCI_READ_WRITE, true);
    let consumer = configured_consumer(c.sconn, mem.mmap, c.spe);
    start_consumer(consumer, c.spe);
    let producer = configured_producer(c.cconn, c.cpe);
    expect!(doca_ctx_start(producer_ctx(producer)), DOCA_SUCCESS);

    expect!(doca_comch_server_disconnect(c.server, c.sconn), in_use);
    explained("stop and destroy them");
    expect!(doca_ctx_stop(client_ctx(c.client)), in_use);
    explained("stop and destroy them");
    // Stopped is not enough: they count until destroyed.
    stop(consumer_ctx(consumer), c.spe);
    stop(producer_ctx(producer), c.cpe);
    expect!(doca_comch_server_disconnect(c.server, c.sconn), in_use);
    expect!(doca_ctx_stop(client_ctx(c.client)), in_use);
    assert_eq!(state(client_ctx(c.client)), DOCA_CTX_STATE_RUNNING);

    expect!(doca_comch_consumer_destroy(consumer), DOCA_SUCCESS);
    expect!(doca_comch_producer_destroy(producer), DOCA_SUCCESS);
    expect!(
        doca_comch_server_disconnect(c.server, c.sconn),
        DOCA_SUCCESS
    );
    // The client hears of it and stops on its own.
    c.stop_client();
    drop(mem);
    c.close();
}

#[test]
fn no_consumer_on_a_connection_the_server_disconnected() {
    setup();
    let c = Conn::open(c"fast-capi-after-disconnect");
    let server_mem = Memory::new(c.arm, 1, DOCA_ACCESS_FLAG_PCI_READ_WRITE, true);
    let client_mem = Memory::new(c.host, 1, DOCA_ACCESS_FLAG_PCI_READ_WRITE, true);
    let (sconn, cconn) = (c.sconn, c.cconn);

    // During its disconnect callback the connection is still a handle, but closed.
    PROBE_MMAP.with(|p| p.set(server_mem.mmap));
    ON_DISCONNECT.with(|p| p.set(Some(probe)));
    expect!(doca_comch_server_disconnect(c.server, sconn), DOCA_SUCCESS);
    c.stop_client();
    ON_DISCONNECT.with(|p| p.set(None));
    let (rc, why) = PROBED
        .with(|p| p.borrow_mut().take())
        .expect("the disconnect callback ran");
    assert_eq!(rc, DOCA_ERROR_NOT_CONNECTED, "{why}");
    assert!(why.contains("the connection is closed"), "{why}");

    // After it, both ends are gone for good.
    let mut consumer = null_mut();
    expect!(
        doca_comch_consumer_create(sconn, server_mem.mmap, &mut consumer),
        DOCA_ERROR_INVALID_VALUE
    );
    explained("was destroyed");
    expect!(
        doca_comch_consumer_create(cconn, client_mem.mmap, &mut consumer),
        DOCA_ERROR_INVALID_VALUE
    );
    explained("was destroyed");
    drop((server_mem, client_mem));
    c.close();
}
