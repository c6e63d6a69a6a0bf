//! DPA threads (`doca_dpa_thread`): a kernel, its `u64` argument and local storage, and the
//! state the scheduler uses to trigger it.

use super::Dpa;
use super::completion::Notifier;
use super::sched::SchedMode;
use super::sched::Scheduler;
use super::thread_state::ThreadState;
use crate::error::{Result, bail};
use crate::ring::CompletionRing;
use crate::sync::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use corosensei::stack::DefaultStack;
use dpakit_abi::{ThreadEntry, ThreadKernel};
use std::cell::UnsafeCell;
use std::fmt;
use std::sync::Arc;

/// Stack of one DPA thread on the soft device. Generous for debug builds of kernels; pages are
/// only touched as used.
const STACK_SIZE: usize = 256 * 1024;

pub(crate) use super::thread_state::flags;

/// Completion contexts one thread can have attached (each one a trigger the busy-poll scan
/// checks), the same in every scheduling mode.
pub(crate) const MAX_SOURCES: usize = crate::limits::DPA_THREAD_MAX_COMPLETIONS;

/// One attached completion context, as the busy-poll scan sees it.
#[derive(Debug, Default)]
struct Source {
    notifier: AtomicPtr<Notifier>,
    ring: AtomicPtr<CompletionRing>,
}

/// What the scheduler and workers know about a thread.
///
/// On cache lines of its own: a worker writes `state` and `activations` on every activation,
/// and a neighbouring allocation the CPU side writes per message would bounce with them.
#[repr(align(128))]
pub(crate) struct ThreadShared {
    pub index: usize,
    pub name: &'static str,
    pub entry: ThreadEntry,
    /// ISA mode: the kernel's address in the DPA image (0 in native mode).
    pub isa_entry: u64,
    /// ISA mode: what the interpreter counted for this thread.
    pub isa_counters: super::isa_mode::Counters,
    pub arg: u64,
    pub local_storage: AtomicU64,
    pub state: ThreadState,
    pub activations: AtomicU64,
    sources: [Source; MAX_SOURCES],
    num_sources: AtomicUsize,
    /// Serialises attaching and detaching (control path only).
    attach: std::sync::Mutex<()>,
    /// Used only by the worker that holds the ACTIVE bit.
    stack: UnsafeCell<Option<DefaultStack>>,
}

// SAFETY: `stack` is only touched by the one worker that set ACTIVE (an atomic handoff), so the
// cell is never accessed from two threads at once; every other field is atomic or immutable.
unsafe impl Sync for ThreadShared {}
// SAFETY: as above; the stack itself is plain memory.
unsafe impl Send for ThreadShared {}

impl fmt::Debug for ThreadShared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpaThread")
            .field("index", &self.index)
            .field("kernel", &self.name)
            .field("state", &self.state.get())
            .finish()
    }
}

impl ThreadShared {
    /// Takes the thread's stack for an activation.
    ///
    /// # Safety
    /// The caller holds the ACTIVE bit.
    pub(crate) unsafe fn take_stack(&self) -> Option<DefaultStack> {
        // SAFETY: exclusive by the caller's contract.
        unsafe { (*self.stack.get()).take() }
    }

    /// Frees the stack of a thread that will never run again (FINISHED, not ACTIVE). Holds the
    /// ACTIVE bit meanwhile, so no worker can start an activation on it; a thread whose kernel
    /// is still running keeps its stack.
    fn release_stack(&self) {
        if self.state.claim_finished() {
            // SAFETY: this call holds ACTIVE; FINISHED keeps every worker from taking it.
            drop(unsafe { self.take_stack() });
            self.state.release();
        }
    }

    /// Gives the stack back after an activation.
    ///
    /// # Safety
    /// The caller holds the ACTIVE bit.
    pub(crate) unsafe fn put_stack(&self, stack: DefaultStack) {
        // SAFETY: exclusive by the caller's contract.
        unsafe { *self.stack.get() = Some(stack) }
    }

