//! Cargo, from a build tool: what `cargo metadata` says of a workspace, and nested builds with
//! their own target directory and a scrubbed environment (so the outer build's RUSTFLAGS, target
//! dir or wrapper cannot leak in), the artifact found from cargo's JSON messages.

use crate::{Error, ErrorKind, Result};
use serde_json::Value;
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One `cargo rustc --lib --crate-type …` of a workspace package.
#[derive(Debug, Clone)]
pub struct Build<'a> {
    /// A directory of the package's workspace, where cargo runs.
    pub workspace: &'a Path,
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
        .current_dir(self.workspace)
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
            .map_err(|e| Error::new(ErrorKind::Cargo, format!("cannot run {cargo}: {e}")))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut artifact = None;
        for line in BufReader::new(stdout).lines() {
            let line = line.map_err(|e| {
                Error::new(ErrorKind::Cargo, format!("reading cargo's output: {e}"))
            })?;
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
            .map_err(|e| Error::new(ErrorKind::Cargo, format!("waiting for cargo: {e}")))?;
        if !status.success() {
            return Err(Error::new(
                ErrorKind::Cargo,
                format!(
                    "the {} build of {} failed ({status}); see the errors above",
                    self.crate_type, self.package
                ),
            ));
        }
        artifact.ok_or_else(|| {
            Error::new(
                ErrorKind::Cargo,
                format!(
                    "cargo built {} but reported no {}",
                    self.package, self.crate_type
                ),
            )
        })
    }
}

/// Keeps only what cargo and rustup need to find the toolchain and the registry; drops build
/// settings of the outer invocation (RUSTFLAGS, CARGO_TARGET_DIR, CARGO_BUILD_*, RUSTC_WRAPPER,
/// the CARGO_* variables cargo sets for the running xtask, …).
pub fn scrub_environment(cmd: &mut Command) {
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
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    std::fs::copy(from, to).map(drop).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("cannot copy {} to {}: {e}", from.display(), to.display()),
        )
    })
}

/// What `cargo metadata --no-deps` says of a workspace.
#[derive(Debug, Clone)]
pub struct Metadata {
    /// The workspace's root directory.
    pub workspace_root: PathBuf,
    /// Its target directory (`CARGO_TARGET_DIR` and cargo's configuration included).
    pub target_directory: PathBuf,
    /// Its member packages.
    pub packages: Vec<Package>,
}

/// A workspace member.
#[derive(Debug, Clone)]
pub struct Package {
    /// Its name.
    pub name: String,
    /// Its library target's name (the package name with `-` as `_`, unless `[lib] name` says
    /// otherwise).
    pub lib_name: String,
    /// Its features.
    pub features: Vec<String>,
    /// Its manifest.
    pub manifest_path: PathBuf,
}

impl Metadata {
    /// Runs `cargo metadata` in `dir`.
    pub fn read(dir: &Path) -> Result<Metadata> {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = Command::new(&cargo)
            .args(["metadata", "--no-deps", "--format-version", "1"])
            .current_dir(dir)
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| Error::new(ErrorKind::Metadata, format!("cannot run {cargo}: {e}")))?;
        if !out.status.success() {
            return Err(Error::new(
                ErrorKind::Metadata,
                format!(
                    "`cargo metadata` failed in {} ({}): is it inside a cargo workspace?",
                    dir.display(),
                    out.status
                ),
            ));
        }
        Self::parse(&out.stdout)
    }

    /// Reads `cargo metadata --format-version 1` output.
    pub fn parse(json: &[u8]) -> Result<Metadata> {
        let bad = |what: &str| {
            Error::new(
                ErrorKind::Metadata,
                format!("cargo metadata's output has no {what}"),
            )
        };
        let v: Value = serde_json::from_slice(json).map_err(|_| bad("JSON"))?;
        let path = |key: &str| v[key].as_str().map(PathBuf::from).ok_or_else(|| bad(key));
        let mut packages = Vec::new();
        for p in v["packages"].as_array().ok_or_else(|| bad("packages"))? {
            let name = p["name"].as_str().ok_or_else(|| bad("package name"))?;
            let lib_name = p["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|t| {
                    t["kind"].as_array().is_some_and(|kinds| {
                        kinds.iter().any(|k| {
                            matches!(
                                k.as_str(),
                                Some("lib" | "rlib" | "staticlib" | "cdylib" | "dylib")
                            )
                        })
                    })
                })
                .and_then(|t| t["name"].as_str())
                .map(|n| n.replace('-', "_"));
            packages.push(Package {
                name: name.to_string(),
                lib_name: lib_name.unwrap_or_default(),
                features: p["features"]
                    .as_object()
                    .map(|f| f.keys().cloned().collect())
                    .unwrap_or_default(),
                manifest_path: p["manifest_path"]
                    .as_str()
                    .map(PathBuf::from)
                    .unwrap_or_default(),
            });
        }
        Ok(Metadata {
            workspace_root: path("workspace_root")?,
            target_directory: path("target_directory")?,
            packages,
        })
    }

    /// The member `name`, which must have a library target.
    pub fn package(&self, name: &str) -> Result<&Package> {
        let Some(package) = self.packages.iter().find(|p| p.name == name) else {
            let members: Vec<&str> = self.packages.iter().map(|p| p.name.as_str()).collect();
            return Err(Error::new(
                ErrorKind::Metadata,
                format!(
                    "no package `{name}` in the workspace at {} (members: {})",
                    self.workspace_root.display(),
                    members.join(", ")
                ),
            ));
        };
        if package.lib_name.is_empty() {
            return Err(Error::new(
                ErrorKind::Metadata,
                format!(
                    "package `{name}` has no library target: kernels live in a library crate \
                     (src/lib.rs)"
                ),
            ));
        }
        Ok(package)
    }
}
