//! `doca_comch_consumer.h`: consumers of a MsgQ, on the CPU (post-receive tasks) or the DPA,
//! and consumers on a Comch connection (the fast path, see [`fast_path`](super::fast_path)).

use super::consumer_completion::ConsumerCompletionObj;
use super::ctx::{Context, CtxCore};
use super::fast_path::{ConnShared, FastConsumer};
use super::msgq::{self, MsgqObj};
use super::registry::{self, Kind, Object};
use super::task::{Task, TaskCore, TaskNames, Tasks};
use super::types::*;
use super::{call, call_value, out};
use crate::comch::{CpuConsumer, DpaConsumer, RecvCompletion};
use crate::ctx::CtxState;
use crate::error::{ErrorCode, Result, bail};
use crate::limits::{CONSUMER_MAX_NUM_RECV, CPU_MAX_NUM_TASKS, MAX_IMM_DATA_LEN};
use crate::msgq::Direction;
use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::sync::Arc;

/// Post-receive configuration (`doca_comch_consumer_task_post_recv_set_conf`).
#[derive(Clone, Copy)]
struct RecvConf {
    on_success: doca_comch_consumer_task_post_recv_completion_cb_t,
    on_error: doca_comch_consumer_task_post_recv_completion_cb_t,
    num_tasks: u32,
}

/// The consumer while it runs.
enum Running {
    Cpu(CpuConsumer),
    Dpa(DpaConsumer),
    Fast(FastConsumer),
}

/// What a consumer on a connection is attached to.
struct Link {
    shared: Arc<ConnShared>,
    /// The `struct doca_mmap *` its buffers come from.
    mmap: *mut c_void,
}

/// A `struct doca_comch_consumer` of a MsgQ.
pub(crate) struct ConsumerObj {
    pub core: CtxCore,
    /// The MsgQ (null for a consumer on a connection).
    msgq: *mut c_void,
    link: Option<Link>,
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

impl Task for RecvTask {
    fn core(&self) -> &TaskCore {
        &self.core
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

    fn register(msgq: *mut c_void, link: Option<Link>, id: u32) -> Result<*mut c_void> {
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
        let pe = self.core.connected_pe("consumer")?;
        let me: *const ConsumerObj = self;
        let model = CpuConsumer::builder(&*q.model()?, &pe.pe)
            .num_recv_tasks(conf.num_tasks)
            .imm_data_len(self.imm_data_len.get())
            .id(self.id)
            .on_recv(move |c: &RecvCompletion<'_>| {
                // SAFETY: the consumer object outlives its model object (see the producer).
                unsafe { &*me }.completed(
                    c.user_data as u32,
                    c.status.raw() as doca_error_t,
                    c.imm,
                    c.producer_id,
                )
            })
            .start()?;
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
    fn start_fast(&self, link: &Link) -> Result<Running> {
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
        let pe = self.core.connected_pe("consumer")?;
        let memory = super::mmap::mmap(link.mmap.cast(), "the consumer's mmap")?.share()?;
        self.make_tasks(conf.num_tasks)?;
        let fast = FastConsumer::start(
            link.shared.clone(),
            self.id,
            conf.num_tasks,
            self.imm_data_len.get(),
            memory,
        )?;
        pe.pe.watch_fd(fast.wake_fd())?;
        pe.polling(true);
        Ok(Running::Fast(fast))
    }

    /// Delivers what producers wrote; returns how many receives completed.
    fn poll_fast(&self) -> usize {
        let mut n = 0;
        loop {
            // No borrow of `running` across the callback, which may stop the consumer.
            let next = match self.running.borrow().as_ref() {
                Some(Running::Fast(fast)) => {
                    if n == 0 {
                        fast.clear_wake();
                    }
                    fast.next()
                }
                _ => None,
            };
            let Some(r) = next else {
                return n;
            };
            let imm = r.imm;
            let imm = &imm[..(r.imm_len as usize).min(MAX_IMM_DATA_LEN)];
            let grown = self.tasks.with(r.task, |t| t.buf.get()).and_then(|b| {
                let buf = super::buf::buf(b.cast()).ok()?;
                let len = buf.buf.get_data_len().ok()?;
                buf.buf.set_data_len(len + r.len).ok()
            });
            let status = match (grown, r.len) {
                (Some(()), _) | (None, 0) => 0,
                _ => ErrorCode::Unexpected.raw() as doca_error_t,
            };
            self.completed(r.task, status, imm, r.producer);
            n += 1;
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
            // SAFETY: the program's callback with the declared signature; the task is live.
            unsafe { cb(handle.cast(), task_data, self.core.user_data.get()) };
        }
    }

    fn finish_stop(&self) {
        let running = self.running.borrow_mut().take();
        if let Some(Running::Fast(fast)) = &running {
            if let Ok(pe) = super::pe::pe(self.core.pe.get().cast(), "pe") {
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
                    let (tail, room) = self.receive_room(task)?;
                    fast.post(task.core.index, tail, room);
                    Ok(())
                }
                _ => bail!(BadState, "the consumer is not running on the CPU"),
            }
        })
    }

