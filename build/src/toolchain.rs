//! Installing what a fresh machine lacks for a DPA build: the DPA's rustup target, Debian
//! packages (clang). Each step says exactly what to run by hand when it cannot do it itself.

use std::process::{Command, Stdio};

use crate::{Error, ErrorKind, Result};

fn fail(message: String) -> Error {
    Error::new(ErrorKind::Toolchain, message)
}

/// The Rust target of the DPA's RISC-V cores.
pub const DPA_TARGET: &str = "riscv64imac-unknown-none-elf";

/// Makes sure `rustup target add DPA_TARGET` has been done for the active toolchain.
pub fn ensure_dpa_target() -> Result {
    let installed = rustup(&["target", "list", "--installed"]).map_err(|e| {
        fail(format!(
            "cannot list installed Rust targets ({e}). The DPA build needs the \
             `{DPA_TARGET}` target: install rustup (https://rustup.rs), then run \
             `rustup target add {DPA_TARGET}`"
        ))
    })?;
    if installed.lines().any(|line| line.trim() == DPA_TARGET) {
        return Ok(());
    }
    eprintln!("installing the DPA target: rustup target add {DPA_TARGET}");
    rustup(&["target", "add", DPA_TARGET])
        .map(drop)
        .map_err(|e| {
            fail(format!(
                "the Rust target `{DPA_TARGET}` is missing and `rustup target add {DPA_TARGET}` \
             failed: {e}\nrun `rustup target add {DPA_TARGET}` by hand (it downloads the \
             target's core library) and try again"
            ))
        })
}

/// Makes sure each `(command, debian package)` pair has its command on PATH, installing the
/// package with apt-get when it does not.
pub fn ensure_debian_packages(packages: &[(&str, &str)]) -> Result {
    let missing: Vec<&str> = packages
        .iter()
        .filter(|(command, _)| !on_path(command))
        .map(|&(_, package)| package)
        .collect();
    install_debian_packages(&missing)
}

/// Makes sure each Debian package is installed (for libraries, which no command stands for).
pub fn ensure_debian_libraries(packages: &[&str]) -> Result {
    let missing: Vec<&str> = packages
        .iter()
        .filter(|p| {
            !Command::new("dpkg-query")
                .args(["-W", "-f=${Status}", p])
                .output()
                .is_ok_and(|o| o.stdout.ends_with(b"install ok installed"))
        })
        .copied()
        .collect();
    install_debian_packages(&missing)
}

/// Makes sure each `(file, debian package)` pair has its file (a font, a data file: something
/// no command on PATH stands for), installing the package with apt-get when it does not.
pub fn ensure_debian_files(files: &[(&str, &str)]) -> Result {
    let missing: Vec<&str> = files
        .iter()
        .filter(|(file, _)| !std::path::Path::new(file).exists())
        .map(|&(_, package)| package)
        .collect();
    install_debian_packages(&missing)
}

fn install_debian_packages(missing: &[&str]) -> Result {
    if missing.is_empty() {
        return Ok(());
    }
    let list = missing.join(" ");
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n");
    if !root || !on_path("apt-get") {
        return Err(fail(format!(
            "missing Debian packages: {list}; install them with `sudo apt-get install -y {list}`"
        )));
    }
    eprintln!("installing Debian packages: {list}");
    let update = Command::new("apt-get").args(["update", "-q"]).status();
    let install = Command::new("apt-get")
        .args(["install", "-y", "-q", "--no-install-recommends"])
        .args(missing)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status();
    match (update, install) {
        (Ok(u), Ok(i)) if u.success() && i.success() => Ok(()),
        _ => Err(fail(format!(
            "`apt-get install -y {list}` failed; install the packages by hand and try again"
        ))),
    }
}

pub fn on_path(command: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {command}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

pub fn rustup(args: &[&str]) -> Result<String> {
    let output = Command::new("rustup")
        .args(args)
        .output()
        .map_err(|e| fail(format!("cannot run rustup: {e}")))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(fail(
            String::from_utf8_lossy(&output.stderr).trim().to_string(),
        ))
    }
}
