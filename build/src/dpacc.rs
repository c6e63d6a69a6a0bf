//! The dpacc hand-off (`cargo xtask build-dpa --dpacc`): give the device objects to DOCA's dpacc, which packages them
//! into the DPA program, the host-linkable library a program built with feature `doca` links.
//!
//! What dpacc takes, as DOCA documents it: input files that are C sources or DPA object files
//! (a file with an extension it does not know counts as an object), `-hostcc` naming the host
//! compiler the program is linked with, `-mcpu` naming the DPA generation (`nv-dpa-bf3` for the
//! BlueField-3), `--app-name` naming the app symbol (`struct doca_dpa_app *`) host code hands to
//! `doca_dpa_set_app`, `-device-libs` with linker flags for the device link (DOCA's device
//! libraries: `doca_dpa_dev` for the DPA core functions, `doca_dpa_dev_comm` for Comch MsgQ on the
//! device), and `-o` the library to write. A DOCA install keeps dpacc in `<prefix>/tools/` and
//! the device libraries beside its host libraries in `<prefix>/lib/<arch>-linux-gnu/`.
//!
//! The objects that define the kernels go in as inputs, so each is linked whole; the rest of the
//! device archive (core's and compiler_builtins' members, e.g. `memcpy`) is a device library,
//! from which the link takes only what the kernels use.

use crate::{Error, ErrorKind, Report};
use object::read::archive::ArchiveFile;
use object::{Object, ObjectSymbol};
use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

type Result<T = (), E = Error> = std::result::Result<T, E>;

fn fail(message: String) -> Error {
    Error::new(ErrorKind::Dpacc, message)
}

/// The DPA of the BlueField-3.
pub const MCPU: &str = "nv-dpa-bf3";

/// DOCA's device libraries the kernels call into: the DPA core functions and Comch MsgQ.
pub const DEVICE_LIBS: &[&str] = &["doca_dpa_dev", "doca_dpa_dev_comm"];

/// Where DOCA installs itself when `DOCA_HOME` does not say otherwise.
pub const DEFAULT_DOCA_HOME: &str = "/opt/mellanox/doca";

/// The host compiler handed to dpacc when `CC` names none (what DOCA's own builds use).
const DEFAULT_HOST_CC: &str = "gcc";

/// What discovery reads from the environment, passed in so tests can fake it.
#[derive(Debug, Clone)]
pub struct Env {
    /// `DOCA_HOME`: a DOCA install prefix.
    pub doca_home: Option<OsString>,
    /// `PATH`.
    pub path: Option<OsString>,
    /// Where DOCA lives when `DOCA_HOME` is not set.
    pub default_home: PathBuf,
    /// The host architecture, for `lib/<arch>-linux-gnu`.
    pub arch: String,
    /// `CC`: the host compiler.
    pub host_cc: Option<OsString>,
}

impl Env {
    /// The running process's environment.
    pub fn from_process() -> Self {
        Env {
            doca_home: std::env::var_os("DOCA_HOME").filter(|v| !v.is_empty()),
            path: std::env::var_os("PATH"),
            default_home: PathBuf::from(DEFAULT_DOCA_HOME),
            arch: std::env::consts::ARCH.to_string(),
            host_cc: std::env::var_os("CC").filter(|v| !v.is_empty()),
        }
    }

    /// The host compiler dpacc is told about.
    pub fn host_cc(&self) -> OsString {
        self.host_cc
            .clone()
            .unwrap_or_else(|| DEFAULT_HOST_CC.into())
    }
}

/// An installed dpacc and the directory of DOCA's device libraries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    /// The dpacc executable.
    pub dpacc: PathBuf,
    /// The directory holding `libdoca_dpa_dev.a` and `libdoca_dpa_dev_comm.a`.
    pub device_lib_dir: PathBuf,
}

