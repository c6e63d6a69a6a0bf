//! One-way CPU → DPA throughput of 32-byte immediates on the soft device beside rtrb and
//! crossbeam, measured in alternating rounds on the same two cores: each round starts every
//! subject afresh and streams the same number of messages through it, so a VM whose
//! core-to-core latency drifts for minutes at a time weighs on all subjects alike. Every figure
//! is a median over rounds; the ratios are taken round by round.
//!
//! ```sh
//! cargo run --release --example throughput [-- ROUNDS [CREDITS]]
//! ```

#[path = "../benches/support/mod.rs"]
mod support;

use dpakit::soft::{SchedMode, pin_current_thread};
use std::time::Instant;
use support::sink::{CrossbeamSink, DpakitSink, OneWay, RtrbSink, message, send_all};
use support::{cores, median};

/// Messages per round and subject, after as many for warm-up.
const MESSAGES: u64 = 200_000;

/// Messages per second through `s`.
fn rate(mut s: impl OneWay) -> f64 {
    let msg = message();
    send_all(&mut s, &msg, MESSAGES);
    let t = Instant::now();
    send_all(&mut s, &msg, MESSAGES);
    MESSAGES as f64 / t.elapsed().as_secs_f64()
}

fn main() -> Result<(), dpakit::Error> {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>().ok());
    let rounds = args.next().flatten().unwrap_or(5).max(1);
    let credits = args.next().flatten().unwrap_or(1024).max(1);
    let (host, responder) = cores();
    pin_current_thread(host)?;
    println!(
        "round  dpakit        rtrb          crossbeam     dpakit/rtrb  dpakit/crossbeam   \
         ({credits} credits, {MESSAGES} messages per subject and round, M msg/s)"
    );
    let mut figures: [Vec<f64>; 5] = Default::default();
    for round in 1..=rounds {
        let d = rate(DpakitSink::start(SchedMode::BusyPoll, responder, credits));
        let r = rate(RtrbSink::start(responder, credits));
        let c = rate(CrossbeamSink::start(responder, credits));
        println!(
            "{round:>5}  {:>8.2}      {:>8.2}      {:>8.2}      {:>9.2}    {:>9.2}",
            d / 1e6,
            r / 1e6,
            c / 1e6,
            d / r,
            d / c
        );
        for (v, x) in figures.iter_mut().zip([d, r, c, d / r, d / c]) {
            v.push(x);
        }
    }
    let [d, r, c, dr, dc] = figures.map(median);
    println!(
        "median: dpakit {:.2} M msg/s, rtrb {:.2}, crossbeam {:.2}; dpakit/rtrb {dr:.2}, \
         dpakit/crossbeam {dc:.2}",
        d / 1e6,
        r / 1e6,
        c / 1e6
    );
    Ok(())
}
