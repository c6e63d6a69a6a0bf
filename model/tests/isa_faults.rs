//! ISA mode catches what a kernel must not do — a wild pointer, an illegal instruction, an
//! endless loop, a misaligned access, a write to its own code — as a fatal error on its DPA
//! context naming the kernel, the instruction and the address. The kernels are the fixture
//! `xtask/fixtures/faulty-kernels`, whose image `cargo xtask test` builds
//! (`cargo xtask build-dpa --faulty-fixture`).

mod common;

use common::default_dev;
use dpakit_fixture_faulty_kernels as faulty;
use dpakit_model::ctx::CtxState;
use dpakit_model::dpa::{App, Dpa, DpaDev, DpaThread, ExecMode, SchedMode};
use dpakit_model::error::ErrorCode;
use dpakit_model::mmap::Mmap;
use std::time::{Duration, Instant};

fn image() -> std::path::PathBuf {
    common::image_file(dpakit_fixture_faulty_kernels::IMAGE)
}

fn app() -> App {
    App::new("dpakit_fixture_faulty_kernels")
        .thread_kernel(&faulty::WILD_STORE)
        .thread_kernel(&faulty::ILLEGAL)
        .thread_kernel(&faulty::ENDLESS)
        .thread_kernel(&faulty::MISALIGNED)
        .thread_kernel(&faulty::PANICS)
        .thread_kernel(&faulty::READ_FOREVER)
        .rpc_kernel(&faulty::PANICS_RPC)
        .rpc_kernel(&faulty::SELF_MODIFY)
        .rpc_kernel(&faulty::READ_AT)
}

fn start(mode: SchedMode, budget: u64) -> Dpa {
    Dpa::builder(&default_dev())
        .app(app())
        .sched_mode(mode)
        .workers(1)
        .exec_mode(ExecMode::Isa)
        .isa_image(image())
        .isa_budget(budget)
        .start()
        .unwrap()
}

const MODES: [SchedMode; 3] = [
    SchedMode::BusyPoll,
    SchedMode::Sleep,
    SchedMode::Deterministic { seed: 3 },
];

/// The fixture's kernels compiled for the host (native mode).
fn start_native(mode: SchedMode) -> Dpa {
    Dpa::builder(&default_dev())
        .app(app())
        .sched_mode(mode)
        .workers(1)
        .start()
        .unwrap()
}

/// Runs `kernel` once with `arg` from the image; returns the fatal error.
fn fault_of(mode: SchedMode, kernel: &dpakit_dev::ThreadKernel, arg: u64) -> dpakit_model::Error {
    fault_in(&start(mode, 1_000_000), mode, kernel, arg)
}

/// Runs `kernel` once with `arg` on `dpa`; returns the fatal error.
fn fault_in(
    dpa: &Dpa,
    mode: SchedMode,
    kernel: &dpakit_dev::ThreadKernel,
    arg: u64,
) -> dpakit_model::Error {
    let arg = if arg == 0 {
        dpa.mem_alloc(64).unwrap().raw()
    } else {
        arg
    };
    let thread = DpaThread::builder(dpa, kernel, arg).start().unwrap();
    thread.run().unwrap();
    thread.notify();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        dpa.step();
        if let (Some(e), true) = (dpa.error(), thread.is_faulted()) {
            assert_eq!(dpa.state(), CtxState::Stopping);
            assert_eq!(e.code(), ErrorCode::Unexpected, "{e}");
            return e;
        }
        assert!(Instant::now() < deadline, "{mode:?}: no fault");
        std::thread::yield_now();
    }
}

fn assert_names(e: &dpakit_model::Error, kernel: &str, parts: &[&str]) {
    let text = e.message();
    assert!(text.contains(&format!("kernel `{kernel}`")), "{text}");
    assert!(
        text.contains(&format!(": {kernel}+0x")),
        "the pc names the function: {text}"
    );
    for part in parts {
        assert!(text.contains(part), "`{part}` missing from: {text}");
    }
}

#[test]
fn a_wild_store_is_caught_naming_kernel_pc_and_address() {
    for mode in MODES {
        let e = fault_of(mode, &faulty::WILD_STORE, 7);
        assert_names(
            &e,
            "wild_store",
            &[
                "store of 8 bytes at address 0xdead0000",
                "outside the memory the kernel may reach",
            ],
        );
    }
}

#[test]
fn an_illegal_instruction_is_caught() {
    for mode in MODES {
        let e = fault_of(mode, &faulty::ILLEGAL, 7);
        assert_names(&e, "illegal", &["illegal instruction 0xffffffff"]);
    }
}

#[test]
fn an_endless_loop_is_stopped_by_the_budget() {
    for mode in MODES {
        let e = fault_of(mode, &faulty::ENDLESS, 7);
        assert_names(
            &e,
            "endless",
            &[
                "ran 1000000 instructions in one activation without making progress",
                "DPAKIT_SOFT_ISA_BUDGET",
            ],
        );
    }
}

#[test]
fn a_misaligned_load_is_caught() {
    let e = fault_of(SchedMode::Deterministic { seed: 1 }, &faulty::MISALIGNED, 0);
    assert_names(&e, "misaligned", &["load of 8 bytes", "is misaligned"]);
}

#[test]
fn code_is_read_only() {
    let dpa = start(SchedMode::BusyPoll, 1_000_000);
    let e = dpa.rpc(&faulty::SELF_MODIFY, ()).unwrap_err();
    assert_names(
        &e,
        "self_modify",
        &["store of 2 bytes", "is read-only for the kernel"],
    );
}

