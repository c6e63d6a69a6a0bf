//! N DPA threads, each owning its own consumer/producer pair: messages go round-robin to the
//! threads, every reply is checked to come from the right thread, in order.
//!
//! ```sh
//! cargo run --release --example multi_thread [-- THREADS [MESSAGES]]
//! ```

use dpakit::abi::args::RankedPathArgs;
use dpakit::abi::{Echo, ImmMessage};
use dpakit::dpa::Dpa;
use dpakit::pe::Pe;
use dpakit::soft::SchedMode;
use dpakit::soft::SoftSettings;
use dpakit::{MsgqPath, kernels, kit_app, open_dpa_dev};
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>().ok());
    let threads = args.next().flatten().unwrap_or(4).max(1) as u32;
    let messages = args.next().flatten().unwrap_or(200_000);
    match run(threads, messages) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("multi_thread failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(threads: u32, messages: u64) -> Result<(), Box<dyn std::error::Error>> {
    let dev = open_dpa_dev()?;
    // Sleeping workers: more DPA threads than cores must share them politely.
    let dpa = Dpa::builder(&dev)
        .app(kit_app())
        .sched_mode(SchedMode::Sleep)
        .start()?;
    let pe = Pe::new()?;
    let paths = (0..threads)
        .map(|rank| {
            MsgqPath::builder(&dpa, &pe, &kernels::RANKED_ECHO)
                .depth(32)
                .args(move |path| RankedPathArgs {
                    path,
                    rank,
                    reserved: 0,
                })
                .start()
        })
        .collect::<Result<Vec<_>, _>>()?;

    let timeout = Duration::from_secs(10);
    let per_thread = messages / u64::from(threads);
    let mut next = vec![0u64; paths.len()];
    let start = Instant::now();
    // Keep 16 messages in flight on every path.
    for token in 0..per_thread + 16 {
        for (rank, path) in paths.iter().enumerate() {
            if token < per_thread {
                path.send_msg(&ImmMessage::new(
                    token as u32,
                    &Echo {
                        token,
                        timestamp_ns: 0,
                        tag: 0,
                    },
                ))?;
            }
            if token >= 16 {
                let echo: Echo = path.recv(timeout)?.msg.view()?;
                if echo.tag != rank as u64 || echo.token != next[rank] {
                    return Err(format!(
                        "thread {rank}: got token {} tagged {}, expected token {} tagged {rank}",
                        echo.token, echo.tag, next[rank]
                    )
                    .into());
                }
                next[rank] += 1;
            }
        }
    }
    let elapsed = start.elapsed();
    dpa.check()?;
    let total: u64 = next.iter().sum();
    let activations = dpa.stats()?.activations;
    println!(
        "multi_thread: {threads} DPA threads, {total} messages, 0 lost, {:.0} msg/s, {activations} activations",
        total as f64 / elapsed.as_secs_f64()
    );
    Ok(())
}
