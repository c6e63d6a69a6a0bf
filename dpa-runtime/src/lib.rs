//! The soft device's DPA runtime (dpakit-dpa-runtime): the DPA context (`doca_dpa`), the app
//! (kernel registry), threads, activations, the scheduler, completions, RPC, kernel launches,
//! device memory and ISA mode. The device functions kernels call are the layer above
//! (`dpakit-model`'s device C ABI), reached from here by symbol only (`device_symbols`).
//!
//! Kernels compiled for the host run on the soft device's workers. Each activation runs on the
//! thread's own stack; `thread_reschedule` leaves that stack the way a DPA thread
//! leaves its EU. Handles given to kernels index fixed tables, so a stale or forged
//! handle is reported as a fatal error, never dereferenced.
//!
//! The runtime knows no Comch, MsgQ or sync-event type. A context is created on a [`Device`]
//! of the layer above, which hangs its own part on it ([`ContextPart`]: the model's device and
//! the handle tables of its Comch endpoints and sync events); the device functions find that
//! part from the running activation. Also here, as the lowest crate that needs them: DOCA
//! Core's context state machine (`ctx`), the completion ring (`ring`), the handle tables
//! (`table`) and checked reads of memory a program hands over (`checked_read`).
//!
//! Its API is the soft device's own and unstable, for the model above it.

mod activation;
mod app;
pub mod checked_read;
pub mod completion;
pub mod ctx;
pub mod current;
mod deterministic;
mod device;
mod device_symbols;
pub mod element;
pub mod error;
mod fatal;
pub mod grace;
mod isa_mode;
pub mod launch;
pub mod memory;
mod parking;
pub mod ring;
mod sched;
mod symbol;
pub mod table;
pub mod thread;
pub mod thread_shared;
mod thread_state;
mod trap;
mod trigger;
pub mod view;

// The concurrency facade (loom under cfg(loom)) and the wake-up handshake: dpakit-sync.
use dpakit_sync as sync;
use dpakit_sync::wake;
// The soft device's documented limits.
use dpakit_abi::soft::limits;

use crate::ctx::{CtxState, StateMachine};
use crate::error::{Error, Result, bail};
use crate::sync::Ordering;
use crate::sync::plain::AtomicU16;
use crate::table::Table;
use completion::{ConsumerCompletionShared, DpaCompletionShared, NotificationShared};
use dpakit_abi::kernel::RPC_MAX_ARGS;
use dpakit_abi::{RpcKernel, RpcSignature};
use fatal::Fatal;
use memory::DeviceMemory;
use sched::{Scheduler, SchedulerConfig};
use std::fmt;
use std::sync::Arc;
use thread_shared::ThreadShared;

pub use activation::Ending;
pub use app::{App, AppKernel, KernelKind};
pub use completion::{
    ConsumerCompletion, ConsumerCompletionBuilder, DpaCompletion, NotificationCompletion,
};
pub use deterministic::TRACE_CAPACITY;
pub use device::{ContextPart, Device, DeviceId, Part};
pub use isa_mode::{
    DEFAULT_BUDGET as ISA_DEFAULT_BUDGET, ExecMode, IsaConfig, Profile, set_gdb_address,
};
pub use launch::LaunchEvent;
pub use memory::DevPtr;
pub use sched::{STOP_WAIT, SchedMode, SchedStats, TraceEvent, pin_current_thread};
pub use thread::{DpaThread, DpaThreadBuilder};
#[doc(hidden)]
pub use trap::live_alt_stacks;

/// Kinds of objects a kernel names by handle; the kind is part of the handle. The runtime's own
/// tables hold completion contexts; the layer above's hold the rest.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs, reason = "the DOCA objects of the same names")]
pub enum Kind {
    ConsumerCompletion = 1,
    DpaConsumer = 2,
    DpaProducer = 3,
    Completion = 4,
    Notification = 5,
    SyncEvent = 6,
}

