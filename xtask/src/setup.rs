//! Installing what `cargo xtask test` needs beyond a DPA build: rustup components and the
//! nightly toolchain (miri, fuzzing). The DPA target and Debian packages are dpakit-build's
//! (re-exported here). Each step says exactly what to run by hand when it cannot do it itself.

use crate::Result;
use dpakit_build::toolchain::{self, rustup};

/// Makes sure the DPA's rustup target is installed.
pub fn ensure_dpa_target() -> Result {
    Ok(toolchain::ensure_dpa_target()?)
}

/// Makes sure each `(command, debian package)` pair has its command on PATH.
pub fn ensure_debian_packages(packages: &[(&str, &str)]) -> Result {
    Ok(toolchain::ensure_debian_packages(packages)?)
}

/// Makes sure each Debian package (a library) is installed.
pub fn ensure_debian_libraries(packages: &[&str]) -> Result {
    Ok(toolchain::ensure_debian_libraries(packages)?)
}

/// Makes sure each `(file, debian package)` pair has its file.
pub fn ensure_debian_files(files: &[(&str, &str)]) -> Result {
    Ok(toolchain::ensure_debian_files(files)?)
}

/// Makes sure rustup components (`rustfmt`, `clippy`) are installed.
pub fn ensure_components(components: &[&str]) -> Result {
    let installed = rustup(&["component", "list", "--installed"])?;
    for component in components {
        let present = installed
            .lines()
            .any(|line| line.split('-').next() == Some(*component));
        if !present {
            eprintln!("installing rustup component {component}");
            rustup(&["component", "add", component])
                .map(drop)
                .map_err(|e| {
                    format!("`rustup component add {component}` failed: {e}; run it by hand")
                })?;
        }
    }
    Ok(())
}

/// Makes sure the nightly toolchain has `component`, installing what is missing.
pub fn ensure_nightly_component(component: &str) -> Result {
    let toolchains = rustup(&["toolchain", "list"])?;
    if !toolchains.lines().any(|l| l.starts_with("nightly")) {
        eprintln!("installing the nightly toolchain (for miri and fuzzing)");
        rustup(&["toolchain", "install", "nightly", "--profile", "minimal"])
            .map_err(|e| format!("`rustup toolchain install nightly` failed: {e}"))?;
    }
    let installed = rustup(&["+nightly", "component", "list", "--installed"])?;
    if installed
        .lines()
        .any(|l| l.split('-').next() == Some(component) || l.starts_with(component))
    {
        return Ok(());
    }
    eprintln!("installing rustup component {component} for nightly");
    rustup(&["+nightly", "component", "add", component])
        .map(drop)
        .map_err(|e| format!("`rustup +nightly component add {component}` failed: {e}"))
}
