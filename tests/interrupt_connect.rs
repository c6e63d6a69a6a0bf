//! Ctrl-C ends a client's connect to a server that never answers, with SHUTDOWN rather than the
//! timeout. Its own test binary: the signal is process-wide, and a second one ends the process.

use dpakit::ErrorCode;
use dpakit::comch::Client;
use dpakit::dev::Dev;
use dpakit::pe::Pe;
use std::time::{Duration, Instant};

#[test]
fn a_signal_ends_a_connect_with_shutdown() {
    let dir = std::env::temp_dir().join(format!("dpakit-int-connect-{}", std::process::id()));
    // SAFETY: set before anything in this test binary reads it.
    unsafe { std::env::set_var("DPAKIT_SOFT_RUNTIME_DIR", &dir) };
    dpakit::interrupt::catch();
    let pe = Pe::new().unwrap();
    let client = Client::builder(&Dev::open_by_pci("b1:00.0").unwrap(), "nobody-listens", &pe)
        .start()
        .unwrap();
    let signaller = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(100));
        // SAFETY: raise has no memory arguments.
        unsafe { libc::raise(libc::SIGINT) };
    });
    let started = Instant::now();
    let e = client.connect(Duration::from_secs(30)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Shutdown, "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "ended at the signal"
    );
    signaller.join().unwrap();
    client.stop().unwrap();
}