/// The runtime's handle tables of a DPA context: its completion contexts.
#[derive(Debug)]
pub struct Handles {
    pub consumer_completions: Table<ConsumerCompletionShared>,
    pub completions: Table<DpaCompletionShared>,
    pub notifications: Table<NotificationShared>,
}

/// State shared by a DPA context, its threads and workers.
pub struct DpaShared {
    pub id: u16,
    /// The device the context runs on: mmap handles of other devices are refused.
    pub device: DeviceId,
    pub app: App,
    pub state: StateMachine,
    pub handles: Handles,
    /// The layer above's part of the context (see [`ContextPart`]).
    pub part: Part,
    pub(crate) threads: Table<ThreadShared>,
    pub sched: Scheduler,
    pub(crate) memory: DeviceMemory,
    /// The loaded DPA image in ISA mode; `None` in native mode.
    pub(crate) isa: Option<isa_mode::Program>,
    /// Kernel launches, queued and running.
    pub(crate) launcher: launch::Launcher,
    fatal: Fatal<Error>,
    /// The last views of destroyed threads, for the live view and the dump at exit.
    ended_threads: std::sync::Mutex<view::Ended<view::ThreadView>>,
    /// The layer above's queues, for the same.
    queues: std::sync::Mutex<view::Queues>,
}

impl fmt::Debug for DpaShared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dpa")
            .field("id", &self.id)
            .field("app", &self.app.name())
            .field("state", &self.state.get())
            .finish()
    }
}

static NEXT_DPA_ID: AtomicU16 = AtomicU16::new(1);

/// Every DPA context of the process, for diagnostics that name running kernels wherever they
/// are (a wait that timed out) and for the [`view`]. Control path only: a context is added when
/// it starts, and the ones gone are pruned then.
static LIVE: std::sync::Mutex<Vec<std::sync::Weak<DpaShared>>> = std::sync::Mutex::new(Vec::new());

/// The DPA contexts of the process that are still alive.
fn live_contexts() -> Vec<Arc<DpaShared>> {
    LIVE.lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter_map(std::sync::Weak::upgrade)
        .collect()
}

/// The kernels of every DPA context of the process whose current activation has run for `min`
/// or longer, described ([`DpaThread::describe`]).
pub fn long_activations(min: std::time::Duration) -> Vec<String> {
    let mut found = Vec::new();
    for dpa in &live_contexts() {
        // The host reads the thread table.
        let _reading = dpa.sched.grace.host();
        let long = dpa
            .threads
            .iter()
            .filter(|t| t.running_for().is_some_and(|t| t >= min));
        found.extend(long.map(|t| t.describe(dpa.id)));
    }
    found
}

/// Activations [`Dpa::run_until_idle`] runs at most in one call.
pub const RUN_UNTIL_IDLE_LIMIT: usize = 1 << 20;

impl DpaShared {
    /// The 64-bit device handle for slot `index` of `kind`.
    pub fn handle(&self, kind: Kind, index: usize) -> u64 {
        (u64::from(self.id) << 48) | ((kind as u64) << 40) | index as u64
    }

    /// The slot index of `handle` if it is a handle of `kind` on this DPA.
    #[inline]
    pub fn index_of(&self, handle: u64, kind: Kind) -> Option<usize> {
        let ok = handle >> 48 == u64::from(self.id) && (handle >> 40) & 0xff == kind as u64;
        ok.then_some((handle & 0xff_ffff_ffff) as usize)
    }

    /// Records a fatal error: the context moves to STOPPING and every later check reports it.
    pub fn set_fatal(&self, error: Error) {
        self.fatal.set(error, |error| {
            eprintln!(
                "dpakit soft device: fatal error on DPA context {}: {error}",
                self.id
            );
            if self.state.get() == CtxState::Running {
                self.state.transition(CtxState::Stopping);
            }
        });
    }

    /// The fatal error, if one happened.
    pub fn fatal(&self) -> Option<Error> {
        self.fatal.get()
    }

    pub fn check(&self) -> Result<()> {
        self.fatal().map_or(Ok(()), Err)
    }