/// Finds dpacc: `$DOCA_HOME/tools/dpacc` first, then `dpacc` on `PATH`, then the default install
/// (only when `DOCA_HOME` is not set); then DOCA's device libraries under the prefix dpacc
/// belongs to. The error says everything that was tried and what to install.
pub fn discover(env: &Env) -> Result<Toolchain> {
    let mut tried = Vec::new();
    let home = env.doca_home.as_ref().map(PathBuf::from);
    let found = match &home {
        Some(home) => {
            let candidate = home.join("tools").join("dpacc");
            tried.push(format!("{} (DOCA_HOME)", candidate.display()));
            is_executable(&candidate).then(|| (candidate, home.clone()))
        }
        None => {
            tried.push("$DOCA_HOME/tools/dpacc (DOCA_HOME is not set)".into());
            None
        }
    }
    .or_else(|| {
        let on_path = find_on_path(env.path.as_deref()?)?;
        // A DOCA install's dpacc sits in <prefix>/tools; one elsewhere says nothing of DOCA.
        let prefix = on_path
            .parent()
            .filter(|dir| dir.file_name() == Some(OsStr::new("tools")))
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .or_else(|| home.clone())
            .unwrap_or_else(|| env.default_home.clone());
        Some((on_path, prefix))
    })
    .or_else(|| {
        tried.push(match &env.path {
            Some(path) => format!(
                "`dpacc` on PATH ({} directories)",
                std::env::split_paths(path).count()
            ),
            None => "`dpacc` on PATH (PATH is not set)".into(),
        });
        if home.is_some() {
            return None;
        }
        let candidate = env.default_home.join("tools").join("dpacc");
        tried.push(format!("{} (the default DOCA prefix)", candidate.display()));
        is_executable(&candidate).then(|| (candidate, env.default_home.clone()))
    });
    let Some((dpacc, prefix)) = found else {
        return Err(fail(format!(
            "`--dpacc` needs DOCA's dpacc, and none was found; looked for {}.\nInstall the DOCA \
             SDK's DPA toolchain (dpacc and the DPA compiler, which DOCA puts in \
             <prefix>/tools), then set DOCA_HOME to the DOCA prefix (e.g. {DEFAULT_DOCA_HOME}) \
             or put dpacc on PATH",
            tried.join(", ")
        )));
    };
    let device_lib_dir = device_lib_dir(&prefix, &env.arch).ok_or_else(|| {
        fail(format!(
            "found {}, but DOCA's device libraries ({}) are not in {}/lib/{}-linux-gnu, lib64 \
             or lib: install the DOCA SDK's DPA development files, or set DOCA_HOME to the \
             prefix that has them",
            dpacc.display(),
            DEVICE_LIBS
                .iter()
                .map(|l| format!("lib{l}.a"))
                .collect::<Vec<_>>()
                .join(", "),
            prefix.display(),
            env.arch
        ))
    })?;
    Ok(Toolchain {
        dpacc,
        device_lib_dir,
    })
}

/// The first of `<prefix>/lib/<arch>-linux-gnu`, `lib64` and `lib` holding every device library.
fn device_lib_dir(prefix: &Path, arch: &str) -> Option<PathBuf> {
    [
        prefix.join("lib").join(format!("{arch}-linux-gnu")),
        prefix.join("lib64"),
        prefix.join("lib"),
    ]
    .into_iter()
    .find(|dir| {
        DEVICE_LIBS
            .iter()
            .all(|lib| dir.join(format!("lib{lib}.a")).is_file())
    })
}

/// The first `dpacc` executable in the directories of `path`.
fn find_on_path(path: &OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join("dpacc"))
        .find(|candidate| is_executable(candidate))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// One dpacc run: everything its command line is made of.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The dpacc executable.
    pub dpacc: PathBuf,
    /// Device objects linked whole (those defining the kernels).
    pub inputs: Vec<PathBuf>,
    /// The device archive, linked as a library for whatever else the inputs need.
    pub archive: PathBuf,
    /// The app symbol dpacc defines (`--app-name`).
    pub app_name: String,
    /// The DPA program to write.
    pub output: PathBuf,
    /// The host compiler (`-hostcc`).
    pub host_cc: OsString,
    /// Where DOCA's device libraries are.
    pub device_lib_dir: PathBuf,
}

impl Invocation {
    /// The arguments, in order: inputs, output, target, host compiler, app name, device
    /// libraries. Fails when a library path holds whitespace, which `-device-libs` (one string
    /// of linker flags) cannot carry.
    pub fn args(&self) -> Result<Vec<OsString>> {
        let archive_dir = self.archive.parent().unwrap_or(Path::new("."));
        let archive_lib = self
            .archive
            .file_name()
            .and_then(OsStr::to_str)
            .and_then(|f| f.strip_prefix("lib"))
            .and_then(|f| f.strip_suffix(".a"))
            .ok_or_else(|| {
                fail(format!(
                    "{} is not named lib<name>.a: dpacc cannot link it as a device library",
                    self.archive.display()
                ))
            })?;
        for dir in [archive_dir, &self.device_lib_dir] {
            if dir.to_string_lossy().contains(char::is_whitespace) {
                return Err(fail(format!(
                    "{} holds whitespace, which dpacc's -device-libs cannot carry: build in a \
                     directory without spaces",
                    dir.display()
                )));
            }
        }
        let mut device_libs = OsString::from("-device-libs=-L");
        device_libs.push(archive_dir);
        device_libs.push(format!(" -l{archive_lib} -L"));
        device_libs.push(&self.device_lib_dir);
        for lib in DEVICE_LIBS {
            device_libs.push(format!(" -l{lib}"));
        }

        let mut args: Vec<OsString> = self.inputs.iter().map(|p| p.into()).collect();
        args.push("-o".into());
        args.push(self.output.clone().into());
        args.push(format!("-mcpu={MCPU}").into());
        let mut host_cc = OsString::from("-hostcc=");
        host_cc.push(&self.host_cc);
        args.push(host_cc);
        args.push(format!("--app-name={}", self.app_name).into());
        args.push(device_libs);
        Ok(args)
    }

