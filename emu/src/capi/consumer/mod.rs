//! `doca_comch_consumer.h`: consumers of a MsgQ, on the CPU (post-receive tasks) or the DPA,
//! and consumers on a Comch connection (the fast path: the model's `FastReceiver`).

use super::consumer_completion::ConsumerCompletionObj;
use super::context::{Context, CtxCore};
use super::msgq::{self, MsgqObj};
use super::registry::{self, Kind, Object};
use super::task::{Task, TaskCore, TaskNames, Tasks};
use super::types::*;
use crate::comch::{CpuConsumer, DpaConsumer};
use crate::comch_ctrl::{Announced, FastReceiver, Link, RecvFace};
use crate::ctx::CtxState;
use crate::error::{ErrorCode, Result, bail};
use crate::limits::MAX_IMM_DATA_LEN;
use crate::msgq::Direction;
use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::rc::Rc;

/// Post-receive configuration (`doca_comch_consumer_task_post_recv_set_conf`).
#[derive(Clone, Copy)]
struct RecvConf {
    on_success: doca_comch_consumer_task_post_recv_completion_cb_t,
    on_error: doca_comch_consumer_task_post_recv_completion_cb_t,
    num_tasks: u32,
}

/// The consumer while it runs.
enum Running {
    Cpu(CpuConsumer<Reports>),
    Dpa(DpaConsumer),
    /// Shared with a progress pass that runs callbacks (one may stop the consumer).
    Fast(Rc<FastReceiver>),
}

/// The model's CPU consumer reports to the C consumer: its tokens are task indices.
struct Reports(*const ConsumerObj);

impl crate::comch::RecvFace for Reports {
    #[inline]
    fn received(&self, token: u64, status: ErrorCode, imm: &[u8], producer_id: u32) {
        // SAFETY: the consumer object outlives its model object, which it drops before it is
        // destroyed (destroy needs IDLE, and IDLE drops the model).
        unsafe { &*self.0 }.completed(token as u32, status.raw() as doca_error_t, imm, producer_id);
    }
}

/// What a consumer on a connection is attached to.
struct Attached {
    link: Link,
    /// The `struct doca_mmap *` its buffers come from.
    mmap: *mut c_void,
}

/// A `struct doca_comch_consumer` of a MsgQ.
pub(crate) struct ConsumerObj {
    pub core: CtxCore,
    /// The MsgQ (null for a consumer on a connection).
    msgq: *mut c_void,
    link: Option<Attached>,
    id: u32,
    imm_data_len: Cell<u32>,
    conf: Cell<Option<RecvConf>>,
    dev_max_num_recv: Cell<u32>,
    /// The consumer completion and the user data given with it.
    completion: Cell<Option<(*mut c_void, u32)>>,
    running: RefCell<Option<Running>>,
    tasks: Tasks<RecvTask>,
}

impl Object for ConsumerObj {
    const KIND: Kind = Kind::Consumer;
}

/// A `struct doca_comch_consumer_task_post_recv`.
/// `#[repr(C)]`, core first: see [`Task`].
#[repr(C)]
pub(crate) struct RecvTask {
    core: TaskCore,
    consumer: *const ConsumerObj,
    imm: Cell<[u8; MAX_IMM_DATA_LEN]>,
    imm_len: Cell<u32>,
    producer_id: Cell<u32>,
    /// The task's `struct doca_buf *` (null: immediate data only).
    buf: Cell<*mut c_void>,
}

impl Object for RecvTask {
    const KIND: Kind = Kind::RecvTask;
}

crate::capi::task::task_core_first!(RecvTask);

// SAFETY: `#[repr(C)]` with `core` first, checked above.
unsafe impl Task for RecvTask {
    fn core(&self) -> &TaskCore {
        &self.core
    }
    fn submit_task(&self) -> Result<()> {
        RecvTask::submit(self)
    }
    fn free_task(&self) -> Result<()> {
        RecvTask::free(self)
    }
}

