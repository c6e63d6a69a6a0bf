//! The CPU producer of a CPU → DPA MsgQ (`doca_comch_producer` with send tasks).

use super::{ctx_of_producer, start_on_pe};
use crate::UserData;
use crate::ctx::{self, CtxState, StateChangedCb};
use crate::error::{Result, bail, doca};
use crate::msgq::{Direction, Msgq};
use crate::pe::Pe;
use crate::pulled::Pulled;
use dpakit_abi::ErrorCode;
use dpakit_sys as sys;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::mem::ManuallyDrop;

/// A finished send task, as its callback sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendCompletion {
    /// The user data given with the send ([`CpuProducer::send`], [`Channel::send`](super::Channel::send), [`Loan::send`](super::Loan::send)).
    pub user_data: UserData,
    /// `Success` once the message is in the DPA consumer's completion context, or the error of
    /// a send that failed (a stopping producer flushes the sends still waiting for a credit).
    pub status: ErrorCode,
}

type SendCb = Box<dyn FnMut(SendCompletion)>;

/// Configuration of a [`CpuProducer`].
pub struct CpuProducerBuilder<'a> {
    msgq: &'a Msgq,
    pe: &'a Pe,
    num_tasks: u32,
    on_send: Option<SendCb>,
    pull: bool,
    on_state_changed: Option<StateChangedCb>,
}

impl fmt::Debug for CpuProducerBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuProducerBuilder")
            .field("num_tasks", &self.num_tasks)
            .finish()
    }
}

/// What the callbacks reach through the context's user data. Boxed, so its address is stable.
pub(super) struct Inner {
    raw: *mut sys::doca_comch_producer,
    ctx: *mut sys::doca_ctx,
    pe: Pe,
    id: u32,
    num_tasks: u32,
    in_flight: Cell<u32>,
    on_send: RefCell<Option<SendCb>>,
    /// Whether completions are reported (an `on_send` callback, or `pulled`): known at build
    /// time, and read without borrowing `on_send`, which a send made from the callback finds
    /// borrowed.
    reports: bool,
    /// With `pull_completions`: completions not taken yet, at most `num_tasks` (a send is
    /// refused while the tasks in flight and these fill the pool).
    pulled: Option<Pulled<SendCompletion>>,
    pub(super) on_state_changed: Option<StateChangedCb>,
    _msgq: Msgq,
}

/// `doca_comch_producer` on the CPU side of a CPU → DPA MsgQ.
#[doc(alias = "doca_comch_producer")]
pub struct CpuProducer {
    /// Taken only by `Drop`, which hands it to the teardown.
    inner: ManuallyDrop<Box<Inner>>,
}

impl fmt::Debug for CpuProducer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuProducer")
            .field("id", &self.inner.id)
            .field("in_flight", &self.inner.in_flight.get())
            .finish()
    }
}

/// The success callback of send tasks.
unsafe extern "C" fn send_done(
    task: *mut sys::doca_comch_producer_task_send,
    task_user_data: sys::doca_data,
    ctx_user_data: sys::doca_data,
) {
    // SAFETY: the producer's user data is its boxed Inner, alive while the context runs.
    let inner = unsafe { &*ctx_user_data.ptr.cast::<Inner>() };
    // SAFETY: the task is ours and completed; its user data holds the u64 we stored.
    unsafe {
        finish(
            inner,
            task,
            crate::data_bits(task_user_data),
            ErrorCode::Success,
        )
    };
}

/// The error callback of send tasks.
unsafe extern "C" fn send_failed(
    task: *mut sys::doca_comch_producer_task_send,
    task_user_data: sys::doca_data,
    ctx_user_data: sys::doca_data,
) {
    // SAFETY: as in send_done.
    let inner = unsafe { &*ctx_user_data.ptr.cast::<Inner>() };
    // SAFETY: a completed task of ours.
    let raw =
        unsafe { sys::doca_task_get_status(sys::doca_comch_producer_task_send_as_task(task)) };
    let status = ErrorCode::from_raw(raw as i32).unwrap_or(ErrorCode::Unknown);
    // SAFETY: as in send_done.
    unsafe { finish(inner, task, crate::data_bits(task_user_data), status) };
}

