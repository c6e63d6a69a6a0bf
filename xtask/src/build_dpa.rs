//! `cargo xtask build-dpa`: the kit's kernel packages through dpakit-build, which any workspace
//! can call the same way. The kit adds its ISA profile (the `isa_profile` example).

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

/// The fixture kernels that misbehave on purpose (`xtask/fixtures/faulty-kernels`), into
/// `target/dpa/fixtures/release/`: the soft device's ISA-mode fault tests run their image.
pub fn faulty_fixture() -> Kernels {
    Kernels::new("dpakit-fixture-faulty-kernels")
        .workspace(workspace_root())
        .release(true)
        .out_dir(workspace_root().join("target/dpa/fixtures/release"))
}

/// Where `build-dpa` leaves the kit's kernels: `target/dpa/<profile>`.
pub fn kit_out_dir(release: bool) -> PathBuf {
    workspace_root()
        .join("target")
        .join("dpa")
        .join(if release { "release" } else { "debug" })
}
