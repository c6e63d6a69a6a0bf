use dpakit::abi::{Echo, ImmMessage};
use dpakit::dpa::{Dpa, SchedMode};
use dpakit::pe::Pe;
use dpakit::{MsgqPath, kernels, kit_app, open_dpa_dev};
use std::time::Duration;
fn main() {
    let dpa = Dpa::builder(&open_dpa_dev().unwrap())
        .app(kit_app())
        .sched_mode(SchedMode::Deterministic { seed: 1 })
        .start()
        .unwrap();
    let pe = Pe::new().unwrap();
    let path = MsgqPath::builder(&dpa, &pe, &kernels::ECHO)
        .depth(64)
        .start()
        .unwrap();
    let msg = ImmMessage::new(
        0,
        &Echo {
            token: 1,
            timestamp_ns: 2,
            tag: 3,
        },
    );
    let n: u32 = std::env::args()
        .nth(1)
        .map_or(1_000_000, |a| a.parse().unwrap());
    for _ in 0..n {
        path.round_trip(&msg, Duration::from_secs(1)).unwrap();
    }
}
