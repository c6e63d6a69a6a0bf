//! The DPA's edges through the public API, with the kernels of the faulty-kernels fixture: a
//! kernel's panic is the DPA's error with its message and location, natively and from the DPA
//! image. (The fixture's kernels exist only for the soft device's own build: not with feature
//! `doca`.)
#![cfg(not(feature = "doca"))]

use dpakit::dpa::Dpa;
use dpakit::open_dpa_dev;
use dpakit::soft::ExecMode;
use dpakit_fixture_faulty_kernels as faulty;

/// The fixture's DPA image (`cargo xtask build-dpa --faulty-fixture`).
fn fixture_image() -> std::path::PathBuf {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/dpa/fixtures/release/dpakit_fixture_faulty_kernels.elf");
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo xtask build-dpa --faulty-fixture`",
        path.display()
    );
    path
}

/// A DPA context running the fixture's kernels in `mode`.
fn fixture_dpa(mode: ExecMode) -> Dpa {
    let builder = Dpa::builder(&open_dpa_dev().unwrap())
        .app(&faulty::APP)
        .workers(1)
        .exec_mode(mode);
    match mode {
        ExecMode::Native => builder,
        ExecMode::Isa => builder.isa_image(fixture_image()),
    }
    .start()
    .unwrap()
}

#[test]
fn a_kernel_panic_is_the_dpa_error_with_its_message_and_location() {
    for mode in [ExecMode::Native, ExecMode::Isa] {
        let dpa = fixture_dpa(mode);
        assert_eq!(dpa.rpc(&faulty::PANICS_RPC, (7,)).unwrap(), 7);
        assert_eq!(dpa.error(), None);
        let e = dpa.rpc(&faulty::PANICS_RPC, (5,)).unwrap_err();
        let fatal = dpa.error().expect("the context failed");
        let text = fatal.message();
        assert!(
            text.starts_with(
                "kernel `panics_rpc`: panicked at xtask/fixtures/faulty-kernels/src/lib.rs:"
            ) && text.ends_with(": an RPC bug on purpose (5)"),
            "{mode:?}: {text}"
        );
        assert!(e.message().contains(text), "{mode:?}: {e}");
    }
}
