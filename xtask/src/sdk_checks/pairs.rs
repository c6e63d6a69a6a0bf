//! The Comch pairs: a server and a client in two processes, the C examples and tests (one of them
//! built for both sides of the BlueField, a sync event shared across PCIe), and the
//! kit's Rust servers with the C clients; each run natively and once under memcheck.

use super::memcheck::Mode;
use super::{app_dir, build_c, build_c_as, doca_env, doca_target_dir, pkg_config_flags};
use crate::Result;
use std::path::Path;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// A Comch echo CI runs between processes: the C server with the C client, then the Rust server
/// example with the C client, each side with `args`.
struct Pair {
    /// Names its runtime directories.
    name: &'static str,
    c_server: &'static str,
    c_client: &'static str,
    rust_server: &'static str,
    args: &'static [&'static str],
    /// Under memcheck (once, C and Rust servers alike): fewer messages, the same paths.
    memcheck_args: &'static [&'static str],
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
        memcheck_args: &["-c", "200"],
    },
    Pair {
        name: "data",
        c_server: "examples/c/comch_data_server.c",
        c_client: "examples/c/comch_data_client.c",
        rust_server: "data_path_server",
        args: &["-c", "2000", "-b", "65536"],
        memcheck_args: &["-c", "100", "-b", "65536"],
    },
    Pair {
        // The C pair also runs five times on its own (C_PAIRS), under another name.
        name: "cc-twins",
        c_server: "examples/c/comm_channel_server.c",
        c_client: "examples/c/comm_channel_client.c",
        rust_server: "comm_channel_server",
        args: &["-c", "1000"],
        memcheck_args: &["-c", "200"],
    },
];

/// A Comch pair of C programs with no Rust counterpart, run `repeat` times in a row, each run
/// with a fresh runtime directory, then once under memcheck; every run must pass.
struct CPair {
    /// Names its runtime directories (`<name>-c-c-<run>`).
    name: &'static str,
    server: &'static str,
    client: &'static str,
    args: &'static [&'static str],
    memcheck_args: &'static [&'static str],
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
        memcheck_args: &["-c", "200", "-b", "4096"],
        repeat: 5,
    },
    CPair {
        name: "comm-channel",
        server: "examples/c/comm_channel_server.c",
        client: "examples/c/comm_channel_client.c",
        args: &["-c", "1000"],
        memcheck_args: &["-c", "200"],
        repeat: 5,
    },
];

/// A C program run on both sides of the BlueField, as DOCA's remote PCI samples are: built
/// once from the host's prefix and once from the Arm's (`DOCA_ARCH_DPU` picks the side), the
/// Arm's build serving, the host's connecting, each run `repeat` times, then once under memcheck.
struct SidesPair {
    name: &'static str,
    source: &'static str,
    args: &'static [&'static str],
    memcheck_args: &'static [&'static str],
    repeat: u32,
}

/// A sync event exported by the host and imported by the DPU, the blobs sent over Comch, then
/// rounds of update_add/wait_eq and of their tasks.
const SIDES_PAIRS: &[SidesPair] = &[SidesPair {
    name: "sync-event-remote",
    source: "tests/c/sync_event_remote.c",
    args: &["-c", "2000"],
    memcheck_args: &["-c", "100"],
    repeat: 3,
}];

/// How long a pair's server may take to exit after its client did before it is killed.
const SERVER_GRACE: Duration = Duration::from_secs(10);

/// The Comch pairs between processes, for the control path and the fast path. Runs after
/// [`doca_feature`](super::doca_feature), whose build of the kit the Rust servers reuse (they
/// link the prefix's libraries, like the C clients).
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
        for mode in [Mode::Native, Mode::Memcheck] {
            let (args, suffix) = match mode {
                Mode::Native => (pair.args, ""),
                Mode::Memcheck => (pair.memcheck_args, "-m"),
            };
            let label = |servers: &str| format!("{}-{servers}{suffix}", pair.name);
            run_pair(&label("c-c"), &c_server, &c_client, args, mode)?;
            run_pair(&label("rust-c"), &rust_server, &c_client, args, mode)?;
        }
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
                Mode::Native,
            )
            .map_err(|e| format!("run {run} of {}: {e}", pair.repeat))?;
            eprintln!(
                "{}: run {run} of {} passed in {:.2} s",
                pair.name,
                pair.repeat,
                started.elapsed().as_secs_f64()
            );
        }
        let dir = format!("{}-c-c-m", pair.name);
        run_pair(&dir, &server, &client, pair.memcheck_args, Mode::Memcheck)
            .map_err(|e| format!("the run under memcheck: {e}"))?;
    }
    sides_pairs(&flags, &app_dir)
}

