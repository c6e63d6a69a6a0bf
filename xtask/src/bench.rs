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

use crate::{Result, setup, workspace_root};
use dpakit_build::cargo::scrub_environment;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

/// The criterion benches of the root package, in the order they run and are reported.
pub const BENCHES: &[&str] = &["rtt", "throughput", "dma", "threads"];

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
    ("crossbeam", "a pair of bounded crossbeam-channel queues"),
    ("rtrb", "a pair of rtrb wait-free SPSC ring buffers"),
    ("mpsc", "a pair of std::sync::mpsc sync_channel queues"),
    ("unix_socket", "a Unix stream socket pair"),
    ("condvar", "a Mutex + Condvar hand-off (a sleeping peer)"),
    (
        "memcpy",
        "copy_from_slice on the CPU: what a DMA copy competes with",
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

// ---------------------------------------------------------------------------------------------
// Criterion's results
// ---------------------------------------------------------------------------------------------

/// How much one criterion iteration processes (`benchmark.json`'s `throughput`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throughput {
    /// Messages (or other elements) per iteration.
    Elements(u64),
    /// Bytes per iteration.
    Bytes(u64),
}

/// One criterion benchmark's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// `rtt`, `throughput`, `dma`, `threads`.
    pub bench: String,
    /// The figure within the bench, e.g. `busy_32B`.
    pub figure: String,
    /// `dpakit` or a baseline.
    pub subject: String,
    /// Median time of one iteration (criterion's `median.point_estimate`), in ns.
    pub median_ns: f64,
    /// What one iteration processes, when the bench declared it.
    pub throughput: Option<Throughput>,
}

/// The unit of a reported value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds per operation: lower is better.
    Ns,
    /// Messages per second: higher is better.
    MsgPerSec,
    /// GiB per second: higher is better.
    GibPerSec,
}

impl Unit {
    /// The unit as `report.json` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::MsgPerSec => "msg/s",
            Unit::GibPerSec => "GiB/s",
        }
    }

    /// Rates are better high, latencies low.
    pub fn higher_is_better(self) -> bool {
        self != Unit::Ns
    }

    fn format(self, value: f64) -> String {
        match self {
            Unit::Ns => format_ns(value),
            Unit::MsgPerSec => format_rate(value),
            Unit::GibPerSec => format!("{} GiB/s", sig3(value)),
        }
    }
}

impl Measurement {
    /// The figure as reported, by bench: `rtt` in ns per round trip (the median divided by the
    /// messages of one iteration, when the bench declared them); `throughput` in msg/s (one
    /// message per iteration unless declared); `dma` in GiB/s (the declared bytes, else the
    /// figure's size: `64KiB`); any other bench by what it declared: messages → msg/s, bytes →
    /// GiB/s, nothing → ns.
    pub fn value(&self) -> (f64, Unit) {
        let per_iter = self.median_ns.max(f64::MIN_POSITIVE);
        let elements = match self.throughput {
            Some(Throughput::Elements(n)) if n > 0 => Some(n as f64),
            _ => None,
        };
        let bytes = match self.throughput {
            Some(Throughput::Bytes(n)) => Some(n),
            _ => None,
        };
        let unit = match (self.bench.as_str(), self.throughput) {
            ("rtt", _) => Unit::Ns,
            ("throughput", _) => Unit::MsgPerSec,
            ("dma", _) => Unit::GibPerSec,
            (_, Some(Throughput::Elements(_))) => Unit::MsgPerSec,
            (_, Some(Throughput::Bytes(_))) => Unit::GibPerSec,
            (_, None) => Unit::Ns,
        };
        match unit {
            Unit::Ns => (self.median_ns / elements.unwrap_or(1.0), Unit::Ns),
            Unit::MsgPerSec => (elements.unwrap_or(1.0) * 1e9 / per_iter, Unit::MsgPerSec),
            Unit::GibPerSec => match bytes.or_else(|| parse_size(&self.figure)) {
                Some(n) => (
                    n as f64 * 1e9 / per_iter / f64::from(1u32 << 30),
                    Unit::GibPerSec,
                ),
                None => (self.median_ns, Unit::Ns),
            },
        }
    }
}

/// `64B`, `4KiB`, `1MiB`, `2GiB` → bytes.
pub fn parse_size(text: &str) -> Option<u64> {
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let n: u64 = text[..digits].parse().ok()?;
    let scale = match &text[digits..] {
        "B" | "" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return None,
    };
    Some(n * scale)
}

