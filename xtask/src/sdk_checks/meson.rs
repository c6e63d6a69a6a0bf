//! The DOCA-style C test programs built as a DOCA user builds samples: `tests/c/meson.build`,
//! against the host's prefix and the Arm side's (`doca_build_config.h` picks the side), then run:
//! the DMA program and the clock program on their sides, and the remote sync event pair with the
//! Arm's build serving the host's.

use super::memcheck::Mode;
use super::{pairs, run_c_program};
use crate::soft_sdk::{Side, default_prefix_for, run_for};
use crate::{Result, workspace_root};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Configures meson project `project` in `build` against the soft SDK at `prefix` (its
/// pkg-config files) and compiles it, as a DOCA project builds.
pub fn meson_build(project: &Path, build: &Path, prefix: &Path) -> Result {
    let mut setup = Command::new("meson");
    setup
        .arg("setup")
        .arg(build)
        .arg(project)
        .env("PKG_CONFIG_PATH", prefix.join("lib").join("pkgconfig"));
    let mut compile = Command::new("meson");
    compile.arg("compile").arg("-C").arg(build);
    for (mut cmd, what) in [(setup, "meson setup"), (compile, "meson compile")] {
        eprintln!("$ {what} {} ({})", project.display(), build.display());
        let out = cmd
            .output()
            .map_err(|e| format!("cannot run meson (Debian's meson): {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{what} of {} failed ({}):\n{}{}",
                project.display(),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    Ok(())
}

/// Configures and builds `tests/c` with meson against `prefix` in `target/c-meson/<side>`.
fn build(prefix: &Path, side: &str) -> Result<PathBuf> {
    let build = workspace_root().join("target").join("c-meson").join(side);
    let _ = std::fs::remove_dir_all(&build);
    meson_build(&workspace_root().join("tests").join("c"), &build, prefix)?;
    Ok(build)
}

/// Builds tests/c with meson for both sides and runs what it built.
pub fn samples(prefix: &Path) -> Result {
    let arm_prefix = run_for(&default_prefix_for(Side::Arm), Side::Arm)?;
    let host = build(prefix, "host")?;
    let arm = build(&arm_prefix, "arm")?;
    let native = |dir: &Path, name: &str, label: &str, args: &[&str]| {
        run_c_program(&dir.join(name), label, args, Mode::Native, "native")
    };
    native(&host, "dma_pe_event", "meson-dma_pe_event", &[])?;
    native(&host, "clock", "meson-clock-host", &["host"])?;
    native(&arm, "clock", "meson-clock-arm", &["dpu"])?;
    pairs::run_pair(
        "meson-sync-event-remote",
        &arm.join("sync_event_remote"),
        &host.join("sync_event_remote"),
        &["-c", "200"],
        Mode::Native,
    )
}

#[cfg(test)]
mod tests {
    /// This stage alone (`cargo test -p xtask -- --ignored meson_samples`), against the soft SDK
    /// `cargo xtask soft-sdk` lays out. One such stage at a time (`--test-threads=1`): each lays
    /// the prefix out anew.
    #[test]
    #[ignore = "builds the soft SDK for both sides and the programs: run by `cargo xtask test`"]
    fn meson_samples() {
        let prefix = crate::soft_sdk::run(&crate::soft_sdk::default_prefix()).unwrap();
        super::samples(&prefix).unwrap();
    }
}
