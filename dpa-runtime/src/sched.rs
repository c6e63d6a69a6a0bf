//! Scheduling DPA thread activations on the soft device's workers.
//!
//! Each DPA thread is bound to one worker (thread index modulo worker count), like a thread bound
//! to an EU. A notification puts the thread in its worker's run queue (a lock-free ring) unless it
//! is queued or running already, in which case it is marked pending and runs once more after the
//! current activation. Busy-poll workers spin on their queue; sleeping workers park and are
//! unparked by the notifier only when they sleep. The deterministic mode has no workers: the
//! host drives activations one at a time ([`Scheduler::step`]), choosing among ready threads with
//! a seeded generator, and records a trace (`deterministic`).

use super::DpaShared;
use super::activation::{self, Ending};
use super::deterministic::Deterministic;
use super::grace::Grace;
use super::parking::Parking;
use super::thread_shared::ThreadShared;
use super::thread_state::flags;
use crate::error::{Result, bail};
use crate::ring::CompletionRing;
use crate::sync::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

/// Idle scan passes between two quiescent-point reports of a busy-poll worker.
const QUIESCENT_EVERY: u32 = 256;

/// How long `doca_dpa_thread_stop`, and destroying a DPA context, wait for a kernel to end its
/// activation: a kernel still in it then never returns to the scheduler.
pub const STOP_WAIT: Duration = Duration::from_secs(5);

/// The same wait once a thread of the context is known to be stuck in an activation (its stop
/// already timed out): its worker will not leave, the others leave within microseconds.
const SHUTDOWN_WAIT_STUCK: Duration = Duration::from_millis(100);

pub use dpakit_abi::soft::{SchedMode, SchedStats, TraceEvent};

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

struct Worker {
    /// Busy-poll mode: the threads this worker scans (null: removed).
    threads: Box<[AtomicPtr<ThreadShared>]>,
    num_threads: AtomicUsize,
    /// Sleep mode: threads whose notification arrived.
    queue: CompletionRing,
    parking: Parking,
    thread: OnceLock<std::thread::Thread>,
}

