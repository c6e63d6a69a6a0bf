//! The CPU consumer of a DPA→CPU MsgQ (`doca_comch_consumer` with post-receive tasks).

use super::callback::Callback;
use super::fifo::Fifo;
use super::{CpuConsumerShared, FLUSHED};
use crate::ctx::{CtxState, StateChangedCb, StateMachine};
use crate::error::{ErrorCode, Result, bail};
use crate::limits;
use crate::msgq::{Direction, Msgq, MsgqShared};
use crate::pe::{Pe, PeClient};
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;

/// A completed post-receive task: the immediate a DPA producer sent, or a receive flushed
/// because the consumer stopped.
#[derive(Debug)]
pub struct RecvCompletion<'a> {
    /// The immediate data (`doca_comch_consumer_task_post_recv_get_imm_data`); valid during the
    /// callback only. Empty for a flushed receive.
    pub imm: &'a [u8],
    /// `doca_comch_consumer_task_post_recv_get_producer_id` (0 for a flushed receive).
    pub producer_id: u32,
    /// The user data given to [`CpuConsumer::post_recv`].
    pub user_data: u64,
    /// `SUCCESS`, or [`FLUSHED`](super::FLUSHED) for a receive the stopping consumer took back.
    pub status: ErrorCode,
}

type RecvCb = Box<dyn FnMut(&RecvCompletion<'_>)>;

/// Where a CPU consumer reports its finished receives: the object that owns the receive tasks
/// (the C consumer, whose task index is the token), or [`RecvCallback`] for the Rust API.
/// Called by [`Pe::progress`] with nothing of the consumer borrowed, so it may post, flush or
/// stop.
pub trait RecvFace: 'static {
    /// The receive posted with `token` finished: with a message of `producer_id` (SUCCESS), or
    /// empty ([`FLUSHED`](super::FLUSHED)) because the consumer stopped.
    fn received(&self, token: u64, status: ErrorCode, imm: &[u8], producer_id: u32);
}

/// The Rust API's face: the callback of [`CpuConsumerBuilder::on_recv`].
#[allow(missing_debug_implementations)] // holds a closure
pub struct RecvCallback(Callback<dyn FnMut(&RecvCompletion<'_>)>);

impl RecvFace for RecvCallback {
    #[inline]
    fn received(&self, token: u64, status: ErrorCode, imm: &[u8], producer_id: u32) {
        self.0.run(|cb| {
            cb(&RecvCompletion {
                imm,
                producer_id,
                user_data: token,
                status,
            })
        });
    }
}

/// Configuration of a [`CpuConsumer`].
pub struct CpuConsumerBuilder<'a> {
    on_state_changed: Option<StateChangedCb>,
    msgq: &'a Msgq,
    pe: &'a Pe,
    num_tasks: u32,
    imm_data_len: u32,
    id: Option<u32>,
    on_recv: Option<RecvCb>,
}

impl fmt::Debug for CpuConsumerBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuConsumerBuilder")
            .field("num_tasks", &self.num_tasks)
            .finish()
    }
}

struct Inner<F> {
    shared: Arc<CpuConsumerShared>,
    index: usize,
    msgq: Arc<MsgqShared>,
    state: StateMachine,
    num_tasks: u32,
    /// User data of posted receives, in posting order (receives complete in that order).
    posted: Fifo<u64>,
    /// Receives taken back by [`CpuConsumer::flush`], to report as flushed.
    flushed: Fifo<u64>,
    face: F,
}

/// `doca_comch_consumer` on the CPU side of a DPA→CPU MsgQ.
pub struct CpuConsumer<F: RecvFace = RecvCallback> {
    inner: Rc<Inner<F>>,
}

impl<F: RecvFace> fmt::Debug for CpuConsumer<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuConsumer")
            .field("id", &self.inner.shared.id)
            .finish()
    }
}

impl<'a> CpuConsumerBuilder<'a> {
    /// `doca_comch_consumer_task_post_recv_set_conf`: the size of the receive task pool
    /// (default 64).
    pub fn num_recv_tasks(mut self, n: u32) -> Self {
        self.num_tasks = n;
        self
    }

