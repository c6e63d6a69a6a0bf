//! The Comch fast path on a connection (`doca_comch_consumer`, `doca_comch_producer`): a
//! consumer owns receive buffers the peer's producers write into in place; a producer loans
//! a buffer of its own, the program writes it, and the send moves it to a consumer.

use super::{Connection, SendCompletion, start_on_pe};
use crate::ctx::{self, CtxState, StateChangedCb};
use crate::error::{Result, bail, doca};
use crate::mmap::{AccessFlags, Mmap};
use crate::pe::Pe;
use dpakit_abi::{ErrorCode, MAX_IMM_DATA_LEN};
use dpakit_sys as sys;
use std::cell::{Cell, RefCell};
use std::fmt;

/// A message a consumer received, valid during its callback (the buffer is posted again when
/// the callback returns: copy what must outlive it). Callbacks run in [`Pe::progress`].
#[derive(Debug)]
pub struct Received<'a> {
    /// The bytes the producer wrote.
    pub data: &'a [u8],
    /// The immediate data sent with them.
    pub imm: &'a [u8],
    /// `doca_comch_consumer_task_post_recv_get_producer_id`.
    pub producer_id: u32,
}

type RecvCb = Box<dyn FnMut(&Received<'_>)>;

/// An mmap the endpoint allocates and its buffers, `size` bytes each.
struct Slots {
    mmap: Mmap,
    inventory: *mut sys::doca_buf_inventory,
    bufs: Vec<*mut sys::doca_buf>,
    size: usize,
}

impl Slots {
    fn new(dev: &crate::dev::Dev, n: u32, size: usize, access: AccessFlags) -> Result<Slots> {
        let mmap = Mmap::alloc(n as usize * size.max(1))?;
        mmap.set_permissions(access)?;
        mmap.add_dev(dev)?;
        mmap.start()?;
        let mut inventory = std::ptr::null_mut();
        doca!(doca_buf_inventory_create(n as usize, &mut inventory))?;
        let mut slots = Slots {
            mmap,
            inventory,
            bufs: Vec::with_capacity(n as usize),
            size,
        };
        doca!(doca_buf_inventory_start(inventory))?;
        let (base, _) = slots.mmap.range();
        for i in 0..n as usize {
            // SAFETY: inside the mmap's range.
            let addr = unsafe { base.add(i * size) };
            let mut buf = std::ptr::null_mut();
            doca!(doca_buf_inventory_buf_get_by_args(
                inventory,
                slots.mmap.as_raw(),
                addr.cast(),
                size,
                addr.cast(),
                0,
                &mut buf
            ))?;
            slots.bufs.push(buf);
        }
        Ok(slots)
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        for &buf in &self.bufs {
            let mut left = 0;
            let _ = doca!(doca_buf_dec_refcount(buf, &mut left));
        }
        let _ = doca!(doca_buf_inventory_destroy(self.inventory));
    }
}

/// What the consumer's callbacks reach through its context's user data.
struct ConsumerInner {
    raw: *mut sys::doca_comch_consumer,
    ctx: *mut sys::doca_ctx,
    pe: Pe,
    on_recv: RefCell<Option<RecvCb>>,
    on_state_changed: Option<StateChangedCb>,
    /// Receives allocated at start and not posted yet.
    repost: RefCell<Vec<*mut sys::doca_comch_consumer_task_post_recv>>,
    /// Receives that failed (their status), e.g. flushed by a stop.
    failed: Cell<u64>,
}

impl super::HasStateCallback for ConsumerInner {
    fn state_callback(&self) -> Option<&StateChangedCb> {
        self.on_state_changed.as_ref()
    }
}

/// `doca_comch_consumer` on a connection: receives into buffers of its own memory, posted
/// again after each callback.
#[doc(alias = "doca_comch_consumer")]
pub struct Consumer {
    inner: Box<ConsumerInner>,
    id: u32,
    // Dropped after the consumer is destroyed: its memory outlives every posted receive.
    slots: Slots,
}

impl fmt::Debug for Consumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer").field("id", &self.id).finish()
    }
}

