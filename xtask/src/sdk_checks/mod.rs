//! What `cargo xtask test` checks against the soft SDK prefix, as a BlueField user's build
//! would use an installed DOCA: C programs built with pkg-config, the kit built with feature
//! `doca` (dynamic linking to `libdoca_*.so`), and Comch server/client pairs in two processes
//! (`pairs`). Every C program and pair also runs once under valgrind's memcheck (`memcheck`).
//! The legacy Comm Channel service example also runs under attack from hostile processes
//! ([`cc_hostile`]). The DOCA-style programs that need no kit kernels are also built with meson
//! for both sides and run ([`meson_samples`]).

pub mod memcheck;
mod meson;
mod pairs;

pub use meson::{meson_build, samples as meson_samples};
pub use pairs::{c_pairs, comch_pairs};

use crate::{Result, build_dpa, workspace_root};
use memcheck::Mode;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Messages the C echo sends in CI: enough to cross every path many times over, quick to run.
const C_ECHO_MESSAGES: &str = "20000";

/// A C program CI builds and runs `runs` times natively, each run with a fresh runtime
/// directory that must be empty after, then under memcheck once per kernel execution mode of
/// `memcheck_exec`.
struct CProgram {
    source: &'static str,
    args: &'static [&'static str],
    /// Under memcheck: fewer messages where a program takes a count, the same paths.
    memcheck_args: &'static [&'static str],
    runs: u32,
    /// `DPAKIT_SOFT_EXEC` of the memcheck runs: programs with DPA kernels run them from their
    /// image too (ISA mode has memory of its own per worker).
    memcheck_exec: &'static [&'static str],
}

const fn once(source: &'static str) -> CProgram {
    CProgram {
        source,
        args: &[],
        memcheck_args: &[],
        runs: 1,
        memcheck_exec: &["native"],
    }
}

/// The C programs CI builds and runs. The re-entrancy matrices (every callback crossed with
/// every call a callback may make, Comch between processes) run five times in a row: a race
/// in a teardown shows as a failed run.
const C_PROGRAMS: &[CProgram] = &[
    CProgram {
        source: "examples/c/msgq_echo.c",
        args: &["-n", C_ECHO_MESSAGES],
        memcheck_args: &["-n", "200"],
        runs: 1,
        memcheck_exec: &["native", "isa"],
    },
    once("tests/c/ctx_state.c"),
    once("tests/c/argp_log.c"),
    once("tests/c/sync_event.c"),
    once("tests/c/dma_pe_event.c"),
    CProgram {
        args: &["host"],
        memcheck_args: &["host"],
        ..once("tests/c/clock.c")
    },
    once("tests/c/buf_pool.c"),
    once("tests/c/cc_2_5_client_server.c"),
    CProgram {
        runs: 5,
        ..once("tests/c/reentrancy_comch.c")
    },
    CProgram {
        runs: 5,
        memcheck_exec: &["native", "isa"],
        ..once("tests/c/reentrancy_msgq.c")
    },
];

/// `PKG_CONFIG_PATH` for the prefix.
fn pkg_config_path(prefix: &Path) -> PathBuf {
    prefix.join("lib").join("pkgconfig")
}

