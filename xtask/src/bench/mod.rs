//! `cargo xtask bench [--quick]`: run the criterion benches and the latency example, then write
//! a report that sets every dpakit figure beside the baselines measured in the same run.
//!
//! Everything is compiled first (`cargo bench --no-run`, `cargo build --release --example
//! latency`) so no compile time is mixed into a measurement. The nested cargos run from the
//! workspace root with a scrubbed environment (as `build-dpa` does), and criterion is told where
//! to write (`CRITERION_HOME=<target>/criterion`). Results are then found by walking that
//! directory and reading each `new/benchmark.json` for the benchmark's id — never by guessing
//! directory names — and only files written after the measurements started are read, so a stale
//! result from an earlier run never reaches a report.
//!
//! Benchmark ids follow `<bench>/<figure>/<subject>`, where the subject is `dpakit` or a
//! baseline. The report, in `<target>/bench/`:
//!
//! - `report.json`: one row per (figure, baseline) pair with both values and
//!   `ratio = dpakit / baseline`, in ns (lower is better), msg/s or GiB/s (higher is better);
//! - `report.md`: the machine, the date, one table per bench, the latency distribution from
//!   `latency.json` and the project's targets evaluated mechanically (met / missed);
//! - `latency.svg` and `latency.png`: the latency distribution as grouped bars on a log axis,
//!   converted with `rsvg-convert` (Debian `librsvg2-bin`, installed when missing).

mod criterion;
mod latency;
mod report;
mod rows;
mod svg;

pub use criterion::*;
pub use latency::*;
pub use report::*;
pub use rows::*;
pub use svg::*;

use crate::{Result, setup, workspace_root};
use dpakit_build::cargo::scrub_environment;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

/// The criterion benches of the root package, in the order they run and are reported.
pub const BENCHES: &[&str] = &["rtt", "throughput", "dma", "threads", "comch"];

/// Each bench's figures, in report order (figures not listed here follow, sorted).
const FIGURES: &[(&str, &[&str])] = &[
    (
        "rtt",
        &["busy_0B", "busy_8B", "busy_16B", "busy_32B", "sleep_32B"],
    ),
    (
        "throughput",
        &["credits_1", "credits_16", "credits_256", "credits_1024"],
    ),
    ("dma", &["64B", "4KiB", "64KiB", "1MiB", "4MiB"]),
    ("threads", &["1", "2", "4", "8"]),
    (
        "comch",
        &[
            "ctrl_rtt_64B",
            "fast_rtt_64B",
            "fast_4KiB",
            "fast_64KiB",
            "fast_1MiB",
        ],
    ),
];

/// The subject every figure is about.
pub const DPAKIT: &str = "dpakit";

/// The physical limit of a round trip: not a peer, a floor.
pub const LIMIT: &str = "raw_ping_pong";

/// Baselines in report order (others follow, sorted), with what each one is.
pub const BASELINES: &[(&str, &str)] = &[
    (
        LIMIT,
        "two threads bouncing a value through one cache line each, on the same two cores: the \
         physical limit of a core-to-core round trip",
    ),
    (
        "shm_ping_pong",
        "two processes bouncing a value through cache lines of a shared page: the limit of a \
         round trip between processes",
    ),
    (
        "seqpacket_spin",
        "a SOCK_SEQPACKET socket pair between two processes, both busy-polling: the floor of \
         the soft device's socket transport",
    ),
    (
        "iceoryx2",
        "iceoryx2 zero-copy publish-subscribe between two processes",
    ),
    ("crossbeam", "a pair of bounded crossbeam-channel queues"),
    ("rtrb", "a pair of rtrb wait-free SPSC ring buffers"),
    ("mpsc", "a pair of std::sync::mpsc sync_channel queues"),
    ("unix_socket", "a Unix stream socket pair"),
    ("condvar", "a Mutex + Condvar hand-off (a sleeping peer)"),
    (
        "memcpy",
        "copy_from_slice on the CPU: what a DMA copy competes with",
    ),
    (
        "memcpy_ws",
        "copy_from_slice over a stream's working set (16 sources into 16 destinations in turn)",
    ),
];

/// Criterion arguments of `--quick`: short warm-up and measurement, the minimum sample count
/// and a smaller bootstrap (the analysis of ~60 benchmarks otherwise adds up).
pub const QUICK_CRITERION_ARGS: &[&str] = &[
    "--warm-up-time",
    "0.3",
    "--measurement-time",
    "0.7",
    "--sample-size",
    "10",
    "--nresamples",
    "10000",
];

