//! Kernel launches (`doca_dpa_kernel_launch_update_set` / `_add`): a kernel run once on N
//! threads, started when a sync event reaches a threshold, reporting its end on another.
//!
//! Launches queue on their DPA context and start in the order they were made: a launch waiting
//! for its event holds the ones behind it, as a queue of work on the device does. One launcher
//! thread per context (started with its first launch) takes them in turn. Each thread of a
//! launch runs as an activation on a host thread of its own, so the threads of one launch run
//! together and may wait for each other, while the launcher keeps the time (the kernel max run
//! time). When every thread has returned, the completion event is set to, or increased by, its
//! count. A thread that faults fails the context, and the completion event is not touched, as on
//! the device.

use super::DpaShared;
use super::activation::{self, Ending};
use super::app::AppKernel;
use super::current::Rank;
use crate::error::{ErrorCode, Result, bail, err};
use crate::sync::Ordering;
use crate::sync::plain::AtomicBool;
use corosensei::stack::DefaultStack;
use dpakit_abi::kernel::KERNEL_MAX_ARGS;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Largest `wait_threshold` a launch may wait for (DOCA's rule: 0 to 254).
pub const MAX_WAIT_THRESHOLD: u64 = 254;

/// Stack of each launched thread's activation.
const STACK_SIZE: usize = 256 * 1024;

/// Longest sleep between two looks at a launch's wait event: a launch waiting for the host
/// costs no CPU, and starts within this of the event reaching its threshold.
const MAX_POLL_SLEEP: Duration = Duration::from_millis(1);

/// How a finished launch updates its completion event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionUpdate {
    /// `doca_dpa_kernel_launch_update_set`: the event is set to the count.
    Set,
    /// `doca_dpa_kernel_launch_update_add`: the count is added to the event.
    Add,
}

/// A sync event's counter as a launch uses it: waited for, then set or increased (the layer
/// above's sync event).
pub trait LaunchEvent: Send + Sync {
    /// The current value.
    fn get(&self) -> u64;
    /// Sets the value.
    fn set(&self, value: u64);
    /// Adds to the value (wrapping); returns the value before.
    fn add(&self, value: u64) -> u64;
}