unsafe extern "C" fn recv_done(
    task: *mut sys::doca_comch_consumer_task_post_recv,
    _task_data: sys::doca_data,
    ctx_data: sys::doca_data,
) {
    // SAFETY: the consumer's user data is its boxed inner state.
    let inner = unsafe { &*ctx_data.ptr.cast::<ConsumerInner>() };
    // SAFETY: a completed task of ours: its buffer and immediate data are readable until it is
    // posted again, which happens after the callback.
    let (data, imm, producer_id) = unsafe {
        let buf = sys::doca_comch_consumer_task_post_recv_get_buf(task);
        let mut ptr = std::ptr::null_mut();
        let mut len = 0;
        sys::doca_buf_get_data(buf, &mut ptr);
        sys::doca_buf_get_data_len(buf, &mut len);
        let data: &[u8] = if len == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(ptr.cast(), len)
        };
        let imm_len = sys::doca_comch_consumer_task_post_recv_get_imm_data_len(task) as usize;
        let imm_ptr = sys::doca_comch_consumer_task_post_recv_get_imm_data(task);
        let imm: &[u8] = if imm_len == 0 || imm_ptr.is_null() {
            &[]
        } else {
            std::slice::from_raw_parts(imm_ptr, imm_len.min(MAX_IMM_DATA_LEN))
        };
        (
            data,
            imm,
            sys::doca_comch_consumer_task_post_recv_get_producer_id(task),
        )
    };
    inner.pe.catch(|| {
        if let Some(cb) = inner.on_recv.borrow_mut().as_mut() {
            cb(&Received {
                data,
                imm,
                producer_id,
            });
        }
    });
    // Posted again at once, emptied; a stopping consumer takes the task back instead.
    // SAFETY: our buffer and task, completed.
    unsafe {
        sys::doca_buf_reset_data_len(sys::doca_comch_consumer_task_post_recv_get_buf(task));
        let t = sys::doca_comch_consumer_task_post_recv_as_task(task);
        if sys::doca_task_submit(t) != sys::DOCA_SUCCESS {
            sys::doca_task_free(t);
        }
    }
}

unsafe extern "C" fn recv_failed(
    task: *mut sys::doca_comch_consumer_task_post_recv,
    _task_data: sys::doca_data,
    ctx_data: sys::doca_data,
) {
    // SAFETY: as in recv_done.
    let inner = unsafe { &*ctx_data.ptr.cast::<ConsumerInner>() };
    inner.failed.set(inner.failed.get() + 1);
    // SAFETY: a completed task of ours, not posted again (the consumer is stopping).
    unsafe { sys::doca_task_free(sys::doca_comch_consumer_task_post_recv_as_task(task)) };
}

/// Configuration of a [`Consumer`].
pub struct ConsumerBuilder<'a> {
    conn: Connection,
    dev: &'a crate::dev::Dev,
    pe: &'a Pe,
    num_recv: u32,
    buf_size: usize,
    imm_data_len: u32,
    on_recv: Option<RecvCb>,
    on_state_changed: Option<StateChangedCb>,
}

impl fmt::Debug for ConsumerBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConsumerBuilder")
            .field("num_recv", &self.num_recv)
            .field("buf_size", &self.buf_size)
            .finish()
    }
}

impl<'a> ConsumerBuilder<'a> {
    /// How many receives stay posted (`doca_comch_consumer_task_post_recv_set_conf`; default
    /// 16).
    pub fn num_recv(mut self, n: u32) -> Self {
        self.num_recv = n;
        self
    }

    /// The size of each receive buffer (default 4096): the largest message it takes.
    pub fn buf_size(mut self, size: usize) -> Self {
        self.buf_size = size;
        self
    }

