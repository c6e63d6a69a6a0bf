//! Kernel launches (`doca_dpa_kernel_launch_update_set` / `_add`) through the safe API, in both
//! execution modes: threads and ranks, the wait event's gate, the completion event's set and
//! add, launches in order, and DOCA's rules.

use dpakit::dpa::{Dpa, KernelLaunch};
use dpakit::soft::ExecMode;
use dpakit::soft::SoftSettings;
use dpakit::sync_event::SyncEvent;
use dpakit::{ErrorCode, kernels, kit_app, open_dpa_dev};
use std::time::{Duration, Instant};

fn dpa(mode: ExecMode) -> Dpa {
    Dpa::builder(&open_dpa_dev().unwrap())
        .app(kit_app())
        .workers(1)
        .exec_mode(mode)
        .start()
        .unwrap()
}

/// Events as DOCA's launch sample makes them: the host publishes what the DPA waits for, the
/// DPA publishes what the host waits for (and the marks the kernel adds).
struct Events {
    go: SyncEvent,
    done: SyncEvent,
    marks: SyncEvent,
}

fn events(dpa: &Dpa) -> Events {
    let dev = dpa.dev().clone();
    let to_dpa = || {
        SyncEvent::builder()
            .publisher_cpu(&dev)
            .subscriber_dpa(dpa)
            .start()
            .unwrap()
    };
    let from_dpa = || {
        SyncEvent::builder()
            .publisher_dpa(dpa)
            .subscriber_cpu(&dev)
            .start()
            .unwrap()
    };
    Events {
        go: to_dpa(),
        done: from_dpa(),
        marks: from_dpa(),
    }
}

/// Waits for `event` to exceed `after`, at most 10 s.
fn wait_gt(event: &SyncEvent, after: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let v = event.get().unwrap();
        if v > after {
            return v;
        }
        assert!(Instant::now() < deadline, "the event stayed at {v}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn every_thread_runs_once_with_its_rank(mode: ExecMode) {
    let dpa = dpa(mode);
    let ev = events(&dpa);
    let handle = ev.marks.dpa_handle(&dpa).unwrap().raw();
    for threads in [1u32, 3, 8] {
        ev.marks.set(0).unwrap();
        ev.done.set(0).unwrap();
        KernelLaunch::new(&dpa, &kernels::LAUNCH_MARK, handle)
            .threads(threads)
            .then_set(&ev.done, 10)
            .start()
            .unwrap();
        assert_eq!(wait_gt(&ev.done, 9), 10);
        assert_eq!(
            ev.marks.get().unwrap(),
            (1u64 << threads) - 1,
            "{threads} threads"
        );
    }
    dpa.check().unwrap();
}

fn a_launch_waits_for_its_event_and_holds_the_ones_behind(mode: ExecMode) {
    let dpa = dpa(mode);
    let ev = events(&dpa);
    let handle = ev.marks.dpa_handle(&dpa).unwrap().raw();
    KernelLaunch::new(&dpa, &kernels::LAUNCH_MARK, handle)
        .wait_for(&ev.go, 4)
        .then_add(&ev.done, 1)
        .start()
        .unwrap();
    // No event: it would run at once, but the launch ahead of it waits.
    KernelLaunch::new(&dpa, &kernels::LAUNCH_MARK, handle)
        .then_add(&ev.done, 2)
        .start()
        .unwrap();
    ev.go.set(3).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        ev.marks.get().unwrap(),
        0,
        "a launch ran before its event reached 4"
    );
    assert_eq!(ev.done.get().unwrap(), 0);
    ev.go.set(4).unwrap();
    assert_eq!(wait_gt(&ev.done, 2), 3, "both launches added their counts");
    assert_eq!(
        ev.marks.get().unwrap(),
        2,
        "each launch ran its one thread once"
    );
    dpa.check().unwrap();
}

fn doca_s_rules_are_checked(mode: ExecMode) {
    let dpa = dpa(mode);
    let ev = events(&dpa);
    let max = dpa.max_threads_per_kernel().unwrap();
    assert_eq!(max, 64);
    assert_eq!(dpa.kernel_max_run_time().unwrap(), Duration::from_secs(12));
    let launch = || KernelLaunch::new(&dpa, &kernels::LAUNCH_MARK, 0);
    let refused = |l: KernelLaunch<'_>, code: ErrorCode, text: &str| {
        let e = l.start().unwrap_err();
        assert_eq!(e.code(), code, "{e}");
        assert!(e.to_string().contains(text), "{e}");
    };
    refused(
        launch().threads(0),
        ErrorCode::InvalidValue,
        "1 to 64 threads",
    );
    refused(
        launch().threads(max + 1),
        ErrorCode::InvalidValue,
        "1 to 64 threads",
    );
    refused(
        launch().wait_for(&ev.go, 255),
        ErrorCode::InvalidValue,
        "threshold of 0 to 254",
    );
    // The DPA must subscribe to the event it waits for and publish the one it completes.
    refused(
        launch().wait_for(&ev.done, 1),
        ErrorCode::InvalidValue,
        "wait_event's subscriber is not this DPA context",
    );
    refused(
        launch().then_set(&ev.go, 1),
        ErrorCode::InvalidValue,
        "comp_event's publisher is not this DPA context",
    );
    // An RPC is no thread kernel.
    let rpc = dpakit::ThreadKernel::<dpakit::abi::RawArg>::new(
        c"sync_set",
        // SAFETY: only the address is used; the launch refuses it before any call.
        unsafe {
            std::mem::transmute::<*mut std::ffi::c_void, dpakit::abi::kernel::ThreadEntry>(
                kernels::SYNC_SET.func(),
            )
        },
    );
    refused(
        KernelLaunch::new(&dpa, &rpc, 0),
        ErrorCode::NotFound,
        "is not a thread kernel",
    );
    dpa.check().unwrap();
}

fn a_stopped_context_drops_its_waiting_launches(mode: ExecMode) {
    let dpa = dpa(mode);
    let ev = events(&dpa);
    let handle = ev.marks.dpa_handle(&dpa).unwrap().raw();
    for _ in 0..3 {
        KernelLaunch::new(&dpa, &kernels::LAUNCH_MARK, handle)
            .wait_for(&ev.go, 1)
            .then_add(&ev.done, 1)
            .start()
            .unwrap();
    }
    let marks = ev.marks;
    // The context goes with launches still waiting: nothing hangs, nothing runs.
    let started = Instant::now();
    drop(ev.go);
    drop(ev.done);
    drop(dpa);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(marks.get().unwrap(), 0);
}

/// Each check as a test per execution mode: `native::NAME` and `isa::NAME`.
macro_rules! in_both_modes {
    ($($name:ident),* $(,)?) => {
        mod native {
            $(#[test]
            fn $name() {
                super::$name(super::ExecMode::Native)
            })*
        }
        mod isa {
            $(#[test]
            fn $name() {
                super::$name(super::ExecMode::Isa)
            })*
        }
    };
}

in_both_modes!(
    every_thread_runs_once_with_its_rank,
    a_launch_waits_for_its_event_and_holds_the_ones_behind,
    doca_s_rules_are_checked,
    a_stopped_context_drops_its_waiting_launches,
);
