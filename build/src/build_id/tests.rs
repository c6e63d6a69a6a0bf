use super::*;

fn cargo() -> PathBuf {
    std::env::var_os("CARGO").map_or_else(|| PathBuf::from("cargo"), PathBuf::from)
}

/// A scratch directory of this test's own.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dpakit-build-id-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A workspace with a kernel package `k` depending on a local package `dep` (no registry
/// packages, so its lock file is made offline).
fn workspace(root: &Path) {
    write(
        &root.join("Cargo.toml"),
        "[workspace]\nmembers = [\"k\", \"dep\"]\nresolver = \"3\"\n",
    );
    write(
        &root.join("k/Cargo.toml"),
        "[package]\nname = \"k\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
         [dependencies]\ndep = { path = \"../dep\" }\n",
    );
    write(&root.join("k/src/lib.rs"), "pub fn kernel() {}\n");
    write(
        &root.join("dep/Cargo.toml"),
        "[package]\nname = \"dep\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
    );
    write(&root.join("dep/src/lib.rs"), "pub const X: u32 = 1;\n");
    write(&root.join("k/target/junk"), "build output, not a source\n");
    write(&root.join("k/.hidden"), "not a source\n");
    let status = Command::new(cargo())
        .args(["generate-lockfile", "--offline", "--manifest-path"])
        .arg(root.join("Cargo.toml"))
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}

fn id_of(k: &Path, extra: Option<&str>) -> Computed {
    let mut id = BuildId::new();
    if let Some(file) = extra {
        id = id.file(file);
    }
    id.compute(k, &cargo()).unwrap()
}

#[test]
fn the_id_follows_the_sources_of_the_kernel_and_its_local_dependencies() {
    let root = scratch("sources");
    workspace(&root);
    let k = root.join("k");
    let first = id_of(&k, None);
    assert_eq!(first.note, None);
    assert_eq!(id_of(&k, None), first, "the same sources, the same id");
    for file in [
        "k/src/lib.rs",
        "k/Cargo.toml",
        "dep/src/lib.rs",
        "Cargo.lock",
    ] {
        assert!(first.inputs.contains(&root.join(file)), "{file}: {first:?}");
    }
    assert!(
        !first
            .inputs
            .iter()
            .any(|p| p.ends_with("junk") || p.ends_with(".hidden"))
    );

    // An edit to the kernel, then to a dependency, changes the id; undone, the id is back.
    let lib = root.join("k/src/lib.rs");
    write(&lib, "pub fn kernel() { let _ = 1; }\n");
    let edited = id_of(&k, None).id;
    assert_ne!(edited, first.id);
    write(&lib, "pub fn kernel() {}\n");
    assert_eq!(id_of(&k, None).id, first.id);
    write(&root.join("dep/src/lib.rs"), "pub const X: u32 = 2;\n");
    assert_ne!(id_of(&k, None).id, first.id);
    write(&root.join("dep/src/lib.rs"), "pub const X: u32 = 1;\n");

    // Build outputs and hidden files are not sources.
    write(&root.join("k/target/junk"), "other output\n");
    assert_eq!(id_of(&k, None).id, first.id);

    // A file named from outside the packages counts too.
    write(&root.join("include/kernel.h"), "#define A 1\n");
    let with_header = id_of(&k, Some("../include/kernel.h"));
    assert!(with_header.inputs.contains(&k.join("../include/kernel.h")));
    write(&root.join("include/kernel.h"), "#define A 2\n");
    assert_ne!(id_of(&k, Some("../include/kernel.h")).id, with_header.id);

    // The checkout moved: the same id.
    let moved = scratch("sources-moved");
    std::fs::remove_dir(&moved).unwrap();
    std::fs::rename(&root, &moved).unwrap();
    assert_eq!(id_of(&moved.join("k"), None).id, first.id);
    std::fs::remove_dir_all(&moved).unwrap();
}

#[test]
fn a_published_package_covers_its_own_files_and_asks_no_cargo() {
    let root = scratch("published");
    write(&root.join("Cargo.toml"), "[package]\nname = \"k\"\n");
    write(&root.join("Cargo.toml.orig"), "[package]\nname = \"k\"\n");
    write(&root.join("src/lib.rs"), "pub fn kernel() {}\n");
    let computed = BuildId::new()
        .compute(&root, Path::new("/nonexistent/cargo"))
        .unwrap();
    assert_eq!(computed.note, None);
    assert!(computed.inputs.contains(&root.join("src/lib.rs")));
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn without_cargo_tree_the_id_covers_the_package_and_says_so() {
    let root = scratch("no-tree");
    write(&root.join("Cargo.toml"), "[package]\nname = \"k\"\n");
    write(&root.join("src/lib.rs"), "pub fn kernel() {}\n");
    let computed = BuildId::new()
        .compute(&root, Path::new("/nonexistent/cargo"))
        .unwrap();
    let note = computed.note.unwrap();
    assert!(note.contains("own files only"), "{note}");
    assert!(computed.inputs.contains(&root.join("src/lib.rs")));
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn the_tree_lists_local_packages_by_directory_and_the_rest_by_version() {
    let tree = "k v0.1.0 (/w/k)\ncc v1.2.0\nshlex v1.3.0\ndep v0.1.0 (/w/dep)\n\
                pm v0.2.0 (/w/pm) (proc-macro)\ncc v1.2.0 (*)\n\
                g v0.3.0 (https://example.org/g.git#0123abcd)\n";
    assert_eq!(
        parse_tree(tree),
        [
            Package::Remote("cc v1.2.0".into()),
            Package::Remote("g v0.3.0 (https://example.org/g.git#0123abcd)".into()),
            Package::Remote("shlex v1.3.0".into()),
            Package::local("dep v0.1.0", Path::new("/w/dep")),
            Package::local("k v0.1.0", Path::new("/w/k")),
            Package::local("pm v0.2.0", Path::new("/w/pm")),
        ]
    );
}

#[test]
fn the_kit_kernels_cover_the_device_api_crates() {
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../dpa-kernels");
    let computed = BuildId::new().compute(&kernels, &cargo()).unwrap();
    assert_eq!(computed.note, None);
    for file in [
        "dpa-kernels/src/lib.rs",
        "dpa-kernels/c/echo.c",
        "dpa-dev/src/kernel.rs",
        "shared-abi/src/kernel.rs",
        "doca-headers/include/doca_dpa_dev.h",
    ] {
        assert!(
            computed.inputs.iter().any(|p| p.ends_with(file)),
            "{file} is not an input: {:?}",
            computed.inputs
        );
    }
}
