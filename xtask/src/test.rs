//! `cargo xtask test`: everything CI checks, in the order that fails fastest.

use crate::{Result, build_dpa, setup, workspace_root};
use std::process::Command;

/// Debian packages the test suite needs, as (command, package).
const DEBIAN_PACKAGES: &[(&str, &str)] = &[("clang", "clang")];

pub fn run() -> Result {
    setup::ensure_dpa_target()?;
    setup::ensure_components(&["rustfmt", "clippy"])?;
    setup::ensure_debian_packages(DEBIAN_PACKAGES)?;

    cargo(&["fmt", "--all", "--check"])?;
    cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    let report = build_dpa::build(&build_dpa::Options::shipped_kernels(true))?;
    print!("{}", report.table());
    cargo(&["test", "--workspace"])?;
    Ok(())
}

fn cargo(args: &[&str]) -> Result {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("$ cargo {}", args.join(" "));
    let status = Command::new(&cargo)
        .args(args)
        .current_dir(workspace_root())
        .status()
        .map_err(|e| format!("cannot run {cargo}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", args.join(" ")))
    }
}
