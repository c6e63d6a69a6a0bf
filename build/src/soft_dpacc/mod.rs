//! The soft SDK's `dpacc`: DOCA's DPA compiler driver for the soft device. It takes dpacc's
//! command line and makes what dpacc makes — a host-linkable DPA program, `-o lib….a`, holding
//! the app symbol (`--app-name`) and a host-callable entry per kernel — from device C sources:
//!
//! 1. each source is preprocessed with the keywords `__dpa_global__` and `__dpa_rpc__` marked,
//!    and the kernels are read off it ([`scan`]);
//! 2. with clang, the sources are compiled for the DPA (RV64IMAC, freestanding), checked to import
//!    nothing but DOCA device functions, and linked with the device runtime into the DPA image
//!    (`<app>.elf` beside the output) the soft device's ISA mode runs;
//! 3. the sources are compiled for the host with `-hostcc` (the kernels, run natively by the soft
//!    device), an app descriptor naming the kernels and the image is generated and compiled, and
//!    everything goes into the output archive.
//!
//! A C host program links the archive and the soft SDK's libraries (pkg-config `doca-dpa`), as
//! on a BlueField it links dpacc's output and DOCA's.

pub mod cli;
pub mod scan;

use crate::archive;
use crate::image::{self, DEVICE_CLANG_FLAGS};
use crate::toolchain;
use cli::Invocation;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

type Result<T = (), E = String> = std::result::Result<T, E>;

/// DPA generations dpacc names with `-mcpu`.
const MCPUS: &[&str] = &["nv-dpa-bf3", "nv-dpa-cx7", "nv-dpa-cx8", "nv-dpa-cx9"];

/// DOCA's device libraries: the soft device provides what they hold.
const DOCA_DEVICE_LIBS: &[&str] = &[
    "doca_dpa_dev",
    "doca_dpa_dev_comm",
    "doca_dpa",
    "doca_dpa_dev_verbs",
];

/// DOCA's device libraries whose functions the soft device does not have: linking them is
/// accepted (DOCA's scripts always pass them), and a kernel that calls one of their functions
/// fails to build, naming it.
const UNMODELLED_DEVICE_LIBS: &[&str] = &["doca_dpa_dev_verbs"];

/// dpacc's builtin `__dpa_compiler_barrier()`, defined on every compile of device code: a
/// barrier to the compiler only.
const COMPILER_BARRIER: &str =
    "-D__dpa_compiler_barrier()=__asm__ __volatile__(\"\" ::: \"memory\")";

/// What `--help` prints.
pub const USAGE: &str = "\
usage: dpacc SOURCES... -o LIBRARY --app-name=NAME [options]

the soft device's dpacc: builds a DPA program (a host-linkable static library) from device C
sources, with the kernels run by the soft device natively and, with clang, a DPA image for its
ISA mode (NAME.elf beside LIBRARY)

