//! The Comch fast path's C API at the boundary (`doca_comch_consumer_*` and
//! `doca_comch_producer_*` on a connection), called the way C calls it: NULL parameters,
//! destroyed connections and consumers, consumer memory without PCI access or not started,
//! buffers of another mmap, oversized immediate data, buffers on MsgQ endpoints, connections
//! that close under live endpoints: DOCA errors that name the rule, never a crash.
//!
//! These run against the soft device (the default configuration of `dpakit-sys`). Servers of
//! this binary listen in a runtime directory of its own, each test under its own name, so
//! tests on parallel threads never meet.
#![cfg(all(feature = "soft", not(feature = "doca")))]

#[macro_use]
#[path = "support/comch.rs"]
mod support;

use dpakit_sys::*;
use std::alloc::Layout;
use std::cell::{Cell, RefCell};
use std::ffi::CStr;
use std::ptr::{null, null_mut};
use support::*;

const PAGE: usize = 4096;
/// The most immediate data a consumer takes.
const MAX_IMM: u32 = 32;

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

fn consumer_ctx(consumer: *mut doca_comch_consumer) -> *mut doca_ctx {
    // SAFETY: a live consumer.
    unsafe { doca_comch_consumer_as_ctx(consumer) }
}

fn producer_ctx(producer: *mut doca_comch_producer) -> *mut doca_ctx {
    // SAFETY: a live producer.
    unsafe { doca_comch_producer_as_ctx(producer) }
}

/// Stops a context, progressing `pe` until it is IDLE.
#[track_caller]
/// Starts a consumer on a connection as DOCA does: `IN_PROGRESS`, then RUNNING through
/// progress of its PE.
fn start_consumer(consumer: *mut doca_comch_consumer, pe: *mut doca_pe) {
    expect!(
        doca_ctx_start(consumer_ctx(consumer)),
        DOCA_ERROR_IN_PROGRESS
    );
    assert_eq!(state(consumer_ctx(consumer)), DOCA_CTX_STATE_STARTING);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while state(consumer_ctx(consumer)) != DOCA_CTX_STATE_RUNNING {
        assert!(
            std::time::Instant::now() < deadline,
            "the consumer never ran"
        );
        // SAFETY: a live PE.
        unsafe { doca_pe_progress(pe) };
    }
}

fn stop(ctx: *mut doca_ctx, pe: *mut doca_pe) {
    // SAFETY: a live context.
    let rc = unsafe { doca_ctx_stop(ctx) };
    assert!(
        rc == DOCA_SUCCESS || rc == DOCA_ERROR_IN_PROGRESS,
        "{rc}: {}",
        last_error()
    );
    progress_until(&[pe], || state(ctx) == DOCA_CTX_STATE_IDLE);
}

// ---------------------------------------------------------------------------------------------
// Callbacks
// ---------------------------------------------------------------------------------------------

