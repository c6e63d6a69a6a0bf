//! The sync event's tasks (`struct doca_sync_event_task_{get,notify_set,notify_add,wait_eq,
//! wait_neq}`): allocation, their setters and getters, and their view as a `struct doca_task`.
//! One Rust type serves the five kinds; each C call checks it was given a task of its kind.

use super::super::registry::{self, Kind, Object};
use super::super::task::{Task, TaskCore, TaskState};
use super::super::types::*;
use super::super::{call, call_value, non_null, out};
use super::{SyncEventObj, event};
use crate::error::{Result, bail};
use crate::sync_event::tasks::{TaskKind, TaskOp, check_wait_mask};
use std::cell::Cell;

/// A sync event task of any kind.
/// `#[repr(C)]`, core first: see [`Task`].
#[repr(C)]
pub(crate) struct SyncEventTask {
    core: TaskCore,
    event: *const SyncEventObj,
    kind: TaskKind,
    /// get: `ret_val_ptr`; notify_add: `fetched_val_ptr` (may be NULL).
    ptr: Cell<*mut u64>,
    /// notify_set: `set_val`; notify_add: `inc_val`; waits: `wait_val`.
    value: Cell<u64>,
    /// Waits: the mask.
    mask: Cell<u64>,
}

impl Object for SyncEventTask {
    const KIND: Kind = Kind::SyncEventTask;
}

crate::capi::task::task_core_first!(SyncEventTask);

// SAFETY: `#[repr(C)]` with `core` first, checked above.
unsafe impl Task for SyncEventTask {
    fn core(&self) -> &TaskCore {
        &self.core
    }
    fn submit_task(&self) -> Result<()> {
        self.submit()
    }
    fn free_task(&self) -> Result<()> {
        self.event().tc.pools[self.kind.index()].free(self)
    }
}

impl SyncEventTask {
    pub(super) fn new(index: u32, event: *const SyncEventObj, kind: TaskKind) -> Self {
        Self {
            core: TaskCore::new(index),
            event,
            kind,
            ptr: Cell::new(std::ptr::null_mut()),
            value: Cell::new(0),
            mask: Cell::new(0),
        }
    }

    fn event(&self) -> &SyncEventObj {
        // SAFETY: a task lives in its event's pool, destroyed (with the task) before the event
        // is freed.
        unsafe { &*self.event }
    }

    /// What the task does, from its fields now; `INVALID_VALUE` for a get without a place for
    /// the value or a wait whose mask breaks the rule.
    fn op(&self) -> Result<TaskOp> {
        let (value, mask) = (self.value.get(), self.mask.get());
        let op = match self.kind {
            TaskKind::Get => {
                if self.ptr.get().is_null() {
                    bail!(
                        InvalidValue,
                        "the get task's ret_val_ptr is NULL: pass where the value goes"
                    );
                }
                TaskOp::Get
            }
            TaskKind::NotifySet => TaskOp::NotifySet(value),
            TaskKind::NotifyAdd => TaskOp::NotifyAdd(value),
            TaskKind::WaitEq => TaskOp::WaitEq { value, mask },
            TaskKind::WaitNeq => TaskOp::WaitNeq { value, mask },
        };
        op.check()?;
        Ok(op)
    }

    /// `doca_task_submit`: it runs at the next progress of the event's PE.
    fn submit(&self) -> Result<()> {
        let e = self.event();
        let op = self.op()?;
        let id = (self.kind, self.core.index);
        e.tc.pools[self.kind.index()].submit(e.tc.core.state(), self, || {
            e.tc.submitted(id, op);
            Ok(())
        })
    }

    /// The task ran with `result`: a get's value and a notify_add's value before the addition
    /// land where the program asked.
    pub(super) fn deliver(&self, result: u64) {
        let ptr = self.ptr.get();
        if matches!(self.kind, TaskKind::Get | TaskKind::NotifyAdd) && !ptr.is_null() {
            // SAFETY: the program's pointer, valid and writable until the task completes by
            // DOCA's contract for the task (checked non-null).
            unsafe { ptr.write_unaligned(result) };
        }
    }

