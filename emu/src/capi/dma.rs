//! `doca_dma.h`: DMA contexts and their memcpy tasks, over the model's DMA engine
//! ([`crate::dma`], which owns the copies, their rules and their order).
//!
//! A `struct doca_dma` is a context: created on a device, configured (`task_memcpy_set_conf`),
//! connected to a PE and started; its memcpy tasks come from the pool the configuration sized.
//! A task holds its source and destination `struct doca_buf *` (set at `alloc_init` or with
//! `set_src`/`set_dst`); `doca_task_submit` hands both buffers to the engine, which checks them
//! then and there (the submit fails with the rule's code, and the task stays the program's), and
//! `doca_pe_progress` copies and runs the completion or error callback.

use super::context::{Context, CtxCore};
use super::registry::{self, Kind, Object};
use super::task::{Task, TaskCore, TaskNames, Tasks};
use super::types::*;
use super::{buf, call, call_value, dev, out, pe};
use crate::ctx::CtxState;
use crate::dma::{self as model, Dma, MemcpyCompletion};
use crate::error::{Result, bail};
use std::cell::{Cell, RefCell};
use std::ffi::c_void;

/// Memcpy task configuration (`doca_dma_task_memcpy_set_conf`).
#[derive(Clone, Copy)]
struct MemcpyConf {
    on_success: doca_dma_task_memcpy_completion_cb_t,
    on_error: doca_dma_task_memcpy_completion_cb_t,
    num_tasks: u32,
}

/// A `struct doca_dma`.
pub(crate) struct DmaObj {
    core: CtxCore,
    /// The device's handle (held: it cannot close while the context exists).
    dev: *mut c_void,
    conf: Cell<Option<MemcpyConf>>,
    /// The engine while the context runs.
    running: RefCell<Option<Dma>>,
    tasks: Tasks<MemcpyTask>,
}

impl Object for DmaObj {
    const KIND: Kind = Kind::Dma;
}

/// A `struct doca_dma_task_memcpy`. `#[repr(C)]`, core first: see [`Task`].
#[repr(C)]
pub(crate) struct MemcpyTask {
    core: TaskCore,
    dma: *const DmaObj,
    /// The task's `struct doca_buf *`s (null: none yet).
    src: Cell<*const c_void>,
    dst: Cell<*mut c_void>,
}

impl Object for MemcpyTask {
    const KIND: Kind = Kind::DmaMemcpyTask;
}

crate::capi::task::task_core_first!(MemcpyTask);

// SAFETY: `#[repr(C)]` with `core` first, checked above.
unsafe impl Task for MemcpyTask {
    fn core(&self) -> &TaskCore {
        &self.core
    }
    fn submit_task(&self) -> Result<()> {
        self.dma().submit(self)
    }
    fn free_task(&self) -> Result<()> {
        self.dma().tasks.free(self)
    }
}

impl MemcpyTask {
    fn dma(&self) -> &DmaObj {
        // SAFETY: a task lives in its context's pool, which the context destroys (with the task)
        // before it is freed itself.
        unsafe { &*self.dma }
    }
}

fn dma<'a>(ptr: *const doca_dma) -> Result<&'a DmaObj> {
    registry::get::<DmaObj>(ptr.cast(), "dma")
}

fn task<'a>(ptr: *const doca_dma_task_memcpy) -> Result<&'a MemcpyTask> {
    registry::get::<MemcpyTask>(ptr.cast(), "task")
}

/// `INVALID_VALUE` unless `ptr` is NULL or a live buffer.
fn optional_buf(ptr: *const c_void, param: &str) -> Result<()> {
    if !ptr.is_null() {
        registry::get::<buf::BufObj>(ptr, param)?;
    }
    Ok(())
}

