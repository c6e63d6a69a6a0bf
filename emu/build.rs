//! Compiles the C half of the device API (the variadic `doca_dpa_dev_log`).
fn main() {
    println!("cargo::rerun-if-changed=csrc/dev_log.c");
    cc::Build::new()
        .file("csrc/dev_log.c")
        .warnings(true)
        .compile("dpakit_emu_dev_log");
}
