//! A sync event as a DOCA context: its task configuration (`doca_sync_event_task_*_set_conf`),
//! start and stop through `doca_ctx_*`, and the progress passes that run its tasks. What a task
//! does is the model's ([`crate::sync_event::tasks`]); this is the C seam: pools, callbacks, the
//! program's pointers.

use super::super::context::{Context, CtxCore};
use super::super::pe::{self, PeObj};
use super::super::task::{TaskNames, Tasks};
use super::super::types::*;
use super::super::{call, dev};
use super::config::take_ctx_route;
use super::tasks::SyncEventTask;
use super::{SyncEventObj, event};
use crate::ctx::CtxState;
use crate::error::{Result, bail};
use crate::limits::{SYNC_EVENT_MAX_TASKS, SYNC_EVENT_WAIT_RECHECK_US};
use crate::retry_timer::RetryTimer;
use crate::sync_event::SyncEventValue;
use crate::sync_event::tasks::{Submitted, TaskKind};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Duration;

/// A task: its kind and index in that kind's pool.
pub(super) type TaskId = (TaskKind, u32);

/// The completion and error callbacks of one task kind, with their C types.
#[derive(Clone, Copy)]
enum Callbacks {
    Get(
        doca_sync_event_task_get_completion_cb_t,
        doca_sync_event_task_get_completion_cb_t,
    ),
    NotifySet(
        doca_sync_event_task_notify_set_completion_cb_t,
        doca_sync_event_task_notify_set_completion_cb_t,
    ),
    NotifyAdd(
        doca_sync_event_task_notify_add_completion_cb_t,
        doca_sync_event_task_notify_add_completion_cb_t,
    ),
    WaitEq(
        doca_sync_event_task_wait_eq_completion_cb_t,
        doca_sync_event_task_wait_eq_completion_cb_t,
    ),
    WaitNeq(
        doca_sync_event_task_wait_neq_completion_cb_t,
        doca_sync_event_task_wait_neq_completion_cb_t,
    ),
}

impl Callbacks {
    /// Both callbacks given.
    fn complete(self) -> bool {
        match self {
            Callbacks::Get(a, b) => a.is_some() && b.is_some(),
            Callbacks::NotifySet(a, b) => a.is_some() && b.is_some(),
            Callbacks::NotifyAdd(a, b) => a.is_some() && b.is_some(),
            Callbacks::WaitEq(a, b) => a.is_some() && b.is_some(),
            Callbacks::WaitNeq(a, b) => a.is_some() && b.is_some(),
        }
    }

    /// Runs the completion (`ok`) or error callback of `task`.
    ///
    /// # Safety
    /// `task` is a live task of this callbacks' kind; the callbacks are the program's, with
    /// DOCA's signature.
    unsafe fn run(self, ok: bool, task: *mut c_void, data: doca_data, ctx_data: doca_data) {
        macro_rules! pick {
            ($s:expr, $e:expr) => {
                if let Some(cb) = if ok { $s } else { $e } {
                    // SAFETY: the program's callback with the declared signature; the task is
                    // live (this function's contract).
                    unsafe { cb(task.cast(), data, ctx_data) }
                }
            };
        }
        match self {
            Callbacks::Get(s, e) => pick!(s, e),
            Callbacks::NotifySet(s, e) => pick!(s, e),
            Callbacks::NotifyAdd(s, e) => pick!(s, e),
            Callbacks::WaitEq(s, e) => pick!(s, e),
            Callbacks::WaitNeq(s, e) => pick!(s, e),
        }
    }
}

/// One task kind's configuration (`*_set_conf`).
#[derive(Clone, Copy)]
struct Conf {
    callbacks: Callbacks,
    num_tasks: u32,
}

