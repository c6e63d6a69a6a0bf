//! Builds a crate of DPA kernels — Rust kernels declared with `dpakit_dev::thread_kernel!` /
//! `rpc_kernel!`, C kernels compiled by the crate's build script — for the BlueField DPA and for
//! dpakit's soft device, from any workspace: the kit's own `cargo xtask build-dpa`, a user's
//! xtask and a kernel crate's build script ([`kernel_crate`], which embeds the image in the app
//! so a plain `cargo build` builds everything) call the same code.
//!
//! ```no_run
//! let report = dpakit_build::Kernels::new("my-kernels").release(true).build()?;
//! print!("{}", report.table());
//! # Ok::<(), dpakit_build::Error>(())
//! ```
//!
//! One build:
//! 1. a nested cargo compiles the package for [`DPA_TARGET`] into a static archive (one LTO'd
//!    object; its own target directory and a scrubbed environment, so the outer build's flags
//!    cannot leak in); the DPA's rustup target and clang are installed when missing;
//! 2. the archive is read member by member: the kernels are the records the kernel macros leave
//!    in `.dpakit.kernels`, and every symbol the archive imports must be a DOCA device function
//!    (anything else — `malloc`, an allocator shim, `printf` — means std, alloc or a C library
//!    slipped into a kernel, and the build fails naming it and its object);
//! 3. the archive is linked with the device runtime into the DPA image the soft device's ISA mode
//!    runs (`<lib>.elf`), keeping the build ids `dpa_app!` recorded (the soft device checks them
//!    against the app's: [`build_id`]);
//! 4. when the package has a `soft-app` feature, the soft app library (`soft/lib<lib>.so`): the
//!    kernels compiled for the host, exported under their names with the app symbol, the shape of
//!    the library dpacc makes — what C host programs link;
//! 5. `report.json` and a table: each kernel's kind, language and code size, the imports, the
//!    paths; optionally instructions per message in ISA mode ([`Kernels::isa_profile`]).
//!
//! Everything lands in the workspace's own target directory, `target/dpa/<profile>/`. On a
//! machine with DOCA, [`dpacc::hand_off`] gives the device objects to DOCA's dpacc for the
//! BlueField-3 DPA program.

mod archive;
pub mod attributes;
pub mod build_id;
pub mod cargo;
pub mod dpacc;
mod error;
mod image;
mod kernel_crate;
mod profile;
mod records;
mod report;
mod soft_app;
pub mod soft_dpacc;
pub mod toolchain;

pub use error::{Error, ErrorKind, Result};
pub use kernel_crate::{IMAGE_CFG, KernelCrate, kernel_crate};
pub use records::Lang;
pub use report::{Kernel, Report};
pub use toolchain::DPA_TARGET;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Tells `dpa_app!` (through `option_env!`) the DPA image its soft app descriptor names.
const IMAGE_ENV: &str = "DPAKIT_DPA_IMAGE";

/// The feature a kernel package enables for its soft app library build.
pub const SOFT_APP_FEATURE: &str = "soft-app";

/// A kernel package to build, and where. Every setting has a default taken from the package's
/// workspace (`cargo metadata`): its library name, its target directory, whether it has a
/// `soft-app` feature.
#[derive(Debug, Clone)]
pub struct Kernels {
    package: String,
    workspace: Option<PathBuf>,
    release: bool,
    out_dir: Option<PathBuf>,
    cargo_target_dir: Option<PathBuf>,
    soft_app: Option<bool>,
    isa_profile: Option<Vec<OsString>>,
}

impl Kernels {
    /// The kernel package `package`, a member of the workspace of the current directory.
    pub fn new(package: impl Into<String>) -> Self {
        Kernels {
            package: package.into(),
            workspace: None,
            release: false,
            out_dir: None,
            cargo_target_dir: None,
            soft_app: None,
            isa_profile: None,
        }
    }

