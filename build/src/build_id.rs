//! The build id of a kernel crate: one number for the sources its kernels are built from, the
//! same in the host build (the soft app descriptor `dpa_app!` makes) and in the device build
//! (the DPA image), different once a source changes. ISA mode refuses an image whose id is not
//! the app's, so an image left behind by a forgotten `build-dpa` cannot run as if it were current.
//!
//! The kernel crate's build script computes it:
//!
//! ```text
//! // build.rs of a kernel crate
//! fn main() {
//!     dpakit_build::build_id::emit();
//! }
//! ```
//!
//! What the id covers, and why: both builds run the same build script on the same files, so the
//! id is a hash of files, not of anything a build chooses.
//!
//! - Every file of the kernel package and of each local (path) package it depends on, normal or
//!   build dependency, transitively (`cargo tree -e normal,build --target all`), except `target/`,
//!   hidden entries and packages nested inside them. Paths are hashed relative to their package,
//!   so a moved checkout keeps its ids.
//! - For registry and git dependencies, their name, version and source: their files never change.
//! - Files the build reads from outside those packages, named with [`BuildId::file`] (headers a
//!   C kernel includes from elsewhere).
//!
//! Not covered: cargo features, profiles, `RUSTFLAGS` and the compiler. The device build has the
//! package's default features while host builds add their own (`soft-app`, `doca`), and a debug
//! and a release image of the same sources run the same kernels, so none of these may make the
//! ids differ. A crate whose features change what its kernels do must build both sides with the
//! same ones. A published crate (one with `Cargo.toml.orig`) covers its own files only: its
//! dependencies cannot change under it either.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The variable a kernel crate's build script sets for the crate's compilation
/// (`cargo::rustc-env`): the id in 16 hex digits, which `dpakit_dev::dpa_app!` records.
pub const ENV: &str = "DPAKIT_BUILD_ID";

/// How long `cargo tree` may take before the id falls back to the crate's own files.
const TREE_TIMEOUT: Duration = Duration::from_secs(120);

/// In a kernel crate's build script: [`BuildId::new`]`.emit()`.
pub fn emit() {
    BuildId::new().emit();
}

/// What one build id covers: the kernel package, its local dependencies, and the extra files
/// named here.
#[derive(Debug, Clone, Default)]
pub struct BuildId {
    files: Vec<PathBuf>,
}

/// A computed build id and what it read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Computed {
    /// Never 0 (which means "no id").
    pub id: u64,
    /// Every file hashed, and the lock file that pins the dependencies: the build script runs
    /// again when one changes.
    pub inputs: Vec<PathBuf>,
    /// Why the id covers less than it should (`cargo tree` failed): printed as a warning.
    pub note: Option<String>,
}

impl BuildId {
    /// The kernel package and its local dependencies.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a file the build reads that no package of the dependency tree holds (a C header
    /// included by path); a relative path is taken from the kernel package's directory.
    pub fn file(mut self, path: impl Into<PathBuf>) -> Self {
        self.files.push(path.into());
        self
    }

    /// In a build script: computes the id of the package being built and tells cargo
    /// (`cargo::rustc-env=DPAKIT_BUILD_ID=…`, and `rerun-if-changed` for every input). A failure
    /// is a build error naming its cause.
    pub fn emit(&self) {
        let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
        let cargo = std::env::var_os("CARGO").map_or_else(|| PathBuf::from("cargo"), PathBuf::from);
        let Some(manifest_dir) = manifest_dir else {
            println!(
                "cargo::error=dpakit_build::build_id::emit runs in a build script (no CARGO_MANIFEST_DIR)"
            );
            return;
        };
        match self.compute(&manifest_dir, &cargo) {
            Ok(computed) => {
                println!("cargo::rustc-env={ENV}={:016x}", computed.id);
                for input in &computed.inputs {
                    println!("cargo::rerun-if-changed={}", input.display());
                }
                if let Some(note) = computed.note {
                    println!("cargo::warning={}", one_line(&note));
                }
            }
            Err(e) => println!("cargo::error=the kernels' build id: {}", one_line(&e)),
        }
    }

