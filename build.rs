//! With features `doca` and `kit-kernels`, links the kit's DPA app library, as a program on a BlueField links the
//! host-side library dpacc made: `DPAKIT_DPA_APP_DIR` names its directory, by default where
//! `cargo xtask build-dpa --release` puts the soft device's (`target/dpa/release/soft`).
fn main() {
    println!("cargo::rerun-if-env-changed=DPAKIT_DPA_APP_DIR");
    if std::env::var_os("CARGO_FEATURE_DOCA").is_none() {
        return;
    }
    // Where DOCA's libraries are, so programs find them at run time too.
    if let Ok(libdir) = std::env::var("DEP_DOCA_SDK_LIBDIR") {
        println!("cargo::rustc-link-arg=-Wl,-rpath,{libdir}");
    }
    // Without the kit's kernels the program links its own app library.
    if std::env::var_os("CARGO_FEATURE_KIT_KERNELS").is_none() {
        return;
    }
    let manifest = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::var_os("DPAKIT_DPA_APP_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| manifest.join("target/dpa/release/soft"));
    let found = ["libdpakit_kernels.so", "libdpakit_kernels.a"]
        .iter()
        .any(|f| dir.join(f).exists());
    if !found {
        println!(
            "cargo::error=feature `doca` links the kit's DPA app library, and {} has none: run \
             `cargo xtask build-dpa --release` (the soft device's app library), or point \
             DPAKIT_DPA_APP_DIR at the directory holding libdpakit_kernels (on a BlueField, the \
             DPA program dpacc made from the kit's device objects; see docs/bluefield.md)",
            dir.display()
        );
        return;
    }
    println!("cargo::rerun-if-changed={}", dir.display());
    println!("cargo::rustc-link-search=native={}", dir.display());
    println!("cargo::rustc-link-lib=dpakit_kernels");
    println!("cargo::rustc-link-arg=-Wl,-rpath,{}", dir.display());
}
