//! The CPU consumer of a DPA → CPU MsgQ (`doca_comch_consumer` with post-receive tasks).

use super::{HasStateCallback, ctx_of_consumer, start_on_pe};
use crate::UserData;
use crate::ctx::{self, CtxState, StateChangedCb};
use crate::error::{Result, bail, doca};
use crate::msgq::{Direction, Msgq};
use crate::pe::Pe;
use crate::pulled::Pulled;
use dpakit_abi::{ErrorCode, MAX_IMM_DATA_LEN};
use dpakit_sys as sys;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::mem::ManuallyDrop;

/// A completed post-receive task: the immediate a DPA producer sent, or a receive flushed
/// because the consumer stopped.
pub struct RecvCompletion<'a> {
    /// The immediate data (`doca_comch_consumer_task_post_recv_get_imm_data`); valid during the
    /// callback only. Empty for a failed receive.
    pub imm: &'a [u8],
    /// `doca_comch_consumer_task_post_recv_get_producer_id`.
    pub producer_id: u32,
    /// The user data given to [`CpuConsumer::post_recv`].
    pub user_data: UserData,
    /// `Success`, or why the receive failed (a stopping consumer flushes its receives).
    pub status: ErrorCode,
    consumer: &'a Inner,
}

impl fmt::Debug for RecvCompletion<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvCompletion")
            .field("imm", &self.imm)
            .field("producer_id", &self.producer_id)
            .field("user_data", &self.user_data)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl RecvCompletion<'_> {
    /// Posts the next receive on the consumer this completion belongs to, from inside the
    /// callback as DOCA programs repost theirs: the completed task is already free for it.
    /// The same as [`CpuConsumer::post_recv`].
    #[doc(alias = "doca_task_submit")]
    #[inline]
    pub fn post_recv(&self, user_data: impl Into<UserData>) -> Result<()> {
        self.consumer.post_recv(user_data.into().raw())
    }
}

type RecvCb = Box<dyn FnMut(&RecvCompletion<'_>)>;

/// A message a [`CpuConsumer`] built without a receive callback received, as a value (taken
/// with [`CpuConsumer::try_recv`] or [`CpuConsumer::next_recv`]); or a receive a stop flushed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsumerMessage {
    bytes: [u8; MAX_IMM_DATA_LEN],
    len: u8,
    /// `doca_comch_consumer_task_post_recv_get_producer_id`.
    pub producer_id: u32,
    /// The user data given to [`CpuConsumer::post_recv`].
    pub user_data: UserData,
    /// `Success`, or why the receive failed (a stopping consumer flushes its receives).
    pub status: ErrorCode,
}

impl ConsumerMessage {
    /// The immediate data the DPA producer sent (empty for a failed receive).
    pub fn imm(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// Configuration of a [`CpuConsumer`].
pub struct CpuConsumerBuilder<'a> {
    msgq: &'a Msgq,
    pe: &'a Pe,
    num_tasks: u32,
    imm_data_len: u32,
    on_recv: Option<RecvCb>,
    on_state_changed: Option<StateChangedCb>,
}

impl fmt::Debug for CpuConsumerBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuConsumerBuilder")
            .field("num_tasks", &self.num_tasks)
            .field("imm_data_len", &self.imm_data_len)
            .finish()
    }
}

/// What the callbacks reach through the context's user data. Boxed, so its address is stable.
struct Inner {
    raw: *mut sys::doca_comch_consumer,
    ctx: *mut sys::doca_ctx,
    pe: Pe,
    id: u32,
    num_tasks: u32,
    posted: Cell<u32>,
    /// Completed tasks kept for the next post (DOCA resubmits a completed receive task rather
    /// than freeing and allocating one), each with the user data it carries, so a repost with
    /// the same user data need not set it again; never more than `num_tasks`, reserved up front.
    spare: RefCell<Vec<(*mut sys::doca_comch_consumer_task_post_recv, u64)>>,
    /// Stopping: completed tasks are freed, not kept, so the context can reach IDLE.
    stopping: Cell<bool>,
    /// Without a receive callback: what arrived, for the program to take (at most
    /// `num_tasks`: a receive is posted only while the queue and the posted ones leave room).
    ready: Option<Pulled<ConsumerMessage>>,
    on_recv: RefCell<Option<RecvCb>>,
    on_state_changed: Option<StateChangedCb>,
    _msgq: Msgq,
}

