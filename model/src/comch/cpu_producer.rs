//! The CPU producer of a CPU→DPA MsgQ (`doca_comch_producer` with send tasks).

use super::callback::Callback;
use super::fifo::Fifo;
use super::{CreditWaiter, Delivery, DpaConsumerShared, FLUSHED};
use crate::ctx::{CtxState, StateChangedCb, StateMachine};
use crate::error::{ErrorCode, Result, bail};
use crate::limits;
use crate::msgq::{Direction, Msgq, MsgqShared};
use crate::pe::{Pe, PeClient};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;

/// A finished send task, as its completion callback sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendCompletion {
    /// The user data given to [`CpuProducer::send`].
    pub user_data: u64,
    /// `SUCCESS` once the message is in the DPA consumer's completion context, or
    /// [`FLUSHED`](super::FLUSHED) for a send the stopping producer took back undelivered.
    pub status: ErrorCode,
}

type SendCb = Box<dyn FnMut(SendCompletion)>;

/// Where a CPU producer reports its finished sends: the object that owns the send tasks (the C
/// producer, whose task index is the token), or [`SendCallback`] for the Rust API. Called by
/// [`Pe::progress`] with nothing of the producer borrowed, so it may send, flush or stop.
pub trait SendFace: 'static {
    /// The send given `token` finished with `status` (SUCCESS, [`FLUSHED`](super::FLUSHED) or
    /// NOT_FOUND for a consumer destroyed while the send waited).
    fn send_done(&self, token: u64, status: ErrorCode);
}

/// The Rust API's face: the completion callback of [`CpuProducerBuilder::on_send_complete`].
#[allow(missing_debug_implementations)] // holds a closure
pub struct SendCallback(Callback<dyn FnMut(SendCompletion)>);

impl SendFace for SendCallback {
    #[inline]
    fn send_done(&self, token: u64, status: ErrorCode) {
        self.0.run(|cb| {
            cb(SendCompletion {
                user_data: token,
                status,
            })
        });
    }
}

/// Configuration of a [`CpuProducer`].
pub struct CpuProducerBuilder<'a> {
    on_state_changed: Option<StateChangedCb>,
    msgq: &'a Msgq,
    pe: &'a Pe,
    num_tasks: u32,
    id: Option<u32>,
    on_send: Option<SendCb>,
}

impl fmt::Debug for CpuProducerBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuProducerBuilder")
            .field("num_tasks", &self.num_tasks)
            .finish()
    }
}

struct PendingSend {
    imm: [u8; limits::MAX_IMM_DATA_LEN],
    len: u8,
    /// The consumer's id (not its slot: a later consumer may take the slot).
    consumer: u32,
    token: u64,
    /// The credit is already spent; only the push into the completion context is left.
    credit_held: bool,
}

impl PendingSend {
    fn retry(&mut self, consumer: &DpaConsumerShared, producer_id: u32) -> bool {
        let imm = &self.imm[..self.len as usize];
        let outcome = if self.credit_held {
            consumer.push(imm, producer_id)
        } else {
            consumer.try_deliver(imm, producer_id)
        };
        self.credit_held = outcome == Delivery::CreditHeld;
        outcome == Delivery::Delivered
    }
}

struct Inner<F> {
    id: u32,
    msgq: Arc<MsgqShared>,
    /// This producer in the queue's credit waiters, and its slot there.
    waiter: Arc<CreditWaiter>,
    waiter_slot: usize,
    state: StateMachine,
    num_tasks: u32,
    in_flight: Cell<u32>,
    /// Sends waiting for a credit, in submission order.
    pending: RefCell<VecDeque<PendingSend>>,
    /// Finished sends (delivered or flushed) whose completion has not been reported yet.
    /// At most `num_tasks`, as the sends in flight are.
    completed: Fifo<(u64, ErrorCode)>,
    face: F,
}

/// `doca_comch_producer` on the CPU side of a CPU→DPA MsgQ, reporting through `F`.
pub struct CpuProducer<F: SendFace = SendCallback> {
    inner: Rc<Inner<F>>,
}

impl<F: SendFace> fmt::Debug for CpuProducer<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuProducer")
            .field("id", &self.inner.id)
            .field("in_flight", &self.inner.in_flight.get())
            .finish()
    }
}

impl<'a> CpuProducerBuilder<'a> {
    /// `doca_comch_producer_task_send_set_conf`: the size of the send task pool (default 64).
    pub fn num_send_tasks(mut self, n: u32) -> Self {
        self.num_tasks = n;
        self
    }

    /// The producer id (`doca_comch_producer_get_id`) instead of the next one; ids are unique
    /// per queue.
    pub fn id(mut self, id: u32) -> Self {
        self.id = Some(id);
        self
    }