    /// `doca_comch_consumer_set_imm_data_len` (default 32).
    #[doc(alias = "doca_comch_consumer_set_imm_data_len")]
    pub fn imm_data_len(mut self, len: u32) -> Self {
        self.imm_data_len = len;
        self
    }

    /// The receive callback, run by [`Pe::progress`].
    pub fn on_recv(mut self, cb: impl FnMut(&Received<'_>) + 'static) -> Self {
        self.on_recv = Some(Box::new(cb));
        self
    }

    /// `doca_ctx_set_state_changed_cb`.
    pub fn on_state_changed(mut self, cb: impl Fn(CtxState, CtxState) + 'static) -> Self {
        self.on_state_changed = Some(Box::new(cb));
        self
    }

    /// `doca_comch_consumer_create` + configuration + start, then every buffer is posted: the
    /// peer hears of the consumer (its new-consumer event) and may send.
    pub fn start(self) -> Result<Consumer> {
        let slots = Slots::new(
            self.dev,
            self.num_recv,
            self.buf_size,
            AccessFlags::PCI_READ_WRITE,
        )?;
        let mut raw = std::ptr::null_mut();
        doca!(doca_comch_consumer_create(
            self.conn.as_raw(),
            slots.mmap.as_raw(),
            &mut raw
        ))?;
        // SAFETY: a consumer we just created.
        let ctx = unsafe { sys::doca_comch_consumer_as_ctx(raw) };
        let mut id = 0;
        let consumer = Consumer {
            inner: Box::new(ConsumerInner {
                raw,
                ctx,
                pe: self.pe.clone(),
                on_recv: RefCell::new(self.on_recv),
                on_state_changed: self.on_state_changed,
                repost: RefCell::new(Vec::with_capacity(self.num_recv as usize)),
                failed: Cell::new(0),
            }),
            id: 0,
            slots,
        };
        doca!(doca_comch_consumer_set_imm_data_len(raw, self.imm_data_len))?;
        doca!(doca_comch_consumer_task_post_recv_set_conf(
            raw,
            Some(recv_done),
            Some(recv_failed),
            self.num_recv
        ))?;
        start_on_pe(ctx, &*consumer.inner, self.pe)?;
        doca!(doca_comch_consumer_get_id(raw, &mut id))?;
        let mut consumer = consumer;
        consumer.id = id;
        for &buf in &consumer.slots.bufs {
            let mut task = std::ptr::null_mut();
            doca!(doca_comch_consumer_task_post_recv_alloc_init(
                raw, buf, &mut task
            ))?;
            consumer.inner.repost.borrow_mut().push(task);
        }
        consumer.post()?;
        Ok(consumer)
    }
}

impl Consumer {
    /// A consumer on `conn` (a live connection of a server or client on this thread), with
    /// memory registered on `dev`, driven by `pe`.
    pub fn builder<'a>(
        conn: Connection,
        dev: &'a crate::dev::Dev,
        pe: &'a Pe,
    ) -> ConsumerBuilder<'a> {
        ConsumerBuilder {
            conn,
            dev,
            pe,
            num_recv: 16,
            buf_size: 4096,
            imm_data_len: MAX_IMM_DATA_LEN as u32,
            on_recv: None,
            on_state_changed: None,
        }
    }

    /// `doca_comch_consumer_get_id`: what the peer's producers address.
    #[doc(alias = "doca_comch_consumer_get_id")]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Posts the buffers not posted yet (at start).
    fn post(&self) -> Result<()> {
        let tasks = std::mem::take(&mut *self.inner.repost.borrow_mut());
        for task in tasks {
            // SAFETY: a task of ours, owned by us (completed or never submitted).
            let t = unsafe { sys::doca_comch_consumer_task_post_recv_as_task(task) };
            doca!(doca_task_submit(t))?;
        }
        Ok(())
    }

    /// `doca_ctx_get_state`.
    pub fn state(&self) -> Result<CtxState> {
        ctx::state(self.inner.ctx)
    }

    /// `doca_ctx_stop`, progressing until idle: the peer hears the consumer expired.
    pub fn stop(&self) -> Result<()> {
        if ctx::state(self.inner.ctx)? == CtxState::Idle {
            return Ok(());
        }
        // Tasks waiting to be posted again are ours: free them so the stop can finish.
        for task in self.inner.repost.borrow_mut().drain(..) {
            // SAFETY: owned by us, not submitted.
            unsafe { sys::doca_task_free(sys::doca_comch_consumer_task_post_recv_as_task(task)) };
        }
        ctx::stop_until_idle(self.inner.ctx, Some(&self.inner.pe))
    }
}

