//! CPU → DPA → CPU round trip of a 32-byte immediate on the soft device (busy-poll worker),
//! beside the limit: a raw two-thread ping-pong on one cache line, on the same two cores.
//!
//! `cargo bench --bench rtt`

#[path = "support/mod.rs"]
mod support;

use criterion::{Criterion, criterion_group, criterion_main};
use dpakit::abi::{Echo, ImmMessage};
use dpakit::dpa::{Dpa, SchedMode, pin_current_thread};
use dpakit::pe::Pe;
use dpakit::{MsgqPath, kernels, kit_app, open_dpa_dev};
use std::time::{Duration, Instant};
use support::{PingPong, cores};

fn raw_ping_pong(c: &mut Criterion) {
    let (host, responder) = cores();
    pin_current_thread(host);
    let mut pp = PingPong::start(responder);
    c.bench_function("rtt/raw_ping_pong", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                pp.round_trip();
            }
            start.elapsed()
        })
    });
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
