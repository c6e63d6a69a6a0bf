//! The live view and the dump at exit, checked against a run whose counts are known: a
//! deterministic ISA-mode echo of `ROUND_TRIPS` messages, one at a time. The live view is asked
//! through this process's socket, as `cargo xtask dpa-top` asks; the dump is that of a child
//! process (this test binary again, with `DPAKIT_TEST_STATS_CHILD` set) that destroyed
//! everything before it exited.

// The kit's ISA image and the soft device's own view (feature doca builds have neither here).
#![cfg(not(feature = "doca"))]

use dpakit::abi::{Echo, ImmMessage};
use dpakit::dpa::Dpa;
use dpakit::pe::Pe;
use dpakit::soft::{ExecMode, SchedMode, SoftSettings};
use dpakit::{MsgqPath, kernels, kit_app, open_dpa_dev};
use dpakit_wire::stats::{self, Request};
use serde_json::Value;
use std::time::Duration;

const CHILD: &str = "DPAKIT_TEST_STATS_CHILD";
const ROUND_TRIPS: u64 = 25;
const DEPTH: u32 = 8;
const WAIT: Duration = Duration::from_secs(30);

/// `ROUND_TRIPS` echoes, one at a time, in deterministic ISA mode; returns the context's
/// number and the handles that keep it.
fn echo_run() -> (u64, Dpa, Pe, MsgqPath) {
    let dpa = Dpa::builder(&open_dpa_dev().unwrap())
        .app(kit_app())
        .sched_mode(SchedMode::Deterministic { seed: 7 })
        .exec_mode(ExecMode::Isa)
        .start()
        .unwrap();
    let pe = Pe::new().unwrap();
    let path = MsgqPath::builder(&dpa, &pe, &kernels::ECHO)
        .depth(DEPTH)
        .start()
        .unwrap();
    for token in 0..ROUND_TRIPS {
        let echo = Echo {
            token,
            timestamp_ns: 0,
            tag: 0,
        };
        let reply = path.round_trip(&ImmMessage::new(1, &echo), WAIT).unwrap();
        assert_eq!(reply.msg.view::<Echo>().unwrap().token, token);
    }
    dpa.check().unwrap();
    (dpa.dpa_handle().unwrap(), dpa, pe, path)
}

/// The context numbered `id` in a view.
fn context(view: &Value, id: u64) -> &Value {
    view["contexts"]
        .as_array()
        .expect("a list of contexts")
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no context {id} in {view}"))
}

/// What every view of the echo run says, live or at exit.
fn check_echo_context(c: &Value, destroyed: bool) {
    assert_eq!(c["exec"], "isa", "{c}");
    assert_eq!(c["sched"], "deterministic");
    assert_eq!(c["seed"], 7);
    assert_eq!(c["error"], Value::Null);
    assert_eq!(c["destroyed"], destroyed);
    let threads = c["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1, "{c}");
    let t = &threads[0];
    assert_eq!(t["kernel"], "echo");
    assert_eq!(t["destroyed"], destroyed);
    // One message at a time: each activation takes one message and answers it.
    assert_eq!(t["activations"], ROUND_TRIPS, "{t}");
    let isa = &t["isa"];
    assert_eq!(isa["activations"], ROUND_TRIPS);
    let instructions = isa["instructions"].as_u64().unwrap();
    assert!(instructions >= 10 * ROUND_TRIPS, "{isa}");
    assert!(isa["max_instructions"].as_u64().unwrap() <= instructions);
    let calls = &isa["device_calls"];
    // Each message: one receive acknowledged, one answer sent.
    assert_eq!(
        calls["doca_dpa_dev_comch_consumer_ack"], ROUND_TRIPS,
        "{calls}"
    );
    assert_eq!(
        calls["doca_dpa_dev_comch_producer_post_send_imm_only"],
        ROUND_TRIPS
    );
    let queues = c["queues"].as_array().unwrap();
    assert_eq!(queues.len(), 2, "{c}");
    for (q, direction) in queues.iter().zip(["to_dpa", "from_dpa"]) {
        assert_eq!(q["direction"], direction, "{q}");
        assert_eq!(q["sent"], ROUND_TRIPS, "{q}");
        assert_eq!(q["taken"], ROUND_TRIPS, "{q}");
        assert_eq!(q["destroyed"], destroyed, "{q}");
    }
}

#[test]
fn the_live_view_counts_a_deterministic_run() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let (id, dpa, _pe, path) = echo_run();
    let socket = stats::socket_path(std::process::id()).unwrap();
    let json = stats::query(&socket, Request::Json, WAIT).unwrap();
    let view: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(view["pid"], std::process::id());
    let c = context(&view, id);
    check_echo_context(c, false);
    assert_eq!(c["state"], "RUNNING");
    assert_eq!(c["threads"][0]["state"], "waiting");
    // The kernel keeps the path's depth of receives posted; the host re-posts the receive of
    // the last reply at its next poll, so it has one fewer.
    for (q, credits) in c["queues"]
        .as_array()
        .unwrap()
        .iter()
        .zip([DEPTH, DEPTH - 1])
    {
        assert_eq!(q["credits"], credits, "{q}");
        assert_eq!(q["consumers"], 1);
        assert_eq!(q["producers"], 1);
    }
    let table = stats::query(&socket, Request::Table, WAIT).unwrap();
    let line = format!("DPA context {id}: app ");
    assert!(table.contains(&line), "{table}");
    let echo_row = table
        .lines()
        .find(|l| l.contains(" echo "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(echo_row.contains("waiting"), "{echo_row}");
    drop((path, dpa));
}

#[test]
fn the_dump_at_exit_keeps_what_was_destroyed() {
    if let Some(file) = std::env::var_os(CHILD) {
        // The child: run, destroy everything, and exit through the dump.
        let (id, ..) = echo_run();
        std::fs::write(format!("{}.id", file.to_string_lossy()), id.to_string()).unwrap();
        return;
    }
    let file = std::env::temp_dir().join(format!("dpakit-stats-{}.json", std::process::id()));
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "the_dump_at_exit_keeps_what_was_destroyed",
            "--nocapture",
        ])
        .env(CHILD, &file)
        .env("DPAKIT_SOFT_STATS", format!("json:{}", file.display()))
        .status()
        .unwrap();
    assert!(status.success(), "the child failed: {status}");
    let id_file = format!("{}.id", file.display());
    let id: u64 = std::fs::read_to_string(&id_file).unwrap().parse().unwrap();
    let json = std::fs::read_to_string(&file).unwrap();
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(&id_file);
    let view: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    let c = context(&view, id);
    check_echo_context(c, true);
    assert_eq!(c["threads"][0]["state"], "finished");
    for q in c["queues"].as_array().unwrap() {
        assert_eq!(q["consumers"], 0, "{q}");
        assert_eq!(q["producers"], 0);
    }
}
