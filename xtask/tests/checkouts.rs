//! Two checkouts of the kit sharing one target directory, and a checkout that moved, each bind
//! their own DOCA headers.
//!
//! Cargo keeps build-script outputs across both (its fingerprints hold relative paths and
//! modification times, not absolute paths or contents), so a build script that published an
//! absolute path into one checkout would hand it to the other: bindgen then read the other
//! checkout's headers, or failed with "doca_error.h not found" once that checkout was gone.
//!
//! The checkouts are copies of this one (its files, not `target/`) in a scratch directory, and
//! only `dpakit-sys` is checked: the build scripts that publish and read the headers run, nothing
//! is compiled to machine code. The shared target directory stays under `target/` between runs
//! (about 40 s the first time, seconds after).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A line only the second checkout's header has.
const MARK: &str = "#define DPAKIT_SOFT_CHECKOUT_MARK 2u";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives inside the workspace")
        .to_path_buf()
}

/// Copies the checkout at `from` to `to`: every file but build outputs and version control,
/// with its modification time.
fn copy_checkout(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            if name == "target" || (name.starts_with('.') && name != ".cargo") {
                continue;
            }
            copy_checkout(&entry.path(), &to.join(&*name));
        } else if kind.is_file() {
            let dest = to.join(&*name);
            std::fs::copy(entry.path(), &dest).unwrap();
            let modified = entry.metadata().unwrap().modified().unwrap();
            set_modified(&dest, modified);
        }
    }
}

fn set_modified(path: &Path, when: std::time::SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

/// What `cargo check -p dpakit-sys` in `checkout` reported of the two build scripts: each
/// one's `OUT_DIR`.
#[derive(Debug)]
struct Built {
    headers_out: PathBuf,
    sys_out: PathBuf,
}

fn check_sys(checkout: &Path, target: &Path) -> Built {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args(["check", "-p", "dpakit-sys", "--message-format=json"])
        .current_dir(checkout);
    dpakit_build::cargo::scrub_environment(&mut cmd);
    cmd.env("CARGO_TARGET_DIR", target);
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "cargo check -p dpakit-sys failed in {}:\n{}\n{}",
        checkout.display(),
        String::from_utf8_lossy(&out.stderr),
        stdout
            .lines()
            .filter(|l| l.contains("\"compiler-message\"") || l.contains("error"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let out_dir = |package: &str| {
        stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|m| {
                m["reason"] == "build-script-executed"
                    && m["package_id"]
                        .as_str()
                        .is_some_and(|id| id.contains(&format!("{package}@")))
            })
            .and_then(|m| m["out_dir"].as_str().map(PathBuf::from))
            .unwrap_or_else(|| panic!("no build-script-executed message of {package}"))
    };
    Built {
        headers_out: out_dir("dpakit-doca-headers"),
        sys_out: out_dir("dpakit-sys"),
    }
}

/// Whether the headers dpakit-doca-headers published, and the bindings dpakit-sys generated from them
/// (when bindgen ran: without libclang it uses the checked-in bindings), carry [`MARK`].
fn marked(built: &Built) -> (bool, Option<bool>) {
    let header = std::fs::read_to_string(built.headers_out.join("include/dpakit_soft.h"))
        .unwrap_or_default();
    let output = std::fs::read_to_string(built.sys_out.with_file_name("output")).unwrap();
    let bindings = (!output.contains("libclang not found")).then(|| {
        std::fs::read_to_string(built.sys_out.join("bindings.rs"))
            .unwrap()
            .contains("DPAKIT_SOFT_CHECKOUT_MARK")
    });
    (header.contains(MARK), bindings)
}

#[test]
fn each_checkout_binds_its_own_headers() {
    let root = workspace_root();
    let target = root.join("target/xtask-tests/checkouts-target");
    let scratch = std::env::temp_dir().join(format!("dpakit-checkouts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let (a, b, moved) = (scratch.join("a"), scratch.join("b"), scratch.join("c"));

    copy_checkout(&root, &a);
    let built = check_sys(&a, &target);
    assert!(!marked(&built).0, "{built:?}");

    // A second checkout, its files as old as the first's (a worktree made before the first
    // built, or a copy keeping times): its own header differs without being newer.
    copy_checkout(&a, &b);
    let header = b.join("doca-headers/include/dpakit_soft.h");
    let modified = std::fs::metadata(&header).unwrap().modified().unwrap();
    let text = std::fs::read_to_string(&header).unwrap();
    std::fs::write(&header, format!("{text}\n{MARK}\n")).unwrap();
    set_modified(&header, modified);
    let built = check_sys(&b, &target);
    let (header_marked, bindings_marked) = marked(&built);
    assert!(
        header_marked && bindings_marked != Some(false),
        "the second checkout was built against the first one's headers: {built:?}"
    );

    // The first checkout is gone and the second moves: everything is reused, and a build
    // script that runs again (here dpakit-sys's, its source touched) still finds the headers.
    std::fs::remove_dir_all(&a).unwrap();
    std::fs::rename(&b, &moved).unwrap();
    set_modified(&moved.join("sys/build.rs"), std::time::SystemTime::now());
    let built = check_sys(&moved, &target);
    let (header_marked, bindings_marked) = marked(&built);
    assert!(
        header_marked && bindings_marked != Some(false),
        "the moved checkout did not bind its headers: {built:?}"
    );
    std::fs::remove_dir_all(&scratch).unwrap();
}
