//! `doca_comch_producer.h`: producers of a MsgQ, on the CPU (send tasks) or the DPA, and
//! producers on a Comch connection (the fast path: the model's `FastSender`).

use super::context::{Context, CtxCore};
use super::dpa_completion::DpaCompletionObj;
use super::msgq::{self, MsgqObj};
use super::registry::{self, Kind, Object};
use super::task::{Task, TaskCore, TaskNames, Tasks};
use super::types::*;
use crate::comch::{CpuProducer, DpaProducer, SendFace};
use crate::comch_ctrl::{FastFace, FastSend, FastSender, Link};
use crate::ctx::CtxState;
use crate::error::{ErrorCode, Result, bail};
use crate::limits::MAX_IMM_DATA_LEN;
use crate::msgq::Direction;
use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::os::fd::RawFd;
use std::rc::Rc;

/// Send-task configuration (`doca_comch_producer_task_send_set_conf`).
#[derive(Clone, Copy)]
struct SendConf {
    on_success: doca_comch_producer_task_send_completion_cb_t,
    on_error: doca_comch_producer_task_send_completion_cb_t,
    num_tasks: u32,
}

/// The producer while it runs.
enum Running {
    Cpu(CpuProducer<Reports>),
    Dpa(DpaProducer),
    /// Shared with a progress pass that runs callbacks (one may stop the producer).
    Fast(Rc<FastSender>),
}

/// The model's CPU producer reports to the C producer: its tokens are task indices.
struct Reports(*const ProducerObj);

impl SendFace for Reports {
    #[inline]
    fn send_done(&self, token: u64, status: ErrorCode) {
        // SAFETY: the producer object outlives its model object, which it drops before it is
        // destroyed (destroy needs IDLE, and IDLE drops the model).
        unsafe { &*self.0 }.completed(token as u32, status.raw() as doca_error_t);
    }
}

/// A `struct doca_comch_producer` of a MsgQ.
pub(crate) struct ProducerObj {
    pub core: CtxCore,
    /// The MsgQ (null for a producer on a connection).
    msgq: *mut c_void,
    /// The connection a fast-path producer sends on.
    link: Option<Link>,
    id: u32,
    conf: Cell<Option<SendConf>>,
    dev_max_num_send: Cell<u32>,
    dpa_completion: Cell<*mut c_void>,
    running: RefCell<Option<Running>>,
    tasks: Tasks<SendTask>,
}

impl Object for ProducerObj {
    const KIND: Kind = Kind::Producer;
}

/// A `struct doca_comch_producer_task_send`.
/// `#[repr(C)]`, core first: see [`Task`].
#[repr(C)]
pub(crate) struct SendTask {
    core: TaskCore,
    producer: *const ProducerObj,
    imm: Cell<[u8; MAX_IMM_DATA_LEN]>,
    imm_len: Cell<u32>,
    consumer_id: Cell<u32>,
    /// The task's `struct doca_buf *` (null: immediate data only).
    buf: Cell<*const c_void>,
}

impl Object for SendTask {
    const KIND: Kind = Kind::SendTask;
}

crate::capi::task::task_core_first!(SendTask);

// SAFETY: `#[repr(C)]` with `core` first, checked above.
unsafe impl Task for SendTask {
    fn core(&self) -> &TaskCore {
        &self.core
    }
    fn submit_task(&self) -> Result<()> {
        SendTask::submit(self)
    }
    fn free_task(&self) -> Result<()> {
        SendTask::free(self)
    }
}

pub(crate) fn producer<'a>(
    ptr: *const doca_comch_producer,
    param: &str,
) -> Result<&'a ProducerObj> {
    registry::get::<ProducerObj>(ptr.cast(), param)
}

impl ProducerObj {
    /// A new idle producer of the MsgQ `msgq` with id `id`; returns its handle.
    pub(crate) fn create(msgq: *mut c_void, id: u32) -> Result<*mut c_void> {
        Self::register(msgq, None, id)
    }

    fn register(msgq: *mut c_void, link: Option<Link>, id: u32) -> Result<*mut c_void> {
        crate::capi::context::register_view::<ProducerObj>(registry::Kind::Producer);
        let handle = registry::register(Box::new(ProducerObj {
            core: CtxCore::new(),
            msgq,
            link,
            id,
            conf: Cell::new(None),
            dev_max_num_send: Cell::new(0),
            dpa_completion: Cell::new(std::ptr::null_mut()),
            running: RefCell::new(None),
            tasks: Tasks::new(TaskNames {
                ctx: "producer",
                tasks: "send",
            }),
        }))?;
        registry::get::<ProducerObj>(handle, "producer")?
            .core
            .handle
            .set(handle);
        Ok(handle)
    }

