//! What the scheduler and workers know about a DPA thread: its kernel, argument, state, stack
//! and the completion contexts its busy-poll scan checks. Below the scheduler and the
//! completion contexts, which both name it.

use super::isa_mode::counters::Counters;
use super::thread_state::ThreadState;
use super::trigger::Trigger;
use crate::error::{Result, bail};
use crate::ring::CompletionRing;
use crate::sync::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use corosensei::stack::DefaultStack;
use dpakit_abi::ThreadEntry;
use std::cell::UnsafeCell;
use std::fmt;
use std::time::Duration;

/// Nanoseconds of the coarse monotonic clock (a few milliseconds' resolution, a few nanoseconds
/// to read): when activations begin, for how long a kernel has been running.
pub(crate) fn coarse_now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill; the clock exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Completion contexts one thread can have attached (each one a trigger the busy-poll scan
/// checks), the same in every scheduling mode.
pub(crate) const MAX_SOURCES: usize = crate::limits::DPA_THREAD_MAX_COMPLETIONS;

/// One attached completion context, as the busy-poll scan sees it.
#[derive(Debug, Default)]
struct Source {
    trigger: AtomicPtr<Trigger>,
    ring: AtomicPtr<CompletionRing>,
}

/// What the scheduler and workers know about a thread.
///
/// On cache lines of its own: a worker writes `state` and `activations` on every activation,
/// and a neighbouring allocation the CPU side writes per message would bounce with them.
#[repr(align(128))]
pub struct ThreadShared {
    pub index: usize,
    pub name: &'static str,
    pub(crate) entry: ThreadEntry,
    /// ISA mode: the kernel's address in the DPA image (0 in native mode).
    pub(crate) isa_entry: u64,
    /// ISA mode: what the interpreter counted for this thread.
    pub(crate) isa_counters: Counters,
    pub(crate) arg: u64,
    pub local_storage: AtomicU64,
    pub(crate) state: ThreadState,
    pub(crate) activations: AtomicU64,
    /// When the running (or last) activation began ([`coarse_now`]): one store per activation,
    /// read only to say how long a kernel has been running.
    pub(crate) started_at: AtomicU64,
    /// A stop timed out: the worker is left inside this thread's activation, which nothing
    /// waits for again.
    abandoned: AtomicBool,
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
    pub(crate) fn new(
        index: usize,
        name: &'static str,
        entry: ThreadEntry,
        isa_entry: u64,
        arg: u64,
        local_storage: u64,
        stack: Option<DefaultStack>,
    ) -> Self {
        Self {
            index,
            name,
            entry,
            isa_entry,
            isa_counters: Counters::default(),
            arg,
            local_storage: AtomicU64::new(local_storage),
            state: ThreadState::new(),
            activations: AtomicU64::new(0),
            started_at: AtomicU64::new(0),
            abandoned: AtomicBool::new(false),
            sources: Default::default(),
            num_sources: AtomicUsize::new(0),
            attach: std::sync::Mutex::new(()),
            stack: UnsafeCell::new(stack),
        }
    }

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
    pub(crate) fn release_stack(&self) {
        if self.state.claim_finished() {
            // SAFETY: this call holds ACTIVE; FINISHED keeps every worker from taking it.
            drop(unsafe { self.take_stack() });
            self.state.release();
        }
    }

    /// How long the running activation has been running; `None` between activations.
    pub(crate) fn running_for(&self) -> Option<Duration> {
        if !self.state.is_active() {
            return None;
        }
        let since = self.started_at.load(Ordering::Relaxed);
        Some(Duration::from_nanos(coarse_now().saturating_sub(since)))
    }

    /// What the thread is doing, for diagnostics: `DPA thread 2 of DPA context 1 (kernel
    /// `echo`): …`.
    pub(crate) fn describe(&self, dpa: u16) -> String {
        use super::thread_state::flags::*;
        let who = format!(
            "DPA thread {} of DPA context {dpa} (kernel `{}`)",
            self.index,
            super::symbol::demangle(self.name)
        );
        let activations = self.activations.load(Ordering::Relaxed);
        let state = self.state.get();
        if let Some(running) = self.running_for() {
            let stuck = if self.is_abandoned() {
                "; its worker was abandoned when doca_dpa_thread_stop timed out"
            } else {
                ""
            };
            return format!(
                "{who}: its current activation (number {}) has run for {:.1} s without \
                 returning to the scheduler{stuck}",
                activations + 1,
                running.as_secs_f64()
            );
        }
        let what = if state & FAULTED != 0 {
            "faulted (the DPA context's error says why)"
        } else if state & FINISHED != 0 {
            "finished or stopped"
        } else if state & RUN == 0 {
            "not run yet (doca_dpa_thread_run)"
        } else {
            "idle, waiting for a notification"
        };
        format!("{who}: {what}, after {activations} activation(s)")
    }

    /// Marks the thread's worker as left inside its activation.
    pub(crate) fn abandon(&self) {
        self.abandoned.store(true, Ordering::Release);
    }

    /// Whether a stop timed out on this thread.
    pub(crate) fn is_abandoned(&self) -> bool {
        self.abandoned.load(Ordering::Acquire)
    }

    /// Whether `doca_dpa_thread_stop` was called (or the kernel finished): a running activation
    /// should end.
    pub(crate) fn stop_requested(&self) -> bool {
        self.state.get() & super::thread_state::flags::FINISHED != 0
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
    pub(crate) fn add_source(&self, trigger: &Trigger, ring: &CompletionRing) -> Result<()> {
        let _attaching = self.attach.lock().unwrap_or_else(|p| p.into_inner());
        let used = self.num_sources.load(Ordering::Acquire);
        // A slot a destroyed context left, else the next one.
        let free = self.sources[..used]
            .iter()
            .position(|s| s.trigger.load(Ordering::Acquire).is_null())
            .unwrap_or(used);
        let Some(source) = self.sources.get(free) else {
            bail!(
                NoMemory,
                "DPA thread `{}` already has {MAX_SOURCES} completion contexts attached, the most \
                 a thread takes (dpakit_soft_dpa_get_max_completions_per_thread)",
                self.name
            );
        };
        source.ring.store(
            (ring as *const CompletionRing).cast_mut(),
            Ordering::Relaxed,
        );
        source
            .trigger
            .store((trigger as *const Trigger).cast_mut(), Ordering::Release);
        if free == used {
            self.num_sources.store(used + 1, Ordering::Release);
        }
        Ok(())
    }

    /// Detaches a completion context from the busy-poll scan (it is being destroyed). Its slot
    /// stays empty: a scan that read the pointer before is covered by the grace period.
    pub(crate) fn remove_source(&self, trigger: &Trigger) {
        let _attaching = self.attach.lock().unwrap_or_else(|p| p.into_inner());
        let target = (trigger as *const Trigger).cast_mut();
        for source in &self.sources[..self.num_sources.load(Ordering::Acquire)] {
            if source.trigger.load(Ordering::Acquire) == target {
                source
                    .trigger
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
            let trigger = source.trigger.load(Ordering::Acquire);
            if trigger.is_null() {
                continue;
            }
            let ring = source.ring.load(Ordering::Relaxed);
            // SAFETY: see add_source: both live in the DPA's handle table until their context
            // is destroyed, which clears the notifier first and frees them only after this
            // worker's next quiescent point.
            let (trigger, ring) = unsafe { (&*trigger, &*ring) };
            hit |= trigger.take_if(|| ring.has_ready());
        }
        hit
    }
}