pub(crate) fn consumer<'a>(
    ptr: *const doca_comch_consumer,
    param: &str,
) -> Result<&'a ConsumerObj> {
    registry::get::<ConsumerObj>(ptr.cast(), param)
}

pub(crate) fn recv_task<'a>(
    ptr: *const doca_comch_consumer_task_post_recv,
    param: &str,
) -> Result<&'a RecvTask> {
    registry::get::<RecvTask>(ptr.cast(), param)
}

impl ConsumerObj {
    /// A new idle consumer of the MsgQ `msgq` with id `id`; returns its handle.
    pub(crate) fn create(msgq: *mut c_void, id: u32) -> Result<*mut c_void> {
        Self::register(msgq, None, id)
    }

    fn register(msgq: *mut c_void, link: Option<Attached>, id: u32) -> Result<*mut c_void> {
        crate::capi::context::register_view::<ConsumerObj>(registry::Kind::Consumer);
        let handle = registry::register(Box::new(ConsumerObj {
            core: CtxCore::new(),
            msgq,
            link,
            id,
            imm_data_len: Cell::new(MAX_IMM_DATA_LEN as u32),
            conf: Cell::new(None),
            dev_max_num_recv: Cell::new(0),
            completion: Cell::new(None),
            running: RefCell::new(None),
            tasks: Tasks::new(TaskNames {
                ctx: "consumer",
                tasks: "post-receive",
            }),
        }))?;
        registry::get::<ConsumerObj>(handle, "consumer")?
            .core
            .handle
            .set(handle);
        Ok(handle)
    }

    fn msgq(&self) -> Result<&MsgqObj> {
        msgq::msgq(self.msgq.cast(), "the consumer's MsgQ")
    }

    fn start_cpu(&self, q: &MsgqObj, direction: Direction) -> Result<Running> {
        if direction != Direction::FromDpa {
            bail!(
                NotSupported,
                "consumers of a CPU -> DPA MsgQ (set_dpa_consumer) run on the DPA: call \
                 doca_ctx_set_datapath_on_dpa before start"
            );
        }
        let Some(conf) = self.conf.get() else {
            bail!(
                BadState,
                "configure post-receive tasks first (doca_comch_consumer_task_post_recv_set_conf)"
            );
        };
        let pe = crate::capi::pe::connected(&self.core, "consumer")?;
        let model = CpuConsumer::builder(&*q.model()?, &pe.pe)
            .num_recv_tasks(conf.num_tasks)
            .imm_data_len(self.imm_data_len.get())
            .id(self.id)
            .start_with(Reports(self))?;
        self.make_tasks(conf.num_tasks)?;
        Ok(Running::Cpu(model))
    }

    fn make_tasks(&self, n: u32) -> Result<()> {
        let me: *const ConsumerObj = self;
        self.tasks.ensure(n, |index| RecvTask {
            core: TaskCore::new(index),
            consumer: me,
            imm: Cell::new([0; MAX_IMM_DATA_LEN]),
            imm_len: Cell::new(0),
            producer_id: Cell::new(0),
            buf: Cell::new(std::ptr::null_mut()),
        })
    }

    /// Starts a consumer on a connection: shares its mmap's memory and announces it.
    fn start_fast(&self, attached: &Attached) -> Result<Running> {
        if !self.core.dpa.get().is_null() {
            bail!(
                NotSupported,
                "consumers on a Comch connection run on the CPU (DPA consumers belong to a MsgQ)"
            );
        }
        let Some(conf) = self.conf.get() else {
            bail!(
                BadState,
                "configure post-receive tasks first (doca_comch_consumer_task_post_recv_set_conf)"
            );
        };
        let pe = crate::capi::pe::connected(&self.core, "consumer")?;
        let mmap = &super::mmap::mmap(attached.mmap.cast(), "the consumer's mmap")?.mmap;
        self.make_tasks(conf.num_tasks)?;
        let fast = FastReceiver::start(
            &attached.link,
            mmap,
            self.id,
            conf.num_tasks,
            self.imm_data_len.get(),
        )?;
        pe.pe.watch_fd(fast.wake_fd())?;
        pe.polling(true);
        Ok(Running::Fast(Rc::new(fast)))
    }

