//! Tasks (`struct doca_task`): fixed pools per context, allocated and freed on the datapath
//! without allocating memory or taking a lock.

use super::context::CtxCore;
use super::registry::{self, Kind, Object};
use super::types::*;
use super::{call, call_value};
use crate::ctx::CtxState;
use crate::error::{ErrorCode, Result, bail, err};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::OnceLock;

/// Where a task is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskState {
    /// In its context's pool.
    Free,
    /// Owned by the program: allocated, or completed and not freed or resubmitted yet.
    Allocated,
    /// Submitted; its completion or error callback has not run yet.
    Submitted,
}

/// What every task has, whatever its context.
#[repr(C)]
pub(crate) struct TaskCore {
    /// The task's own C handle.
    pub handle: Cell<*mut c_void>,
    /// Its index in the pool.
    pub index: u32,
    pub state: Cell<TaskState>,
    pub user_data: Cell<doca_data>,
    pub status: Cell<doca_error_t>,
    /// Freed by the program while submitted: it goes back to the pool when it completes (or
    /// is flushed by a stop), and its callback does not run.
    released: Cell<bool>,
}

impl TaskCore {
    pub(crate) fn new(index: u32) -> Self {
        Self {
            handle: Cell::new(std::ptr::null_mut()),
            index,
            state: Cell::new(TaskState::Free),
            user_data: Cell::new(doca_data::default()),
            status: Cell::new(0),
            released: Cell::new(false),
        }
    }

    /// `BAD_STATE` unless the program owns the task (allocated or completed).
    pub(crate) fn require_owned(&self, what: &str) -> Result<()> {
        match self.state.get() {
            TaskState::Allocated => Ok(()),
            TaskState::Submitted => bail!(
                BadState,
                "cannot {what}: the task is submitted and has not completed (wait for its \
                 callback)"
            ),
            TaskState::Free => bail!(
                BadState,
                "cannot {what}: the task was freed (allocate a new one)"
            ),
        }
    }
}

/// A task type of a context.
///
/// # Safety
/// The type is `#[repr(C)]` with its [`TaskCore`] as the first field (offset 0): the generic
/// calls reach the core of a task of any kind by casting the registry's object pointer, with
/// no dispatch. [`task_core_first!`] checks it at compile time.
pub(crate) unsafe trait Task: Object {
    fn core(&self) -> &TaskCore;
    /// `doca_task_submit` of this task.
    fn submit_task(&self) -> Result<()>;
    /// `doca_task_free` of this task.
    fn free_task(&self) -> Result<()>;
}

/// A task of any kind, as the generic calls see it ([`Task`] itself names its kind, so it cannot
/// be a trait object).
pub(crate) trait AnyTask {
    fn submit_any(&self) -> Result<()>;
    fn free_any(&self) -> Result<()>;
}

impl<T: Task> AnyTask for T {
    fn submit_any(&self) -> Result<()> {
        self.submit_task()
    }
    fn free_any(&self) -> Result<()> {
        self.free_task()
    }
}

/// How a registered task of each kind is seen as an [`AnyTask`]: the generic `doca_task_*` calls
/// dispatch through it, so this module names no task type. A pool registers its type's view
/// when it is made ([`TaskPool::new`]), before any task of the type exists.
type TaskView = fn(*const c_void) -> *const dyn AnyTask;

/// The task kinds, in the order of [`TASK_VIEWS`].
const TASK_KINDS: [Kind; 5] = [
    Kind::SendTask,
    Kind::RecvTask,
    Kind::ComchSendTask,
    Kind::SyncEventTask,
    Kind::DmaMemcpyTask,
];

static TASK_VIEWS: [OnceLock<TaskView>; 5] = [const { OnceLock::new() }; 5];

fn view_of<T: Task + 'static>(obj: *const c_void) -> *const dyn AnyTask {
    obj.cast::<T>() as *const dyn AnyTask
}

