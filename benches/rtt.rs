//! CPU → DPA → CPU round trip of a 32-byte immediate on the soft device (busy-poll worker),
//! beside the limit: a raw two-thread ping-pong on one cache line, on the same two cores.
//!
//! `cargo bench --bench rtt`

use criterion::{Criterion, criterion_group, criterion_main};
use dpakit::abi::{Echo, ImmMessage};
use dpakit::dpa::{Dpa, SchedMode, pin_current_thread};
use dpakit::pe::Pe;
use dpakit::{MsgqPath, kernels, kit_app, open_dpa_dev};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The host side runs on this core, the responder (DPA worker or pong thread) on the other.
/// Counted once, before anything is pinned (pinning shrinks what `available_parallelism` sees).
fn cores() -> (usize, usize) {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let n = *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    (0, 1 % n)
}

#[repr(align(64))]
struct Line(AtomicU64);

/// The physical limit of a round trip between two cores: the initiator writes a value into a
/// cache line, the responder sees it and writes the answer into another, and back.
fn raw_ping_pong(c: &mut Criterion) {
    let (host, responder) = cores();
    let ping = Arc::new(Line(AtomicU64::new(0)));
    let pong = Arc::new(Line(AtomicU64::new(0)));
    let stop = Arc::new(AtomicBool::new(false));
    let t = {
        let (ping, pong, stop) = (ping.clone(), pong.clone(), stop.clone());
        std::thread::spawn(move || {
            pin_current_thread(responder);
            let mut seen = 0;
            while !stop.load(Ordering::Relaxed) {
                let v = ping.0.load(Ordering::Acquire);
                if v != seen {
                    seen = v;
                    pong.0.store(v, Ordering::Release);
                } else {
                    std::hint::spin_loop();
                }
            }
        })
    };
    pin_current_thread(host);
    let mut next = 0u64;
    c.bench_function("rtt/raw_ping_pong", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                next += 1;
                ping.0.store(next, Ordering::Release);
                while pong.0.load(Ordering::Acquire) != next {
                    std::hint::spin_loop();
                }
            }
            start.elapsed()
        })
    });
    stop.store(true, Ordering::Relaxed);
    t.join().unwrap();
}

/// A 32-byte immediate through CPU producer → DPA consumer → echo kernel → DPA producer → CPU
/// consumer, one at a time.
fn dpakit_echo(c: &mut Criterion) {
    let (host, responder) = cores();
    pin_current_thread(host);
    let dpa = Dpa::builder(&open_dpa_dev().unwrap())
        .app(kit_app())
        .sched_mode(SchedMode::BusyPoll)
        .workers(1)
        .pin_workers(vec![responder])
        .start()
        .unwrap();
    let pe = Pe::new().unwrap();
    let path = MsgqPath::builder(&dpa, &pe, &kernels::ECHO)
        .depth(64)
        .start()
        .unwrap();
    let msg = ImmMessage::new(
        0,
        &Echo {
            token: 1,
            timestamp_ns: 2,
            tag: 3,
        },
    );
    let timeout = Duration::from_secs(5);
    c.bench_function("rtt/dpakit_echo_32B", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                let reply = path.round_trip(&msg, timeout).unwrap();
                debug_assert_eq!(reply.msg, msg);
            }
            start.elapsed()
        })
    });
    dpa.check().unwrap();
}

criterion_group! {
    name = rtt;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = raw_ping_pong, dpakit_echo
}
criterion_main!(rtt);
