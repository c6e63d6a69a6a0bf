//! Compiles the C kernels (`c/`) into a static library the `cc` crate bundles into this crate's
//! rlib, and into the staticlib and cdylib `cargo xtask build-dpa` makes:
//!
//! - for the DPA (riscv64 without an OS) with clang, freestanding: the kernels may call nothing
//!   but DOCA's device functions, and build-dpa checks the archive's imports;
//! - for the host with the default C compiler: the soft device runs them as host code.
//!
//! With feature `doca` nothing is compiled: the DPA app library provides every kernel.
//!
//! Either way it sets the crate's build id (`dpakit_build::build_id`): the app descriptor and the
//! DPA image record it, and ISA mode refuses an image built from other sources than the app. In
//! host builds it also builds the DPA image and embeds it in the app (`dpakit_build::kernel_crate`),
//! so ISA mode runs the current kernels after a plain `cargo build`.
//!
//! DOCA's device headers come from `dpakit-doca-headers` (`DEP_DPAKIT_DOCA_HEADERS_INCLUDE`), a
//! dependency, so the build id covers them with every other file of the dependency tree.
use std::path::PathBuf;

/// The C kernels and the headers they include besides DOCA's (ours and `dpakit_abi.h`).
const SOURCES: &[&str] = &["c/echo.c", "c/dma_offload.c"];
const HEADERS: &[&str] = &[
    "c/dpakit_kernel.h",
    "c/serve.h",
    "../shared-abi/include/dpakit_abi.h",
];

fn main() {
    for file in SOURCES.iter().chain(HEADERS) {
        println!("cargo::rerun-if-changed={file}");
    }
    // Another checkout sharing the target directory has sources of its own (.cargo/config.toml).
    println!("cargo::rerun-if-env-changed=DPAKIT_CHECKOUT");
    dpakit_build::kernel_crate();
    if std::env::var_os("CARGO_FEATURE_DOCA").is_some() {
        return;
    }
    let Some(doca_include) = std::env::var_os("DEP_DPAKIT_DOCA_HEADERS_INCLUDE").map(PathBuf::from)
    else {
        println!("cargo::error=dpakit-doca-headers did not publish its include directory");
        return;
    };
    println!("cargo::rerun-if-changed={}", doca_include.display());
    // At run time: the value compiled into this script names the checkout it was built in.
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let device = std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("riscv64")
        && std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("none");

    let mut build = cc::Build::new();
    build
        .files(SOURCES.iter().map(|s| manifest.join(s)))
        .include(manifest.join("c"))
        .include(&doca_include)
        .include(manifest.join("../shared-abi/include"))
        .flag("-ffunction-sections")
        .flag("-fdata-sections")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true);
    if device {
        // cc's defaults for this target assume a GNU cross toolchain; clang needs only these.
        build.compiler("clang").no_default_flags(true).flags([
            "--target=riscv64-unknown-elf",
            "-march=rv64imac",
            "-mabi=lp64",
            "-mcmodel=medany",
            "-ffreestanding",
            "-fno-builtin",
            "-nostdlib",
            "-O2",
            // For gdb on ISA mode: the DWARF is not loaded, the code is the same.
            "-g",
        ]);
    }
    build.compile("dpakit_kernels_c");
}