    pub fn require_running(&self, what: &str) -> Result<()> {
        self.check()?;
        self.state.require_running(what)
    }
}

/// Configuration of a [`Dpa`] (`doca_dpa_create` … `doca_dpa_start`).
pub struct DpaBuilder {
    device: DeviceId,
    part: Box<dyn ContextPart>,
    /// Whether the device has a DPA (checked at start).
    has_dpa: Result<()>,
    app: Option<App>,
    sched: SchedulerConfig,
    exec: ExecMode,
    isa: IsaConfig,
    kernel_max_run_time: std::time::Duration,
    on_state_changed: Option<crate::ctx::StateChangedCb>,
}

impl fmt::Debug for DpaBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpaBuilder")
            .field("device", &self.device)
            .field("app", &self.app)
            .field("sched", &self.sched)
            .field("exec", &self.exec)
            .field("isa", &self.isa)
            .finish()
    }
}

/// `doca_dpa`: a DPA context running one app.
#[derive(Clone)]
pub struct Dpa {
    pub shared: Arc<DpaShared>,
    /// Shared by every handle: the last one to go stops the workers, which hold `shared`.
    _life: Arc<Life>,
}

/// Stops the context's workers when the last [`Dpa`] handle drops.
struct Life(Arc<DpaShared>);

impl Drop for Life {
    fn drop(&mut self) {
        self.0.launcher.shutdown(STOP_WAIT);
        self.0.sched.shutdown();
        view::context_ended(&self.0);
    }
}

impl fmt::Debug for Dpa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.shared.fmt(f)
    }
}

impl DpaBuilder {
    /// `doca_dpa_set_app`.
    pub fn app(mut self, app: App) -> Self {
        self.app = Some(app);
        self
    }

    /// How activations are scheduled: busy-polling workers (lowest latency), sleeping workers
    /// woken by notifications, or deterministic (single thread, seeded).
    pub fn sched_mode(mut self, mode: SchedMode) -> Self {
        self.sched.mode = mode;
        self
    }

    /// Number of worker threads (default: one less than the machine's cores, at least one).
    pub fn workers(mut self, n: usize) -> Self {
        self.sched.workers = Some(n);
        self
    }

    /// Pins worker `i` to CPU `cpus[i % cpus.len()]` (benchmarks pin to distinct cores).
    pub fn pin_workers(mut self, cpus: Vec<usize>) -> Self {
        self.sched.pin = cpus;
        self
    }

    /// How kernels run: as host code (native, the default) or from the app's DPA image in the
    /// RV64IMAC interpreter (ISA), every access checked.
    pub fn exec_mode(mut self, mode: ExecMode) -> Self {
        self.exec = mode;
        self
    }

    /// ISA mode: the image to run instead of `DPAKIT_SOFT_DPA_IMAGE` or the one the app names.
    pub fn isa_image(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.isa.image = Some(path.into());
        self
    }

    /// ISA mode: instructions one activation may retire before it is stopped as a runaway loop
    /// ([`ISA_DEFAULT_BUDGET`] by default).
    pub fn isa_budget(mut self, instructions: u64) -> Self {
        self.isa.budget = instructions;
        self
    }

    /// How long a launched kernel may run before the context fails
    /// ([`DPA_KERNEL_MAX_RUN_TIME_SECS`](crate::limits::DPA_KERNEL_MAX_RUN_TIME_SECS) by default,
    /// what `doca_dpa_get_kernel_max_run_time` answers).
    pub fn kernel_max_run_time(mut self, limit: std::time::Duration) -> Self {
        self.kernel_max_run_time = limit;
        self
    }

    /// `doca_ctx_set_state_changed_cb`: called on every state transition, including the move to
    /// STOPPING after a fatal error (from the thread that hit it).
    pub fn on_state_changed(
        mut self,
        cb: impl Fn(CtxState, CtxState) + Send + Sync + 'static,
    ) -> Self {
        self.on_state_changed = Some(Box::new(cb));
        self
    }

