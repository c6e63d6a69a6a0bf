//! `doca_comch_consumer` on a connection.

use super::Slots;
use crate::comch::{Connection, start_on_pe};
use crate::ctx::{self, CtxState, StateChangedCb};
use crate::error::{Result, doca};
use crate::mmap::AccessFlags;
use crate::pe::Pe;
use dpakit_abi::MAX_IMM_DATA_LEN;
use dpakit_sys as sys;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::mem::ManuallyDrop;

/// A message a consumer received, valid during its callback (the buffer is posted again when
/// the callback returns: copy what must outlive it). Callbacks run in [`Pe::progress`].
#[derive(Debug)]
pub struct ReceivedBuf<'a> {
    /// The bytes the producer wrote.
    pub data: &'a [u8],
    /// The immediate data sent with them.
    pub imm: &'a [u8],
    /// `doca_comch_consumer_task_post_recv_get_producer_id`.
    pub producer_id: u32,
}

type RecvCb = Box<dyn FnMut(&ReceivedBuf<'_>)>;

/// A received buffer the program holds, taken with [`Consumer::try_recv`] or
/// [`Consumer::next_recv`] from a consumer built without a receive callback. It is posted again
/// (the peer may fill it) when dropped: drop it before stopping the consumer.
pub struct Sample<'a> {
    /// The consumer, whose memory the data lies in.
    _consumer: std::marker::PhantomData<&'a Consumer>,
    task: *mut sys::doca_comch_consumer_task_post_recv,
    data: &'a [u8],
    imm: [u8; MAX_IMM_DATA_LEN],
    imm_len: usize,
    producer_id: u32,
}

impl fmt::Debug for Sample<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sample")
            .field("len", &self.data.len())
            .field("imm", &self.imm())
            .field("producer_id", &self.producer_id)
            .finish()
    }
}

impl Sample<'_> {
    /// The bytes the producer wrote.
    pub fn data(&self) -> &[u8] {
        self.data
    }

    /// The immediate data sent with them.
    pub fn imm(&self) -> &[u8] {
        &self.imm[..self.imm_len]
    }

    /// `doca_comch_consumer_task_post_recv_get_producer_id`.
    pub fn producer_id(&self) -> u32 {
        self.producer_id
    }
}

impl Drop for Sample<'_> {
    fn drop(&mut self) {
        // SAFETY: a completed task of ours that this sample held; nothing refers to its buffer
        // once the sample is gone.
        unsafe { repost(self.task) };
    }
}

/// Posts a completed receive again, emptied; a stopping consumer takes the task back instead.
///
/// # Safety
/// `task` is a completed post-receive task of a live consumer, owned by the caller.
unsafe fn repost(task: *mut sys::doca_comch_consumer_task_post_recv) {
    // SAFETY: per the contract.
    unsafe {
        sys::doca_buf_reset_data_len(sys::doca_comch_consumer_task_post_recv_get_buf(task));
        let t = sys::doca_comch_consumer_task_post_recv_as_task(task);
        if sys::doca_task_submit(t) != sys::DOCA_SUCCESS {
            sys::doca_task_free(t);
        }
    }
}

