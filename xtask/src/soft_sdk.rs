//! `cargo xtask soft-sdk [--prefix DIR]`: the soft device laid out like a DOCA installation.
//!
//! ```text
//! <prefix>/include/         doca_*.h and dpakit_soft.h (doca_build_config.h: the side's)
//! <prefix>/lib/libdpakit_soft.so           the soft device, exporting doca_* and dpakit_soft_*
//! <prefix>/lib/libdoca_{common,comch,dpa,argp,comm_channel,rdma,dma}.so -> libdpakit_soft.so
//! <prefix>/lib/libdoca_common.a            the soft device as a static archive
//! <prefix>/lib/libdoca_{comch,dpa,argp,comm_channel,rdma,dma}.a  empty: all is in libdoca_common.a
//! <prefix>/lib/pkgconfig/doca-{common,comch,dpa,argp,comm-channel,rdma,dma}.pc
//! <prefix>/lib/libdoca_dpa_dev{,_comm}.a    empty: the soft device provides the device functions
//! <prefix>/lib/libflexio.so -> libdpakit_soft.so, lib/pkgconfig/libflexio.pc
//! <prefix>/bin/dpacc, tools/dpacc -> ../bin/dpacc   the soft dpacc (DOCA keeps dpacc in tools/)
//! <prefix>/bin/dpa-app-attributes2blob, tools/…    attributes YAML -> dpacc's --dpa-proc-attr blob
//! ```
//!
//! One library under every name, so a program linking them all gets one soft device. A DOCA
//! program then builds with `cc prog.c $(pkg-config --cflags --libs doca-comch doca-dpa
//! doca-argp doca-common)` (`PKG_CONFIG_PATH=<prefix>/lib/pkgconfig`) and runs unchanged.

use crate::{Result, workspace_root};
use dpakit_build::cargo as nested;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the soft device's static archive needs from the C library (Rust's std on Linux).
const NATIVE_LIBS: &[&str] = &[
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];

/// DOCA's library names, each with its pkg-config package and what it requires.
const LIBS: &[(&str, &str, &str, &str)] = &[
    ("doca_common", "doca-common", "", "DOCA Core"),
    ("doca_comch", "doca-comch", "doca-common", "DOCA Comch"),
    ("doca_dpa", "doca-dpa", "doca-common", "DOCA DPA"),
    ("doca_argp", "doca-argp", "doca-common", "DOCA Arg Parser"),
    (
        "doca_comm_channel",
        "doca-comm-channel",
        "doca-common",
        "DOCA Comm Channel (legacy)",
    ),
    // RDMA is declared only (the soft device does not model it), for programs whose helper
    // files use it.
    ("doca_rdma", "doca-rdma", "doca-common", "DOCA RDMA"),
    ("doca_dma", "doca-dma", "doca-common", "DOCA DMA"),
    // FlexIO, which DOCA's DPA meson files ask for (`dependency('libflexio')`): the soft device
    // holds what DOCA's DPA programs need of it.
    ("flexio", "libflexio", "doca-common", "FlexIO SDK"),
];

/// The version the headers follow (DOCA 3.x names and signatures).
const VERSION: &str = "3.0.0";

/// Which side of a host/BlueField pair a prefix builds programs for: what its
/// `doca_build_config.h` says (`DOCA_ARCH_HOST` or `DOCA_ARCH_DPU`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Host,
    Arm,
}

/// The BlueField Arm's `doca_build_config.h` (the host's is dpakit-doca-headers').
const ARM_BUILD_CONFIG: &str = "\
/*
 * dpakit soft device: the machine a program is built for: this prefix's programs are the
 * BlueField Arm's side of a host/BlueField pair (cargo xtask soft-sdk --side arm).
 */
#pragma once

#undef DOCA_ARCH_HOST
#undef DOCA_ARCH_X86
#define DOCA_ARCH_DPU
#define DOCA_ARCH_DPU_BF2 false
#define DOCA_ARCH_ARM
";

/// The default prefix of a side: `target/soft-doca`, or `target/soft-doca-arm`.
pub fn default_prefix_for(side: Side) -> PathBuf {
    let dir = match side {
        Side::Host => "soft-doca",
        Side::Arm => "soft-doca-arm",
    };
    workspace_root().join("target").join(dir)
}

