//! Soak: millions of messages across four DPA threads in each scheduling mode, then thousands of
//! create/drop cycles of a whole path, watching for lost, duplicated or reordered messages and
//! for resident memory that grows.
//!
//! Messages: four `ranked_echo` paths (one DPA thread each) on one DPA, each kept full (up to
//! its depth in flight). Every reply must carry its path's next sequence number, the path's
//! rank and the DPA producer's id. Resident memory (VmRSS) is sampled every million messages;
//! it must not grow from the first sample to the last by more than the tolerance.
//!
//! Cycles: paths created, used for one checked round trip and dropped on one long-lived DPA;
//! then fewer cycles of a DPA and its path together. Memory is sampled every tenth of the run.
//!
//! Each soak runs in a process of its own (the example starts itself once per mode and phase), so
//! memory an earlier soak freed cannot absorb, and hide, what a later one leaks.
//!
//! Exits non-zero on any lost, duplicated, reordered or corrupted message, any error, or memory
//! growth over the tolerance.
//!
//! ```sh
//! cargo run --release --example soak [-- --messages N --cycles N \
//!     --mode busy|sleep|deterministic|all --rss-tolerance-kib KIB]
//! ```

#[path = "support/cli.rs"]
mod cli;

use clap::{Command, value_parser};
use dpakit::abi::args::RankedPathArgs;
use dpakit::abi::{Echo, ImmMessage};
use dpakit::dpa::Dpa;
use dpakit::pe::Pe;
use dpakit::soft::SchedMode;
use dpakit::soft::SoftSettings;
use dpakit::{MsgqPath, kernels, kit_app, open_dpa_dev};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// DPA threads (and paths) in the message soak.
const THREADS: u32 = 4;
/// Messages in flight on each path.
const DEPTH: u32 = 32;
/// Seed of the deterministic mode.
const SEED: u64 = 0x5eed;
/// How long a path may stay silent with messages in flight before they count as lost.
const SILENCE: Duration = Duration::from_secs(10);

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

struct Flags {
    messages: u64,
    cycles: u64,
    mode: String,
    modes: Vec<(&'static str, SchedMode)>,
    tolerance_kib: u64,
    /// Set in the processes the example starts: the one soak to run.
    phase: Option<String>,
}

/// The soaks of each mode, by the name `--phase` takes.
const PHASES: [&str; 3] = ["messages", "path-cycles", "dpa-cycles"];

fn flags() -> Flags {
    let mut m = Command::new("soak")
        .about("Soaks MsgqPath with messages and create/drop cycles, checking order and memory")
        .arg(
            cli::flag("messages", 'n', "N", "10000000", "messages per mode")
                .value_parser(value_parser!(u64).range(1..)),
        )
        .arg(
            cli::flag(
                "cycles",
                'c',
                "N",
                "10000",
                "path create/drop cycles per mode",
            )
            .value_parser(value_parser!(u64)),
        )
        .arg(
            cli::flag("mode", 'm', "MODE", "all", "scheduling mode").value_parser([
                "busy",
                "sleep",
                "deterministic",
                "all",
            ]),
        )
        .arg(
            cli::flag(
                "rss-tolerance-kib",
                't',
                "KIB",
                "1024",
                "resident memory growth allowed from the first sample to the last",
            )
            .value_parser(value_parser!(u64)),
        )
        .arg(
            cli::flag(
                "phase",
                'p',
                "PHASE",
                "",
                "run one soak in this process (internal)",
            )
            .value_parser(["", PHASES[0], PHASES[1], PHASES[2]])
            .hide(true),
        )
        .get_matches();
    let all = [
        ("busy", SchedMode::BusyPoll),
        ("sleep", SchedMode::Sleep),
        ("deterministic", SchedMode::Deterministic { seed: SEED }),
    ];
    let mode: String = m.remove_one("mode").expect("has a default");
    let phase: String = m.remove_one("phase").expect("has a default");
    Flags {
        messages: m.remove_one("messages").expect("has a default"),
        cycles: m.remove_one("cycles").expect("has a default"),
        mode: mode.clone(),
        phase: (!phase.is_empty()).then_some(phase),
        modes: all
            .into_iter()
            .filter(|(name, _)| mode == "all" || mode == *name)
            .collect(),
        tolerance_kib: m.remove_one("rss-tolerance-kib").expect("has a default"),
    }
}

fn main() -> ExitCode {
    let flags = flags();
    if let Some(phase) = &flags.phase {
        return run_phase(phase, &flags);
    }
    // Every soak in a process of its own, one after the other.
    let mut failures = Vec::new();
    for &(name, _) in &flags.modes {
        for phase in PHASES {
            if phase != "messages" && flags.cycles == 0 {
                continue;
            }
            if let Err(e) = spawn_phase(name, phase, &flags) {
                failures.push(format!("{name}: {phase}: {e}"));
            }
        }
    }
    if failures.is_empty() {
        println!("\nsoak passed");
        ExitCode::SUCCESS
    } else {
        println!("\nsoak FAILED:");
        for f in &failures {
            println!("  {f}");
        }
        ExitCode::FAILURE
    }
}

/// This example again, running soak `phase` of mode `mode` with the same settings.
fn spawn_phase(mode: &str, phase: &str, flags: &Flags) -> Result<()> {
    let status = std::process::Command::new(std::env::current_exe()?)
        .args(["--mode", mode, "--phase", phase])
        .args(["--messages", &flags.messages.to_string()])
        .args(["--cycles", &flags.cycles.to_string()])
        .args(["--rss-tolerance-kib", &flags.tolerance_kib.to_string()])
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("failed ({status})").into())
    }
}