    /// `doca_dpa_start`.
    pub fn start(self) -> Result<Dpa> {
        let Some(app) = self.app else {
            bail!(
                BadState,
                "a DPA needs an app before start (doca_dpa_set_app): call DpaBuilder::app"
            );
        };
        self.has_dpa?;
        let isa = match self.exec {
            ExecMode::Native => None,
            ExecMode::Isa => Some(isa_mode::Program::load(&self.isa, &app)?),
        };
        use crate::limits::DPA_MAX_THREADS;
        let id = NEXT_DPA_ID.fetch_add(1, Ordering::Relaxed);
        let shared = Arc::new_cyclic(|weak| DpaShared {
            id,
            device: self.device,
            app,
            state: StateMachine::new("the DPA context"),
            handles: Handles {
                consumer_completions: Table::new(DPA_MAX_THREADS),
                completions: Table::new(DPA_MAX_THREADS * 2),
                notifications: Table::new(DPA_MAX_THREADS),
            },
            threads: Table::new(DPA_MAX_THREADS),
            sched: Scheduler::new(self.sched, weak.clone()),
            part: Part::new(self.part),
            memory: DeviceMemory::new(crate::limits::DPA_MAX_MEMORY),
            isa,
            launcher: launch::Launcher::new(weak.clone(), self.kernel_max_run_time),
            fatal: Fatal::new(),
            ended_threads: std::sync::Mutex::new(view::Ended::new(view::ENDED_THREADS_PER_CONTEXT)),
            queues: std::sync::Mutex::new(view::Queues::new()),
        });
        device_symbols::keep_linked();
        activation::install_panic_hook();
        if let Some(cb) = self.on_state_changed {
            shared.state.set_state_changed_cb(cb)?;
        }
        shared.state.start()?;
        {
            let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
            live.retain(|d| d.strong_count() > 0);
            live.push(Arc::downgrade(&shared));
        }
        let life = Arc::new(Life(shared.clone()));
        // On failure `life` stops the workers that did start.
        shared.sched.spawn_workers()?;
        Ok(Dpa {
            shared,
            _life: life,
        })
    }
}

impl Dpa {
    /// `doca_dpa_create`: a DPA context on `dev` (which must have a DPA).
    pub fn builder(dev: &impl Device) -> DpaBuilder {
        DpaBuilder {
            device: dev.id(),
            part: dev.context_part(),
            has_dpa: dev.require_dpa(),
            app: None,
            sched: SchedulerConfig::default(),
            exec: ExecMode::Native,
            isa: IsaConfig::default(),
            kernel_max_run_time: std::time::Duration::from_secs(
                crate::limits::DPA_KERNEL_MAX_RUN_TIME_SECS,
            ),
            on_state_changed: None,
        }
    }

    /// The device the context runs on.
    pub fn device(&self) -> DeviceId {
        self.shared.device
    }

    /// The context state; STOPPING after a fatal error.
    pub fn state(&self) -> CtxState {
        self.shared.state.get()
    }

    /// The fatal error that stopped the context (a kernel panic, or device-side misuse such as
    /// acking more credits than the queue holds), if any.
    pub fn error(&self) -> Option<Error> {
        self.shared.fatal()
    }

    /// `Err` with the fatal error if there was one.
    pub fn check(&self) -> Result<()> {
        self.shared.check()
    }

    /// `doca_dpa_get_core_num`.
    pub fn core_num(&self) -> u32 {
        crate::limits::DPA_NUM_CORES as u32
    }

    /// `doca_dpa_get_num_threads_per_core` (EUs per core).
    pub fn num_threads_per_core(&self) -> u32 {
        crate::limits::DPA_THREADS_PER_CORE as u32
    }

    /// `doca_dpa_get_max_threads_per_kernel`-style limit: threads one DPA context can hold.
    pub fn max_threads(&self) -> u32 {
        crate::limits::DPA_MAX_THREADS as u32
    }

