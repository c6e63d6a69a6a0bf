//! Scheduling DPA thread activations on the soft device's workers.
//!
//! Each DPA thread is bound to one worker (thread index modulo worker count), like a thread bound
//! to an EU. A notification puts the thread in its worker's run queue (a lock-free ring) unless it
//! is queued or running already, in which case it is marked pending and runs once more after the
//! current activation. Busy-poll workers spin on their queue; sleeping workers park and are
//! unparked by the notifier only when they sleep. The deterministic mode has no workers: the
//! host drives activations one at a time ([`Scheduler::step`]), choosing among ready threads with
//! a seeded generator, and records a trace.

use super::DpaShared;
use super::activation::{self, Ending};
use super::thread::{ThreadShared, flags};
use crate::error::{Result, bail};
use crate::ring::CompletionRing;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

/// How activations are run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedMode {
    /// Workers spin on their run queues: lowest latency, one core per worker.
    BusyPoll,
    /// Workers sleep when idle and are woken by notifications.
    Sleep,
    /// No workers: the host runs one ready activation at a time ([`Dpa::step`](super::Dpa::step)),
    /// chosen by a generator seeded with this value, so a run is reproducible.
    Deterministic {
        /// Seed of the choice among ready threads.
        seed: u64,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct SchedulerConfig {
    pub mode: SchedMode,
    pub workers: Option<usize>,
    pub pin: Vec<usize>,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            mode: SchedMode::BusyPoll,
            workers: None,
            pin: Vec::new(),
        }
    }
}

/// One activation, as recorded in deterministic mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    /// Index of the DPA thread.
    pub thread: usize,
    /// The thread's activation number, from 1.
    pub activation: u64,
    /// How it ended.
    pub ending: Ending,
}

/// Scheduler counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedStats {
    /// Activations run.
    pub activations: u64,
    /// Worker threads.
    pub workers: usize,
}

struct Worker {
    queue: CompletionRing,
    sleeping: AtomicBool,
    thread: OnceLock<std::thread::Thread>,
}

struct DeterministicState {
    ready: Vec<usize>,
    rng: u64,
    trace: Vec<TraceEvent>,
}

pub(crate) struct Scheduler {
    mode: SchedMode,
    pin: Vec<usize>,
    dpa: Weak<DpaShared>,
    workers: Box<[Worker]>,
    det: Option<Mutex<DeterministicState>>,
    shutdown: AtomicBool,
    joins: Mutex<Vec<JoinHandle<()>>>,
    activations: AtomicU64,
}

impl fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scheduler")
            .field("mode", &self.mode)
            .field("workers", &self.workers.len())
            .finish()
    }
}