#[test]
fn an_rpc_reads_dpa_memory_and_nothing_else() {
    let dpa = start(SchedMode::BusyPoll, 1_000_000);
    let block = dpa.mem_alloc_init(&0x1234_5678_9abc_def0u64).unwrap();
    assert_eq!(
        dpa.rpc(&faulty::READ_AT, (block.raw(),)).unwrap(),
        0x1234_5678_9abc_def0
    );
    // Freed memory is gone for the kernel.
    dpa.mem_free(block).unwrap();
    let e = dpa.rpc(&faulty::READ_AT, (block.raw(),)).unwrap_err();
    assert_names(&e, "read_at", &["load of 8 bytes", "outside the memory"]);
    // Host memory that is not the DPA's: refused, the process untouched.
    let host = Box::new(5u64);
    let dpa = start(SchedMode::BusyPoll, 1_000_000);
    let e = dpa
        .rpc(&faulty::READ_AT, (&*host as *const u64 as u64,))
        .unwrap_err();
    assert_names(&e, "read_at", &["outside the memory"]);
}

#[test]
fn rpcs_from_several_host_threads_are_each_counted() {
    let dpa = start(SchedMode::BusyPoll, 1_000_000);
    let block = dpa.mem_alloc_init(&7u64).unwrap();
    const PER_THREAD: u64 = 2_000;
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..PER_THREAD {
                    assert_eq!(dpa.rpc(&faulty::READ_AT, (block.raw(),)).unwrap(), 7);
                }
            });
        }
    });
    let profile = dpa.isa_rpc_profile().expect("ISA mode");
    assert_eq!(profile.activations, 4 * PER_THREAD);
    assert_eq!(profile.instructions % (4 * PER_THREAD), 0, "{profile:?}");
}

/// A kernel's panic fails its context with the message and where it was raised, in the same
/// words from the image as natively, for a thread and for an RPC.
#[test]
fn a_panic_fails_the_context_with_its_message_and_location() {
    let check = |e: &dpakit_model::Error, kernel: &str, message: &str| {
        let text = e.message();
        assert_eq!(e.code(), ErrorCode::Unexpected, "{e}");
        assert!(
            text.starts_with(&format!(
                "kernel `{kernel}`: panicked at xtask/fixtures/faulty-kernels/src/lib.rs:"
            )),
            "{text}"
        );
        assert!(text.ends_with(message), "{text}");
    };
    for mode in MODES {
        let native = fault_in(&start_native(mode), mode, &faulty::PANICS, 3);
        let isa = fault_of(mode, &faulty::PANICS, 3);
        check(&isa, "panics", "a kernel bug on purpose (3)");
        assert_eq!(native.message(), isa.message(), "{mode:?}");
    }
    let native = start_native(SchedMode::BusyPoll);
    let isa = start(SchedMode::BusyPoll, 1_000_000);
    assert_eq!(isa.rpc(&faulty::PANICS_RPC, (7,)).unwrap(), 7);
    let e = isa.rpc(&faulty::PANICS_RPC, (5,)).unwrap_err();
    check(&e, "panics_rpc", "an RPC bug on purpose (5)");
    assert_eq!(isa.error().unwrap().message(), e.message());
    let n = native.rpc(&faulty::PANICS_RPC, (5,)).unwrap_err();
    assert_eq!(n.message(), e.message());
}

/// Runs `READ_FOREVER` over `[mmap handle, address]` on `dpa` until it has read for a few
/// million instructions (every check found the memory reachable, and ISA mode keeps what it
/// checked), then takes the memory away: the next read must fault, naming the address.
fn read_until_taken_away(dpa: &Dpa, mmap: u64, addr: u64, take_away: impl FnOnce()) {
    let arg = dpa.mem_alloc_init(&[mmap, addr]).unwrap();
    let thread = DpaThread::builder(dpa, &faulty::READ_FOREVER, arg.raw())
        .start()
        .unwrap();
    thread.run().unwrap();
    thread.notify();
    let deadline = Instant::now() + Duration::from_secs(20);
    while thread.isa_profile().unwrap().instructions < 3 << 20 {
        assert!(Instant::now() < deadline, "the kernel does not run");
        assert!(dpa.error().is_none(), "{:?}", dpa.error());
        std::thread::yield_now();
    }
    take_away();
    while !thread.is_faulted() {
        assert!(Instant::now() < deadline, "no fault");
        std::thread::yield_now();
    }
    let e = dpa.error().unwrap();
    assert_names(
        &e,
        "read_forever",
        &[&format!(
            "load of 8 bytes at address {addr:#x} is outside the memory the kernel may reach"
        )],
    );
}

/// Budget enough to read for seconds: the runaway check must not end the kernel first.
const READ_BUDGET: u64 = 4_000_000_000;

#[test]
fn freed_dpa_memory_faults_though_it_was_read_before() {
    for mode in [SchedMode::BusyPoll, SchedMode::Sleep] {
        let dpa = start(mode, READ_BUDGET);
        let target = dpa.mem_alloc(64).unwrap();
        read_until_taken_away(&dpa, 0, target.raw(), || dpa.mem_free(target).unwrap());
    }
}

#[test]
fn a_retired_mmap_faults_though_it_was_read_before() {
    for mode in [SchedMode::BusyPoll, SchedMode::Sleep] {
        let dpa = start(mode, READ_BUDGET);
        let mmap = Mmap::alloc(4096).unwrap();
        mmap.start().unwrap();
        let handle = dpa.mmap_handle(&mmap).unwrap();
        let addr = mmap.range().0 as u64;
        read_until_taken_away(&dpa, handle.raw().into(), addr, || {
            dpakit_model::dpa::memory::unregister_mmap(handle)
        });
    }
}