impl DmaObj {
    fn start_engine(&self) -> Result<()> {
        if !self.core.dpa.get().is_null() {
            bail!(
                NotSupported,
                "a DMA context's tasks run on the CPU: do not move its datapath to the DPA"
            );
        }
        let Some(conf) = self.conf.get() else {
            bail!(
                BadState,
                "configure memcpy tasks first (doca_dma_task_memcpy_set_conf)"
            );
        };
        let pe = pe::connected(&self.core, "DMA context")?;
        let dev = dev::dev(self.dev.cast(), "the DMA context's device")?;
        let me: *const DmaObj = self;
        let engine = Dma::builder(&dev.dev, &pe.pe)
            .num_tasks(conf.num_tasks)
            .on_complete(move |c: MemcpyCompletion| {
                // SAFETY: the context outlives its engine, which it drops before it is destroyed
                // (destroy needs IDLE, and IDLE drops the engine).
                unsafe { &*me }.completed(c.user_data as u32, c.status.raw() as doca_error_t)
            })
            .start()?;
        self.tasks.ensure(conf.num_tasks, |index| MemcpyTask {
            core: TaskCore::new(index),
            dma: me,
            src: Cell::new(std::ptr::null()),
            dst: Cell::new(std::ptr::null_mut()),
        })?;
        *self.running.borrow_mut() = Some(engine);
        Ok(())
    }

    fn submit(&self, task: &MemcpyTask) -> Result<()> {
        self.tasks.submit(self.core.state(), task, || {
            let (src, dst) = (task.src.get(), task.dst.get());
            if src.is_null() {
                return Err(model::missing_buffer(
                    "source",
                    "doca_dma_task_memcpy_set_src",
                ));
            }
            if dst.is_null() {
                return Err(model::missing_buffer(
                    "destination",
                    "doca_dma_task_memcpy_set_dst",
                ));
            }
            let src = registry::get::<buf::BufObj>(src, "the task's source buffer")?;
            let dst = registry::get::<buf::BufObj>(dst, "the task's destination buffer")?;
            let running = self.running.borrow();
            let Some(engine) = running.as_ref() else {
                bail!(BadState, "the DMA context is not running");
            };
            engine.memcpy(&src.buf, &dst.buf, u64::from(task.core.index))
        })
    }

    /// Task `index` finished with `status`: its callback runs.
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
            debug_assert!(registry::in_callback_frame());
            // SAFETY: the program's callback with the declared signature; the task is live.
            unsafe { cb(handle.cast(), task_data, self.core.user_data.get()) };
        }
    }

    /// The last step of a stop: nothing outstanding, so the engine goes and the context is IDLE.
    fn finish_stop(&self) {
        let engine = self.running.borrow_mut().take();
        drop(engine);
        self.core.transition(CtxState::Idle);
    }
}

impl Context for DmaObj {
    fn core(&self) -> &CtxCore {
        &self.core
    }

    /// DOCA's DMA context starts at once: IDLE → RUNNING, no STARTING step.
    fn start(&self) -> Result<bool> {
        self.start_engine()?;
        self.core.transition(CtxState::Running);
        Ok(true)
    }

    fn stop(&self) -> Result<bool> {
        if let Some(engine) = self.running.borrow().as_ref() {
            engine.flush();
        }
        Ok(self.tasks.stop(&self.core, || self.finish_stop()))
    }

    fn inflight(&self) -> usize {
        self.tasks.inflight()
    }

    /// Tasks submitted while the context stops, flushed at the next progress (the engine's own
    /// work signals the PE by itself).
    fn has_pending(&self) -> bool {
        self.tasks.has_flushed()
    }

    fn after_progress(&self) -> usize {
        self.tasks.after_progress(
            &self.core,
            |index, status| self.completed(index, status),
            || self.finish_stop(),
        )
    }
}

