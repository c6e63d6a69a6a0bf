//! Echo round trips between the CPU and a DPA kernel, on the soft device.
//!
//! A CPU producer sends a 32-byte immediate; the `echo` kernel, running as a DPA thread,
//! receives it through its consumer completion and answers with post-send-immediate; a CPU
//! consumer gets it back. Every echo is checked byte for byte.
//!
//! With `--isa` the kernel runs from the DPA image `cargo xtask build-dpa --release` links — the
//! riscv64 code the DPA would run — in the soft device's RV64IMAC interpreter (built first if
//! missing), and the instructions it retired per message are printed.
//!
//! ```sh
//! cargo run --release --example quickstart [-- [--isa] [MESSAGES]]
//! ```

use dpakit::abi::{Echo, ImmMessage};
use dpakit::dpa::Dpa;
use dpakit::pe::Pe;
use dpakit::soft::SoftSettings;
use dpakit::soft::{ExecMode, SchedMode, pin_current_thread};
use dpakit::{MsgqPath, kernels, kit_app, open_dpa_dev};
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    let mut isa = false;
    let mut messages = 200_000usize;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--isa" => isa = true,
            n => match n.parse() {
                Ok(n) if n > 0 => messages = n,
                _ => {
                    eprintln!("usage: quickstart [--isa] [MESSAGES]  (a positive count)");
                    return ExitCode::FAILURE;
                }
            },
        }
    }
    match run(messages, isa) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("quickstart failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(messages: usize, isa: bool) -> Result<(), Box<dyn std::error::Error>> {
    // Host thread and DPA worker on distinct cores, the DPA worker busy-polling.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    pin_current_thread(0)?;
    let dev = open_dpa_dev()?;
    let mut dpa = Dpa::builder(&dev)
        .app(kit_app())
        .sched_mode(SchedMode::BusyPoll)
        .workers(1)
        .pin_workers(vec![1 % cpus]);
    if isa {
        // The kit's app carries its DPA image, built with the kernels by `cargo build`.
        dpa = dpa.exec_mode(ExecMode::Isa);
    }
    let dpa = dpa.start()?;
    let pe = Pe::new()?;
    let path = MsgqPath::builder(&dpa, &pe, &kernels::ECHO)
        .depth(64)
        .start()?;

    let timeout = Duration::from_secs(5);
    // Warm up caches, stacks and the branch predictor before measuring.
    for i in 0..1_000u64 {
        path.round_trip(
            &ImmMessage::new(
                i as u32,
                &Echo {
                    token: i,
                    ..Echo::default()
                },
            ),
            timeout,
        )?;
    }

    let mut latencies = Vec::with_capacity(messages);
    let mut lost = 0usize;
    let start = Instant::now();
    for i in 0..messages as u64 {
        let sent = ImmMessage::new(
            i as u32,
            &Echo {
                token: i,
                timestamp_ns: 0,
                tag: i.rotate_left(17),
            },
        );
        let t0 = Instant::now();
        let reply = path.round_trip(&sent, timeout)?;
        latencies.push(t0.elapsed().as_nanos() as u64);
        if reply.len != 32 || reply.msg != sent || reply.producer_id != path.producer_id() {
            lost += 1;
        }
    }
    let elapsed = start.elapsed();
    dpa.check()?;

    latencies.sort_unstable();
    let pct = |p: f64| latencies[((latencies.len() - 1) as f64 * p).round() as usize];
    println!(
        "echo{}: {messages} messages, {lost} lost, p50 {} ns, p99 {} ns, {:.0} msg/s",
        if isa { " (ISA mode)" } else { "" },
        pct(0.50),
        pct(0.99),
        messages as f64 / elapsed.as_secs_f64()
    );
    if isa {
        let profile = path.thread().isa_profile()?;
        let total = messages as f64 + 1_000.0;
        println!(
            "  per message: {:.1} instructions, {:.1} device calls ({} activations)",
            profile.instructions as f64 / total,
            profile.device_calls() as f64 / total,
            profile.activations
        );
    }
    if lost > 0 {
        return Err(format!("{lost} echoes did not match what was sent").into());
    }
    Ok(())
}