/// The [`SIDES_PAIRS`]: each program built for the host (`flags`, the host's prefix) and for
/// the Arm (the Arm's prefix, laid out here), the Arm's build serving.
fn sides_pairs(flags: &[String], app_dir: &Path) -> Result {
    let side = crate::soft_sdk::Side::Arm;
    let arm = crate::soft_sdk::run_for(&crate::soft_sdk::default_prefix_for(side), side)?;
    let arm_flags = pkg_config_flags(&arm)?;
    for pair in SIDES_PAIRS {
        let stem = Path::new(pair.source)
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        let dpu = build_c_as(pair.source, &format!("{stem}-dpu"), &arm_flags, app_dir)?;
        let host = build_c_as(pair.source, &format!("{stem}-host"), flags, app_dir)?;
        for run in 1..=pair.repeat {
            run_pair(
                &format!("{}-{run}", pair.name),
                &dpu,
                &host,
                pair.args,
                Mode::Native,
            )
            .map_err(|e| format!("run {run} of {}: {e}", pair.repeat))?;
        }
        run_pair(
            &format!("{}-m", pair.name),
            &dpu,
            &host,
            pair.memcheck_args,
            Mode::Memcheck,
        )
        .map_err(|e| format!("the run under memcheck: {e}"))?;
    }
    Ok(())
}

/// Runs `server` in the background and `client` against it, both with `args` (in `mode`) and a
/// fresh runtime directory `p/<dir>` (`fresh_runtime_dir`) for their sockets, which
/// must be empty after.
pub(super) fn run_pair(
    dir: &str,
    server: &Path,
    client: &Path,
    args: &[&str],
    mode: Mode,
) -> Result {
    let runtime = super::fresh_runtime_dir("p", dir)?;
    let run = |program: &Path| {
        let mut cmd = mode.command(program);
        cmd.args(args).env("DPAKIT_SOFT_RUNTIME_DIR", &runtime);
        cmd
    };
    let args = args.join(" ");
    let prefix = mode.prefix();
    eprintln!(
        "$ DPAKIT_SOFT_RUNTIME_DIR={} {prefix}{} {args} &",
        runtime.display(),
        server.display()
    );
    let mut background = Background(
        run(server)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", server.display()))?,
    );
    eprintln!(
        "$ DPAKIT_SOFT_RUNTIME_DIR={} {prefix}{} {args}",
        runtime.display(),
        client.display()
    );
    let client_status = run(client)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", client.display()))?;
    let server_status = background.wait_for(SERVER_GRACE)?;
    drop(background);
    let label = format!(
        "{}{} + {}",
        mode.prefix(),
        super::file_name(server),
        super::file_name(client)
    );
    pair_verdict(
        &label,
        client_status,
        server_status,
        &super::leftovers(&runtime)?,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace_root;

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

    /// The C pairs alone (`cargo test -p xtask -- --ignored --test-threads=1 c_pairs_stage`),
    /// natively and under memcheck, against the soft SDK `cargo xtask soft-sdk` lays out.
    #[test]
    #[ignore = "builds the soft SDK for both sides and the programs: run by `cargo xtask test`"]
    fn c_pairs_stage() {
        let prefix = crate::soft_sdk::run(&crate::soft_sdk::default_prefix()).unwrap();
        super::c_pairs(&prefix).unwrap();
    }

    /// The Comch pairs alone (`cargo test -p xtask -- --ignored --test-threads=1
    /// comch_pairs_stage`): C and Rust servers with C clients, natively and under memcheck.
    #[test]
    #[ignore = "builds the soft SDK, the kit with feature doca and the programs: run by `cargo xtask test`"]
    fn comch_pairs_stage() {
        let prefix = crate::soft_sdk::run(&crate::soft_sdk::default_prefix()).unwrap();
        crate::sdk_checks::doca_feature(&prefix, crate::test::cargo).unwrap();
        super::comch_pairs(&prefix, crate::test::cargo).unwrap();
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

    #[test]
    fn every_sides_pair_names_a_source_that_exists_and_picks_its_side() {
        let root = workspace_root();
        for pair in SIDES_PAIRS {
            let text = std::fs::read_to_string(root.join(pair.source)).unwrap();
            assert!(text.contains("#ifdef DOCA_ARCH_DPU"), "{}", pair.source);
            assert!(pair.repeat >= 1 && pair.args[0] == "-c");
            assert!(C_PAIRS.iter().all(|p| p.name != pair.name));
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
}
