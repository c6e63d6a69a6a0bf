//! Finding the DPA image of an app: the riscv64 executable `cargo xtask build-dpa` links
//! (dpakit-build's `<target dir>/dpa/<profile>/<lib>.elf`), which the soft device runs in ISA
//! mode ([`SoftSettings::isa_image`](crate::soft::SoftSettings::isa_image)).
//!
//! Host code names its own image with `dpakit::dpa_image!`, which looks from the
//! calling crate's directory; nothing points into the kit's tree.

use crate::error::{Result, bail};
use std::path::{Path, PathBuf};

/// A directory holding `<lib>.elf` images that wins over the search (e.g. images copied next to
/// a deployed program).
pub const IMAGE_DIR_ENV: &str = "DPAKIT_DPA_IMAGE_DIR";

/// The image of kernel library `lib_name` (an app's symbol: `dpa_app!` names the app after its
/// crate's library): in `$DPAKIT_DPA_IMAGE_DIR` if set, else the newest of
/// `<target>/dpa/release/<lib>.elf` and `<target>/dpa/debug/<lib>.elf` for `$CARGO_TARGET_DIR`
/// and the `target/` directories of `crate_dir` and its ancestors (a workspace member finds its
/// workspace's). `NOT_FOUND` names every place looked at and the command that builds it.
pub fn find(crate_dir: &Path, lib_name: &str) -> Result<PathBuf> {
    let file = format!("{lib_name}.elf");
    if let Some(dir) = std::env::var_os(IMAGE_DIR_ENV) {
        let path = Path::new(&dir).join(&file);
        if path.is_file() {
            return Ok(path);
        }
        bail!(
            NotFound,
            "{IMAGE_DIR_ENV} is set, and {} is not a file",
            path.display()
        );
    }
    let mut targets: Vec<PathBuf> = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    targets.extend(crate_dir.ancestors().map(|dir| dir.join("target")));
    let mut looked = Vec::new();
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    for target in targets {
        for profile in ["release", "debug"] {
            let path = target.join("dpa").join(profile).join(&file);
            match path.metadata().and_then(|m| m.modified()) {
                Ok(when) if newest.as_ref().is_none_or(|(t, _)| when > *t) => {
                    newest = Some((when, path));
                }
                Ok(_) => {}
                Err(_) => looked.push(path),
            }
        }
        if newest.is_some() {
            // The nearest target directory that has one is the workspace's.
            break;
        }
    }
    match newest {
        Some((_, path)) => Ok(path),
        None => bail!(
            NotFound,
            "no DPA image `{file}`: build it with `cargo xtask build-dpa --release` in the \
             workspace of {} (looked at {})",
            crate_dir.display(),
            looked
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
