//! DPA threads (`doca_dpa_thread`): a kernel, its `u64` argument and local storage, and the
//! state the scheduler uses to trigger it.

use super::Dpa;
pub(crate) use super::thread_shared::ThreadShared;
use crate::error::{Result, bail};
use crate::sync::Ordering;
use corosensei::stack::DefaultStack;
use dpakit_abi::{ThreadEntry, ThreadKernel};
use std::fmt;
use std::sync::Arc;

/// Stack of one DPA thread on the soft device. Generous for debug builds of kernels; pages are
/// only touched as used.
const STACK_SIZE: usize = 256 * 1024;

pub(crate) use super::thread_state::flags;

/// Configuration of a [`DpaThread`].
#[derive(Debug)]
pub struct DpaThreadBuilder<'a> {
    dpa: &'a Dpa,
    name: &'static str,
    entry: ThreadEntry,
    arg: u64,
    local_storage: u64,
}

impl DpaThreadBuilder<'_> {
    /// `doca_dpa_thread_set_local_storage`.
    pub fn local_storage(mut self, ptr: super::DevPtr) -> Self {
        self.local_storage = ptr.raw();
        self
    }

    /// `doca_dpa_thread_start`: allocates the thread's resources. The thread is not triggered
    /// until [`DpaThread::run`].
    pub fn start(self) -> Result<DpaThread> {
        let dpa = &self.dpa.shared;
        dpa.require_running("create a DPA thread")?;
        let kernel = dpa
            .app
            .require(self.entry as usize, super::KernelKind::Thread)?;
        let isa_entry = match &dpa.isa {
            Some(program) => program.entry(kernel.name)?,
            None => 0,
        };
        let stack = DefaultStack::new(STACK_SIZE).map_err(|e| {
            crate::error::err(
                crate::error::ErrorCode::NoMemory,
                format!("DPA thread stack: {e}"),
            )
        })?;
        let mut stack = Some(stack);
        let made = dpa.threads.insert_with(|index| {
            Arc::new(ThreadShared::new(
                index,
                self.name,
                self.entry,
                isa_entry,
                self.arg,
                self.local_storage,
                stack.take(),
            ))
        });
        let Some((_, shared)) = made else {
            bail!(
                NoMemory,
                "the DPA holds at most {} threads",
                dpa.threads.capacity()
            );
        };
        dpa.sched.register(&shared);
        Ok(DpaThread {
            dpa: self.dpa.clone(),
            shared,
        })
    }
}

/// `doca_dpa_thread`.
pub struct DpaThread {
    pub(crate) dpa: Dpa,
    pub(crate) shared: Arc<ThreadShared>,
}

impl fmt::Debug for DpaThread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.shared.fmt(f)
    }
}

impl DpaThread {
    /// `doca_dpa_thread_create` + `doca_dpa_thread_set_func_arg` (the model takes the `u64`
    /// as it is, whatever the kernel's argument type).
    pub fn builder<'a, A>(
        dpa: &'a Dpa,
        kernel: &ThreadKernel<A>,
        arg: u64,
    ) -> DpaThreadBuilder<'a> {
        DpaThreadBuilder {
            dpa,
            name: kernel.name(),
            entry: kernel.entry(),
            arg,
            local_storage: 0,
        }
    }

    /// `doca_dpa_thread_create` + `doca_dpa_thread_set_func_arg` with the kernel's address
    /// (`doca_dpa_func_t *`): `NOT_FOUND` unless it is a thread kernel of the DPA's app.
    pub fn builder_for_func(dpa: &Dpa, func: usize, arg: u64) -> Result<DpaThreadBuilder<'_>> {
        let kernel = *dpa.shared.app.require(func, super::KernelKind::Thread)?;
        // SAFETY: the app declares the function at `kernel.entry` (non-null) as a thread kernel,
        // `void (uint64_t)`.
        let entry = unsafe { std::mem::transmute::<usize, ThreadEntry>(kernel.entry) };
        Ok(DpaThreadBuilder {
            dpa,
            name: kernel.name,
            entry,
            arg,
            local_storage: 0,
        })
    }

    /// ISA mode: what the interpreter counted for this thread's activations (`None` in native
    /// mode).
    pub fn isa_profile(&self) -> Option<super::Profile> {
        self.dpa
            .shared
            .isa
            .is_some()
            .then(|| self.shared.isa_counters.snapshot())
    }

    /// `doca_dpa_thread_run`: from now on notifications trigger the kernel. A notification that
    /// arrived earlier triggers it at once.
    pub fn run(&self) -> Result<()> {
        use flags::*;
        self.dpa.shared.require_running("run a DPA thread")?;
        let prev = self.shared.state.set_run();
        if prev & FINISHED != 0 {
            bail!(
                BadState,
                "DPA thread `{}` has finished; create a new thread",
                self.shared.name
            );
        }
        if prev & RUN != 0 {
            bail!(
                BadState,
                "DPA thread `{}` is already running",
                self.shared.name
            );
        }
        if prev & PENDING != 0 {
            self.shared.state.clear_pending();
            self.dpa.shared.sched.notify(&self.shared);
        }
        Ok(())
    }

    /// Triggers the thread from the host, like a completion would (`doca_dpa_thread_notify`-style
    /// host helper for tests and examples).
    pub fn notify(&self) {
        self.dpa.shared.sched.notify(&self.shared);
    }

    /// Activations run so far.
    pub fn activations(&self) -> u64 {
        self.shared.activations.load(Ordering::Relaxed)
    }

    /// Whether the kernel called `thread_finish` (or the thread was stopped).
    pub fn is_finished(&self) -> bool {
        self.shared.state.get() & flags::FINISHED != 0
    }

    /// Whether the kernel faulted; see [`Dpa::error`] for why.
    pub fn is_faulted(&self) -> bool {
        self.shared.state.get() & flags::FAULTED != 0
    }

    /// `doca_dpa_thread_stop`: no further activations; waits for a running one to end.
    pub fn stop(&self) -> Result<()> {
        self.shared.state.finish();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.shared.state.is_active() {
            if std::time::Instant::now() > deadline {
                self.dpa.shared.sched.mark_stuck();
                bail!(
                    TimeOut,
                    "DPA thread `{}` did not end its activation within 10 s",
                    self.shared.name
                );
            }
            std::thread::yield_now();
        }
        Ok(())
    }

    pub(crate) fn shared(&self) -> &Arc<ThreadShared> {
        &self.shared
    }
}

impl Drop for DpaThread {
    fn drop(&mut self) {
        let _ = self.stop();
        // The stack is most of a thread's memory: give it back now, not when the DPA drops.
        self.shared.release_stack();
        let dpa = &self.dpa.shared;
        dpa.sched.unregister(&self.shared);
        dpa.threads.retire(self.shared.index, &dpa.sched.grace);
    }
}