    /// Any directory inside the package's workspace (default: the current directory).
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace = Some(dir.into());
        self
    }

    /// Build with the release profile (default: debug).
    pub fn release(mut self, release: bool) -> Self {
        self.release = release;
        self
    }

    /// Where the archive, image, soft app library and report go (default:
    /// `<target dir>/dpa/<profile>`).
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// The nested cargo's target directory (default: `<target dir>/dpa/cargo`).
    pub fn cargo_target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cargo_target_dir = Some(dir.into());
        self
    }

    /// Whether to build the soft app library (default: when the package has a `soft-app`
    /// feature).
    pub fn soft_app(mut self, build: bool) -> Self {
        self.soft_app = Some(build);
        self
    }

    /// Measure instructions per message in ISA mode after the build: `cargo <args> <image>` is
    /// run in the workspace and must print, as its last line, a JSON array with one object per
    /// kernel (`kernel`, `instructions_per_message`, `device_calls_per_message`, `workload`),
    /// which goes into the report. For example `run --release --example isa_profile -- --json
    /// --image`.
    pub fn isa_profile<I, S>(mut self, cargo_args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.isa_profile = Some(cargo_args.into_iter().map(Into::into).collect());
        self
    }

    /// Builds the package for the DPA, checks its imports, links the image, builds the soft app
    /// library, writes `report.json`; returns the report.
    pub fn build(&self) -> Result<Report> {
        let workspace = match &self.workspace {
            Some(dir) => dir.clone(),
            None => std::env::current_dir()
                .map_err(|e| Error::new(ErrorKind::Io, format!("no current directory: {e}")))?,
        };
        let meta = cargo::Metadata::read(&workspace)?;
        let package = meta.package(&self.package)?;
        let profile = if self.release { "release" } else { "debug" };
        let dpa_dir = meta.target_directory.join("dpa");
        let plan = Plan {
            workspace: meta.workspace_root.clone(),
            package: package.name.clone(),
            lib_name: package.lib_name.clone(),
            release: self.release,
            profile,
            out_dir: self
                .out_dir
                .clone()
                .unwrap_or_else(|| dpa_dir.join(profile)),
            cargo_target_dir: self
                .cargo_target_dir
                .clone()
                .unwrap_or_else(|| dpa_dir.join("cargo")),
            soft_app: self
                .soft_app
                .unwrap_or_else(|| package.features.iter().any(|f| f == SOFT_APP_FEATURE)),
        };
        let mut report = plan.run()?;
        if let Some(args) = &self.isa_profile {
            report.isa_profile = Some(profile::measure(&plan.workspace, args, &report.image)?);
            report.write_json(&plan.out_dir)?;
        }
        Ok(report)
    }
}

/// A build with every setting resolved.
#[derive(Debug)]
struct Plan {
    workspace: PathBuf,
    package: String,
    lib_name: String,
    release: bool,
    profile: &'static str,
    out_dir: PathBuf,
    cargo_target_dir: PathBuf,
    soft_app: bool,
}

impl Plan {
    fn run(&self) -> Result<Report> {
        toolchain::ensure_dpa_target()?;
        // C kernels are compiled for the device with clang, and the image's runtime assembled.
        toolchain::ensure_debian_packages(&[("clang", "clang")])?;
        let built = self.device_archive()?;
        let bytes = std::fs::read(&built).map_err(|e| Error::io(&built, e))?;
        let analysis = archive::analyze(&bytes).map_err(Error::of(ErrorKind::Archive))?;
        analysis
            .check_imports(dpakit_abi::device::DEVICE_API)
            .map_err(Error::of(ErrorKind::Imports))?;
        if analysis.kernels.is_empty() {
            return Err(Error::new(
                ErrorKind::NoKernels,
                format!(
                    "{} declares no kernels: declare them with dpakit_dev::thread_kernel! or \
                     rpc_kernel! (Rust), DPAKIT_THREAD_KERNEL or DPAKIT_RPC_KERNEL (C)",
                    self.package
                ),
            ));
        }
        std::fs::create_dir_all(&self.out_dir).map_err(|e| Error::io(&self.out_dir, e))?;
        let archive = self.out_dir.join(format!("lib{}.a", self.lib_name));
        cargo::copy(&built, &archive)?;
        let entries: Vec<&str> = analysis.kernels.iter().map(|k| k.symbol.as_str()).collect();
        let image = self.out_dir.join(format!("{}.elf", self.lib_name));
        image::link(&archive, &entries, &self.out_dir.join("image"), &image)
            .and_then(|()| image::check_build_ids(&image, &analysis.build_ids))
            .map_err(Error::of(ErrorKind::Image))?;
        let soft_app = if self.soft_app {
            Some(self.soft_app_library(&analysis.kernels, &image)?)
        } else {
            None
        };
        let report = Report {
            package: self.package.clone(),
            lib_name: self.lib_name.clone(),
            archive,
            profile: self.profile,
            kernels: analysis.kernels,
            imports: analysis.imports.into_iter().collect(),
            image,
            soft_app,
            isa_profile: None,
        };
        report.write_json(&self.out_dir)?;
        Ok(report)
    }

