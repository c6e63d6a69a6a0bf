//! A sync event as a DOCA context (`doca_sync_event_as_ctx`): tasks that read, set, add to and
//! wait on the counter, completed by a progress engine.

use super::{SyncEvent, SyncEventBuilder, export, import};
use crate::UserData;
use crate::ctx::{self, CtxState, StateChangedCb};
use crate::dev::Dev;
use crate::dpa::Dpa;
use crate::error::{Result, bail, doca};
use crate::pe::Pe;
use crate::pulled::Pulled;
use dpakit_abi::ErrorCode;
use dpakit_sys as sys;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::mem::ManuallyDrop;

/// The task kinds of a sync event context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskKind {
    /// `doca_sync_event_task_get`: reads the counter.
    #[doc(alias = "doca_sync_event_task_get")]
    Get,
    /// `doca_sync_event_task_notify_set`: sets it.
    #[doc(alias = "doca_sync_event_task_notify_set")]
    NotifySet,
    /// `doca_sync_event_task_notify_add`: adds to it atomically.
    #[doc(alias = "doca_sync_event_task_notify_add")]
    NotifyAdd,
    /// `doca_sync_event_task_wait_eq`: completes once `(counter & mask) == value`.
    #[doc(alias = "doca_sync_event_task_wait_eq")]
    WaitEq,
    /// `doca_sync_event_task_wait_neq`: completes once `(counter & mask) != value`.
    #[doc(alias = "doca_sync_event_task_wait_neq")]
    WaitNeq,
}

impl TaskKind {
    const ALL: [TaskKind; 5] = [
        TaskKind::Get,
        TaskKind::NotifySet,
        TaskKind::NotifyAdd,
        TaskKind::WaitEq,
        TaskKind::WaitNeq,
    ];
}

/// A finished task, as the completion callback sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskCompletion {
    /// What the task was.
    pub kind: TaskKind,
    /// The user data given with it.
    pub user_data: UserData,
    /// `Success`, or the error of a task that failed (a stop completes the waits still
    /// submitted with an error).
    pub status: ErrorCode,
    /// A get's value, or a notify_add's value before the addition (when it succeeded).
    pub value: Option<u64>,
}

type CompleteCb = Box<dyn FnMut(TaskCompletion)>;

/// Where the event comes from.
enum Origin<'a> {
    Configured(SyncEventBuilder<'a>),
    Export(&'a Dev, &'a [u8]),
}

/// Configuration of a [`SyncEventContext`].
pub struct SyncEventContextBuilder<'a> {
    pe: &'a Pe,
    origin: Origin<'a>,
    num_tasks: [u32; 5],
    on_complete: Option<CompleteCb>,
    pull: bool,
    on_state_changed: Option<StateChangedCb>,
}

impl fmt::Debug for SyncEventContextBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncEventContextBuilder")
            .field("num_tasks", &self.num_tasks)
            .finish_non_exhaustive()
    }
}

/// What the callbacks reach through the context's user data. Boxed, so its address is stable.
struct Inner {
    raw: *mut sys::doca_sync_event,
    ctx: *mut sys::doca_ctx,
    pe: Pe,
    /// Where gets' values and notify_adds' previous values land, one per such task.
    slots: Box<[Cell<u64>]>,
    free_slots: RefCell<Vec<u32>>,
    on_complete: RefCell<Option<CompleteCb>>,
    /// With `pull_completions`: completions not taken yet, and the tasks of every kind together
    /// (a task is refused while the tasks in flight and these fill them).
    pulled: Option<(Pulled<TaskCompletion>, u32)>,
    on_state_changed: Option<StateChangedCb>,
    // What the event's locations name outlives it (dropped after the destroy).
    _devs: Vec<Dev>,
    _dpas: Vec<Dpa>,
}

