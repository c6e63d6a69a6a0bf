//! Programs written for DOCA include the SDK's headers and rely on them: `tests/c/headers_all.c`
//! and `tests/c/headers_all.cpp` (in this crate) include every public header of the soft SDK, take the address of
//! the functions real programs call, and use `strlen` without including `<string.h>`. This test
//! compiles them as C (gnu11) and as C++17 (also with the headers inside `extern "C"`), with
//! `-Wall -Wextra -Werror`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn include() -> PathBuf {
    manifest().join("include")
}

fn compile(compiler: &str, std: &str, source: &str, extra: &[&str]) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("headers-all");
    std::fs::create_dir_all(&dir).unwrap();
    let source = manifest().join("tests").join("c").join(source);
    let object = dir.join(format!("{compiler}-{}.o", extra.len()));
    let output = Command::new(compiler)
        .arg(format!("-std={std}"))
        .args(["-Wall", "-Wextra", "-Werror", "-c", "-I"])
        .arg(include())
        .args(extra)
        .arg(&source)
        .arg("-o")
        .arg(&object)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run {compiler} ({e}): install it (apt-get install build-essential)")
        });
    assert!(
        output.status.success(),
        "{} does not compile with {compiler} -std={std} {extra:?}:\n{}",
        source.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn every_header_compiles_as_c() {
    compile("cc", "gnu11", "headers_all.c", &[]);
}

#[test]
fn every_header_compiles_as_cpp() {
    compile("g++", "c++17", "headers_all.cpp", &[]);
}

#[test]
fn every_header_compiles_as_cpp_inside_extern_c() {
    compile(
        "g++",
        "c++17",
        "headers_all.cpp",
        &["-DHEADERS_ALL_IN_EXTERN_C"],
    );
}

/// A header added later is compiled too: headers_all.h includes every one.
#[test]
fn the_test_includes_every_header() {
    let listed = std::fs::read_to_string(manifest().join("tests/c/headers_all.h")).unwrap();
    for entry in std::fs::read_dir(include()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".h") {
            assert!(
                listed.contains(&format!("#include <{name}>")),
                "tests/c/headers_all.h does not include {name}"
            );
        }
    }
}
