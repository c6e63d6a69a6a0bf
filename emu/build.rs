//! Compiles the C half of the soft device's C API (the variadic function stable Rust cannot
//! define, `doca_dpa_rpc`; DOCA's logging and argument parser, `doca_log*` and `doca_argp_*`;
//! the device's `doca_dpa_dev_log` is the model's; the DOCA 2.5 names of the Comch functions,
//! `doca_cc_*`, wrapping the `doca_comch_*` ones) against DOCA's headers, which
//! `dpakit-doca-headers` publishes (`DEP_DPAKIT_DOCA_HEADERS_INCLUDE`).
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
    // The published copy is refreshed whenever a header changes; its path never does.
    println!("cargo::rerun-if-changed={}", include.display());
    // For the tests that read a header at compile time (`include_str!`).
    println!("cargo::rustc-env=DPAKIT_DOCA_INCLUDE={}", include.display());
    cc::Build::new()
        .file("csrc/rpc.c")
        .file("csrc/launch.c")
        .file("csrc/log.c")
        .file("csrc/argp.c")
        .file("csrc/cc.c")
        .include(&include)
        .define("DOCA_ALLOW_EXPERIMENTAL_API", None)
        .warnings(true)
        .extra_warnings(true)
        .compile("dpakit_emu_c");
}