/// Frees a completed task and runs the user's callback.
///
/// # Safety
/// `task` is a completed send task of `inner`'s producer.
unsafe fn finish(
    inner: &Inner,
    task: *mut sys::doca_comch_producer_task_send,
    user_data: u64,
    status: ErrorCode,
) {
    // SAFETY: the task is owned by us again after its completion.
    unsafe { sys::doca_task_free(sys::doca_comch_producer_task_send_as_task(task)) };
    inner.in_flight.set(inner.in_flight.get().saturating_sub(1));
    if !inner.reports {
        return;
    }
    if let Some(pulled) = &inner.pulled {
        pulled.push(SendCompletion {
            user_data: UserData::from_raw(user_data),
            status,
        });
        return;
    }
    inner.pe.catch(|| {
        if let Some(cb) = inner.on_send.borrow_mut().as_mut() {
            cb(SendCompletion {
                user_data: UserData::from_raw(user_data),
                status,
            });
        }
    });
}

impl<'a> CpuProducerBuilder<'a> {
    /// `doca_comch_producer_task_send_set_conf`: the size of the send task pool (default 64).
    #[doc(alias = "doca_comch_producer_task_send_set_conf")]
    pub fn num_send_tasks(mut self, n: u32) -> Self {
        self.num_tasks = n;
        self
    }

    /// The send task completion callback (success or error), run by [`Pe::progress`].
    pub fn on_send_complete(mut self, cb: impl FnMut(SendCompletion) + 'static) -> Self {
        self.on_send = Some(Box::new(cb));
        self
    }

    /// Hands completions out as values instead of to a callback: [`CpuProducer::try_completion`]
    /// and [`CpuProducer::next_completion`] take them. A completion not taken yet holds its
    /// task's place in the pool, so nothing is dropped: a send is `NO_MEMORY` while the sends in
    /// flight and the completions not taken fill it. (Without either, completions are not
    /// reported.)
    pub fn pull_completions(mut self) -> Self {
        self.pull = true;
        self
    }

    /// `doca_ctx_set_state_changed_cb`.
    #[doc(alias = "doca_ctx_set_state_changed_cb")]
    pub fn on_state_changed(mut self, cb: impl Fn(CtxState, CtxState) + 'static) -> Self {
        self.on_state_changed = Some(Box::new(cb));
        self
    }

    /// `doca_comch_msgq_producer_create` + configuration + `doca_pe_connect_ctx` +
    /// `doca_ctx_start`.
    pub fn start(self) -> Result<CpuProducer> {
        if self.pull && self.on_send.is_some() {
            bail!(
                InvalidValue,
                "a producer reports completions to its callback or as values, not both: \
                 drop on_send_complete or pull_completions"
            );
        }
        if self.msgq.direction() != Direction::ToDpa {
            bail!(
                NotSupported,
                "CPU producers belong to CPU -> DPA queues (dpa_consumer); this one flows DPA -> CPU"
            );
        }
        let mut raw = std::ptr::null_mut();
        doca!(doca_comch_msgq_producer_create(self.msgq.raw(), &mut raw))?;
        let ctx = ctx_of_producer(raw);
        let mut id = 0;
        let created = doca!(doca_comch_producer_get_id(raw, &mut id));
        let producer = CpuProducer {
            inner: ManuallyDrop::new(Box::new(Inner {
                raw,
                ctx,
                pe: self.pe.clone(),
                id,
                num_tasks: self.num_tasks,
                in_flight: Cell::new(0),
                reports: self.on_send.is_some() || self.pull,
                pulled: self.pull.then(|| Pulled::new(self.num_tasks)),
                on_send: RefCell::new(self.on_send),
                on_state_changed: self.on_state_changed,
                _msgq: self.msgq.clone(),
            })),
        };
        created?;
        doca!(doca_comch_producer_task_send_set_conf(
            raw,
            Some(send_done),
            Some(send_failed),
            self.num_tasks
        ))?;
        start_on_pe(ctx, &**producer.inner, self.pe)?;
        Ok(producer)
    }
}

impl super::HasStateCallback for Inner {
    fn state_callback(&self) -> Option<&StateChangedCb> {
        self.on_state_changed.as_ref()
    }
}

impl CpuProducer {
    /// A producer on `msgq` driven by `pe`.
    pub fn builder<'a>(msgq: &'a Msgq, pe: &'a Pe) -> CpuProducerBuilder<'a> {
        CpuProducerBuilder {
            msgq,
            pe,
            num_tasks: 64,
            on_send: None,
            pull: false,
            on_state_changed: None,
        }
    }

    /// `doca_comch_producer_get_id`: what DPA consumers see as the producer id.
    #[doc(alias = "doca_comch_producer_get_id")]
    pub fn id(&self) -> u32 {
        self.inner.id
    }

