//! Compiles the C half of the soft device's C API (the variadic function stable Rust cannot
//! define, `doca_dpa_rpc`; DOCA's logging and argument parser, `doca_log*` and `doca_argp_*`;
//! the device's `doca_dpa_dev_log` is the model's; the DOCA 2.5 names of the Comch functions,
//! `doca_cc_*`, wrapping the `doca_comch_*` ones) and publishes where its DOCA headers are, for
//! `dpakit-sys` (`DEP_DPAKIT_SOFT_INCLUDE`).
fn main() {
    let include = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    println!("cargo::rerun-if-changed=csrc");
    println!("cargo::rerun-if-changed=include");
    cc::Build::new()
        .file("csrc/rpc.c")
        .file("csrc/log.c")
        .file("csrc/argp.c")
        .file("csrc/cc.c")
        .include(&include)
        .define("DOCA_ALLOW_EXPERIMENTAL_API", None)
        .warnings(true)
        .extra_warnings(true)
        .compile("dpakit_emu_c");
    println!("cargo::metadata=include={}", include.display());
}
