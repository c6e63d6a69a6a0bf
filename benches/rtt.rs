//! CPU → DPA → CPU round trip of one message at a time, beside threads on the same two cores
//! doing the same round trip with other means.
//!
//! Figures (criterion ids `rtt/<figure>/<subject>`):
//! - `busy_0B`, `busy_8B`, `busy_16B`, `busy_32B`: the DPA worker busy-polls; subjects
//!   `dpakit`, `raw_ping_pong`, `crossbeam`, `rtrb`, `mpsc`, `unix_socket`;
//! - `sleep_32B`: the DPA worker sleeps until notified and the host blocks in `MsgqPath::recv`;
//!   subjects `dpakit`, `condvar`, `unix_socket`.
//!
//! Time per iteration is one round trip. `cargo bench --bench rtt`

#[path = "support/mod.rs"]
mod support;

use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use dpakit::soft::{SchedMode, pin_current_thread};
use std::hint::black_box;
use std::time::Instant;
use support::{
    CondvarEcho, CrossbeamEcho, DpakitEcho, Echo, MpscEcho, PingPong, RtrbEcho, UnixEcho,
    bench_subject, cores, payload, warm_up,
};

type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// Round trips each subject makes before Criterion's own warm-up.
const WARM_UP: usize = 2_000;

/// `iters` round trips of `msg`, timed together.
fn round_trips<const N: usize>(
    e: &mut impl Echo<N>,
    msg: &[u8; N],
    iters: u64,
) -> std::time::Duration {
    let start = Instant::now();
    for _ in 0..iters {
        black_box(e.echo(black_box(msg)));
    }
    start.elapsed()
}

fn subject<const N: usize, E: Echo<N>>(
    group: &mut Group<'_>,
    name: &str,
    start: impl FnOnce() -> E,
) {
    let msg = payload::<N>();
    bench_subject(
        group,
        name,
        || {
            let mut e = start();
            warm_up::<N>(&mut e, WARM_UP);
            e
        },
        |e, iters| round_trips(e, &msg, iters),
    );
}

/// DPA worker busy-polling, host spinning; the peers echo on the other core.
fn busy<const N: usize>(c: &mut Criterion) {
    let (host, responder) = cores();
    pin_current_thread(host).expect("pin to a core this machine has");
    let mut g = c.benchmark_group(format!("rtt/busy_{N}B"));
    g.throughput(Throughput::Elements(1));
    subject::<N, _>(&mut g, "dpakit", || {
        DpakitEcho::start(SchedMode::BusyPoll, responder)
    });
    subject::<N, _>(&mut g, "dpakit_isa", || {
        DpakitEcho::start_isa(SchedMode::BusyPoll, responder)
    });
    subject::<N, _>(&mut g, "raw_ping_pong", || PingPong::start(responder));
    subject::<N, _>(&mut g, "crossbeam", || CrossbeamEcho::<N>::start(responder));
    subject::<N, _>(&mut g, "rtrb", || RtrbEcho::<N>::start(responder));
    subject::<N, _>(&mut g, "mpsc", || MpscEcho::<N>::start(responder));
    subject::<N, _>(&mut g, "unix_socket", || UnixEcho::<N>::start(responder));
    g.finish();
}

/// DPA worker sleeping until notified, host blocking in `MsgqPath::recv`; beside the blocking
/// peers: a futex wake-up each way.
fn sleep_32b(c: &mut Criterion) {
    const N: usize = 32;
    let (host, responder) = cores();
    pin_current_thread(host).expect("pin to a core this machine has");
    let mut g = c.benchmark_group("rtt/sleep_32B");
    g.throughput(Throughput::Elements(1));
    subject::<N, _>(&mut g, "dpakit", || {
        DpakitEcho::start(SchedMode::Sleep, responder)
    });
    subject::<N, _>(&mut g, "condvar", || CondvarEcho::<N>::start(responder));
    subject::<N, _>(&mut g, "unix_socket", || UnixEcho::<N>::start(responder));
    g.finish();
}

criterion_group! {
    name = rtt;
    config = support::config();
    targets = busy::<0>, busy::<8>, busy::<16>, busy::<32>, sleep_32b
}
criterion_main!(rtt);