/// `doca_dma_create`: a DMA context on `dev` (held: the device cannot close meanwhile).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dma_create(
    dev: *mut doca_dev,
    dma: *mut *mut doca_dma,
) -> doca_error_t {
    call("doca_dma_create", || {
        let d = dev::dev(dev, "dev")?;
        super::non_null(dma, "dma")?;
        model::cap_task_memcpy_is_supported(d.dev.as_devinfo())?;
        super::context::register_view::<DmaObj>(Kind::Dma);
        let handle = registry::register(Box::new(DmaObj {
            core: CtxCore::new(),
            dev: dev.cast(),
            conf: Cell::new(None),
            running: RefCell::new(None),
            tasks: Tasks::new(TaskNames {
                ctx: "DMA context",
                tasks: "memcpy",
            }),
        }))?;
        registry::get::<DmaObj>(handle, "dma")?
            .core
            .handle
            .set(handle);
        d.users.hold();
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(dma, "dma", handle.cast()) }
    })
}

/// `doca_dma_destroy`: `IN_USE` unless the context is IDLE.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dma_destroy(dma: *mut doca_dma) -> doca_error_t {
    call("doca_dma_destroy", || {
        let d = self::dma(dma)?;
        let state = d.core.state();
        if state != CtxState::Idle {
            bail!(
                InUse,
                "the DMA context is {state}: stop it (doca_ctx_stop) and progress its PE until it \
                 is IDLE before doca_dma_destroy"
            );
        }
        if let Some(pe) = pe::of(&d.core) {
            pe.disconnect(d.core.handle.get());
        }
        if let Ok(dev) = dev::dev(d.dev.cast(), "dev") {
            dev.users.release();
        }
        d.tasks.release();
        registry::retire::<DmaObj>(dma.cast());
        Ok(())
    })
}

/// `doca_dma_as_ctx`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dma_as_ctx(dma: *mut doca_dma) -> *mut doca_ctx {
    call_value("doca_dma_as_ctx", std::ptr::null_mut(), || {
        self::dma(dma)?;
        Ok(dma.cast())
    })
}

/// `doca_dma_cap_task_memcpy_is_supported`: every device of the soft device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dma_cap_task_memcpy_is_supported(
    devinfo: *const doca_devinfo,
) -> doca_error_t {
    call("doca_dma_cap_task_memcpy_is_supported", || {
        model::cap_task_memcpy_is_supported(dev::devinfo(devinfo, "devinfo")?)
    })
}

/// `doca_dma_cap_task_memcpy_get_max_buf_size`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dma_cap_task_memcpy_get_max_buf_size(
    devinfo: *const doca_devinfo,
    buf_size: *mut u64,
) -> doca_error_t {
    call("doca_dma_cap_task_memcpy_get_max_buf_size", || {
        let n = model::cap_task_memcpy_get_max_buf_size(dev::devinfo(devinfo, "devinfo")?)?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(buf_size, "buf_size", n) }
    })
}

/// `doca_dma_cap_task_memcpy_get_max_buf_list_len`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dma_cap_task_memcpy_get_max_buf_list_len(
    devinfo: *const doca_devinfo,
    max_buf_list_len: *mut u32,
) -> doca_error_t {
    call("doca_dma_cap_task_memcpy_get_max_buf_list_len", || {
        let n = model::cap_task_memcpy_get_max_buf_list_len(dev::devinfo(devinfo, "devinfo")?)?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(max_buf_list_len, "max_buf_list_len", n) }
    })
}

/// `doca_dma_cap_get_max_num_tasks`: of a context, not a devinfo.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dma_cap_get_max_num_tasks(
    dma: *mut doca_dma,
    max_num_tasks: *mut u32,
) -> doca_error_t {
    call("doca_dma_cap_get_max_num_tasks", || {
        self::dma(dma)?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe {
            out(
                max_num_tasks,
                "max_num_tasks",
                crate::limits::DMA_MAX_NUM_TASKS,
            )
        }
    })
}