impl Scheduler {
    pub(crate) fn new(cfg: SchedulerConfig, dpa: Weak<DpaShared>) -> Self {
        let deterministic = matches!(cfg.mode, SchedMode::Deterministic { .. });
        let n = if deterministic {
            0
        } else {
            cfg.workers.unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1))
            })
        };
        let workers = (0..n)
            .map(|_| Worker {
                queue: CompletionRing::new(crate::limits::DPA_MAX_THREADS),
                sleeping: AtomicBool::new(false),
                thread: OnceLock::new(),
            })
            .collect();
        let det = match cfg.mode {
            SchedMode::Deterministic { seed } => Some(Mutex::new(DeterministicState {
                ready: Vec::with_capacity(crate::limits::DPA_MAX_THREADS),
                // xorshift needs a non-zero state.
                rng: seed ^ 0x9e37_79b9_7f4a_7c15 | 1,
                trace: Vec::new(),
            })),
            _ => None,
        };
        Self {
            mode: cfg.mode,
            pin: cfg.pin,
            dpa,
            workers,
            det,
            shutdown: AtomicBool::new(false),
            joins: Mutex::new(Vec::new()),
            activations: AtomicU64::new(0),
        }
    }

    pub(crate) fn spawn_workers(&self) -> Result<()> {
        let mut joins = self.joins.lock().unwrap_or_else(|p| p.into_inner());
        for w in 0..self.workers.len() {
            let dpa = self.dpa.clone();
            let cpu = (!self.pin.is_empty()).then(|| self.pin[w % self.pin.len()]);
            let handle = std::thread::Builder::new()
                .name(format!("dpa-worker-{w}"))
                .spawn(move || worker_main(dpa, w, cpu));
            match handle {
                Ok(h) => joins.push(h),
                Err(e) => bail!(OperatingSystem, "cannot start DPA worker thread: {e}"),
            }
        }
        Ok(())
    }

    /// Puts a thread whose QUEUED bit the caller just set on its worker's run queue.
    #[inline]
    pub(crate) fn enqueue(&self, thread: &ThreadShared) {
        if let Some(det) = &self.det {
            det.lock()
                .unwrap_or_else(|p| p.into_inner())
                .ready
                .push(thread.index);
            return;
        }
        let worker = &self.workers[thread.index % self.workers.len()];
        // A thread is queued at most once and the queue holds every thread: this cannot fail.
        let pushed = worker
            .queue
            .try_push(&(thread.index as u32).to_ne_bytes(), 0);
        debug_assert!(pushed.is_ok());
        if self.mode == SchedMode::Sleep {
            fence(Ordering::SeqCst);
            if worker.sleeping.load(Ordering::Relaxed) {
                if let Some(t) = worker.thread.get() {
                    t.unpark();
                }
            }
        }
    }

    /// Runs one activation of `thread`, which the caller dequeued.
    pub(crate) fn run(&self, dpa: &Arc<DpaShared>, thread: &ThreadShared) {
        use flags::*;
        let mut s = thread.state.load(Ordering::Acquire);
        loop {
            if s & (FINISHED | FAULTED) != 0 {
                thread.state.fetch_and(!QUEUED, Ordering::AcqRel);
                return;
            }
            let next = (s | ACTIVE) & !(QUEUED | PENDING);
            match thread
                .state
                .compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break,
                Err(actual) => s = actual,
            }
        }

        let ending = activation::run_thread(dpa, thread);
        let number = thread.activations.fetch_add(1, Ordering::Relaxed) + 1;
        self.activations.fetch_add(1, Ordering::Relaxed);
        if let Some(det) = &self.det {
            det.lock()
                .unwrap_or_else(|p| p.into_inner())
                .trace
                .push(TraceEvent {
                    thread: thread.index,
                    activation: number,
                    ending,
                });
        }

        let end = match ending {
            Ending::Finish => FINISHED,
            Ending::Fault => FAULTED,
            Ending::Reschedule | Ending::Return => 0,
        };
        let mut s = thread.state.load(Ordering::Acquire);
        loop {
            let mut next = (s & !ACTIVE) | end;
            let requeue =
                next & PENDING != 0 && next & RUN != 0 && next & (FINISHED | FAULTED) == 0;
            if requeue {
                next = (next & !PENDING) | QUEUED;
            }
            match thread
                .state
                .compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    if requeue {
                        self.enqueue(thread);
                    }
                    return;
                }
                Err(actual) => s = actual,
            }
        }
    }

    /// Deterministic mode: runs one ready activation; false when none is ready (or not
    /// deterministic).
    pub(crate) fn step(&self) -> bool {
        let Some(det) = &self.det else { return false };
        let Some(dpa) = self.dpa.upgrade() else {
            return false;
        };
        let index = {
            let mut st = det.lock().unwrap_or_else(|p| p.into_inner());
            if st.ready.is_empty() {
                return false;
            }
            // xorshift64*: tiny, seedable, good enough to pick among a handful of threads.
            st.rng ^= st.rng >> 12;
            st.rng ^= st.rng << 25;
            st.rng ^= st.rng >> 27;
            let pick =
                (st.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) % st.ready.len() as u64) as usize;
            st.ready.swap_remove(pick)
        };
        if let Some(thread) = dpa.threads.get(index) {
            self.run(&dpa, thread);
        }
        true
    }

    pub(crate) fn is_deterministic(&self) -> bool {
        self.det.is_some()
    }

    pub(crate) fn trace(&self) -> Vec<TraceEvent> {
        self.det.as_ref().map_or_else(Vec::new, |d| {
            d.lock().unwrap_or_else(|p| p.into_inner()).trace.clone()
        })
    }

    pub(crate) fn stats(&self) -> SchedStats {
        SchedStats {
            activations: self.activations.load(Ordering::Relaxed),
            workers: self.workers.len(),
        }
    }

    /// Stops the workers; joins every worker but the calling one.
    pub(crate) fn shutdown(&self) {
        self.shutdown.store(true, Ordering::Release);
        for w in self.workers.iter() {
            if let Some(t) = w.thread.get() {
                t.unpark();
            }
        }
        let me = std::thread::current().id();
        let joins = std::mem::take(&mut *self.joins.lock().unwrap_or_else(|p| p.into_inner()));
        for j in joins {
            if j.thread().id() != me {
                let _ = j.join();
            }
        }
    }
}

fn pin_to(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it; sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Pins the calling thread to `cpu` (benchmarks use it for the host side too).
pub fn pin_current_thread(cpu: usize) {
    pin_to(cpu);
}

fn worker_main(dpa: Weak<DpaShared>, w: usize, cpu: Option<usize>) {
    if let Some(cpu) = cpu {
        pin_to(cpu);
    }
    // Hold the context only between idle periods, so dropping the last user handle frees it.
    while let Some(shared) = dpa.upgrade() {
        let sched = &shared.sched;
        let worker = &sched.workers[w];
        let _ = worker.thread.set(std::thread::current());
        let mut idle: u32 = 0;
        let mut buf = [0u8; 32];
        loop {
            if sched.shutdown.load(Ordering::Acquire) {
                return;
            }
            // SAFETY: each worker is the only reader of its own run queue.
            if unsafe { worker.queue.pop_into(&mut buf) }.is_some() {
                let index = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                if let Some(thread) = shared.threads.get(index) {
                    sched.run(&shared, thread);
                }
                idle = 0;
                continue;
            }
            idle += 1;
            match sched.mode {
                SchedMode::Sleep => {
                    worker.sleeping.store(true, Ordering::SeqCst);
                    fence(Ordering::SeqCst);
                    if !crate::sync_hint::has_unpolled(&worker.queue) {
                        std::thread::park_timeout(Duration::from_millis(20));
                    }
                    worker.sleeping.store(false, Ordering::Relaxed);
                    if idle > 4 {
                        break;
                    }
                }
                _ => {
                    std::hint::spin_loop();
                    if idle > 1 << 16 {
                        break;
                    }
                }
            }
        }
    }
}
