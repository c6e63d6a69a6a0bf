//! Echo in ISA mode: the kernels of the DPA image, interpreted.

mod common;

use common::{Path, default_dev, echo_app};
use dpakit_abi::{Echo, ImmMessage};
use dpakit_model::dpa::{Dpa, ExecMode, SchedMode};

/// The kit's DPA image.
fn image() -> std::path::PathBuf {
    common::kit_image()
}

/// Deterministic scheduling: one activation per message, every one interpreted and counted.
#[test]
fn echo_runs_from_the_image() {
    let dpa = Dpa::builder(&default_dev())
        .app(echo_app())
        .sched_mode(SchedMode::Deterministic { seed: 1 })
        .exec_mode(ExecMode::Isa)
        .isa_image(image())
        .start()
        .unwrap();
    let path = Path::echo(&dpa);
    for i in 0..100u64 {
        let msg = ImmMessage::new(
            i as u32,
            &Echo {
                token: i,
                timestamp_ns: 0,
                tag: !i,
            },
        );
        path.cpu_producer
            .send(msg.as_bytes(), path.dpa_consumer.id(), i)
            .unwrap();
        path.wait_received(1);
        let (bytes, len, _) = path.received.borrow_mut().pop_front().unwrap();
        let echo: Echo = ImmMessage::from_bytes(&bytes[..len])
            .unwrap()
            .view()
            .unwrap();
        assert_eq!(echo.token, i);
        path.cpu_consumer.post_recv(i + 1).unwrap();
    }
    dpa.check().unwrap();
    let profile = path.thread.isa_profile().expect("ISA mode");
    assert_eq!(profile.activations, 100, "{profile:?}");
    assert!(profile.instructions > 100 * 20, "{profile:?}");
    // Each message: one completion taken and acked, one reply sent, one credit back.
    assert!(profile.calls.iter().sum::<u64>() >= 100 * 4, "{profile:?}");
}