    /// The nested cargo for the DPA: a staticlib of one LTO'd object, so the kernels, the
    /// wrappers they call and `core` merge into one unit (symbol sizes are real code sizes, dead
    /// code is gone), with full debug info. Device code never unwinds.
    fn device_archive(&self) -> Result<PathBuf> {
        cargo::Build {
            workspace: &self.workspace,
            package: &self.package,
            lib_name: &self.lib_name,
            crate_type: "staticlib",
            target: Some(DPA_TARGET),
            release: self.release,
            features: &[],
            target_dir: &self.cargo_target_dir,
            // Full debug info: gdb on ISA mode shows the kernels' source, locals and types (the
            // image's loaded code is the same; the DWARF is not loaded).
            profile: &[
                ("LTO", "fat"),
                ("CODEGEN_UNITS", "1"),
                ("PANIC", "abort"),
                ("DEBUG", "2"),
            ],
            env: &[],
        }
        // Unwind tables (data, not code) also make a function that never returns keep its
        // return address: a panic's backtrace in gdb then reaches the kernel that panicked,
        // through the panic handler (instructions per message are unchanged).
        .run_with(&["-C".into(), "force-unwind-tables=yes".into()])
    }

    /// The soft app library, `<out_dir>/soft/lib<lib_name>.so`: the kernels compiled for the
    /// host without std (as on the device, a panic finishes the thread), exporting each kernel
    /// under its own name and the app symbol, importing the DOCA device functions the soft
    /// device's `libdoca_dpa.so` provides. Its app descriptor names `image` for ISA mode.
    fn soft_app_library(&self, kernels: &[Kernel], image: &Path) -> Result<PathBuf> {
        let c_kernels: Vec<&str> = kernels
            .iter()
            .filter(|k| k.lang == Lang::C)
            .map(|k| k.symbol.as_str())
            .collect();
        let target_dir = self.cargo_target_dir.with_file_name("soft-cargo");
        let rustc_args =
            soft_app::rustc_args(&target_dir, &c_kernels).map_err(Error::of(ErrorKind::SoftApp))?;
        let built = cargo::Build {
            workspace: &self.workspace,
            package: &self.package,
            lib_name: &self.lib_name,
            crate_type: "cdylib",
            target: None,
            release: self.release,
            features: &[SOFT_APP_FEATURE],
            target_dir: &target_dir,
            profile: &[("PANIC", "abort")],
            env: &[(IMAGE_ENV, image.as_os_str())],
        }
        .run_with(&rustc_args)?;
        let lib = self
            .out_dir
            .join("soft")
            .join(format!("lib{}.so", self.lib_name));
        cargo::copy(&built, &lib)?;
        let symbols: Vec<&str> = kernels.iter().map(|k| k.symbol.as_str()).collect();
        soft_app::check_exported(&lib, &symbols).map_err(Error::of(ErrorKind::SoftApp))?;
        Ok(lib)
    }
}

#[cfg(test)]
mod tests;