/// One kernel launch, as the host asked for it.
pub struct Launch {
    pub(crate) kernel: AppKernel,
    /// The kernel's entry in the DPA image (ISA mode), else 0.
    pub(crate) isa_entry: u64,
    pub(crate) args: [u64; KERNEL_MAX_ARGS],
    pub(crate) threads: u32,
    pub(crate) wait: Option<(Arc<dyn LaunchEvent>, u64)>,
    pub(crate) completion: Option<(Arc<dyn LaunchEvent>, u64, CompletionUpdate)>,
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("kernel", &self.kernel.name)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Queue {
    launches: VecDeque<Launch>,
    /// Set once the context stops: queued launches are dropped, the running one is abandoned.
    stopping: bool,
}

/// A DPA context's launch queue and the thread that runs it.
pub(crate) struct Launcher {
    queue: Mutex<Queue>,
    wake: Condvar,
    stop: Arc<AtomicBool>,
    runner: Mutex<Option<JoinHandle<()>>>,
    dpa: Weak<DpaShared>,
    max_run_time: Duration,
}

impl Launcher {
    pub(crate) fn new(dpa: Weak<DpaShared>, max_run_time: Duration) -> Self {
        Self {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            stop: Arc::new(AtomicBool::new(false)),
            runner: Mutex::new(None),
            dpa,
            max_run_time,
        }
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `launch`; starts the launcher thread with the context's first launch.
    pub(crate) fn submit(&self, launch: Launch) -> Result<()> {
        {
            let mut q = self.queue();
            if q.stopping {
                bail!(
                    BadState,
                    "the DPA context is stopping: no kernel is launched"
                );
            }
            if q.launches.len() >= crate::limits::DPA_MAX_QUEUED_LAUNCHES {
                bail!(
                    Again,
                    "{} kernel launches are queued on this DPA context, the most it holds \
                     (launches start in order: the first waits for its event); launch again \
                     once some have run",
                    q.launches.len()
                );
            }
            q.launches.push_back(launch);
        }
        let mut runner = self.runner.lock().unwrap_or_else(|p| p.into_inner());
        if runner.is_none() {
            let dpa = self.dpa.clone();
            let spawned = std::thread::Builder::new()
                .name("dpakit-dpa-launcher".into())
                .spawn(move || run_queue(&dpa));
            match spawned {
                Ok(handle) => *runner = Some(handle),
                Err(e) => {
                    self.queue().launches.pop_back();
                    return Err(err(
                        ErrorCode::Driver,
                        format!("cannot start the DPA context's launcher thread: {e}"),
                    ));
                }
            }
        }
        self.wake.notify_one();
        Ok(())
    }

    /// How long a launched kernel may run.
    pub(crate) fn max_run_time(&self) -> Duration {
        self.max_run_time
    }

    /// Stops the launcher: queued launches are dropped; a running launch is waited for up to
    /// `wait`, then abandoned (a kernel that never returns cannot be taken back).
    pub(crate) fn shutdown(&self, wait: Duration) {
        {
            let mut q = self.queue();
            q.stopping = true;
            q.launches.clear();
        }
        self.stop.store(true, Ordering::Release);
        self.wake.notify_all();
        let Some(runner) = self.runner.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return;
        };
        // By pthread id: `thread::current()` would give the main thread a handle that lives in
        // its TLS for good (a leak checker's "possibly lost").
        use std::os::unix::thread::JoinHandleExt;
        // SAFETY: pthread_self cannot fail; pthread_equal compares two ids.
        if unsafe { libc::pthread_equal(runner.as_pthread_t(), libc::pthread_self()) } != 0 {
            return; // the last handle went on the launcher thread itself
        }
        if super::sched::wait_until(Instant::now() + wait, || runner.is_finished()) {
            let _ = runner.join();
        } else {
            eprintln!(
                "dpakit soft device: a launched kernel did not return within {wait:?} of its DPA \
                 context stopping; it is left running"
            );
        }
    }
}

impl super::Dpa {
    /// `doca_dpa_kernel_launch_update_set` / `_add` by address (`doca_dpa_func_t *`): queues
    /// thread kernel `func` of the app to run once on `threads` threads with `args` (exactly as
    /// many as it takes), once `wait` (an event and a threshold of 0 to 254) is reached; when
    /// every thread has returned, `completion` is set to or increased by its count.
    pub fn kernel_launch(
        &self,
        func: usize,
        args: &[u64],
        threads: u32,
        wait: Option<(Arc<dyn LaunchEvent>, u64)>,
        completion: Option<(Arc<dyn LaunchEvent>, u64, CompletionUpdate)>,
    ) -> Result<()> {
        self.shared.require_running("launch a kernel")?;
        let kernel = *self.shared.app.require(func, super::KernelKind::Thread)?;
        kernel.require_args(args.len())?;
        check(&kernel, threads, wait.as_ref().map(|w| w.1))?;
        let isa_entry = match &self.shared.isa {
            Some(program) => program.entry(kernel.name)?,
            None => 0,
        };
        let mut a = [0u64; dpakit_abi::kernel::KERNEL_MAX_ARGS];
        a[..args.len()].copy_from_slice(args);
        self.shared.launcher.submit(Launch {
            kernel,
            isa_entry,
            args: a,
            threads,
            wait,
            completion,
        })
    }

    /// `doca_dpa_get_max_threads_per_kernel`.
    pub fn max_threads_per_kernel(&self) -> u32 {
        crate::limits::DPA_MAX_THREADS_PER_KERNEL as u32
    }

