//! The soft device's controls and reports as data, one definition for the soft device
//! (dpakit-emu) and the host API (`dpakit::soft`): how a DPA context schedules and runs its
//! kernels, and what its deterministic trace and counters hold. `dpakit_soft.h` carries them
//! across the C API. Its documented [`limits`] live here too.

pub mod limits;

/// How the soft device runs activations of a DPA context's threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedMode {
    /// Workers spin on their threads' completion contexts: lowest latency, a core each.
    BusyPoll,
    /// Workers sleep until a notification wakes them.
    Sleep,
    /// No workers: progress runs one ready activation at a time, chosen by a generator seeded
    /// with `seed`, so a run is reproducible, and the schedule is recorded.
    Deterministic {
        /// Seed of the choice among ready threads.
        seed: u64,
    },
}

/// How the soft device runs a DPA context's kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExecMode {
    /// The kernels compiled for the host run as host code: fastest.
    #[default]
    Native,
    /// The app's DPA image — the riscv64 executable `cargo xtask build-dpa` links, the code the
    /// DPA would run — runs in the soft device's RV64IMAC interpreter: every load and store is
    /// checked, each activation has an instruction budget, and instructions and device calls
    /// are counted.
    Isa,
}

#[cfg(feature = "std")]
impl ExecMode {
    /// `DPAKIT_SOFT_EXEC` from the environment (`native` or `isa`), else native: what the soft
    /// device itself starts with.
    pub fn from_env() -> ExecMode {
        match std::env::var("DPAKIT_SOFT_EXEC").as_deref() {
            Ok("isa") => ExecMode::Isa,
            _ => ExecMode::Native,
        }
    }
}

/// How an activation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// `thread_reschedule`: the next notification runs the kernel again.
    Reschedule,
    /// The kernel function returned; treated like a reschedule.
    Return,
    /// `thread_finish`: the thread is never triggered again.
    Finish,
    /// A panic or device-side misuse; the DPA context holds the error.
    Fault,
}

/// One activation, as the deterministic mode records it.
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