    /// `doca_comch_consumer_set_imm_data_len` (≤ 32; default 32).
    pub fn imm_data_len(mut self, len: u32) -> Self {
        self.imm_data_len = len;
        self
    }

    /// The consumer id (`doca_comch_consumer_get_id`) instead of the first free one; id `i` takes
    /// slot `(i - 1) % max_num_consumers` (ids from 1; the slot must be free).
    pub fn id(mut self, id: u32) -> Self {
        self.id = Some(id);
        self
    }

    /// The post-receive completion callback, run by [`Pe::progress`].
    pub fn on_recv(mut self, cb: impl FnMut(&RecvCompletion<'_>) + 'static) -> Self {
        self.on_recv = Some(Box::new(cb));
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

    /// `doca_comch_msgq_consumer_create` + `doca_pe_connect_ctx` + `doca_ctx_start`.
    pub fn start(mut self) -> Result<CpuConsumer> {
        let face = RecvCallback(Callback::new(self.on_recv.take()));
        self.start_with(face)
    }

    /// Starts a consumer that reports its receives to `face` (the object owning the tasks)
    /// instead of a callback.
    pub fn start_with<F: RecvFace>(self, face: F) -> Result<CpuConsumer<F>> {
        let msgq = &self.msgq.shared;
        msgq.check_endpoint("CPU consumer", Direction::FromDpa)?;
        super::check_task_pool("post-receive", self.num_tasks)?;
        if self.imm_data_len as usize > limits::MAX_IMM_DATA_LEN {
            bail!(
                InvalidValue,
                "imm_data_len {} exceeds the MsgQ limit of {} bytes",
                self.imm_data_len,
                limits::MAX_IMM_DATA_LEN
            );
        }
        let waker = self.pe.waker();
        let make = |index: usize| {
            Arc::new(CpuConsumerShared::new(
                self.id.unwrap_or_else(|| msgq.cpu_consumers.id_for(index)),
                self.num_tasks as usize,
                self.imm_data_len,
                waker,
            ))
        };
        let made = match self.id {
            None => msgq.cpu_consumers.insert_with(make),
            Some(0) => None,
            Some(id) => {
                let index = msgq.cpu_consumers.index_of_id(id);
                msgq.cpu_consumers
                    .insert_at(index, make)
                    .map(|c| (index, c))
            }
        };
        let Some((index, shared)) = made else {
            return Err(match self.id {
                Some(id) if id != 0 => crate::error::err(
                    ErrorCode::AlreadyExist,
                    format!("consumer id {id} is taken on this MsgQ"),
                ),
                Some(id) => crate::error::err(
                    ErrorCode::InvalidValue,
                    format!(
                        "consumer id {id} is not valid: ids start at 1 (max_num_consumers {})",
                        msgq.max_num_consumers
                    ),
                ),
                None => msgq.consumer_capacity_error(),
            });
        };
        let inner = Rc::new(Inner {
            shared,
            index,
            msgq: msgq.clone(),
            state: StateMachine::new("the CPU consumer"),
            num_tasks: self.num_tasks,
            posted: Fifo::new(self.num_tasks as usize, 0),
            flushed: Fifo::new(self.num_tasks as usize, 0),
            face,
        });
        if let Some(cb) = self.on_state_changed {
            inner.state.set_state_changed_cb(cb)?;
        }
        inner.state.start()?;
        let weak: std::rc::Weak<dyn PeClient> =
            Rc::downgrade(&inner) as std::rc::Weak<dyn PeClient>;
        self.pe.connect(weak);
        Ok(CpuConsumer { inner })
    }
}

impl CpuConsumer {
    /// A consumer on `msgq` driven by `pe`.
    pub fn builder<'a>(msgq: &'a Msgq, pe: &'a Pe) -> CpuConsumerBuilder<'a> {
        CpuConsumerBuilder {
            msgq,
            pe,
            num_tasks: 64,
            imm_data_len: limits::MAX_IMM_DATA_LEN as u32,
            id: None,
            on_recv: None,
            on_state_changed: None,
        }
    }
}

impl<F: RecvFace> CpuConsumer<F> {
    /// `doca_comch_consumer_get_id`: what DPA producers address.
    pub fn id(&self) -> u32 {
        self.inner.shared.id
    }

    /// `doca_comch_consumer_task_post_recv_alloc_init` (no buffer: MsgQ consumers receive
    /// immediate data only) + `doca_task_submit`. Fails with NO_MEMORY when every receive task
    /// is posted.
    #[inline]
    pub fn post_recv(&self, user_data: u64) -> Result<()> {
        let inner = &*self.inner;
        inner.state.require_running("post a receive")?;
        if inner.posted.len() + inner.flushed.len() >= inner.num_tasks as usize {
            bail!(
                NoMemory,
                "all {} receive tasks are posted: wait for completions, or configure more with num_recv_tasks",
                inner.num_tasks
            );
        }
        // Room is checked above: posted and flushed receives share the num_tasks.
        inner.posted.push_within_capacity(user_data);
        inner.shared.post();
        Ok(())
    }

    /// Receives posted and not completed yet (flushed ones count until reported).
    pub fn posted(&self) -> usize {
        self.inner.posted.len() + self.inner.flushed.len()
    }

    /// `doca_ctx_get_state`.
    pub fn state(&self) -> CtxState {
        self.inner.state.get()
    }

    /// Takes back every receive no producer has filled yet; [`Pe::progress`] reports them with
    /// status [`FLUSHED`](super::FLUSHED), after the messages already on their way. Returns how
    /// many it took back.
    pub fn flush(&self) -> usize {
        let taken = self.inner.shared.flush() as usize;
        // Messages fill receives in posting order, so the ones taken back are the newest. They
        // and the flushed ones together never exceed num_tasks, the queues' capacity.
        let inner = &*self.inner;
        inner.posted.drain_newest(taken, |user_data| {
            inner.flushed.push_within_capacity(user_data)
        });
        taken
    }

    /// `doca_ctx_stop` for the Rust model: outstanding receives are taken back and forgotten
    /// (their callbacks do not run).
    pub fn stop(&self) -> Result<()> {
        self.flush();
        self.inner.flushed.clear();
        self.inner.state.stop()
    }
}

impl<F: RecvFace> PeClient for Inner<F> {
    fn progress(&self) -> usize {
        if self.msgq.dpa.shared.sched.is_deterministic() {
            self.msgq.dpa.run_round();
        }
        let mut n = 0;
        let mut buf = [0u8; limits::MAX_IMM_DATA_LEN];
        // A message only lands in a receive posted before this call (a receive posted by a
        // callback is filled in the next one): one call stays bounded while callbacks send.
        let mut budget = self.posted.len();
        while budget > 0 {
            // SAFETY: the CPU consumer is the ring's only reader, and it is bound to this thread.
            let Some((len, producer_id)) = (unsafe { self.shared.ring.pop_into(&mut buf) }) else {
                break;
            };
            budget -= 1;
            // A message only arrives for a posted receive (the DPA side checks), so one is here.
            let user_data = self.posted.pop().unwrap_or_default();
            n += 1;
            self.face.received(
                user_data,
                ErrorCode::Success,
                &buf[..len as usize],
                producer_id,
            );
        }
        let flushed = self.flushed.len();
        for _ in 0..flushed {
            let Some(user_data) = self.flushed.pop() else {
                break;
            };
            n += 1;
            self.face.received(user_data, FLUSHED, &[], 0);
        }
        n
    }

    fn has_pending(&self) -> bool {
        crate::sync_hint::has_unpolled(&self.shared.ring) || !self.flushed.is_empty()
    }
}

impl<F: RecvFace> Drop for CpuConsumer<F> {
    fn drop(&mut self) {
        let _ = self.stop();
        self.inner.msgq.cpu_consumers.remove(self.inner.index);
        self.inner.msgq.retire_cpu_consumer(&self.inner.shared);
    }
}
