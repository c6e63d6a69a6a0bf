//! ISA mode runs an image only if it was built from the sources of the app's kernels: the app
//! descriptor `dpa_app!` makes and the image carry the build id of the kernel crate's sources,
//! and a differing id (a kernel edited, the host side rebuilt, `build-dpa` forgotten) is refused
//! with the command that rebuilds the image.

mod common;

use common::{default_dev, echo_app};
use dpakit_model::dpa::{App, Dpa, ExecMode, SchedMode};
use dpakit_model::error::ErrorCode;

/// The kit's DPA image.
fn image() -> std::path::PathBuf {
    common::kit_image()
}

fn start(app: App, image: std::path::PathBuf) -> dpakit_model::Result<Dpa> {
    Dpa::builder(&default_dev())
        .app(app)
        .sched_mode(SchedMode::Deterministic { seed: 1 })
        .exec_mode(ExecMode::Isa)
        .isa_image(image)
        .start()
}

/// The app the kit's `dpa_app!` declares, read from its symbol as `doca_dpa_set_app` reads it.
fn kit_app() -> App {
    App::from_symbol(dpakit_kernels::APP.raw()).unwrap()
}

#[test]
fn the_app_and_its_image_carry_one_build_id() {
    let app = kit_app();
    assert!(app.build_id().is_some(), "dpa-kernels sets a build id");
    // The image `build-dpa` made from these sources.
    start(app, image()).unwrap();
}

#[test]
fn an_image_of_other_sources_is_refused_with_the_command_that_rebuilds_it() {
    let id = kit_app().build_id().unwrap();
    let e = start(echo_app().with_build_id(id ^ 1), image()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue, "{e}");
    let text = e.message();
    for part in [
        "is stale",
        "app `dpakit_kernels`",
        &format!("{:016x} in the app", id ^ 1),
        &format!("{id:016x} in the image"),
        // The image the kernels' build script built: rebuilt by building the program.
        "Rebuild the program with `cargo build`",
    ] {
        assert!(text.contains(part), "`{part}` missing: {text}");
    }
    // An app without a build id (one described in Rust, or an older descriptor) is not checked.
    start(echo_app(), image()).unwrap();
}

#[test]
fn an_image_of_another_app_is_refused() {
    let faulty = common::image_file(dpakit_fixture_faulty_kernels::IMAGE);
    let e = start(echo_app().with_build_id(1), faulty).unwrap_err();
    let text = e.message();
    assert!(
        text.contains("records no build id of app `dpakit_kernels`")
            && text.contains("`dpakit_fixture_faulty_kernels`"),
        "{text}"
    );
}