    /// A setter's change, refused (and recorded) while the task is submitted.
    fn set(&self, f: impl FnOnce(&Self)) -> Result<()> {
        if self.core.state.get() == TaskState::Submitted {
            bail!(
                BadState,
                "the {} task is submitted: change it once it completed (its callback runs)",
                self.kind.name()
            );
        }
        f(self);
        Ok(())
    }
}

/// The task behind `ptr`, which must be of `kind` (`INVALID_VALUE` otherwise).
fn task<'a, T>(ptr: *const T, kind: TaskKind) -> Result<&'a SyncEventTask> {
    let t = registry::get::<SyncEventTask>(ptr.cast(), "task")?;
    if t.kind != kind {
        bail!(
            InvalidValue,
            "task ({ptr:p}) is a struct doca_sync_event_task_{}, not a struct \
             doca_sync_event_task_{}",
            t.kind.name(),
            kind.name()
        );
    }
    Ok(t)
}

/// `*_alloc_init` of `kind`: a task from its pool (`NO_MEMORY` when every one is out), filled
/// by `init`; the event's context must run.
fn alloc(
    event: *mut doca_sync_event,
    kind: TaskKind,
    user_data: doca_data,
    task: *mut *mut std::ffi::c_void,
    init: impl FnOnce(&SyncEventTask),
) -> Result<()> {
    let e = self::event(event)?;
    non_null(task, "task")?;
    e.tc.configured(kind)?;
    let handle = e.tc.pools[kind.index()].alloc(e.tc.core.state(), |t| {
        init(t);
        t.core.user_data.set(user_data);
        t.core.handle.get()
    })?;
    // SAFETY: checked non-null; writable by the C contract.
    unsafe { out(task, "task", handle.cast()) }
}

/// `doca_sync_event_task_get_alloc_init`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_task_get_alloc_init(
    event: *mut doca_sync_event,
    ret_val_ptr: *mut u64,
    user_data: doca_data,
    task: *mut *mut doca_sync_event_task_get,
) -> doca_error_t {
    call("doca_sync_event_task_get_alloc_init", || {
        non_null(ret_val_ptr, "ret_val_ptr")?;
        alloc(event, TaskKind::Get, user_data, task.cast(), |t| {
            t.ptr.set(ret_val_ptr)
        })
    })
}

/// `doca_sync_event_task_notify_set_alloc_init`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_task_notify_set_alloc_init(
    event: *mut doca_sync_event,
    set_val: u64,
    user_data: doca_data,
    task: *mut *mut doca_sync_event_task_notify_set,
) -> doca_error_t {
    call("doca_sync_event_task_notify_set_alloc_init", || {
        alloc(event, TaskKind::NotifySet, user_data, task.cast(), |t| {
            t.value.set(set_val)
        })
    })
}

/// `doca_sync_event_task_notify_add_alloc_init`: `fetched_val_ptr` may be NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_task_notify_add_alloc_init(
    event: *mut doca_sync_event,
    inc_val: u64,
    fetched_val_ptr: *mut u64,
    user_data: doca_data,
    task: *mut *mut doca_sync_event_task_notify_add,
) -> doca_error_t {
    call("doca_sync_event_task_notify_add_alloc_init", || {
        alloc(event, TaskKind::NotifyAdd, user_data, task.cast(), |t| {
            t.value.set(inc_val);
            t.ptr.set(fetched_val_ptr);
        })
    })
}

macro_rules! wait_allocs {
    ($($name:ident($task:ty) => $kind:ident;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: the mask follows the wait mask rule.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            event: *mut doca_sync_event,
            wait_val: u64,
            mask: u64,
            user_data: doca_data,
            task: *mut *mut $task,
        ) -> doca_error_t {
            call(stringify!($name), || {
                check_wait_mask(mask)?;
                alloc(event, TaskKind::$kind, user_data, task.cast(), |t| {
                    t.value.set(wait_val);
                    t.mask.set(mask);
                })
            })
        }
    )*};
}

