//! Ctrl-C ends the kit's waits without a signal handler of the program's own. Its own test
//! binary: the signal is process-wide.

use dpakit::ErrorCode;
use dpakit::pe::Pe;
use std::time::{Duration, Instant};

#[test]
fn a_signal_ends_a_sleeping_wait_once_with_shutdown() {
    let pe = Pe::new().unwrap();
    // Installed by the first wait; installed early here so the signal below cannot come first.
    dpakit::interrupt::catch();
    assert!(!dpakit::interrupt::requested());
    let signaller = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(100));
        // SAFETY: raise has no memory arguments.
        unsafe { libc::raise(libc::SIGINT) };
    });
    let started = Instant::now();
    let e = pe.wait(Duration::from_secs(30)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Shutdown, "{e}");
    assert!(e.to_string().contains("Ctrl-C"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the wait ended at the signal, not at its timeout"
    );
    signaller.join().unwrap();
    assert!(dpakit::interrupt::requested());
    // Reported once: the program's own shutdown (stopping contexts) waits normally.
    assert!(!pe.wait(Duration::from_millis(20)).unwrap());
    pe.progress_until(Duration::from_millis(50), || false)
        .expect_err("times out");
}
