//! Creating and dropping paths on a long-lived DPA gives their memory back: a thread's stack
//! goes with the thread, and every object of the path once no worker can hold it, not with the
//! DPA. (One test in a file of its own: no other test's threads and stacks move the numbers.)

mod common;

use common::{Path, echo_app, start_dpa};
use dpakit_model::dpa::SchedMode;

/// The process's mapped memory (`VmSize`), in KiB.
fn vm_size_kib() -> u64 {
    status_kib("VmSize:")
}

/// A `/proc/self/status` figure, in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/self/status"))
}

#[test]
fn paths_created_and_dropped_on_one_dpa_give_their_memory_back() {
    stacks_go_with_their_threads();
    objects_of_dropped_paths_are_freed_while_the_dpa_lives();
}

fn stacks_go_with_their_threads() {
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

fn objects_of_dropped_paths_are_freed_while_the_dpa_lives() {
    for mode in [
        SchedMode::BusyPoll,
        SchedMode::Sleep,
        SchedMode::Deterministic { seed: 3 },
    ] {
        let dpa = start_dpa(echo_app(), mode);
        for _ in 0..50 {
            drop(Path::echo(&dpa));
        }
        let before = status_kib("VmRSS:");
        for _ in 0..1_000 {
            drop(Path::echo(&dpa));
        }
        // What waits for a grace period is freed once the workers have run a little.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while dpa.pending_frees() > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "{mode:?}: objects never freed"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let grown = status_kib("VmRSS:").saturating_sub(before);
        // Kept, a path's rings and records would be about 8 KiB each: 8 MiB here.
        assert!(
            grown < 2 * 1024,
            "{mode:?}: resident memory grew by {grown} KiB"
        );
    }
}
