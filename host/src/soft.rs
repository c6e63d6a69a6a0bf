//! Controls only the soft device has: how DPA kernels are scheduled, the deterministic trace,
//! statistics, fatal-error reports. They are the C functions of `dpakit_soft.h`, reached
//! through `dpakit-sys`; on DOCA's own libraries they answer `NOT_SUPPORTED` (and
//! [`Dpa::error`] is `None`), so code that uses them still builds for hardware.

use crate::dpa::{Dpa, DpaBuilder, soft_only};
use crate::error::{Result, bail, check};
use dpakit_sys as sys;
use dpakit_sys::soft::SoftApi;

pub use dpakit_abi::soft::{Ending, ExecMode, SchedMode, SchedStats, TraceEvent};

/// What the soft device's interpreter counted for one DPA thread in ISA mode.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IsaProfile {
    /// Activations run.
    pub activations: u64,
    /// Instructions they retired; the device functions they called are not included.
    pub instructions: u64,
    /// The most instructions one activation retired.
    pub max_instructions: u64,
    /// DOCA device function calls by C name, in the device API's order (all of them, zeros
    /// included).
    pub calls: Vec<(&'static str, u64)>,
}

impl IsaProfile {
    /// Device calls made, all functions together.
    pub fn device_calls(&self) -> u64 {
        self.calls.iter().map(|(_, n)| n).sum()
    }
}

fn api(what: &str) -> Result<&'static SoftApi> {
    sys::soft::api().ok_or_else(|| soft_only(what))
}

/// The soft device's settings of a [`DpaBuilder`], apart from DOCA's own so that code meant
/// for hardware cannot set them by accident: `use dpakit::soft::SoftSettings` to reach them. On
/// DOCA's own libraries they are ignored.
///
/// ```
/// use dpakit_host::dpa::Dpa;
/// use dpakit_host::soft::{SchedMode, SoftSettings};
///
/// # fn main() -> dpakit_host::Result<()> {
/// let dev = dpakit_host::open_dpa_dev()?;
/// // Activations run inside the host's progress calls, in an order the seed fixes.
/// let builder = Dpa::builder(&dev).sched_mode(SchedMode::Deterministic { seed: 1 });
/// # drop(builder);
/// # Ok(())
/// # }
/// ```
pub trait SoftSettings: Sized {
    /// How activations are scheduled (`dpakit_soft_dpa_set_sched_mode`; default
    /// `DPAKIT_SOFT_SCHED` from the environment, else busy-polling).
    fn sched_mode(self, mode: SchedMode) -> Self;

    /// Number of worker threads (`dpakit_soft_dpa_set_num_workers`; default one less than the
    /// machine's cores, at least one).
    fn workers(self, n: usize) -> Self;

    /// Pins worker `i` to CPU `cpus[i % cpus.len()]` (`dpakit_soft_dpa_set_worker_cpus`).
    fn pin_workers(self, cpus: Vec<usize>) -> Self;

    /// How kernels run (`dpakit_soft_dpa_set_exec_mode`; default `DPAKIT_SOFT_EXEC` from the
    /// environment, else native). ISA mode runs the app's DPA image in the interpreter: the one
    /// the app embeds (its kernel crate's build script built it with the kernels,
    /// `dpakit_build::kernel_crate`), unless [`isa_image`](Self::isa_image) names a file.
    fn exec_mode(self, mode: ExecMode) -> Self;

    /// ISA mode: the DPA image file to run (`dpakit_soft_dpa_set_isa_image`) instead of
    /// `DPAKIT_SOFT_DPA_IMAGE` or the image the app embeds or names (an image from `cargo xtask
    /// build-dpa`, say). It must be built from the same kernel sources as the app.
    fn isa_image(self, path: impl Into<std::path::PathBuf>) -> Self;

    /// ISA mode: instructions one activation may retire before it is stopped as a runaway
    /// loop (`dpakit_soft_dpa_set_isa_budget`; default 100,000,000).
    fn isa_budget(self, instructions: u64) -> Self;
}

impl SoftSettings for DpaBuilder {
    fn sched_mode(mut self, mode: SchedMode) -> Self {
        self.soft.mode = Some(mode);
        self
    }

    fn workers(mut self, n: usize) -> Self {
        self.soft.workers = Some(u32::try_from(n).unwrap_or(u32::MAX));
        self
    }

    fn pin_workers(mut self, cpus: Vec<usize>) -> Self {
        self.soft.pin = Some(
            cpus.into_iter()
                .map(|c| u32::try_from(c).unwrap_or(u32::MAX))
                .collect(),
        );
        self
    }

