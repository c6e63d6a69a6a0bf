//! One-way CPU → DPA messages per second with 1, 16, 256 and 1024 credits (messages in flight),
//! beside single-producer channels of the same capacity into a consumer thread on the same
//! other core.
//!
//! Figures `credits_1`, `credits_16`, `credits_256`, `credits_1024` (criterion ids
//! `throughput/<figure>/<subject>`), subjects:
//! - `dpakit`: `MsgqPath` of that depth into the sink kernel (DPA worker busy-polling): the host
//!   sends a batch with `send_msg`, then progresses until the kernel's count has caught up;
//! - `rtrb`: an rtrb ring of that capacity, both sides spinning;
//! - `crossbeam`: `crossbeam_channel::bounded(capacity)`, both sides blocking when they wait.
//!
//! One iteration is a batch of [`BATCH`] 32-byte messages; a sample streams `iters` batches and
//! is timed until the last message was consumed. The batch keeps that final drain (a consumer
//! that parked must be woken, a pipeline must empty) from weighing on the steady rate: with one
//! message per iteration criterion's small samples measured mostly drains. The interleaved
//! `throughput` example (`cargo run --release --example throughput`) is the cross-check.
//! `cargo bench --bench throughput`

#[path = "support/mod.rs"]
mod support;

use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use dpakit::soft::{SchedMode, pin_current_thread};
use std::time::Instant;
use support::cores;
use support::sink::{CrossbeamSink, DpakitSink, OneWay, RtrbSink, message, send_all};

/// Messages per criterion iteration.
const BATCH: u64 = 4096;

type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

fn subject<S: OneWay>(
    group: &mut Group<'_>,
    name: &str,
    credits: usize,
    start: impl FnOnce() -> S,
) {
    let msg = message();
    support::bench_subject(
        group,
        name,
        || {
            let mut s = start();
            // Every slot and credit cycled a few times before Criterion's own warm-up.
            send_all(&mut s, &msg, (4 * credits as u64).max(10_000));
            s
        },
        |s, iters| {
            let start = Instant::now();
            send_all(s, &msg, iters * BATCH);
            start.elapsed()
        },
    );
}

fn credits<const CREDITS: usize>(c: &mut Criterion) {
    let (host, responder) = cores();
    pin_current_thread(host).expect("pin to a core this machine has");
    let mut g = c.benchmark_group(format!("throughput/credits_{CREDITS}"));
    g.throughput(Throughput::Elements(BATCH));
    subject(&mut g, "dpakit", CREDITS, || {
        DpakitSink::start(SchedMode::BusyPoll, responder, CREDITS)
    });
    subject(&mut g, "rtrb", CREDITS, || {
        RtrbSink::start(responder, CREDITS)
    });
    subject(&mut g, "crossbeam", CREDITS, || {
        CrossbeamSink::start(responder, CREDITS)
    });
    g.finish();
}

criterion_group! {
    name = throughput;
    config = support::config();
    targets = credits::<1>, credits::<16>, credits::<256>, credits::<1024>
}
criterion_main!(throughput);