    /// The send task completion callback, run by [`Pe::progress`].
    pub fn on_send_complete(mut self, cb: impl FnMut(SendCompletion) + 'static) -> Self {
        self.on_send = Some(Box::new(cb));
        self
    }

    /// `doca_ctx_set_state_changed_cb`.
    pub fn on_state_changed(
        mut self,
        cb: impl Fn(CtxState, CtxState) + Send + Sync + 'static,
    ) -> Self {
        self.on_state_changed = Some(Box::new(cb));
        self
    }

    /// `doca_comch_msgq_producer_create` + `doca_pe_connect_ctx` + `doca_ctx_start`, with the
    /// callback of [`on_send_complete`](Self::on_send_complete).
    pub fn start(mut self) -> Result<CpuProducer> {
        let face = SendCallback(Callback::new(self.on_send.take()));
        self.start_with(face)
    }

    /// Starts a producer that reports its sends to `face` (the object owning the tasks) instead
    /// of a callback.
    pub fn start_with<F: SendFace>(self, face: F) -> Result<CpuProducer<F>> {
        let msgq = &self.msgq.shared;
        msgq.check_endpoint("CPU producer", Direction::ToDpa)?;
        super::check_task_pool("send", self.num_tasks)?;
        let id = msgq.add_producer(self.id)?;
        // add_producer keeps the producers within the table's capacity.
        let Some((waiter_slot, waiter)) = msgq.credit_waiters.register(&self.pe.waker()) else {
            msgq.remove_producer();
            return Err(msgq.producer_capacity_error());
        };
        let n = self.num_tasks as usize;
        let inner = Rc::new(Inner {
            id,
            msgq: msgq.clone(),
            waiter,
            waiter_slot,
            state: StateMachine::new("the CPU producer"),
            num_tasks: self.num_tasks,
            in_flight: Cell::new(0),
            pending: RefCell::new(VecDeque::with_capacity(n)),
            completed: Fifo::new(n, (0, ErrorCode::Success)),
            face,
        });
        if let Some(cb) = self.on_state_changed {
            inner.state.set_state_changed_cb(cb)?;
        }
        inner.state.start()?;
        let weak: std::rc::Weak<dyn PeClient> =
            Rc::downgrade(&inner) as std::rc::Weak<dyn PeClient>;
        self.pe.connect(weak);
        Ok(CpuProducer { inner })
    }
}

impl CpuProducer {
    /// A producer on `msgq` driven by `pe`.
    pub fn builder<'a>(msgq: &'a Msgq, pe: &'a Pe) -> CpuProducerBuilder<'a> {
        CpuProducerBuilder {
            msgq,
            pe,
            num_tasks: 64,
            id: None,
            on_send: None,
            on_state_changed: None,
        }
    }
}

impl<F: SendFace> CpuProducer<F> {
    /// `doca_comch_producer_get_id`.
    pub fn id(&self) -> u32 {
        self.inner.id
    }

    /// `doca_comch_producer_task_send_alloc_init` + `doca_task_submit` with immediate data only;
    /// `token` comes back with the completion (the task's user data, or its index in a pool).
    ///
    /// The task completes (its face hears of it in [`Pe::progress`]) once the message is in the
    /// DPA consumer's completion context. Without a credit (a receive the DPA posted with
    /// `consumer_ack`) the task waits inside the soft device; nothing is dropped, and per-consumer
    /// order is kept. Fails with NO_MEMORY when all send tasks are in flight. The message's
    /// length is checked here, once, against the consumer's `imm_data_len` (at most the MsgQ's
    /// limit of 32 bytes).
    #[inline]
    pub fn send(&self, imm: &[u8], consumer_id: u32, token: u64) -> Result<()> {
        let inner = &*self.inner;
        inner.state.require_running("send")?;
        let Some(consumer) = inner.consumer(consumer_id) else {
            bail!(
                NotFound,
                "no consumer with id {consumer_id} on this MsgQ (use DpaConsumer::id)"
            );
        };
        if imm.len() > consumer.completion.imm_data_len as usize {
            return Err(too_long(
                imm.len(),
                consumer_id,
                consumer.completion.imm_data_len,
            ));
        }
        if inner.in_flight.get() >= inner.num_tasks {
            bail!(
                NoMemory,
                "all {} send tasks are in flight: call Pe::progress to complete them, or configure \
                 more with num_send_tasks",
                inner.num_tasks
            );
        }
        inner.in_flight.set(inner.in_flight.get() + 1);
        let mut pending = inner.pending.borrow_mut();
        // Behind earlier waiting sends, a send waits too: order per consumer is kept.
        let outcome = if pending.is_empty() {
            consumer.try_deliver(imm, inner.id)
        } else {
            Delivery::NoCredit
        };
        if outcome == Delivery::Delivered {
            inner.complete(token, ErrorCode::Success);
        } else {
            if pending.is_empty() {
                inner.msgq.credit_waiters.set_waiting(&inner.waiter, true);
            }
            pending.push_back(PendingSend {
                imm: crate::ring::padded_imm(imm),
                len: imm.len() as u8,
                consumer: consumer_id,
                token,
                credit_held: outcome == Delivery::CreditHeld,
            });
        }
        Ok(())
    }

