//! Publishes the include directory (`include/`) to the build scripts of the crates that depend on
//! this one, as `DEP_DPAKIT_DOCA_HEADERS_INCLUDE`.
//!
//! The published directory is a copy in `OUT_DIR`, not `include/` itself: Cargo reuses this
//! script's output when the checkout moves (its fingerprints hold no absolute path), and a path
//! into the old checkout would then name headers that are gone. `DPAKIT_CHECKOUT` (set by the
//! workspace's `.cargo/config.toml`) runs the script again when one target directory serves
//! another checkout, whose headers may differ with older modification times.
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    let include = manifest.join("include");
    println!("cargo::rerun-if-changed=include");
    println!("cargo::rerun-if-env-changed=DPAKIT_CHECKOUT");
    let published = out.join("include");
    if let Err(e) = copy_headers(&include, &published) {
        println!(
            "cargo::error=cannot copy the DOCA headers from {} to {}: {e}",
            include.display(),
            published.display()
        );
        return;
    }
    println!("cargo::metadata=include={}", published.display());
}

/// Replaces `to` with a copy of the files of `from`.
fn copy_headers(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(to) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name()))?;
        }
    }
    Ok(())
}
