//! Tasks (`struct doca_task`): fixed pools per context, allocated and freed on the datapath
//! without allocating memory or taking a lock.

use super::registry::{self, Object};
use super::types::*;
use crate::error::{ErrorCode, Result, bail, err};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::c_void;

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
pub(crate) struct TaskCore {
    /// The task's own C handle.
    pub handle: Cell<*mut c_void>,
    /// Its index in the pool.
    pub index: u32,
    pub state: Cell<TaskState>,
    pub user_data: Cell<doca_data>,
    pub status: Cell<doca_error_t>,
}

impl TaskCore {
    pub(crate) fn new(index: u32) -> Self {
        Self {
            handle: Cell::new(std::ptr::null_mut()),
            index,
            state: Cell::new(TaskState::Free),
            user_data: Cell::new(doca_data::default()),
            status: Cell::new(0),
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
pub(crate) trait Task: Object {
    fn core(&self) -> &TaskCore;
}

/// A context's pool of tasks, sized by its `*_set_conf` call.
pub(crate) struct TaskPool<T: Task> {
    tasks: Box<[*const T]>,
    free: RefCell<Vec<u32>>,
    inflight: Cell<usize>,
    /// Tasks submitted while the context was stopping: completed with an error by the next
    /// progress.
    flushed: RefCell<VecDeque<u32>>,
}

impl<T: Task> TaskPool<T> {
    /// `n` tasks made by `make`, each registered as a C object.
    pub(crate) fn new(n: u32, make: impl Fn(u32) -> T) -> Result<Self> {
        let mut tasks: Vec<*const T> = Vec::with_capacity(n as usize);
        for index in 0..n {
            let handle = match registry::register(Box::new(make(index))) {
                Ok(h) => h,
                Err(e) => {
                    for &t in &tasks {
                        // SAFETY: registered above and not freed yet.
                        let h = unsafe { (*t).core().handle.get() };
                        drop(registry::unregister::<T>(h));
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
            inflight: Cell::new(0),
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
        Ok(task)
    }

    /// Returns a task the program owns to the pool.
    #[inline]
    pub(crate) fn free(&self, task: &T) -> Result<()> {
        task.core().require_owned("free the task")?;
        task.core().state.set(TaskState::Free);
        self.free.borrow_mut().push(task.core().index);
        Ok(())
    }

    /// Marks `task` submitted.
    #[inline]
    pub(crate) fn submitted(&self, task: &T) {
        task.core().state.set(TaskState::Submitted);
        self.inflight.set(self.inflight.get() + 1);
    }

    /// Marks the task at `index` completed with `status`; returns it for its callback.
    #[inline]
    pub(crate) fn completed(&self, index: u32, status: doca_error_t) -> Option<&T> {
        let task = self.get(index)?;
        if task.core().state.get() != TaskState::Submitted {
            return None;
        }
        task.core().state.set(TaskState::Allocated);
        task.core().status.set(status);
        self.inflight.set(self.inflight.get().saturating_sub(1));
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

    /// Submitted and not completed.
    pub(crate) fn inflight(&self) -> usize {
        self.inflight.get()
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
            drop(registry::unregister::<T>(handle));
        }
    }
}