    /// `doca_dpa_rpc`: runs an RPC kernel once with `args` as DOCA passes them (words) and
    /// returns its result word.
    pub fn rpc<F: RpcSignature, A, R>(
        &self,
        kernel: &RpcKernel<F, A, R>,
        args: F::Args,
    ) -> Result<u64> {
        self.shared.require_running("run an RPC")?;
        let name = self
            .shared
            .app
            .require(kernel.func() as usize, KernelKind::Rpc)?
            .name;
        if self.shared.isa.is_some() {
            let args = F::to_array(args);
            return self.rpc_isa(name, &args[..F::NUM_ARGS]);
        }
        let entry = kernel.entry();
        activation::run_rpc(&self.shared, name, move || entry.invoke(args))
    }

    /// `doca_dpa_rpc` by address (`doca_dpa_func_t *`): runs the app's RPC kernel at `func` with
    /// `args`, which must be exactly as many as the kernel takes.
    pub fn rpc_func(&self, func: usize, args: &[u64]) -> Result<u64> {
        self.shared.require_running("run an RPC")?;
        let kernel = *self.shared.app.require(func, KernelKind::Rpc)?;
        kernel.require_args(args.len())?;
        if self.shared.isa.is_some() {
            return self.rpc_isa(kernel.name, args);
        }
        let a = {
            let mut a = [0u64; RPC_MAX_ARGS];
            a[..args.len()].copy_from_slice(args);
            a
        };
        type F0 = extern "C-unwind" fn() -> u64;
        type F1 = extern "C-unwind" fn(u64) -> u64;
        type F2 = extern "C-unwind" fn(u64, u64) -> u64;
        type F3 = extern "C-unwind" fn(u64, u64, u64) -> u64;
        type F4 = extern "C-unwind" fn(u64, u64, u64, u64) -> u64;
        let entry = kernel.entry;
        let body = move || {
            // SAFETY: the app descriptor declares the function at `entry` as an RPC kernel
            // taking `num_args` u64 arguments and returning a u64; `entry` is non-null (checked
            // when the app was read).
            unsafe {
                match kernel.num_args {
                    0 => std::mem::transmute::<usize, F0>(entry)(),
                    1 => std::mem::transmute::<usize, F1>(entry)(a[0]),
                    2 => std::mem::transmute::<usize, F2>(entry)(a[0], a[1]),
                    3 => std::mem::transmute::<usize, F3>(entry)(a[0], a[1], a[2]),
                    _ => std::mem::transmute::<usize, F4>(entry)(a[0], a[1], a[2], a[3]),
                }
            }
        };
        activation::run_rpc(&self.shared, kernel.name, body)
    }

    /// Runs RPC kernel `name` from the image (ISA mode).
    fn rpc_isa(&self, name: &'static str, args: &[u64]) -> Result<u64> {
        let program = self.shared.isa.as_ref().expect("ISA mode");
        let entry = program.entry(name)?;
        let mut a = [0u64; RPC_MAX_ARGS];
        a[..args.len()].copy_from_slice(args);
        let n = args.len();
        let shared = self.shared.clone();
        activation::run_rpc(&self.shared, name, move || {
            let program = shared.isa.as_ref().expect("ISA mode");
            isa_mode::run(program, &program.rpcs, entry, &a[..n])
        })
    }

    /// How the context runs its kernels.
    pub fn exec_mode(&self) -> ExecMode {
        if self.shared.isa.is_some() {
            ExecMode::Isa
        } else {
            ExecMode::Native
        }
    }

    /// ISA mode: the image the context runs.
    pub fn isa_image(&self) -> Option<&std::path::Path> {
        self.shared.isa.as_ref().map(|p| p.path.as_path())
    }

    /// ISA mode: what the interpreter counted for the context's RPCs (`None` in native mode).
    pub fn isa_rpc_profile(&self) -> Option<Profile> {
        self.shared.isa.as_ref().map(|p| p.rpcs.snapshot())
    }

    /// `doca_dpa_get_dpa_handle`: the context's number, which kernels would pass to
    /// `doca_dpa_dev_device_set`.
    pub fn dpa_handle(&self) -> u64 {
        u64::from(self.shared.id)
    }

    /// The app the context runs.
    pub fn app(&self) -> &App {
        &self.shared.app
    }