    fn msgq(&self) -> Result<&MsgqObj> {
        msgq::msgq(self.msgq.cast(), "the producer's MsgQ")
    }

    fn on_dpa(&self) -> bool {
        !self.core.dpa.get().is_null()
    }

    fn start_cpu(&self, q: &MsgqObj, direction: Direction) -> Result<Running> {
        if direction != Direction::ToDpa {
            bail!(
                NotSupported,
                "producers of a DPA -> CPU MsgQ (set_dpa_producer) run on the DPA: call \
                 doca_ctx_set_datapath_on_dpa before start"
            );
        }
        let Some(conf) = self.conf.get() else {
            bail!(
                BadState,
                "configure send tasks first (doca_comch_producer_task_send_set_conf)"
            );
        };
        let pe = crate::capi::pe::connected(&self.core, "producer")?;
        let model = CpuProducer::builder(&*q.model()?, &pe.pe)
            .num_send_tasks(conf.num_tasks)
            .id(self.id)
            .start_with(Reports(self))?;
        self.make_tasks(conf.num_tasks)?;
        Ok(Running::Cpu(model))
    }

    fn make_tasks(&self, n: u32) -> Result<()> {
        let me: *const ProducerObj = self;
        self.tasks.ensure(n, |index| SendTask {
            core: TaskCore::new(index),
            producer: me,
            imm: Cell::new([0; MAX_IMM_DATA_LEN]),
            imm_len: Cell::new(0),
            consumer_id: Cell::new(0),
            buf: Cell::new(std::ptr::null()),
        })
    }

    /// Starts a producer on a connection.
    fn start_fast(&self, link: &Link) -> Result<Running> {
        if !self.core.dpa.get().is_null() {
            bail!(
                NotSupported,
                "producers on a Comch connection run on the CPU (DPA producers belong to a MsgQ)"
            );
        }
        let Some(conf) = self.conf.get() else {
            bail!(
                BadState,
                "configure send tasks first (doca_comch_producer_task_send_set_conf)"
            );
        };
        let pe = crate::capi::pe::connected(&self.core, "producer")?;
        self.make_tasks(conf.num_tasks)?;
        pe.polling(true);
        Ok(Running::Fast(Rc::new(FastSender::new(
            link,
            self.id,
            conf.num_tasks,
        ))))
    }

    /// The fast-path sender, while it runs (a clone: the caller may run callbacks).
    fn fast(&self) -> Option<Rc<FastSender>> {
        match self.running.borrow().as_ref() {
            Some(Running::Fast(fast)) => Some(fast.clone()),
            _ => None,
        }
    }

    fn start_dpa(&self, q: &MsgqObj, direction: Direction, dpa: *mut c_void) -> Result<Running> {
        if direction != Direction::FromDpa {
            bail!(
                NotSupported,
                "producers of a CPU -> DPA MsgQ (set_dpa_consumer) run on the CPU: do not move \
                 their datapath to the DPA"
            );
        }
        if dpa != self.core.dpa.get() {
            bail!(
                InvalidValue,
                "the producer's datapath is on another DPA than the MsgQ's"
            );
        }
        let n = self.dev_max_num_send.get();
        if n == 0 {
            bail!(
                BadState,
                "set the number of sends first (doca_comch_producer_set_dev_max_num_send)"
            );
        }
        let comp = registry::get::<DpaCompletionObj>(
            self.dpa_completion.get(),
            "the attached DPA completion",
        )
        .map_err(|_| {
            crate::error::err(
                ErrorCode::BadState,
                "attach a started DPA completion first (doca_comch_producer_dpa_completion_attach)",
            )
        })?;
        let model = DpaProducer::builder(&*q.model()?, &*comp.model()?)
            .dev_num_send(n)
            .user_data(self.core.user_data.get().bits() as u32)
            .id(self.id)
            .start()?;
        Ok(Running::Dpa(model))
    }

    /// A send of task `index` finished with `status`: its callback runs.
    fn completed(&self, index: u32, status: doca_error_t) {
        let Some(conf) = self.conf.get() else { return };
        let Some((handle, task_data)) = self.tasks.complete(index, status, |_| {}) else {
            return;
        };
        let cb = if status == 0 {
            conf.on_success
        } else {
            conf.on_error
        };
        if let Some(cb) = cb {
            debug_assert!(crate::capi::registry::in_callback_frame());
            // SAFETY: the program's callback with the declared signature; the task handle is live.
            unsafe { cb(handle.cast(), task_data, self.core.user_data.get()) };
        }
    }