impl Drop for Consumer {
    #[doc(alias = "doca_comch_consumer_destroy")]
    fn drop(&mut self) {
        // Nothing a destructor could act on if teardown fails; the soft device reports it.
        let _ = self.stop();
        let _ = doca!(doca_comch_consumer_destroy(self.inner.raw));
    }
}

// ---------------------------------------------------------------------------------------------
// Producer
// ---------------------------------------------------------------------------------------------

type SendCb = Box<dyn FnMut(SendCompletion)>;

struct ProducerInner {
    raw: *mut sys::doca_comch_producer,
    ctx: *mut sys::doca_ctx,
    pe: Pe,
    /// Free buffer slots.
    free: RefCell<Vec<u32>>,
    /// The user data of each slot's send.
    user_data: RefCell<Vec<u64>>,
    on_send: RefCell<Option<SendCb>>,
    on_state_changed: Option<StateChangedCb>,
}

impl super::HasStateCallback for ProducerInner {
    fn state_callback(&self) -> Option<&StateChangedCb> {
        self.on_state_changed.as_ref()
    }
}

/// `doca_comch_producer` on a connection: loans buffers of its own memory to write and sends
/// them to the peer's consumers.
#[doc(alias = "doca_comch_producer")]
pub struct Producer {
    inner: Box<ProducerInner>,
    id: u32,
    slots: Slots,
}

impl fmt::Debug for Producer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer").field("id", &self.id).finish()
    }
}

unsafe extern "C" fn send_finished(
    task: *mut sys::doca_comch_producer_task_send,
    task_data: sys::doca_data,
    ctx_data: sys::doca_data,
) {
    // SAFETY: the producer's user data is its boxed inner state.
    let inner = unsafe { &*ctx_data.ptr.cast::<ProducerInner>() };
    // SAFETY: a completed task of ours.
    let raw = unsafe {
        let t = sys::doca_comch_producer_task_send_as_task(task);
        let status = sys::doca_task_get_status(t);
        sys::doca_task_free(t);
        status
    };
    let slot = crate::data_bits(task_data) as u32;
    let user_data = inner
        .user_data
        .borrow()
        .get(slot as usize)
        .copied()
        .unwrap_or(0);
    inner.free.borrow_mut().push(slot);
    let status = ErrorCode::from_raw(raw as i32).unwrap_or(ErrorCode::Unknown);
    inner.pe.catch(|| {
        if let Some(cb) = inner.on_send.borrow_mut().as_mut() {
            cb(SendCompletion { user_data, status });
        }
    });
}

/// Configuration of a [`Producer`].
pub struct ProducerBuilder<'a> {
    conn: Connection,
    dev: &'a crate::dev::Dev,
    pe: &'a Pe,
    num_send: u32,
    buf_size: usize,
    on_send: Option<SendCb>,
    on_state_changed: Option<StateChangedCb>,
}

impl fmt::Debug for ProducerBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProducerBuilder")
            .field("num_send", &self.num_send)
            .finish()
    }
}