/// Splits `<bench>/<figure>/<subject>`; the figure may itself contain `/`.
pub fn split_id(id: &str) -> Option<(&str, &str, &str)> {
    let (bench, rest) = id.split_once('/')?;
    let (figure, subject) = rest.rsplit_once('/')?;
    (!bench.is_empty() && !figure.is_empty() && !subject.is_empty())
        .then_some((bench, figure, subject))
}

/// Parses one benchmark's `new/benchmark.json` and `new/estimates.json`.
pub fn parse_measurement(benchmark_json: &str, estimates_json: &str) -> Result<Measurement> {
    let id: Value =
        serde_json::from_str(benchmark_json).map_err(|e| format!("benchmark.json: {e}"))?;
    let full_id = match id["full_id"].as_str() {
        Some(full) => full.to_string(),
        None => {
            let group = id["group_id"]
                .as_str()
                .ok_or("benchmark.json has no group_id")?;
            [
                Some(group),
                id["function_id"].as_str(),
                id["value_str"].as_str(),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("/")
        }
    };
    let (bench, figure, subject) = split_id(&full_id).ok_or_else(|| {
        format!("benchmark `{full_id}` does not follow <bench>/<figure>/<subject>")
    })?;
    let throughput = match &id["throughput"] {
        Value::Null => None,
        t => {
            if let Some(n) = t["Elements"].as_u64() {
                Some(Throughput::Elements(n))
            } else if let Some(n) = t["Bytes"].as_u64().or(t["BytesDecimal"].as_u64()) {
                Some(Throughput::Bytes(n))
            } else {
                return Err(format!("benchmark `{full_id}`: unknown throughput {t}"));
            }
        }
    };
    let estimates: Value =
        serde_json::from_str(estimates_json).map_err(|e| format!("estimates.json: {e}"))?;
    let median_ns = estimates["median"]["point_estimate"]
        .as_f64()
        .filter(|m| m.is_finite() && *m > 0.0)
        .ok_or_else(|| format!("benchmark `{full_id}`: estimates.json has no median"))?;
    Ok(Measurement {
        bench: bench.into(),
        figure: figure.into(),
        subject: subject.into(),
        median_ns,
        throughput,
    })
}

fn written_since(path: &Path, since: SystemTime) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t >= since)
}

/// Every benchmark under `criterion_home` whose `new/estimates.json` was written at or after
/// `since`. Results that cannot be read or do not follow the id contract become notes.
pub fn collect_criterion(
    criterion_home: &Path,
    since: SystemTime,
    notes: &mut Vec<String>,
) -> Result<Vec<Measurement>> {
    let mut found: BTreeMap<(String, String, String), (SystemTime, Measurement)> = BTreeMap::new();
    let mut pending = vec![criterion_home.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if entry.file_name() != "new" {
                pending.push(path);
                continue;
            }
            let estimates = path.join("estimates.json");
            let Ok(modified) = std::fs::metadata(&estimates).and_then(|m| m.modified()) else {
                continue;
            };
            if modified < since {
                continue;
            }
            let read = |name: &str| std::fs::read_to_string(path.join(name));
            let parsed = match (read("benchmark.json"), read("estimates.json")) {
                (Ok(b), Ok(e)) => parse_measurement(&b, &e),
                (Err(e), _) | (_, Err(e)) => Err(e.to_string()),
            };
            match parsed {
                Ok(m) => {
                    let key = (m.bench.clone(), m.figure.clone(), m.subject.clone());
                    let newer = found.get(&key).is_none_or(|(t, _)| *t <= modified);
                    if newer {
                        found.insert(key, (modified, m));
                    }
                }
                Err(e) => notes.push(format!("{} skipped: {e}", path.display())),
            }
        }
    }
    if !criterion_home.is_dir() {
        return Err(format!(
            "no criterion results in {}: did the benches run?",
            criterion_home.display()
        ));
    }
    Ok(found.into_values().map(|(_, m)| m).collect())
}

// ---------------------------------------------------------------------------------------------
// Rows
// ---------------------------------------------------------------------------------------------

/// One figure of dpakit beside one baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `<bench>/<figure>`.
    pub figure: String,
    /// dpakit's value.
    pub dpakit: f64,
    /// The baseline's value.
    pub baseline: f64,
    /// The baseline's subject name.
    pub baseline_name: String,
    /// `dpakit / baseline`.
    pub ratio: f64,
    /// The unit of both values.
    pub unit: Unit,
}

impl Row {
    /// Whether dpakit beats the baseline (lower latency, or higher rate).
    pub fn better(&self) -> bool {
        if self.unit.higher_is_better() {
            self.dpakit > self.baseline
        } else {
            self.dpakit < self.baseline
        }
    }

