//! What `cargo xtask test` checks against the soft SDK prefix, as a BlueField user's build
//! would use an installed DOCA: C programs built with pkg-config, the kit built with feature
//! `doca` (dynamic linking to `libdoca_*.so`), and Comch server/client pairs in two processes.

use crate::{Result, build_dpa, workspace_root};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// Messages the C echo sends in CI: enough to cross every path many times over, quick to run.
const C_ECHO_MESSAGES: &str = "20000";

/// The C programs CI builds and runs, with their arguments.
const C_PROGRAMS: &[(&str, &[&str])] = &[
    ("examples/c/msgq_echo.c", &["-n", C_ECHO_MESSAGES]),
    ("tests/c/ctx_state.c", &[]),
    ("tests/c/argp_log.c", &[]),
    ("tests/c/sync_event.c", &[]),
    ("tests/c/buf_pool.c", &[]),
    ("tests/c/cc_2_5_client_server.c", &[]),
];

/// A Comch echo CI runs between processes: the C server with the C client, then the Rust server
/// example with the C client, each side with `args`.
struct Pair {
    /// Names its runtime directories.
    name: &'static str,
    c_server: &'static str,
    c_client: &'static str,
    rust_server: &'static str,
    args: &'static [&'static str],
}

/// The control-path ping-pong, the fast-path echo (64 KiB messages: data crosses each way
/// 2000 times without making the run long) and the legacy Comm Channel's echo.
const PAIRS: &[Pair] = &[
    Pair {
        name: "ctrl",
        c_server: "examples/c/comch_ctrl_server.c",
        c_client: "examples/c/comch_ctrl_client.c",
        rust_server: "ctrl_path_server",
        args: &["-c", "2000"],
    },
    Pair {
        name: "data",
        c_server: "examples/c/comch_data_server.c",
        c_client: "examples/c/comch_data_client.c",
        rust_server: "data_path_server",
        args: &["-c", "2000", "-b", "65536"],
    },
    Pair {
        // The C pair also runs five times on its own (C_PAIRS), under another name.
        name: "cc-twins",
        c_server: "examples/c/comm_channel_server.c",
        c_client: "examples/c/comm_channel_client.c",
        rust_server: "comm_channel_server",
        args: &["-c", "1000"],
    },
];

/// A Comch pair of C programs with no Rust counterpart, run `repeat` times in a row, each run
/// with a fresh runtime directory; every run must pass.
struct CPair {
    /// Names its runtime directories (`<name>-c-c-<run>`).
    name: &'static str,
    server: &'static str,
    client: &'static str,
    args: &'static [&'static str],
    repeat: u32,
}

/// The fast-path pair written the way DOCA's fast-path samples are (consumer start answering
/// IN_PROGRESS, receives posted from the state callback and reposted in their completion, the
/// next send submitted from the send completion, 10,240 send tasks, posted receives freed before
/// the consumer stops), and the legacy Comm Channel samples (an epoll-driven service, a client
/// polling its event channels, statistics checked), each run five times: a race in any of those
/// paths shows as a failed run.
const C_PAIRS: &[CPair] = &[
    CPair {
        name: "fast",
        server: "tests/c/comch_fast_server.c",
        client: "tests/c/comch_fast_client.c",
        args: &["-c", "2000", "-b", "4096"],
        repeat: 5,
    },
    CPair {
        name: "comm-channel",
        server: "examples/c/comm_channel_server.c",
        client: "examples/c/comm_channel_client.c",
        args: &["-c", "1000"],
        repeat: 5,
    },
];

/// How long a pair's server may take to exit after its client did before it is killed.
const SERVER_GRACE: Duration = Duration::from_secs(10);

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
    let bin = workspace_root().join("target").join("c");
    std::fs::create_dir_all(&bin).map_err(|e| format!("cannot create {}: {e}", bin.display()))?;
    let source = workspace_root().join(source);
    let out = bin.join(source.file_stem().expect("a file"));
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

/// Builds each C program against the prefix with pkg-config and runs it; each must succeed.
pub fn c_programs(prefix: &Path) -> Result {
    let flags = pkg_config_flags(prefix)?;
    let app_dir = app_dir();
    for (source, args) in C_PROGRAMS {
        let out = build_c(source, &flags, &app_dir)?;
        eprintln!("$ {} {}", out.display(), args.join(" "));
        let status = Command::new(&out)
            .args(*args)
            .status()
            .map_err(|e| format!("cannot run {}: {e}", out.display()))?;
        if !status.success() {
            return Err(format!(
                "{} failed ({status}); see its output above",
                file_name(&out)
            ));
        }
    }
    Ok(())
}

