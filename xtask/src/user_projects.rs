//! What `cargo xtask test` checks of projects of the user's own, outside the repository:
//!
//! - a Rust project from `cargo xtask new`: its host program natively and from the DPA image with
//!   nothing but `cargo run` (the kernel crate's build script builds and embeds the image), a
//!   no-change build that compiles nothing, its tests, its own `cargo xtask build-dpa --profile`;
//!   then a changed kernel, seen in both modes by `cargo run` alone, and the image linked before
//!   the change, named by hand, refused in ISA mode (the message names the command);
//! - a DOCA C project with a DPA kernel of its own (`tests/c/dpacc_project`): built with the soft
//!   SDK's `bin/dpacc` and pkg-config by hand, and with meson (`dependency('doca-dpa')`, dpacc
//!   found in the SDK), each run natively and in ISA mode;
//! - a DOCA 3.x-style kernel-launch project (`tests/c/dpa_kernel_launch`): meson running the
//!   sample script (attributes YAML → blob, then dpacc with DOCA's flags), a kernel with no
//!   parameter and one with eight threads and arguments of both widths; natively, in ISA mode and
//!   under memcheck, then built again against the Arm-side prefix, where `DOCA_ARCH_DPU` holds.

use crate::sdk_checks::memcheck::Mode;
use crate::{Result, new_project, workspace_root};
use dpakit_build::cargo::scrub_environment;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Numbers the C project's program sends in each run.
const C_NUMBERS: &str = "2000";

/// Round trips of the Rust project's program in each run.
const RUST_ROUND_TRIPS: &str = "2000";

/// A fresh directory outside the repository.
fn scratch(name: &str) -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("dpakit-{name}-{}", std::process::id()));
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("cannot remove {}: {e}", dir.display()));
        }
        _ => {}
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

/// Runs `cmd`, echoing it; its output, which must say success unless `expect_failure`.
fn run(mut cmd: Command, expect_failure: bool) -> Result<Output> {
    let shown = format!(
        "{} {}",
        cmd.get_program().to_string_lossy(),
        cmd.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    );
    eprintln!("$ {shown}");
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprint!("{stdout}");
    if out.status.success() == expect_failure {
        return Err(format!(
            "`{shown}` {} ({}):\n{stderr}",
            if expect_failure {
                "succeeded, expected to fail"
            } else {
                "failed"
            },
            out.status
        ));
    }
    Ok(out)
}