    /// The bench part of the figure.
    pub fn bench(&self) -> &str {
        self.figure.split('/').next().unwrap_or_default()
    }
}

fn rank<'a>(order: &'a [&'a str], name: &'a str) -> (usize, &'a str) {
    (
        order.iter().position(|o| *o == name).unwrap_or(order.len()),
        name,
    )
}

fn baseline_rank(name: &str) -> (usize, &str) {
    let order: Vec<&str> = BASELINES.iter().map(|(n, _)| *n).collect();
    (
        order.iter().position(|o| *o == name).unwrap_or(order.len()),
        name,
    )
}

fn figure_order(bench: &str) -> &'static [&'static str] {
    FIGURES
        .iter()
        .find(|(b, _)| *b == bench)
        .map_or(&[], |(_, f)| f)
}

/// One row per (figure, baseline) pair that has both a dpakit and a baseline measurement,
/// ordered by bench, figure and baseline as the contract lists them. Measurements that cannot
/// be paired become notes.
pub fn build_rows(measurements: &[Measurement]) -> (Vec<Row>, Vec<String>) {
    let mut notes = Vec::new();
    let mut by_figure: BTreeMap<(&str, &str), Vec<&Measurement>> = BTreeMap::new();
    for m in measurements {
        by_figure
            .entry((m.bench.as_str(), m.figure.as_str()))
            .or_default()
            .push(m);
    }
    let mut figures: Vec<(&str, &str)> = by_figure.keys().copied().collect();
    figures.sort_by(|(b1, f1), (b2, f2)| {
        rank(BENCHES, b1)
            .cmp(&rank(BENCHES, b2))
            .then_with(|| rank(figure_order(b1), f1).cmp(&rank(figure_order(b2), f2)))
    });

    let mut rows = Vec::new();
    for key @ (bench, figure) in figures {
        let mut subjects = by_figure[&key].clone();
        subjects.sort_by(|a, b| baseline_rank(&a.subject).cmp(&baseline_rank(&b.subject)));
        let Some(dpakit) = subjects.iter().find(|m| m.subject == DPAKIT) else {
            notes.push(format!("{bench}/{figure}: no dpakit measurement"));
            continue;
        };
        let (ours, unit) = dpakit.value();
        let mut baselines = 0;
        for base in subjects.iter().filter(|m| m.subject != DPAKIT) {
            let (theirs, their_unit) = base.value();
            if their_unit != unit {
                notes.push(format!(
                    "{bench}/{figure}: dpakit is in {} but {} in {}: not compared",
                    unit.as_str(),
                    base.subject,
                    their_unit.as_str()
                ));
                continue;
            }
            baselines += 1;
            rows.push(Row {
                figure: format!("{bench}/{figure}"),
                dpakit: ours,
                baseline: theirs,
                baseline_name: base.subject.clone(),
                ratio: ours / theirs,
                unit,
            });
        }
        if baselines == 0 {
            notes.push(format!("{bench}/{figure}: no baseline measured"));
        }
    }
    (rows, notes)
}

/// Rounds to `digits` significant digits (keeps report.json readable).
fn round_sig(value: f64, digits: i32) -> f64 {
    if value == 0.0 || !value.is_finite() {
        return value;
    }
    let scale = 10f64.powi(digits - 1 - value.abs().log10().floor() as i32);
    (value * scale).round() / scale
}

/// What `report.json` holds.
pub fn rows_json(rows: &[Row]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                json!({
                    "figure": r.figure,
                    "dpakit": round_sig(r.dpakit, 6),
                    "baseline": round_sig(r.baseline, 6),
                    "baseline_name": r.baseline_name,
                    "ratio": round_sig(r.ratio, 4),
                    "unit": r.unit.as_str(),
                })
            })
            .collect(),
    )
}

// ---------------------------------------------------------------------------------------------
// The latency distribution (latency.json)
// ---------------------------------------------------------------------------------------------

/// The percentiles the report and the plot show.
pub const PERCENTILES: [&str; 4] = ["p50", "p90", "p99", "p99.9"];

/// One subject's round-trip latency distribution, in ns.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyDist {
    /// `dpakit`, `raw_ping_pong` or a peer.
    pub subject: String,
    /// p50, p90, p99, p99.9 in ns.
    pub percentiles: [f64; 4],
    /// How many round trips were timed, when latency.json says.
    pub samples: Option<u64>,
}