/// Makes tasks of type `T` reachable by the generic calls.
fn register_view<T: Task + 'static>() {
    if let Some(i) = TASK_KINDS.iter().position(|&k| k == T::KIND) {
        TASK_VIEWS[i].get_or_init(|| view_of::<T>);
    }
}

/// Checks at compile time that a task type keeps its [`TaskCore`] first, as [`Task`] requires.
macro_rules! task_core_first {
    ($t:ty) => {
        const _: () = assert!(std::mem::offset_of!($t, core) == 0);
    };
}
pub(crate) use task_core_first;

/// The core of the task behind a `struct doca_task *`, whatever its kind: the hot generic calls
/// (user data, status) need nothing else.
#[inline]
fn task_core<'a>(ptr: *const doca_task) -> Result<&'a TaskCore> {
    let (_, obj) = registry::resolve(ptr.cast(), "task", &TASK_KINDS)?;
    // SAFETY: a live object of a task kind is a `Task`, which keeps its `TaskCore` at offset 0
    // (the trait's contract, checked by `task_core_first!`); it lives while its pool does.
    Ok(unsafe { &*obj.cast::<TaskCore>() })
}

/// The task behind a `struct doca_task *`, whatever its kind.
#[inline]
fn any_task<'a>(ptr: *const doca_task) -> Result<&'a dyn AnyTask> {
    let (kind, obj) = registry::resolve(ptr.cast(), "task", &TASK_KINDS)?;
    let view = TASK_KINDS
        .iter()
        .position(|&k| k == kind)
        .and_then(|i| TASK_VIEWS[i].get())
        .ok_or_else(|| err(ErrorCode::Driver, "a task kind without its view"))?;
    // SAFETY: the registry resolved a live object of this kind, and the view of the kind casts
    // to the type registered under it; the object lives while its pool does.
    Ok(unsafe { &*view(obj) })
}

/// A context's pool of tasks, sized by its `*_set_conf` call.
pub(crate) struct TaskPool<T: Task> {
    tasks: Box<[*const T]>,
    free: RefCell<Vec<u32>>,
    /// Tasks submitted while the context was stopping: completed with an error by the next
    /// progress.
    flushed: RefCell<VecDeque<u32>>,
}

