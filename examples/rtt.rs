//! Round-trip latency of a 32-byte immediate CPU → DPA kernel → CPU on the soft device, measured
//! in alternating rounds with the physical limit: a raw two-thread ping-pong on one cache line,
//! on the same two cores. Alternating keeps a noisy machine (a VM whose cores slow down and
//! speed up) from favouring either side; every figure is a median over rounds.
//!
//! ```sh
//! cargo run --release --example rtt [-- ROUNDS]
//! ```

#[path = "../benches/support/mod.rs"]
mod support;

use dpakit::abi::{Echo, ImmMessage};
use dpakit::dpa::Dpa;
use dpakit::pe::Pe;
use dpakit::soft::SoftSettings;
use dpakit::soft::{SchedMode, pin_current_thread};
use dpakit::{MsgqPath, kernels, kit_app, open_dpa_dev};
use std::time::{Duration, Instant};
use support::{PingPong, cores, median};

const BATCH: u32 = 1_000;
const BATCHES: usize = 50;

/// Mean round trip of each batch, in ns.
type Batches = Vec<f64>;

fn batches(mut round_trip: impl FnMut()) -> Batches {
    for _ in 0..BATCH {
        round_trip(); // warm-up
    }
    (0..BATCHES)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..BATCH {
                round_trip();
            }
            t.elapsed().as_nanos() as f64 / f64::from(BATCH)
        })
        .collect()
}

fn raw_ping_pong(responder: usize) -> Batches {
    let mut pp = PingPong::start(responder);
    batches(|| pp.round_trip())
}

fn dpakit_echo(responder: usize) -> Result<Batches, dpakit::Error> {
    let dpa = Dpa::builder(&open_dpa_dev()?)
        .app(kit_app())
        .sched_mode(SchedMode::BusyPoll)
        .workers(1)
        .pin_workers(vec![responder])
        .start()?;
    let pe = Pe::new()?;
    let path = MsgqPath::builder(&dpa, &pe, &kernels::ECHO)
        .depth(64)
        .start()?;
    let msg = ImmMessage::new(
        0,
        &Echo {
            token: 1,
            timestamp_ns: 2,
            tag: 3,
        },
    );
    let mut failure = None;
    let result = batches(|| {
        if let Err(e) = path.round_trip(&msg, Duration::from_secs(5)) {
            failure.get_or_insert(e);
        }
    });
    dpa.check()?;
    failure.map_or(Ok(result), Err)
}

fn main() -> Result<(), dpakit::Error> {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (host, responder) = cores();
    pin_current_thread(host)?;
    let (mut raw, mut ours, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    println!("round  raw ping-pong  dpakit echo  ratio   (median of {BATCHES} batches of {BATCH})");
    for round in 1..=rounds {
        let r = median(raw_ping_pong(responder));
        let d = median(dpakit_echo(responder)?);
        println!("{round:>5}  {r:>10.1} ns  {d:>8.1} ns  {:>5.2}", d / r);
        raw.push(r);
        ours.push(d);
        ratios.push(d / r);
    }
    println!(
        "median: raw ping-pong {:.1} ns, dpakit echo {:.1} ns, ratio {:.2} (cores 0 and {responder} of {cpus})",
        median(raw),
        median(ours),
        median(ratios)
    );
    Ok(())
}
