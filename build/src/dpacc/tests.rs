//! The dpacc hand-off's command lines and discovery, with fake DOCA prefixes and a fake dpacc.

use super::*;
use crate::tests::{kit_kernels, scratch_dir as scratch};

/// Writes an executable shell script.
fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A fake DOCA prefix: `tools/dpacc` (when `with_dpacc`) and the device libraries.
fn fake_doca(prefix: &Path, with_dpacc: bool) {
    if with_dpacc {
        script(&prefix.join("tools").join("dpacc"), "exit 0\n");
    }
    let lib = prefix.join("lib").join("x86_64-linux-gnu");
    std::fs::create_dir_all(&lib).unwrap();
    for name in DEVICE_LIBS {
        std::fs::write(lib.join(format!("lib{name}.a")), b"!<arch>\n").unwrap();
    }
}

fn env(doca_home: Option<&Path>, path: Option<&Path>, default_home: &Path) -> Env {
    Env {
        doca_home: doca_home.map(Into::into),
        path: path.map(Into::into),
        default_home: default_home.to_path_buf(),
        arch: "x86_64".into(),
        host_cc: None,
    }
}

#[test]
fn the_command_line_names_inputs_target_app_and_device_libraries() {
    let invocation = Invocation {
        dpacc: "/doca/tools/dpacc".into(),
        inputs: vec!["/o/000-kernels.o".into(), "/o/001-echo.o".into()],
        archive: "/t/dpa/release/libdpakit_kernels.a".into(),
        app_name: "dpakit_kernels".into(),
        output: "/t/dpa/release/dpacc/libdpakit_kernels.a".into(),
        host_cc: "gcc".into(),
        device_lib_dir: "/doca/lib/x86_64-linux-gnu".into(),
    };
    let args: Vec<String> = invocation
        .args()
        .unwrap()
        .into_iter()
        .map(|a| a.into_string().unwrap())
        .collect();
    assert_eq!(
        args,
        [
            "/o/000-kernels.o",
            "/o/001-echo.o",
            "-o",
            "/t/dpa/release/dpacc/libdpakit_kernels.a",
            "-mcpu=nv-dpa-bf3",
            "-hostcc=gcc",
            "--app-name=dpakit_kernels",
            "-device-libs=-L/t/dpa/release -ldpakit_kernels -L/doca/lib/x86_64-linux-gnu \
             -ldoca_dpa_dev -ldoca_dpa_dev_comm",
        ]
    );
    assert_eq!(
        invocation.command().unwrap().get_program(),
        "/doca/tools/dpacc"
    );

    let spaced = Invocation {
        device_lib_dir: "/my doca/lib".into(),
        ..invocation.clone()
    };
    let e = spaced.args().unwrap_err();
    assert!(e.message().contains("/my doca/lib holds whitespace"), "{e}");
    let unnamed = Invocation {
        archive: "/t/kernels.a".into(),
        ..invocation
    };
    let e = unnamed.args().unwrap_err();
    assert!(e.message().contains("not named lib<name>.a"), "{e}");
}

#[test]
fn dpacc_is_found_through_doca_home() {
    let root = scratch("dpacc-doca-home");
    let home = root.join("doca");
    fake_doca(&home, true);
    let found = discover(&env(Some(&home), None, &root.join("none"))).unwrap();
    assert_eq!(
        found,
        Toolchain {
            dpacc: home.join("tools/dpacc"),
            device_lib_dir: home.join("lib/x86_64-linux-gnu"),
        }
    );
}

#[test]
fn dpacc_is_found_on_path() {
    let root = scratch("dpacc-path");
    // A DOCA install's tools directory on PATH: its prefix has the device libraries.
    let prefix = root.join("doca");
    fake_doca(&prefix, true);
    let empty = root.join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let path = std::env::join_paths([empty.clone(), prefix.join("tools")]).unwrap();
    let found = discover(&env(None, Some(Path::new(&path)), &root.join("none"))).unwrap();
    assert_eq!(found.dpacc, prefix.join("tools/dpacc"));
    assert_eq!(found.device_lib_dir, prefix.join("lib/x86_64-linux-gnu"));

    // A dpacc elsewhere: the device libraries come from the default prefix.
    let bin = root.join("bin");
    script(&bin.join("dpacc"), "exit 0\n");
    let default = root.join("default-doca");
    fake_doca(&default, false);
    let found = discover(&env(None, Some(&bin), &default)).unwrap();
    assert_eq!(found.dpacc, bin.join("dpacc"));
    assert_eq!(found.device_lib_dir, default.join("lib/x86_64-linux-gnu"));

    // A file named dpacc that cannot run is not a dpacc.
    let dead = root.join("dead");
    std::fs::create_dir_all(&dead).unwrap();
    std::fs::write(dead.join("dpacc"), b"").unwrap();
    assert!(discover(&env(None, Some(&dead), &root.join("none"))).is_err());
}