/// Reads the latency example's output. Accepted shapes, with the subjects as
///
/// - an array of objects: `[{"subject": "dpakit", "p50": 610, "p90": ..., "p99": ...,
///   "p99_9": ..., "samples": 100000}, ...]`,
/// - an object holding such an array under `subjects`, `results`, `series` or `rows`,
/// - or an object keyed by subject: `{"dpakit": {"p50_ns": 610, ...}, ...}`;
///
/// and each percentile named `p50`, `p50_ns`, `p99.9`, `p99_9`, `p999` (in ns; `_us` in µs),
/// possibly one level down (`"percentiles": {...}`). Subjects are returned dpakit first, then
/// in baseline order.
pub fn parse_latency(text: &str) -> Result<Vec<LatencyDist>> {
    let root: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let mut dists = Vec::new();
    collect_dists(&root, None, &mut dists);
    if dists.is_empty() {
        return Err("no subject with p50/p90/p99/p99.9 found".into());
    }
    dists.sort_by(|a, b| {
        (a.subject != DPAKIT, baseline_rank(&a.subject))
            .cmp(&(b.subject != DPAKIT, baseline_rank(&b.subject)))
    });
    dists.dedup_by(|a, b| a.subject == b.subject);
    Ok(dists)
}

fn collect_dists(value: &Value, key: Option<&str>, out: &mut Vec<LatencyDist>) {
    match value {
        Value::Array(items) => {
            for item in items {
                collect_dists(item, None, out);
            }
        }
        Value::Object(map) => {
            let name = ["subject", "name", "id", "label"]
                .iter()
                .find_map(|k| map.get(*k).and_then(Value::as_str))
                .or(key);
            if let (Some(name), Some(percentiles)) = (name, percentiles_of(value)) {
                let samples = ["samples", "count", "n", "round_trips"]
                    .iter()
                    .find_map(|k| map.get(*k).and_then(Value::as_u64));
                out.push(LatencyDist {
                    subject: name.to_string(),
                    percentiles,
                    samples,
                });
                return;
            }
            for (k, v) in map {
                if v.is_object() || v.is_array() {
                    collect_dists(v, Some(k), out);
                }
            }
        }
        _ => {}
    }
}

/// `p99.9_ns` → (`999`, 1.0); `p50_us` → (`50`, 1000.0); `median` → (`50`, 1.0).
fn percentile_key(key: &str) -> Option<(String, f64)> {
    let key = key.to_ascii_lowercase();
    let (key, scale) = if let Some(k) = key.strip_suffix("_us").or(key.strip_suffix("us")) {
        (k.to_string(), 1e3)
    } else {
        (
            key.strip_suffix("_ns")
                .or(key.strip_suffix("ns"))
                .unwrap_or(&key)
                .to_string(),
            1.0,
        )
    };
    if key == "median" {
        return Some(("50".into(), scale));
    }
    let digits: String = key
        .strip_prefix('p')?
        .chars()
        .filter(|c| !matches!(c, '.' | '_'))
        .collect();
    (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())).then_some((digits, scale))
}

/// Objects inside a subject's entry that may hold its percentiles (and, by their suffix, the
/// unit: `latency_us`).
const PERCENTILE_CONTAINERS: &[&str] = &[
    "percentiles",
    "quantiles",
    "latency",
    "rtt",
    "round_trip",
    "stats",
    "summary",
];

fn percentiles_of(value: &Value) -> Option<[f64; 4]> {
    let mut found: BTreeMap<String, f64> = BTreeMap::new();
    let mut scan = |map: &serde_json::Map<String, Value>, outer_scale: f64| {
        for (k, v) in map {
            if let (Some((p, scale)), Some(x)) = (percentile_key(k), v.as_f64()) {
                found.entry(p).or_insert(x * scale * outer_scale);
            }
        }
    };
    let map = value.as_object()?;
    scan(map, 1.0);
    for (key, nested) in map {
        let Some(nested) = nested.as_object() else {
            continue;
        };
        let key = key.to_ascii_lowercase();
        let (name, scale) = if let Some(name) = key.strip_suffix("_us") {
            (name, 1e3)
        } else {
            (key.strip_suffix("_ns").unwrap_or(&key), 1.0)
        };
        if PERCENTILE_CONTAINERS.contains(&name) || matches!(name, "ns" | "us") {
            scan(nested, if name == "us" { 1e3 } else { scale });
        }
    }
    let get = |p: &str| found.get(p).copied();
    Some([get("50")?, get("90")?, get("99")?, get("999")?])
}

// ---------------------------------------------------------------------------------------------
// report.md
// ---------------------------------------------------------------------------------------------

