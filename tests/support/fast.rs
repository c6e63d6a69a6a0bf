//! The Comch fast path through DOCA's C API (`dpakit-sys`), as a C program drives it: a consumer
//! posting buffers of its mmap, a producer sending buffers of its own. Shared by the fast-path
//! tests; every call must succeed unless a test expects otherwise.
#![allow(dead_code)]

use dpakit_sys::*;
use std::cell::RefCell;
use std::collections::VecDeque;

use std::ptr::null_mut;

/// Calls a C function and asserts it succeeded, with the soft device's explanation otherwise.
macro_rules! ok {
    ($call:expr) => {{
        // SAFETY: the tests pass live handles and valid pointers, as a correct C program does.
        let rc = unsafe { $call };
        assert_eq!(
            rc,
            DOCA_SUCCESS,
            "{} failed: {}",
            stringify!($call),
            last_error()
        );
    }};
}

/// The soft device's explanation of the thread's last failed call (none on DOCA's libraries).
pub fn last_error() -> String {
    let Some(soft) = dpakit_sys::soft::api() else {
        return String::new();
    };
    let mut buf = [0u8; 512];
    // SAFETY: a writable buffer of its length.
    unsafe { (soft.last_error)(buf.as_mut_ptr().cast(), buf.len()) };
    std::ffi::CStr::from_bytes_until_nul(&buf)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// The bytes message `seq` of `len` bytes carries: a 64-byte block derived from `seq`, repeated
/// (compared with memcmp, fast even in debug builds).
pub fn block(seq: u64) -> [u8; 64] {
    std::array::from_fn(|i| {
        (seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (i % 8 * 8)) as u8 ^ i as u8
    })
}

pub fn fill(dst: &mut [u8], seq: u64) {
    let b = block(seq);
    for chunk in dst.chunks_mut(64) {
        chunk.copy_from_slice(&b[..chunk.len()]);
    }
}

pub fn check(got: &[u8], seq: u64) -> bool {
    let b = block(seq);
    got.chunks(64).all(|c| c == &b[..c.len()])
}

/// Sizes from 64 B to 1 MiB: mostly small, every 97th message large.
pub fn size_of(seq: u64) -> usize {
    let r = seq.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33;
    if seq % 97 == 0 {
        64 << (r % 15) // 64 B .. 1 MiB
    } else {
        64 + (r % 4033) as usize
    }
}

pub const MAX_SIZE: usize = 1 << 20;

/// Sleeps on a PE's notification handle until work arrives or `ms` pass.
pub fn pe_wait(pe: *mut doca_pe, ms: i32) {
    let mut fd = -1;
    ok!(doca_pe_get_notification_handle(pe, &mut fd));
    ok!(doca_pe_request_notification(pe));
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut pfd, 1, ms) };
    ok!(doca_pe_clear_notification(pe, fd));
}

/// An mmap of `len` bytes with its buffer inventory.
pub struct Memory {
    pub mem: Vec<u8>,
    pub mmap: *mut doca_mmap,
    pub inv: *mut doca_buf_inventory,
}

impl Memory {
    pub fn new(dev: *mut doca_dev, len: usize, n_bufs: usize, pci_rw: bool) -> Memory {
        let mut mem = vec![0u8; len];
        let mut mmap = null_mut();
        ok!(doca_mmap_create(&mut mmap));
        ok!(doca_mmap_set_memrange(mmap, mem.as_mut_ptr().cast(), len));
        let flags = if pci_rw {
            DOCA_ACCESS_FLAG_PCI_READ_WRITE
        } else {
            DOCA_ACCESS_FLAG_LOCAL_READ_WRITE
        };
        ok!(doca_mmap_set_permissions(mmap, flags));
        ok!(doca_mmap_add_dev(mmap, dev));
        ok!(doca_mmap_start(mmap));
        let mut inv = null_mut();
        ok!(doca_buf_inventory_create(n_bufs, &mut inv));
        ok!(doca_buf_inventory_start(inv));
        Memory { mem, mmap, inv }
    }

    /// A buffer over `[off, off + len)`, empty (data length 0).
    pub fn buf(&mut self, off: usize, len: usize) -> *mut doca_buf {
        let mut b = null_mut();
        // SAFETY: inside `mem`.
        let p = unsafe { self.mem.as_mut_ptr().add(off) };
        ok!(doca_buf_inventory_buf_get_by_args(
            self.inv,
            self.mmap,
            p.cast(),
            len,
            p.cast(),
            0,
            &mut b
        ));
        b
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        ok!(doca_buf_inventory_destroy(self.inv));
        ok!(doca_mmap_destroy(self.mmap));
    }
}