impl<'a> ProducerBuilder<'a> {
    /// How many sends may be in flight (`doca_comch_producer_task_send_set_conf`; default 16).
    pub fn num_send(mut self, n: u32) -> Self {
        self.num_send = n;
        self
    }

    /// The size of each loaned buffer (default 4096).
    pub fn buf_size(mut self, size: usize) -> Self {
        self.buf_size = size;
        self
    }

    /// Send completions (success, or the error: `INVALID_VALUE` for more than the consumer's
    /// posted buffer takes, `NOT_FOUND` for a consumer that is gone).
    pub fn on_send_complete(mut self, cb: impl FnMut(SendCompletion) + 'static) -> Self {
        self.on_send = Some(Box::new(cb));
        self
    }

    /// `doca_ctx_set_state_changed_cb`.
    pub fn on_state_changed(mut self, cb: impl Fn(CtxState, CtxState) + 'static) -> Self {
        self.on_state_changed = Some(Box::new(cb));
        self
    }

    /// `doca_comch_producer_create` + configuration + start.
    pub fn start(self) -> Result<Producer> {
        let slots = Slots::new(
            self.dev,
            self.num_send,
            self.buf_size,
            AccessFlags::LOCAL_READ_WRITE,
        )?;
        let mut raw = std::ptr::null_mut();
        doca!(doca_comch_producer_create(self.conn.as_raw(), &mut raw))?;
        // SAFETY: a producer we just created.
        let ctx = unsafe { sys::doca_comch_producer_as_ctx(raw) };
        let mut producer = Producer {
            inner: Box::new(ProducerInner {
                raw,
                ctx,
                pe: self.pe.clone(),
                free: RefCell::new((0..self.num_send).rev().collect()),
                user_data: RefCell::new(vec![0; self.num_send as usize]),
                on_send: RefCell::new(self.on_send),
                on_state_changed: self.on_state_changed,
            }),
            id: 0,
            slots,
        };
        doca!(doca_comch_producer_task_send_set_conf(
            raw,
            Some(send_finished),
            Some(send_finished),
            self.num_send
        ))?;
        start_on_pe(ctx, &*producer.inner, self.pe)?;
        doca!(doca_comch_producer_get_id(raw, &mut producer.id))?;
        Ok(producer)
    }
}

/// A buffer loaned by [`Producer::loan`]: write it, then [`send`](Self::send) it. Dropping it
/// unsent returns it.
pub struct Loan<'a> {
    producer: &'a Producer,
    slot: u32,
    len: usize,
}

impl fmt::Debug for Loan<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Loan").field("len", &self.len).finish()
    }
}

impl Loan<'_> {
    /// The bytes to fill.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        let (base, _) = self.producer.slots.mmap.range();
        // SAFETY: the slot is loaned to us alone until sent or dropped; inside the mmap.
        unsafe {
            std::slice::from_raw_parts_mut(
                base.add(self.slot as usize * self.producer.slots.size),
                self.len,
            )
        }
    }

    /// `doca_comch_producer_task_send_alloc_init` + `doca_task_submit`: sends the buffer and
    /// `imm` to consumer `consumer_id`; the completion callback gets `user_data`.
    pub fn send(self, consumer_id: u32, imm: &[u8], user_data: u64) -> Result<()> {
        let p = self.producer;
        let slot = self.slot;
        let len = self.len;
        std::mem::forget(self);
        let r = p.submit(slot, len, consumer_id, imm, user_data);
        if r.is_err() {
            p.inner.free.borrow_mut().push(slot);
        }
        r
    }
}

impl Drop for Loan<'_> {
    fn drop(&mut self) {
        self.producer.inner.free.borrow_mut().push(self.slot);
    }
}