thread_local! {
    /// The connections the servers of this thread's test accepted.
    static ACCEPTED: RefCell<Vec<*mut doca_comch_connection>> = const { RefCell::new(Vec::new()) };
    /// An mmap the disconnect callback tries to put a consumer on the closing connection with.
    static PROBE_MMAP: Cell<*mut doca_mmap> = const { Cell::new(null_mut()) };
    /// What that attempt answered, and the explanation.
    static PROBED: RefCell<Option<(doca_error_t, String)>> = const { RefCell::new(None) };
    /// Receives whose callback ran (`recv_counted`).
    static RECV_CALLBACKS: Cell<usize> = const { Cell::new(0) };
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

unsafe extern "C" fn sent(task: *mut doca_comch_task_send, _: doca_data, _: doca_data) {
    // SAFETY: a completed task, freed once.
    unsafe { doca_task_free(doca_comch_task_send_as_task(task)) };
}

unsafe extern "C" fn received(
    _: *mut doca_comch_event_msg_recv,
    _: *mut u8,
    _: u32,
    _: *mut doca_comch_connection,
) {
}

unsafe extern "C" fn connected(
    _: *mut doca_comch_event_connection_status_changed,
    conn: *mut doca_comch_connection,
    ok: u8,
) {
    if ok != 0 {
        ACCEPTED.with(|a| a.borrow_mut().push(conn));
    }
}

unsafe extern "C" fn disconnected(
    _: *mut doca_comch_event_connection_status_changed,
    conn: *mut doca_comch_connection,
    _: u8,
) {
    ACCEPTED.with(|a| a.borrow_mut().retain(|&c| c != conn));
    let mmap = PROBE_MMAP.with(Cell::get);
    if mmap.is_null() {
        return;
    }
    let mut consumer = null_mut();
    // SAFETY: the connection is live during its disconnect callback; the mmap is the test's.
    let rc = unsafe { doca_comch_consumer_create(conn, mmap, &mut consumer) };
    PROBED.with(|p| *p.borrow_mut() = Some((rc, last_error())));
    if rc == DOCA_SUCCESS {
        // SAFETY: the consumer just created, never started.
        unsafe { doca_comch_consumer_destroy(consumer) };
    }
}

unsafe extern "C" fn consumer_event(
    _: *mut doca_comch_event_consumer,
    _: *mut doca_comch_connection,
    _: u32,
) {
}

unsafe extern "C" fn recv_done(
    task: *mut doca_comch_consumer_task_post_recv,
    _: doca_data,
    _: doca_data,
) {
    // SAFETY: a completed task (flushed by a stop in these tests), freed once.
    unsafe { doca_task_free(doca_comch_consumer_task_post_recv_as_task(task)) };
}

unsafe extern "C" fn send_done(
    task: *mut doca_comch_producer_task_send,
    _: doca_data,
    _: doca_data,
) {
    // SAFETY: a completed task, freed once.
    unsafe { doca_task_free(doca_comch_producer_task_send_as_task(task)) };
}

// ---------------------------------------------------------------------------------------------
// A connection, memory and endpoints
// ---------------------------------------------------------------------------------------------

/// A server and a client connected through the soft device, each side on its own PE.
struct Conn {
    arm: *mut doca_dev,
    rep: *mut doca_dev_rep,
    host: *mut doca_dev,
    spe: *mut doca_pe,
    cpe: *mut doca_pe,
    server: *mut doca_comch_server,
    client: *mut doca_comch_client,
    /// The server's end and the client's end.
    sconn: *mut doca_comch_connection,
    cconn: *mut doca_comch_connection,
}

impl Conn {
    fn open(name: &CStr) -> Conn {
        let arm = open_dev(ARM);
        let rep = open_rep(arm);
        let host = open_dev(HOST);
        let (spe, cpe) = (new_pe(), new_pe());
        let mut server = null_mut();
        expect!(
            doca_comch_server_create(arm, rep, name.as_ptr(), &mut server),
            DOCA_SUCCESS
        );
        expect!(
            doca_comch_server_task_send_set_conf(server, Some(sent), Some(sent), 8),
            DOCA_SUCCESS
        );
        expect!(
            doca_comch_server_event_msg_recv_register(server, Some(received)),
            DOCA_SUCCESS
        );
        expect!(
            doca_comch_server_event_connection_status_changed_register(
                server,
                Some(connected),
                Some(disconnected)
            ),
            DOCA_SUCCESS
        );
        expect!(
            doca_comch_server_event_consumer_register(
                server,
                Some(consumer_event),
                Some(consumer_event)
            ),
            DOCA_SUCCESS
        );
        expect!(doca_pe_connect_ctx(spe, server_ctx(server)), DOCA_SUCCESS);
        expect!(doca_ctx_start(server_ctx(server)), DOCA_SUCCESS);

        let mut client = null_mut();
        expect!(
            doca_comch_client_create(host, name.as_ptr(), &mut client),
            DOCA_SUCCESS
        );
        expect!(
            doca_comch_client_task_send_set_conf(client, Some(sent), Some(sent), 8),
            DOCA_SUCCESS
        );
        expect!(
            doca_comch_client_event_msg_recv_register(client, Some(received)),
            DOCA_SUCCESS
        );
        let cctx = client_ctx(client);
        expect!(doca_pe_connect_ctx(cpe, cctx), DOCA_SUCCESS);
        expect!(doca_ctx_start(cctx), DOCA_ERROR_IN_PROGRESS);
        progress_until(&[spe, cpe], || {
            state(cctx) == DOCA_CTX_STATE_RUNNING && ACCEPTED.with(|a| a.borrow().len() == 1)
        });
        let sconn = ACCEPTED.with(|a| a.borrow()[0]);
        let mut cconn = null_mut();
        expect!(
            doca_comch_client_get_connection(client, &mut cconn),
            DOCA_SUCCESS
        );
        Conn {
            arm,
            rep,
            host,
            spe,
            cpe,
            server,
            client,
            sconn,
            cconn,
        }
    }

    /// The client stops (if it still runs) and the server hears of it; both connection
    /// handles are destroyed then.
    fn stop_client(&self) {
        let cctx = client_ctx(self.client);
        if state(cctx) != DOCA_CTX_STATE_IDLE {
            // SAFETY: a live client.
            let rc = unsafe { doca_ctx_stop(cctx) };
            assert!(rc == DOCA_SUCCESS || rc == DOCA_ERROR_IN_PROGRESS, "{rc}");
        }
        progress_until(&[self.spe, self.cpe], || {
            state(cctx) == DOCA_CTX_STATE_IDLE && ACCEPTED.with(|a| a.borrow().is_empty())
        });
    }

    fn close(self) {
        self.stop_client();
        expect!(doca_comch_client_destroy(self.client), DOCA_SUCCESS);
        stop(server_ctx(self.server), self.spe);
        expect!(doca_comch_server_destroy(self.server), DOCA_SUCCESS);
        expect!(doca_pe_destroy(self.cpe), DOCA_SUCCESS);
        expect!(doca_pe_destroy(self.spe), DOCA_SUCCESS);
        expect!(doca_dev_close(self.host), DOCA_SUCCESS);
        expect!(doca_dev_rep_close(self.rep), DOCA_SUCCESS);
        expect!(doca_dev_close(self.arm), DOCA_SUCCESS);
    }
}

/// Page-aligned memory of its own registered with an mmap (started or not) and a buffer
/// inventory, as consumer memory should be.
struct Memory {
    mem: *mut u8,
    len: usize,
    mmap: *mut doca_mmap,
    inv: *mut doca_buf_inventory,
    bufs: Vec<*mut doca_buf>,
}

impl Memory {
    fn new(dev: *mut doca_dev, pages: usize, access: u32, start: bool) -> Memory {
        let len = pages * PAGE;
        // SAFETY: a non-zero size.
        let mem = unsafe { std::alloc::alloc_zeroed(Layout::from_size_align(len, PAGE).unwrap()) };
        assert!(!mem.is_null());
        let mut mmap = null_mut();
        expect!(doca_mmap_create(&mut mmap), DOCA_SUCCESS);
        expect!(doca_mmap_set_memrange(mmap, mem.cast(), len), DOCA_SUCCESS);
        expect!(doca_mmap_set_permissions(mmap, access), DOCA_SUCCESS);
        expect!(doca_mmap_add_dev(mmap, dev), DOCA_SUCCESS);
        if start {
            expect!(doca_mmap_start(mmap), DOCA_SUCCESS);
        }
        let mut inv = null_mut();
        expect!(doca_buf_inventory_create(pages, &mut inv), DOCA_SUCCESS);
        expect!(doca_buf_inventory_start(inv), DOCA_SUCCESS);
        Memory {
            mem,
            len,
            mmap,
            inv,
            bufs: Vec::new(),
        }
    }

    /// A buffer over page `i`, holding `data_len` bytes of data.
    fn buf(&mut self, i: usize, data_len: usize) -> *mut doca_buf {
        assert!((i + 1) * PAGE <= self.len);
        // SAFETY: inside the allocation.
        let page = unsafe { self.mem.add(i * PAGE) };
        let mut buf = null_mut();
        expect!(
            doca_buf_inventory_buf_get_by_args(
                self.inv,
                self.mmap,
                page.cast(),
                PAGE,
                page.cast(),
                data_len,
                &mut buf
            ),
            DOCA_SUCCESS
        );
        self.bufs.push(buf);
        buf
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        for &buf in &self.bufs {
            expect!(doca_buf_dec_refcount(buf, null_mut()), DOCA_SUCCESS);
        }
        expect!(doca_buf_inventory_destroy(self.inv), DOCA_SUCCESS);
        expect!(doca_mmap_destroy(self.mmap), DOCA_SUCCESS);
        // SAFETY: allocated in `new` with this layout; nothing points into it any more.
        unsafe { std::alloc::dealloc(self.mem, Layout::from_size_align(self.len, PAGE).unwrap()) };
    }
}

/// A consumer on `conn` receiving into `mmap`, configured and connected to `pe`, not started.
fn configured_consumer(
    conn: *mut doca_comch_connection,
    mmap: *mut doca_mmap,
    pe: *mut doca_pe,
) -> *mut doca_comch_consumer {
    let mut consumer = null_mut();
    expect!(
        doca_comch_consumer_create(conn, mmap, &mut consumer),
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
    consumer
}

/// A producer on `conn`, configured and connected to `pe`, not started.
fn configured_producer(
    conn: *mut doca_comch_connection,
    pe: *mut doca_pe,
) -> *mut doca_comch_producer {
    let mut producer = null_mut();
    expect!(
        doca_comch_producer_create(conn, &mut producer),
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
    producer
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[test]
fn null_parameters_are_invalid_value() {
    setup();
    let v = DOCA_ERROR_INVALID_VALUE;
    let c = Conn::open(c"fast-capi-null");
    let mut mem = Memory::new(c.host, 2, DOCA_ACCESS_FLAG_PCI_READ_WRITE, true);
    let buf = mem.buf(0, 0);
    let mut imm = [7u8; 8];

    // Creation: NULL connection, mmap or out-parameter.
    let mut consumer = null_mut();
    expect!(
        doca_comch_consumer_create(null_mut(), mem.mmap, &mut consumer),
        v
    );
    explained("comch_connection is NULL");
    expect!(
        doca_comch_consumer_create(c.cconn, null_mut(), &mut consumer),
        v
    );
    explained("buf_mmap is NULL");
    expect!(doca_comch_consumer_create(c.cconn, mem.mmap, null_mut()), v);
    explained("consumer is NULL");
    let mut producer = null_mut();
    expect!(doca_comch_producer_create(null_mut(), &mut producer), v);
    explained("comch_connection is NULL");
    expect!(doca_comch_producer_create(c.cconn, null_mut()), v);
    explained("producer is NULL");

    // NULL endpoints everywhere else.
    let mut id = 0u32;
    expect!(doca_comch_consumer_destroy(null_mut()), v);
    expect!(doca_comch_producer_destroy(null_mut()), v);
    expect!(doca_comch_consumer_as_ctx(null_mut()), null_mut());
    expect!(doca_comch_producer_as_ctx(null_mut()), null_mut());
    expect!(doca_comch_consumer_get_id(null(), &mut id), v);
    expect!(doca_comch_producer_get_id(null(), &mut id), v);
    expect!(doca_comch_consumer_set_imm_data_len(null_mut(), 8), v);
    expect!(
        doca_comch_consumer_task_post_recv_set_conf(
            null_mut(),
            Some(recv_done),
            Some(recv_done),
            4
        ),
        v
    );
    expect!(
        doca_comch_producer_task_send_set_conf(null_mut(), Some(send_done), Some(send_done), 4),
        v
    );
    let mut recv = null_mut();
    expect!(
        doca_comch_consumer_task_post_recv_alloc_init(null_mut(), buf, &mut recv),
        v
    );
    explained("consumer is NULL");
    let mut send = null_mut();
    expect!(
        doca_comch_producer_task_send_alloc_init(
            null_mut(),
            buf,
            imm.as_mut_ptr(),
            8,
            1,
            &mut send
        ),
        v
    );
    explained("producer is NULL");
    expect!(
        doca_comch_consumer_task_post_recv_as_task(null_mut()),
        null_mut()
    );
    expect!(
        doca_comch_producer_task_send_as_task(null_mut()),
        null_mut()
    );

    // Live endpoints: NULL callbacks, out-parameters and immediate data.
    let consumer = configured_consumer(c.cconn, mem.mmap, c.cpe);
    let producer = configured_producer(c.sconn, c.spe);
    expect!(doca_comch_consumer_get_id(consumer, null_mut()), v);
    expect!(doca_comch_producer_get_id(producer, null_mut()), v);
    expect!(
        doca_comch_consumer_task_post_recv_set_conf(consumer, None, Some(recv_done), 4),
        v
    );
    explained("both the completion and the error callback");
    expect!(
        doca_comch_producer_task_send_set_conf(producer, Some(send_done), None, 4),
        v
    );
    explained("both the completion and the error callback");
    start_consumer(consumer, c.cpe);
    expect!(doca_ctx_start(producer_ctx(producer)), DOCA_SUCCESS);
    expect!(
        doca_comch_consumer_task_post_recv_alloc_init(consumer, buf, null_mut()),
        v
    );
    explained("task is NULL");
    let mut src = Memory::new(c.arm, 1, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE, true);
    let data = src.buf(0, 64);
    expect!(
        doca_comch_producer_task_send_alloc_init(
            producer,
            data,
            imm.as_mut_ptr(),
            8,
            1,
            null_mut()
        ),
        v
    );
    explained("task is NULL");
    expect!(
        doca_comch_producer_task_send_alloc_init(producer, data, null_mut(), 8, 1, &mut send),
        v
    );
    explained("imm_data is NULL with imm_data_len 8");
    // No immediate data at all is fine, NULL or not.
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
    let v = DOCA_ERROR_INVALID_VALUE;
    let c = Conn::open(c"fast-capi-destroyed");
    let mut mem = Memory::new(c.host, 1, DOCA_ACCESS_FLAG_PCI_READ_WRITE, true);
    let buf = mem.buf(0, 0);
    let mut id = 0u32;

    let mut consumer = null_mut();
    expect!(
        doca_comch_consumer_create(c.cconn, mem.mmap, &mut consumer),
        DOCA_SUCCESS
    );
    expect!(doca_comch_consumer_destroy(consumer), DOCA_SUCCESS);
    expect!(doca_comch_consumer_get_id(consumer, &mut id), v);
    explained("was destroyed");
    expect!(doca_comch_consumer_as_ctx(consumer), null_mut());
    expect!(doca_ctx_start(consumer.cast()), v);
    let mut recv = null_mut();
    expect!(
        doca_comch_consumer_task_post_recv_alloc_init(consumer, buf, &mut recv),
        v
    );
    explained("was destroyed");
    expect!(doca_comch_consumer_destroy(consumer), v);

    let mut producer = null_mut();
    expect!(
        doca_comch_producer_create(c.sconn, &mut producer),
        DOCA_SUCCESS
    );
    expect!(doca_comch_producer_destroy(producer), DOCA_SUCCESS);
    expect!(doca_comch_producer_get_id(producer, &mut id), v);
    explained("was destroyed");
    let mut imm = [0u8; 8];
    let mut send = null_mut();
    expect!(
        doca_comch_producer_task_send_alloc_init(
            producer,
            null(),
            imm.as_mut_ptr(),
            8,
            1,
            &mut send
        ),
        v
    );
    explained("was destroyed");
    expect!(doca_comch_producer_destroy(producer), v);

    // A handle of another kind is not a connection.
    expect!(
        doca_comch_consumer_create(c.server.cast(), mem.mmap, &mut consumer),
        v
    );
    explained("is a struct doca_comch_server, not a struct doca_comch_connection");

    // Once the client has stopped, neither end of the connection takes endpoints.
    let (sconn, cconn) = (c.sconn, c.cconn);
    c.stop_client();
    expect!(
        doca_comch_consumer_create(cconn, mem.mmap, &mut consumer),
        v
    );
    explained("was destroyed");
    expect!(doca_comch_producer_create(cconn, &mut producer), v);
    explained("was destroyed");
    expect!(
        doca_comch_consumer_create(sconn, mem.mmap, &mut consumer),
        v
    );
    explained("was destroyed");
    expect!(doca_comch_producer_create(sconn, &mut producer), v);
    drop(mem);
    c.close();
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
    expect!(doca_comch_server_disconnect(c.server, sconn), DOCA_SUCCESS);
    c.stop_client();
    PROBE_MMAP.with(|p| p.set(null_mut()));
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