/// What a consumer received: sequence number (from the immediate data), data, producer id.
#[derive(Default)]
pub struct Inbox {
    pub got: VecDeque<(u64, Vec<u8>, u32)>,
    pub errors: Vec<u32>,
    /// Tasks completed and handed back by the callback, to post again.
    pub repost: Vec<*mut doca_comch_consumer_task_post_recv>,
    pub bad: u64,
    pub count: u64,
    /// Keep every message (else only check it).
    pub keep: bool,
    /// Per producer id, the last message number: numbers (the low 40 bits of the sequence)
    /// must come 0, 1, 2, ... from each producer.
    pub last: Vec<(u32, u64)>,
    pub disorder: u64,
}

/// The sequence number of message `n` of the `producer`-th producer of a test.
pub fn seq_of(producer: u64, n: u64) -> u64 {
    producer << 40 | n
}

unsafe extern "C" fn recv_ok(
    task: *mut doca_comch_consumer_task_post_recv,
    _t: doca_data,
    ctx: doca_data,
) {
    // SAFETY: the consumer's user data is its boxed Inbox cell.
    let inbox = unsafe { &*ctx.ptr.cast::<RefCell<Inbox>>() };
    let mut inbox = inbox.borrow_mut();
    // SAFETY: a completed task of ours and its buffer.
    unsafe {
        let imm = doca_comch_consumer_task_post_recv_get_imm_data(task);
        let imm_len = doca_comch_consumer_task_post_recv_get_imm_data_len(task);
        assert_eq!(imm_len, 8);
        let seq = u64::from_le_bytes(std::slice::from_raw_parts(imm, 8).try_into().unwrap());
        let buf = doca_comch_consumer_task_post_recv_get_buf(task);
        let mut data = null_mut();
        let mut len = 0;
        doca_buf_get_data(buf, &mut data);
        doca_buf_get_data_len(buf, &mut len);
        let bytes = std::slice::from_raw_parts(data.cast::<u8>(), len);
        if len != size_of(seq) || !check(bytes, seq) {
            inbox.bad += 1;
        }
        let producer = doca_comch_consumer_task_post_recv_get_producer_id(task);
        let kept = if inbox.keep {
            bytes.to_vec()
        } else {
            Vec::new()
        };
        inbox.got.push_back((seq, kept, producer));
        inbox.count += 1;
        doca_buf_reset_data_len(buf);
    }
    inbox.repost.push(task);
}

unsafe extern "C" fn recv_err(
    task: *mut doca_comch_consumer_task_post_recv,
    _t: doca_data,
    ctx: doca_data,
) {
    // SAFETY: as in recv_ok.
    let inbox = unsafe { &*ctx.ptr.cast::<RefCell<Inbox>>() };
    // SAFETY: a completed task of ours.
    let status = unsafe {
        let t = doca_comch_consumer_task_post_recv_as_task(task);
        let s = doca_task_get_status(t);
        doca_task_free(t);
        s
    };
    inbox.borrow_mut().errors.push(status);
}

/// A consumer on a connection with `n` posted buffers of `MAX_SIZE`.
pub struct Consumer {
    pub raw: *mut doca_comch_consumer,
    pub pe: *mut doca_pe,
    pub inbox: Box<RefCell<Inbox>>,
    pub mem: Memory,
    pub id: u32,
    bufs: Vec<*mut doca_buf>,
}

impl Consumer {
    pub fn start(conn: *mut doca_comch_connection, dev: *mut doca_dev, n: u32) -> Consumer {
        let c = Consumer::start_sized(conn, dev, n, MAX_SIZE);
        c.post_all();
        c
    }