/// `doca_dma_task_memcpy_set_conf`: before start (`BAD_STATE` after), both callbacks, a pool of
/// 1..=`DMA_MAX_NUM_TASKS` tasks.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dma_task_memcpy_set_conf(
    dma: *mut doca_dma,
    task_completion_cb: doca_dma_task_memcpy_completion_cb_t,
    task_error_cb: doca_dma_task_memcpy_completion_cb_t,
    num_memcpy_tasks: u32,
) -> doca_error_t {
    call("doca_dma_task_memcpy_set_conf", || {
        let d = self::dma(dma)?;
        d.core.require_idle("configure memcpy tasks")?;
        if task_completion_cb.is_none() || task_error_cb.is_none() {
            bail!(
                InvalidValue,
                "both the completion and the error callback are required"
            );
        }
        model::check_num_tasks(num_memcpy_tasks)?;
        d.conf.set(Some(MemcpyConf {
            on_success: task_completion_cb,
            on_error: task_error_cb,
            num_tasks: num_memcpy_tasks,
        }));
        Ok(())
    })
}

/// `doca_dma_task_memcpy_alloc_init`: `NO_MEMORY` when every task of the pool is out. The
/// buffers are checked as handles here (NULL is allowed: set them before submitting) and by the
/// engine's rules at submit.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dma_task_memcpy_alloc_init(
    dma: *mut doca_dma,
    src: *const doca_buf,
    dst: *mut doca_buf,
    user_data: doca_data,
    task: *mut *mut doca_dma_task_memcpy,
) -> doca_error_t {
    call("doca_dma_task_memcpy_alloc_init", || {
        let d = self::dma(dma)?;
        super::non_null(task, "task")?;
        optional_buf(src.cast(), "src")?;
        optional_buf(dst.cast(), "dst")?;
        let handle = d.tasks.alloc(d.core.state(), |t| {
            t.src.set(src.cast());
            t.dst.set(dst.cast());
            t.core.user_data.set(user_data);
            t.core.handle.get()
        })?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(task, "task", handle.cast()) }
    })
}

/// `doca_dma_task_memcpy_as_task`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dma_task_memcpy_as_task(
    task: *mut doca_dma_task_memcpy,
) -> *mut doca_task {
    call_value("doca_dma_task_memcpy_as_task", std::ptr::null_mut(), || {
        self::task(task)?;
        Ok(task.cast())
    })
}

/// Sets a buffer of a task the program owns (not while it is submitted).
fn set_buf(
    task: *mut doca_dma_task_memcpy,
    buf: *const c_void,
    param: &str,
) -> Result<&MemcpyTask> {
    let t = self::task(task)?;
    optional_buf(buf, param)?;
    t.core.require_owned(&format!("set the task's {param}"))?;
    Ok(t)
}

/// `doca_dma_task_memcpy_set_src` (refused, with the reason kept, while the task is submitted).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dma_task_memcpy_set_src(
    task: *mut doca_dma_task_memcpy,
    src: *const doca_buf,
) {
    call_value("doca_dma_task_memcpy_set_src", (), || {
        set_buf(task, src.cast(), "src")?.src.set(src.cast());
        Ok(())
    })
}

/// `doca_dma_task_memcpy_get_src`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dma_task_memcpy_get_src(
    task: *const doca_dma_task_memcpy,
) -> *const doca_buf {
    call_value("doca_dma_task_memcpy_get_src", std::ptr::null(), || {
        Ok(self::task(task)?.src.get().cast())
    })
}

/// `doca_dma_task_memcpy_set_dst` (refused, with the reason kept, while the task is submitted).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dma_task_memcpy_set_dst(
    task: *mut doca_dma_task_memcpy,
    dst: *mut doca_buf,
) {
    call_value("doca_dma_task_memcpy_set_dst", (), || {
        set_buf(task, dst.cast(), "dst")?.dst.set(dst.cast());
        Ok(())
    })
}

/// `doca_dma_task_memcpy_get_dst`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dma_task_memcpy_get_dst(
    task: *const doca_dma_task_memcpy,
) -> *mut doca_buf {
    call_value("doca_dma_task_memcpy_get_dst", std::ptr::null_mut(), || {
        Ok(self::task(task)?.dst.get().cast())
    })
}