/// `doca_sync_event` as a DOCA context: tasks on its counter, completed by [`Pe::progress`].
#[doc(alias = "doca_sync_event_as_ctx")]
pub struct SyncEventContext {
    /// Taken only by `Drop`, which hands it to the teardown.
    inner: ManuallyDrop<Box<Inner>>,
}

impl fmt::Debug for SyncEventContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncEventContext")
            .field("in_flight", &self.in_flight())
            .finish()
    }
}

/// Finishes a task of `kind` (either callback): its value, the task freed, the user's closure.
///
/// # Safety
/// `task` is a completed task of this kind of the context whose user data is `ctx_data`.
unsafe fn finish(
    kind: TaskKind,
    task: *mut sys::doca_task,
    slot: *mut u64,
    ctx_data: sys::doca_data,
    task_data: sys::doca_data,
) {
    // SAFETY: the context's user data is its boxed Inner, alive while the context runs.
    let inner = unsafe { &*ctx_data.ptr.cast::<Inner>() };
    // SAFETY: a completed task of ours.
    let raw = unsafe { sys::doca_task_get_status(task) };
    let status = ErrorCode::from_raw(raw as i32).unwrap_or(ErrorCode::Unknown);
    let value = inner
        .take_slot(slot)
        .filter(|_| status == ErrorCode::Success);
    // SAFETY: the task is ours again once its callback runs.
    unsafe { sys::doca_task_free(task) };
    let done = TaskCompletion {
        kind,
        user_data: UserData::from_raw(crate::data_bits(task_data)),
        status,
        value,
    };
    if let Some((pulled, _)) = &inner.pulled {
        pulled.push(done);
        return;
    }
    inner.pe.catch(|| {
        if let Some(cb) = inner.on_complete.borrow_mut().as_mut() {
            cb(done);
        }
    });
}

/// The callback of each task kind (completion and error alike).
macro_rules! callbacks {
    ($($name:ident($task:ty, $as_task:ident) => $kind:ident, $slot:expr;)*) => {$(
        unsafe extern "C" fn $name(
            task: *mut $task,
            task_data: sys::doca_data,
            ctx_data: sys::doca_data,
        ) {
            // SAFETY: a completed task of this kind.
            let (t, slot) = unsafe { (sys::$as_task(task), $slot(task)) };
            // SAFETY: as above; the context's user data is its Inner.
            unsafe { finish(TaskKind::$kind, t, slot, ctx_data, task_data) };
        }
    )*};
}

/// No value slot.
fn none<T>(_: *mut T) -> *mut u64 {
    std::ptr::null_mut()
}

/// A get's value slot.
///
/// # Safety
/// A live get task.
unsafe fn get_slot(task: *mut sys::doca_sync_event_task_get) -> *mut u64 {
    // SAFETY: the caller's contract.
    unsafe { sys::doca_sync_event_task_get_get_ret_val_ptr(task) }
}

/// A notify_add's slot for the value before.
///
/// # Safety
/// A live notify_add task.
unsafe fn add_slot(task: *mut sys::doca_sync_event_task_notify_add) -> *mut u64 {
    // SAFETY: the caller's contract.
    unsafe { sys::doca_sync_event_task_notify_add_get_fetched_val_ptr(task) }
}

callbacks! {
    get_done(sys::doca_sync_event_task_get, doca_sync_event_task_get_as_doca_task) => Get, get_slot;
    set_done(sys::doca_sync_event_task_notify_set, doca_sync_event_task_notify_set_as_doca_task)
        => NotifySet, none;
    add_done(sys::doca_sync_event_task_notify_add, doca_sync_event_task_notify_add_as_doca_task)
        => NotifyAdd, add_slot;
    eq_done(sys::doca_sync_event_task_wait_eq, doca_sync_event_task_wait_eq_as_doca_task)
        => WaitEq, none;
    neq_done(sys::doca_sync_event_task_wait_neq, doca_sync_event_task_wait_neq_as_doca_task)
        => WaitNeq, none;
}

