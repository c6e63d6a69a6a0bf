//! A kernel that never ends cannot be stopped (nor can a hung DPA), but destroying its context
//! does not hang the host: the worker is left running, with a message, after a bound.

// The kernel's release flags are the test's, not a protocol of the soft device.
#![allow(clippy::disallowed_types)]

mod common;

use common::start_dpa;
use dpakit_dev::runtime::CONSUMER_ACK;
use dpakit_dev::{thread, thread_kernel};
use dpakit_emu::dpa::{App, DpaThread, SchedMode};
use std::sync::atomic::{AtomicBool, Ordering};

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

#[test]
fn destroying_a_dpa_whose_kernel_never_ends_returns() {
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
    // Dropping the thread waits for its activation a while (stop says TIME_OUT), then the
    // context's drop leaves the worker running instead of hanging.
    drop(looping);
    drop(dpa);
    RELEASE.store(true, Ordering::Release);
}
