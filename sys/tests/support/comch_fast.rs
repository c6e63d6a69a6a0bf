//! What the Comch fast-path tests share: a server and a client connected through the soft
//! device, consumer memory, and consumers and producers on a connection.
#![allow(dead_code)]

use super::support::*;
use dpakit_sys::*;
use std::alloc::Layout;
use std::ffi::CStr;
use std::ptr::null_mut;
use std::time::{Duration, Instant};

pub const PAGE: usize = 4096;
/// The most immediate data a consumer takes.
pub const MAX_IMM: u32 = 32;

pub fn consumer_ctx(consumer: *mut doca_comch_consumer) -> *mut doca_ctx {
    // SAFETY: a live consumer.
    unsafe { doca_comch_consumer_as_ctx(consumer) }
}

pub fn producer_ctx(producer: *mut doca_comch_producer) -> *mut doca_ctx {
    // SAFETY: a live producer.
    unsafe { doca_comch_producer_as_ctx(producer) }
}

/// Starts a consumer on a connection as DOCA does: `IN_PROGRESS`, then RUNNING through
/// progress of its PE.
#[track_caller]
pub fn start_consumer(consumer: *mut doca_comch_consumer, pe: *mut doca_pe) {
    expect!(
        doca_ctx_start(consumer_ctx(consumer)),
        DOCA_ERROR_IN_PROGRESS
    );
    assert_eq!(state(consumer_ctx(consumer)), DOCA_CTX_STATE_STARTING);
    let deadline = Instant::now() + Duration::from_secs(10);
    while state(consumer_ctx(consumer)) != DOCA_CTX_STATE_RUNNING {
        assert!(Instant::now() < deadline, "the consumer never ran");
        // SAFETY: a live PE.
        unsafe { doca_pe_progress(pe) };
    }
}

pub unsafe extern "C" fn recv_done(
    task: *mut doca_comch_consumer_task_post_recv,
    _: doca_data,
    _: doca_data,
) {
    // SAFETY: a completed task (flushed by a stop in these tests), freed once.
    unsafe { doca_task_free(doca_comch_consumer_task_post_recv_as_task(task)) };
}

pub unsafe extern "C" fn send_done(
    task: *mut doca_comch_producer_task_send,
    _: doca_data,
    _: doca_data,
) {
    // SAFETY: a completed task, freed once.
    unsafe { doca_task_free(doca_comch_producer_task_send_as_task(task)) };
}

/// A server and a client connected through the soft device, each side on its own PE.
pub struct Conn {
    pub arm: *mut doca_dev,
    pub rep: *mut doca_dev_rep,
    pub host: *mut doca_dev,
    pub spe: *mut doca_pe,
    pub cpe: *mut doca_pe,
    pub server: *mut doca_comch_server,
    pub client: *mut doca_comch_client,
    /// The server's end and the client's end.
    pub sconn: *mut doca_comch_connection,
    pub cconn: *mut doca_comch_connection,
}

impl Conn {
    pub fn open(name: &CStr) -> Conn {
        let arm = open_dev(ARM);
        let rep = open_rep(arm);
        let host = open_dev(HOST);
        let (spe, cpe) = (new_pe(), new_pe());
        let server = configured_server(arm, rep, name);
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

        let client = configured_client(host, name);
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
    pub fn stop_client(&self) {
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

    pub fn close(self) {
        self.stop_client();
        expect!(doca_comch_client_destroy(self.client), DOCA_SUCCESS);
        stop_and_destroy_server(self.server, self.spe);
        expect!(doca_pe_destroy(self.cpe), DOCA_SUCCESS);
        expect!(doca_pe_destroy(self.spe), DOCA_SUCCESS);
        expect!(doca_dev_close(self.host), DOCA_SUCCESS);
        expect!(doca_dev_rep_close(self.rep), DOCA_SUCCESS);
        expect!(doca_dev_close(self.arm), DOCA_SUCCESS);
    }
}

/// Page-aligned memory of its own registered with an mmap (started or not) and a buffer
/// inventory, as consumer memory should be.
pub struct Memory {
    pub mem: *mut u8,
    pub len: usize,
    pub mmap: *mut doca_mmap,
    pub inv: *mut doca_buf_inventory,
    pub bufs: Vec<*mut doca_buf>,
}

impl Memory {
    pub fn new(dev: *mut doca_dev, pages: usize, access: u32, start: bool) -> Memory {
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
    pub fn buf(&mut self, i: usize, data_len: usize) -> *mut doca_buf {
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
pub fn configured_consumer(
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
pub fn configured_producer(
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