    /// Where task `task`'s data goes (its buffer's tail) and how much fits; a task without a
    /// buffer takes immediate data only.
    fn receive_room(&self, task: &RecvTask) -> Result<(usize, usize)> {
        let Some(link) = &self.link else {
            bail!(Unexpected, "not a consumer on a connection");
        };
        if task.buf.get().is_null() {
            let m = super::mmap::mmap(link.mmap.cast(), "mmap")?.share()?;
            return Ok((m.base, 0));
        }
        let view = super::buf::buf(task.buf.get().cast())?.buf.view()?;
        let m = super::mmap::mmap(link.mmap.cast(), "mmap")?;
        if view.mmap.id() != m.mmap.id() {
            bail!(
                InvalidValue,
                "the task's buffer is not from the consumer's mmap (doca_comch_consumer_create)"
            );
        }
        let tail = view.data as usize + view.data_len;
        let end = view.head as usize + view.len;
        Ok((tail, end - tail))
    }
}

impl Context for ConsumerObj {
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
        self.poll_fast()
    }

    fn has_pending(&self) -> bool {
        matches!(self.running.borrow().as_ref(), Some(Running::Fast(f)) if f.ready())
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

/// `doca_comch_consumer_cap_is_supported`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_cap_is_supported(
    devinfo: *const doca_devinfo,
) -> doca_error_t {
    call("doca_comch_consumer_cap_is_supported", || {
        super::dev::devinfo(devinfo, "devinfo")?.comch_consumer_cap_is_supported()
    })
}

/// `doca_comch_consumer_cap_get_max_num_tasks`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_cap_get_max_num_tasks(
    devinfo: *const doca_devinfo,
    max_num_tasks: *mut u32,
) -> doca_error_t {
    call("doca_comch_consumer_cap_get_max_num_tasks", || {
        let n = super::dev::devinfo(devinfo, "devinfo")?.comch_consumer_cap_get_max_num_tasks()?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(max_num_tasks, "max_num_tasks", n) }
    })
}

/// `doca_comch_consumer_cap_get_max_buf_size`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_cap_get_max_buf_size(
    devinfo: *const doca_devinfo,
    max_buf_size: *mut u32,
) -> doca_error_t {
    call("doca_comch_consumer_cap_get_max_buf_size", || {
        let info = super::dev::devinfo(devinfo, "devinfo")?;
        info.comch_consumer_cap_is_supported()?;
        let n = u32::try_from(crate::limits::MMAP_MAX_LEN).unwrap_or(u32::MAX);
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(max_buf_size, "max_buf_size", n) }
    })
}

/// `doca_comch_consumer_destroy`: the context must be IDLE.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_destroy(
    consumer: *mut doca_comch_consumer,
) -> doca_error_t {
    call("doca_comch_consumer_destroy", || {
        let c = self::consumer(consumer, "consumer")?;
        c.core.require_idle("destroy the consumer")?;
        if let Ok(pe) = super::pe::pe(c.core.pe.get().cast(), "pe") {
            pe.disconnect(c.core.handle.get());
        }
        if let Some((comp, _)) = c.completion.get() {
            if let Ok(comp) = registry::get::<ConsumerCompletionObj>(comp, "completion") {
                comp.users.release();
            }
        }
        match &c.link {
            Some(link) => {
                link.shared
                    .users
                    .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
            }
            None => c.msgq()?.release_consumer_id(c.id),
        }
        drop(registry::unregister::<ConsumerObj>(consumer.cast()));
        Ok(())
    })
}

/// `doca_comch_consumer_as_ctx`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_as_ctx(
    consumer: *mut doca_comch_consumer,
) -> *mut doca_ctx {
    call_value("doca_comch_consumer_as_ctx", std::ptr::null_mut(), || {
        self::consumer(consumer, "consumer")?;
        Ok(consumer.cast())
    })
}