    /// The fast-path receiver, while it runs (a clone: the caller may run callbacks).
    fn fast(&self) -> Option<Rc<FastReceiver>> {
        match self.running.borrow().as_ref() {
            Some(Running::Fast(fast)) => Some(fast.clone()),
            _ => None,
        }
    }

    /// A STARTING consumer on a connection announces itself; once the peer is told it is
    /// RUNNING (its state callback says so). A start that fails goes back to IDLE.
    fn finish_start(&self) -> usize {
        let Some(fast) = self.fast() else {
            return 0;
        };
        match fast.announce() {
            Announced::Yes => {
                self.core.transition(CtxState::Running);
                1
            }
            Announced::NotYet => 0,
            Announced::Failed(e) => {
                super::report("comch consumer start", &e);
                self.finish_stop();
                1
            }
        }
    }

    fn start_dpa(&self, q: &MsgqObj, direction: Direction, dpa: *mut c_void) -> Result<Running> {
        if direction != Direction::ToDpa {
            bail!(
                NotSupported,
                "consumers of a DPA -> CPU MsgQ (set_dpa_producer) run on the CPU: do not move \
                 their datapath to the DPA"
            );
        }
        if dpa != self.core.dpa.get() {
            bail!(
                InvalidValue,
                "the consumer's datapath is on another DPA than the MsgQ's"
            );
        }
        let n = self.dev_max_num_recv.get();
        if n == 0 {
            bail!(
                BadState,
                "set the number of receives first (doca_comch_consumer_set_dev_max_num_recv)"
            );
        }
        let Some((comp, user_data)) = self.completion.get() else {
            bail!(
                BadState,
                "set a consumer completion first (doca_comch_consumer_set_completion)"
            );
        };
        let comp = registry::get::<ConsumerCompletionObj>(comp, "the consumer completion")?;
        let model = DpaConsumer::builder(&*q.model()?, &*comp.model()?)
            .dev_num_recv(n)
            .user_data(user_data)
            .id(self.id)
            .start()?;
        Ok(Running::Dpa(model))
    }

    /// The receive of task `index` finished with `status`: the task gets the immediate and
    /// the producer's id, and its callback runs.
    fn completed(&self, index: u32, status: doca_error_t, imm: &[u8], producer_id: u32) {
        let Some(conf) = self.conf.get() else { return };
        let Some((handle, task_data)) = self.tasks.complete(index, status, |task| {
            let len = imm.len().min(MAX_IMM_DATA_LEN);
            task.imm.set(crate::ring::padded_imm(&imm[..len]));
            task.imm_len.set(len as u32);
            task.producer_id.set(producer_id);
        }) else {
            return;
        };
        let cb = if status == 0 {
            conf.on_success
        } else {
            conf.on_error
        };
        if let Some(cb) = cb {
            debug_assert!(crate::capi::registry::in_callback_frame());
            // SAFETY: the program's callback with the declared signature; the task is live.
            unsafe { cb(handle.cast(), task_data, self.core.user_data.get()) };
        }
    }

    fn finish_stop(&self) {
        let running = self.running.borrow_mut().take();
        if let Some(Running::Fast(fast)) = &running {
            if let Some(pe) = super::pe::of(&self.core) {
                pe.pe.unwatch_fd(fast.wake_fd());
                pe.polling(false);
            }
        }
        drop(running);
        self.core.transition(CtxState::Idle);
    }

