//! `cargo xtask test`: everything CI checks, in the order that fails fastest.

use crate::{
    Result, api, build_dpa, fuzz, modules, sdk_checks, setup, soft_sdk, user_projects,
    workspace_root,
};
use std::process::Command;
use std::time::{Duration, Instant};

/// Debian packages the test suite needs, as (command, package): clang for the C header checks
/// and C kernels, pkg-config for building C programs against the soft SDK, meson and ninja for
/// the DOCA-style C project with a DPA kernel of its own, valgrind for running every C program
/// and pair under memcheck.
const DEBIAN_PACKAGES: &[(&str, &str)] = &[
    ("clang", "clang"),
    ("pkg-config", "pkg-config"),
    ("meson", "meson"),
    ("ninja", "ninja-build"),
    ("valgrind", "valgrind"),
    // tests/gdb.rs drives gdb against ISA mode.
    ("gdb-multiarch", "gdb-multiarch"),
];

/// Debian packages with no command to look for: libclang, which bindgen loads.
const DEBIAN_LIBRARIES: &[&str] = &["libclang-dev"];

pub fn run() -> Result {
    let mut clock = Clock::default();
    no_incremental_builds();
    setup::ensure_dpa_target()?;
    setup::ensure_components(&["rustfmt", "clippy"])?;
    setup::ensure_debian_packages(DEBIAN_PACKAGES)?;
    setup::ensure_debian_libraries(DEBIAN_LIBRARIES)?;
    clock.lap("setup");

    cargo(&["fmt", "--all", "--check"], &[])?;
    rustfmt_every_file()?;
    // No module imports another that imports it back, in any crate of the workspace.
    modules::run(&[], true, false)?;
    // With feature `tokio` too: the async waits and their example and test are only built then.
    cargo(
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--features",
            "tokio",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    clock.lap("fmt, modules, clippy");
    // With the cost model: the kit's kernels run from their image in ISA mode.
    let report = build_dpa::with_isa_profile(build_dpa::kit_kernels(true)).build()?;
    print!("{}", report.table());
    // The checked-in bindings (for machines without libclang) are what bindgen generates.
    cargo(
        &["build", "-p", "dpakit-sys"],
        &[("DPAKIT_SYS_CHECK_FALLBACK", "1")],
    )?;
    clock.lap("DPA builds, bindings");
    cargo(&["test", "--workspace"], &[])?;
    // Async Comch on tokio: a hundred clients, an idle wait that sleeps, and the example.
    cargo(
        &["test", "--features", "tokio", "--test", "comch_async"],
        &[],
    )?;
    cargo(
        &["run", "--features", "tokio", "--example", "async_server"],
        &[],
    )?;
    // What a debug build would take minutes for: the ISA budget's 100,000 messages of 14,000
    // instructions (the release dependencies are the isa_profile example's, built above).
    cargo(&["test", "--release", "--test", "dpa_edges"], &[])?;
    // The live view of a running program (the quickstart `cargo test` built).
    crate::dpa_top::check_against(
        &workspace_root()
            .join("target")
            .join("debug")
            .join("examples")
            .join("quickstart"),
    )?;
    clock.lap("workspace tests");
    cargo(
        &["doc", "--no-deps", "--workspace"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    // The facade as a user project sees it: the soft device without the kit's own kernels.
    cargo(
        &[
            "doc",
            "--no-deps",
            "-p",
            "dpakit",
            "--no-default-features",
            "--features",
            "soft",
        ],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    clock.lap("docs");
    let prefix = soft_sdk::run(&soft_sdk::default_prefix())?;
    eprintln!("soft DOCA SDK in {}", prefix.display());
    sdk_checks::c_programs(&prefix)?;
    sdk_checks::arm_side()?;
    sdk_checks::c_pairs(&prefix)?;
    sdk_checks::meson_samples(&prefix)?;
    sdk_checks::cc_hostile(&prefix, cargo)?;
    clock.lap("soft SDK, C programs");
    sdk_checks::doca_feature(&prefix, cargo)?;
    sdk_checks::comch_pairs(&prefix, cargo)?;
    clock.lap("the kit over the soft SDK (feature doca)");
    // Projects of the user's own, outside the repository: a DOCA C project with its own DPA
    // kernel (the soft SDK's dpacc, by hand and with meson), DOCA 3.x's kernel-launch flow
    // (attributes blob, dpacc's full command line, both sides), a project from `cargo xtask new`.
    user_projects::c_dpacc_project(&prefix)?;
    user_projects::c_kernel_launch_project(&prefix)?;
    user_projects::rust_template()?;
    reclaim(&["new-project-cargo", "xtask-tests"]);
    clock.lap("user projects");
    // The public API is what api/<crate>.txt says (a change is blessed on purpose).
    match setup::ensure_nightly_component("rustc") {
        Ok(()) => api::run(false)?,
        Err(why) => eprintln!("note: the API check skipped: {why}"),
    }
    reclaim(&["api"]);
    clock.lap("public API");
    let miri = start_miri();
    loom()?;
    reclaim(&["loom"]);
    clock.lap("loom (miri beside it)");
    // Each fuzz target for 30 s: regression inputs first, then new ones.
    fuzz::in_test();
    // The fuzzers' builds; their corpora stay.
    reclaim(&["fuzz/release", "fuzz/x86_64-unknown-linux-gnu"]);
    clock.lap("fuzz (miri beside it)");
    if let Some(miri) = miri {
        miri.finish()?;
    }
    reclaim(&["miri"]);
    clock.lap("the rest of miri");
    clock.report();
    Ok(())
}

/// Below this much free disk, a stage's own build output goes once the stage passed. A run's
/// build output peaks near 7 GiB on a fresh machine, of which these directories are about 2.
const LOW_DISK: u64 = 16 << 30;

/// Removes the directories `dirs` under target/ when the disk is low ([`LOW_DISK`]): output that
/// only its own stage uses (a later run builds it again).
fn reclaim(dirs: &[&str]) {
    let target = workspace_root().join("target");
    let free = match free_disk(&target) {
        Some(free) if free < LOW_DISK => free,
        _ => return,
    };
    for dir in dirs {
        let dir = target.join(dir);
        if dir.exists() {
            eprintln!(
                "note: {:.1} GiB of disk free: removing {}",
                free as f64 / f64::from(1 << 30),
                dir.display()
            );
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                eprintln!("note: cannot remove {}: {e}", dir.display());
            }
        }
    }
}

/// Bytes free for an unprivileged user on the file system of `path`.
fn free_disk(path: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: all-zero is a valid statvfs (integers only).
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a statvfs to fill.
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return None;
    }
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// A run builds each crate once per configuration, so incremental caches (gigabytes for the
/// workspace's test binaries) would only cost disk. A developer's own setting is kept.
fn no_incremental_builds() {
    if std::env::var_os("CARGO_INCREMENTAL").is_none() {
        // SAFETY: called first thing in `run`, before any thread of this process starts, so
        // nothing reads the environment concurrently.
        unsafe { std::env::set_var("CARGO_INCREMENTAL", "0") };
    }
}

/// Wall time per stage, printed at the end: where a slow run spent its minutes.
#[derive(Debug)]
struct Clock {
    start: Instant,
    last: Instant,
    laps: Vec<(&'static str, Duration)>,
}

impl Default for Clock {
    fn default() -> Self {
        let now = Instant::now();
        Self {
            start: now,
            last: now,
            laps: Vec::new(),
        }
    }
}

impl Clock {
    fn lap(&mut self, stage: &'static str) {
        let now = Instant::now();
        self.laps.push((stage, now - self.last));
        self.last = now;
    }

    fn report(&self) {
        eprintln!("cargo xtask test: every stage passed");
        for (stage, took) in &self.laps {
            eprintln!("  {:>6.1} s  {stage}", took.as_secs_f64());
        }
        eprintln!("  {:>6.1} s  in all", self.start.elapsed().as_secs_f64());
    }
}

/// Every loom model of the soft device (tests in modules named `loom_tests`, or `loom`, under
/// `cfg(all(test, loom))`; docs/design.md lists them), in their own target dir (the cfg
/// changes every crate). Release mode: loom runs each model thousands of times. Models with
/// big state spaces bound their preemptions (`crate::sync::model`) to stay within minutes.
fn loom() -> Result {
    let target = workspace_root().join("target").join("loom");
    let target = target.to_str().expect("UTF-8 path");
    cargo(
        &[
            "test",
            "-p",
            "dpakit-dpa-runtime",
            "-p",
            "dpakit-model",
            "-p",
            "dpakit-sync",
            "-p",
            "dpakit-wire",
            "--release",
            "--lib",
            "loom",
        ],
        &[("RUSTFLAGS", "--cfg loom"), ("CARGO_TARGET_DIR", target)],
    )
}

/// The unit tests of every crate miri can run (shared-abi, dpa-dev's host build, the soft
/// device, its interpreter and transport) under miri, which needs a nightly toolchain with the
/// miri component. Tests that need what miri cannot do (system calls it does not model, C code,
/// stack switching) are ignored one by one with the reason; docs/design.md lists them.
///
/// Miri interprets on one core for minutes, so it runs in the background beside the stages
/// after it ([`Background`]). Where miri cannot be installed, say so and go on: the rest of
/// the suite still runs.
fn start_miri() -> Option<Background> {
    let ready = setup::ensure_nightly_component("miri")
        .and_then(|()| setup::ensure_nightly_component("rust-src"));
    if let Err(why) = ready {
        eprintln!("note: miri skipped: {why}");
        return None;
    }
    let target = workspace_root().join("target").join("miri");
    let mut cmd = cargo_command(
        &[
            "+nightly",
            "miri",
            "test",
            "-p",
            "dpakit-abi",
            "-p",
            "dpakit-dev",
            "-p",
            "dpakit-dpa-runtime",
            "-p",
            "dpakit-model",
            "-p",
            "dpakit-emu",
            "-p",
            "dpakit-rv",
            "-p",
            "dpakit-wire",
            "--lib",
        ],
        &[
            ("MIRIFLAGS", "-Zmiri-permissive-provenance"),
            ("CARGO_TARGET_DIR", target.to_str().expect("UTF-8 path")),
        ],
    );
    // A miri failure is a real finding: `Background::finish` fails the run with it.
    match Background::spawn(&mut cmd, "miri", target.join("miri.log")) {
        Ok(bg) => Some(bg),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}

/// `cargo fmt` formats the modules it finds from each crate's root, and never sees one declared
/// through a macro (the model's modules are, to make them public with feature `api` only), nor
/// the fuzz targets' own workspace: every Rust file in git is checked by rustfmt itself.
fn rustfmt_every_file() -> Result {
    let listed = Command::new("git")
        .args(["ls-files", "-z", "*.rs"])
        .current_dir(workspace_root())
        .output()
        .map_err(|e| format!("cannot run git ls-files: {e}"))?;
    if !listed.status.success() {
        return Err("git ls-files failed: rustfmt needs the list of Rust files".into());
    }
    let files: Vec<&str> = std::str::from_utf8(&listed.stdout)
        .map_err(|e| format!("git ls-files printed a path that is not UTF-8: {e}"))?
        .split('\0')
        .filter(|f| !f.is_empty())
        .collect();
    let status = Command::new("rustfmt")
        .args(["--edition", "2024", "--check"])
        .args(&files)
        .current_dir(workspace_root())
        .status()
        .map_err(|e| format!("cannot run rustfmt: {e}"))?;
    if !status.success() {
        return Err(format!(
            "rustfmt --check found unformatted files (above): format them with \
             `rustfmt --edition 2024 $(git ls-files '*.rs')` ({status})"
        ));
    }
    Ok(())
}

pub(crate) fn cargo(args: &[&str], env: &[(&str, &str)]) -> Result {
    let status = cargo_command(args, env)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", args.join(" ")))
    }
}

/// The cargo command line `args` with `env` set, run from the workspace root, printed.
fn cargo_command(args: &[&str], env: &[(&str, &str)]) -> Command {
    // `+toolchain` must reach the rustup proxy, so use plain `cargo` for it.
    let cargo = if args.first().is_some_and(|a| a.starts_with('+')) {
        "cargo".to_string()
    } else {
        std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
    };
    eprintln!("$ cargo {}", args.join(" "));
    let mut cmd = Command::new(&cargo);
    cmd.args(args).current_dir(workspace_root());
    for (k, v) in env {
        cmd.env(k, v);
    }
    if args.first().is_some_and(|a| a.starts_with('+')) {
        // The outer cargo pins its own toolchain for children; let the proxy pick the nightly.
        cmd.env_remove("RUSTUP_TOOLCHAIN")
            .env_remove("CARGO")
            .env_remove("RUSTC");
    }
    cmd
}

/// A stage running beside the others, its output in a log of its own (printed when it
/// fails, so the other stages' output stays readable). Killed if the run ends before it.
struct Background {
    child: std::process::Child,
    what: &'static str,
    log: std::path::PathBuf,
}

impl Background {
    fn spawn(cmd: &mut Command, what: &'static str, log: std::path::PathBuf) -> Result<Self> {
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let file = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = file.try_clone().map_err(|e| e.to_string())?;
        let child = cmd
            .stdout(file)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start {what}: {e}"))?;
        eprintln!("{what}: running in the background, log {}", log.display());
        Ok(Self { child, what, log })
    }

    /// Waits for it; its test summaries on success, its log's end and an error on failure.
    fn finish(mut self) -> Result {
        let status = self.child.wait().map_err(|e| e.to_string())?;
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        if status.success() {
            for line in log.lines().filter(|l| l.starts_with("test result:")) {
                eprintln!("{}: {line}", self.what);
            }
            return Ok(());
        }
        let lines: Vec<&str> = log.lines().collect();
        eprintln!("{}", lines[lines.len().saturating_sub(150)..].join("\n"));
        Err(format!(
            "{} failed ({status}); its whole log: {}",
            self.what,
            self.log.display()
        ))
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::free_disk;

    #[test]
    fn free_disk_is_what_df_says() {
        let target = crate::workspace_root().join("target");
        let ours = free_disk(&target).unwrap();
        let df = std::process::Command::new("df")
            .args(["-P", "-B1"])
            .arg(&target)
            .output()
            .unwrap();
        let df = String::from_utf8(df.stdout).unwrap();
        let avail: u64 = df
            .lines()
            .nth(1)
            .unwrap()
            .split_whitespace()
            .nth(3)
            .unwrap()
            .parse()
            .unwrap();
        // The disk changes under a running test suite: within 1 GiB.
        assert!(ours.abs_diff(avail) < 1 << 30, "statvfs {ours}, df {avail}");
        assert!(free_disk(std::path::Path::new("/no/such/dir")).is_none());
    }
}