pub struct Scheduler {
    mode: SchedMode,
    pin: Vec<usize>,
    dpa: Weak<DpaShared>,
    workers: Box<[Worker]>,
    det: Option<Deterministic>,
    shutdown: AtomicBool,
    /// A thread's stop timed out: one worker is stuck in a kernel.
    stuck: AtomicBool,
    joins: Mutex<Vec<JoinHandle<()>>>,
    /// When objects removed from the DPA's tables may be freed: the workers report their
    /// quiescent points here.
    pub grace: Grace,
    /// Serialises changes to the workers' scan lists (control path).
    registering: Mutex<()>,
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
                threads: (0..crate::limits::DPA_MAX_THREADS)
                    .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                    .collect(),
                num_threads: AtomicUsize::new(0),
                queue: CompletionRing::new(crate::limits::DPA_MAX_THREADS),
                parking: Parking::default(),
                thread: OnceLock::new(),
            })
            .collect();
        let det = match cfg.mode {
            SchedMode::Deterministic { seed } => Some(Deterministic::new(seed)),
            _ => None,
        };
        Self {
            mode: cfg.mode,
            pin: cfg.pin,
            dpa,
            workers,
            det,
            shutdown: AtomicBool::new(false),
            stuck: AtomicBool::new(false),
            joins: Mutex::new(Vec::new()),
            grace: Grace::new(n),
            registering: Mutex::new(()),
        }
    }

    pub(crate) fn spawn_workers(&self) -> Result<()> {
        let mut joins = self.joins.lock().unwrap_or_else(|p| p.into_inner());
        // Workers hold the context until shutdown, which the last handle to it starts.
        let Some(dpa) = self.dpa.upgrade() else {
            bail!(BadState, "the DPA context is gone");
        };
        for w in 0..self.workers.len() {
            let dpa = dpa.clone();
            let cpu = (!self.pin.is_empty()).then(|| self.pin[w % self.pin.len()]);
            let handle = std::thread::Builder::new()
                .name(format!("dpa{}-w{w}", dpa.id))
                .spawn(move || worker_main(dpa, w, cpu));
            match handle {
                Ok(h) => joins.push(h),
                Err(e) => bail!(OperatingSystem, "cannot start DPA worker thread: {e}"),
            }
        }
        Ok(())
    }

    pub(crate) fn mode(&self) -> SchedMode {
        self.mode
    }

    /// Busy-poll mode: adds a new thread to its worker's scan. The thread lives in the DPA's
    /// thread table until the DPA drops, after the workers stop.
    pub(crate) fn register(&self, thread: &Arc<ThreadShared>) {
        if self.mode != SchedMode::BusyPoll || self.workers.is_empty() {
            return;
        }
        let worker = &self.workers[thread.index % self.workers.len()];
        let ptr = Arc::as_ptr(thread).cast_mut();
        // Two threads created at once must not both append into one slot.
        let _registering = self.registering.lock().unwrap_or_else(|p| p.into_inner());
        // Reuse a removed slot if there is one, else append.
        let n = worker.num_threads.load(Ordering::Acquire);
        for slot in &worker.threads[..n] {
            if slot
                .compare_exchange(
                    std::ptr::null_mut(),
                    ptr,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
            {
                return;
            }
        }
        worker.threads[n].store(ptr, Ordering::Release);
        worker.num_threads.store(n + 1, Ordering::Release);
    }

    /// Busy-poll mode: removes a thread from its worker's scan.
    pub(crate) fn unregister(&self, thread: &Arc<ThreadShared>) {
        if self.workers.is_empty() {
            return;
        }
        let worker = &self.workers[thread.index % self.workers.len()];
        let ptr = Arc::as_ptr(thread).cast_mut();
        for slot in worker.threads.iter() {
            let _ = slot.compare_exchange(
                ptr,
                std::ptr::null_mut(),
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
    }

    /// A notification for `thread` arrived (a completion on an attached, armed context, or
    /// `thread_notify`).
    #[inline]
    pub(crate) fn notify(&self, thread: &ThreadShared) {
        if self.mode() == SchedMode::BusyPoll {
            // The worker's scan sees the flag.
            thread.state.notify_scanned();
        } else if thread.state.notify_queued() {
            self.enqueue(thread);
        }
    }

    /// Puts a thread whose QUEUED bit the caller just set on its worker's run queue.
    #[inline]
    pub(crate) fn enqueue(&self, thread: &ThreadShared) {
        if let Some(det) = &self.det {
            det.add(thread.index);
            return;
        }
        let worker = &self.workers[thread.index % self.workers.len()];
        // A thread is queued at most once and the queue holds every thread: this cannot fail.
        let pushed = worker
            .queue
            .try_push(&(thread.index as u32).to_ne_bytes(), 0);
        debug_assert!(pushed.is_ok());
        if self.mode == SchedMode::Sleep && worker.parking.wake_needed() {
            if let Some(t) = worker.thread.get() {
                t.unpark();
            }
        }
    }

    /// Runs one activation of `thread`, which the caller dequeued.
    pub(crate) fn run(&self, dpa: &Arc<DpaShared>, thread: &ThreadShared) {
        use flags::*;
        if !thread.state.begin_activation() {
            return;
        }

        thread
            .started_at
            .store(super::thread_shared::coarse_now(), Ordering::Relaxed);
        let ending = activation::run_thread(dpa, thread);
        // Only the running worker writes the count: no locked instruction needed.
        let number = thread.activations.load(Ordering::Relaxed) + 1;
        thread.activations.store(number, Ordering::Relaxed);
        if let Some(det) = &self.det {
            det.record(TraceEvent {
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
        if thread
            .state
            .end_activation(end, self.mode != SchedMode::BusyPoll)
        {
            self.enqueue(thread);
        }
    }

    /// Deterministic mode: runs as many activations as are ready now, each chosen by the seeded
    /// generator; activations they make ready wait for the next round. Returns how many ran. A
    /// round is what one progress pass runs, so a kernel that keeps notifying itself cannot
    /// hold the host in one call.
    pub(crate) fn run_round(&self) -> usize {
        let Some(det) = &self.det else { return 0 };
        // The threads ready now, not the ones their activations ready: a round stays bounded.
        let Some(mut round) = det.take_ready() else {
            return 0;
        };
        let Some(dpa) = self.dpa.upgrade() else {
            return 0;
        };
        // The host thread reads the tables (and runs the activations) as a reader.
        let _reading = self.grace.host();
        let mut ran = 0;
        while let Some(index) = round.pick(det) {
            if let Some(thread) = dpa.threads.get(index) {
                self.run(&dpa, thread);
            }
            ran += 1;
        }
        ran
    }

    /// Deterministic mode: runs one ready activation; false when none is ready (or not
    /// deterministic).
    pub(crate) fn step(&self) -> bool {
        let Some(det) = &self.det else { return false };
        let Some(dpa) = self.dpa.upgrade() else {
            return false;
        };
        let _reading = self.grace.host();
        self.step_with(det, &dpa)
    }

    /// One step of the deterministic mode, the caller holding the DPA and reading as the host.
    fn step_with(&self, det: &Deterministic, dpa: &Arc<DpaShared>) -> bool {
        let Some(index) = det.pick() else {
            return false;
        };
        if let Some(thread) = dpa.threads.get(index) {
            self.run(dpa, thread);
        }
        true
    }

    pub fn is_deterministic(&self) -> bool {
        self.det.is_some()
    }

    pub(crate) fn trace(&self) -> Vec<TraceEvent> {
        self.det
            .as_ref()
            .map_or_else(Vec::new, Deterministic::trace)
    }

    pub(crate) fn stats(&self) -> SchedStats {
        let dpa = self.dpa.upgrade();
        let _reading = self.grace.host();
        let threads = dpa.as_ref().map(|d| &d.threads);
        SchedStats {
            activations: threads.map_or(0, |t| t.sum(|th| th.activations.load(Ordering::Relaxed))),
            workers: self.workers.len(),
        }
    }

    /// A thread's stop timed out: its kernel holds a worker, which destroying the context
    /// will not wait for again.
    pub(crate) fn mark_stuck(&self) {
        self.stuck.store(true, Ordering::Release);
    }

    /// Stops the workers; joins every worker but the calling one.
    pub(crate) fn shutdown(&self) {
        self.shutdown.store(true, Ordering::Release);
        for w in self.workers.iter() {
            if let Some(t) = w.thread.get() {
                t.unpark();
            }
        }
        // The calling thread by its pthread id: `thread::current()` would give the main thread
        // a handle that lives in its TLS for good (a leak checker's "possibly lost").
        // SAFETY: pthread_self cannot fail.
        let me = unsafe { libc::pthread_self() };
        let joins = std::mem::take(&mut *self.joins.lock().unwrap_or_else(|p| p.into_inner()));
        // A worker inside a kernel that never ends (an endless loop) cannot be stopped, as a
        // hung DPA cannot: after a bound, leave it running detached rather than hang here.
        let wait = if self.stuck.load(Ordering::Acquire) {
            SHUTDOWN_WAIT_STUCK
        } else {
            STOP_WAIT
        };
        let deadline = std::time::Instant::now() + wait;
        for j in joins {
            if std::os::unix::thread::JoinHandleExt::as_pthread_t(&j) == me {
                continue;
            }
            if wait_until(deadline, || j.is_finished()) {
                let _ = j.join();
            } else {
                eprintln!(
                    "dpakit soft device: DPA worker `{}` is still inside a kernel activation \
                     {wait:?} after its context was destroyed; left running",
                    j.thread().name().unwrap_or("?"),
                );
            }
        }
    }
}

/// Waits until `done()` holds or `deadline` passes; whether it held. For a kernel to end its
/// activation: that usually takes microseconds (yielding), a long one is slept on.
pub(crate) fn wait_until(deadline: std::time::Instant, mut done: impl FnMut() -> bool) -> bool {
    let mut polls = 0u32;
    while !done() {
        if std::time::Instant::now() >= deadline {
            return false;
        }
        if polls < 1_000 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
        polls += 1;
    }
    true
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

fn worker_main(shared: Arc<DpaShared>, w: usize, cpu: Option<usize>) {
    if let Some(cpu) = cpu {
        pin_to(cpu);
    }
    let sched = &shared.sched;
    let worker = &sched.workers[w];
    let _ = worker.thread.set(std::thread::current());
    sched.grace.online(w);
    match sched.mode {
        SchedMode::BusyPoll => scan(&shared, worker, w),
        _ => sleep_between(&shared, worker, w),
    }
    sched.grace.offline(w);
}

/// Busy-poll mode: scan this worker's threads for a pending notification or an armed attached
/// context with a completion waiting, and run them. Producers never touch the worker.
fn scan(shared: &Arc<DpaShared>, worker: &Worker, w: usize) {
    let sched = &shared.sched;
    let mut idle_passes: u32 = 0;
    loop {
        // Nothing read in earlier passes is held any more. Reported after each pass that ran
        // an activation and every QUIESCENT_EVERY idle passes: the report is a locked
        // instruction, which an idle pass, the worker's reaction time, should not pay each time.
        if idle_passes % QUIESCENT_EVERY == 0 {
            sched.grace.quiescent(w);
        }
        if sched.shutdown.load(Ordering::Acquire) {
            return;
        }
        let mut ran = false;
        for slot in &worker.threads[..worker.num_threads.load(Ordering::Acquire)] {
            let ptr = slot.load(Ordering::Acquire);
            if ptr.is_null() {
                continue;
            }
            // SAFETY: registered threads live in the DPA's thread table until the DPA drops,
            // and `shared` keeps the DPA alive.
            let thread = unsafe { &*ptr };
            if thread.triggered() {
                sched.run(shared, thread);
                ran = true;
            }
        }
        if ran {
            idle_passes = 0;
        } else {
            idle_passes = idle_passes.wrapping_add(1);
            std::hint::spin_loop();
        }
    }
}

/// Sleep mode: run queued threads; park when the queue is empty until a notifier unparks us.
fn sleep_between(shared: &Arc<DpaShared>, worker: &Worker, w: usize) {
    let sched = &shared.sched;
    let mut buf = [0u8; 32];
    loop {
        sched.grace.quiescent(w);
        if sched.shutdown.load(Ordering::Acquire) {
            return;
        }
        // SAFETY: each worker is the only reader of its own run queue.
        if unsafe { worker.queue.pop_into(&mut buf) }.is_some() {
            let index = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
            if let Some(thread) = shared.threads.get(index) {
                sched.run(shared, thread);
            }
            continue;
        }
        worker.parking.sleep(
            || worker.queue.has_ready(),
            || {
                // Asleep, the worker holds nothing: removals need not wait for it.
                sched.grace.offline(w);
                std::thread::park_timeout(Duration::from_millis(20));
                sched.grace.online(w);
            },
        );
    }
}