wait_allocs! {
    doca_sync_event_task_wait_eq_alloc_init(doca_sync_event_task_wait_eq) => WaitEq;
    doca_sync_event_task_wait_neq_alloc_init(doca_sync_event_task_wait_neq) => WaitNeq;
}

macro_rules! as_doca_task {
    ($($name:ident($task:ty) => $kind:ident;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(task: *mut $task) -> *mut doca_task {
            call_value(stringify!($name), std::ptr::null_mut(), || {
                self::task(task, TaskKind::$kind)?;
                Ok(task.cast())
            })
        }
    )*};
}

as_doca_task! {
    doca_sync_event_task_get_as_doca_task(doca_sync_event_task_get) => Get;
    doca_sync_event_task_notify_set_as_doca_task(doca_sync_event_task_notify_set) => NotifySet;
    doca_sync_event_task_notify_add_as_doca_task(doca_sync_event_task_notify_add) => NotifyAdd;
    doca_sync_event_task_wait_eq_as_doca_task(doca_sync_event_task_wait_eq) => WaitEq;
    doca_sync_event_task_wait_neq_as_doca_task(doca_sync_event_task_wait_neq) => WaitNeq;
}

/// Setters (`void`: a refusal is recorded for `dpakit_soft_last_error`) and getters of one
/// field of one kind.
macro_rules! accessors {
    ($($set:ident / $get:ident($task:ty) => $kind:ident, $field:ident: $ty:ty, $fallback:expr;)*) => {$(
        #[doc = concat!("`", stringify!($set), "`: refused while the task is submitted.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $set(task: *mut $task, value: $ty) {
            call_value(stringify!($set), (), || {
                self::task(task, TaskKind::$kind)?
                    .set(|t| t.$field.set(value))
            })
        }

        #[doc = concat!("`", stringify!($get), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $get(task: *const $task) -> $ty {
            call_value(stringify!($get), $fallback, || {
                Ok(self::task(task, TaskKind::$kind)?.$field.get())
            })
        }
    )*};
}

accessors! {
    doca_sync_event_task_get_set_ret_val_ptr / doca_sync_event_task_get_get_ret_val_ptr
        (doca_sync_event_task_get) => Get, ptr: *mut u64, std::ptr::null_mut();
    doca_sync_event_task_notify_set_set_set_val / doca_sync_event_task_notify_set_get_set_val
        (doca_sync_event_task_notify_set) => NotifySet, value: u64, 0;
    doca_sync_event_task_notify_add_set_inc_val / doca_sync_event_task_notify_add_get_inc_val
        (doca_sync_event_task_notify_add) => NotifyAdd, value: u64, 0;
    doca_sync_event_task_notify_add_set_fetched_val_ptr
        / doca_sync_event_task_notify_add_get_fetched_val_ptr
        (doca_sync_event_task_notify_add) => NotifyAdd, ptr: *mut u64, std::ptr::null_mut();
    doca_sync_event_task_wait_eq_set_wait_val / doca_sync_event_task_wait_eq_get_wait_val
        (doca_sync_event_task_wait_eq) => WaitEq, value: u64, 0;
    doca_sync_event_task_wait_eq_set_mask / doca_sync_event_task_wait_eq_get_mask
        (doca_sync_event_task_wait_eq) => WaitEq, mask: u64, 0;
    doca_sync_event_task_wait_neq_set_wait_val / doca_sync_event_task_wait_neq_get_wait_val
        (doca_sync_event_task_wait_neq) => WaitNeq, value: u64, 0;
    doca_sync_event_task_wait_neq_set_mask / doca_sync_event_task_wait_neq_get_mask
        (doca_sync_event_task_wait_neq) => WaitNeq, mask: u64, 0;
}