    /// The id of the package whose manifest is in `manifest_dir`; `cargo` lists its
    /// dependencies.
    pub fn compute(&self, manifest_dir: &Path, cargo: &Path) -> Result<Computed, String> {
        let manifest = manifest_dir.join("Cargo.toml");
        let (packages, note) = if manifest_dir.join("Cargo.toml.orig").is_file() {
            // A published package: its files and its dependencies' are fixed.
            (vec![Package::local("", manifest_dir)], None)
        } else {
            match dependency_tree(&manifest, cargo) {
                Ok(tree) => (parse_tree(&tree), None),
                Err(why) => (
                    vec![Package::local("", manifest_dir)],
                    Some(format!(
                        "the build id covers {}'s own files only: {why}",
                        manifest_dir.display()
                    )),
                ),
            }
        };
        let mut hash = Fnv::new();
        hash.write(b"dpakit build id 1\0");
        let mut inputs = Vec::new();
        for package in &packages {
            match package {
                Package::Remote(id) => {
                    hash.write(b"remote\0");
                    hash.write(id.as_bytes());
                    hash.write(b"\0");
                }
                Package::Local { id, dir } => {
                    hash.write(b"local\0");
                    hash.write(id.as_bytes());
                    hash.write(b"\0");
                    let mut files = Vec::new();
                    package_files(dir, dir, &mut files)
                        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
                    files.sort();
                    hash.write(&(files.len() as u64).to_le_bytes());
                    for file in files {
                        let relative = file.strip_prefix(dir).unwrap_or(&file);
                        hash_file(&mut hash, relative, &file)?;
                        inputs.push(file);
                    }
                }
            }
        }
        for file in &self.files {
            let path = manifest_dir.join(file);
            hash.write(b"file\0");
            hash_file(&mut hash, file, &path)?;
            inputs.push(path);
        }
        if let Some(lock) = manifest_dir
            .ancestors()
            .map(|dir| dir.join("Cargo.lock"))
            .find(|lock| lock.is_file())
        {
            inputs.push(lock);
        }
        Ok(Computed {
            id: hash.finish().max(1),
            inputs,
            note,
        })
    }
}

/// `text` on one line: cargo reads a build script's output line by line.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A package of the dependency tree. Sorted by name and version, never by where it is, so the
/// id does not depend on the checkout's place.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Package {
    /// A registry or git package: `name vVERSION[ (SOURCE)]`, which pins its files.
    Remote(String),
    /// A local package: `name vVERSION`, and its directory.
    Local { id: String, dir: PathBuf },
}

impl Package {
    fn local(id: &str, dir: &Path) -> Package {
        Package::Local {
            id: id.to_string(),
            dir: dir.to_path_buf(),
        }
    }
}

/// `cargo tree`'s list of the package and everything its build uses, one `{p}` per line.
fn dependency_tree(manifest: &Path, cargo: &Path) -> Result<String, String> {
    let mut child = Command::new(cargo)
        .arg("tree")
        .arg("--manifest-path")
        .arg(manifest)
        .args(["-e", "normal,build", "--target", "all", "--prefix", "none"])
        .args(["--format", "{p}", "--frozen", "--color", "never"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {} tree: {e}", cargo.display()))?;
    // Read both pipes while waiting, so a full pipe cannot stall the child.
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        stdout.read_to_string(&mut s).map(|_| s)
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + TREE_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`cargo tree` took more than {} s",
                    TREE_TIMEOUT.as_secs()
                ));
            }
            Err(e) => return Err(format!("waiting for `cargo tree`: {e}")),
        }
    };
    let stdout = out
        .join()
        .map_err(|_| "reading `cargo tree`'s output failed".to_string())?
        .map_err(|e| format!("reading `cargo tree`'s output: {e}"))?;
    let stderr = err.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("`cargo tree` failed ({status}): {}", stderr.trim()));
    }
    Ok(stdout)
}

/// The packages of `cargo tree --prefix none --format {p}`: `name vX.Y.Z`, then the source in
/// parentheses unless it is crates.io (a directory for a local package), then `(proc-macro)`
/// and `(*)` markers. Sorted, each once.
fn parse_tree(tree: &str) -> Vec<Package> {
    let mut packages: Vec<Package> = tree
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(|line| {
            let mut line = line;
            for marker in [" (*)", " (proc-macro)", " (*)"] {
                line = line.strip_suffix(marker).unwrap_or(line);
            }
            match line.rfind(" (") {
                Some(at) if line.ends_with(')') && line[at + 2..].starts_with('/') => {
                    Package::local(&line[..at], Path::new(&line[at + 2..line.len() - 1]))
                }
                _ => Package::Remote(line.to_string()),
            }
        })
        .collect();
    packages.sort();
    packages.dedup();
    packages
}

/// Every file of the package at `root` below `dir`: not `target/`, not hidden entries, not
/// packages nested inside it.
fn package_files(root: &Path, dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            if path != root && path.join("Cargo.toml").is_file() {
                continue;
            }
            package_files(root, &path, files)?;
        } else if kind.is_file() || (kind.is_symlink() && path.is_file()) {
            files.push(path);
        }
    }
    Ok(())
}

/// Hashes a file's name (as `name`) and contents.
fn hash_file(hash: &mut Fnv, name: &Path, path: &Path) -> Result<(), String> {
    let contents =
        std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    hash.write(name.to_string_lossy().as_bytes());
    hash.write(b"\0");
    hash.write(&(contents.len() as u64).to_le_bytes());
    hash.write(&contents);
    Ok(())
}

/// 64-bit FNV-1a: a fixed function (the standard library's hashers may change between
/// releases, and both builds must agree), good enough to tell edited sources apart.
#[derive(Debug)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests;
