//! Compiles the C half of the soft device's C API (the variadic function stable Rust cannot
//! define, `doca_dpa_rpc`; DOCA's logging and argument parser, `doca_log*` and `doca_argp_*`;
//! the device's `doca_dpa_dev_log` is the model's; the DOCA 2.5 names of the Comch functions,
//! `doca_cc_*`, wrapping the `doca_comch_*` ones) and publishes its DOCA headers for
//! `dpakit-sys` (`DEP_DPAKIT_SOFT_INCLUDE`).
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
    println!("cargo::rerun-if-changed=csrc");
    println!("cargo::rerun-if-changed=include");
    println!("cargo::rerun-if-env-changed=DPAKIT_CHECKOUT");
    cc::Build::new()
        .file("csrc/rpc.c")
        .file("csrc/launch.c")
        .file("csrc/log.c")
        .file("csrc/argp.c")
        .file("csrc/cc.c")
        .include(&include)
        .define("DOCA_ALLOW_EXPERIMENTAL_API", None)
        .warnings(true)
        .extra_warnings(true)
        .compile("dpakit_emu_c");
    let published = out.join("include");
    if let Err(e) = copy_headers(&include, &published) {
        println!(
            "cargo::error=cannot copy the soft device's headers from {} to {}: {e}",
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