    /// A started consumer with `n` tasks over buffers of `size` bytes, none posted yet.
    pub fn start_sized(
        conn: *mut doca_comch_connection,
        dev: *mut doca_dev,
        n: u32,
        size: usize,
    ) -> Consumer {
        let mut mem = Memory::new(dev, n as usize * size, n as usize, true);
        let mut pe = null_mut();
        ok!(doca_pe_create(&mut pe));
        let mut raw = null_mut();
        ok!(doca_comch_consumer_create(conn, mem.mmap, &mut raw));
        ok!(doca_comch_consumer_set_imm_data_len(raw, 32));
        ok!(doca_comch_consumer_task_post_recv_set_conf(
            raw,
            Some(recv_ok),
            Some(recv_err),
            n
        ));
        let inbox: Box<RefCell<Inbox>> = Box::default();
        // SAFETY: a live consumer.
        let ctx = unsafe { doca_comch_consumer_as_ctx(raw) };
        ok!(doca_ctx_set_user_data(
            ctx,
            doca_data {
                ptr: (&*inbox as *const RefCell<Inbox>).cast_mut().cast()
            }
        ));
        ok!(doca_pe_connect_ctx(pe, ctx));
        // A consumer on a connection starts as on DOCA: IN_PROGRESS, RUNNING through progress.
        // SAFETY: a live, configured context.
        let rc = unsafe { doca_ctx_start(ctx) };
        assert_eq!(rc, DOCA_ERROR_IN_PROGRESS, "{}", last_error());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let mut state = DOCA_CTX_STATE_IDLE;
            ok!(doca_ctx_get_state(ctx, &mut state));
            if state == DOCA_CTX_STATE_RUNNING {
                break;
            }
            assert!(
                state == DOCA_CTX_STATE_STARTING && std::time::Instant::now() < deadline,
                "the consumer did not start: {}",
                last_error()
            );
            // SAFETY: a live PE.
            unsafe { doca_pe_progress(pe) };
        }
        let mut id = 0;
        ok!(doca_comch_consumer_get_id(raw, &mut id));
        let mut bufs = Vec::new();
        let mut tasks = Vec::new();
        for i in 0..n as usize {
            let buf = mem.buf(i * size, size);
            bufs.push(buf);
            let mut task = null_mut();
            ok!(doca_comch_consumer_task_post_recv_alloc_init(
                raw, buf, &mut task
            ));
            tasks.push(task);
        }
        inbox.borrow_mut().repost = tasks;
        Consumer {
            raw,
            pe,
            inbox,
            mem,
            id,
            bufs,
        }
    }

    /// Posts every task the consumer holds.
    pub fn post_all(&self) {
        let repost = std::mem::take(&mut self.inbox.borrow_mut().repost);
        for task in repost {
            ok!(doca_task_submit(
                doca_comch_consumer_task_post_recv_as_task(task)
            ));
        }
    }

    /// Progresses without posting anything.
    pub fn progress_only(&self) -> bool {
        // SAFETY: a live PE.
        unsafe { doca_pe_progress(self.pe) != 0 }
    }

    /// Progresses and posts the completed buffers again.
    pub fn progress(&self) -> bool {
        // SAFETY: a live PE.
        let ran = unsafe { doca_pe_progress(self.pe) } != 0;
        self.post_all();
        ran
    }

    /// Stops (progressing until idle), frees the tasks and destroys the consumer.
    pub fn destroy(self) {
        // SAFETY: a live consumer.
        let ctx = unsafe { doca_comch_consumer_as_ctx(self.raw) };
        // SAFETY: as above.
        let rc = unsafe { doca_ctx_stop(ctx) };
        assert!(
            rc == DOCA_SUCCESS || rc == DOCA_ERROR_IN_PROGRESS,
            "{}",
            last_error()
        );
        loop {
            // SAFETY: a live PE.
            unsafe { doca_pe_progress(self.pe) };
            for task in std::mem::take(&mut self.inbox.borrow_mut().repost) {
                // SAFETY: a completed task of ours.
                unsafe { doca_task_free(doca_comch_consumer_task_post_recv_as_task(task)) };
            }
            let mut state = 0;
            ok!(doca_ctx_get_state(ctx, &mut state));
            if state == DOCA_CTX_STATE_IDLE {
                break;
            }
        }
        ok!(doca_comch_consumer_destroy(self.raw));
        ok!(doca_pe_destroy(self.pe));
        for &buf in &self.bufs {
            let mut left = 0;
            ok!(doca_buf_dec_refcount(buf, &mut left));
        }
    }
}

/// Completed sends of a producer: (user data, status).
#[derive(Default)]
pub struct Outbox {
    pub done: Vec<(u64, u32)>,
}

unsafe extern "C" fn send_done(
    task: *mut doca_comch_producer_task_send,
    t: doca_data,
    ctx: doca_data,
) {
    // SAFETY: the producer's user data is its boxed Outbox cell.
    let outbox = unsafe { &*ctx.ptr.cast::<RefCell<Outbox>>() };
    // SAFETY: a completed task of ours; its buffer goes back to the inventory.
    let status = unsafe {
        let tk = doca_comch_producer_task_send_as_task(task);
        let s = doca_task_get_status(tk);
        let buf = doca_comch_producer_task_send_get_buf(task);
        if !buf.is_null() {
            let mut left = 0;
            doca_buf_dec_refcount(buf.cast_mut(), &mut left);
        }
        doca_task_free(tk);
        s
    };
    // SAFETY: the user data is the u64 the test stored.
    outbox.borrow_mut().done.push((unsafe { t.u64_ }, status));
}