/// The generated Rust project, in its own workspace outside the repository.
pub fn rust_template() -> Result {
    let root = scratch("new-project")?;
    let dir = root.join("scaler");
    new_project::run(&new_project::Options {
        dir: dir.clone(),
        name: None,
        source: new_project::Source::Path(workspace_root()),
    })?;
    // The project's own target directory, kept under the kit's so repeated runs reuse the
    // registry crates' builds.
    let target = workspace_root().join("target").join("new-project-cargo");
    let cargo = |args: &[&str]| {
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.args(args).current_dir(&dir);
        scrub_environment(&mut cmd);
        cmd.env("CARGO_TARGET_DIR", &target);
        cmd
    };
    // Cargo alone builds everything: the kernel crate's build script builds the DPA image and
    // embeds it, so the very first `--isa` run needs no other command.
    let native = run(cargo(&["run", "--release", "--", RUST_ROUND_TRIPS]), false)?;
    let isa = run(
        cargo(&["run", "--release", "--", "--isa", RUST_ROUND_TRIPS]),
        false,
    )?;
    for (out, mode) in [(&native, "native"), (&isa, "DPA image")] {
        let said = String::from_utf8_lossy(&out.stdout);
        if !said.contains(mode) || !said.contains("every reply checked") {
            return Err(format!(
                "the project's program did not report a {mode} run: {said}"
            ));
        }
    }
    let said = String::from_utf8_lossy(&isa.stdout);
    if !said.contains("instructions and made") {
        return Err(format!(
            "the project's ISA run did not print its kernel's instructions per message: {said}"
        ));
    }
    // A build with nothing changed compiles nothing and runs no build script: the kernels'
    // build script reruns only when their sources change.
    let started = std::time::Instant::now();
    let out = run(cargo(&["build", "--release", "-v"]), false)?;
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("Compiling") || stderr.contains("build-script-build`") {
        return Err(format!(
            "a no-change `cargo build` rebuilt something: {stderr}"
        ));
    }
    eprintln!("no-change `cargo build --release`: {took:.2?}, everything fresh");
    // The project's own tests: both modes, and a deterministic profile that repeats exactly.
    run(cargo(&["test", "--release"]), false)?;
    // The project's xtask, with the ISA profile: its program in ISA mode on the image just
    // linked (named with --image).
    run(
        cargo(&["xtask", "build-dpa", "--release", "--profile"]),
        false,
    )?;
    let report = target.join("dpa").join("release").join("report.json");
    let report = std::fs::read_to_string(&report)
        .map_err(|e| format!("cannot read {}: {e}", report.display()))?;
    if !report.contains("\"kernel\": \"scale\"") || !report.contains("instructions_per_message") {
        return Err(format!(
            "the project's report has no ISA profile of `scale`: {report}"
        ));
    }

    // The user changes the kernel: every scaled value is off by one now, and the program, which
    // still expects value * factor, must see it in both modes with no command but `cargo run`.
    let kernels = dir.join("scaler-kernels").join("src").join("lib.rs");
    let source = std::fs::read_to_string(&kernels)
        .map_err(|e| format!("cannot read {}: {e}", kernels.display()))?;
    let changed = source.replace(
        "request.value.wrapping_mul(args.factor)",
        "request.value.wrapping_mul(args.factor).wrapping_add(1)",
    );
    if changed == source {
        return Err("the template's kernel no longer scales as this check expects".into());
    }
    std::fs::write(&kernels, changed)
        .map_err(|e| format!("cannot write {}: {e}", kernels.display()))?;
    for args in [
        &["run", "--release", "--", "--isa", "10"][..],
        &["run", "--release", "--", "10"],
    ] {
        let out = run(cargo(args), true)?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !stderr.contains("scaled: 1 }") {
            return Err(format!(
                "`cargo {}` did not show the changed kernel's answer: {stderr}",
                args.join(" ")
            ));
        }
    }
    // The image `build-dpa` linked before the change, named by hand, is older than the
    // kernel's source: ISA mode refuses it, naming the command that rebuilds it.
    let old_image = target
        .join("dpa")
        .join("release")
        .join("scaler_kernels.elf");
    let old_image = old_image
        .to_str()
        .ok_or("the target directory is not UTF-8")?;
    let out = run(
        cargo(&[
            "run",
            "--release",
            "--",
            "--isa",
            "--image",
            old_image,
            "10",
        ]),
        true,
    )?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stderr.contains("is stale") || !stderr.contains("`cargo xtask build-dpa --release`") {
        return Err(format!(
            "ISA mode ran an image older than the kernel's source, or refused it without \
             naming `cargo xtask build-dpa --release`: {stderr}"
        ));
    }
    std::fs::remove_dir_all(&root).map_err(|e| format!("cannot remove {}: {e}", root.display()))
}

/// The DOCA C project with its own DPA kernel, against the soft SDK at `prefix`.
pub fn c_dpacc_project(prefix: &Path) -> Result {
    let project = workspace_root()
        .join("tests")
        .join("c")
        .join("dpacc_project");
    let root = scratch("dpacc-project")?;

    // By hand: dpacc, then the host program with pkg-config.
    let by_hand = root.join("cc");
    std::fs::create_dir_all(&by_hand).map_err(|e| e.to_string())?;
    let mut dpacc = Command::new(prefix.join("bin").join("dpacc"));
    dpacc
        .arg(project.join("device.c"))
        .arg("-o")
        .arg(by_hand.join("libcounter_app.a"))
        .args([
            "-mcpu=nv-dpa-bf3",
            "-hostcc=cc",
            "--app-name=counter_app",
            "-devicecc-options=-Wall -Wextra -Werror",
            "-device-libs=-ldoca_dpa_dev -ldoca_dpa_dev_comm",
        ]);
    run(dpacc, false)?;
    let flags = crate::sdk_checks::pkg_config_flags(prefix)?;
    let mut cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cc.args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O2"])
        .arg(project.join("host.c"))
        .args(&flags)
        .arg(format!("-L{}", by_hand.display()))
        .arg("-lcounter_app")
        .arg("-o")
        .arg(by_hand.join("counter"));
    run(cc, false)?;
    counter_runs(&by_hand.join("counter"))?;

    // With meson, as a DOCA project builds.
    let build = root.join("meson");
    crate::sdk_checks::meson_build(&project, &build, prefix)?;
    counter_runs(&build.join("counter"))?;
    std::fs::remove_dir_all(&root).map_err(|e| format!("cannot remove {}: {e}", root.display()))
}