/// What a completed receive holds: its data, immediate and producer id.
///
/// # Safety
/// `task` is a completed post-receive task of ours, not posted again while the slices live.
unsafe fn contents<'a>(
    task: *mut sys::doca_comch_consumer_task_post_recv,
) -> (&'a [u8], &'a [u8], u32) {
    // SAFETY: per the contract: the buffer and immediate are readable until the task is posted
    // again.
    unsafe {
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
    /// Without a receive callback: completed receives wait here for the program (at most
    /// `num_recv`, reserved up front), posted again when their [`Sample`] drops.
    ready:
        Option<RefCell<std::collections::VecDeque<*mut sys::doca_comch_consumer_task_post_recv>>>,
}

impl crate::comch::HasStateCallback for ConsumerInner {
    fn state_callback(&self) -> Option<&StateChangedCb> {
        self.on_state_changed.as_ref()
    }
}

/// `doca_comch_consumer` on a connection: receives into buffers of its own memory, posted
/// again after each callback (or, without one, when the program drops the [`Sample`]).
///
/// The client receives, the server sends, both in one program here:
///
/// ```
/// use dpakit::comch::{Client, Consumer, Producer, Server, ServerEvent};
/// use dpakit::dev::{Dev, DevRep};
/// use dpakit::pe::Pe;
/// use std::time::Duration;
///
/// # fn main() -> dpakit::Result<()> {
/// let wait = Duration::from_secs(5);
/// let (arm, host) = (Dev::open_by_pci("03:00.0")?, Dev::open_by_pci("b1:00.0")?);
/// let rep = DevRep::open_by_pci(&arm, "b1:00.0")?;
/// let pe = Pe::new()?;
/// let server = Server::builder(&arm, &rep, "doc-fast-path", &pe).start()?;
/// let client = Client::builder(&host, "doc-fast-path", &pe).start()?;
/// let conn = client.connect(wait)?;
///
/// // The client's consumer: four buffers of 4 KiB, posted at start.
/// let consumer = Consumer::builder(conn, &host, &pe).num_recv(4).buf_size(4096).start()?;
/// // The server hears of the connection, then of the consumer, and sends into it.
/// let (mut at_server, mut consumer_id) = (None, None);
/// while consumer_id.is_none() {
///     match server.next_event(wait)? {
///         Some(ServerEvent::Connected { conn }) => at_server = Some(conn),
///         Some(ServerEvent::ConsumerNew { id, .. }) => consumer_id = Some(id),
///         _ => {}
///     }
/// }
/// let producer = Producer::builder(at_server.unwrap(), &arm, &pe).start()?;
/// let mut loan = producer.loan(5)?;
/// loan.as_mut_slice().copy_from_slice(b"hello");
/// loan.send(consumer_id.unwrap(), b"imm", 0)?;
///
/// let sample = consumer.next_recv(wait)?.expect("the message arrives");
/// assert_eq!((sample.data(), sample.imm()), (&b"hello"[..], &b"imm"[..]));
/// drop(sample); // the buffer is posted again
///
/// // DOCA's order: producers and consumers before their connection.
/// producer.stop()?;
/// consumer.stop()?;
/// # Ok(())
/// # }
/// ```
#[doc(alias = "doca_comch_consumer")]
pub struct Consumer {
    /// Taken only by `Drop`, which hands them to the teardown.
    inner: ManuallyDrop<Box<ConsumerInner>>,
    id: u32,
    // Dropped after the consumer is destroyed: its memory outlives every posted receive.
    slots: ManuallyDrop<Slots>,
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
    if let Some(ready) = &inner.ready {
        // Held for the program; never more than the tasks, reserved.
        ready.borrow_mut().push_back(task);
        return;
    }
    // SAFETY: a completed task of ours, posted again only after the callback.
    let (data, imm, producer_id) = unsafe { contents(task) };
    inner.pe.catch(|| {
        if let Some(cb) = inner.on_recv.borrow_mut().as_mut() {
            cb(&ReceivedBuf {
                data,
                imm,
                producer_id,
            });
        }
    });
    // SAFETY: our completed task; the callback's view of it is gone.
    unsafe { repost(task) };
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

    /// The receive callback, run by [`Pe::progress`]. Without one, the program takes received
    /// buffers itself ([`Consumer::try_recv`], [`Consumer::next_recv`]).
    pub fn on_recv(mut self, cb: impl FnMut(&ReceivedBuf<'_>) + 'static) -> Self {
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
        let ready_queue = self.on_recv.is_none().then(|| {
            RefCell::new(std::collections::VecDeque::with_capacity(
                self.num_recv as usize,
            ))
        });
        let consumer = Consumer {
            inner: ManuallyDrop::new(Box::new(ConsumerInner {
                raw,
                ctx,
                pe: self.pe.clone(),
                ready: ready_queue,
                on_recv: RefCell::new(self.on_recv),
                on_state_changed: self.on_state_changed,
                repost: RefCell::new(Vec::with_capacity(self.num_recv as usize)),
                failed: Cell::new(0),
            })),
            id: 0,
            slots: ManuallyDrop::new(slots),
        };
        doca!(doca_comch_consumer_set_imm_data_len(raw, self.imm_data_len))?;
        doca!(doca_comch_consumer_task_post_recv_set_conf(
            raw,
            Some(recv_done),
            Some(recv_failed),
            self.num_recv
        ))?;
        match start_on_pe(ctx, &**consumer.inner, self.pe) {
            Ok(()) => {}
            // The consumer registers with its peer through progress (as on DOCA).
            Err(e) if e.code() == crate::ErrorCode::InProgress => {
                ctx::progress_until_running(ctx, self.pe)?
            }
            Err(e) => return Err(e),
        }
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

    /// The oldest received buffer, without progressing, for a consumer built without a receive
    /// callback; `None` if none arrived (or the consumer has a callback).
    pub fn try_recv(&self) -> Option<Sample<'_>> {
        let task = self.inner.ready.as_ref()?.borrow_mut().pop_front()?;
        // SAFETY: a completed task of ours, posted again only when the sample drops; the
        // buffer's memory (the slots) lives as long as the consumer the sample borrows.
        let (data, imm, producer_id) = unsafe { contents(task) };
        let mut copy = [0u8; MAX_IMM_DATA_LEN];
        copy[..imm.len()].copy_from_slice(imm);
        Some(Sample {
            _consumer: std::marker::PhantomData,
            task,
            data,
            imm: copy,
            imm_len: imm.len(),
            producer_id,
        })
    }

    /// The next received buffer: progresses the PE (sleeping on its notification handle when
    /// idle) until one arrives; `None` after `timeout`. `SHUTDOWN` on Ctrl-C (see
    /// [`interrupt`](crate::interrupt)); `BAD_STATE` for a consumer with a receive callback.
    pub fn next_recv(&self, timeout: std::time::Duration) -> Result<Option<Sample<'_>>> {
        let Some(ready) = &self.inner.ready else {
            crate::error::bail!(
                BadState,
                "this consumer has a receive callback: its buffers go there, not to next_recv"
            );
        };
        if !ready.borrow().is_empty() {
            return Ok(self.try_recv());
        }
        let pe = &self.inner.pe;
        pe.require_outside_callback("Consumer::next_recv")?;
        pe.progress_within(timeout, || !ready.borrow().is_empty())?;
        Ok(self.try_recv())
    }

    /// `doca_ctx_stop`, progressing until idle: the peer hears the consumer expired. Inside a
    /// callback of its PE it returns once the stop is requested, and the consumer becomes idle
    /// through later progress.
    pub fn stop(&self) -> Result<()> {
        self.inner.free_unposted();
        ctx::stop(self.inner.ctx, Some(&self.inner.pe))
    }
}

impl ConsumerInner {
    /// Tasks waiting to be posted again, or for the program to take, are ours: freed, so a
    /// stop can finish.
    fn free_unposted(&self) {
        let ready = self
            .ready
            .as_ref()
            .map(|r| std::mem::take(&mut *r.borrow_mut()));
        for task in self
            .repost
            .borrow_mut()
            .drain(..)
            .chain(ready.into_iter().flatten())
        {
            // SAFETY: owned by us, not submitted.
            unsafe { sys::doca_task_free(sys::doca_comch_consumer_task_post_recv_as_task(task)) };
        }
    }
}

impl Drop for Consumer {
    #[doc(alias = "doca_comch_consumer_destroy")]
    fn drop(&mut self) {
        self.inner.free_unposted();
        // SAFETY: each taken once, here; neither is used again.
        let (inner, slots) = unsafe {
            (
                ManuallyDrop::take(&mut self.inner),
                ManuallyDrop::take(&mut self.slots),
            )
        };
        let (raw, ctx, pe) = (inner.raw, inner.ctx, inner.pe.clone());
        ctx::teardown(
            ctx,
            &pe,
            "Comch consumer",
            move || doca!(doca_comch_consumer_destroy(raw)),
            (inner, slots),
        );
    }
}
