//! The datapath allocates nothing once warm: a counting global allocator sees zero allocations
//! across thousands of CPU → DPA → CPU round trips, on every thread of the process, with the
//! kernel running natively or from the DPA image in the interpreter (ISA mode).

#[path = "support/counting.rs"]
mod counting;

use counting::allocations;
use dpakit::abi::{Echo, ImmMessage};
use dpakit::dpa::Dpa;
use dpakit::pe::Pe;
use dpakit::soft::SoftSettings;
use dpakit::soft::{ExecMode, SchedMode};
use dpakit::{MsgqPath, kernels, kit_app, open_dpa_dev};
use std::time::Duration;

fn allocations_during(path: &MsgqPath, round_trips: u64, pipelined: bool) -> u64 {
    let timeout = Duration::from_secs(10);
    let before = allocations();
    if pipelined {
        let depth = u64::from(path.depth());
        for i in 0..round_trips {
            path.send_msg(&ImmMessage::new(
                i as u32,
                &Echo {
                    token: i,
                    ..Echo::default()
                },
            ))
            .unwrap();
            if i >= depth - 1 {
                path.recv(timeout).unwrap();
            }
        }
        for _ in 0..depth - 1 {
            path.recv(timeout).unwrap();
        }
    } else {
        for i in 0..round_trips {
            let msg = ImmMessage::new(
                i as u32,
                &Echo {
                    token: i,
                    ..Echo::default()
                },
            );
            let reply = path.round_trip(&msg, timeout).unwrap();
            assert_eq!(reply.msg, msg);
        }
    }
    allocations() - before
}

fn main() {
    counting::run(&[(
        "round_trips_allocate_nothing_after_warm_up",
        round_trips_allocate_nothing_after_warm_up,
    )]);
}

fn round_trips_allocate_nothing_after_warm_up() {
    for (mode, exec) in [
        (SchedMode::BusyPoll, ExecMode::Native),
        (SchedMode::Sleep, ExecMode::Native),
        (SchedMode::BusyPoll, ExecMode::Isa),
        (SchedMode::Sleep, ExecMode::Isa),
    ] {
        let dpa = Dpa::builder(&open_dpa_dev().unwrap())
            .app(kit_app())
            .sched_mode(mode)
            .workers(1)
            .exec_mode(exec)
            .start()
            .unwrap();
        let pe = Pe::new().unwrap();
        let path = MsgqPath::builder(&dpa, &pe, &kernels::ECHO)
            .depth(16)
            .start()
            .unwrap();
        // Warm-up: first activations, lazily initialised thread-locals, worker start.
        allocations_during(&path, 2_000, false);
        allocations_during(&path, 2_000, true);

        assert_eq!(
            allocations_during(&path, 20_000, false),
            0,
            "{mode:?} {exec:?}: one message at a time"
        );
        assert_eq!(
            allocations_during(&path, 20_000, true),
            0,
            "{mode:?} {exec:?}: a full window in flight"
        );
    }
}
