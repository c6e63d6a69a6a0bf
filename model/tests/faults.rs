//! A kernel that touches memory it may not reach faults its DPA context, never the process.

mod common;

use common::{Path, PathOptions, echo_app, start_dpa};
use dpakit_abi::{Echo, ErrorCode, ImmMessage, bytes_of};
use dpakit_dev::runtime::CONSUMER_ACK;
use dpakit_dev::{rpc_kernel, thread, thread_kernel};
use dpakit_kernels::ECHO;
use dpakit_model::ctx::CtxState;
use dpakit_model::dpa::{App, Dpa, DpaThread, SchedMode};

/// The address the wild kernels touch: the first page, never mapped.
const WILD: u64 = 0x18;

thread_kernel! {
    /// Writes through its argument as if it were a pointer.
    pub WILD_WRITE: fn wild_write(arg: u64) {
        // SAFETY: not safe at all: the test passes an address no one may write.
        unsafe { core::ptr::write_volatile(arg as usize as *mut u64, 1) };
        thread::reschedule()
    }
}

thread_kernel! {
    /// Recurses until its stack runs out.
    pub OVERFLOW: fn overflow(arg: u64) {
        #[allow(unconditional_recursion)]
        fn deeper(n: u64) -> u64 {
            let frame = core::hint::black_box([n; 64]);
            frame[(n % 64) as usize] + deeper(core::hint::black_box(n + 1))
        }
        core::hint::black_box(deeper(arg));
        thread::reschedule()
    }
}

rpc_kernel! {
    /// Reads through its argument.
    pub WILD_READ: fn wild_read(addr: u64) -> u64 {
        // SAFETY: not safe at all: the test passes an address no one may read.
        unsafe { core::ptr::read_volatile(addr as usize as *const u64) }
    }
}

fn app() -> App {
    App::new("faults")
        .thread_kernel(&WILD_WRITE)
        .thread_kernel(&OVERFLOW)
        .rpc_kernel(&WILD_READ)
        .rpc_kernel(&CONSUMER_ACK)
}

/// Runs `kernel` once with `arg` on a fresh DPA in `mode`; returns the fatal error.
fn fault_of(mode: SchedMode, kernel: &dpakit_dev::ThreadKernel, arg: u64) -> dpakit_model::Error {
    let dpa = start_dpa(app(), mode);
    let thread = DpaThread::builder(&dpa, kernel, arg).start().unwrap();
    thread.run().unwrap();
    thread.notify();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        dpa.step();
        // The worker marks the thread once the activation has ended.
        if let (Some(e), true) = (dpa.error(), thread.is_faulted()) {
            assert_eq!(dpa.state(), CtxState::Stopping);
            return e;
        }
        assert!(std::time::Instant::now() < deadline, "{mode:?}: no fault");
        std::thread::yield_now();
    }
}

const MODES: [SchedMode; 3] = [
    SchedMode::BusyPoll,
    SchedMode::Sleep,
    SchedMode::Deterministic { seed: 2 },
];

/// A working echo path on another DPA: the fault touched nothing outside its own context.
fn others_still_work() {
    let dpa: Dpa = start_dpa(echo_app(), SchedMode::BusyPoll);
    let path = Path::new(&dpa, &ECHO, PathOptions::default(), |a| {
        bytes_of(&a).to_vec()
    });
    let msg = ImmMessage::new(
        0,
        &Echo {
            token: 9,
            timestamp_ns: 0,
            tag: 0,
        },
    );
    path.cpu_producer
        .send(msg.as_bytes(), path.dpa_consumer.id(), 0)
        .unwrap();
    path.wait_received(1);
    assert_eq!(dpa.check(), Ok(()));
}

#[test]
fn a_wild_write_is_a_fatal_error_naming_the_kernel_and_the_address() {
    for mode in MODES {
        let e = fault_of(mode, &WILD_WRITE, WILD);
        assert_eq!(e.code(), ErrorCode::Unexpected, "{mode:?}");
        let text = e.message();
        assert!(text.contains("kernel `wild_write`"), "{mode:?}: {text}");
        assert!(
            text.contains("memory fault (SIGSEGV) at address 0x18"),
            "{mode:?}: {text}"
        );
    }
    others_still_work();
}

#[test]
fn a_stack_overflow_is_a_fatal_error_not_a_crash() {
    for mode in MODES {
        let e = fault_of(mode, &OVERFLOW, 1);
        assert!(
            e.message().contains("kernel `overflow`: memory fault"),
            "{mode:?}: {e}"
        );
    }
    others_still_work();
}

#[test]
fn a_wild_read_in_an_rpc_fails_the_rpc_and_the_context() {
    let dpa = start_dpa(app(), SchedMode::BusyPoll);
    let e = dpa.rpc(&WILD_READ, (WILD,)).unwrap_err();
    assert!(
        e.message().contains("kernel `wild_read`: memory fault"),
        "{e}"
    );
    assert_eq!(dpa.error().map(|e| e.code()), Some(ErrorCode::Unexpected));
    others_still_work();
}

#[test]
fn a_fault_outside_any_activation_is_left_to_the_process() {
    // Installing the trap must not swallow the host's own faults: a child that faults in plain
    // host code after running a kernel dies of SIGSEGV as it would without the soft device.
    if std::env::var_os("DPAKIT_FAULTS_CHILD").is_some() {
        let dpa = start_dpa(app(), SchedMode::BusyPoll);
        let _ = dpa.rpc(&WILD_READ, (WILD,));
        // SAFETY: not safe: the point is the fault.
        unsafe { core::ptr::write_volatile(WILD as usize as *mut u64, 1) };
        unreachable!();
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_fault_outside_any_activation_is_left_to_the_process",
        ])
        .env("DPAKIT_FAULTS_CHILD", "1")
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGSEGV),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
