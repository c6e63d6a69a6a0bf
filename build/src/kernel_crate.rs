//! What a kernel crate's build script calls: the crate's build id and, in every host build, its
//! DPA image — built from the same sources by a nested cargo, and embedded in the app
//! `dpa_app!` declares. So `cargo build`, `cargo test` and `cargo run -- --isa` always run the
//! current kernels, natively and in ISA mode, with no other command.
//!
//! ```text
//! // build.rs of a kernel crate
//! fn main() {
//!     dpakit_build::kernel_crate();
//! }
//! ```
//!
//! The image is built with the release profile (the code the DPA runs is optimised; line tables
//! keep it debuggable) into `<target dir>/dpa/cargo`, the same nested target directory `cargo
//! xtask build-dpa` uses, so the two share their work, and never the outer build's directories,
//! whose locks the outer cargo holds. The image lands in the build script's `OUT_DIR`.
//!
//! No image is built for the builds that cannot use one: the device build itself (riscv64), the
//! soft app library (feature `soft-app`: `Kernels` names its image), a host build against DOCA
//! (feature `doca`: dpacc makes the device program), and builds under miri. When the DPA's
//! toolchain is missing and cannot be installed, the crate builds without an image and cargo
//! shows a warning saying why; ISA mode then says the app has no image. Any other failure — a
//! kernel that does not compile for the DPA, an import that is not a DOCA device function — fails
//! the build.

use crate::build_id::{BuildId, one_line};
use crate::{ErrorKind, Kernels};
use std::path::{Path, PathBuf};

/// The cfg a host build of a kernel crate gets when its image is embedded: `dpa_app!` then
/// embeds the file `DPAKIT_DPA_IMAGE` names.
pub const IMAGE_CFG: &str = "dpakit_dpa_image";

/// In a kernel crate's build script: [`KernelCrate::new`]`.emit()`.
pub fn kernel_crate() {
    KernelCrate::new().emit();
}

/// The build script of a kernel crate: its build id, and its DPA image for host builds.
#[derive(Debug, Clone, Default)]
pub struct KernelCrate {
    build_id: BuildId,
}

impl KernelCrate {
    /// The package being built, its local dependencies, nothing else.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a file the kernels are built from that no package of the dependency tree holds (see
    /// [`BuildId::file`]).
    pub fn file(mut self, path: impl Into<PathBuf>) -> Self {
        self.build_id = self.build_id.file(path);
        self
    }

    /// Tells cargo the build id, then builds and embeds the DPA image where this build can use
    /// one (see the module's documentation).
    pub fn emit(&self) {
        self.build_id.emit();
        println!("cargo::rustc-check-cfg=cfg({IMAGE_CFG})");
        if makes_no_image() {
            return;
        }
        match build_image() {
            Ok(image) => {
                println!("cargo::rustc-cfg={IMAGE_CFG}");
                println!("cargo::rustc-env={}={}", crate::IMAGE_ENV, image.display());
            }
            Err(e) if e.kind() == ErrorKind::Toolchain => println!(
                "cargo::warning=no DPA image embedded, so ISA mode cannot run these kernels: {}",
                one_line(e.message())
            ),
            Err(e) => {
                for line in e.message().lines().filter(|l| !l.trim().is_empty()) {
                    println!("cargo::error=the DPA image: {line}");
                }
            }
        }
    }
}

/// Whether this build cannot use an image: the device build itself, the soft app library
/// (whose builder names its image), a host build against DOCA, a build under miri.
fn makes_no_image() -> bool {
    let set = |var: &str| std::env::var_os(var).is_some();
    std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("none")
        || set("CARGO_FEATURE_SOFT_APP")
        || set("CARGO_FEATURE_DOCA")
        || set("CARGO_CFG_MIRI")
}

/// Builds the package of this build script for the DPA; returns its image.
fn build_image() -> crate::Result<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name).map(PathBuf::from).ok_or_else(|| {
            crate::Error::new(
                ErrorKind::Cargo,
                format!("dpakit_build::kernel_crate runs in a build script (no {name})"),
            )
        })
    };
    let manifest_dir = var("CARGO_MANIFEST_DIR")?;
    let out_dir = var("OUT_DIR")?;
    let package = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
    let nested = shared_target_dir(&out_dir, std::env::var("TARGET").ok().as_deref())
        .unwrap_or_else(|| out_dir.clone())
        .join("dpa")
        .join("cargo");
    let report = Kernels::new(package)
        .workspace(manifest_dir)
        .release(true)
        .soft_app(false)
        .out_dir(out_dir.join("dpa"))
        .cargo_target_dir(nested)
        .build()?;
    Ok(report.image)
}

/// The outer build's target directory, from a build script's `OUT_DIR`
/// (`<target>/[<triple>/]<profile>/build/<package>-<hash>/out`); `None` for another layout.
fn shared_target_dir(out_dir: &Path, target: Option<&str>) -> Option<PathBuf> {
    let build = out_dir.parent()?.parent()?;
    if build.file_name()? != "build" {
        return None;
    }
    let mut root = build.parent()?.parent()?;
    if target.is_some_and(|t| root.file_name().is_some_and(|name| name == t)) {
        root = root.parent()?;
    }
    Some(root.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::shared_target_dir;
    use std::path::Path;

    #[test]
    fn the_target_directory_is_found_above_out_dir() {
        let at = |out: &str, target| shared_target_dir(Path::new(out), target);
        assert_eq!(
            at(
                "/w/target/debug/build/k-0123/out",
                Some("x86_64-unknown-linux-gnu")
            ),
            Some("/w/target".into())
        );
        assert_eq!(
            at(
                "/w/target/x86_64-unknown-linux-gnu/release/build/k-0123/out",
                Some("x86_64-unknown-linux-gnu")
            ),
            Some("/w/target".into())
        );
        assert_eq!(at("/elsewhere/out", None), None);
    }
}
