//! Compiles `doca_dpa_dev_log`, the one device function stable Rust cannot define (it is
//! variadic), against DOCA's device header so its signature is DOCA's. The header is the soft
//! SDK's, in dpakit-emu's `include/` beside this crate: the model defines what the C API's
//! headers declare.
fn main() {
    let manifest = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let include = manifest.join("../emu/include");
    println!("cargo::rerun-if-changed=csrc");
    println!("cargo::rerun-if-changed=../emu/include/doca_dpa_dev.h");
    // Another checkout sharing the target directory has headers of its own (.cargo/config.toml).
    println!("cargo::rerun-if-env-changed=DPAKIT_CHECKOUT");
    cc::Build::new()
        .file("csrc/dev_log.c")
        .include(&include)
        .define("DOCA_ALLOW_EXPERIMENTAL_API", None)
        .warnings(true)
        .extra_warnings(true)
        .compile("dpakit_model_c");
}