options:
  -o FILE                   the DPA program to write (lib*.a)
  --app-name=NAME           the app symbol (struct doca_dpa_app *) host code hands to doca_dpa_set_app
  -mcpu=CPU[,CPU...]        nv-dpa-bf3 (default), nv-dpa-cx7, nv-dpa-cx8, nv-dpa-cx9
  -hostcc=CC                the host compiler (default: $CC, else cc)
  -hostcc-options=FLAGS     flags for host-side compiles
  -devicecc-options=FLAGS   flags for compiling the device code
  -device-libs=FLAGS        -L/-l for the device link (DOCA's device libraries only)
  -I DIR, -D MACRO, -U MACRO
  --keep-dir=DIR            keep the intermediate files in DIR (default: .NAME.dpacc beside LIBRARY)
  --dpa-proc-attr=BLOB      the attributes blob (dpa-app-attributes2blob), checked and kept
  -flto, -disable-asm-checks  accepted, no effect
  --dryrun                  print the commands, run none
";

/// The first function of an unmodelled device library (`doca_dpa_dev_verbs_*`) the preprocessed
/// device code names, if any.
fn unmodelled_call(text: &str) -> Option<&str> {
    let at = text.find("doca_dpa_dev_verbs_")?;
    let end = text[at..]
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(text.len(), |n| at + n);
    Some(&text[at..end])
}

/// `--dpa-proc-attr`: an attributes blob as `dpa-app-attributes2blob` writes it (whole 32-bit
/// words, below 1024 bytes, only features the soft SDK knows). The soft device has none of the
/// hardware the features switch on, so the blob is checked and kept in the work directory, not
/// interpreted.
fn check_proc_attr(blob: &Path) -> Result {
    let data = std::fs::read(blob)
        .map_err(|e| format!("dpacc: --dpa-proc-attr {}: {e}", blob.display()))?;
    crate::attributes::from_blob(&data, true, &mut Vec::new()).map_err(|e| {
        format!(
            "dpacc: --dpa-proc-attr {}: {e} (make it with dpa-app-attributes2blob)",
            blob.display()
        )
    })?;
    Ok(())
}

/// Runs dpacc with `args`; `prefix` is the soft SDK the program is built against.
pub fn run(args: &[String], prefix: &Path) -> Result {
    let inv = cli::parse(args)?;
    if inv.help {
        print!("{USAGE}");
        return Ok(());
    }
    if inv.version {
        println!("dpacc (dpakit soft device) {}", env!("CARGO_PKG_VERSION"));
        return Ok(());
    }
    let plan = Plan::new(inv, prefix)?;
    plan.build()
}

/// A checked invocation.
#[derive(Debug)]
struct Plan {
    inv: Invocation,
    output: PathBuf,
    app_name: String,
    hostcc: String,
    include: PathBuf,
    work: PathBuf,
}

impl Plan {
    fn new(inv: Invocation, prefix: &Path) -> Result<Plan> {
        let include = prefix.join("include");
        if !include.join("doca_dpa_dev.h").is_file() {
            return Err(format!(
                "dpacc: {} holds no DOCA device headers: this dpacc belongs in a soft SDK's bin/ \
                 (cargo xtask soft-sdk), or set DPAKIT_SOFT_SDK to the SDK's prefix",
                include.display()
            ));
        }
        let output = inv
            .output
            .clone()
            .ok_or("dpacc: -o names no DPA program to write")?;
        let app_name = inv
            .app_name
            .clone()
            .ok_or("dpacc: --app-name names no app symbol")?;
        if !is_c_identifier(&app_name) {
            return Err(format!(
                "dpacc: --app-name `{app_name}` is not a C identifier"
            ));
        }
        if let Some(list) = &inv.mcpu {
            for mcpu in list.split(',') {
                if !MCPUS.contains(&mcpu) {
                    return Err(format!(
                        "dpacc: -mcpu={list}: `{mcpu}` names no DPA (known: {})",
                        MCPUS.join(", ")
                    ));
                }
            }
        }
        if let Some(blob) = &inv.proc_attr {
            check_proc_attr(blob)?;
        }
        if let Some(object) = inv.objects.first() {
            return Err(format!(
                "dpacc: {} is not a C source: the soft dpacc builds device code from its sources \
                 (pass the .c files)",
                object.display()
            ));
        }
        if inv.sources.is_empty() {
            return Err("dpacc: no device sources (.c) given".into());
        }
        for lib in &inv.device_libs {
            if let Some(name) = lib.strip_prefix("-l")
                && !DOCA_DEVICE_LIBS.contains(&name)
            {
                return Err(format!(
                    "dpacc: device library -l{name}: the soft dpacc links DOCA's device \
                     libraries only ({}); build other device code from its sources",
                    DOCA_DEVICE_LIBS.join(", ")
                ));
            }
        }
        let hostcc = inv
            .hostcc
            .clone()
            .or_else(|| std::env::var("CC").ok().filter(|c| !c.is_empty()))
            .unwrap_or_else(|| "cc".into());
        let dir = output
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let work = inv
            .keep_dir
            .clone()
            .unwrap_or_else(|| dir.join(format!(".{app_name}.dpacc")));
        Ok(Plan {
            inv,
            output,
            app_name,
            hostcc,
            include,
            work,
        })
    }

    fn build(&self) -> Result {
        if !self.inv.dryrun {
            std::fs::create_dir_all(&self.work)
                .map_err(|e| format!("dpacc: cannot create {}: {e}", self.work.display()))?;
            if let Some(blob) = &self.inv.proc_attr {
                let kept = self.work.join("attributes.blob");
                std::fs::copy(blob, &kept)
                    .map_err(|e| format!("dpacc: cannot keep {}: {e}", blob.display()))?;
            }
        }
        let mut kernels = std::collections::BTreeMap::new();
        for source in &self.inv.sources {
            let text = self.preprocess(source)?;
            if let Some(name) = unmodelled_call(&text) {
                return Err(format!(
                    "dpacc: {}: {name} belongs to a DOCA device library the soft device does not \
                     model ({}): it has no DPA verbs",
                    source.display(),
                    UNMODELLED_DEVICE_LIBS.join(", ")
                ));
            }
            if self.inv.dryrun {
                continue;
            }
            for (name, kernel) in
                scan::kernels(&text).map_err(|e| format!("dpacc: {}: {e}", source.display()))?
            {
                if kernels.insert(name.clone(), kernel).is_some() {
                    return Err(format!("dpacc: kernel {name} is defined in two sources"));
                }
            }
        }
        if !self.inv.dryrun && kernels.is_empty() {
            return Err(
                "dpacc: no kernel in the sources: mark thread kernels __dpa_global__ and RPCs \
                 __dpa_rpc__"
                    .into(),
            );
        }
        let kernels: Vec<scan::Kernel> = kernels.into_values().collect();
        let image = self.device_image(&kernels)?;
        let mut objects = self.compile_sources("host", "the host", || {
            let mut cmd = self.hostcc();
            cmd.args(["-c", "-fPIC"]);
            cmd
        })?;
        let app_c = self.work.join("app.c");
        let app_o = self.work.join("app.o");
        if !self.inv.dryrun {
            std::fs::write(
                &app_c,
                app_source(&self.app_name, &kernels, image.as_deref()),
            )
            .map_err(|e| format!("dpacc: cannot write {}: {e}", app_c.display()))?;
        }
        let mut cmd = self.hostcc();
        cmd.args(["-c", "-fPIC"])
            .arg("-I")
            .arg(&self.include)
            .args(&self.inv.hostcc_options)
            .arg(&app_c)
            .arg("-o")
            .arg(&app_o);
        self.run(cmd, "compiling the app descriptor")?;
        objects.push(app_o);
        if !self.inv.dryrun {
            let _ = std::fs::remove_file(&self.output);
        }
        self.archive(&self.output, &objects, "writing the DPA program")?;
        if !self.inv.dryrun {
            eprintln!(
                "dpacc: {} (app {}: {}){}",
                self.output.display(),
                self.app_name,
                kernels
                    .iter()
                    .map(|k| k.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                image.map_or(String::new(), |p| format!(", DPA image {}", p.display()))
            );
        }
        Ok(())
    }

    /// The preprocessed source with the keywords marked (empty for a dry run).
    fn preprocess(&self, source: &Path) -> Result<String> {
        let mut cmd = self.hostcc();
        cmd.args(["-E", "-P"])
            .arg(format!("-D__dpa_global__={}", scan::GLOBAL_MARKER))
            .arg(format!("-D__dpa_rpc__={}", scan::RPC_MARKER))
            .arg(COMPILER_BARRIER)
            .arg("-I")
            .arg(&self.include)
            .args(&self.inv.preprocessor)
            .args(&self.inv.devicecc_options)
            .arg(source);
        if self.inv.dryrun {
            println!("{}", shown(&cmd));
            return Ok(String::new());
        }
        let out = cmd
            .output()
            .map_err(|e| format!("dpacc: cannot run {}: {e}", self.hostcc))?;
        if !out.status.success() {
            return Err(format!(
                "dpacc: preprocessing {} failed ({}):\n{}",
                source.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// With clang: the sources for the DPA, the import check, and the linked image
    /// (`<app>.elf` beside the output). Without clang: none, said once.
    fn device_image(&self, kernels: &[scan::Kernel]) -> Result<Option<PathBuf>> {
        if !toolchain::on_path("clang") {
            eprintln!(
                "dpacc: no clang on PATH: the DPA program runs natively only (no DPA image for \
                 ISA mode)"
            );
            return Ok(None);
        }
        let objects = self.compile_sources("dpa", "the DPA", || {
            let mut cmd = Command::new("clang");
            cmd.args(DEVICE_CLANG_FLAGS).args([
                "-ffreestanding",
                "-fno-builtin",
                "-nostdlib",
                "-O2",
                "-ffunction-sections",
                "-fdata-sections",
                "-c",
            ]);
            cmd
        })?;
        let device_archive = self.work.join(format!("lib{}_device.a", self.app_name));
        if !self.inv.dryrun {
            let _ = std::fs::remove_file(&device_archive);
        }
        self.archive(&device_archive, &objects, "archiving the device objects")?;
        let dir = self
            .output
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if self.inv.dryrun {
            return Ok(Some(dir.join(format!("{}.elf", self.app_name))));
        }
        let bytes = std::fs::read(&device_archive)
            .map_err(|e| format!("dpacc: cannot read {}: {e}", device_archive.display()))?;
        let analysis = archive::analyze(&bytes).map_err(|e| format!("dpacc: {e}"))?;
        let allowed: Vec<&str> = dpakit_abi::device::DEVICE_API
            .iter()
            .chain(image::DEVICE_LIBC)
            .copied()
            .collect();
        analysis
            .check_imports(&allowed)
            .map_err(|e| format!("dpacc: {e}"))?;
        let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
        let image = dir.join(format!("{}.elf", self.app_name));
        image::link(&device_archive, &names, &self.work.join("image"), &image)
            .map_err(|e| format!("dpacc: {e}"))?;
        let image =
            std::path::absolute(&image).map_err(|e| format!("dpacc: {}: {e}", image.display()))?;
        Ok(Some(image))
    }

    /// Compiles each device source with the command `compiler` starts (the SDK's headers, `-I`,
    /// `-D`, and the `-devicecc-options` added) into `<work>/<tag>-<n>-<stem>.o`.
    fn compile_sources(
        &self,
        tag: &str,
        target: &str,
        compiler: impl Fn() -> Command,
    ) -> Result<Vec<PathBuf>> {
        let mut objects = Vec::new();
        for (i, source) in self.inv.sources.iter().enumerate() {
            let object = self.work.join(format!("{tag}-{i}-{}.o", stem(source)));
            let mut cmd = compiler();
            cmd.arg("-I")
                .arg(&self.include)
                .arg(COMPILER_BARRIER)
                .args(&self.inv.preprocessor)
                .args(&self.inv.devicecc_options)
                .arg(source)
                .arg("-o")
                .arg(&object);
            self.run(cmd, &format!("compiling {} for {target}", source.display()))?;
            objects.push(object);
        }
        Ok(objects)
    }

    fn hostcc(&self) -> Command {
        let mut words = cli::split(&self.hostcc).into_iter();
        let mut cmd = Command::new(words.next().unwrap_or_else(|| "cc".into()));
        cmd.args(words);
        cmd
    }

    fn archive(&self, archive: &Path, objects: &[PathBuf], what: &str) -> Result {
        let mut cmd = Command::new(if toolchain::on_path("ar") {
            "ar"
        } else {
            "llvm-ar"
        });
        cmd.arg("rcs").arg(archive).args(objects);
        self.run(cmd, what)
    }

    fn run(&self, mut cmd: Command, what: &str) -> Result {
        if self.inv.dryrun {
            println!("{}", shown(&cmd));
            return Ok(());
        }
        let out = cmd
            .output()
            .map_err(|e| format!("dpacc: {what}: cannot run {:?}: {e}", cmd.get_program()))?;
        if out.status.success() {
            return Ok(());
        }
        Err(format!(
            "dpacc: {what} failed ({}): {}\n{}{}",
            out.status,
            shown(&cmd),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The app descriptor: the soft device's `struct doca_dpa_app` naming each kernel and the image.
fn app_source(app: &str, kernels: &[scan::Kernel], image: Option<&Path>) -> String {
    let mut out = String::from(
        "/* The DPA app descriptor, written by the soft device's dpacc. */\n\
         #include <stdint.h>\n#include <stddef.h>\n#include <dpakit_soft.h>\n\n",
    );
    for k in kernels {
        // The descriptor holds the kernel's address; the declaration need not match its
        // parameters (a launch calls it through a prototype of its own).
        let _ = writeln!(out, "void {}(void);", k.name);
    }
    let _ = writeln!(
        out,
        "\nstatic const struct dpakit_soft_kernel {app}_dpakit_kernels[] = {{"
    );
    for k in kernels {
        let kind = if k.rpc {
            "DPAKIT_SOFT_KERNEL_RPC"
        } else {
            "DPAKIT_SOFT_KERNEL_THREAD"
        };
        let _ = writeln!(
            out,
            "\t{{\"{name}\", (const void *){name}, {kind}, {n}u, {narrow:#x}u}},",
            name = k.name,
            n = k.num_args,
            narrow = k.narrow
        );
    }
    let image = image.map_or("NULL".to_string(), |p| c_string(&p.to_string_lossy()));
    let _ = write!(
        out,
        "}};\n\nstatic const struct doca_dpa_app {app}_dpakit_descriptor = {{\n\
         \tDPAKIT_SOFT_APP_MAGIC, DPAKIT_SOFT_APP_VERSION, {n}u, \"{app}\", {app}_dpakit_kernels,\n\
         \t{image}, 0, NULL, 0}};\n\n\
         struct doca_dpa_app *{app} = (struct doca_dpa_app *)&{app}_dpakit_descriptor;\n",
        n = kernels.len()
    );
    out
}

/// A C string literal.
fn c_string(s: &str) -> String {
    let mut out = String::from("\"");
    for b in s.bytes() {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
    out.push('"');
    out
}

fn is_c_identifier(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map_or_else(|| "source".into(), |s| s.to_string_lossy().into_owned())
}

/// A command as a shell line.
fn shown(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| {
            let a = a.to_string_lossy();
            if a.contains(char::is_whitespace) {
                format!("'{a}'")
            } else {
                a.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests;