/// The kernel-launch project (DOCA 3.x's sample flow) against the host prefix and the Arm one.
pub fn c_kernel_launch_project(prefix: &Path) -> Result {
    let project = workspace_root()
        .join("tests")
        .join("c")
        .join("dpa_kernel_launch");
    let root = scratch("kernel-launch")?;
    let arm = crate::soft_sdk::Side::Arm;
    let arm_prefix = crate::soft_sdk::run_for(&crate::soft_sdk::default_prefix_for(arm), arm)?;
    for (side, prefix, said) in [
        ("host", prefix, "built for the host"),
        ("arm", arm_prefix.as_path(), "built for the BlueField Arm"),
    ] {
        let build = root.join(side);
        crate::sdk_checks::meson_build(&project, &build, prefix)?;
        let program = build.join("doca_dpa_kernel_launch");
        let runs: &[(Mode, &str)] = if side == "host" {
            &[
                (Mode::Native, "native"),
                (Mode::Native, "isa"),
                (Mode::Memcheck, "native"),
                (Mode::Memcheck, "isa"),
            ]
        } else {
            &[(Mode::Native, "native")]
        };
        for (mode, exec) in runs {
            let mut cmd = mode.command(&program);
            cmd.env("DPAKIT_SOFT_EXEC", exec);
            let out = run(cmd, false)?;
            let stdout = String::from_utf8_lossy(&out.stdout);
            if !stdout.contains(said) || !stdout.contains(" checks, 0 wrong") {
                return Err(format!(
                    "{} ({side}, {exec}) said: {stdout}",
                    program.display()
                ));
            }
        }
    }
    std::fs::remove_dir_all(&root).map_err(|e| format!("cannot remove {}: {e}", root.display()))
}

/// The counter program natively, then from its DPA image in ISA mode, then both again under
/// memcheck; each must succeed.
fn counter_runs(program: &Path) -> Result {
    let runs = [
        (Mode::Native, "native"),
        (Mode::Native, "isa"),
        (Mode::Memcheck, "native"),
        (Mode::Memcheck, "isa"),
    ];
    for (mode, exec) in runs {
        let mut cmd = mode.command(program);
        cmd.args(["-n", C_NUMBERS]).env("DPAKIT_SOFT_EXEC", exec);
        let out = run(cmd, false)?;
        let said = String::from_utf8_lossy(&out.stdout);
        if !said.contains(", 0 wrong,") {
            return Err(format!("{} ({exec}) said: {said}", program.display()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The Rust project stage alone (`cargo test -p xtask -- --ignored rust_template`): a few
    /// minutes the first time, for the registry crates the project builds.
    #[test]
    #[ignore = "builds a project of its own: run by `cargo xtask test`"]
    fn rust_template() {
        super::rust_template().unwrap();
    }

    /// The kernel-launch project alone (`cargo test -p xtask -- --ignored kernel_launch`),
    /// against the soft SDK `cargo xtask soft-sdk` laid out. One such stage at a time
    /// (`--test-threads=1`): each lays the prefix out anew.
    #[test]
    #[ignore = "builds the soft SDK and a project of its own: run by `cargo xtask test`"]
    fn kernel_launch_project() {
        let prefix = crate::soft_sdk::run(&crate::soft_sdk::default_prefix()).unwrap();
        super::c_kernel_launch_project(&prefix).unwrap();
    }
}