/// The report's header.
#[derive(Debug, Clone)]
pub struct Header {
    /// `/proc/cpuinfo`'s model name.
    pub cpu: String,
    /// `available_parallelism`.
    pub cores: usize,
    /// `YYYY-MM-DD HH:MM UTC`.
    pub date_utc: String,
    /// Whether `--quick` was used.
    pub quick: bool,
    /// How long the measurements took.
    pub measure_secs: f64,
}

/// The CPU's model name, from `/proc/cpuinfo`.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| model_name(&info))
        .unwrap_or_else(|| "unknown CPU".into())
}

fn model_name(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_string())
    })
}

/// `YYYY-MM-DD HH:MM UTC` for a point in time.
pub fn utc_date(time: SystemTime) -> String {
    let secs = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60
    )
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn sig3(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// `87.3 ns`, `1.25 µs`, `3.40 ms`.
pub fn format_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{} ms", sig3(ns / 1e6))
    } else if ns >= 1e3 {
        format!("{} µs", sig3(ns / 1e3))
    } else {
        format!("{} ns", sig3(ns))
    }
}

/// `512k msg/s`, `12.3M msg/s`.
pub fn format_rate(per_sec: f64) -> String {
    if per_sec >= 1e9 {
        format!("{}G msg/s", sig3(per_sec / 1e9))
    } else if per_sec >= 1e6 {
        format!("{}M msg/s", sig3(per_sec / 1e6))
    } else if per_sec >= 1e3 {
        format!("{}k msg/s", sig3(per_sec / 1e3))
    } else {
        format!("{} msg/s", sig3(per_sec))
    }
}

/// `1.21×`, `0.58×`, and two significant digits below 0.1: `0.0049×`.
pub fn format_ratio(ratio: f64) -> String {
    if !(ratio.is_finite() && ratio > 0.0) || ratio >= 0.1 {
        format!("{ratio:.2}×")
    } else {
        let decimals = (1 - ratio.log10().floor() as i32) as usize;
        format!("{ratio:.decimals$}×")
    }
}

fn baseline_label(name: &str) -> String {
    if name == LIMIT {
        format!("{name} (limit)")
    } else {
        name.to_string()
    }
}

/// Whether a project target was met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The numbers satisfy the target.
    Met,
    /// They do not.
    Missed,
    /// This run did not measure what the target needs.
    NoData,
}

/// One of the project's performance targets, evaluated on this run's rows.
#[derive(Debug, Clone)]
pub struct Target {
    /// The target as the issue states it.
    pub goal: &'static str,
    /// Met, missed or not measured.
    pub verdict: Verdict,
    /// The numbers behind the verdict.
    pub detail: String,
}

fn find_row<'a>(rows: &'a [Row], figure: &str, baseline: &str) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.figure == figure && r.baseline_name == baseline)
}

