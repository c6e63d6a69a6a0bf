//! `cargo xtask fuzz`: builds the fuzz targets of `fuzz/` the way cargo-fuzz does (nightly,
//! libFuzzer's coverage instrumentation) without needing cargo-fuzz installed, replays the
//! checked-in regression inputs, then fuzzes each target for a while.
//!
//! No AddressSanitizer: the soft device probes caller memory it cannot trust through `write(2)`
//! (see dpa-runtime/src/checked_read.rs), which ASan's interceptors report as a wild read, and DPA
//! threads switch stacks (corosensei), which ASan cannot follow without fiber annotations.
//! The soft device is safe Rust over a handle registry; debug assertions, overflow checks and
//! the targets' own leak checks (live handles, open descriptors) find what ASan would there.

use crate::{Result, setup, workspace_root};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Every target in fuzz/Cargo.toml.
pub const TARGETS: &[&str] = &["capi_sequence", "message_decode", "wire_peer", "cc_peer"];

/// Seconds each target runs by default.
pub const DEFAULT_TIME: u64 = 60;

/// Seconds one input may run before libFuzzer calls it a hang.
const INPUT_TIMEOUT: u64 = 20;

/// The flags cargo-fuzz builds with, minus its default `-Zsanitizer=address` (see above).
const RUSTFLAGS: &[&str] = &[
    "--cfg fuzzing",
    "-Cpasses=sancov-module",
    "-Cllvm-args=-sanitizer-coverage-level=4",
    "-Cllvm-args=-sanitizer-coverage-inline-8bit-counters",
    "-Cllvm-args=-sanitizer-coverage-pc-table",
    "-Cllvm-args=-sanitizer-coverage-trace-compares",
    "-Cdebug-assertions",
    "-Coverflow-checks",
];

#[derive(Debug)]
pub struct Options {
    /// Seconds per target.
    pub time: u64,
    /// Targets to run (all when empty).
    pub targets: Vec<String>,
}

/// `cargo xtask fuzz`: fails if nightly cannot be had.
pub fn run(opts: &Options) -> Result {
    setup::ensure_nightly_component("rustc")?;
    let targets: Vec<&str> = if opts.targets.is_empty() {
        TARGETS.to_vec()
    } else {
        for t in &opts.targets {
            if !TARGETS.contains(&t.as_str()) {
                return Err(format!(
                    "fuzz: unknown target `{t}` (targets: {})",
                    TARGETS.join(", ")
                ));
            }
        }
        opts.targets.iter().map(String::as_str).collect()
    };
    let bins = build(&targets)?;
    for (target, bin) in targets.iter().zip(&bins) {
        replay(target, bin)?;
        fuzz(target, bin, opts.time)?;
    }
    Ok(())
}

/// The 30-second run `cargo xtask test` ends with; skipped with a note where nightly cannot
/// be installed.
pub fn in_test() {
    if let Err(why) = setup::ensure_nightly_component("rustc") {
        eprintln!("note: fuzzing skipped: {why}");
        return;
    }
    let opts = Options {
        time: 30,
        targets: Vec::new(),
    };
    if let Err(e) = run(&opts) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn fuzz_dir() -> PathBuf {
    workspace_root().join("target").join("fuzz")
}

/// Builds `targets` into target/fuzz; returns their binaries in the same order.
fn build(targets: &[&str]) -> Result<Vec<PathBuf>> {
    let host = nightly_host()?;
    let mut cmd = nightly_cargo();
    cmd.args(["build", "--release", "--manifest-path"])
        .arg(workspace_root().join("fuzz").join("Cargo.toml"))
        // An explicit target keeps the flags off build scripts and proc macros, as cargo-fuzz
        // does.
        .args(["--target", &host])
        .env("CARGO_TARGET_DIR", fuzz_dir())
        .env("RUSTFLAGS", RUSTFLAGS.join(" "));
    for t in targets {
        cmd.args(["--bin", t]);
    }
    eprintln!(
        "$ cargo +nightly build --release --manifest-path fuzz/Cargo.toml --target {host} {}",
        targets.join(" ")
    );
    let status = cmd.status().map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("building the fuzz targets failed ({status})"));
    }
    let dir = fuzz_dir().join(&host).join("release");
    Ok(targets.iter().map(|t| dir.join(t)).collect())
}