impl<T: Task> TaskPool<T> {
    /// `n` tasks made by `make`, each registered as a C object.
    pub(crate) fn new(n: u32, make: impl Fn(u32) -> T) -> Result<Self>
    where
        T: 'static,
    {
        register_view::<T>();
        let mut tasks: Vec<*const T> = Vec::with_capacity(n as usize);
        for index in 0..n {
            let handle = match registry::register(Box::new(make(index))) {
                Ok(h) => h,
                Err(e) => {
                    for &t in &tasks {
                        // SAFETY: registered above and not freed yet.
                        let h = unsafe { (*t).core().handle.get() };
                        registry::retire::<T>(h);
                    }
                    return Err(e);
                }
            };
            let task = registry::get::<T>(handle, "task")?;
            task.core().handle.set(handle);
            tasks.push(task);
        }
        Ok(Self {
            tasks: tasks.into_boxed_slice(),
            // Popped from the end: lowest indices first.
            free: RefCell::new((0..n).rev().collect()),
            flushed: RefCell::new(VecDeque::with_capacity(n as usize)),
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.tasks.len()
    }

    /// The task at `index`.
    #[inline]
    pub(crate) fn get(&self, index: u32) -> Option<&T> {
        // SAFETY: the pool's tasks live in the registry until `destroy`, which consumes it.
        self.tasks.get(index as usize).map(|&t| unsafe { &*t })
    }

    /// Takes a free task (now owned by the program); `NO_MEMORY` when every task is out.
    #[inline]
    pub(crate) fn alloc(&self) -> Result<&T> {
        let Some(index) = self.free.borrow_mut().pop() else {
            return Err(err(
                ErrorCode::NoMemory,
                "every task of the pool is allocated: complete and free some, or configure a \
                 larger pool in *_task_*_set_conf",
            ));
        };
        let task = self
            .get(index)
            .ok_or_else(|| err(ErrorCode::Unexpected, "task index"))?;
        task.core().state.set(TaskState::Allocated);
        task.core().user_data.set(doca_data::default());
        task.core().status.set(0);
        task.core().released.set(false);
        Ok(task)
    }

    /// Returns a task the program owns to the pool. A submitted task cannot be taken back
    /// from the datapath: it is released when it completes, or when a stop flushes it, and
    /// its callback does not run (so a program that frees its posted receives and then stops
    /// its context reaches IDLE).
    #[inline]
    pub(crate) fn free(&self, task: &T) -> Result<()> {
        let core = task.core();
        if core.state.get() == TaskState::Submitted {
            core.released.set(true);
            return Ok(());
        }
        core.require_owned("free the task")?;
        self.put_back(task);
        Ok(())
    }

    /// The task is in the pool again.
    fn put_back(&self, task: &T) {
        task.core().state.set(TaskState::Free);
        self.free.borrow_mut().push(task.core().index);
    }

    /// Marks `task` submitted.
    #[inline]
    pub(crate) fn submitted(&self, task: &T) {
        task.core().state.set(TaskState::Submitted);
    }

    /// Marks the task at `index` completed with `status`; returns it for its callback.
    #[inline]
    pub(crate) fn completed(&self, index: u32, status: doca_error_t) -> Option<&T> {
        let task = self.get(index)?;
        if task.core().state.get() != TaskState::Submitted {
            return None;
        }
        if task.core().released.replace(false) {
            self.put_back(task);
            return None;
        }
        task.core().state.set(TaskState::Allocated);
        task.core().status.set(status);
        Some(task)
    }

    /// Queues a submitted task to complete with an error at the next progress (submitted while
    /// its context stops).
    pub(crate) fn flush_later(&self, task: &T) {
        self.submitted(task);
        self.flushed.borrow_mut().push_back(task.core().index);
    }

    /// The next task queued by [`flush_later`](Self::flush_later).
    pub(crate) fn next_flushed(&self) -> Option<u32> {
        self.flushed.borrow_mut().pop_front()
    }

    /// Submitted and not completed: counted from the tasks' own states when asked (a rare
    /// call), so the datapath keeps no second count.
    pub(crate) fn inflight(&self) -> usize {
        self.tasks
            .iter()
            // SAFETY: the pool's tasks live in the registry until `destroy`, which consumes it.
            .filter(|&&t| unsafe { &*t }.core().state.get() == TaskState::Submitted)
            .count()
    }

    /// Not in the pool: allocated, submitted or completed and not freed.
    pub(crate) fn outstanding(&self) -> usize {
        self.tasks.len() - self.free.borrow().len()
    }

    /// Unregisters every task; their handles are invalid from now on.
    pub(crate) fn destroy(self) {
        for &t in self.tasks.iter() {
            // SAFETY: live until unregistered here.
            let handle = unsafe { (*t).core().handle.get() };
            registry::retire::<T>(handle);
        }
    }
}

/// Names a context's tasks in diagnostics: the context ("producer") and its tasks ("send").
#[derive(Clone, Copy)]
pub(crate) struct TaskNames {
    pub ctx: &'static str,
    pub tasks: &'static str,
}

/// The task pool of a context whose datapath may run on the CPU: none until the first start
/// on the CPU (a context on the DPA has no tasks), remade when a start finds another size,
/// destroyed with the context. What every such context does with its tasks is here: allocate,
/// submit (or keep for the flush of a stopping context), complete, free, stop.
pub(crate) struct Tasks<T: Task> {
    pool: RefCell<Option<TaskPool<T>>>,
    names: TaskNames,
}

impl<T: Task> Tasks<T> {
    pub(crate) fn new(names: TaskNames) -> Self {
        Self {
            pool: RefCell::new(None),
            names,
        }
    }

    /// At a start on the CPU: a pool of `n` tasks made by `make`, unless there is one of that
    /// size already.
    pub(crate) fn ensure(&self, n: u32, make: impl Fn(u32) -> T) -> Result<()> {
        let mut pool = self.pool.borrow_mut();
        if pool.as_ref().is_some_and(|p| p.len() == n as usize) {
            return Ok(());
        }
        if let Some(old) = pool.take() {
            old.destroy();
        }
        *pool = Some(TaskPool::new(n, make)?);
        Ok(())
    }

    /// `*_alloc_init`: takes a free task of a context in `state` and lets `init` fill it.
    #[inline]
    pub(crate) fn alloc<R>(&self, state: CtxState, init: impl FnOnce(&T) -> R) -> Result<R> {
        let TaskNames { ctx, tasks } = self.names;
        match state {
            CtxState::Running | CtxState::Stopping => {}
            s => bail!(BadState, "the {ctx} is {s}: allocate tasks once it runs"),
        }
        let pool = self.pool.borrow();
        let Some(pool) = pool.as_ref() else {
            bail!(
                NotSupported,
                "this {ctx}'s datapath is on the DPA: it has no {tasks} tasks"
            );
        };
        Ok(init(pool.alloc()?))
    }

    /// `doca_task_submit` on a context in `state`: `run` hands the task to the datapath while
    /// the context runs; a stopping context keeps it for the next progress to flush.
    #[inline]
    pub(crate) fn submit(
        &self,
        state: CtxState,
        task: &T,
        run: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let TaskNames { ctx, tasks } = self.names;
        let pool = self.pool.borrow();
        let Some(pool) = pool.as_ref() else {
            bail!(BadState, "the {ctx} has no {tasks} tasks");
        };
        task.core().require_owned("submit the task")?;
        match state {
            CtxState::Running => {}
            CtxState::Stopping => {
                pool.flush_later(task);
                return Ok(());
            }
            s => bail!(BadState, "the {ctx} is {s}: submit tasks while it runs"),
        }
        run()?;
        pool.submitted(task);
        Ok(())
    }

    /// Task `index` finished with `status`: `fill` records its results, and the task's handle
    /// and user data are returned for its callback (None for a task not submitted).
    #[inline]
    pub(crate) fn complete(
        &self,
        index: u32,
        status: doca_error_t,
        fill: impl FnOnce(&T),
    ) -> Option<(*mut c_void, doca_data)> {
        let pool = self.pool.borrow();
        let task = pool.as_ref()?.completed(index, status)?;
        fill(task);
        Some((task.core().handle.get(), task.core().user_data.get()))
    }

    /// `doca_task_free`.
    #[inline]
    pub(crate) fn free(&self, task: &T) -> Result<()> {
        self.pool
            .borrow()
            .as_ref()
            .ok_or_else(|| err(ErrorCode::BadState, "the task's pool is gone"))?
            .free(task)
    }

    /// `f` of the task at `index`, if the pool has one.
    pub(crate) fn with<R>(&self, index: u32, f: impl FnOnce(&T) -> R) -> Option<R> {
        self.pool.borrow().as_ref()?.get(index).map(f)
    }

    /// A stop takes back every submitted task: each completes with the flush status at the
    /// next progress (unless its real completion comes first).
    pub(crate) fn flush_submitted(&self) {
        let pool = self.pool.borrow();
        let Some(pool) = pool.as_ref() else { return };
        let mut flushed = pool.flushed.borrow_mut();
        for i in 0..pool.len() as u32 {
            if pool
                .get(i)
                .is_some_and(|t| t.core().state.get() == TaskState::Submitted)
            {
                flushed.push_back(i);
            }
        }
    }

    /// Whether tasks submitted while the context stops wait for the next progress to flush
    /// them.
    pub(crate) fn has_flushed(&self) -> bool {
        self.pool
            .borrow()
            .as_ref()
            .is_some_and(|p| !p.flushed.borrow().is_empty())
    }

    /// Tasks not in the pool: allocated, submitted, or completed and not freed.
    pub(crate) fn outstanding(&self) -> usize {
        self.pool.borrow().as_ref().map_or(0, TaskPool::outstanding)
    }

    /// Tasks submitted and not completed.
    pub(crate) fn inflight(&self) -> usize {
        self.pool.borrow().as_ref().map_or(0, TaskPool::inflight)
    }

    /// `doca_ctx_stop`, once the datapath flushed what it held: true if the context could go
    /// IDLE at once (`finish` did), else it is STOPPING until its tasks are back.
    pub(crate) fn stop(&self, core: &CtxCore, finish: impl FnOnce()) -> bool {
        if self.outstanding() == 0 {
            finish();
            return true;
        }
        core.transition(CtxState::Stopping);
        false
    }

    /// After a progress of a stopping context: the tasks submitted while it stopped complete
    /// with the flush status through `complete`, and once every task is back `finish` makes
    /// it IDLE. Returns the tasks completed.
    pub(crate) fn after_progress(
        &self,
        core: &CtxCore,
        mut complete: impl FnMut(u32, doca_error_t),
        finish: impl FnOnce(),
    ) -> usize {
        if core.state() != CtxState::Stopping {
            return 0;
        }
        let flushed = crate::comch::FLUSHED.raw() as doca_error_t;
        let mut n = 0;
        loop {
            let next = self.pool.borrow().as_ref().and_then(TaskPool::next_flushed);
            let Some(index) = next else { break };
            complete(index, flushed);
            n += 1;
        }
        if core.state() == CtxState::Stopping && self.outstanding() == 0 {
            finish();
        }
        n
    }
}

impl<T: Task> Tasks<T> {
    /// The context is destroyed: its tasks' handles are invalid from now on (the context's own
    /// memory may outlive the call, see `registry::retire`, but its tasks are gone with it).
    pub(crate) fn release(&self) {
        if let Some(pool) = self.pool.borrow_mut().take() {
            pool.destroy();
        }
    }
}

impl<T: Task> Drop for Tasks<T> {
    fn drop(&mut self) {
        self.release();
    }
}

/// `doca_task_submit`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_task_submit(task: *mut doca_task) -> doca_error_t {
    call("doca_task_submit", || any_task(task)?.submit_any())
}

/// `doca_task_submit_ex`: the flags are DOCA_TASK_SUBMIT_FLAG_*. On the soft device every
/// submission is seen at once, so FLUSH and OPTIMIZE_REPORTS change nothing observable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_task_submit_ex(task: *mut doca_task, flags: u32) -> doca_error_t {
    call("doca_task_submit_ex", || {
        if flags & !0b11 != 0 {
            bail!(
                InvalidValue,
                "submit flags {flags:#x} set bits outside DOCA_TASK_SUBMIT_FLAG_FLUSH and \
                 DOCA_TASK_SUBMIT_FLAG_OPTIMIZE_REPORTS"
            );
        }
        any_task(task)?.submit_any()
    })
}

/// `doca_task_free`: returns a task the program owns to its pool (a task in flight is refused,
/// with the reason kept for `dpakit_soft_last_error`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_task_free(task: *mut doca_task) {
    call_value("doca_task_free", (), || any_task(task)?.free_any())
}

/// `doca_task_get_status`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_task_get_status(task: *const doca_task) -> doca_error_t {
    match task_core(task) {
        Ok(core) => core.status.get(),
        Err(e) => call("doca_task_get_status", || Err(e)),
    }
}

/// `doca_task_set_user_data`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_task_set_user_data(task: *mut doca_task, user_data: doca_data) {
    call_value("doca_task_set_user_data", (), || {
        task_core(task)?.user_data.set(user_data);
        Ok(())
    })
}

/// `doca_task_get_user_data`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_task_get_user_data(task: *const doca_task) -> doca_data {
    call_value("doca_task_get_user_data", doca_data::default(), || {
        Ok(task_core(task)?.user_data.get())
    })
}
