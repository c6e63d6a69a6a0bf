//! `cargo xtask build-dpa`: the kit's kernel package through dpakit-build, which any workspace
//! can call the same way: the device archive, the image, the soft app library C programs link,
//! the report. (A plain `cargo build` builds and embeds the image too: the kernel crate's build
//! script.) The kit adds its ISA profile (the `isa_profile` example).

use crate::workspace_root;
use dpakit_build::Kernels;
use std::path::PathBuf;

/// The package holding the kit's kernels.
pub const KIT_KERNELS: &str = "dpakit-kernels";

/// The kit's own kernels, into `target/dpa/<profile>/`.
pub fn kit_kernels(release: bool) -> Kernels {
    Kernels::new(KIT_KERNELS)
        .workspace(workspace_root())
        .release(release)
}

/// The cost model of the kit's kernels: instructions per message in ISA mode, measured by the
/// `isa_profile` example on the image just linked.
pub fn with_isa_profile(kernels: Kernels) -> Kernels {
    kernels.isa_profile([
        "run",
        "--quiet",
        "--release",
        "--example",
        "isa_profile",
        "--",
        "--json",
        "1000",
        "--image",
    ])
}

/// Where `build-dpa` leaves the kit's kernels: `target/dpa/<profile>`.
pub fn kit_out_dir(release: bool) -> PathBuf {
    workspace_root()
        .join("target")
        .join("dpa")
        .join(if release { "release" } else { "debug" })
}