/// The checked-in inputs of `fuzz/regressions/<target>/`, each run once.
fn replay(target: &str, bin: &Path) -> Result {
    let dir = regressions(target);
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    if inputs.is_empty() {
        return Ok(());
    }
    inputs.sort();
    eprintln!(
        "fuzz {target}: replaying {} regression inputs",
        inputs.len()
    );
    let log = log_path(target, "replay");
    let status = Command::new(bin)
        .arg(format!("-timeout={INPUT_TIMEOUT}"))
        .args(&inputs)
        .stdout(Stdio::null())
        .stderr(log_file(&log)?)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    if status.success() {
        return Ok(());
    }
    print_tail(&log);
    Err(format!(
        "fuzz target {target} fails on a regression input in {} ({status}); log: {}\n  \
         reproduce one with: {} <input>",
        dir.display(),
        log.display(),
        bin.display()
    ))
}

/// Fuzzes `target` for `secs` seconds over its corpus (`target/fuzz/corpus/<target>`, kept
/// between runs), its checked-in seed inputs and its regression inputs.
fn fuzz(target: &str, bin: &Path, secs: u64) -> Result {
    let corpus = fuzz_dir().join("corpus").join(target);
    let artifacts = fuzz_dir().join("artifacts").join(target);
    for dir in [&corpus, &artifacts] {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let before = list(&artifacts);
    let log = log_path(target, "fuzz");
    eprintln!(
        "fuzz {target}: {secs} s (corpus {}, log {})",
        corpus.display(),
        log.display()
    );
    let mut cmd = Command::new(bin);
    cmd.arg(&corpus);
    // libFuzzer reads every directory given and writes new inputs into the first only.
    let seeds = workspace_root().join("fuzz").join("seeds").join(target);
    let regressions = regressions(target);
    for dir in [&seeds, &regressions] {
        if dir.is_dir() {
            cmd.arg(dir);
        }
    }
    let mut prefix = artifacts.clone().into_os_string();
    prefix.push("/");
    let status = cmd
        .arg(format!("-max_total_time={secs}"))
        .arg(format!("-timeout={INPUT_TIMEOUT}"))
        .arg("-artifact_prefix=".to_string() + &prefix.to_string_lossy())
        .stdout(Stdio::null())
        .stderr(log_file(&log)?)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    if status.success() {
        eprintln!("fuzz {target}: {}", summary(&log));
        return Ok(());
    }
    print_tail(&log);
    let found: Vec<PathBuf> = list(&artifacts)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    let inputs = if found.is_empty() {
        "(no input saved: see the log)".to_string()
    } else {
        found
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    Err(format!(
        "fuzz target {target} failed ({status}); crashing input: {inputs}\n  \
         reproduce with: {} <input> (capi_sequence: DPAKIT_FUZZ_TRACE=1 lists its operations \
         and the calls its callbacks make)\n  \
         once fixed, keep the (minimized: add -minimize_crash=1 -runs=10000) input in {}/",
        bin.display(),
        regressions.display()
    ))
}

fn regressions(target: &str) -> PathBuf {
    workspace_root()
        .join("fuzz")
        .join("regressions")
        .join(target)
}

fn log_path(target: &str, what: &str) -> PathBuf {
    fuzz_dir().join("logs").join(format!("{target}-{what}.log"))
}

fn log_file(path: &Path) -> Result<std::fs::File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))
}

fn list(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect()
}

/// libFuzzer's last status line ("#N DONE cov: … corp: …"), or its last line.
fn summary(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines
        .iter()
        .rev()
        .find(|l| l.contains("DONE"))
        .or(lines.last())
        .map_or_else(String::new, |l| l.trim().to_string())
}

fn print_tail(log: &Path) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    for line in &lines[lines.len().saturating_sub(40)..] {
        eprintln!("  | {line}");
    }
}

/// `cargo +nightly`, through the rustup proxy, with the outer cargo's toolchain pins removed.
fn nightly_cargo() -> Command {
    let mut cmd = Command::new("cargo");
    cmd.arg("+nightly")
        .current_dir(workspace_root())
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO")
        .env_remove("RUSTC")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    cmd
}

/// The host triple of the nightly toolchain.
fn nightly_host() -> Result<String> {
    let out = Command::new("rustc")
        .args(["+nightly", "-vV"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTC")
        .output()
        .map_err(|e| format!("cannot run rustc +nightly: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_string)
        .ok_or_else(|| "rustc +nightly -vV printed no host triple".to_string())
}