impl HasStateCallback for Inner {
    fn state_callback(&self) -> Option<&StateChangedCb> {
        self.on_state_changed.as_ref()
    }
}

/// `doca_comch_consumer` on the CPU side of a DPA → CPU MsgQ.
#[doc(alias = "doca_comch_consumer")]
pub struct CpuConsumer {
    /// Taken only by `Drop`, which hands it to the teardown.
    inner: ManuallyDrop<Box<Inner>>,
}

impl fmt::Debug for CpuConsumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuConsumer")
            .field("id", &self.inner.id)
            .field("posted", &self.inner.posted.get())
            .finish()
    }
}

impl Inner {
    /// Resubmits a kept task, or allocates one while fewer than `num_tasks` exist.
    #[inline]
    fn post_recv(&self, user_data: u64) -> Result<()> {
        if let Some(ready) = &self.ready {
            if self.posted.get() as usize + ready.len() >= self.num_tasks as usize {
                bail!(
                    NoMemory,
                    "{} receives are posted or hold messages not taken yet (the pool's size): \
                     take messages with try_recv or next_recv before posting more",
                    self.num_tasks
                );
            }
        }
        let spare = self.spare.borrow_mut().pop();
        let (recv, carried) = match spare {
            Some((task, carried)) => (task, Some(carried)),
            None => {
                let mut task = std::ptr::null_mut();
                doca!(doca_comch_consumer_task_post_recv_alloc_init(
                    self.raw,
                    std::ptr::null_mut(),
                    &mut task
                ))?;
                (task, None)
            }
        };
        // SAFETY: a task we own (allocated, or completed and kept). Its generic view is taken
        // here rather than in the completion callback, which is on the reply's critical path.
        let task = unsafe { sys::doca_comch_consumer_task_post_recv_as_task(recv) };
        // A new task's user data is unspecified; a kept one carries what its last post set.
        if carried != Some(user_data) {
            // SAFETY: as above.
            unsafe { sys::doca_task_set_user_data(task, sys::doca_data { u64_: user_data }) };
        }
        if let Err(e) = doca!(doca_task_submit(task)) {
            self.spare.borrow_mut().push((recv, user_data));
            return Err(e);
        }
        self.posted.set(self.posted.get() + 1);
        Ok(())
    }
}

/// The success callback of post-receive tasks.
unsafe extern "C" fn recv_done(
    task: *mut sys::doca_comch_consumer_task_post_recv,
    task_user_data: sys::doca_data,
    ctx_user_data: sys::doca_data,
) {
    // SAFETY: the consumer's user data is its boxed Inner, alive while the context runs.
    let inner = unsafe { &*ctx_user_data.ptr.cast::<Inner>() };
    // SAFETY: a completed receive task of ours: its immediate stays valid until it is
    // resubmitted or freed, which happens after the callback.
    let (imm, producer_id) = unsafe {
        let len = sys::doca_comch_consumer_task_post_recv_get_imm_data_len(task) as usize;
        let data = sys::doca_comch_consumer_task_post_recv_get_imm_data(task);
        let imm = if data.is_null() {
            &[][..]
        } else {
            std::slice::from_raw_parts(data, len.min(MAX_IMM_DATA_LEN))
        };
        (
            imm,
            sys::doca_comch_consumer_task_post_recv_get_producer_id(task),
        )
    };
    deliver(
        inner,
        task,
        imm,
        producer_id,
        crate::data_bits(task_user_data),
        ErrorCode::Success,
    );
}

/// The error callback of post-receive tasks.
unsafe extern "C" fn recv_failed(
    task: *mut sys::doca_comch_consumer_task_post_recv,
    task_user_data: sys::doca_data,
    ctx_user_data: sys::doca_data,
) {
    // SAFETY: as in recv_done.
    let inner = unsafe { &*ctx_user_data.ptr.cast::<Inner>() };
    // SAFETY: a completed task of ours.
    let raw =
        unsafe { sys::doca_task_get_status(sys::doca_comch_consumer_task_post_recv_as_task(task)) };
    let status = ErrorCode::from_raw(raw as i32).unwrap_or(ErrorCode::Unknown);
    deliver(
        inner,
        task,
        &[],
        0,
        crate::data_bits(task_user_data),
        status,
    );
}