    /// Send tasks not completed yet.
    pub fn in_flight(&self) -> u32 {
        self.inner.in_flight.get()
    }

    /// `doca_ctx_get_state`.
    pub fn state(&self) -> CtxState {
        self.inner.state.get()
    }

    /// Takes back every send still waiting for a credit; [`Pe::progress`] reports them with
    /// status [`FLUSHED`](super::FLUSHED), in order, after the ones already delivered. A send
    /// that holds a credit already is delivered, not flushed (the DPA posted that receive).
    /// Returns how many it took back.
    pub fn flush(&self) -> usize {
        let inner = &*self.inner;
        let mut pending = inner.pending.borrow_mut();
        let before = pending.len();
        pending.retain(|p| {
            if p.credit_held {
                return true;
            }
            inner.complete(p.token, FLUSHED);
            false
        });
        if pending.is_empty() {
            inner.msgq.credit_waiters.set_waiting(&inner.waiter, false);
        }
        before - pending.len()
    }

    /// `doca_ctx_stop`: fails with IN_USE while tasks are in flight.
    pub fn stop(&self) -> Result<()> {
        if self.inner.in_flight.get() > 0 {
            bail!(
                InUse,
                "cannot stop the CPU producer: {} send tasks in flight; progress them first",
                self.inner.in_flight.get()
            );
        }
        self.inner.state.stop()
    }
}

/// Why a message is refused: longer than its consumer takes (the MsgQ's limit of 32 bytes
/// included, since no consumer takes more).
#[cold]
#[inline(never)]
fn too_long(len: usize, consumer_id: u32, imm_data_len: u32) -> crate::error::Error {
    if len > limits::MAX_IMM_DATA_LEN {
        return crate::error::err(
            ErrorCode::InvalidValue,
            format!(
                "immediate data of {len} bytes exceeds the MsgQ limit of {} bytes",
                limits::MAX_IMM_DATA_LEN
            ),
        );
    }
    crate::error::err(
        ErrorCode::InvalidValue,
        format!(
            "immediate data of {len} bytes exceeds consumer {consumer_id}'s imm_data_len of \
             {imm_data_len}"
        ),
    )
}

impl<F> Inner<F> {
    /// A send in flight finished: its face hears of it at the next progress.
    #[inline]
    fn complete(&self, token: u64, status: ErrorCode) {
        // Sends in flight never exceed num_tasks, the queue's capacity.
        self.completed.push_within_capacity((token, status));
    }

    /// The live consumer `id` names (ids are not reused, so never a later one).
    fn consumer(&self, id: u32) -> Option<&DpaConsumerShared> {
        self.msgq.dpa_consumers.get_by_id(id, |c| c.id)
    }
}

impl<F: SendFace> PeClient for Inner<F> {
    fn progress(&self) -> usize {
        if self.msgq.dpa.shared.sched.is_deterministic() {
            self.msgq.dpa.run_round();
        }
        {
            let mut pending = self.pending.borrow_mut();
            while let Some(front) = pending.front_mut() {
                let status = match self.consumer(front.consumer) {
                    Some(c) if front.retry(c, self.id) => ErrorCode::Success,
                    Some(_) => break,
                    // Destroyed while the send waited: it fails, and since ids are not reused
                    // it can never reach a consumer created later.
                    None => ErrorCode::NotFound,
                };
                let done = pending.pop_front().expect("front exists");
                self.complete(done.token, status);
                if pending.is_empty() {
                    self.msgq.credit_waiters.set_waiting(&self.waiter, false);
                }
            }
        }
        // Only the completions queued now: sends made by the callbacks complete in the next
        // call, so one progress call stays bounded however eagerly callbacks send.
        let ready = self.completed.len();
        let mut n = 0;
        for _ in 0..ready {
            let Some((token, status)) = self.completed.pop() else {
                break;
            };
            self.in_flight.set(self.in_flight.get() - 1);
            n += 1;
            self.face.send_done(token, status);
        }
        n
    }

    fn has_pending(&self) -> bool {
        !self.completed.is_empty()
            || self.pending.borrow().front().is_some_and(|f| {
                self.consumer(f.consumer)
                    .is_none_or(|c| f.credit_held || c.can_deliver())
            })
    }
}

impl<F: SendFace> Drop for CpuProducer<F> {
    fn drop(&mut self) {
        let _ = self.inner.state.stop();
        let inner = &*self.inner;
        inner
            .msgq
            .credit_waiters
            .unregister(inner.waiter_slot, &inner.waiter);
        inner.msgq.remove_producer();
    }
}
