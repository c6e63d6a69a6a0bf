//! The DPA image of the kit's kernels, built on first use.

use std::path::PathBuf;
use std::process::Command;

/// The kit's DPA image ([`dpakit::kit_image`]); runs `cargo xtask build-dpa --release` first when
/// it is missing.
pub fn ensure_kit_image() -> Result<PathBuf, String> {
    let image = dpakit::kit_image();
    if image.is_file() {
        return Ok(image);
    }
    eprintln!(
        "{} is missing: building it with `cargo xtask build-dpa --release`",
        image.display()
    );
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["xtask", "build-dpa", "--release"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .map_err(|e| format!("cannot run cargo xtask build-dpa: {e}"))?;
    if !status.success() || !image.is_file() {
        return Err(format!(
            "`cargo xtask build-dpa --release` did not make {} ({status})",
            image.display()
        ));
    }
    Ok(image)
}