/// The latency distribution's example.
const LATENCY_EXAMPLE: &str = "latency";

/// A font for the plot's labels: rsvg-convert draws no text without one.
const FONT: (&str, &str) = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "fonts-dejavu-core",
);

/// What `cargo xtask bench` was asked for.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Short criterion runs and a short latency example (a smoke run, not a measurement).
    pub quick: bool,
}

/// Runs everything and writes the report.
pub fn run(opts: &Options) -> Result {
    let started = Instant::now();
    // Before minutes of measuring: a missing converter only costs the PNG, say so up front.
    let png_tool = setup::ensure_debian_packages(&[("rsvg-convert", "librsvg2-bin")])
        .and_then(|()| setup::ensure_debian_files(&[FONT]));
    if let Err(why) = &png_tool {
        eprintln!("note: latency.png will be skipped: {why}");
    }

    let mut cargo = NestedCargo::new();
    let meta = cargo.metadata()?;
    let out_dir = meta.target_dir.join("bench");
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
    let latency_json = out_dir.join("latency.json");
    for stale in [
        "report.json",
        "report.md",
        "latency.json",
        "latency.svg",
        "latency.png",
    ] {
        let _ = std::fs::remove_file(out_dir.join(stale));
    }

    let mut notes = Vec::new();
    let benches: Vec<&str> = BENCHES
        .iter()
        .copied()
        .filter(|b| {
            let present = meta.benches.iter().any(|name| name == b);
            if !present {
                notes.push(format!(
                    "bench `{b}` does not exist (benches/{b}.rs): not run"
                ));
            }
            present
        })
        .collect();
    let latency_example = meta.examples.iter().any(|e| e == LATENCY_EXAMPLE);
    if !latency_example {
        notes.push(format!(
            "example `{LATENCY_EXAMPLE}` does not exist (examples/{LATENCY_EXAMPLE}.rs): no \
             latency distribution"
        ));
    }
    for note in &notes {
        eprintln!("note: {note}");
    }

    let steps = 1 + benches.len() + usize::from(latency_example);
    let mut step = 0;
    let mut progress = |what: &str| {
        step += 1;
        eprintln!(
            "==> [{step}/{steps}] {what}   ({:.0} s elapsed)",
            started.elapsed().as_secs_f64()
        );
    };

    progress("compiling the benches and the latency example");
    let mut no_run = vec!["bench", "--no-run"];
    for bench in &benches {
        no_run.extend(["--bench", bench]);
    }
    if !benches.is_empty() {
        cargo.run(&no_run)?;
    }
    if latency_example {
        cargo.run(&["build", "--release", "--example", LATENCY_EXAMPLE])?;
    }
    let compile_time = started.elapsed();

    let measuring = Instant::now();
    // Whatever criterion writes from now on is this run's; anything older is stale.
    let since = SystemTime::now() - Duration::from_secs(1);
    let mut failures = Vec::new();
    for bench in &benches {
        let mut args = vec!["bench", "--bench", bench, "--"];
        if opts.quick {
            args.extend(QUICK_CRITERION_ARGS);
        }
        progress(&format!("cargo {}", args.join(" ")));
        if let Err(e) = cargo.run(&args) {
            eprintln!("error: {e}");
            failures.push(e);
        }
    }
    if latency_example {
        let out = latency_json
            .to_str()
            .ok_or("the target directory is not UTF-8")?;
        let mut args = vec!["run", "--release", "--example", LATENCY_EXAMPLE, "--"];
        if opts.quick {
            args.push("--quick");
        }
        args.extend(["--out", out]);
        progress(&format!("cargo {}", args.join(" ")));
        if let Err(e) = cargo.run(&args) {
            eprintln!("error: {e}");
            failures.push(e);
        }
    }
    let measure_time = measuring.elapsed();

    let measurements = collect_criterion(&cargo.criterion_home, since, &mut notes)?;
    let (rows, row_notes) = build_rows(&measurements);
    notes.extend(row_notes);
    let latency = if written_since(&latency_json, since) {
        let text = std::fs::read_to_string(&latency_json)
            .map_err(|e| format!("cannot read {}: {e}", latency_json.display()))?;
        parse_latency(&text).unwrap_or_else(|e| {
            notes.push(format!("{}: {e}", latency_json.display()));
            Vec::new()
        })
    } else {
        if latency_example {
            notes.push("the latency example wrote no latency.json".into());
        }
        Vec::new()
    };

    let mut plot = None;
    if !latency.is_empty() {
        let svg_path = out_dir.join("latency.svg");
        write(&svg_path, &latency_svg(&latency))?;
        match png_tool.and_then(|()| svg_to_png(&svg_path, &out_dir.join("latency.png"))) {
            Ok(()) => plot = Some("latency.png"),
            Err(why) => {
                notes.push(format!("latency.png not drawn: {why}"));
                plot = Some("latency.svg");
            }
        }
    }

    let header = Header {
        cpu: cpu_model(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        date_utc: utc_date(SystemTime::now()),
        quick: opts.quick,
        measure_secs: measure_time.as_secs_f64(),
    };
    let json = serde_json::to_string_pretty(&rows_json(&rows)).expect("JSON values serialize");
    write(&out_dir.join("report.json"), &(json + "\n"))?;
    let markdown = render_markdown(&header, &rows, &latency, &notes, plot);
    write(&out_dir.join("report.md"), &markdown)?;

    println!("{markdown}");
    eprintln!(
        "==> wrote {} (compiled in {:.0} s, measured in {:.0} s, {:.0} s in all)",
        out_dir.display(),
        compile_time.as_secs_f64(),
        measure_time.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} of the measuring runs failed (the report holds what the others measured):\n  {}",
            failures.len(),
            failures.join("\n  ")
        ))
    }
}