/// The Comch pairs between processes, for the control path and the fast path. Runs after
/// [`doca_feature`], whose build of the kit the Rust servers reuse (they link the prefix's
/// libraries, like the C clients).
pub fn comch_pairs(prefix: &Path, cargo: impl Fn(&[&str], &[(&str, &str)]) -> Result) -> Result {
    let flags = pkg_config_flags(prefix)?;
    let app_dir = app_dir();
    let env = doca_env(prefix)?;
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut build = vec!["build", "--release", "--features", "doca"];
    for pair in PAIRS {
        build.extend(["--example", pair.rust_server]);
    }
    cargo(&build, &env)?;
    for pair in PAIRS {
        let c_server = build_c(pair.c_server, &flags, &app_dir)?;
        let c_client = build_c(pair.c_client, &flags, &app_dir)?;
        let rust_server = doca_target_dir()
            .join("release")
            .join("examples")
            .join(pair.rust_server);
        run_pair(
            &format!("{}-c-c", pair.name),
            &c_server,
            &c_client,
            pair.args,
        )?;
        run_pair(
            &format!("{}-rust-c", pair.name),
            &rust_server,
            &c_client,
            pair.args,
        )?;
    }
    Ok(())
}

/// The C-only Comch pairs, each built once and run `repeat` times in a row.
pub fn c_pairs(prefix: &Path) -> Result {
    let flags = pkg_config_flags(prefix)?;
    let app_dir = app_dir();
    for pair in C_PAIRS {
        let server = build_c(pair.server, &flags, &app_dir)?;
        let client = build_c(pair.client, &flags, &app_dir)?;
        for run in 1..=pair.repeat {
            let started = Instant::now();
            run_pair(
                &format!("{}-c-c-{run}", pair.name),
                &server,
                &client,
                pair.args,
            )
            .map_err(|e| format!("run {run} of {}: {e}", pair.repeat))?;
            eprintln!(
                "{}: run {run} of {} passed in {:.2} s",
                pair.name,
                pair.repeat,
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}

/// Runs `server` in the background and `client` against it, both with `args` and a fresh
/// runtime directory `target/comch-pairs/<dir>` for their sockets, which must be empty after.
fn run_pair(dir: &str, server: &Path, client: &Path, args: &[&str]) -> Result {
    let runtime = workspace_root()
        .join("target")
        .join("comch-pairs")
        .join(dir);
    match std::fs::remove_dir_all(&runtime) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("cannot remove {}: {e}", runtime.display()));
        }
        _ => {}
    }
    // The soft device creates the directory itself, closed to other users as it requires.
    let parent = runtime.parent().expect("under target");
    std::fs::create_dir_all(parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let run = |program: &Path| {
        let mut cmd = Command::new(program);
        cmd.args(args).env("DPAKIT_SOFT_RUNTIME_DIR", &runtime);
        cmd
    };
    let args = args.join(" ");
    eprintln!(
        "$ DPAKIT_SOFT_RUNTIME_DIR={} {} {args} &",
        runtime.display(),
        server.display()
    );
    let mut background = Background(
        run(server)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", server.display()))?,
    );
    eprintln!(
        "$ DPAKIT_SOFT_RUNTIME_DIR={} {} {args}",
        runtime.display(),
        client.display()
    );
    let client_status = run(client)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", client.display()))?;
    let server_status = background.wait_for(SERVER_GRACE)?;
    drop(background);
    let label = format!("{} + {}", file_name(server), file_name(client));
    pair_verdict(&label, client_status, server_status, &leftovers(&runtime)?)
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// A child process, killed if it is still running when dropped (so no error path leaves a
/// server behind).
struct Background(Child);

impl Background {
    /// Its exit status, waiting up to `timeout`; `None` if it is still running then.
    fn wait_for(&mut self, timeout: Duration) -> Result<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.0.try_wait() {
                Ok(Some(status)) => return Ok(Some(status)),
                Ok(None) if Instant::now() >= deadline => return Ok(None),
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(format!("cannot wait for the server: {e}")),
            }
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
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

/// Whether a pair run passed: the client exited 0, the server exited 0 on its own (`None`: it
/// was still running `SERVER_GRACE` after the client), and nothing is left in the runtime
/// directory. The error names every failure.
fn pair_verdict(
    label: &str,
    client: ExitStatus,
    server: Option<ExitStatus>,
    leftovers: &[String],
) -> Result {
    let mut failures = Vec::new();
    if !client.success() {
        failures.push(format!("the client failed ({client})"));
    }
    match server {
        None => failures.push(format!(
            "the server was still running {} s after the client exited (killed)",
            SERVER_GRACE.as_secs()
        )),
        Some(status) if !status.success() => failures.push(format!("the server failed ({status})")),
        Some(_) => {}
    }
    if !leftovers.is_empty() {
        failures.push(format!(
            "the runtime directory still holds {}",
            leftovers.join(", ")
        ));
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "Comch pair {label}: {}; see their output above",
            failures.join("; ")
        ))
    }
}

/// The target directory of the kit's builds with feature `doca`.
fn doca_target_dir() -> PathBuf {
    workspace_root().join("target").join("doca")
}

/// The environment of the kit's builds with feature `doca`: pkg-config finds the prefix, and
/// the build has a target directory of its own.
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
    fn a_pair_passes_only_if_both_exit_0_and_leave_nothing_behind() {
        use std::os::unix::process::ExitStatusExt;
        // Wait statuses: exit code in the second byte, a signal in the low bits.
        let ok = ExitStatus::from_raw(0);
        let failed = ExitStatus::from_raw(1 << 8);
        let killed = ExitStatus::from_raw(9); // SIGKILL
        let socket = ["comch-0000:b1:00.0-0123456789abcdef".to_string()];

        assert_eq!(pair_verdict("s + c", ok, Some(ok), &[]), Ok(()));
        let e = pair_verdict("s + c", failed, Some(ok), &[]).unwrap_err();
        assert!(
            e.contains("s + c") && e.contains("the client failed"),
            "{e}"
        );
        let e = pair_verdict("s + c", ok, Some(killed), &[]).unwrap_err();
        assert!(e.contains("the server failed"), "{e}");
        let e = pair_verdict("s + c", ok, None, &socket).unwrap_err();
        assert!(e.contains("still running 10 s after the client"), "{e}");
        assert!(e.contains("still holds comch-0000:b1:00.0-"), "{e}");
        let e = pair_verdict("s + c", failed, Some(failed), &[]).unwrap_err();
        assert!(
            e.contains("client failed") && e.contains("server failed"),
            "{e}"
        );
    }

    #[test]
    fn every_pair_names_sources_and_examples_that_exist() {
        let root = workspace_root();
        for pair in PAIRS {
            for source in [pair.c_server, pair.c_client] {
                assert!(root.join(source).is_file(), "{source}");
            }
            let example = root
                .join("examples")
                .join(pair.rust_server)
                .with_extension("rs");
            assert!(example.is_file(), "{}", example.display());
            assert_eq!(pair.args[0], "-c", "both sides take the exchange count");
        }
    }

    #[test]
    fn every_c_pair_names_sources_that_exist_and_runs_more_than_once() {
        let root = workspace_root();
        for pair in C_PAIRS {
            for source in [pair.server, pair.client] {
                assert!(root.join(source).is_file(), "{source}");
            }
            assert_eq!(pair.args[0], "-c", "both sides take the exchange count");
            assert!(pair.repeat >= 5, "{} runs {} times", pair.name, pair.repeat);
            assert!(
                PAIRS.iter().all(|p| p.name != pair.name),
                "{}: runtime directories of their own",
                pair.name
            );
        }
    }

    /// The fast pair calls strlen, strcpy and memcpy with only DOCA's headers declaring them,
    /// as DOCA programs do.
    #[test]
    fn the_fast_pair_leans_on_the_doca_headers_for_string_functions() {
        let root = workspace_root();
        let sources = [
            "tests/c/comch_fast_server.c",
            "tests/c/comch_fast_client.c",
            "tests/c/comch_fast_common.h",
        ];
        let text: String = sources
            .iter()
            .map(|s| std::fs::read_to_string(root.join(s)).unwrap_or_else(|e| panic!("{s}: {e}")))
            .collect();
        assert!(
            !text.lines().any(|l| l.starts_with("#include <string.h>")),
            "no <string.h>"
        );
        for call in ["strlen(", "strcpy(", "memcpy(", "#include <doca_version.h>"] {
            assert!(text.contains(call), "{call}");
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