/// The task interface of a sync event: its context, its task pools (one per kind), the tasks
/// submitted and those done whose callbacks run at the next progress. It belongs to the thread
/// of the event's progress engine.
pub(crate) struct TaskCtx {
    pub core: CtxCore,
    confs: [Cell<Option<Conf>>; 5],
    pub(super) pools: [Tasks<SyncEventTask>; 5],
    submitted: RefCell<Submitted<TaskId>>,
    /// Tasks that ran, with their result, whose callbacks run at the next progress.
    done: RefCell<VecDeque<(TaskId, u64)>>,
    /// Tasks a stop took back, whose error callbacks run at the next progress.
    flushed: RefCell<VecDeque<TaskId>>,
    /// The counter, while the context runs (the model's; read without the event's lock).
    counter: RefCell<Option<Arc<SyncEventValue>>>,
    /// While wait tasks are submitted: a timer that wakes a sleeping PE to look again.
    timer: RetryTimer,
}

impl TaskCtx {
    pub(super) fn new() -> Self {
        Self {
            core: CtxCore::new(),
            confs: Default::default(),
            pools: TaskKind::ALL.map(|kind| {
                Tasks::new(TaskNames {
                    ctx: "sync event",
                    tasks: kind.name(),
                })
            }),
            submitted: RefCell::new(Submitted::with_capacity(0)),
            done: RefCell::new(VecDeque::new()),
            flushed: RefCell::new(VecDeque::new()),
            counter: RefCell::new(None),
            timer: RetryTimer::new(Duration::from_micros(SYNC_EVENT_WAIT_RECHECK_US)),
        }
    }

    fn pe<'a>(&self) -> Option<&'a PeObj> {
        pe::of(&self.core)
    }

    /// The event is destroyed: it leaves its PE.
    pub(super) fn leave_pe(&self) {
        if let Some(pe) = self.pe() {
            pe.disconnect(self.core.handle.get());
        }
    }

    /// The event is destroyed: its tasks' handles are invalid from now on.
    pub(super) fn release(&self) {
        for pool in &self.pools {
            pool.release();
        }
    }

    /// Whether `kind` has a pool (configured before the start).
    pub(super) fn configured(&self, kind: TaskKind) -> Result<()> {
        if self.confs[kind.index()].get().is_none() {
            bail!(
                BadState,
                "the event has no {0} tasks: configure them before doca_ctx_start \
                 (doca_sync_event_task_{0}_set_conf)",
                kind.name()
            );
        }
        Ok(())
    }

    /// A task was submitted (the model's queue; it runs at the next progress).
    pub(super) fn submitted(&self, id: TaskId, op: crate::sync_event::tasks::TaskOp) {
        let mut submitted = self.submitted.borrow_mut();
        submitted.push(id, op);
        let waits = submitted.waits() > 0;
        drop(submitted);
        if waits && !self.timer.is_on() {
            // A program may sleep on its PE right after submitting: the timer is there already.
            self.recheck_timer(true);
        }
    }

    fn outstanding(&self) -> usize {
        self.pools.iter().map(Tasks::outstanding).sum()
    }

    /// Starts (`true`) or ends the timer that wakes a sleeping PE while waits are submitted.
    fn recheck_timer(&self, on: bool) {
        if self.pe().is_none() {
            return;
        }
        if on {
            // Without a timer the waits are looked at when the PE progresses anyway.
            let _ = self.timer.on(|fd| pe::watch(&self.core, fd));
        } else {
            self.timer.off(|fd| pe::unwatch(&self.core, fd));
        }
    }
}

impl SyncEventObj {
    /// Task `id` finished: with its result (`Ok`), or with the error status `Err`. Its result
    /// lands where the program asked, then its callback runs.
    fn complete(&self, (kind, index): TaskId, outcome: Result<u64, doca_error_t>) {
        let Some(conf) = self.tc.confs[kind.index()].get() else {
            return;
        };
        let status = outcome.err().unwrap_or(0);
        let finished = self.tc.pools[kind.index()].complete(index, status, |task| {
            if let Ok(result) = outcome {
                task.deliver(result);
            }
        });
        let Some((handle, data)) = finished else {
            return;
        };
        debug_assert!(super::super::registry::in_callback_frame());
        // SAFETY: the task is live and of this kind; the callbacks are the program's.
        unsafe {
            conf.callbacks
                .run(status == 0, handle, data, self.tc.core.user_data.get())
        };
    }