/// `doca_comch_consumer_get_id`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_get_id(
    consumer: *const doca_comch_consumer,
    id: *mut u32,
) -> doca_error_t {
    call("doca_comch_consumer_get_id", || {
        let c = self::consumer(consumer, "consumer")?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(id, "id", c.id) }
    })
}

/// `doca_comch_consumer_set_imm_data_len`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_set_imm_data_len(
    consumer: *mut doca_comch_consumer,
    imm_data_len: u32,
) -> doca_error_t {
    call("doca_comch_consumer_set_imm_data_len", || {
        let c = self::consumer(consumer, "consumer")?;
        c.core.require_idle("set the immediate data length")?;
        if imm_data_len as usize > MAX_IMM_DATA_LEN {
            bail!(
                InvalidValue,
                "imm_data_len {imm_data_len} exceeds the MsgQ limit of {MAX_IMM_DATA_LEN} bytes"
            );
        }
        c.imm_data_len.set(imm_data_len);
        Ok(())
    })
}

/// `doca_comch_consumer_task_post_recv_set_conf`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_task_post_recv_set_conf(
    consumer: *mut doca_comch_consumer,
    task_completion_cb: doca_comch_consumer_task_post_recv_completion_cb_t,
    task_error_cb: doca_comch_consumer_task_post_recv_completion_cb_t,
    num_post_recv_tasks: u32,
) -> doca_error_t {
    call("doca_comch_consumer_task_post_recv_set_conf", || {
        let c = self::consumer(consumer, "consumer")?;
        c.core.require_idle("configure post-receive tasks")?;
        if task_completion_cb.is_none() || task_error_cb.is_none() {
            bail!(
                InvalidValue,
                "both the completion and the error callback are required"
            );
        }
        if num_post_recv_tasks == 0 || num_post_recv_tasks as usize > CPU_MAX_NUM_TASKS {
            bail!(
                InvalidValue,
                "num_post_recv_tasks {num_post_recv_tasks} is outside 1..={CPU_MAX_NUM_TASKS} \
                 (doca_comch_consumer_cap_get_max_num_tasks)"
            );
        }
        c.conf.set(Some(RecvConf {
            on_success: task_completion_cb,
            on_error: task_error_cb,
            num_tasks: num_post_recv_tasks,
        }));
        Ok(())
    })
}

/// `doca_comch_consumer_task_post_recv_alloc_init`: no buffer on a MsgQ (`buf` NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_task_post_recv_alloc_init(
    consumer: *mut doca_comch_consumer,
    buf: *mut doca_buf,
    task: *mut *mut doca_comch_consumer_task_post_recv,
) -> doca_error_t {
    call("doca_comch_consumer_task_post_recv_alloc_init", || {
        let c = self::consumer(consumer, "consumer")?;
        super::non_null(task, "task")?;
        if !buf.is_null() {
            if c.link.is_none() {
                bail!(
                    NotSupported,
                    "MsgQ consumers receive immediate data only: pass buf = NULL (buffers are \
                     for consumers on a Comch connection)"
                );
            }
            super::buf::buf(buf)?;
        }
        let handle = c.tasks.alloc(c.core.state(), |t| {
            t.imm_len.set(0);
            t.producer_id.set(0);
            t.buf.set(buf.cast());
            t.core.handle.get()
        })?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(task, "task", handle.cast()) }
    })
}

/// `doca_comch_consumer_task_post_recv_as_task`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_task_post_recv_as_task(
    task: *mut doca_comch_consumer_task_post_recv,
) -> *mut doca_task {
    call_value(
        "doca_comch_consumer_task_post_recv_as_task",
        std::ptr::null_mut(),
        || {
            recv_task(task, "task")?;
            Ok(task.cast())
        },
    )
}

/// `doca_comch_consumer_task_post_recv_get_buf`: the task's buffer (NULL on a MsgQ).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_task_post_recv_get_buf(
    task: *const doca_comch_consumer_task_post_recv,
) -> *mut doca_buf {
    call_value(
        "doca_comch_consumer_task_post_recv_get_buf",
        std::ptr::null_mut(),
        || Ok(recv_task(task, "task")?.buf.get().cast()),
    )
}

