//! Round-trip latency of a 32-byte immediate CPU → DPA kernel → CPU on the soft device, measured
//! in alternating rounds with the physical limit: a raw two-thread ping-pong on one cache line,
//! on the same two cores. Alternating keeps a noisy machine (a VM whose cores slow down and
//! speed up) from favouring either side; every figure is a median over rounds.
//!
//! ```sh
//! cargo run --release --example rtt [-- ROUNDS]
//! ```

use dpakit::abi::{Echo, ImmMessage};
use dpakit::dpa::{Dpa, SchedMode, pin_current_thread};
use dpakit::pe::Pe;
use dpakit::{MsgqPath, kernels, kit_app, open_dpa_dev};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const BATCH: u32 = 1_000;
const BATCHES: usize = 50;

#[repr(align(64))]
struct Line(AtomicU64);

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
                }
                std::hint::spin_loop();
            }
        })
    };
    let mut next = 0u64;
    let result = batches(|| {
        next += 1;
        ping.0.store(next, Ordering::Release);
        while pong.0.load(Ordering::Acquire) != next {
            std::hint::spin_loop();
        }
    });
    stop.store(true, Ordering::Relaxed);
    t.join().expect("pong thread");
    result
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

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), dpakit::Error> {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let responder = 1 % cpus;
    pin_current_thread(0);
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
