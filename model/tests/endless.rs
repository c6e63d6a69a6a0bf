//! A kernel that never ends cannot be stopped (nor can a hung DPA), but destroying its context
//! does not hang the host: the worker is left running, with a message, after a bound — and
//! leaves once the kernel does. (One test in this binary: it counts the process's threads.)

// The kernel's release flags are the test's, not a protocol of the soft device.
#![allow(clippy::disallowed_types)]

mod common;

use common::start_dpa;
use dpakit_dev::runtime::CONSUMER_ACK;
use dpakit_dev::{thread, thread_kernel};
use dpakit_model::dpa::{App, DpaThread, SchedMode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Lets the endless kernel go once the test is done with it.
static RELEASE: AtomicBool = AtomicBool::new(false);
static STARTED: AtomicBool = AtomicBool::new(false);

thread_kernel! {
    /// Spins until the test releases it.
    pub ENDLESS: fn endless(_arg: u64) {
        STARTED.store(true, Ordering::Release);
        while !RELEASE.load(Ordering::Acquire) {
            core::hint::spin_loop();
        }
        thread::reschedule()
    }
}

/// The process's threads (`/proc/self/task`), but the live view's (`dpakit-stats`), which the
/// first DPA context starts for the life of the process.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() != "dpakit-stats")
        .count()
}

#[test]
fn destroying_a_dpa_whose_kernel_never_ends_returns() {
    let before = threads();
    let app = App::new("endless")
        .thread_kernel(&ENDLESS)
        .rpc_kernel(&CONSUMER_ACK);
    let dpa = start_dpa(app, SchedMode::Sleep);
    let looping = DpaThread::builder(&dpa, &ENDLESS, 0).start().unwrap();
    looping.run().unwrap();
    looping.notify();
    while !STARTED.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    assert!(threads() > before, "the context has a worker");
    // Dropping the thread waits for its activation at most STOP_WAIT (stop says TIME_OUT and
    // abandons the worker), then the context's drop leaves the worker running instead of
    // hanging: both waits are bounded, and the second is short, the stuck worker being known.
    let start = Instant::now();
    drop(looping);
    drop(dpa);
    let waited = start.elapsed();
    assert!(
        waited < Duration::from_secs(15),
        "destroying took {waited:?}: stop's 5 s, then no second wait"
    );
    assert!(threads() > before, "the worker is still in the kernel");
    // Once the kernel lets go, the worker it was left on ends too: nothing stays behind.
    RELEASE.store(true, Ordering::Release);
    let deadline = Instant::now() + Duration::from_secs(10);
    while threads() > before {
        assert!(
            Instant::now() < deadline,
            "the released worker never exited"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
