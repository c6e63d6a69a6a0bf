//! What `cargo xtask test` checks against the soft SDK prefix, as a BlueField user's build
//! would use an installed DOCA: C programs built with pkg-config, and the kit built with
//! feature `doca` (dynamic linking to `libdoca_*.so`).

use crate::{Result, build_dpa, workspace_root};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Messages the C echo sends in CI: enough to cross every path many times over, quick to run.
const C_ECHO_MESSAGES: &str = "20000";

/// The C programs CI builds and runs, with their arguments.
const C_PROGRAMS: &[(&str, &[&str])] = &[
    ("examples/c/msgq_echo.c", &["-n", C_ECHO_MESSAGES]),
    ("tests/c/ctx_state.c", &[]),
    ("tests/c/argp_log.c", &[]),
];

/// `PKG_CONFIG_PATH` for the prefix.
fn pkg_config_path(prefix: &Path) -> PathBuf {
    prefix.join("lib").join("pkgconfig")
}

/// `pkg-config --cflags --libs doca-comch doca-dpa doca-argp doca-common` against the prefix.
pub fn pkg_config_flags(prefix: &Path) -> Result<Vec<String>> {
    let output = Command::new("pkg-config")
        .args([
            "--cflags",
            "--libs",
            "doca-comch",
            "doca-dpa",
            "doca-argp",
            "doca-common",
        ])
        .env("PKG_CONFIG_PATH", pkg_config_path(prefix))
        .output()
        .map_err(|e| format!("cannot run pkg-config: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "pkg-config does not find the soft SDK in {}: {}",
            prefix.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect())
}

/// The command line that builds C program `source` into `out` against the prefix and the kit's
/// soft app library in `app_dir`.
pub fn cc_command(source: &Path, out: &Path, pkg_flags: &[String], app_dir: &Path) -> Command {
    let mut cmd = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cmd.args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O2"])
        .arg(source)
        .arg("-I")
        .arg(workspace_root().join("shared-abi").join("include"))
        .args(pkg_flags)
        .arg(format!("-L{}", app_dir.display()))
        .arg("-ldpakit_kernels")
        .arg(format!("-Wl,-rpath,{}", app_dir.display()))
        .arg("-o")
        .arg(out);
    cmd
}

/// Builds each C program against the prefix with pkg-config and runs it; each must succeed.
pub fn c_programs(prefix: &Path) -> Result {
    let flags = pkg_config_flags(prefix)?;
    let app_dir = build_dpa::Options::shipped_kernels(true)
        .out_dir
        .join("soft");
    let bin = workspace_root().join("target").join("c");
    std::fs::create_dir_all(&bin).map_err(|e| format!("cannot create {}: {e}", bin.display()))?;
    for (source, args) in C_PROGRAMS {
        let source = workspace_root().join(source);
        let name = source
            .file_stem()
            .expect("a file")
            .to_string_lossy()
            .into_owned();
        let out = bin.join(&name);
        eprintln!(
            "$ cc {} (pkg-config doca-comch doca-dpa doca-argp doca-common)",
            source.display()
        );
        let status = cc_command(&source, &out, &flags, &app_dir)
            .status()
            .map_err(|e| format!("cannot run cc: {e}"))?;
        if !status.success() {
            return Err(format!("building {} failed ({status})", source.display()));
        }
        eprintln!("$ {} {}", out.display(), args.join(" "));
        let status = Command::new(&out)
            .args(*args)
            .status()
            .map_err(|e| format!("cannot run {}: {e}", out.display()))?;
        if !status.success() {
            return Err(format!("{name} failed ({status}); see its output above"));
        }
    }
    Ok(())
}

/// The kit with feature `doca` against the prefix: the integration tests and the quickstart,
/// dynamically linked to the prefix's `libdoca_*.so` and the soft app library.
pub fn doca_feature(prefix: &Path, cargo: impl Fn(&[&str], &[(&str, &str)]) -> Result) -> Result {
    let path = pkg_config_path(prefix);
    let path = path.to_str().ok_or("the prefix path is not UTF-8")?;
    let target = workspace_root().join("target").join("doca");
    let target = target.to_str().ok_or("the target path is not UTF-8")?;
    let env = [("PKG_CONFIG_PATH", path), ("CARGO_TARGET_DIR", target)];
    cargo(
        &["test", "--release", "--features", "doca", "--tests"],
        &env,
    )?;
    cargo(
        &[
            "run",
            "--release",
            "--features",
            "doca",
            "--example",
            "quickstart",
            "--",
            C_ECHO_MESSAGES,
        ],
        &env,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_programs_build_against_the_prefix_and_the_app_library() {
        let cmd = cc_command(
            Path::new("prog.c"),
            Path::new("prog"),
            &[
                "-I/p/include".into(),
                "-L/p/lib".into(),
                "-ldoca_comch".into(),
            ],
            Path::new("/app"),
        );
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = |s: &str| {
            args.iter()
                .position(|a| a == s)
                .unwrap_or_else(|| panic!("{s} in {args:?}"))
        };
        assert!(
            at("prog.c") < at("-ldoca_comch"),
            "sources before libraries"
        );
        assert!(at("-ldoca_comch") < at("-ldpakit_kernels"));
        assert!(args.contains(&"-Wl,-rpath,/app".to_string()));
        assert!(args.contains(&"-Werror".to_string()));
    }
}