    fn exec_mode(mut self, mode: ExecMode) -> Self {
        self.soft.exec = Some(mode);
        self
    }

    fn isa_image(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.soft.isa_image = Some(path.into());
        self
    }

    fn isa_budget(mut self, instructions: u64) -> Self {
        self.soft.isa_budget = Some(instructions);
        self
    }
}

/// A text the soft device writes into a buffer by `fill(buffer, size)`.
fn text(fill: impl FnOnce(*mut std::ffi::c_char, usize) -> sys::doca_error_t) -> Result<String> {
    let mut buf = vec![0u8; 4096];
    check(
        "dpakit_soft_describe",
        fill(buf.as_mut_ptr().cast(), buf.len()),
    )?;
    Ok(std::ffi::CStr::from_bytes_until_nul(&buf)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default())
}

/// The kernels of the process, in any DPA context, whose current activation has run for `min`
/// or longer, each described (kernel, thread, context, how long): what a wait that timed out may
/// be waiting for (`dpakit_soft_describe_long_activations`). Empty on DOCA's own libraries.
pub fn long_activations(min: std::time::Duration) -> Vec<String> {
    let Some(api) = sys::soft::api() else {
        return Vec::new();
    };
    let micros = u64::try_from(min.as_micros()).unwrap_or(u64::MAX);
    // SAFETY: a writable buffer of the size given.
    let found = text(|buf, size| unsafe { (api.describe_long_activations)(micros, buf, size) });
    found
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

impl crate::dpa::DpaThread {
    /// What the thread is doing — its kernel, and how long its current activation has run, or
    /// that it is idle, finished or faulted (`dpakit_soft_dpa_thread_describe`).
    pub fn describe(&self) -> Result<String> {
        let api = api("describing a DPA thread")?;
        // SAFETY: a live thread and a writable buffer of the size given.
        text(|buf, size| unsafe { (api.dpa_thread_describe)(self.raw(), buf, size) })
    }

    /// What the interpreter counted for this thread (`dpakit_soft_dpa_thread_get_isa_profile`
    /// and `_get_isa_calls`); `NOT_SUPPORTED` when its context runs kernels natively.
    pub fn isa_profile(&self) -> Result<IsaProfile> {
        let api = api("instruction counts")?;
        let mut p = sys::soft::dpakit_soft_isa_profile::default();
        // SAFETY: a live thread and a writable struct.
        check("dpakit_soft_dpa_thread_get_isa_profile", unsafe {
            (api.dpa_thread_get_isa_profile)(self.raw(), &mut p)
        })?;
        let mut n = 0usize;
        // SAFETY: a live thread; capacity 0 writes no count.
        check("dpakit_soft_dpa_thread_get_isa_calls", unsafe {
            (api.dpa_thread_get_isa_calls)(self.raw(), std::ptr::null_mut(), 0, &mut n)
        })?;
        let mut counts = vec![0u64; n];
        // SAFETY: room for `n` counts.
        check("dpakit_soft_dpa_thread_get_isa_calls", unsafe {
            (api.dpa_thread_get_isa_calls)(self.raw(), counts.as_mut_ptr(), n, &mut n)
        })?;
        let calls = counts
            .into_iter()
            .enumerate()
            .map(|(i, count)| {
                // SAFETY: the name is a static NUL-terminated string, or NULL past the last.
                let name = unsafe { (api.device_function_name)(i) };
                let name = if name.is_null() {
                    "?"
                } else {
                    // SAFETY: non-null names live as long as the process.
                    unsafe { std::ffi::CStr::from_ptr(name) }
                        .to_str()
                        .unwrap_or("?")
                };
                (name, count)
            })
            .collect();
        Ok(IsaProfile {
            activations: p.activations,
            instructions: p.instructions,
            max_instructions: p.max_instructions,
            calls,
        })
    }
}

impl Dpa {
    /// The deterministic schedule so far: its most recent 4,096 activations
    /// (`dpakit_soft_dpa_get_trace`).
    pub fn trace(&self) -> Result<Vec<TraceEvent>> {
        let api = api("the activation trace")?;
        let mut n = 0usize;
        // SAFETY: a live context; capacity 0 writes no event.
        check("dpakit_soft_dpa_get_trace", unsafe {
            (api.dpa_get_trace)(self.raw(), std::ptr::null_mut(), 0, &mut n)
        })?;
        let mut raw = vec![sys::soft::dpakit_soft_trace_event::default(); n];
        // SAFETY: room for `n` events.
        check("dpakit_soft_dpa_get_trace", unsafe {
            (api.dpa_get_trace)(self.raw(), raw.as_mut_ptr(), raw.len(), &mut n)
        })?;
        raw.truncate(n);
        Ok(raw
            .into_iter()
            .map(|e| TraceEvent {
                thread: e.thread as usize,
                activation: e.activation,
                ending: match e.ending {
                    0 => Ending::Reschedule,
                    1 => Ending::Return,
                    2 => Ending::Finish,
                    _ => Ending::Fault,
                },
            })
            .collect())
    }

    /// Completion contexts one DPA thread may have attached at once, in every scheduling mode
    /// (`dpakit_soft_dpa_get_max_completions_per_thread`).
    pub fn max_completions_per_thread(&self) -> Result<u32> {
        let api = api("the completion contexts a thread takes")?;
        let mut max = 0;
        // SAFETY: a live context and a writable u32.
        check("dpakit_soft_dpa_get_max_completions_per_thread", unsafe {
            (api.dpa_get_max_completions_per_thread)(self.raw(), &mut max)
        })?;
        Ok(max)
    }

    /// Scheduler counters (`dpakit_soft_dpa_get_stats`).
    pub fn stats(&self) -> Result<SchedStats> {
        let api = api("scheduler statistics")?;
        let mut s = sys::soft::dpakit_soft_dpa_stats::default();
        // SAFETY: a live context and a writable struct.
        check("dpakit_soft_dpa_get_stats", unsafe {
            (api.dpa_get_stats)(self.raw(), &mut s)
        })?;
        Ok(SchedStats {
            activations: s.activations,
            workers: s.workers as usize,
        })
    }

    /// Deterministic mode: runs one ready activation (`dpakit_soft_dpa_step`); whether one ran.
    pub fn step(&self) -> Result<bool> {
        let api = api("stepping the scheduler")?;
        let mut ran = 0u8;
        // SAFETY: a live context and a writable byte.
        check("dpakit_soft_dpa_step", unsafe {
            (api.dpa_step)(self.raw(), &mut ran)
        })?;
        Ok(ran != 0)
    }

    /// Deterministic mode: runs activations until none is ready, or [`RUN_UNTIL_IDLE_LIMIT`]
    /// ran (a kernel that keeps notifying itself is never idle); how many ran.
    pub fn run_until_idle(&self) -> Result<usize> {
        let mut n = 0;
        while n < RUN_UNTIL_IDLE_LIMIT && self.step()? {
            n += 1;
        }
        Ok(n)
    }
}

/// Activations [`Dpa::run_until_idle`] runs at most in one call.
pub const RUN_UNTIL_IDLE_LIMIT: usize = 1 << 20;

/// Makes the first DPA context started in ISA mode from now on wait for gdb at `address`
/// (`HOST:PORT`, as `DPAKIT_SOFT_GDB`, which it overrides) and start when gdb continues
/// (`dpakit_soft_set_gdb`; docs/debugging.md). `INVALID_VALUE` for an address that cannot be
/// listened on, `BAD_STATE` once a context is debugged, `NOT_SUPPORTED` on DOCA's own libraries.
#[doc(alias = "dpakit_soft_set_gdb")]
pub fn set_gdb(address: &str) -> Result<()> {
    let Some(api) = sys::soft::api() else {
        bail!(
            NotSupported,
            "gdb on ISA mode is the soft device's: DOCA's own libraries have dpa-gdbserver"
        );
    };
    let address = std::ffi::CString::new(address)
        .map_err(|_| crate::Error::new(crate::ErrorCode::InvalidValue, "an address with a NUL"))?;
    // SAFETY: a NUL-terminated string that outlives the call.
    check("dpakit_soft_set_gdb", unsafe {
        (api.set_gdb)(address.as_ptr())
    })
}

/// Pins the calling thread to `cpu` (benchmarks keep the host side and DPA workers on distinct
/// cores). Works whatever the DOCA library underneath.
pub fn pin_current_thread(cpu: usize) -> Result<()> {
    // SAFETY: sysconf has no memory arguments.
    let configured = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    if cpu >= libc::CPU_SETSIZE as usize || (configured > 0 && cpu >= configured as usize) {
        bail!(
            InvalidValue,
            "CPU {cpu} does not exist (this machine has {configured})"
        );
    }
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it (cpu checked above);
    // sched_setaffinity reads it.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        bail!(
            OperatingSystem,
            "sched_setaffinity to CPU {cpu} failed: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}