/// Soak `phase` of the one mode `--mode` names, in this process.
fn run_phase(phase: &str, flags: &Flags) -> ExitCode {
    let [(name, mode)] = flags.modes[..] else {
        eprintln!("--phase runs one mode, not `{}`", flags.mode);
        return ExitCode::FAILURE;
    };
    let result = match phase {
        "messages" => soak_messages(name, mode, flags),
        "path-cycles" => soak_path_cycles(name, mode, flags),
        _ => soak_dpa_cycles(name, mode, flags),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("  {name}: {phase}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The process's resident memory in KiB (VmRSS).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Memory samples of one run: (units done, VmRSS KiB).
struct Samples {
    unit: &'static str,
    rows: Vec<(u64, u64)>,
}

impl Samples {
    fn new(unit: &'static str) -> Self {
        Self {
            unit,
            rows: Vec::new(),
        }
    }

    fn take(&mut self, done: u64) {
        self.rows.push((done, rss_kib()));
    }

    /// Prints the table; fails if memory grew from the first sample to the last by more than
    /// the tolerance.
    fn check(&self, what: &str, tolerance_kib: u64) -> Result<()> {
        println!(
            "  {:>12} {:>12} {:>12}",
            self.unit, "VmRSS KiB", "Δ first KiB"
        );
        let first = self.rows.first().map_or(0, |r| r.1);
        for &(done, rss) in &self.rows {
            println!("  {done:>12} {rss:>12} {:>+12}", rss as i64 - first as i64);
        }
        let last = self.rows.last().map_or(0, |r| r.1);
        let growth = last as i64 - first as i64;
        println!("  RSS growth first→last {what}: {growth:+} KiB (tolerance {tolerance_kib} KiB)");
        if self.rows.len() >= 2 && growth > tolerance_kib as i64 {
            return Err(format!("resident memory grew {growth} KiB over {what}").into());
        }
        Ok(())
    }
}

/// What one path has seen.
#[derive(Default)]
struct PathCount {
    sent: u64,
    /// The next sequence number expected back.
    next: u64,
    duplicated: u64,
    skipped: u64,
    corrupted: u64,
}

fn soak_messages(name: &str, mode: SchedMode, flags: &Flags) -> Result<()> {
    let dev = open_dpa_dev()?;
    let dpa = start_dpa(&dev, mode)?;
    let pe = Pe::new()?;
    let paths = (0..THREADS)
        .map(|rank| {
            MsgqPath::builder(&dpa, &pe, &kernels::RANKED_ECHO)
                .depth(DEPTH)
                .args(move |path| RankedPathArgs {
                    path,
                    rank,
                    reserved: 0,
                })
                .start()
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;

    // Samples every million messages, or every tenth of a shorter run.
    let every = (flags.messages / 10).clamp(1, 1_000_000);
    println!(
        "\n[{name}] {} messages over {THREADS} DPA threads, depth {DEPTH}, VmRSS every {every}",
        flags.messages
    );
    let mut samples = Samples::new("messages");
    let mut counts: Vec<PathCount> = (0..THREADS).map(|_| PathCount::default()).collect();
    // Path `rank` carries messages rank, rank + THREADS, …: the total splits evenly or nearly.
    let quota =
        |rank: usize| (flags.messages + (THREADS as u64 - 1 - rank as u64)) / THREADS as u64;
    let mut received = 0u64;
    let mut last_reply = Instant::now();
    let mut idle = 0u32;
    let start = Instant::now();
    let mut interval_start = start;
    let mut rates = Vec::new();
    while received < flags.messages {
        let mut progressed = false;
        for (rank, path) in paths.iter().enumerate() {
            let count = &mut counts[rank];
            while count.sent < quota(rank) && count.sent - count.next < u64::from(DEPTH) {
                let token = count.sent;
                path.send_msg(&ImmMessage::new(
                    token as u32,
                    &Echo {
                        token,
                        timestamp_ns: 0,
                        tag: u64::MAX,
                    },
                ))?;
                count.sent += 1;
            }
            while let Some(reply) = path.try_recv()? {
                progressed = true;
                received += 1;
                let echo: Echo = reply.msg.view()?;
                if echo.tag != rank as u64
                    || reply.producer_id != path.producer_id()
                    || reply.msg.header.seq != echo.token as u32
                {
                    count.corrupted += 1;
                }
                if echo.token < count.next {
                    count.duplicated += 1;
                } else {
                    count.skipped += echo.token - count.next;
                    count.next = echo.token + 1;
                }
                if received % every == 0 {
                    let now = Instant::now();
                    rates.push(every as f64 / (now - interval_start).as_secs_f64());
                    interval_start = now;
                    samples.take(received);
                }
            }
        }
        if progressed {
            idle = 0;
            last_reply = Instant::now();
        } else {
            idle += 1;
            // Reading the clock costs as much as a poll: look at it now and then.
            if idle % 4096 == 0 && last_reply.elapsed() > SILENCE {
                break;
            }
        }
    }
    let elapsed = start.elapsed();
    dpa.check()?;

    let sent: u64 = counts.iter().map(|c| c.sent).sum();
    let duplicated: u64 = counts.iter().map(|c| c.duplicated).sum();
    let skipped: u64 = counts.iter().map(|c| c.skipped).sum();
    let corrupted: u64 = counts.iter().map(|c| c.corrupted).sum();
    let lost = sent.saturating_sub(received);
    let activations = dpa.stats()?.activations;
    println!(
        "  {received} replies to {sent} messages in {:.2} s: {:.0} msg/s \
         (per interval min {:.0}, max {:.0}), {activations} activations",
        elapsed.as_secs_f64(),
        received as f64 / elapsed.as_secs_f64(),
        rates.iter().copied().fold(f64::INFINITY, f64::min),
        rates.iter().copied().fold(0.0, f64::max),
    );
    println!(
        "  lost {lost}, duplicated or late {duplicated}, skipped {skipped}, corrupted {corrupted}"
    );
    let what = if every == 1_000_000 {
        "million"
    } else {
        "sample"
    };
    let memory = samples.check(what, flags.tolerance_kib);
    if lost + duplicated + skipped + corrupted > 0 {
        return Err(format!(
            "{lost} lost, {duplicated} duplicated, {skipped} skipped, {corrupted} corrupted"
        )
        .into());
    }
    memory
}

/// One checked round trip on a fresh path.
fn use_path(path: &MsgqPath, cycle: u64) -> Result<()> {
    let sent = ImmMessage::new(
        cycle as u32,
        &Echo {
            token: cycle,
            timestamp_ns: 0,
            tag: !cycle,
        },
    );
    let reply = path.round_trip(&sent, SILENCE)?;
    if reply.msg != sent || reply.producer_id != path.producer_id() {
        return Err(format!("cycle {cycle}: the echo differs from what was sent").into());
    }
    Ok(())
}

/// A DPA running the kit's app in `mode`.
fn start_dpa(dev: &dpakit::dev::Dev, mode: SchedMode) -> Result<Dpa> {
    let mut builder = Dpa::builder(dev).app(kit_app()).sched_mode(mode);
    if mode == SchedMode::BusyPoll {
        // One spinning worker leaves a core to the host thread that drives the paths.
        builder = builder.workers(1);
    }
    Ok(builder.start()?)
}

/// Paths created, used once and dropped on one long-lived DPA.
fn soak_path_cycles(name: &str, mode: SchedMode, flags: &Flags) -> Result<()> {
    let dev = open_dpa_dev()?;
    let every = (flags.cycles / 10).max(1);
    println!(
        "\n[{name}] {} create/drop cycles of a path on one DPA, VmRSS every {every}",
        flags.cycles
    );
    let mut paths = Samples::new("cycles");
    let start = Instant::now();
    let run = (|| -> Result<()> {
        let dpa = start_dpa(&dev, mode)?;
        let pe = Pe::new()?;
        for cycle in 1..=flags.cycles {
            let path = MsgqPath::builder(&dpa, &pe, &kernels::ECHO)
                .depth(8)
                .start()
                .map_err(|e| format!("creating path {cycle}: {e}"))?;
            use_path(&path, cycle)?;
            drop(path);
            if cycle % every == 0 {
                paths.take(cycle);
            }
        }
        Ok(dpa.check()?)
    })();
    println!(
        "  {:.0} cycles/s",
        paths.rows.last().map_or(0, |r| r.0) as f64 / start.elapsed().as_secs_f64()
    );
    let memory = paths.check("sample", flags.tolerance_kib);
    run.and(memory)
}

/// A tenth as many cycles of a DPA with its path.
fn soak_dpa_cycles(name: &str, mode: SchedMode, flags: &Flags) -> Result<()> {
    let dev = open_dpa_dev()?;
    let whole = (flags.cycles / 10).max(1);
    let every = (whole / 10).max(1);
    println!("\n[{name}] {whole} create/drop cycles of a DPA and its path, VmRSS every {every}");
    let mut dpas = Samples::new("cycles");
    let start = Instant::now();
    let run = (|| -> Result<()> {
        for cycle in 1..=whole {
            let dpa = start_dpa(&dev, mode).map_err(|e| format!("creating DPA {cycle}: {e}"))?;
            let pe = Pe::new()?;
            let path = MsgqPath::builder(&dpa, &pe, &kernels::ECHO)
                .depth(8)
                .start()
                .map_err(|e| format!("creating path {cycle}: {e}"))?;
            use_path(&path, cycle)?;
            drop(path);
            dpa.check()?;
            drop(dpa);
            if cycle % every == 0 {
                dpas.take(cycle);
            }
        }
        Ok(())
    })();
    println!(
        "  {:.0} cycles/s",
        dpas.rows.last().map_or(0, |r| r.0) as f64 / start.elapsed().as_secs_f64()
    );
    let memory = dpas.check("sample", flags.tolerance_kib);
    run.and(memory)
}
