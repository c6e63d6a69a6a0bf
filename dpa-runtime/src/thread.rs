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
        if kernel.num_args > 1 {
            crate::error::bail!(
                InvalidValue,
                "kernel `{}` takes {} parameters: a DPA thread passes its kernel one (the \
                 uint64_t of doca_dpa_thread_set_func_arg); launch it with \
                 doca_dpa_kernel_launch_update_set instead",
                kernel.name,
                kernel.num_args
            );
        }
        // SAFETY: the app declares the function at `kernel.entry` (non-null) as a thread kernel
        // taking at most one parameter: called as `void (uint64_t)`, a kernel of none ignores
        // the argument register, as on the device.
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

    /// `doca_dpa_thread_stop`: no further activations; waits for a running one to end, at most
    /// [`STOP_WAIT`](super::sched::STOP_WAIT). A kernel still in its activation then never
    /// returns to the scheduler (an endless loop in code compiled for the host, which nothing
    /// can interrupt): `TIME_OUT` naming it, its worker is abandoned — left in the activation,
    /// with the thread's stack — and the DPA context fails. Later stops, and destroying the
    /// thread and the context, do not wait for it again.
    pub fn stop(&self) -> Result<()> {
        let thread = &self.shared;
        thread.state.finish();
        if thread.is_abandoned() && thread.state.is_active() {
            return Err(self.stuck());
        }
        let deadline = std::time::Instant::now() + super::sched::STOP_WAIT;
        if !super::sched::wait_until(deadline, || !thread.state.is_active()) {
            return Err(self.abandon());
        }
        Ok(())
    }

    /// Whether a stop of this thread timed out and its worker was abandoned.
    pub fn is_abandoned(&self) -> bool {
        self.shared.is_abandoned()
    }

    /// What the thread is doing: its kernel, and how long its current activation has run.
    pub fn describe(&self) -> String {
        self.shared.describe(self.dpa.shared.id)
    }

    /// Gives up on a kernel that does not end its activation: the context fails, naming it.
    fn abandon(&self) -> crate::error::Error {
        let dpa = &self.dpa.shared;
        self.shared.abandon();
        dpa.sched.mark_stuck();
        let e = self.stuck();
        dpa.set_fatal(e.clone());
        e
    }

    fn stuck(&self) -> crate::error::Error {
        crate::error::err(
            crate::error::ErrorCode::TimeOut,
            format!(
                "{}. doca_dpa_thread_stop waited {:?} for it to end; a kernel must return to the \
                 scheduler (return, thread_reschedule or thread_finish), and the soft device \
                 cannot interrupt one compiled for the host: its worker is left running with the \
                 thread's stack, the DPA context has failed, and nothing waits for this kernel \
                 again (destroy the thread and the context)",
                self.describe(),
                super::sched::STOP_WAIT
            ),
        )
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
        let last = self.shared.view(dpa.isa.is_some(), true);
        dpa.threads.retire(self.shared.index, &dpa.sched.grace);
        dpa.thread_ended(last);
    }
}