/// The targets: 32-byte busy round trip ≤ 1.3× the raw ping-pong and below every peer;
/// throughput at 1024 credits ≥ rtrb; DMA of 1 MiB ≥ 0.8× memcpy's bandwidth.
pub fn evaluate_targets(rows: &[Row]) -> Vec<Target> {
    let mut targets = Vec::new();

    let goal = "32-byte busy round trip ≤ 1.3× raw ping-pong and below every peer";
    let rtt: Vec<&Row> = rows.iter().filter(|r| r.figure == "rtt/busy_32B").collect();
    targets.push(match find_row(rows, "rtt/busy_32B", LIMIT) {
        None => Target {
            goal,
            verdict: Verdict::NoData,
            detail: "rtt/busy_32B was not measured against raw_ping_pong".into(),
        },
        Some(limit) => {
            let peers: Vec<&&Row> = rtt.iter().filter(|r| r.baseline_name != LIMIT).collect();
            let near_limit = limit.ratio <= 1.3;
            let slower_than: Vec<String> = peers
                .iter()
                .filter(|r| !r.better())
                .map(|r| format!("{} {}", r.baseline_name, format_ns(r.baseline)))
                .collect();
            let mut detail = format!(
                "dpakit {} = {:.2}× raw_ping_pong {} ({} 1.3×)",
                format_ns(limit.dpakit),
                limit.ratio,
                format_ns(limit.baseline),
                if near_limit { "≤" } else { ">" }
            );
            if peers.is_empty() {
                detail.push_str("; no peer was measured");
            } else if slower_than.is_empty() {
                let _ = write!(
                    detail,
                    "; below every peer ({})",
                    peers
                        .iter()
                        .map(|r| format!("{} {}", r.baseline_name, format_ns(r.baseline)))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            } else {
                let _ = write!(detail, "; not below {}", slower_than.join(", "));
            }
            Target {
                goal,
                verdict: if near_limit && slower_than.is_empty() && !peers.is_empty() {
                    Verdict::Met
                } else {
                    Verdict::Missed
                },
                detail,
            }
        }
    });

    let goal = "throughput at 1024 credits ≥ rtrb";
    targets.push(match find_row(rows, "throughput/credits_1024", "rtrb") {
        None => Target {
            goal,
            verdict: Verdict::NoData,
            detail: "throughput/credits_1024 was not measured against rtrb".into(),
        },
        Some(r) => Target {
            goal,
            verdict: if r.dpakit >= r.baseline {
                Verdict::Met
            } else {
                Verdict::Missed
            },
            detail: format!(
                "dpakit {} vs rtrb {} ({:.2}×)",
                format_rate(r.dpakit),
                format_rate(r.baseline),
                r.ratio
            ),
        },
    });

    let goal = "DMA 1 MiB ≥ 0.8× memcpy bandwidth";
    targets.push(match find_row(rows, "dma/1MiB", "memcpy") {
        None => Target {
            goal,
            verdict: Verdict::NoData,
            detail: "dma/1MiB was not measured against memcpy".into(),
        },
        Some(r) => Target {
            goal,
            verdict: if r.ratio >= 0.8 {
                Verdict::Met
            } else {
                Verdict::Missed
            },
            detail: format!(
                "dpakit {} vs memcpy {} ({:.2}×)",
                Unit::GibPerSec.format(r.dpakit),
                Unit::GibPerSec.format(r.baseline),
                r.ratio
            ),
        },
    });
    targets
}

/// The 32-byte round trip from the latency example, whose subjects take turns in short rounds:
/// on a VM whose core-to-core latency changes over minutes, this comparison is not skewed by the
/// order criterion measures subjects in. None without dpakit and the limit.
pub fn interleaved_rtt_check(latency: &[LatencyDist]) -> Option<String> {
    let p50 = |name: &str| {
        latency
            .iter()
            .find(|d| d.subject == name)
            .map(|d| d.percentiles[0])
    };
    let dpakit = p50(DPAKIT)?;
    let limit = p50(LIMIT)?;
    let mut line = format!(
        "interleaved cross-check (latency example, p50): dpakit {} = {:.2}× raw_ping_pong {}",
        format_ns(dpakit),
        dpakit / limit,
        format_ns(limit)
    );
    for d in latency
        .iter()
        .filter(|d| d.subject != DPAKIT && d.subject != LIMIT)
    {
        let _ = write!(
            line,
            "; {:.2}× {} {}",
            dpakit / d.percentiles[0],
            d.subject,
            format_ns(d.percentiles[0])
        );
    }
    Some(line)
}

/// The whole `report.md`.
pub fn render_markdown(
    header: &Header,
    rows: &[Row],
    latency: &[LatencyDist],
    notes: &[String],
    plot: Option<&str>,
) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# dpakit benchmark report\n");
    let _ = writeln!(md, "- CPU: {} ({} cores)", header.cpu, header.cores);
    let _ = writeln!(md, "- date: {}", header.date_utc);
    let _ = writeln!(
        md,
        "- mode: {}",
        if header.quick {
            "quick (`--quick`: short criterion runs; a smoke test, not a measurement)"
        } else {
            "full"
        }
    );
    let _ = writeln!(md, "- measuring took {:.0} s", header.measure_secs);
    let _ = writeln!(
        md,
        "\nEach value is criterion's median. `ratio` = dpakit / baseline: for latencies (ns) \
         lower is better, so a ratio below 1 means dpakit is faster; for rates (msg/s, GiB/s) \
         higher is better, so a ratio above 1 means dpakit moves more. `raw_ping_pong` is the \
         physical limit of a core-to-core round trip, not a peer: nothing beats it."
    );

    for bench in BENCHES.iter().copied().chain(
        rows.iter()
            .map(Row::bench)
            .filter(|b| !BENCHES.contains(b))
            .collect::<std::collections::BTreeSet<_>>(),
    ) {
        let bench_rows: Vec<&Row> = rows.iter().filter(|r| r.bench() == bench).collect();
        let _ = writeln!(md, "\n## {bench}\n");
        if bench_rows.is_empty() {
            let _ = writeln!(md, "Not measured in this run.");
            continue;
        }
        let _ = writeln!(
            md,
            "| figure | baseline | dpakit | baseline value | ratio | better? |"
        );
        let _ = writeln!(md, "|---|---|---:|---:|---:|:---:|");
        for r in bench_rows {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                r.figure,
                baseline_label(&r.baseline_name),
                r.unit.format(r.dpakit),
                r.unit.format(r.baseline),
                format_ratio(r.ratio),
                if r.better() { "yes" } else { "no" }
            );
        }
    }

    let _ = writeln!(md, "\n## Round-trip latency distribution\n");
    if latency.is_empty() {
        let _ = writeln!(md, "Not measured in this run.");
    } else {
        let _ = writeln!(md, "From the latency example (`latency.json`).\n");
        let _ = writeln!(md, "| subject | p50 | p90 | p99 | p99.9 | round trips |");
        let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|");
        for d in latency {
            let [p50, p90, p99, p999] = d.percentiles.map(format_ns);
            let _ = writeln!(
                md,
                "| {} | {p50} | {p90} | {p99} | {p999} | {} |",
                baseline_label(&d.subject),
                d.samples.map_or("".into(), |n| n.to_string())
            );
        }
        if let Some(plot) = plot {
            let _ = writeln!(md, "\n![round-trip latency distribution]({plot})");
        }
    }

    let _ = writeln!(md, "\n## Targets\n");
    for t in evaluate_targets(rows) {
        let verdict = match t.verdict {
            Verdict::Met => "**met**",
            Verdict::Missed => "**missed**",
            Verdict::NoData => "not measured",
        };
        let _ = writeln!(md, "- {}: {verdict} — {}", t.goal, t.detail);
    }
    if let Some(check) = interleaved_rtt_check(latency) {
        let _ = writeln!(md, "- {check}");
    }

    if !notes.is_empty() {
        let _ = writeln!(md, "\n## Notes\n");
        for note in notes {
            let _ = writeln!(md, "- {note}");
        }
    }
    md
}

