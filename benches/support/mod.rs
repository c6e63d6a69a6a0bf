//! Pieces shared by the benchmarks and the measuring examples (included with `#[path]`).
#![allow(dead_code)]

use dpakit::dpa::pin_current_thread;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

/// The host side runs on the first core, the responder (DPA worker or pong thread) on the
/// second. Counted once, before anything is pinned (pinning shrinks what
/// `available_parallelism` sees).
pub fn cores() -> (usize, usize) {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let n = *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    (0, 1 % n)
}

#[repr(align(64))]
struct Line(AtomicU64);

/// The physical limit of a round trip between two cores: the initiator writes a value into one
/// cache line, a responder thread on the other core sees it and writes it back into another.
pub struct PingPong {
    ping: Arc<Line>,
    pong: Arc<Line>,
    stop: Arc<AtomicBool>,
    next: u64,
    responder: Option<JoinHandle<()>>,
}

impl PingPong {
    /// Starts the responder pinned to `core`.
    pub fn start(core: usize) -> Self {
        let ping = Arc::new(Line(AtomicU64::new(0)));
        let pong = Arc::new(Line(AtomicU64::new(0)));
        let stop = Arc::new(AtomicBool::new(false));
        let responder = {
            let (ping, pong, stop) = (ping.clone(), pong.clone(), stop.clone());
            std::thread::spawn(move || {
                pin_current_thread(core);
                let mut seen = 0;
                while !stop.load(Ordering::Relaxed) {
                    let v = ping.0.load(Ordering::Acquire);
                    if v != seen {
                        seen = v;
                        pong.0.store(v, Ordering::Release);
                    }
                    std::hint::spin_loop();
                }
            })
        };
        Self {
            ping,
            pong,
            stop,
            next: 0,
            responder: Some(responder),
        }
    }

    /// One round trip.
    #[inline]
    pub fn round_trip(&mut self) {
        self.next += 1;
        self.ping.0.store(self.next, Ordering::Release);
        while self.pong.0.load(Ordering::Acquire) != self.next {
            std::hint::spin_loop();
        }
    }
}

impl Drop for PingPong {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.responder.take() {
            let _ = t.join();
        }
    }
}