/// The state-changed callback: the closure of the context the user data points at.
unsafe extern "C" fn state_changed(
    user_data: sys::doca_data,
    _ctx: *mut sys::doca_ctx,
    prev: sys::doca_ctx_states,
    next: sys::doca_ctx_states,
) {
    // SAFETY: the context's user data is its boxed Inner, alive until it is destroyed.
    let inner = unsafe { &*user_data.ptr.cast::<Inner>() };
    if let Some(cb) = &inner.on_state_changed {
        inner
            .pe
            .catch(|| cb(ctx::state_from_raw(prev), ctx::state_from_raw(next)));
    }
}

impl Inner {
    /// A free value slot, or NULL when `needed` is false.
    fn slot(&self, needed: bool) -> Result<*mut u64> {
        if !needed {
            return Ok(std::ptr::null_mut());
        }
        let Some(i) = self.free_slots.borrow_mut().pop() else {
            bail!(
                NoMemory,
                "every get and notify_add task is in flight: wait for completions"
            );
        };
        Ok(self.slots[i as usize].as_ptr())
    }

    /// The value in `slot` (one of ours, or NULL), and the slot free again.
    fn take_slot(&self, slot: *mut u64) -> Option<u64> {
        let base = self.slots.as_ptr() as usize;
        let at = (slot as usize).checked_sub(base)? / std::mem::size_of::<u64>();
        let cell = self.slots.get(at)?;
        self.free_slots.borrow_mut().push(at as u32);
        Some(cell.get())
    }
}

impl<'a> SyncEventContextBuilder<'a> {
    /// `doca_sync_event_task_<kind>_set_conf`: `n` tasks of `kind` (none by default).
    #[doc(alias = "doca_sync_event_task_get_set_conf")]
    #[doc(alias = "doca_sync_event_task_notify_set_set_conf")]
    #[doc(alias = "doca_sync_event_task_notify_add_set_conf")]
    #[doc(alias = "doca_sync_event_task_wait_eq_set_conf")]
    #[doc(alias = "doca_sync_event_task_wait_neq_set_conf")]
    pub fn tasks(mut self, kind: TaskKind, n: u32) -> Self {
        self.num_tasks[kind as usize] = n;
        self
    }

    /// The task completion callback (success or error), run by [`Pe::progress`].
    pub fn on_complete(mut self, cb: impl FnMut(TaskCompletion) + 'static) -> Self {
        self.on_complete = Some(Box::new(cb));
        self
    }

    /// Hands completions out as values instead of to a callback:
    /// [`SyncEventContext::try_completion`] and [`SyncEventContext::next_completion`] take them.
    /// A completion not taken yet holds a task's place, so nothing is dropped: a task is
    /// `NO_MEMORY` while the tasks in flight and the completions not taken add up to the tasks
    /// of every kind configured. (Without either, completions are not reported.)
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