#[test]
fn doca_home_wins_over_path() {
    let root = scratch("dpacc-both");
    let home = root.join("doca");
    fake_doca(&home, true);
    let other = root.join("other-doca");
    fake_doca(&other, true);
    let found = discover(&env(
        Some(&home),
        Some(&other.join("tools")),
        &root.join("none"),
    ))
    .unwrap();
    assert_eq!(found.dpacc, home.join("tools/dpacc"));
    assert_eq!(found.device_lib_dir, home.join("lib/x86_64-linux-gnu"));
}

#[test]
fn without_dpacc_the_error_says_what_was_tried_and_what_to_install() {
    let root = scratch("dpacc-none");
    let home = root.join("doca");
    std::fs::create_dir_all(&home).unwrap();
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let e = discover(&env(Some(&home), Some(&bin), &root.join("default"))).unwrap_err();
    assert!(
        e.message().contains(&format!(
            "{} (DOCA_HOME)",
            home.join("tools/dpacc").display()
        )),
        "{e}"
    );
    assert!(
        e.message().contains("`dpacc` on PATH (1 directories)"),
        "{e}"
    );
    assert!(e.message().contains("DPA toolchain"), "{e}");
    assert!(
        !e.message().contains("default DOCA prefix"),
        "DOCA_HOME replaces the default: {e}"
    );

    let e = discover(&env(None, None, &root.join("default"))).unwrap_err();
    assert!(e.message().contains("DOCA_HOME is not set"), "{e}");
    assert!(e.message().contains("PATH is not set"), "{e}");
    assert!(
        e.message().contains(&format!(
            "{} (the default DOCA prefix)",
            root.join("default/tools/dpacc").display()
        )),
        "{e}"
    );

    // dpacc without the device libraries.
    script(&home.join("tools/dpacc"), "exit 0\n");
    let e = discover(&env(Some(&home), None, &root.join("default"))).unwrap_err();
    assert!(
        e.message()
            .contains("libdoca_dpa_dev.a, libdoca_dpa_dev_comm.a"),
        "{e}"
    );
    assert!(
        e.message().contains("lib/x86_64-linux-gnu, lib64 or lib"),
        "{e}"
    );
}

/// The whole hand-off with a fake dpacc that records its arguments and writes its output.
#[test]
fn hand_off_runs_dpacc_on_the_kernel_objects() {
    let root = scratch("dpacc-hand-off");
    let home = root.join("doca");
    fake_doca(&home, false);
    let argv = root.join("argv");
    script(
        &home.join("tools/dpacc"),
        &format!(
            "for a in \"$@\"; do printf '%s\\n' \"$a\"; done > '{}'\n\
             while [ $# -gt 0 ]; do [ \"$1\" = -o ] && printf 'program' > \"$2\"; shift; done\n",
            argv.display()
        ),
    );
    let out_dir = root.join("out");
    let report = kit_kernels(&out_dir).soft_app(false).build().unwrap();
    let toolchain = discover(&env(Some(&home), None, &root.join("none"))).unwrap();
    let program = hand_off(
        &report,
        &toolchain,
        &Env {
            host_cc: Some("my-cc".into()),
            ..env(Some(&home), None, &root.join("none"))
        },
    )
    .unwrap();

    assert_eq!(program, out_dir.join("dpacc/libdpakit_kernels.a"));
    assert_eq!(std::fs::read(&program).unwrap(), b"program");
    let args: Vec<String> = std::fs::read_to_string(&argv)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let inputs: Vec<&String> = args.iter().take_while(|a| *a != "-o").collect();
    // The Rust kernels' object and each C kernel's, each defining kernels, nothing else.
    assert!(inputs.iter().any(|i| i.ends_with("-echo.o")), "{args:?}");
    assert!(
        inputs.iter().any(|i| i.ends_with("-dma_offload.o")),
        "{args:?}"
    );
    assert!(
        inputs.iter().any(|i| i.contains("dpakit_kernels")),
        "{args:?}"
    );
    assert!(
        !inputs.iter().any(|i| i.contains("compiler_builtins")),
        "{args:?}"
    );
    for input in &inputs {
        assert!(Path::new(input).is_file(), "{input}");
    }
    for expected in [
        "-mcpu=nv-dpa-bf3",
        "-hostcc=my-cc",
        "--app-name=dpakit_kernels",
    ] {
        assert!(args.iter().any(|a| a == expected), "{expected} in {args:?}");
    }
    let device_libs = args.last().unwrap();
    assert!(
        device_libs.starts_with(&format!(
            "-device-libs=-L{} -ldpakit_kernels -L{}",
            out_dir.display(),
            home.join("lib/x86_64-linux-gnu").display()
        )),
        "{device_libs}"
    );
    assert!(usage(&program).contains(&format!(
        "DPAKIT_DPA_APP_DIR={}",
        out_dir.join("dpacc").display()
    )));
}
