//! N round trips of a 32-byte message, CPU → echo kernel → CPU, in the soft device's
//! deterministic mode: the kernel runs inside the host thread's progress calls, so one thread
//! executes both sides and an instruction counter sees the whole round trip, without the
//! spinning of a busy-polling worker.
//!
//! `cargo xtask profile` runs this under callgrind twice (two counts) and reports the
//! difference per round trip, split by layer; `--isa` runs the echo from the kit's DPA image
//! in ISA mode; `--one-way` streams N messages to the sink kernel instead (1024 credits, as
//! the throughput bench), the cost per message of the throughput path. By hand:
//!
//! ```sh
//! valgrind --tool=callgrind target/release/examples/round_trip_profile 10000 [--isa|--one-way]
//! ```

use dpakit::abi::{Echo, ImmMessage, PingPong};
use dpakit::dpa::Dpa;
use dpakit::pe::Pe;
use dpakit::soft::SchedMode;
use dpakit::soft::SoftSettings;
use dpakit::{MsgqPath, kernels, kit_app, open_dpa_dev};
use std::time::Duration;

fn main() -> Result<(), dpakit::Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: u64 = args.iter().find_map(|a| a.parse().ok()).unwrap_or(10_000);
    let mut dpa = Dpa::builder(&open_dpa_dev()?)
        .app(kit_app())
        .sched_mode(SchedMode::Deterministic { seed: 1 });
    if args.iter().any(|a| a == "--isa") {
        dpa = dpa.exec_mode(dpakit::soft::ExecMode::Isa);
    }
    let dpa = dpa.start()?;
    let pe = Pe::new()?;
    if args.iter().any(|a| a == "--one-way") {
        return one_way(&dpa, &pe, n);
    }
    let path = MsgqPath::builder(&dpa, &pe, &kernels::ECHO)
        .depth(64)
        .start()?;
    for token in 0..n {
        let msg = ImmMessage::new(
            0,
            &Echo {
                token,
                timestamp_ns: 0,
                tag: 7,
            },
        );
        let reply = path.round_trip(&msg, Duration::from_secs(5))?;
        assert_eq!(
            reply.msg.view::<Echo>().map(|e| e.token).ok(),
            Some(token),
            "the echo carries the token back"
        );
    }
    dpa.check()?;
    println!("{n} round trips");
    Ok(())
}

/// Streams `n` messages to the sink kernel and waits until it counted them all.
fn one_way(dpa: &Dpa, pe: &Pe, n: u64) -> Result<(), dpakit::Error> {
    let path = MsgqPath::builder(dpa, pe, &kernels::SINK)
        .depth(1024)
        .start()?;
    let msg = ImmMessage::new(7, &PingPong::default());
    for _ in 0..n {
        path.send(msg.as_bytes())?;
    }
    // The sink's count is a u32 that wraps; n stays far below it here.
    while u64::from(path.kernel_state()?.sends) != n {
        pe.progress();
    }
    dpa.check()?;
    println!("{n} messages");
    Ok(())
}