// ---------------------------------------------------------------------------------------------
// latency.svg
// ---------------------------------------------------------------------------------------------

/// Bar colours for p50, p90, p99, p99.9: one hue, darker for the common case.
const PERCENTILE_COLOURS: [&str; 4] = ["#08519c", "#3182bd", "#6baed6", "#bdd7e7"];

/// A decade on the y axis: `100 ns`, `1 µs`, `10 ms`.
fn tick_label(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{} µs", ns / 1e3)
    } else {
        format!("{ns} ns")
    }
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Grouped bars (one group per subject, one bar per percentile) on a log-scale y axis, with a
/// label on every bar, decade grid lines and a legend.
pub fn latency_svg(dists: &[LatencyDist]) -> String {
    const LEFT: f64 = 80.0;
    const RIGHT: f64 = 24.0;
    const TOP: f64 = 78.0;
    const BOTTOM: f64 = 64.0;
    const PLOT_H: f64 = 360.0;
    const GROUP_W: f64 = 124.0;
    const BAR_W: f64 = 22.0;

    let values: Vec<f64> = dists
        .iter()
        .flat_map(|d| d.percentiles)
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    let (lo, hi) = if values.is_empty() {
        (1.0, 10.0)
    } else {
        (lo, hi)
    };
    let lo_exp = lo.log10().floor() as i32;
    // Headroom above the tallest bar for its label.
    let hi_exp = ((hi * 2.5).log10().ceil() as i32).max(lo_exp + 1);
    let plot_w = GROUP_W * dists.len().max(1) as f64;
    let width = LEFT + plot_w + RIGHT;
    let height = TOP + PLOT_H + BOTTOM;
    let bottom = TOP + PLOT_H;
    let y_of = |v: f64| {
        let t =
            (v.max(10f64.powi(lo_exp)).log10() - f64::from(lo_exp)) / f64::from(hi_exp - lo_exp);
        bottom - t * PLOT_H
    };

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="DejaVu Sans, Verdana, sans-serif">"##
    );
    let _ = writeln!(
        svg,
        r##"<rect x="0" y="0" width="{width:.0}" height="{height:.0}" fill="white"/>"##
    );
    let _ = writeln!(
        svg,
        r##"<text x="{:.0}" y="24" font-size="16" font-weight="bold" text-anchor="middle">Round-trip latency of a 32-byte message</text>"##,
        width / 2.0
    );
    let _ = writeln!(
        svg,
        r##"<text x="{:.0}" y="42" font-size="11" fill="#555" text-anchor="middle">percentiles per subject, log scale, lower is better; raw_ping_pong is the physical limit</text>"##,
        width / 2.0
    );

    // Legend, top right.
    for (i, (name, colour)) in PERCENTILES.iter().zip(PERCENTILE_COLOURS).enumerate() {
        let x = width - RIGHT - 4.0 * 66.0 + i as f64 * 66.0;
        let _ = writeln!(
            svg,
            r##"<rect class="legend" x="{x:.1}" y="52" width="12" height="12" fill="{colour}" stroke="#333" stroke-width="0.5"/><text x="{:.1}" y="62" font-size="11">{name}</text>"##,
            x + 16.0
        );
    }

    // dpakit's group stands out, behind the grid.
    for (g, dist) in dists.iter().enumerate() {
        if dist.subject == DPAKIT {
            let _ = writeln!(
                svg,
                r##"<rect class="highlight" x="{:.1}" y="{TOP:.0}" width="{:.1}" height="{PLOT_H:.0}" fill="#fff3cd"/>"##,
                LEFT + g as f64 * GROUP_W + 2.0,
                GROUP_W - 4.0
            );
        }
    }

    // Grid: decades labelled, 2× and 5× faint.
    for exp in lo_exp..=hi_exp {
        let decade = 10f64.powi(exp);
        let y = y_of(decade);
        let _ = writeln!(
            svg,
            r##"<line class="grid" x1="{LEFT:.0}" y1="{y:.1}" x2="{:.0}" y2="{y:.1}" stroke="#bbb" stroke-width="1"/><text class="tick" x="{:.0}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            y + 4.0,
            tick_label(decade)
        );
        if exp < hi_exp {
            for minor in [2.0, 5.0] {
                let y = y_of(decade * minor);
                let _ = writeln!(
                    svg,
                    r##"<line x1="{LEFT:.0}" y1="{y:.1}" x2="{:.0}" y2="{y:.1}" stroke="#e6e6e6" stroke-width="1"/>"##,
                    LEFT + plot_w
                );
            }
        }
    }
    let _ = writeln!(
        svg,
        r##"<text x="18" y="{:.0}" font-size="12" text-anchor="middle" transform="rotate(-90 18 {:.0})">round trip (log scale)</text>"##,
        TOP + PLOT_H / 2.0,
        TOP + PLOT_H / 2.0
    );

    for (g, dist) in dists.iter().enumerate() {
        let x0 = LEFT + g as f64 * GROUP_W;
        let bars_x = x0 + (GROUP_W - 4.0 * BAR_W) / 2.0;
        for (i, (&value, colour)) in dist.percentiles.iter().zip(PERCENTILE_COLOURS).enumerate() {
            if !(value.is_finite() && value > 0.0) {
                continue;
            }
            let x = bars_x + i as f64 * BAR_W;
            let y = y_of(value);
            let _ = writeln!(
                svg,
                r##"<rect class="bar" x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{colour}" stroke="#333" stroke-width="0.5"><title>{} {}: {}</title></rect>"##,
                BAR_W - 2.0,
                (bottom - y).max(0.5),
                xml_escape(&dist.subject),
                PERCENTILES[i],
                format_ns(value)
            );
            let (lx, ly) = (x + BAR_W / 2.0 + 3.0, y - 4.0);
            let _ = writeln!(
                svg,
                r##"<text class="value" x="{lx:.1}" y="{ly:.1}" font-size="10" transform="rotate(-90 {lx:.1} {ly:.1})">{}</text>"##,
                format_ns(value)
            );
        }
        let weight = if dist.subject == DPAKIT {
            "bold"
        } else {
            "normal"
        };
        let _ = writeln!(
            svg,
            r##"<text class="subject" x="{:.1}" y="{:.1}" font-size="12" font-weight="{weight}" text-anchor="middle">{}</text>"##,
            x0 + GROUP_W / 2.0,
            bottom + 18.0,
            xml_escape(&dist.subject)
        );
        if dist.subject == LIMIT {
            let _ = writeln!(
                svg,
                r##"<text x="{:.1}" y="{:.1}" font-size="10" fill="#555" text-anchor="middle">(limit)</text>"##,
                x0 + GROUP_W / 2.0,
                bottom + 32.0
            );
        }
    }
    let _ = writeln!(
        svg,
        r##"<line x1="{LEFT:.0}" y1="{bottom:.1}" x2="{:.0}" y2="{bottom:.1}" stroke="#333" stroke-width="1"/><line x1="{LEFT:.0}" y1="{TOP:.0}" x2="{LEFT:.0}" y2="{bottom:.1}" stroke="#333" stroke-width="1"/>"##,
        LEFT + plot_w
    );
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests;