/// `pkg-config --cflags --libs doca-comch doca-dpa doca-argp doca-common` against the prefix.
pub fn pkg_config_flags(prefix: &Path) -> Result<Vec<String>> {
    let output = Command::new("pkg-config")
        .args([
            "--cflags",
            "--libs",
            "doca-comch",
            "doca-dpa",
            "doca-argp",
            "doca-common",
        ])
        .env("PKG_CONFIG_PATH", pkg_config_path(prefix))
        .output()
        .map_err(|e| format!("cannot run pkg-config: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "pkg-config does not find the soft SDK in {}: {}",
            prefix.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect())
}

/// The command line that builds C program `source` into `out` against the prefix and the kit's
/// soft app library in `app_dir`.
pub fn cc_command(source: &Path, out: &Path, pkg_flags: &[String], app_dir: &Path) -> Command {
    let mut cmd = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cmd.args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O2"])
        .arg(source)
        .arg("-I")
        .arg(workspace_root().join("shared-abi").join("include"))
        .args(pkg_flags)
        .arg(format!("-L{}", app_dir.display()))
        .arg("-ldpakit_kernels")
        .arg(format!("-Wl,-rpath,{}", app_dir.display()))
        .arg("-o")
        .arg(out);
    cmd
}

/// The soft device's app library, as `cargo xtask build-dpa --release` leaves it.
fn app_dir() -> PathBuf {
    build_dpa::kit_out_dir(true).join("soft")
}

/// Builds C program `source` (relative to the workspace) into `target/c`; returns the binary.
fn build_c(source: &str, pkg_flags: &[String], app_dir: &Path) -> Result<PathBuf> {
    let stem = Path::new(source).file_stem().expect("a file");
    build_c_as(source, &stem.to_string_lossy(), pkg_flags, app_dir)
}

/// [`build_c`] into `target/c/<name>`.
fn build_c_as(source: &str, name: &str, pkg_flags: &[String], app_dir: &Path) -> Result<PathBuf> {
    let bin = workspace_root().join("target").join("c");
    std::fs::create_dir_all(&bin).map_err(|e| format!("cannot create {}: {e}", bin.display()))?;
    let source = workspace_root().join(source);
    let out = bin.join(name);
    eprintln!(
        "$ cc {} (pkg-config doca-comch doca-dpa doca-argp doca-common)",
        source.display()
    );
    let status = cc_command(&source, &out, pkg_flags, app_dir)
        .status()
        .map_err(|e| format!("cannot run cc: {e}"))?;
    if !status.success() {
        return Err(format!("building {} failed ({status})", source.display()));
    }
    Ok(out)
}

/// Builds each C program against the prefix with pkg-config and runs it as [`C_PROGRAMS`] says;
/// every run must succeed.
pub fn c_programs(prefix: &Path) -> Result {
    let flags = pkg_config_flags(prefix)?;
    let app_dir = app_dir();
    for program in C_PROGRAMS {
        let out = build_c(program.source, &flags, &app_dir)?;
        let name = file_name(&out);
        for run in 1..=program.runs {
            let started = Instant::now();
            let dir = format!("{name}-{run}");
            run_c_program(&out, &dir, program.args, Mode::Native, "native")
                .map_err(|e| format!("run {run} of {}: {e}", program.runs))?;
            if program.runs > 1 {
                eprintln!(
                    "{name}: run {run} of {} passed in {:.2} s",
                    program.runs,
                    started.elapsed().as_secs_f64()
                );
            }
        }
        for exec in program.memcheck_exec {
            let dir = format!("{name}-m-{exec}");
            run_c_program(&out, &dir, program.memcheck_args, Mode::Memcheck, exec)
                .map_err(|e| format!("the run under memcheck ({exec}): {e}"))?;
        }
    }
    Ok(())
}

/// A program built against the BlueField Arm's prefix (`cargo xtask soft-sdk --side arm`) is
/// built for the Arm's side of a pair: `tests/c/clock.c` checks it sees `DOCA_ARCH_DPU`.
pub fn arm_side() -> Result {
    let side = crate::soft_sdk::Side::Arm;
    let prefix = crate::soft_sdk::run_for(&crate::soft_sdk::default_prefix_for(side), side)?;
    let flags = pkg_config_flags(&prefix)?;
    let out = build_c_as("tests/c/clock.c", "clock-arm", &flags, &app_dir())?;
    run_c_program(&out, "clock-arm", &["dpu"], Mode::Native, "native")
}

/// `tests/comm_channel_hostile.rs` with `examples/c/comm_channel_server.c`, built against the
/// prefix, as its service (in `cargo test --workspace` the test serves with a Rust twin of it):
/// the C example is the program hostile peers attack, and it must drop them and serve on.
pub fn cc_hostile(prefix: &Path, cargo: impl Fn(&[&str], &[(&str, &str)]) -> Result) -> Result {
    let flags = pkg_config_flags(prefix)?;
    let server = build_c("examples/c/comm_channel_server.c", &flags, &app_dir())?;
    let server = server
        .to_str()
        .ok_or_else(|| format!("{} is not UTF-8", server.display()))?
        .to_string();
    cargo(
        &["test", "--test", "comm_channel_hostile"],
        &[("DPAKIT_CC_HOSTILE_SERVER", server.as_str())],
    )
}

/// Runs C program `out` with `args` in `mode`, its kernels in `exec` mode (`DPAKIT_SOFT_EXEC`)
/// and a fresh runtime directory `c/<dir>` ([`fresh_runtime_dir`]); it must exit 0 and
/// leave the directory empty.
fn run_c_program(out: &Path, dir: &str, args: &[&str], mode: Mode, exec: &str) -> Result {
    let runtime = fresh_runtime_dir("c", dir)?;
    eprintln!(
        "$ DPAKIT_SOFT_EXEC={exec} DPAKIT_SOFT_RUNTIME_DIR={} {}{} {}",
        runtime.display(),
        mode.prefix(),
        out.display(),
        args.join(" ")
    );
    let status = mode
        .command(out)
        .args(args)
        .env("DPAKIT_SOFT_EXEC", exec)
        .env("DPAKIT_SOFT_RUNTIME_DIR", &runtime)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", out.display()))?;
    if !status.success() {
        return Err(format!(
            "{}{} failed ({status}); see its output above",
            mode.prefix(),
            file_name(out)
        ));
    }
    let left = leftovers(&runtime)?;
    if !left.is_empty() {
        return Err(format!(
            "{} left {} in its runtime directory",
            file_name(out),
            left.join(", ")
        ));
    }
    Ok(())
}

/// `<tmp>/dpakit-<uid>/<kind>/<dir>`, removed if it exists; the soft device creates it itself,
/// closed to other users as it requires. Short, and under the temporary directory rather than
/// the checkout, which may lie deep: a socket's path has room for 107 bytes, and a server's takes
/// about 50 below its runtime directory while it is bound under a temporary name.
fn fresh_runtime_dir(kind: &str, dir: &str) -> Result<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .map_err(|e| format!("cannot read /proc/self: {e}"))?;
    let runtime = std::env::temp_dir()
        .join(format!("dpakit-{uid}"))
        .join(kind)
        .join(dir);
    match std::fs::remove_dir_all(&runtime) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("cannot remove {}: {e}", runtime.display()));
        }
        _ => {}
    }
    let parent = runtime.parent().expect("under the temporary directory");
    std::fs::create_dir_all(parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    Ok(runtime)
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The names left in `dir` (none if it is gone).
fn leftovers(dir: &Path) -> Result<Vec<String>> {
    match std::fs::read_dir(dir) {
        Ok(entries) => Ok(entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("cannot read {}: {e}", dir.display())),
    }
}

/// The target directory of the kit's builds with feature `doca`: the workspace's own, so what
/// does not depend on the feature (the ABI, device and build crates, dev-dependencies) is
/// built once; what does is built again under its own fingerprint.
fn doca_target_dir() -> PathBuf {
    workspace_root().join("target")
}

/// The environment of the kit's builds with feature `doca`: pkg-config finds the prefix.
fn doca_env(prefix: &Path) -> Result<[(&'static str, String); 2]> {
    let utf8 = |p: PathBuf| {
        p.to_str()
            .map(str::to_string)
            .ok_or_else(|| format!("{} is not UTF-8", p.display()))
    };
    Ok([
        ("PKG_CONFIG_PATH", utf8(pkg_config_path(prefix))?),
        ("CARGO_TARGET_DIR", utf8(doca_target_dir())?),
    ])
}

/// The kit with feature `doca` against the prefix: the integration tests and the quickstart,
/// dynamically linked to the prefix's `libdoca_*.so` and the soft app library.
pub fn doca_feature(prefix: &Path, cargo: impl Fn(&[&str], &[(&str, &str)]) -> Result) -> Result {
    let env = doca_env(prefix)?;
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    cargo(
        &["test", "--release", "--features", "doca", "--tests"],
        &env,
    )?;
    cargo(
        &[
            "run",
            "--release",
            "--features",
            "doca",
            "--example",
            "quickstart",
            "--",
            C_ECHO_MESSAGES,
        ],
        &env,
    )
}

#[cfg(test)]
mod tests {
    /// The C programs alone (`cargo test -p xtask -- --ignored --test-threads=1
    /// c_programs_stage`), natively and under memcheck.
    #[test]
    #[ignore = "builds the soft SDK and the programs: run by `cargo xtask test`"]
    fn c_programs_stage() {
        let prefix = crate::soft_sdk::run(&crate::soft_sdk::default_prefix()).unwrap();
        super::c_programs(&prefix).unwrap();
    }

    use super::*;

    #[test]
    fn c_programs_build_against_the_prefix_and_the_app_library() {
        let cmd = cc_command(
            Path::new("prog.c"),
            Path::new("prog"),
            &[
                "-I/p/include".into(),
                "-L/p/lib".into(),
                "-ldoca_comch".into(),
            ],
            Path::new("/app"),
        );
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = |s: &str| {
            args.iter()
                .position(|a| a == s)
                .unwrap_or_else(|| panic!("{s} in {args:?}"))
        };
        assert!(
            at("prog.c") < at("-ldoca_comch"),
            "sources before libraries"
        );
        assert!(at("-ldoca_comch") < at("-ldpakit_kernels"));
        assert!(args.contains(&"-Wl,-rpath,/app".to_string()));
        assert!(args.contains(&"-Werror".to_string()));
    }

    #[test]
    fn every_c_program_exists_and_the_matrices_run_five_times() {
        let root = workspace_root();
        for program in C_PROGRAMS {
            assert!(root.join(program.source).is_file(), "{}", program.source);
            assert!(program.runs >= 1);
        }
        for matrix in ["tests/c/reentrancy_comch.c", "tests/c/reentrancy_msgq.c"] {
            let program = C_PROGRAMS.iter().find(|p| p.source == matrix).unwrap();
            assert!(program.runs >= 5, "{matrix} runs {} times", program.runs);
        }
    }

    #[test]
    fn leftovers_lists_what_a_runtime_directory_holds() {
        let dir = std::env::temp_dir().join(format!("xtask-leftovers-{}", std::process::id()));
        assert_eq!(
            leftovers(&dir),
            Ok(vec![]),
            "a missing directory holds nothing"
        );
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(leftovers(&dir), Ok(vec![]));
        std::fs::write(dir.join("comch-x"), b"").unwrap();
        assert_eq!(leftovers(&dir), Ok(vec!["comch-x".to_string()]));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
