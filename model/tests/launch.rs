//! Kernel launches at their edges: a thread that faults fails the context and leaves the
//! completion event alone; a launch that overstays the kernel max run time fails the context;
//! neither hangs the host. Natively with the fixture's panicking kernel and an endless one of
//! this file, and in ISA mode with the fixture's wild store and endless loop (its image: `cargo
//! xtask test`).

// The kernel's release flag is the test's, not a protocol of the soft device.
#![allow(clippy::disallowed_types)]

mod common;

use common::default_dev;
use dpakit_dev::thread_kernel;
use dpakit_fixture_faulty_kernels as faulty;
use dpakit_model::dpa::launch::CompletionUpdate;
use dpakit_model::dpa::{App, Dpa, ExecMode};
use dpakit_model::error::ErrorCode;
use dpakit_model::sync_event::SyncEventValue;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Lets the endless kernel go once the test is done with it.
static RELEASE: AtomicBool = AtomicBool::new(false);

thread_kernel! {
    /// Spins until the test releases it.
    pub SPIN: fn spin(_arg: u64) {
        while !RELEASE.load(Ordering::Acquire) {
            core::hint::spin_loop();
        }
    }
}

fn app() -> App {
    App::new("dpakit_fixture_faulty_kernels")
        .thread_kernel(&faulty::WILD_STORE)
        .thread_kernel(&faulty::PANICS)
        .thread_kernel(&faulty::ENDLESS)
        .thread_kernel(&SPIN)
}

/// Waits up to 10 s for the context to fail; its error.
fn wait_fault(dpa: &Dpa) -> dpakit_model::Error {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Err(e) = dpa.check() {
            return e;
        }
        assert!(Instant::now() < deadline, "the context did not fail");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_faulting_thread_fails_the_context_and_leaves_the_completion() {
    let dpa = Dpa::builder(&default_dev()).app(app()).start().unwrap();
    let done = Arc::new(SyncEventValue::new());
    dpa.kernel_launch(
        faulty::PANICS.func() as usize,
        &[5],
        3,
        None,
        Some((done.clone(), 1, CompletionUpdate::Set)),
    )
    .unwrap();
    let e = wait_fault(&dpa);
    assert!(e.to_string().contains("a kernel bug on purpose (5)"), "{e}");
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(done.get(), 0, "a failed launch completes nothing");
    // A failed context launches nothing more.
    let again = dpa
        .kernel_launch(faulty::PANICS.func() as usize, &[5], 1, None, None)
        .unwrap_err();
    assert!(
        again.to_string().contains("a kernel bug on purpose"),
        "{again}"
    );
}

#[test]
fn a_launch_past_the_kernel_max_run_time_fails_the_context() {
    let dpa = Dpa::builder(&default_dev())
        .app(app())
        .kernel_max_run_time(Duration::from_millis(200))
        .start()
        .unwrap();
    assert_eq!(dpa.kernel_max_run_time(), 1, "seconds, rounded up");
    let done = Arc::new(SyncEventValue::new());
    dpa.kernel_launch(
        SPIN.func() as usize,
        &[0],
        2,
        None,
        Some((done.clone(), 1, CompletionUpdate::Add)),
    )
    .unwrap();
    let e = wait_fault(&dpa);
    assert_eq!(e.code(), ErrorCode::BadState, "{e}");
    assert!(e.to_string().contains("kernel max run time"), "{e}");
    assert!(e.to_string().contains("`spin`"), "{e}");
    // Let the spinning threads go, then the context: nothing hangs.
    RELEASE.store(true, Ordering::Release);
    let start = Instant::now();
    drop(dpa);
    assert!(start.elapsed() < Duration::from_secs(6));
    assert_eq!(done.get(), 0);
}

#[test]
fn isa_a_wild_store_in_a_launched_thread_fails_the_context() {
    let image = common::image_file(dpakit_fixture_faulty_kernels::IMAGE);
    let dpa = Dpa::builder(&default_dev())
        .app(app())
        .exec_mode(ExecMode::Isa)
        .isa_image(image)
        .start()
        .unwrap();
    let done = Arc::new(SyncEventValue::new());
    dpa.kernel_launch(
        faulty::WILD_STORE.func() as usize,
        &[0x10],
        4,
        None,
        Some((done.clone(), 1, CompletionUpdate::Set)),
    )
    .unwrap();
    let e = wait_fault(&dpa);
    assert!(e.to_string().contains("wild_store"), "{e}");
    assert_eq!(done.get(), 0);
}

#[test]
fn isa_an_endless_launched_thread_meets_the_instruction_budget() {
    let image = common::image_file(dpakit_fixture_faulty_kernels::IMAGE);
    let dpa = Dpa::builder(&default_dev())
        .app(app())
        .exec_mode(ExecMode::Isa)
        .isa_image(image)
        .isa_budget(100_000)
        .start()
        .unwrap();
    let done = Arc::new(SyncEventValue::new());
    dpa.kernel_launch(
        faulty::ENDLESS.func() as usize,
        &[0],
        2,
        None,
        Some((done.clone(), 1, CompletionUpdate::Set)),
    )
    .unwrap();
    let e = wait_fault(&dpa);
    assert!(e.to_string().contains("the ISA budget"), "{e}");
    assert!(e.to_string().contains("endless"), "{e}");
    let start = Instant::now();
    drop(dpa);
    assert!(start.elapsed() < Duration::from_secs(6));
    assert_eq!(done.get(), 0);
}
