//! Compiles `doca_dpa_dev_log`, the one device function stable Rust cannot define (it is
//! variadic), against DOCA's device header so its signature is DOCA's. The header comes from
//! `dpakit-doca-headers` (`DEP_DPAKIT_DOCA_HEADERS_INCLUDE`): the model defines what the C API's
//! headers declare.
use std::path::PathBuf;

fn main() {
    println!("cargo::rerun-if-changed=csrc");
    // Another checkout sharing the target directory has sources of its own (.cargo/config.toml).
    println!("cargo::rerun-if-env-changed=DPAKIT_CHECKOUT");
    let Some(include) = std::env::var_os("DEP_DPAKIT_DOCA_HEADERS_INCLUDE").map(PathBuf::from)
    else {
        println!("cargo::error=dpakit-doca-headers did not publish its include directory");
        return;
    };
    // The header includes others: the whole directory is the input.
    println!("cargo::rerun-if-changed={}", include.display());
    cc::Build::new()
        .file("csrc/dev_log.c")
        .include(&include)
        .define("DOCA_ALLOW_EXPERIMENTAL_API", None)
        .warnings(true)
        .extra_warnings(true)
        .compile("dpakit_model_c");
}
