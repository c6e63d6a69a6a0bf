//! The DPA image a context in ISA mode runs, found and loaded with dpakit-rv's loader, and
//! checked against the app: an image built from other kernel sources than the app's
//! host-compiled kernels (a kernel edited, the host side rebuilt, `build-dpa` forgotten) would run
//! the old code in ISA mode and the new one natively, so it is refused.

use crate::error::{ErrorCode, Result, bail, err};
use dpakit_abi::device::DEVICE_API;
use dpakit_abi::kernel::{BUILD_ID_SECTION, build_id_records};
use dpakit_rv::Image;
use std::path::{Path, PathBuf};

/// Reads and loads the image at `path`.
fn load_file(path: &Path, app: &super::super::App) -> Result<(Image, PathBuf)> {
    let data = std::fs::read(path).map_err(|e| {
        err(
            ErrorCode::NotFound,
            format!(
                "cannot read the DPA image {}: {e} (build it with `cargo xtask build-dpa \
                 --release`)",
                path.display()
            ),
        )
    })?;
    Ok((load(&data, path, app)?, path.to_path_buf()))
}

/// Loads the image `data` (named `path` in messages), its runtime stubs named after the device
/// API, after checking that it was built from the sources of `app`'s kernels.
fn load(data: &[u8], path: &Path, app: &super::super::App) -> Result<Image> {
    let image = Image::parse(data, &path.display().to_string(), DEVICE_API)
        .map_err(|e| err(ErrorCode::InvalidValue, e.to_string()))?;
    check_build_id(data, path, app)?;
    Ok(image)
}

/// The image a DPA context in ISA mode runs, loaded, and the path that names it: the file
/// asked for (the builder's, else `DPAKIT_SOFT_DPA_IMAGE`), else the image the app embeds, else
/// the file the app names.
pub(crate) fn resolve(
    configured: Option<&Path>,
    app: &super::super::App,
) -> Result<(Image, PathBuf)> {
    let from_env = std::env::var_os("DPAKIT_SOFT_DPA_IMAGE").map(PathBuf::from);
    if let Some(path) = configured.map(Path::to_path_buf).or(from_env) {
        return load_file(&path, app);
    }
    if let Some(data) = app.embedded_image() {
        // Messages name the file the embedded bytes were built as, where there is one.
        let path = app.image_path().map_or_else(
            || PathBuf::from(format!("<the DPA image embedded in app `{}`>", app.name())),
            Path::to_path_buf,
        );
        return Ok((load(data, &path, app)?, path));
    }
    let Some(path) = app.image_path() else {
        bail!(
            NotFound,
            "ISA mode needs the DPA image of app `{}`, and it neither embeds nor names one: \
             call `dpakit_build::kernel_crate()` in its kernel crate's build script (the \
             image is then built with the crate and embedded in the app), build it with `cargo \
             xtask build-dpa --release` (the soft app library it makes names its image), or \
             name it with dpakit_soft_dpa_set_isa_image / DPAKIT_SOFT_DPA_IMAGE",
            app.name()
        );
    };
    load_file(path, app)
}

