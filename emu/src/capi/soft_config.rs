//! The settings of a new DPA context on the soft device: defaults from the environment
//! (`DPAKIT_SOFT_SCHED`, `DPAKIT_SOFT_WORKERS`, `DPAKIT_SOFT_PIN`, `DPAKIT_SOFT_EXEC`,
//! `DPAKIT_SOFT_ISA_BUDGET`), which an unmodified DOCA program can set, and their checks.

use crate::dpa::{ExecMode, IsaConfig, SchedMode};
use crate::error::{Result, bail};
use std::sync::OnceLock;

/// How a DPA context runs its kernels.
#[derive(Clone, Debug)]
pub(crate) struct SoftConfig {
    pub mode: SchedMode,
    pub workers: Option<usize>,
    pub pin: Vec<usize>,
    pub exec: ExecMode,
    pub isa: IsaConfig,
}

impl SoftConfig {
    /// The defaults of every new DPA context: `DPAKIT_SOFT_SCHED`, `DPAKIT_SOFT_WORKERS` and
    /// `DPAKIT_SOFT_PIN`, else busy-polling workers on no particular CPU.
    pub(crate) fn from_env() -> Self {
        static FROM_ENV: OnceLock<SoftConfig> = OnceLock::new();
        FROM_ENV
            .get_or_init(|| {
                let mut cfg = SoftConfig {
                    mode: SchedMode::BusyPoll,
                    workers: None,
                    pin: Vec::new(),
                    exec: ExecMode::Native,
                    isa: IsaConfig::default(),
                };
                let warn = |var: &str, value: &str, why: &str| {
                    eprintln!("dpakit soft device: ignoring {var}={value}: {why}");
                };
                if let Ok(v) = std::env::var("DPAKIT_SOFT_SCHED") {
                    match parse_sched(&v) {
                        Some(mode) => cfg.mode = mode,
                        None => warn("DPAKIT_SOFT_SCHED", &v, "use busy, sleep or det:SEED"),
                    }
                }
                if let Ok(v) = std::env::var("DPAKIT_SOFT_WORKERS") {
                    match v.parse::<usize>() {
                        Ok(n) if (1..=MAX_WORKERS).contains(&n) => cfg.workers = Some(n),
                        _ => warn(
                            "DPAKIT_SOFT_WORKERS",
                            &v,
                            &format!("a worker count is 1..={MAX_WORKERS}"),
                        ),
                    }
                }
                if let Ok(v) = std::env::var("DPAKIT_SOFT_EXEC") {
                    match v.as_str() {
                        "native" => cfg.exec = ExecMode::Native,
                        "isa" => cfg.exec = ExecMode::Isa,
                        _ => warn("DPAKIT_SOFT_EXEC", &v, "use native or isa"),
                    }
                }
                if let Ok(v) = std::env::var("DPAKIT_SOFT_ISA_BUDGET") {
                    match v.parse::<u64>() {
                        Ok(n) if n > 0 => cfg.isa.budget = n,
                        _ => warn(
                            "DPAKIT_SOFT_ISA_BUDGET",
                            &v,
                            "an instruction budget is a positive number",
                        ),
                    }
                }
                if let Ok(v) = std::env::var("DPAKIT_SOFT_PIN") {
                    let cpus: Option<Vec<usize>> = v
                        .split(',')
                        .map(|c| c.trim().parse::<usize>().ok().filter(|&c| cpu_exists(c)))
                        .collect();
                    match cpus {
                        Some(cpus) if !cpus.is_empty() => cfg.pin = cpus,
                        _ => warn(
                            "DPAKIT_SOFT_PIN",
                            &v,
                            "give a comma-separated list of CPUs this machine has",
                        ),
                    }
                }
                cfg
            })
            .clone()
    }
}

/// Most worker threads one DPA context may have.
pub(super) const MAX_WORKERS: usize = 256;

fn parse_sched(v: &str) -> Option<SchedMode> {
    match v {
        "busy" | "busy-poll" => Some(SchedMode::BusyPoll),
        "sleep" => Some(SchedMode::Sleep),
        "det" => Some(SchedMode::Deterministic { seed: 0 }),
        _ => v
            .strip_prefix("det:")
            .and_then(|s| s.parse().ok())
            .map(|seed| SchedMode::Deterministic { seed }),
    }
}

/// Whether this machine has CPU `cpu` (one `sched_setaffinity` can name).
fn cpu_exists(cpu: usize) -> bool {
    // SAFETY: sysconf has no memory arguments.
    let configured = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    cpu < libc::CPU_SETSIZE as usize && (configured <= 0 || cpu < configured as usize)
}

pub(super) fn check_cpu(cpu: usize) -> Result<()> {
    if !cpu_exists(cpu) {
        // SAFETY: sysconf has no memory arguments.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
        bail!(
            InvalidValue,
            "CPU {cpu} does not exist (this machine has {n})"
        );
    }
    Ok(())
}