    /// `doca_comch_producer_task_send_alloc_init` (immediate data only) + `doca_task_submit`.
    ///
    /// The task completes (its callback runs in [`Pe::progress`]) once the message is in the
    /// DPA consumer's completion context. Without a credit the send waits inside the device,
    /// in order. `NO_MEMORY` when every send task is in flight.
    #[doc(alias = "doca_comch_producer_task_send_alloc_init")]
    #[inline]
    pub fn send(&self, imm: &[u8], consumer_id: u32, user_data: impl Into<UserData>) -> Result<()> {
        // The length is checked once, by the soft device or DOCA (the MsgQ's limit, then the
        // consumer's imm_data_len); a longer slice is refused there with INVALID_VALUE. Past
        // u32 it would wrap, so that is refused here.
        let Ok(len) = u32::try_from(imm.len()) else {
            bail!(
                InvalidValue,
                "immediate data of {} bytes exceeds the MsgQ limit",
                imm.len()
            );
        };
        let inner = &**self.inner;
        if let Some(pulled) = &inner.pulled
            && inner.in_flight.get() as usize + pulled.len() >= inner.num_tasks as usize
        {
            bail!(
                NoMemory,
                "{} sends are in flight or have completions not taken yet (the pool's size): take \
                 completions with try_completion or next_completion before sending more",
                inner.num_tasks
            );
        }
        let mut task = std::ptr::null_mut();
        doca!(doca_comch_producer_task_send_alloc_init(
            inner.raw,
            std::ptr::null(),
            // DOCA's signature takes a mutable pointer; the bytes are only read (copied).
            imm.as_ptr().cast_mut(),
            len,
            consumer_id,
            &mut task
        ))?;
        // SAFETY: a task we just allocated.
        let task = unsafe { sys::doca_comch_producer_task_send_as_task(task) };
        // Only the completion callback sees the user data: without one it is not set.
        if inner.reports {
            let data = sys::doca_data {
                u64_: user_data.into().raw(),
            };
            // SAFETY: as above.
            unsafe { sys::doca_task_set_user_data(task, data) };
        }
        if let Err(e) = doca!(doca_task_submit(task)) {
            // SAFETY: the submit failed, so the task is still ours.
            unsafe { sys::doca_task_free(task) };
            return Err(e);
        }
        inner.in_flight.set(inner.in_flight.get() + 1);
        Ok(())
    }

    /// Send tasks not completed yet.
    pub fn in_flight(&self) -> u32 {
        self.inner.in_flight.get()
    }

    /// The oldest completion not taken yet, without progressing, for a producer built with
    /// [`pull_completions`](CpuProducerBuilder::pull_completions); `None` if there is none (or
    /// the producer reports otherwise).
    pub fn try_completion(&self) -> Option<SendCompletion> {
        self.inner.pulled.as_ref()?.pop()
    }

    /// The next completion: progresses the PE (asleep on its notification handle when idle)
    /// until one is there; `None` after `timeout`. `SHUTDOWN` on Ctrl-C (see
    /// [`interrupt`](crate::interrupt)); `BAD_STATE` for a producer not built with
    /// [`pull_completions`](CpuProducerBuilder::pull_completions).
    pub fn next_completion(&self, timeout: std::time::Duration) -> Result<Option<SendCompletion>> {
        crate::pulled::next_of(
            self.inner.pulled.as_ref(),
            &self.inner.pe,
            "CpuProducer::next_completion",
            "this producer was not built with pull_completions: its completions go to its \
             callback, or are not reported",
            timeout,
        )
    }

    /// The size of the send task pool.
    pub fn num_send_tasks(&self) -> u32 {
        self.inner.num_tasks
    }

    /// `doca_ctx_get_state`.
    #[doc(alias = "doca_ctx_get_state")]
    pub fn state(&self) -> Result<CtxState> {
        ctx::state(self.inner.ctx)
    }

    /// `doca_ctx_stop`, progressing until the producer is idle: sends still waiting for a
    /// credit complete with an error. Inside a callback of its PE it returns once the stop is
    /// requested, and the producer becomes idle through later progress.
    #[doc(alias = "doca_ctx_stop")]
    pub fn stop(&self) -> Result<()> {
        ctx::stop(self.inner.ctx, Some(&self.inner.pe))
    }
}

impl Drop for CpuProducer {
    #[doc(alias = "doca_comch_producer_destroy")]
    fn drop(&mut self) {
        // SAFETY: taken once, here; `self.inner` is not used again.
        let inner = unsafe { ManuallyDrop::take(&mut self.inner) };
        let (raw, ctx, pe) = (inner.raw, inner.ctx, inner.pe.clone());
        ctx::teardown(
            ctx,
            &pe,
            "CPU producer",
            move || doca!(doca_comch_producer_destroy(raw)),
            inner,
        );
    }
}
