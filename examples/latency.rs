//! The distribution of single round-trip latencies of a 32-byte message, CPU → DPA echo kernel
//! → CPU on the soft device (busy-polling worker; the kernel native, and from the DPA image in
//! ISA mode), beside the same round trip between two
//! threads on the same two cores by other means: a raw cache-line ping-pong, crossbeam
//! channels, rtrb rings, std mpsc channels and a Unix socket pair.
//!
//! Every round trip is timed on its own (two `Instant` reads around it) into an HDR histogram
//! per subject (1 ns to 60 s, 3 significant digits). The subjects take turns: each round starts
//! every subject afresh (its responder thread or DPA worker pinned to the second core, the
//! host on the first), warms it up and records it for a fixed time, then stops it, so a VM
//! whose speed drifts treats them all alike. The first subject rotates from round to round.
//!
//! ```sh
//! cargo run --release --example latency [-- [--quick] [--out PATH]]
//! ```
//!
//! Writes `{"figure": "rtt_busy_32B", "unit": "ns", "subjects": [{"name", "p50", "p90", "p99",
//! "p999", "samples"}, …]}` to PATH (default `target/bench/latency.json`, under
//! `$CARGO_TARGET_DIR` when it is set) and prints the same as a table. `--quick` takes about
//! 15 s.

#[path = "../benches/support/mod.rs"]
mod support;

use dpakit::soft::{SchedMode, pin_current_thread};
use hdrhistogram::Histogram;
use std::hint::black_box;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use support::{
    CrossbeamEcho, DpakitEcho, Echo, MpscEcho, PingPong, RtrbEcho, UnixEcho, cores, payload,
    warm_up,
};

const N: usize = 32;

/// Starts a subject with its responder on the given core.
type Start = fn(usize) -> Box<dyn Echo<N>>;

/// The subjects, in the report's order.
const SUBJECTS: [(&str, Start); 7] = [
    ("dpakit", |core| {
        Box::new(DpakitEcho::start(SchedMode::BusyPoll, core))
    }),
    ("dpakit_isa", |core| {
        Box::new(DpakitEcho::start_isa(SchedMode::BusyPoll, core))
    }),
    ("raw_ping_pong", |core| Box::new(PingPong::start(core))),
    ("crossbeam", |core| {
        Box::new(CrossbeamEcho::<N>::start(core))
    }),
    ("rtrb", |core| Box::new(RtrbEcho::<N>::start(core))),
    ("mpsc", |core| Box::new(MpscEcho::<N>::start(core))),
    ("unix_socket", |core| Box::new(UnixEcho::<N>::start(core))),
];

struct Plan {
    rounds: usize,
    /// Recording time of one subject in one round.
    per_round: Duration,
    /// Round trips before recording, in each round.
    warm_up: usize,
}

struct Args {
    quick: bool,
    out: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        quick: false,
        out: default_out(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" => args.quick = true,
            "--out" => {
                args.out = it.next().ok_or("--out needs a path")?.into();
            }
            "-h" | "--help" => {
                return Err("usage: latency [--quick] [--out PATH]".into());
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?}; usage: latency [--quick] [--out PATH]"
                ));
            }
        }
    }
    Ok(args)
}

/// `target/bench/latency.json` of this workspace (or of `$CARGO_TARGET_DIR`).
fn default_out() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("bench").join("latency.json")
}

/// One round of one subject: start, warm up, record each round trip for `per_round`, stop.
fn record(start: Start, responder: usize, plan: &Plan, hist: &mut Histogram<u64>) {
    let mut subject = start(responder);
    warm_up(subject.as_mut(), plan.warm_up);
    let msg = payload::<N>();
    let began = Instant::now();
    loop {
        let t0 = Instant::now();
        black_box(subject.echo(black_box(&msg)));
        let t1 = Instant::now();
        hist.saturating_record((t1 - t0).as_nanos() as u64);
        if t1 - began >= plan.per_round {
            break;
        }
    }
}

struct Row {
    name: &'static str,
    p50: f64,
    p90: f64,
    p99: f64,
    p999: f64,
    samples: u64,
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let plan = if args.quick {
        Plan {
            rounds: 4,
            per_round: Duration::from_millis(500),
            warm_up: 1_000,
        }
    } else {
        Plan {
            rounds: 10,
            per_round: Duration::from_millis(1500),
            warm_up: 5_000,
        }
    };
    let (host, responder) = cores();
    pin_current_thread(host).expect("pin to a core this machine has");
    let mut hists: Vec<Histogram<u64>> = SUBJECTS
        .iter()
        .map(|_| Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("histogram bounds"))
        .collect();
    let started = Instant::now();
    for round in 0..plan.rounds {
        for k in 0..SUBJECTS.len() {
            let i = (round + k) % SUBJECTS.len();
            record(SUBJECTS[i].1, responder, &plan, &mut hists[i]);
        }
    }
    let rows: Vec<Row> = SUBJECTS
        .iter()
        .zip(&hists)
        .map(|(&(name, _), h)| Row {
            name,
            p50: h.value_at_quantile(0.50) as f64,
            p90: h.value_at_quantile(0.90) as f64,
            p99: h.value_at_quantile(0.99) as f64,
            p999: h.value_at_quantile(0.999) as f64,
            samples: h.len(),
        })
        .collect();

    println!(
        "rtt_busy_32B: {} rounds of {:?} per subject, host core {host}, responder core {responder}, {:.1} s",
        plan.rounds,
        plan.per_round,
        started.elapsed().as_secs_f64()
    );
    println!(
        "{:<14} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "subject", "p50 ns", "p90 ns", "p99 ns", "p99.9 ns", "samples"
    );
    for r in &rows {
        println!(
            "{:<14} {:>10.0} {:>10.0} {:>10.0} {:>10.0} {:>10}",
            r.name, r.p50, r.p90, r.p99, r.p999, r.samples
        );
    }

    let subjects: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                r#"{{"name": "{}", "p50": {:.1}, "p90": {:.1}, "p99": {:.1}, "p999": {:.1}, "samples": {}}}"#,
                r.name, r.p50, r.p90, r.p99, r.p999, r.samples
            )
        })
        .collect();
    let json = format!(
        "{{\"figure\": \"rtt_busy_32B\", \"unit\": \"ns\", \"subjects\": [\n  {}\n]}}\n",
        subjects.join(",\n  ")
    );
    let written = args
        .out
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&args.out, json));
    if let Err(e) = written {
        eprintln!("latency: cannot write {}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    println!("wrote {}", args.out.display());
    ExitCode::SUCCESS
}
