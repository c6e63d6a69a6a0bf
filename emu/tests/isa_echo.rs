//! Echo in ISA mode: the kernels of the DPA image, interpreted.

mod common;

use common::{DEPTH, Path, default_dev, echo_app};
use dpakit_abi::{Echo, ImmMessage};
use dpakit_emu::dpa::{Dpa, ExecMode, SchedMode};

fn image() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/dpa/release/dpakit_kernels.elf")
}

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
        let _ = DEPTH;
    }
    dpa.check().unwrap();
    let profile = path.thread.isa_profile().expect("ISA mode");
    eprintln!("{profile:?}");
    assert!(profile.activations >= 100);
    assert!(profile.instructions > 100 * 20);
}