    /// The event (created and configured, or imported) + `doca_sync_event_as_ctx` + the task
    /// configuration + `doca_pe_connect_ctx` + `doca_ctx_start`.
    #[doc(alias = "doca_ctx_start")]
    pub fn start(self) -> Result<SyncEventContext> {
        if self.pull && self.on_complete.is_some() {
            bail!(
                InvalidValue,
                "a sync event context reports completions to its callback or as values, not \
                 both: drop on_complete or pull_completions"
            );
        }
        let (raw, devs, dpas) = match self.origin {
            Origin::Configured(builder) => builder.create()?.into_parts(),
            Origin::Export(dev, data) => (import(dev, data)?, vec![dev.clone()], Vec::new()),
        };
        let n = self.num_tasks;
        let slots = n[TaskKind::Get as usize] + n[TaskKind::NotifyAdd as usize];
        let context = SyncEventContext {
            inner: ManuallyDrop::new(Box::new(Inner {
                raw,
                // SAFETY: an event this crate just created.
                ctx: unsafe { sys::doca_sync_event_as_ctx(raw) },
                pe: self.pe.clone(),
                slots: (0..slots).map(|_| Cell::new(0)).collect(),
                free_slots: RefCell::new((0..slots).rev().collect()),
                on_complete: RefCell::new(self.on_complete),
                pulled: self.pull.then(|| {
                    let total = n.iter().fold(0u32, |sum, &k| sum.saturating_add(k));
                    (Pulled::new(total), total)
                }),
                on_state_changed: self.on_state_changed,
                _devs: devs,
                _dpas: dpas,
            })),
        };
        let inner = &**context.inner;
        if inner.ctx.is_null() {
            bail!(Unexpected, "doca_sync_event_as_ctx refused a new event");
        }
        for kind in TaskKind::ALL {
            let n = n[kind as usize];
            if n == 0 {
                continue;
            }
            match kind {
                TaskKind::Get => doca!(doca_sync_event_task_get_set_conf(
                    raw,
                    Some(get_done),
                    Some(get_done),
                    n
                )),
                TaskKind::NotifySet => doca!(doca_sync_event_task_notify_set_set_conf(
                    raw,
                    Some(set_done),
                    Some(set_done),
                    n
                )),
                TaskKind::NotifyAdd => doca!(doca_sync_event_task_notify_add_set_conf(
                    raw,
                    Some(add_done),
                    Some(add_done),
                    n
                )),
                TaskKind::WaitEq => doca!(doca_sync_event_task_wait_eq_set_conf(
                    raw,
                    Some(eq_done),
                    Some(eq_done),
                    n
                )),
                TaskKind::WaitNeq => doca!(doca_sync_event_task_wait_neq_set_conf(
                    raw,
                    Some(neq_done),
                    Some(neq_done),
                    n
                )),
            }?;
        }
        let user_data = sys::doca_data {
            ptr: (inner as *const Inner).cast_mut().cast(),
        };
        doca!(doca_ctx_set_user_data(inner.ctx, user_data))?;
        if inner.on_state_changed.is_some() {
            doca!(doca_ctx_set_state_changed_cb(
                inner.ctx,
                Some(state_changed)
            ))?;
        }
        doca!(doca_pe_connect_ctx(self.pe.raw(), inner.ctx))?;
        doca!(doca_ctx_start(inner.ctx))?;
        Ok(context)
    }
}

impl SyncEventContext {
    /// A new event with `locations` (a [`SyncEvent::builder`] with its publisher and
    /// subscriber), run as a context on `pe`.
    pub fn builder<'a>(locations: SyncEventBuilder<'a>, pe: &'a Pe) -> SyncEventContextBuilder<'a> {
        Self::with_origin(Origin::Configured(locations), pe)
    }