/// The default prefix, `target/soft-doca` (the host's side).
pub fn default_prefix() -> PathBuf {
    default_prefix_for(Side::Host)
}

/// Builds the soft device and lays out the host's prefix; returns it.
pub fn run(prefix: &Path) -> Result<PathBuf> {
    run_for(prefix, Side::Host)
}

/// Builds the soft device and lays out a prefix for `side`; returns it.
pub fn run_for(prefix: &Path, side: Side) -> Result<PathBuf> {
    let prefix = absolute(prefix)?;
    let archive = nested::Build {
        workspace: &workspace_root(),
        package: "dpakit-emu",
        lib_name: "dpakit_emu",
        crate_type: "staticlib",
        target: None,
        release: true,
        features: &[],
        // The workspace's own target directory: the release builds of the model and its
        // dependencies that `cargo xtask test` made already are reused, not built again.
        target_dir: &workspace_root().join("target"),
        profile: &[],
        env: &[],
    }
    .run()?;
    let include = prefix.join("include");
    let lib = prefix.join("lib");
    let pkgconfig = lib.join("pkgconfig");
    for dir in [&include, &lib, &pkgconfig] {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let headers = Path::new(dpakit_doca_headers::INCLUDE_DIR);
    for entry in
        std::fs::read_dir(headers).map_err(|e| format!("cannot read {}: {e}", headers.display()))?
    {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|e| e == "h") {
            nested::copy(&path, &include.join(path.file_name().expect("a file")))?;
        }
    }
    if side == Side::Arm {
        let config = include.join("doca_build_config.h");
        std::fs::write(&config, ARM_BUILD_CONFIG)
            .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
    }
    link_shared(&archive, &lib)?;
    install_tools(&prefix)?;
    // DOCA's device libraries, which device links name (`-ldoca_dpa_dev`): the soft device
    // provides their functions.
    for name in ["doca_dpa_dev", "doca_dpa_dev_comm", "doca_dpa_dev_verbs"] {
        empty_archive(&lib.join(format!("lib{name}.a")))?;
    }
    nested::copy(&archive, &lib.join("libdoca_common.a"))?;
    for (name, ..) in &LIBS[1..] {
        empty_archive(&lib.join(format!("lib{name}.a")))?;
    }
    for (name, package, requires, description) in LIBS {
        let so = lib.join(format!("lib{name}.so"));
        let _ = std::fs::remove_file(&so);
        std::os::unix::fs::symlink("libdpakit_soft.so", &so)
            .map_err(|e| format!("cannot link {}: {e}", so.display()))?;
        std::fs::write(
            pkgconfig.join(format!("{package}.pc")),
            pc_file(name, package, requires, description),
        )
        .map_err(|e| format!("cannot write {package}.pc: {e}"))?;
    }
    Ok(prefix)
}

/// DOCA's DPA tools the soft SDK has: dpakit-build's binaries of the same names.
const TOOLS: &[&str] = &["dpacc", "dpa-app-attributes2blob"];

/// Builds the soft SDK's tools ([`TOOLS`]) into `<prefix>/bin/`, each with `<prefix>/tools/NAME`
/// pointing at it (DOCA keeps them in `tools/`).
fn install_tools(prefix: &Path) -> Result {
    let target_dir = workspace_root().join("target");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.args(["build", "--release", "--package", "dpakit-build"]);
    for tool in TOOLS {
        cmd.args(["--bin", tool]);
    }
    cmd.arg("--target-dir")
        .arg(&target_dir)
        .current_dir(workspace_root());
    nested::scrub_environment(&mut cmd);
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {cargo}: {e}"))?;
    if !status.success() {
        return Err(format!("building the soft SDK's tools failed ({status})"));
    }
    let tools = prefix.join("tools");
    std::fs::create_dir_all(&tools)
        .map_err(|e| format!("cannot create {}: {e}", tools.display()))?;
    for tool in TOOLS {
        nested::copy(
            &target_dir.join("release").join(tool),
            &prefix.join("bin").join(tool),
        )?;
        let link = tools.join(tool);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(format!("../bin/{tool}"), &link)
            .map_err(|e| format!("cannot link {}: {e}", link.display()))?;
    }
    Ok(())
}