    /// `doca_dpa_get_kernel_max_run_time`, in seconds (rounded up).
    pub fn kernel_max_run_time(&self) -> u64 {
        let t = self.shared.launcher.max_run_time();
        t.as_secs() + u64::from(t.subsec_nanos() > 0)
    }
}

/// The launcher thread: runs queued launches in order until the context stops
/// ([`Launcher::shutdown`], when its last handle goes).
fn run_queue(dpa: &Weak<DpaShared>) {
    while let Some(shared) = dpa.upgrade() {
        let launcher = &shared.launcher;
        let next = {
            let q = launcher.queue();
            // Nothing queued: sleep until a launch comes or the context stops.
            let mut q = launcher
                .wake
                .wait_while(q, |q| q.launches.is_empty() && !q.stopping)
                .unwrap_or_else(|p| p.into_inner());
            if q.stopping {
                return;
            }
            let open = q.launches.front().is_some_and(gate_open);
            if open { q.launches.pop_front() } else { None }
        };
        match next {
            Some(launch) if shared.check().is_ok() => run(&shared, launch),
            // The context failed: the launch is dropped, as the device runs nothing more.
            Some(_) => {}
            // The first launch's event has not reached its threshold yet.
            None => wait_a_little(),
        }
    }
}

/// Whether `launch` may start: its wait event (if any) has reached its threshold.
fn gate_open(launch: &Launch) -> bool {
    launch
        .wait
        .as_ref()
        .is_none_or(|(event, threshold)| event.get() >= *threshold)
}

thread_local! {
    /// The launcher thread's current sleep between looks at a wait event.
    static POLL_SLEEP: std::cell::Cell<Duration> =
        const { std::cell::Cell::new(Duration::from_micros(1)) };
}

/// Sleeps between looks at a wait event, longer each time up to [`MAX_POLL_SLEEP`].
fn wait_a_little() {
    let d = POLL_SLEEP.with(|s| {
        let d = s.get();
        s.set((d * 2).min(MAX_POLL_SLEEP));
        d
    });
    std::thread::sleep(d);
}

/// Runs every thread of `launch`, each on a host thread of its own while this one keeps the
/// time, then updates its completion event unless one failed.
fn run(dpa: &Arc<DpaShared>, launch: Launch) {
    POLL_SLEEP.with(|s| s.set(Duration::from_micros(1)));
    let launch = Arc::new(launch);
    let n = launch.threads;
    let (done_tx, done_rx) = std::sync::mpsc::channel::<bool>();
    for rank in 0..n {
        let (dpa2, launch2, done) = (dpa.clone(), launch.clone(), done_tx.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("dpakit-dpa-rank-{rank}"))
            .spawn(move || {
                let ok = run_rank(&dpa2, &launch2, rank);
                let _ = done.send(ok);
            });
        if let Err(e) = spawned {
            dpa.set_fatal(err(
                ErrorCode::Driver,
                format!(
                    "kernel `{}`: cannot start thread {rank} of its launch of {n}: {e}",
                    launch.kernel.name
                ),
            ));
            return;
        }
    }
    drop(done_tx);
    let started = Instant::now();
    let max = dpa.launcher.max_run_time;
    let mut ok = true;
    for finished in 0..n {
        match done_rx.recv_timeout(max.saturating_sub(started.elapsed())) {
            Ok(rank_ok) => ok &= rank_ok,
            Err(_) => {
                dpa.set_fatal(err(
                    ErrorCode::BadState,
                    format!(
                        "kernel `{}`: {} of the {n} threads of its launch still run after {max:?}, \
                         the kernel max run time (doca_dpa_get_kernel_max_run_time): the device \
                         kills such a kernel and the context fails",
                        launch.kernel.name,
                        n - finished,
                    ),
                ));
                return;
            }
        }
    }
    if !ok || dpa.check().is_err() {
        return;
    }
    if let Some((event, count, how)) = &launch.completion {
        match how {
            CompletionUpdate::Set => event.set(*count),
            CompletionUpdate::Add => {
                event.add(*count);
            }
        }
    }
}

/// Runs thread `rank` of `launch` to its end; whether it returned.
fn run_rank(dpa: &Arc<DpaShared>, launch: &Arc<Launch>, rank: u32) -> bool {
    let rank_info = Rank {
        rank,
        num_threads: launch.threads,
        stop: dpa.launcher.stop.clone(),
    };
    match run_launched(dpa, launch.clone(), rank_info) {
        Ok(ok) => ok,
        Err(e) => {
            dpa.set_fatal(e);
            false
        }
    }
}

/// Checks a launch's parameters against DOCA's rules; the thread count and threshold are the
/// caller's to pass as given.
pub(crate) fn check(kernel: &AppKernel, threads: u32, wait_threshold: Option<u64>) -> Result<()> {
    let max = crate::limits::DPA_MAX_THREADS_PER_KERNEL;
    if threads == 0 || threads as usize > max {
        bail!(
            InvalidValue,
            "num_threads is {threads}: a launch runs kernel `{}` on 1 to {max} threads \
             (doca_dpa_get_max_threads_per_kernel)",
            kernel.name
        );
    }
    if let Some(t) = wait_threshold.filter(|t| *t > MAX_WAIT_THRESHOLD) {
        bail!(
            InvalidValue,
            "wait_threshold is {t}: a launch waits for a threshold of 0 to {MAX_WAIT_THRESHOLD}"
        );
    }
    Ok(())
}

/// The kernel signature a launch calls natively: every argument slot, whatever the kernel takes.
/// The C calling conventions of the hosts the soft device runs on leave arguments a function
/// does not take unread (in registers, or on the stack the caller frees), so one type serves
/// every kernel of up to [`KERNEL_MAX_ARGS`](dpakit_abi::kernel::KERNEL_MAX_ARGS) parameters.
type LaunchedFn = extern "C-unwind" fn(
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
);
const _: () = assert!(dpakit_abi::kernel::KERNEL_MAX_ARGS == 16);

/// Runs one thread of a kernel launch on the calling host thread, to its end: true when the
/// kernel returned.
fn run_launched(dpa: &Arc<DpaShared>, launch: Arc<Launch>, rank: Rank) -> Result<bool> {
    // The launched thread reads the DPA's tables while its kernel runs.
    let _reading = dpa.sched.grace.host();
    let stack = DefaultStack::new(STACK_SIZE)
        .map_err(|e| err(ErrorCode::NoMemory, format!("launched kernel's stack: {e}")))?;
    let name = launch.kernel.name;
    let dpa_ptr = Arc::as_ptr(dpa);
    let body = move || {
        let n = launch.kernel.num_args as usize;
        if launch.isa_entry != 0 {
            // SAFETY: the DPA outlives the activation (the caller holds it).
            let dpa = unsafe { &*dpa_ptr };
            if let Some(program) = &dpa.isa {
                // LP64 passes a 32-bit integer sign-extended to its register.
                let mut args = launch.args;
                for (i, a) in args.iter_mut().enumerate().take(n) {
                    if launch.kernel.narrow_args >> i & 1 == 1 {
                        *a = *a as u32 as i32 as i64 as u64;
                    }
                }
                super::isa_mode::run(program, &program.launches, launch.isa_entry, &args[..n]);
            }
            return;
        }
        // SAFETY: the app declares the function at `entry` (non-null) as a thread kernel taking
        // `num_args` (at most 16) integer or pointer parameters; see `LaunchedFn`.
        let f = unsafe { std::mem::transmute::<usize, LaunchedFn>(launch.kernel.entry) };
        let a = launch.args;
        f(
            a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13],
            a[14], a[15],
        );
    };
    let (ending, _, _stack) = activation::run_on_stack(dpa, None, Some(&rank), name, stack, body);
    Ok(ending == Ending::Return)
}