    /// Attaches a completion context (in every mode: the limit is the same everywhere; only
    /// busy-poll workers scan the list). NO_MEMORY past [`MAX_SOURCES`] attached at once.
    ///
    /// The pointers stay valid while attached: the context lives in its DPA's handle table,
    /// and when it is destroyed it detaches first ([`remove_source`](Self::remove_source)) and
    /// is freed only after a grace period.
    pub(crate) fn add_source(&self, notifier: &Notifier, ring: &CompletionRing) -> Result<()> {
        let _attaching = self.attach.lock().unwrap_or_else(|p| p.into_inner());
        let used = self.num_sources.load(Ordering::Acquire);
        // A slot a destroyed context left, else the next one.
        let free = self.sources[..used]
            .iter()
            .position(|s| s.notifier.load(Ordering::Acquire).is_null())
            .unwrap_or(used);
        let Some(source) = self.sources.get(free) else {
            bail!(
                NoMemory,
                "DPA thread `{}` already has {MAX_SOURCES} completion contexts attached, the most                  a thread takes (dpakit_soft_dpa_get_max_completions_per_thread)",
                self.name
            );
        };
        source.ring.store(
            (ring as *const CompletionRing).cast_mut(),
            Ordering::Relaxed,
        );
        source
            .notifier
            .store((notifier as *const Notifier).cast_mut(), Ordering::Release);
        if free == used {
            self.num_sources.store(used + 1, Ordering::Release);
        }
        Ok(())
    }

    /// Detaches a completion context from the busy-poll scan (it is being destroyed). Its slot
    /// stays empty: a scan that read the pointer before is covered by the grace period.
    pub(crate) fn remove_source(&self, notifier: &Notifier) {
        let _attaching = self.attach.lock().unwrap_or_else(|p| p.into_inner());
        let target = (notifier as *const Notifier).cast_mut();
        for source in &self.sources[..self.num_sources.load(Ordering::Acquire)] {
            if source.notifier.load(Ordering::Acquire) == target {
                source
                    .notifier
                    .store(std::ptr::null_mut(), Ordering::Release);
            }
        }
    }

    /// The busy-poll scan: whether the thread should run now (a pending notification, or an
    /// armed attached context with a completion waiting). Consumes what triggered it. Called
    /// only by the thread's worker.
    #[inline]
    pub(crate) fn triggered(&self) -> bool {
        let Some(mut hit) = self.state.take_pending() else {
            return false;
        };
        for source in &self.sources[..self.num_sources.load(Ordering::Acquire)] {
            let notifier = source.notifier.load(Ordering::Acquire);
            if notifier.is_null() {
                continue;
            }
            let ring = source.ring.load(Ordering::Relaxed);
            // SAFETY: see add_source: both live in the DPA's handle table until their context
            // is destroyed, which clears the notifier first and frees them only after this
            // worker's next quiescent point.
            let (notifier, ring) = unsafe { (&*notifier, &*ring) };
            hit |= notifier.take_if(|| ring.has_ready());
        }
        hit
    }

    /// A notification arrived (a completion on an attached, armed context, or `thread_notify`).
    #[inline]
    pub(crate) fn notify(&self, sched: &Scheduler) {
        if sched.mode() == SchedMode::BusyPoll {
            // The worker's scan sees the flag.
            self.state.notify_scanned();
        } else if self.state.notify_queued() {
            sched.enqueue(self);
        }
    }
}

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
            Arc::new(ThreadShared {
                index,
                name: self.name,
                entry: self.entry,
                isa_entry,
                isa_counters: Default::default(),
                arg: self.arg,
                local_storage: AtomicU64::new(self.local_storage),
                state: ThreadState::new(),
                activations: AtomicU64::new(0),
                sources: Default::default(),
                num_sources: AtomicUsize::new(0),
                attach: std::sync::Mutex::new(()),
                stack: UnsafeCell::new(stack.take()),
            })
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
            self.shared.notify(&self.dpa.shared.sched);
        }
        Ok(())
    }

    /// Triggers the thread from the host, like a completion would (`doca_dpa_thread_notify`-style
    /// host helper for tests and examples).
    pub fn notify(&self) {
        self.shared.notify(&self.dpa.shared.sched);
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
