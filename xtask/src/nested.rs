//! Nested cargo builds: their own target directory, a scrubbed environment (so the outer
//! build's RUSTFLAGS, target dir or wrapper cannot leak in), the artifact found from cargo's
//! JSON messages.

use crate::{Result, workspace_root};
use serde_json::Value;
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One `cargo rustc --lib --crate-type …` of a workspace package.
#[derive(Debug, Clone)]
pub struct Build<'a> {
    /// The package.
    pub package: &'a str,
    /// Its library target's name (as cargo reports it).
    pub lib_name: &'a str,
    /// `staticlib` or `cdylib`.
    pub crate_type: &'a str,
    /// A cross target, or the host.
    pub target: Option<&'a str>,
    /// Release profile.
    pub release: bool,
    /// Features to enable.
    pub features: &'a [&'a str],
    /// The nested cargo's target directory.
    pub target_dir: &'a Path,
    /// Profile settings (`LTO`, `PANIC`, …) for the chosen profile.
    pub profile: &'a [(&'a str, &'a str)],
    /// Environment variables for the build (after the scrub), e.g. what build scripts read.
    pub env: &'a [(&'a str, &'a std::ffi::OsStr)],
}

impl Build<'_> {
    /// Runs the build; returns the artifact (the file ending in `.a` or `.so`).
    pub fn run(&self) -> Result<PathBuf> {
        self.run_with(&[])
    }

    /// Runs the build with `rustc_args` added to the package's own rustc invocation (after
    /// `--`: dependencies do not see them); returns the artifact.
    pub fn run_with(&self, rustc_args: &[OsString]) -> Result<PathBuf> {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(&cargo);
        cmd.args(["rustc", "--package", self.package, "--lib"]);
        if let Some(target) = self.target {
            cmd.args(["--target", target]);
        }
        if !self.features.is_empty() {
            cmd.args(["--features", &self.features.join(",")]);
        }
        cmd.args([
            "--crate-type",
            self.crate_type,
            "--message-format=json-render-diagnostics",
        ])
        .arg("--target-dir")
        .arg(self.target_dir)
        .current_dir(workspace_root())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
        if self.release {
            cmd.arg("--release");
        }
        if !rustc_args.is_empty() {
            cmd.arg("--").args(rustc_args);
        }
        scrub_environment(&mut cmd);
        let profile = if self.release { "RELEASE" } else { "DEV" };
        for (key, value) in self.profile {
            cmd.env(format!("CARGO_PROFILE_{profile}_{key}"), value);
        }
        for (key, value) in self.env {
            cmd.env(key, value);
        }
        let extension = if self.crate_type == "cdylib" {
            ".so"
        } else {
            ".a"
        };
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot run {cargo}: {e}"))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut artifact = None;
        for line in BufReader::new(stdout).lines() {
            let line = line.map_err(|e| format!("reading cargo output: {e}"))?;
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message["reason"] == "compiler-artifact"
                && message["target"]["name"] == self.lib_name
            {
                let files = message["filenames"].as_array().into_iter().flatten();
                for file in files
                    .filter_map(Value::as_str)
                    .filter(|f| f.ends_with(extension))
                {
                    artifact = Some(PathBuf::from(file));
                }
            }
        }
        let status = child
            .wait()
            .map_err(|e| format!("waiting for cargo: {e}"))?;
        if !status.success() {
            return Err(format!(
                "the {} build of {} failed ({status}); see the errors above",
                self.crate_type, self.package
            ));
        }
        artifact.ok_or_else(|| {
            format!(
                "cargo built {} but reported no {}",
                self.package, self.crate_type
            )
        })
    }
}

/// Keeps only what cargo and rustup need to find the toolchain and the registry; drops build
/// settings of the outer invocation (RUSTFLAGS, CARGO_TARGET_DIR, CARGO_BUILD_*, RUSTC_WRAPPER,
/// the CARGO_* variables cargo sets for the running xtask, …).
pub(crate) fn scrub_environment(cmd: &mut Command) {
    const KEEP: &[&str] = &[
        "PATH",
        "HOME",
        "USER",
        "TMPDIR",
        "TERM",
        "LANG",
        "LC_ALL",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "RUSTUP_TOOLCHAIN",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
    ];
    const KEEP_PREFIXES: &[&str] = &[
        "CARGO_REGISTRIES_",
        "CARGO_REGISTRY_",
        "CARGO_HTTP_",
        "CARGO_NET_",
    ];
    cmd.env_clear();
    for (key, value) in std::env::vars_os() {
        let Some(name) = key.to_str() else { continue };
        if KEEP.contains(&name) || KEEP_PREFIXES.iter().any(|p| name.starts_with(p)) {
            cmd.env(&key, value);
        }
    }
}

/// Copies `from` to `to`, creating `to`'s directory; the error names both.
pub fn copy(from: &Path, to: &Path) -> Result {
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::copy(from, to)
        .map(drop)
        .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))
}