/// Runs the user's callback, then keeps the task for the next post (or frees it when the
/// consumer stops).
fn deliver(
    inner: &Inner,
    task: *mut sys::doca_comch_consumer_task_post_recv,
    imm: &[u8],
    producer_id: u32,
    user_data: u64,
    status: ErrorCode,
) {
    inner.posted.set(inner.posted.get().saturating_sub(1));
    // The immediate is copied out and the task made available again *before* the callback,
    // so the callback may post the next receive (DOCA programs repost inside it).
    let mut copy = [0u8; MAX_IMM_DATA_LEN];
    let len = imm.len().min(MAX_IMM_DATA_LEN);
    copy[..len].copy_from_slice(&imm[..len]);
    if status == ErrorCode::Success && !inner.stopping.get() {
        // Capacity for every task was reserved, so this never allocates.
        inner.spare.borrow_mut().push((task, user_data));
    } else {
        // SAFETY: a completed task of ours, not kept anywhere.
        unsafe { sys::doca_task_free(sys::doca_comch_consumer_task_post_recv_as_task(task)) };
    }
    if let Some(ready) = &inner.ready {
        // Within the capacity reserved: post_recv keeps posted + queued within the pool.
        ready.push(ConsumerMessage {
            bytes: copy,
            len: len as u8,
            producer_id,
            user_data: UserData::from_raw(user_data),
            status,
        });
        return;
    }
    inner.pe.catch(|| {
        if let Some(cb) = inner.on_recv.borrow_mut().as_mut() {
            cb(&RecvCompletion {
                imm: &copy[..len],
                producer_id,
                user_data: UserData::from_raw(user_data),
                status,
                consumer: inner,
            });
        }
    });
}

impl<'a> CpuConsumerBuilder<'a> {
    /// `doca_comch_consumer_task_post_recv_set_conf`: the size of the receive task pool
    /// (default 64).
    #[doc(alias = "doca_comch_consumer_task_post_recv_set_conf")]
    pub fn num_recv_tasks(mut self, n: u32) -> Self {
        self.num_tasks = n;
        self
    }

    /// `doca_comch_consumer_set_imm_data_len` (≤ 32; default 32).
    #[doc(alias = "doca_comch_consumer_set_imm_data_len")]
    pub fn imm_data_len(mut self, len: u32) -> Self {
        self.imm_data_len = len;
        self
    }

    /// The post-receive completion callback (success or error), run by [`Pe::progress`].
    /// Without one, the program takes what arrives as values ([`CpuConsumer::try_recv`],
    /// [`CpuConsumer::next_recv`]).
    pub fn on_recv(mut self, cb: impl FnMut(&RecvCompletion<'_>) + 'static) -> Self {
        self.on_recv = Some(Box::new(cb));
        self
    }

    /// `doca_ctx_set_state_changed_cb`.
    #[doc(alias = "doca_ctx_set_state_changed_cb")]
    pub fn on_state_changed(mut self, cb: impl Fn(CtxState, CtxState) + 'static) -> Self {
        self.on_state_changed = Some(Box::new(cb));
        self
    }

    /// `doca_comch_msgq_consumer_create` + configuration + `doca_pe_connect_ctx` +
    /// `doca_ctx_start`.
    pub fn start(self) -> Result<CpuConsumer> {
        if self.msgq.direction() != Direction::FromDpa {
            bail!(
                NotSupported,
                "CPU consumers belong to DPA -> CPU queues (dpa_producer); this one flows CPU -> DPA"
            );
        }
        let mut raw = std::ptr::null_mut();
        doca!(doca_comch_msgq_consumer_create(self.msgq.raw(), &mut raw))?;
        let ctx = ctx_of_consumer(raw);
        let mut id = 0;
        let created = doca!(doca_comch_consumer_get_id(raw, &mut id));
        let consumer = CpuConsumer {
            inner: ManuallyDrop::new(Box::new(Inner {
                raw,
                ctx,
                pe: self.pe.clone(),
                id,
                num_tasks: self.num_tasks,
                posted: Cell::new(0),
                spare: RefCell::new(Vec::with_capacity(self.num_tasks as usize)),
                stopping: Cell::new(false),
                ready: self.on_recv.is_none().then(|| Pulled::new(self.num_tasks)),
                on_recv: RefCell::new(self.on_recv),
                on_state_changed: self.on_state_changed,
                _msgq: self.msgq.clone(),
            })),
        };
        created?;
        doca!(doca_comch_consumer_set_imm_data_len(raw, self.imm_data_len))?;
        doca!(doca_comch_consumer_task_post_recv_set_conf(
            raw,
            Some(recv_done),
            Some(recv_failed),
            self.num_tasks
        ))?;
        start_on_pe(ctx, &**consumer.inner, self.pe)?;
        Ok(consumer)
    }
}

impl CpuConsumer {
    /// A consumer on `msgq` driven by `pe`.
    pub fn builder<'a>(msgq: &'a Msgq, pe: &'a Pe) -> CpuConsumerBuilder<'a> {
        CpuConsumerBuilder {
            msgq,
            pe,
            num_tasks: 64,
            imm_data_len: MAX_IMM_DATA_LEN as u32,
            on_recv: None,
            on_state_changed: None,
        }
    }