fn absolute(path: &Path) -> Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .map_err(|e| format!("cannot resolve {}: {e}", path.display()))
}

/// Links the static archive into `libdpakit_soft.so`, exporting DOCA's API and the soft
/// device's own functions only (std and everything else stays inside).
fn link_shared(archive: &Path, lib: &Path) -> Result {
    let script = lib.join("dpakit_soft.map");
    std::fs::write(
        &script,
        "{\n  global:\n    doca_*;\n    dpakit_soft_*;\n  local:\n    *;\n};\n",
    )
    .map_err(|e| format!("cannot write {}: {e}", script.display()))?;
    let out = lib.join("libdpakit_soft.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-shared", "-o"])
        .arg(&out)
        .arg("-Wl,--whole-archive")
        .arg(archive)
        .arg("-Wl,--no-whole-archive")
        .arg(format!("-Wl,--version-script={}", script.display()))
        .arg("-Wl,-soname,libdpakit_soft.so")
        .args(NATIVE_LIBS)
        .status()
        .map_err(|e| format!("cannot run {cc}: {e}"))?;
    if !status.success() {
        return Err(format!(
            "linking {} failed ({status}); see the errors above",
            out.display()
        ));
    }
    std::fs::remove_file(&script).map_err(|e| e.to_string())
}

fn empty_archive(path: &Path) -> Result {
    // An archive with no member is just its magic line.
    std::fs::write(path, b"!<arch>\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The pkg-config file of one library. The prefix is relative to the file itself
/// (`<prefix>/lib/pkgconfig`), so a copied or moved SDK points at itself, never back at the
/// tree it was built in.
pub fn pc_file(name: &str, package: &str, requires: &str, what: &str) -> String {
    let mut pc = format!(
        "prefix=${{pcfiledir}}/../..\nincludedir=${{prefix}}/include\nlibdir=${{prefix}}/lib\n\n\
         Name: {package}\nDescription: {what} (dpakit soft device)\nVersion: {VERSION}\n"
    );
    if !requires.is_empty() {
        pc.push_str(&format!("Requires: {requires}\n"));
    }
    pc.push_str(&format!(
        "Cflags: -I${{includedir}}\nLibs: -L${{libdir}} -l{name} -Wl,-rpath,${{libdir}}\n"
    ));
    if name == "doca_common" {
        pc.push_str(&format!("Libs.private: {}\n", NATIVE_LIBS.join(" ")));
    }
    pc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pc_files_name_the_library_and_what_it_needs() {
        let pc = pc_file("doca_comch", "doca-comch", "doca-common", "DOCA Comch");
        assert!(pc.contains("prefix=${pcfiledir}/../..\n"), "{pc}");
        assert!(pc.contains("Requires: doca-common\n"), "{pc}");
        assert!(pc.contains("Libs: -L${libdir} -ldoca_comch"), "{pc}");
        assert!(pc.contains("Cflags: -I${includedir}\n"), "{pc}");
        let common = pc_file("doca_common", "doca-common", "", "DOCA Core");
        assert!(!common.contains("Requires"), "{common}");
        assert!(common.contains("Libs.private: -lgcc_s"), "{common}");
    }

    #[test]
    fn every_library_name_but_common_requires_common() {
        let names: Vec<&str> = LIBS.iter().map(|(name, ..)| *name).collect();
        assert_eq!(
            names,
            [
                "doca_common",
                "doca_comch",
                "doca_dpa",
                "doca_argp",
                "doca_comm_channel",
                "doca_rdma",
                "doca_dma",
                "flexio"
            ]
        );
        assert!(
            LIBS[1..]
                .iter()
                .all(|(_, _, requires, _)| *requires == "doca-common")
        );
        let flexio = LIBS.iter().find(|(name, ..)| *name == "flexio").unwrap();
        assert_eq!(
            flexio.1, "libflexio",
            "meson asks for dependency('libflexio')"
        );
    }
}
