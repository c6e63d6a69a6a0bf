//! `cargo xtask profile`: instructions per MsgQ round trip (or per one-way message), split by
//! layer.
//!
//! Runs `examples/round_trip_profile` (deterministic mode: both sides on one thread, no
//! spinning) under callgrind with two counts of messages, and divides the difference by the
//! difference of the counts, so setup and teardown cancel out. Each
//! function's own instructions (not those of the functions it calls) go to the layer its name
//! belongs to. Inlined code counts where it was inlined: a host wrapper inlined into the
//! example counts as the example's.

use crate::{Result, workspace_root};
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

/// Messages of the short and the long run.
const SHORT: u64 = 1_000;
const LONG: u64 = 11_000;

/// What the profiled example does per message.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A round trip through the echo kernel, run natively.
    Native,
    /// The same, the echo interpreted from the kit's DPA image.
    Isa,
    /// One message streamed to the sink kernel: the throughput path.
    OneWay,
}

impl Mode {
    /// The example's flag, and the name in the callgrind files.
    fn flag(self) -> Option<&'static str> {
        match self {
            Mode::Native => None,
            Mode::Isa => Some("--isa"),
            Mode::OneWay => Some("--one-way"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Native => "native",
            Mode::Isa => "isa",
            Mode::OneWay => "one-way",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Mode::Native => {
                "32-byte MsgQ round trip (callgrind, deterministic mode, the kernel native, both sides"
            }
            Mode::Isa => {
                "32-byte MsgQ round trip (callgrind, deterministic mode, the kernel in ISA mode, both sides"
            }
            Mode::OneWay => {
                "32-byte message streamed CPU -> DPA sink kernel (callgrind, deterministic mode, 1024 credits, both sides"
            }
        }
    }
}

/// The model's layer.
const MODEL: &str = "model: MsgQ, Comch endpoints, rings";

/// Layers, first match wins: (layer, substrings of a function's demangled name).
const LAYERS: &[(&str, &[&str])] = &[
    ("host API (dpakit-host)", &["dpakit_host::"]),
    ("sys (bindings)", &["dpakit_sys::"]),
    ("C API: task pool", &["dpakit_emu::capi::task"]),
    ("C API: handle registry", &["dpakit_emu::capi::registry"]),
    ("PE", &["dpakit_emu::capi::pe", "dpakit_model::pe"]),
    ("ISA interpreter (dpakit-rv)", &["dpakit_rv::"]),
    (
        "ISA mode: device bus and ecall service",
        &["dpakit_dpa_runtime::isa_mode"],
    ),
    (
        "device calls and kernel",
        &[
            "doca_dpa_dev_",
            "dpakit_model::device_abi",
            "dpakit_dpa_runtime::device_symbols",
            "dpakit_dev::",
            "dpakit_kernels::",
            "dpakit_abi::",
        ],
    ),
    ("C API: other entry points", &["dpakit_emu::", "doca_"]),
    // The leaf pieces the model shares with the runtime below it count as the model's, as they
    // did before the runtime had a crate of its own.
    (
        MODEL,
        &[
            "dpakit_dpa_runtime::ring",
            "dpakit_dpa_runtime::table",
            "dpakit_dpa_runtime::ctx",
            "dpakit_dpa_runtime::checked_read",
        ],
    ),
    (
        "DPA activations and the deterministic scheduler",
        &[
            "dpakit_dpa_runtime::",
            "dpakit_model::dpa::",
            "corosensei",
            "stack_init_trampoline",
        ],
    ),
    (MODEL, &["dpakit_model::"]),
    ("the example's loop", &["round_trip_profile::"]),
    (
        "system calls and libc",
        &[
            "epoll",
            "syscall",
            "clock_gettime",
            "libc",
            "__GI_",
            "__memcpy",
            "memcpy",
            "memset",
        ],
    ),
];

/// The kit's kernels that run per round trip of the profile (their symbols are C names).
const KERNELS: &[&str] = &["echo", "sink"];

/// Layer of a function's demangled name.
fn layer(function: &str) -> &'static str {
    LAYERS
        .iter()
        .find(|(_, keys)| keys.iter().any(|k| function.contains(k)))
        .map_or_else(
            || match KERNELS.contains(&function) {
                true => "device calls and kernel",
                false => "std and everything else",
            },
            |(name, _)| name,
        )
}

/// Profiles the example in `mode`.
pub fn run(mode: Mode) -> Result {
    if Command::new("valgrind").arg("--version").output().is_err() {
        return Err("profile needs valgrind (apt-get install valgrind)".into());
    }
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--example", "round_trip_profile"])
        .current_dir(workspace_root())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err("building the round_trip_profile example failed".into());
    }
    let bin = workspace_root().join("target/release/examples/round_trip_profile");
    let dir = workspace_root().join("target/profile");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let short = callgrind(&bin, SHORT, mode, &dir)?;
    let long = callgrind(&bin, LONG, mode, &dir)?;
    let per_rt = per_round_trip(&short, &long, LONG - SHORT);
    print!("{}", table(&per_rt, mode));
    Ok(())
}

