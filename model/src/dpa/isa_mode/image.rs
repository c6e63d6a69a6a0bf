//! The DPA image a context in ISA mode runs, found and loaded with dpakit-rv's loader.

use crate::error::{Result, bail, err};
use dpakit_abi::device::DEVICE_API;
use dpakit_rv::Image;
use std::path::Path;

/// Reads and loads the image at `path`, its runtime stubs named after the device API.
pub(crate) fn load(path: &Path) -> Result<Image> {
    let data = std::fs::read(path).map_err(|e| {
        err(
            crate::error::ErrorCode::NotFound,
            format!(
                "cannot read the DPA image {}: {e} (build it with `cargo xtask build-dpa \
                 --release`)",
                path.display()
            ),
        )
    })?;
    Image::parse(&data, &path.display().to_string(), DEVICE_API)
        .map_err(|e| err(crate::error::ErrorCode::InvalidValue, e.to_string()))
}

/// The image a DPA context in ISA mode runs: the path asked for (the builder's, else
/// `DPAKIT_SOFT_DPA_IMAGE`, else the app's own), loaded.
pub(crate) fn resolve(
    configured: Option<&Path>,
    app: &super::super::App,
) -> Result<(Image, std::path::PathBuf)> {
    let from_env = std::env::var_os("DPAKIT_SOFT_DPA_IMAGE").map(std::path::PathBuf::from);
    let Some(path) = configured
        .map(Path::to_path_buf)
        .or(from_env)
        .or_else(|| app.image_path().map(Path::to_path_buf))
    else {
        bail!(
            NotFound,
            "ISA mode needs the DPA image of app `{}`, and none is named: build it with `cargo \
             xtask build-dpa --release` (the app library it makes names its image) or name it \
             with dpakit_soft_dpa_set_isa_image / DPAKIT_SOFT_DPA_IMAGE",
            app.name()
        );
    };
    let image = load(&path)?;
    Ok((image, path))
}