    /// The command, ready to run.
    pub fn command(&self) -> Result<Command> {
        let mut cmd = Command::new(&self.dpacc);
        cmd.args(self.args()?);
        Ok(cmd)
    }
}

/// Runs dpacc on what `report` describes: the kernels' objects, taken out of the device archive
/// into `<out>/dpacc/objects/`, and the archive itself; writes `<out>/dpacc/lib<lib_name>.a`
/// with the app symbol `lib_name` (the app symbol a package's `dpa_app!` declares is its library
/// name by convention). Returns that library.
pub fn hand_off(report: &Report, toolchain: &Toolchain, env: &Env) -> Result<PathBuf> {
    let lib_name = &report.lib_name;
    let out_dir = report
        .archive
        .parent()
        .expect("the archive lies in the output directory")
        .join("dpacc");
    let objects_dir = out_dir.join("objects");
    match std::fs::remove_dir_all(&objects_dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(fail(format!(
                "cannot remove {}: {e}",
                objects_dir.display()
            )));
        }
        _ => {}
    }
    std::fs::create_dir_all(&objects_dir)
        .map_err(|e| fail(format!("cannot create {}: {e}", objects_dir.display())))?;
    let kernels: BTreeSet<&str> = report.kernels.iter().map(|k| k.symbol.as_str()).collect();
    let inputs = extract_kernel_objects(&report.archive, &kernels, &objects_dir)?;
    let output = out_dir.join(format!("lib{lib_name}.a"));
    let _ = std::fs::remove_file(&output);
    let invocation = Invocation {
        dpacc: toolchain.dpacc.clone(),
        inputs,
        archive: report.archive.clone(),
        app_name: lib_name.to_string(),
        output: output.clone(),
        host_cc: env.host_cc(),
        device_lib_dir: toolchain.device_lib_dir.clone(),
    };
    let mut cmd = invocation.command()?;
    let shown: Vec<String> = invocation
        .args()?
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .map(|a| if a.contains(' ') { format!("'{a}'") } else { a })
        .collect();
    eprintln!("$ {} {}", invocation.dpacc.display(), shown.join(" "));
    let status = cmd
        .status()
        .map_err(|e| fail(format!("cannot run {}: {e}", invocation.dpacc.display())))?;
    if !status.success() {
        return Err(fail(format!(
            "dpacc failed ({status}); see its errors above"
        )));
    }
    if !output.is_file() {
        return Err(fail(format!(
            "dpacc succeeded but wrote no {}",
            output.display()
        )));
    }
    Ok(output)
}

/// Writes each member of `archive` that defines one of `kernels` into `dir`; returns their
/// paths. Fails if some kernel is defined by no member.
fn extract_kernel_objects(
    archive: &Path,
    kernels: &BTreeSet<&str>,
    dir: &Path,
) -> Result<Vec<PathBuf>> {
    let data = std::fs::read(archive)
        .map_err(|e| fail(format!("cannot read {}: {e}", archive.display())))?;
    let file = ArchiveFile::parse(&*data).map_err(|e| {
        fail(format!(
            "{} is not a static archive: {e}",
            archive.display()
        ))
    })?;
    let mut found = BTreeSet::new();
    let mut written = Vec::new();
    for (index, member) in file.members().enumerate() {
        let member = member.map_err(|e| fail(format!("bad archive member: {e}")))?;
        let bytes = member.data(&*data).map_err(|e| fail(format!("{e}")))?;
        let Ok(obj) = object::File::parse(bytes) else {
            continue;
        };
        let defines: Vec<&str> = obj
            .symbols()
            .filter(|s| s.is_global() && !s.is_undefined())
            .filter_map(|s| s.name().ok())
            .filter(|name| kernels.contains(name))
            .collect();
        if defines.is_empty() {
            continue;
        }
        found.extend(defines);
        // Member names may repeat within an archive: the index keeps the files apart.
        let name = String::from_utf8_lossy(member.name()).replace('/', "_");
        let path = dir.join(format!("{index:03}-{name}"));
        std::fs::write(&path, bytes)
            .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
        written.push(path);
    }
    let missing: Vec<&&str> = kernels.iter().filter(|k| !found.contains(**k)).collect();
    if !missing.is_empty() {
        return Err(fail(format!(
            "no object of {} defines the kernels {missing:?}",
            archive.display()
        )));
    }
    Ok(written)
}

/// What to tell the user after a successful hand-off.
pub fn usage(program: &Path) -> String {
    let dir = program.parent().unwrap_or(Path::new("."));
    format!(
        "DPA program (dpacc, {MCPU}): {}\n  build and run with it: DPAKIT_DPA_APP_DIR={} cargo run \
         --release --features doca --example quickstart",
        program.display(),
        dir.display()
    )
}

#[cfg(test)]
mod tests;