fn write(path: &Path, contents: &str) -> Result {
    std::fs::write(path, contents).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Cargo run from the workspace root with the environment `build-dpa` uses: only what finds the
/// toolchain and the registry, none of the outer invocation's build settings.
struct NestedCargo {
    cargo: String,
    criterion_home: PathBuf,
}

/// What `cargo metadata` says about the workspace.
struct Metadata {
    target_dir: PathBuf,
    /// Bench targets of the root package.
    benches: Vec<String>,
    /// Example targets of the root package.
    examples: Vec<String>,
}

impl NestedCargo {
    fn new() -> Self {
        NestedCargo {
            cargo: std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()),
            criterion_home: PathBuf::new(),
        }
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.cargo);
        cmd.current_dir(workspace_root());
        scrub_environment(&mut cmd);
        if !self.criterion_home.as_os_str().is_empty() {
            cmd.env("CRITERION_HOME", &self.criterion_home);
        }
        cmd
    }

    /// Reads the target directory and the root package's benches and examples; from now on
    /// criterion writes to `<target>/criterion`.
    fn metadata(&mut self) -> Result<Metadata> {
        let output = self
            .command()
            .args(["metadata", "--format-version", "1", "--no-deps"])
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.cargo))?;
        if !output.status.success() {
            return Err(format!(
                "`cargo metadata` failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        let meta: Value = serde_json::from_slice(&output.stdout)
            .map_err(|e| format!("cannot parse `cargo metadata`: {e}"))?;
        let target_dir = PathBuf::from(
            meta["target_directory"]
                .as_str()
                .ok_or("`cargo metadata` names no target directory")?,
        );
        let root_manifest = workspace_root().join("Cargo.toml");
        let root = meta["packages"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| {
                p["manifest_path"]
                    .as_str()
                    .is_some_and(|m| Path::new(m) == root_manifest)
            })
            .ok_or("`cargo metadata` does not list the root package")?;
        let targets_of = |kind: &str| -> Vec<String> {
            root["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|t| {
                    t["kind"]
                        .as_array()
                        .is_some_and(|k| k.iter().any(|k| k == kind))
                })
                .filter_map(|t| t["name"].as_str().map(String::from))
                .collect()
        };
        self.criterion_home = target_dir.join("criterion");
        Ok(Metadata {
            benches: targets_of("bench"),
            examples: targets_of("example"),
            target_dir,
        })
    }

    fn run(&self, args: &[&str]) -> Result {
        let status = self
            .command()
            .args(args)
            .status()
            .map_err(|e| format!("cannot run {}: {e}", self.cargo))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("`cargo {}` failed ({status})", args.join(" ")))
        }
    }
}

fn svg_to_png(svg: &Path, png: &Path) -> Result {
    let output = Command::new("rsvg-convert")
        .args([
            "--format",
            "png",
            "--zoom",
            "1.5",
            "--background-color",
            "white",
        ])
        .arg("--output")
        .arg(png)
        .arg(svg)
        .output()
        .map_err(|e| format!("cannot run rsvg-convert: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "rsvg-convert failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod svg_tests;