    /// The last step of a stop: nothing outstanding, so the model goes and the context is IDLE.
    fn finish_stop(&self) {
        let running = self.running.borrow_mut().take();
        if matches!(running, Some(Running::Fast(_))) {
            if let Some(pe) = super::pe::of(&self.core) {
                pe.polling(false);
            }
        }
        drop(running);
        self.core.transition(CtxState::Idle);
    }

    fn submit(&self, task: &SendTask) -> Result<()> {
        if self.link.is_some() {
            let Some(fast) = self.fast() else {
                bail!(BadState, "the producer is not running");
            };
            self.tasks.submit(self.core.state(), task, || {
                fast.queue(task.core.index);
                Ok(())
            })?;
            fast.drive(self);
            return Ok(());
        }
        self.tasks.submit(self.core.state(), task, || {
            let running = self.running.borrow();
            let Some(Running::Cpu(model)) = running.as_ref() else {
                bail!(BadState, "the producer is not running on the CPU");
            };
            let imm = task.imm.get();
            model.send(
                &imm[..task.imm_len.get() as usize],
                task.consumer_id.get(),
                u64::from(task.core.index),
            )
        })
    }
}

impl Context for ProducerObj {
    fn core(&self) -> &CtxCore {
        &self.core
    }

    fn start(&self) -> Result<bool> {
        if let Some(link) = &self.link {
            let running = self.start_fast(link)?;
            *self.running.borrow_mut() = Some(running);
            self.core.transition(CtxState::Running);
            return Ok(true);
        }
        let q = self.msgq()?;
        let Some((direction, dpa)) = q.target() else {
            bail!(BadState, "the MsgQ has no direction");
        };
        let running = if self.on_dpa() {
            self.start_dpa(q, direction, dpa)?
        } else {
            self.start_cpu(q, direction)?
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
            Some(Running::Fast(fast)) => fast.flush(self),
            _ => {}
        }
        Ok(self.tasks.stop(&self.core, || self.finish_stop()))
    }

    fn poll(&self) -> usize {
        self.fast().map_or(0, |fast| fast.poll(self))
    }

    fn has_pending(&self) -> bool {
        self.fast().is_some_and(|fast| fast.has_pending())
    }

    fn inflight(&self) -> usize {
        self.tasks.inflight()
    }

    fn after_progress(&self) -> usize {
        self.tasks.after_progress(
            &self.core,
            |index, status| self.completed(index, status),
            || self.finish_stop(),
        )
    }
}

/// What the model's fast-path sender needs of the C producer.
impl FastFace for ProducerObj {
    fn watch(&self, fd: RawFd) -> Result<()> {
        super::pe::watch(&self.core, fd)
    }

    fn unwatch(&self, fd: RawFd) {
        super::pe::unwatch(&self.core, fd)
    }

    fn send_of(&self, index: u32) -> Result<FastSend<'_>> {
        self.tasks
            .with(index, |t| {
                Ok(FastSend {
                    consumer: t.consumer_id.get(),
                    imm: t.imm.get(),
                    imm_len: t.imm_len.get() as usize,
                    data: api::send_data(t.buf.get())?,
                })
            })
            .unwrap_or_else(|| Err(crate::error::err(ErrorCode::Unexpected, "task index")))
    }

    fn send_done(&self, index: u32, status: ErrorCode) {
        self.completed(index, status.raw() as doca_error_t);
    }
}

/// The task behind a `struct doca_comch_producer_task_send *`.
pub(crate) fn send_task<'a>(
    ptr: *const doca_comch_producer_task_send,
    param: &str,
) -> Result<&'a SendTask> {
    registry::get::<SendTask>(ptr.cast(), param)
}

impl SendTask {
    pub(crate) fn producer(&self) -> &ProducerObj {
        // SAFETY: a task lives in its producer's pool, which the producer destroys (with the
        // task) before it is freed itself.
        unsafe { &*self.producer }
    }

    pub(crate) fn submit(&self) -> Result<()> {
        self.producer().submit(self)
    }

    pub(crate) fn free(&self) -> Result<()> {
        self.producer().tasks.free(self)
    }
}

mod api;
pub use api::*;