/// Self instructions per function of one run of `n` messages.
fn callgrind(bin: &Path, n: u64, mode: Mode, dir: &Path) -> Result<HashMap<String, u64>> {
    let out = dir.join(format!("callgrind.{}.{n}.out", mode.name()));
    eprintln!("$ valgrind --tool=callgrind {} {n}", bin.display());
    let status = Command::new("valgrind")
        .args([
            "--tool=callgrind",
            "--compress-strings=no",
            "--compress-pos=no",
        ])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(bin)
        .arg(n.to_string())
        .args(mode.flag())
        .status()
        .map_err(|e| format!("cannot run valgrind: {e}"))?;
    if !status.success() {
        return Err(format!("callgrind run of {n} messages failed ({status})"));
    }
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(self_costs(&text))
}

/// Each function's own instructions from a callgrind output file (uncompressed names and
/// positions): cost lines count for the current `fn=`, except the line after `calls=`, which
/// is the inclusive cost of a call.
fn self_costs(text: &str) -> HashMap<String, u64> {
    let mut costs = HashMap::new();
    let mut current = String::new();
    let mut after_calls = false;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("fn=") {
            current = name.to_string();
        } else if line.starts_with("calls=") {
            after_calls = true;
        } else if line.starts_with(|c: char| c.is_ascii_digit() || "+-*".contains(c)) {
            if std::mem::take(&mut after_calls) {
                continue;
            }
            let ir = line.split_whitespace().nth(1).and_then(|s| s.parse().ok());
            *costs.entry(current.clone()).or_insert(0) += ir.unwrap_or(0);
        }
    }
    costs
}

/// (function, instructions per round trip), largest first.
fn per_round_trip(
    short: &HashMap<String, u64>,
    long: &HashMap<String, u64>,
    n: u64,
) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = long
        .iter()
        .map(|(f, &ir)| {
            let base = short.get(f).copied().unwrap_or(0);
            (f.clone(), (ir as f64 - base as f64) / n as f64)
        })
        .filter(|(_, ir)| ir.abs() >= 0.05)
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

fn table(per_rt: &[(String, f64)], mode: Mode) -> String {
    let total: f64 = per_rt.iter().map(|(_, ir)| ir).sum();
    let mut by_layer: HashMap<&str, f64> = HashMap::new();
    for (f, ir) in per_rt {
        *by_layer.entry(layer(f)).or_insert(0.0) += ir;
    }
    let mut layers: Vec<_> = by_layer.into_iter().collect();
    layers.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut s = format!(
        "instructions per {}, {LONG} − {SHORT} messages): {total:.0}\n\n| layer | instructions | share |\n|---|---:|---:|\n",
        mode.title()
    );
    for (name, ir) in &layers {
        s += &format!("| {name} | {ir:.0} | {:.0} % |\n", 100.0 * ir / total);
    }
    s += "\nthe 25 costliest functions (own instructions per message):\n";
    for (f, ir) in per_rt.iter().take(25) {
        s += &format!("{ir:>8.1}  {}  [{}]\n", short_name(f), layer(f));
    }
    s
}

/// A function's name without its argument list and hash suffix, cut to 110 characters.
fn short_name(f: &str) -> String {
    let f = f.split("::h").next().unwrap_or(f);
    f.chars().take(110).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_costs_leave_out_the_cost_of_calls() {
        let text = "events: Ir\nfn=a\n1 10\ncfn=b\ncalls=1 2\n3 500\n4 5\nfn=b\n2 500\n";
        let costs = self_costs(text);
        assert_eq!(costs["a"], 15);
        assert_eq!(costs["b"], 500);
    }

    #[test]
    fn functions_fall_into_the_first_layer_that_names_them() {
        assert_eq!(
            layer("dpakit_emu::capi::task::TaskPool<T>::alloc"),
            "C API: task pool"
        );
        assert_eq!(layer("doca_task_submit"), "C API: other entry points");
        assert_eq!(
            layer("doca_dpa_dev_thread_reschedule"),
            "device calls and kernel"
        );
        assert_eq!(layer("echo"), "device calls and kernel");
        assert_eq!(
            layer("dpakit_model::device_abi::post_send_imm"),
            "device calls and kernel"
        );
        assert_eq!(
            layer("dpakit_dpa_runtime::sched::Scheduler::step"),
            "DPA activations and the deterministic scheduler"
        );
        assert_eq!(
            layer("dpakit_dpa_runtime::isa_mode::bus::DeviceBus::load"),
            "ISA mode: device bus and ecall service"
        );
        assert_eq!(
            layer("dpakit_dpa_runtime::ring::CompletionRing::try_push"),
            MODEL
        );
        assert_eq!(layer("core::ptr::drop_in_place"), "std and everything else");
    }
}