/// An app with a build id runs only an image recording the same id for it.
fn check_build_id(data: &[u8], path: &Path, app: &super::super::App) -> Result<()> {
    let Some(want) = app.build_id() else {
        return Ok(());
    };
    let records = build_ids(data).map_err(|why| {
        err(
            ErrorCode::InvalidValue,
            format!("the DPA image {}: {why}", path.display()),
        )
    })?;
    let rebuild = rebuild_advice(path);
    match records.iter().find(|(name, _)| name == app.name()) {
        Some((_, id)) if *id == want => Ok(()),
        Some((_, id)) => bail!(
            InvalidValue,
            "the DPA image {} is stale: it was built from other kernel sources than app `{}`'s \
             host build (build id {id:016x} in the image, {want:016x} in the app), and ISA mode \
             would run the old kernels. {rebuild}",
            path.display(),
            app.name()
        ),
        None => bail!(
            InvalidValue,
            "the DPA image {} records no build id of app `{}` (it records {}): it was built \
             from another app's kernels, or by a dpakit without build ids, or name the image \
             of this app. {rebuild}",
            path.display(),
            app.name(),
            if records.is_empty() {
                "none".to_string()
            } else {
                records
                    .iter()
                    .map(|(name, _)| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
    }
}

/// How to rebuild the image at `path`, as a sentence: an image in a build script's `OUT_DIR`
/// (`…/build/<package>-<hash>/out/…`) is the kernel crate's build script's; any other is
/// `cargo xtask build-dpa`'s, with `--release` for one of the release profile (`dpa/release/`).
fn rebuild_advice(path: &Path) -> String {
    let names: Vec<&std::ffi::OsStr> = path.components().map(|c| c.as_os_str()).collect();
    let in_out_dir = names.windows(3).any(|w| w[0] == "build" && w[2] == "out");
    let after_dpa = |dir: &str| names.windows(2).any(|w| w[0] == "dpa" && w[1] == dir);
    if in_out_dir {
        return "Rebuild the program with `cargo build`: the kernel crate's build script \
                (`dpakit_build::kernel_crate`) rebuilds the image with the kernels"
            .to_string();
    }
    let command = if after_dpa("release") {
        "cargo xtask build-dpa --release"
    } else if after_dpa("debug") {
        "cargo xtask build-dpa"
    } else {
        "cargo xtask build-dpa [--release]"
    };
    format!(
        "Rebuild the image with `{command}` (in a project from `cargo xtask new`, the same \
         command of its own xtask)"
    )
}

/// The (app, build id) records of an image's [`BUILD_ID_SECTION`]; none when it has no such
/// section.
fn build_ids(data: &[u8]) -> std::result::Result<Vec<(String, u64)>, String> {
    use object::{Object, ObjectSection};
    let file = object::File::parse(data).map_err(|e| format!("not an ELF file: {e}"))?;
    let Some(section) = file.section_by_name(BUILD_ID_SECTION) else {
        return Ok(Vec::new());
    };
    let bytes = section
        .data()
        .map_err(|e| format!("unreadable {BUILD_ID_SECTION}: {e}"))?;
    build_id_records(bytes)
        .map(|r| {
            r.map(|(app, id)| (app.to_string(), id))
                .map_err(|why| format!("malformed {BUILD_ID_SECTION} ({why})"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rebuild_advice_follows_where_the_image_is() {
        let advice = |path: &str| rebuild_advice(Path::new(path));
        assert!(
            advice("/w/target/dpa/release/k.elf").contains("`cargo xtask build-dpa --release`")
        );
        assert!(advice("/w/target/dpa/debug/k.elf").contains("`cargo xtask build-dpa`"));
        assert!(advice("/opt/k.elf").contains("`cargo xtask build-dpa [--release]`"));
        assert!(
            advice("/w/target/debug/build/k-0123/out/dpa/k.elf")
                .contains("`cargo build`: the kernel crate's build script")
        );
    }
}

/// The device function of each runtime stub by its `ecall`'s address, found with a subtraction
/// and an index (a device call looks it up each time).
#[derive(Debug)]
pub(crate) struct Stubs {
    /// The lowest stub address.
    first: u64,
    /// By `(pc - first) / 2`: the stub's index in the device API list, plus one (0: no stub).
    by_half: Box<[u8]>,
}

impl Stubs {
    /// The table of `image`'s stubs (those it has: an image need not call every function).
    pub(crate) fn of(image: &Image) -> Stubs {
        let present = || image.stubs.iter().copied().filter(|&s| s != 0);
        let (Some(first), Some(last)) = (present().min(), present().max()) else {
            return Stubs {
                first: 0,
                by_half: Box::new([]),
            };
        };
        let mut by_half = vec![0u8; ((last - first) / 2 + 1) as usize].into_boxed_slice();
        for (i, &s) in image.stubs.iter().enumerate() {
            if s != 0 {
                // The device API has fewer than 255 functions (checked at compile time below).
                by_half[((s - first) / 2) as usize] = i as u8 + 1;
            }
        }
        Stubs { first, by_half }
    }

    /// The stub whose `ecall` is at `pc`, as [`Image::stub_at`] finds it.
    #[inline]
    pub(crate) fn at(&self, pc: u64) -> Option<usize> {
        let off = pc.wrapping_sub(self.first);
        if off % 2 != 0 {
            return None;
        }
        let slot = *self.by_half.get(usize::try_from(off / 2).ok()?)?;
        (slot != 0).then(|| usize::from(slot) - 1)
    }
}

const _: () = assert!(DEVICE_API.len() < 255);