    /// The event the other side of `dev`'s PCI link exported
    /// ([`SyncEvent::export_to_remote_pci`]), run as a context on `pe`.
    #[doc(alias = "doca_sync_event_create_from_export")]
    pub fn from_export<'a>(
        dev: &'a Dev,
        data: &'a [u8],
        pe: &'a Pe,
    ) -> SyncEventContextBuilder<'a> {
        Self::with_origin(Origin::Export(dev, data), pe)
    }

    fn with_origin<'a>(origin: Origin<'a>, pe: &'a Pe) -> SyncEventContextBuilder<'a> {
        SyncEventContextBuilder {
            pe,
            origin,
            num_tasks: [0; 5],
            on_complete: None,
            pull: false,
            on_state_changed: None,
        }
    }

    /// Allocates a task, sets its user data and submits it; frees it if the submit fails.
    fn submit(
        &self,
        slot: bool,
        alloc: impl FnOnce(&Inner, *mut u64) -> Result<*mut sys::doca_task>,
        user_data: u64,
    ) -> Result<()> {
        let inner = &**self.inner;
        if let Some((pulled, total)) = &inner.pulled
            && ctx::num_inflight(inner.ctx) as usize + pulled.len() >= *total as usize
        {
            bail!(
                NoMemory,
                "{total} tasks are in flight or have completions not taken yet (every task \
                 configured): take completions with try_completion or next_completion first"
            );
        }
        let slot = inner.slot(slot)?;
        let task = match alloc(inner, slot) {
            Ok(t) => t,
            Err(e) => {
                inner.take_slot(slot);
                return Err(e);
            }
        };
        // SAFETY: a task we just allocated.
        unsafe { sys::doca_task_set_user_data(task, sys::doca_data { u64_: user_data }) };
        if let Err(e) = doca!(doca_task_submit(task)) {
            inner.take_slot(slot);
            // SAFETY: the submit failed, so the task is still ours.
            unsafe { sys::doca_task_free(task) };
            return Err(e);
        }
        Ok(())
    }

    /// `doca_sync_event_task_get_alloc_init` + `doca_task_submit`: the completion carries the
    /// value.
    #[doc(alias = "doca_sync_event_task_get_alloc_init")]
    pub fn get(&self, user_data: impl Into<UserData>) -> Result<()> {
        self.submit(
            true,
            |inner, slot| {
                let mut task = std::ptr::null_mut();
                let data = sys::doca_data { u64_: 0 };
                doca!(doca_sync_event_task_get_alloc_init(
                    inner.raw, slot, data, &mut task
                ))?;
                // SAFETY: a task we just allocated.
                Ok(unsafe { sys::doca_sync_event_task_get_as_doca_task(task) })
            },
            user_data.into().raw(),
        )
    }

    /// `doca_sync_event_task_notify_set_alloc_init` + `doca_task_submit`.
    #[doc(alias = "doca_sync_event_task_notify_set_alloc_init")]
    pub fn notify_set(&self, value: u64, user_data: impl Into<UserData>) -> Result<()> {
        self.submit(
            false,
            |inner, _| {
                let mut task = std::ptr::null_mut();
                let data = sys::doca_data { u64_: 0 };
                doca!(doca_sync_event_task_notify_set_alloc_init(
                    inner.raw, value, data, &mut task
                ))?;
                // SAFETY: a task we just allocated.
                Ok(unsafe { sys::doca_sync_event_task_notify_set_as_doca_task(task) })
            },
            user_data.into().raw(),
        )
    }

    /// `doca_sync_event_task_notify_add_alloc_init` + `doca_task_submit`: the completion
    /// carries the value before the addition.
    #[doc(alias = "doca_sync_event_task_notify_add_alloc_init")]
    pub fn notify_add(&self, inc: u64, user_data: impl Into<UserData>) -> Result<()> {
        self.submit(
            true,
            |inner, slot| {
                let mut task = std::ptr::null_mut();
                let data = sys::doca_data { u64_: 0 };
                doca!(doca_sync_event_task_notify_add_alloc_init(
                    inner.raw, inc, slot, data, &mut task
                ))?;
                // SAFETY: a task we just allocated.
                Ok(unsafe { sys::doca_sync_event_task_notify_add_as_doca_task(task) })
            },
            user_data.into().raw(),
        )
    }

    /// `doca_sync_event_task_wait_eq_alloc_init` + `doca_task_submit`: completes once
    /// `(counter & mask) == value`. The mask is 0, 1, 2, 4 or 8 consecutive `0xFF` bytes.
    #[doc(alias = "doca_sync_event_task_wait_eq_alloc_init")]
    pub fn wait_eq(&self, value: u64, mask: u64, user_data: impl Into<UserData>) -> Result<()> {
        self.submit(
            false,
            |inner, _| {
                let mut task = std::ptr::null_mut();
                let data = sys::doca_data { u64_: 0 };
                doca!(doca_sync_event_task_wait_eq_alloc_init(
                    inner.raw, value, mask, data, &mut task
                ))?;
                // SAFETY: a task we just allocated.
                Ok(unsafe { sys::doca_sync_event_task_wait_eq_as_doca_task(task) })
            },
            user_data.into().raw(),
        )
    }

    /// `doca_sync_event_task_wait_neq_alloc_init` + `doca_task_submit`: completes once
    /// `(counter & mask) != value`.
    #[doc(alias = "doca_sync_event_task_wait_neq_alloc_init")]
    pub fn wait_neq(&self, value: u64, mask: u64, user_data: impl Into<UserData>) -> Result<()> {
        self.submit(
            false,
            |inner, _| {
                let mut task = std::ptr::null_mut();
                let data = sys::doca_data { u64_: 0 };
                doca!(doca_sync_event_task_wait_neq_alloc_init(
                    inner.raw, value, mask, data, &mut task
                ))?;
                // SAFETY: a task we just allocated.
                Ok(unsafe { sys::doca_sync_event_task_wait_neq_as_doca_task(task) })
            },
            user_data.into().raw(),
        )
    }

    /// The oldest completion not taken yet, without progressing, for a context built with
    /// [`pull_completions`](SyncEventContextBuilder::pull_completions); `None` if there is none.
    pub fn try_completion(&self) -> Option<TaskCompletion> {
        self.inner.pulled.as_ref()?.0.pop()
    }

    /// The next completion: progresses the PE (asleep on its notification handle when idle)
    /// until one is there; `None` after `timeout`. `SHUTDOWN` on Ctrl-C; `BAD_STATE` for a
    /// context not built with [`pull_completions`](SyncEventContextBuilder::pull_completions).
    pub fn next_completion(&self, timeout: std::time::Duration) -> Result<Option<TaskCompletion>> {
        crate::pulled::next_of(
            self.inner.pulled.as_ref().map(|(pulled, _)| pulled),
            &self.inner.pe,
            "SyncEventContext::next_completion",
            "this sync event context was not built with pull_completions: its completions \
             go to its callback, or are not reported",
            timeout,
        )
    }

    /// `doca_ctx_get_num_inflight_tasks`: tasks submitted and not completed yet.
    #[doc(alias = "doca_ctx_get_num_inflight_tasks")]
    pub fn in_flight(&self) -> u32 {
        ctx::num_inflight(self.inner.ctx)
    }

    /// `doca_sync_event_export_to_remote_pci`: see [`SyncEvent::export_to_remote_pci`].
    #[doc(alias = "doca_sync_event_export_to_remote_pci")]
    pub fn export_to_remote_pci(&self, dev: &Dev) -> Result<&[u8]> {
        export(self.inner.raw, dev)
    }

    /// `doca_ctx_get_state`.
    #[doc(alias = "doca_ctx_get_state")]
    pub fn state(&self) -> Result<CtxState> {
        ctx::state(self.inner.ctx)
    }

    /// `doca_ctx_stop`, progressing until the context is idle: waits still submitted complete
    /// with an error. Inside a callback of its PE it returns once the stop is requested.
    #[doc(alias = "doca_ctx_stop")]
    pub fn stop(&self) -> Result<()> {
        ctx::stop(self.inner.ctx, Some(&self.inner.pe))
    }
}

impl Drop for SyncEventContext {
    #[doc(alias = "doca_sync_event_destroy")]
    fn drop(&mut self) {
        // SAFETY: taken once, here; `self.inner` is not used again.
        let inner = unsafe { ManuallyDrop::take(&mut self.inner) };
        let (raw, ctx, pe) = (inner.raw, inner.ctx, inner.pe.clone());
        ctx::teardown(
            ctx,
            &pe,
            "sync event context",
            move || doca!(doca_sync_event_destroy(raw)),
            inner,
        );
    }
}

impl SyncEvent {
    /// The event's handle and what its locations name, for a context to own (no destroy).
    fn into_parts(self) -> (*mut sys::doca_sync_event, Vec<Dev>, Vec<Dpa>) {
        let mut this = ManuallyDrop::new(self);
        (
            this.raw,
            std::mem::take(&mut this.devs),
            std::mem::take(&mut this.dpas),
        )
    }
}