/// `doca_comch_consumer_task_post_recv_get_imm_data`: valid until the task is resubmitted or
/// freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_task_post_recv_get_imm_data(
    task: *const doca_comch_consumer_task_post_recv,
) -> *const u8 {
    call_value(
        "doca_comch_consumer_task_post_recv_get_imm_data",
        std::ptr::null(),
        || {
            Ok(recv_task(task, "task")?
                .imm
                .as_ptr()
                .cast::<u8>()
                .cast_const())
        },
    )
}

/// `doca_comch_consumer_task_post_recv_get_imm_data_len`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_task_post_recv_get_imm_data_len(
    task: *const doca_comch_consumer_task_post_recv,
) -> u32 {
    call_value(
        "doca_comch_consumer_task_post_recv_get_imm_data_len",
        0,
        || Ok(recv_task(task, "task")?.imm_len.get()),
    )
}

/// `doca_comch_consumer_task_post_recv_get_producer_id`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_task_post_recv_get_producer_id(
    task: *const doca_comch_consumer_task_post_recv,
) -> u32 {
    call_value(
        "doca_comch_consumer_task_post_recv_get_producer_id",
        0,
        || Ok(recv_task(task, "task")?.producer_id.get()),
    )
}

/// `doca_comch_consumer_set_dev_max_num_recv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_set_dev_max_num_recv(
    consumer: *mut doca_comch_consumer,
    dev_num_recv: u32,
) -> doca_error_t {
    call("doca_comch_consumer_set_dev_max_num_recv", || {
        let c = self::consumer(consumer, "consumer")?;
        c.core.require_idle("set the number of DPA receives")?;
        if dev_num_recv == 0 || dev_num_recv as usize > CONSUMER_MAX_NUM_RECV {
            bail!(
                InvalidValue,
                "dev_num_recv {dev_num_recv} is outside 1..={CONSUMER_MAX_NUM_RECV}"
            );
        }
        c.dev_max_num_recv.set(dev_num_recv);
        Ok(())
    })
}

/// `doca_comch_consumer_set_completion`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_set_completion(
    consumer: *mut doca_comch_consumer,
    consumer_comp: *mut doca_comch_consumer_completion,
    user_data: u32,
) -> doca_error_t {
    call("doca_comch_consumer_set_completion", || {
        let c = self::consumer(consumer, "consumer")?;
        let comp = registry::get::<ConsumerCompletionObj>(consumer_comp.cast(), "consumer_comp")?;
        c.core.require_idle("set the consumer completion")?;
        if let Some((old, _)) = c.completion.get() {
            if let Ok(old) = registry::get::<ConsumerCompletionObj>(old, "old") {
                old.users.release();
            }
        }
        comp.users.hold();
        c.completion.set(Some((consumer_comp.cast(), user_data)));
        Ok(())
    })
}

/// `doca_comch_consumer_get_dpa_handle`: for a started consumer whose datapath is on the DPA.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_get_dpa_handle(
    consumer: *mut doca_comch_consumer,
    dpa_consumer: *mut doca_dpa_dev_comch_consumer_t,
) -> doca_error_t {
    call("doca_comch_consumer_get_dpa_handle", || {
        let c = self::consumer(consumer, "consumer")?;
        let handle = match c.running.borrow().as_ref() {
            Some(Running::Dpa(model)) => model.dpa_handle().raw(),
            Some(Running::Cpu(_) | Running::Fast(_)) => bail!(
                NotSupported,
                "the consumer runs on the CPU: only DPA consumers have a DPA handle"
            ),
            None => bail!(BadState, "start the consumer first"),
        };
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(dpa_consumer, "dpa_consumer", handle) }
    })
}

/// `doca_comch_consumer_create`: a consumer on a Comch connection receiving into `buf_mmap`
/// (started, with PCI read-write access).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_create(
    comch_connection: *mut doca_comch_connection,
    buf_mmap: *mut doca_mmap,
    consumer: *mut *mut doca_comch_consumer,
) -> doca_error_t {
    call("doca_comch_consumer_create", || {
        let conn = super::connection::connection(comch_connection, "comch_connection")?;
        super::mmap::mmap(buf_mmap, "buf_mmap")?;
        super::non_null(consumer, "consumer")?;
        if conn.state.get() != super::connection::ConnState::Connected {
            bail!(NotConnected, "the connection is closed");
        }
        let shared = conn.shared.clone();
        let id = shared.consumer_id();
        let link = Link {
            shared: shared.clone(),
            mmap: buf_mmap.cast(),
        };
        let handle = ConsumerObj::register(std::ptr::null_mut(), Some(link), id)?;
        shared
            .users
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(consumer, "consumer", handle.cast()) }
    })
}