    /// `doca_comch_consumer_get_id`: what DPA producers address.
    #[doc(alias = "doca_comch_consumer_get_id")]
    pub fn id(&self) -> u32 {
        self.inner.id
    }

    /// Posts a receive (`doca_comch_consumer_task_post_recv_alloc_init` + `doca_task_submit`;
    /// a completed task is resubmitted instead of allocating a new one). `NO_MEMORY` when every
    /// receive task is posted.
    #[doc(alias = "doca_comch_consumer_task_post_recv_alloc_init")]
    #[inline]
    pub fn post_recv(&self, user_data: impl Into<UserData>) -> Result<()> {
        self.inner.post_recv(user_data.into().raw())
    }

    /// The size of the receive task pool.
    pub fn num_recv_tasks(&self) -> u32 {
        self.inner.num_tasks
    }

    /// Receives posted and not completed yet.
    pub fn posted(&self) -> u32 {
        self.inner.posted.get()
    }

    /// The oldest message that arrived, without progressing, for a consumer built without a
    /// receive callback; `None` if none did (or the consumer has a callback). Its receive task
    /// is free for the next [`post_recv`](Self::post_recv).
    pub fn try_recv(&self) -> Option<ConsumerMessage> {
        self.inner.ready.as_ref()?.pop()
    }

    /// The next message: progresses the PE (sleeping on its notification handle when idle)
    /// until one arrives; `None` after `timeout`. `SHUTDOWN` on Ctrl-C (see
    /// [`interrupt`](crate::interrupt)); `BAD_STATE` for a consumer with a receive callback.
    pub fn next_recv(&self, timeout: std::time::Duration) -> Result<Option<ConsumerMessage>> {
        crate::pulled::next_of(
            self.inner.ready.as_ref(),
            &self.inner.pe,
            "CpuConsumer::next_recv",
            "this consumer has a receive callback: its messages go there, not to next_recv",
            timeout,
        )
    }

    /// `doca_ctx_get_state`.
    #[doc(alias = "doca_ctx_get_state")]
    pub fn state(&self) -> Result<CtxState> {
        ctx::state(self.inner.ctx)
    }

    /// `doca_ctx_stop`, progressing until the consumer is idle: posted receives complete with
    /// an error (after messages already on their way). Inside a callback of its PE it returns
    /// once the stop is requested, and the consumer becomes idle through later progress.
    #[doc(alias = "doca_ctx_stop")]
    pub fn stop(&self) -> Result<()> {
        self.inner.give_back_spare();
        let stopped = ctx::stop(self.inner.ctx, Some(&self.inner.pe));
        if stopped.is_err() {
            self.inner.stopping.set(false);
        }
        stopped
    }
}

impl Inner {
    /// From now on completed tasks are freed rather than kept, and the kept ones go now: a
    /// stop finishes once every task is back.
    fn give_back_spare(&self) {
        self.stopping.set(true);
        for (task, _) in self.spare.borrow_mut().drain(..) {
            // SAFETY: completed tasks we kept; nothing refers to them any more.
            unsafe { sys::doca_task_free(sys::doca_comch_consumer_task_post_recv_as_task(task)) };
        }
    }
}

impl Drop for CpuConsumer {
    #[doc(alias = "doca_comch_consumer_destroy")]
    fn drop(&mut self) {
        self.inner.give_back_spare();
        // SAFETY: taken once, here; `self.inner` is not used again.
        let inner = unsafe { ManuallyDrop::take(&mut self.inner) };
        let (raw, ctx, pe) = (inner.raw, inner.ctx, inner.pe.clone());
        ctx::teardown(
            ctx,
            &pe,
            "CPU consumer",
            move || doca!(doca_comch_consumer_destroy(raw)),
            inner,
        );
    }
}