    /// The last step of a stop: nothing outstanding, so the context is IDLE (and its counter
    /// gone, unless imported).
    fn finish_stop(&self) {
        self.tc.recheck_timer(false);
        if let Some(pe) = self.tc.pe() {
            pe.polling(false);
        }
        *self.tc.counter.borrow_mut() = None;
        SyncEventObj::stop_counter(&mut self.lock());
        self.tc.core.transition(CtxState::Idle);
    }
}

impl Context for SyncEventObj {
    fn core(&self) -> &CtxCore {
        &self.tc.core
    }

    fn start(&self) -> Result<bool> {
        take_ctx_route(self, "doca_ctx_start")?;
        let pe = pe::connected(&self.tc.core, "sync event")?;
        let me: *const SyncEventObj = self;
        let mut capacity = 0;
        for kind in TaskKind::ALL {
            if let Some(conf) = self.tc.confs[kind.index()].get() {
                self.tc.pools[kind.index()]
                    .ensure(conf.num_tasks, |index| SyncEventTask::new(index, me, kind))?;
                capacity += conf.num_tasks as usize;
            }
        }
        let counter = {
            let mut inner = self.lock();
            if !inner.imported() {
                SyncEventObj::start_counter(&mut inner)?;
            }
            inner.value.clone()
        };
        *self.tc.counter.borrow_mut() = counter;
        *self.tc.submitted.borrow_mut() = Submitted::with_capacity(capacity);
        let mut done = self.tc.done.borrow_mut();
        done.clear();
        done.reserve(capacity);
        let mut flushed = self.tc.flushed.borrow_mut();
        flushed.clear();
        flushed.reserve(capacity);
        drop((done, flushed));
        pe.polling(true);
        self.tc.core.transition(CtxState::Running);
        Ok(true)
    }

    fn stop(&self) -> Result<bool> {
        {
            let mut submitted = self.tc.submitted.borrow_mut();
            self.tc.flushed.borrow_mut().extend(submitted.drain());
        }
        self.tc.recheck_timer(false);
        if self.tc.outstanding() == 0 {
            self.finish_stop();
            return Ok(true);
        }
        self.tc.core.transition(CtxState::Stopping);
        Ok(false)
    }

    fn inflight(&self) -> usize {
        self.tc.pools.iter().map(Tasks::inflight).sum()
    }

    fn poll(&self) -> usize {
        let tc = &self.tc;
        if tc.core.state() == CtxState::Running {
            if let Some(counter) = tc.counter.borrow().as_ref() {
                tc.submitted
                    .borrow_mut()
                    .pass(counter, &mut tc.done.borrow_mut());
            }
        }
        // Only what is there now: a task a callback submits runs at the next pass.
        let ready = tc.done.borrow().len();
        for _ in 0..ready {
            let Some((id, result)) = tc.done.borrow_mut().pop_front() else {
                break;
            };
            self.complete(id, Ok(result));
        }
        let flushed = tc.flushed.borrow().len();
        let status = crate::comch::FLUSHED.raw() as doca_error_t;
        for _ in 0..flushed {
            let Some(id) = tc.flushed.borrow_mut().pop_front() else {
                break;
            };
            self.complete(id, Err(status));
        }
        let waiting = tc.core.state() == CtxState::Running && tc.submitted.borrow().waits() > 0;
        tc.recheck_timer(waiting);
        ready + flushed
    }