    fn submit(&self, task: &RecvTask) -> Result<()> {
        self.tasks.submit(self.core.state(), task, || {
            let running = self.running.borrow();
            match running.as_ref() {
                Some(Running::Cpu(model)) => model.post_recv(u64::from(task.core.index)),
                Some(Running::Fast(fast)) => {
                    let Some(attached) = &self.link else {
                        bail!(Unexpected, "not a consumer on a connection");
                    };
                    let mmap = &super::mmap::mmap(attached.mmap.cast(), "mmap")?.mmap;
                    let buf = task.buf.get();
                    let buf = if buf.is_null() {
                        None
                    } else {
                        Some(&super::buf::buf(buf.cast())?.buf)
                    };
                    fast.post(mmap, task.core.index, buf)
                }
                _ => bail!(BadState, "the consumer is not running on the CPU"),
            }
        })
    }
}

impl Context for ConsumerObj {
    fn core(&self) -> &CtxCore {
        &self.core
    }

    fn start(&self) -> Result<bool> {
        if let Some(attached) = &self.link {
            // As on DOCA: the consumer registers with the peer through progress, so the start
            // answers IN_PROGRESS and RUNNING comes through the state callback.
            let running = self.start_fast(attached)?;
            *self.running.borrow_mut() = Some(running);
            self.core.transition(CtxState::Starting);
            return Ok(false);
        }
        let q = self.msgq()?;
        let Some((direction, dpa)) = q.target() else {
            bail!(BadState, "the MsgQ has no direction");
        };
        let running = if self.core.dpa.get().is_null() {
            self.start_cpu(q, direction)?
        } else {
            self.start_dpa(q, direction, dpa)?
        };
        *self.running.borrow_mut() = Some(running);
        self.core.transition(CtxState::Running);
        Ok(true)
    }

    fn stop(&self) -> Result<bool> {
        match self.running.borrow().as_ref() {
            Some(Running::Cpu(model)) => {
                model.flush();
            }
            Some(Running::Fast(fast)) => {
                fast.stop();
                self.tasks.flush_submitted();
            }
            _ => {}
        }
        Ok(self.tasks.stop(&self.core, || self.finish_stop()))
    }

    fn poll(&self) -> usize {
        if self.core.state() == CtxState::Starting {
            return self.finish_start();
        }
        self.fast().map_or(0, |fast| fast.poll(self))
    }

    /// Asked when the PE arms its notification: a fast-path consumer also asks its producers
    /// to wake it from now on (and looks at its ring after asking).
    fn has_pending(&self) -> bool {
        self.core.state() == CtxState::Starting
            || matches!(self.running.borrow().as_ref(), Some(Running::Fast(f)) if f.sleep())
    }

    fn inflight(&self) -> usize {
        self.tasks.inflight()
    }

    fn after_progress(&self) -> usize {
        self.tasks.after_progress(
            &self.core,
            |index, status| self.completed(index, status, &[], 0),
            || self.finish_stop(),
        )
    }
}

/// What the model's fast-path receiver needs of the C consumer.
impl RecvFace for ConsumerObj {
    fn recv_buf(&self, index: u32) -> Option<&crate::buf::Buf> {
        let handle = self.tasks.with(index, |t| t.buf.get())?;
        super::buf::buf(handle.cast()).ok().map(|b| &b.buf)
    }

    fn received(&self, index: u32, status: ErrorCode, imm: &[u8], producer: u32) {
        self.completed(index, status.raw() as doca_error_t, imm, producer);
    }
}

impl RecvTask {
    pub(crate) fn consumer(&self) -> &ConsumerObj {
        // SAFETY: a task lives in its consumer's pool, destroyed with it.
        unsafe { &*self.consumer }
    }

    pub(crate) fn submit(&self) -> Result<()> {
        self.consumer().submit(self)
    }

    pub(crate) fn free(&self) -> Result<()> {
        self.consumer().tasks.free(self)
    }
}

mod api;
pub use api::*;