impl Producer {
    /// A producer on `conn` (a live connection of a server or client on this thread), with
    /// memory registered on `dev`, driven by `pe`.
    pub fn builder<'a>(
        conn: Connection,
        dev: &'a crate::dev::Dev,
        pe: &'a Pe,
    ) -> ProducerBuilder<'a> {
        ProducerBuilder {
            conn,
            dev,
            pe,
            num_send: 16,
            buf_size: 4096,
            on_send: None,
            on_state_changed: None,
        }
    }

    /// `doca_comch_producer_get_id`: what consumers see as the sender.
    #[doc(alias = "doca_comch_producer_get_id")]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// A buffer of `len` bytes to write and send; `NO_MEMORY` while every buffer is in
    /// flight, `INVALID_VALUE` beyond the configured buffer size.
    pub fn loan(&self, len: usize) -> Result<Loan<'_>> {
        if len > self.slots.size {
            bail!(
                InvalidValue,
                "a {len}-byte buffer is larger than the producer's buffers ({} bytes)",
                self.slots.size
            );
        }
        let Some(slot) = self.inner.free.borrow_mut().pop() else {
            bail!(
                NoMemory,
                "every buffer is in flight: progress to complete sends"
            );
        };
        Ok(Loan {
            producer: self,
            slot,
            len,
        })
    }

    /// Copies `data` into a loaned buffer and sends it.
    pub fn send(&self, consumer_id: u32, data: &[u8], imm: &[u8], user_data: u64) -> Result<()> {
        let mut loan = self.loan(data.len())?;
        loan.as_mut_slice().copy_from_slice(data);
        loan.send(consumer_id, imm, user_data)
    }

    fn submit(
        &self,
        slot: u32,
        len: usize,
        consumer_id: u32,
        imm: &[u8],
        user_data: u64,
    ) -> Result<()> {
        if imm.len() > MAX_IMM_DATA_LEN {
            bail!(
                InvalidValue,
                "{} bytes of immediate data; a consumer takes at most {MAX_IMM_DATA_LEN}",
                imm.len()
            );
        }
        let buf = self.slots.bufs[slot as usize];
        let (base, _) = self.slots.mmap.range();
        // SAFETY: the slot's start, inside the mmap.
        let data = unsafe { base.add(slot as usize * self.slots.size) };
        doca!(doca_buf_set_data(buf, data.cast(), len))?;
        let mut task = std::ptr::null_mut();
        doca!(doca_comch_producer_task_send_alloc_init(
            self.inner.raw,
            buf,
            // DOCA's signature takes a mutable pointer; the bytes are only read (copied).
            imm.as_ptr().cast_mut(),
            imm.len() as u32,
            consumer_id,
            &mut task
        ))?;
        self.inner.user_data.borrow_mut()[slot as usize] = user_data;
        // SAFETY: a task we just allocated.
        let t = unsafe { sys::doca_comch_producer_task_send_as_task(task) };
        // SAFETY: as above.
        unsafe {
            sys::doca_task_set_user_data(
                t,
                sys::doca_data {
                    u64_: u64::from(slot),
                },
            )
        };
        if let Err(e) = doca!(doca_task_submit(t)) {
            // SAFETY: not submitted, so ours.
            unsafe { sys::doca_task_free(t) };
            return Err(e);
        }
        Ok(())
    }

    /// Sends in flight.
    pub fn in_flight(&self) -> usize {
        self.slots.bufs.len() - self.inner.free.borrow().len()
    }

    /// `doca_ctx_get_state`.
    pub fn state(&self) -> Result<CtxState> {
        ctx::state(self.inner.ctx)
    }

    /// `doca_ctx_stop`, progressing until idle: sends still waiting complete with an error.
    pub fn stop(&self) -> Result<()> {
        ctx::stop_until_idle(self.inner.ctx, Some(&self.inner.pe))
    }
}

impl Drop for Producer {
    #[doc(alias = "doca_comch_producer_destroy")]
    fn drop(&mut self) {
        // Nothing a destructor could act on if teardown fails; the soft device reports it.
        let _ = self.stop();
        let _ = doca!(doca_comch_producer_destroy(self.inner.raw));
    }
}