/// A producer on a connection sending buffers of its own memory.
pub struct Producer {
    pub raw: *mut doca_comch_producer,
    pub pe: *mut doca_pe,
    pub outbox: Box<RefCell<Outbox>>,
    pub mem: Memory,
    pub slots: usize,
    next_slot: usize,
}

impl Producer {
    pub fn start(conn: *mut doca_comch_connection, dev: *mut doca_dev, slots: usize) -> Producer {
        let mem = Memory::new(dev, slots * MAX_SIZE, slots, false);
        let mut pe = null_mut();
        ok!(doca_pe_create(&mut pe));
        let mut raw = null_mut();
        ok!(doca_comch_producer_create(conn, &mut raw));
        ok!(doca_comch_producer_task_send_set_conf(
            raw,
            Some(send_done),
            Some(send_done),
            slots as u32
        ));
        let outbox: Box<RefCell<Outbox>> = Box::default();
        // SAFETY: a live producer.
        let ctx = unsafe { doca_comch_producer_as_ctx(raw) };
        ok!(doca_ctx_set_user_data(
            ctx,
            doca_data {
                ptr: (&*outbox as *const RefCell<Outbox>).cast_mut().cast()
            }
        ));
        ok!(doca_pe_connect_ctx(pe, ctx));
        ok!(doca_ctx_start(ctx));
        Producer {
            raw,
            pe,
            outbox,
            mem,
            slots,
            next_slot: 0,
        }
    }

    /// Sends message `seq` to consumer `id` from the next buffer slot; the caller keeps at
    /// most `slots` sends in flight. Returns the submit status.
    pub fn send(&mut self, id: u32, seq: u64) -> u32 {
        let len = size_of(seq);
        let off = self.next_slot * MAX_SIZE;
        self.next_slot = (self.next_slot + 1) % self.slots;
        fill(&mut self.mem.mem[off..off + len], seq);
        let mut buf = null_mut();
        // SAFETY: inside the producer's memory.
        let p = unsafe { self.mem.mem.as_mut_ptr().add(off) };
        ok!(doca_buf_inventory_buf_get_by_args(
            self.mem.inv,
            self.mem.mmap,
            p.cast(),
            len,
            p.cast(),
            len,
            &mut buf
        ));
        let mut imm = seq.to_le_bytes();
        let mut task = null_mut();
        ok!(doca_comch_producer_task_send_alloc_init(
            self.raw,
            buf,
            imm.as_mut_ptr(),
            8,
            id,
            &mut task
        ));
        // SAFETY: a task we just allocated.
        let t = unsafe { doca_comch_producer_task_send_as_task(task) };
        // SAFETY: as above.
        unsafe { doca_task_set_user_data(t, doca_data { u64_: seq }) };
        // SAFETY: as above.
        let rc = unsafe { doca_task_submit(t) };
        if rc != DOCA_SUCCESS {
            // SAFETY: not submitted, so ours.
            unsafe {
                doca_task_free(t);
                let mut left = 0;
                doca_buf_dec_refcount(buf, &mut left);
            }
        }
        rc
    }

    pub fn progress(&self) -> bool {
        // SAFETY: a live PE.
        unsafe { doca_pe_progress(self.pe) != 0 }
    }

    pub fn destroy(self) {
        // SAFETY: a live producer.
        let ctx = unsafe { doca_comch_producer_as_ctx(self.raw) };
        // SAFETY: as above.
        let rc = unsafe { doca_ctx_stop(ctx) };
        assert!(
            rc == DOCA_SUCCESS || rc == DOCA_ERROR_IN_PROGRESS,
            "{}",
            last_error()
        );
        loop {
            let mut state = 0;
            ok!(doca_ctx_get_state(ctx, &mut state));
            if state == DOCA_CTX_STATE_IDLE {
                break;
            }
            // SAFETY: a live PE.
            unsafe { doca_pe_progress(self.pe) };
        }
        ok!(doca_comch_producer_destroy(self.raw));
        ok!(doca_pe_destroy(self.pe));
    }
}
