//! Creating and dropping paths on a long-lived DPA gives their memory back: a thread's stack
//! goes with the thread, not with the DPA. (A file of its own: no other test's threads and
//! stacks move the numbers.)

mod common;

use common::{Path, echo_app, start_dpa};
use dpakit_emu::dpa::SchedMode;

/// The process's mapped memory (`VmSize`), in KiB.
fn vm_size_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmSize in /proc/self/status")
}

#[test]
fn paths_created_and_dropped_on_one_dpa_give_their_stacks_back() {
    let dpa = start_dpa(echo_app(), SchedMode::BusyPoll);
    for _ in 0..10 {
        drop(Path::echo(&dpa));
    }
    let before = vm_size_kib();
    for _ in 0..300 {
        drop(Path::echo(&dpa));
    }
    let grown = vm_size_kib().saturating_sub(before);
    // Each thread's stack maps 256 KiB: 300 kept stacks would be 75 MiB.
    assert!(
        grown < 16 * 1024,
        "mapped memory grew by {grown} KiB over 300 paths"
    );
}