    fn has_pending(&self) -> bool {
        let tc = &self.tc;
        if !tc.done.borrow().is_empty() || !tc.flushed.borrow().is_empty() {
            return true;
        }
        tc.core.state() == CtxState::Running
            && tc
                .counter
                .borrow()
                .as_ref()
                .is_some_and(|c| tc.submitted.borrow().any_ready(c))
    }

    fn after_progress(&self) -> usize {
        let mut n = 0;
        for kind in TaskKind::ALL {
            n += self.tc.pools[kind.index()].after_progress(
                &self.tc.core,
                |index, status| self.complete((kind, index), Err(status)),
                || {},
            );
        }
        let idle = self.tc.outstanding() == 0
            && self.tc.done.borrow().is_empty()
            && self.tc.flushed.borrow().is_empty();
        if self.tc.core.state() == CtxState::Stopping && idle {
            self.finish_stop();
        }
        n
    }
}

/// `*_set_conf` of task kind `kind`: the context must be IDLE (`NOT_PERMITTED` otherwise, as
/// DOCA answers), and the event not started stand-alone.
fn set_conf(
    event: *mut doca_sync_event,
    kind: TaskKind,
    callbacks: Callbacks,
    num_tasks: u32,
) -> Result<()> {
    let e = self::event(event)?;
    if e.tc.core.state() != CtxState::Idle {
        bail!(
            NotPermitted,
            "the sync event's context is {}: configure {} tasks while it is IDLE",
            e.tc.core.state(),
            kind.name()
        );
    }
    if !callbacks.complete() {
        bail!(
            InvalidValue,
            "a {} task needs both a completion and an error callback",
            kind.name()
        );
    }
    if num_tasks == 0 || num_tasks as usize > SYNC_EVENT_MAX_TASKS {
        bail!(
            InvalidValue,
            "num_tasks {num_tasks} is outside 1..={SYNC_EVENT_MAX_TASKS} (SYNC_EVENT_MAX_TASKS)"
        );
    }
    take_ctx_route(e, &format!("doca_sync_event_task_{}_set_conf", kind.name()))?;
    e.tc.confs[kind.index()].set(Some(Conf {
        callbacks,
        num_tasks,
    }));
    Ok(())
}

macro_rules! set_confs {
    ($($name:ident($cb:ty) => $kind:ident;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            event: *mut doca_sync_event,
            completion_cb: $cb,
            error_cb: $cb,
            num_tasks: u32,
        ) -> doca_error_t {
            call(stringify!($name), || {
                set_conf(
                    event,
                    TaskKind::$kind,
                    Callbacks::$kind(completion_cb, error_cb),
                    num_tasks,
                )
            })
        }
    )*};
}

set_confs! {
    doca_sync_event_task_get_set_conf(doca_sync_event_task_get_completion_cb_t) => Get;
    doca_sync_event_task_notify_set_set_conf(doca_sync_event_task_notify_set_completion_cb_t)
        => NotifySet;
    doca_sync_event_task_notify_add_set_conf(doca_sync_event_task_notify_add_completion_cb_t)
        => NotifyAdd;
    doca_sync_event_task_wait_eq_set_conf(doca_sync_event_task_wait_eq_completion_cb_t)
        => WaitEq;
    doca_sync_event_task_wait_neq_set_conf(doca_sync_event_task_wait_neq_completion_cb_t)
        => WaitNeq;
}

macro_rules! caps {
    ($($name:ident;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: every device.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(devinfo: *const doca_devinfo) -> doca_error_t {
            call(stringify!($name), || dev::devinfo(devinfo, "devinfo").map(|_| ()))
        }
    )*};
}

caps! {
    doca_sync_event_cap_task_get_is_supported;
    doca_sync_event_cap_task_notify_set_is_supported;
    doca_sync_event_cap_task_notify_add_is_supported;
    doca_sync_event_cap_task_wait_eq_is_supported;
    doca_sync_event_cap_task_wait_neq_is_supported;
}