    /// `doca_dpa_mem_alloc`: `size` bytes of device memory (zeroed).
    pub fn mem_alloc(&self, size: usize) -> Result<DevPtr> {
        self.shared.require_running("allocate device memory")?;
        self.shared.memory.alloc(size)
    }

    /// `doca_dpa_mem_free`.
    pub fn mem_free(&self, ptr: DevPtr) -> Result<()> {
        self.shared.memory.free(ptr, &self.shared.sched.grace)
    }

    /// `doca_dpa_h2d_memcpy`: copies `src` to device memory at `dst`.
    pub fn h2d_memcpy(&self, dst: DevPtr, src: &[u8]) -> Result<()> {
        self.shared.memory.h2d(dst, src)
    }

    /// `doca_dpa_d2h_memcpy`: copies device memory at `src` into `dst`.
    pub fn d2h_memcpy(&self, dst: &mut [u8], src: DevPtr) -> Result<()> {
        self.shared.memory.d2h(dst, src)
    }

    /// Where device memory `[ptr, ptr + len)` lives on the soft device (inside one live
    /// allocation, `INVALID_VALUE` otherwise): what `doca_mmap_set_dpa_memrange` registers.
    pub fn device_range(&self, ptr: DevPtr, len: usize) -> Result<*mut u8> {
        self.shared
            .memory
            .range_ptr(ptr, len, "doca_mmap_set_dpa_memrange")
    }

    /// `doca_dpa_memset`.
    pub fn memset(&self, dst: DevPtr, value: u8, size: usize) -> Result<()> {
        self.shared.memory.memset(dst, value, size)
    }

    /// Allocates device memory holding `value` (alloc + h2d copy), e.g. a kernel argument block.
    pub fn mem_alloc_init<T: dpakit_abi::Pod>(&self, value: &T) -> Result<DevPtr> {
        let ptr = self.mem_alloc(size_of::<T>())?;
        self.h2d_memcpy(ptr, dpakit_abi::bytes_of(value))?;
        Ok(ptr)
    }

    /// Objects removed from this DPA's handle tables whose memory waits for a grace period (for
    /// tests of the soft device's memory use: it stays bounded however many objects come and
    /// go).
    #[doc(hidden)]
    pub fn pending_frees(&self) -> usize {
        let (h, g) = (&self.shared.handles, &self.shared.sched.grace);
        h.consumer_completions.retained(g)
            + h.completions.retained(g)
            + h.notifications.retained(g)
            + self.shared.part.get().pending_frees(g)
            + self.shared.threads.retained(g)
    }

    /// Scheduler statistics.
    pub fn stats(&self) -> sched::SchedStats {
        self.shared.sched.stats()
    }

    /// The deterministic trace: `(thread index, ending)` for every activation, in order (the
    /// most recent [`TRACE_CAPACITY`]).
    pub fn trace(&self) -> Vec<sched::TraceEvent> {
        self.shared.sched.trace()
    }

    /// In deterministic mode: runs one ready activation chosen by the seeded generator. Returns
    /// false when nothing is ready. Other modes run activations on their workers and return false.
    pub fn step(&self) -> bool {
        self.shared.sched.step()
    }

    /// In deterministic mode: runs the activations ready now, in seeded order (those they make
    /// ready wait for the next round); returns how many ran. One progress pass runs one round.
    pub fn run_round(&self) -> usize {
        self.shared.sched.run_round()
    }

    /// In deterministic mode: runs rounds until none is ready, or [`RUN_UNTIL_IDLE_LIMIT`]
    /// activations ran (a kernel that keeps notifying itself is never idle); returns how many
    /// ran.
    pub fn run_until_idle(&self) -> usize {
        let mut n = 0;
        while n < RUN_UNTIL_IDLE_LIMIT {
            match self.run_round() {
                0 => break,
                ran => n += ran,
            }
        }
        n
    }
}

impl Drop for DpaShared {
    fn drop(&mut self) {
        self.sched.shutdown();
    }
}
