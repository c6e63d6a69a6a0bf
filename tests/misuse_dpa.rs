//! Misuse of a DPA context through the public API is an error naming the rule, never a crash.

#[path = "support/one_message.rs"]
mod one_message;

use dpakit::dpa::Dpa;
use dpakit::soft::SchedMode;
use dpakit::soft::SoftSettings;
use dpakit::{ErrorCode, kit_app, open_dpa_dev};

/// A DPA context of the kit's app with one worker in `mode`.
fn dpa_in(mode: SchedMode) -> Dpa {
    Dpa::builder(&open_dpa_dev().unwrap())
        .app(kit_app())
        .sched_mode(mode)
        .workers(1)
        .start()
        .unwrap()
}

fn busy_dpa() -> Dpa {
    dpa_in(SchedMode::BusyPoll)
}

#[test]
fn zero_workers_is_invalid_value_in_every_scheduling_mode() {
    for mode in [SchedMode::BusyPoll, SchedMode::Sleep] {
        let e = Dpa::builder(&open_dpa_dev().unwrap())
            .app(kit_app())
            .sched_mode(mode)
            .workers(0)
            .start()
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidValue, "{mode:?}: {e}");
    }
}

#[test]
fn pinning_to_a_cpu_that_does_not_exist_is_invalid_value() {
    let e = Dpa::builder(&open_dpa_dev().unwrap())
        .app(kit_app())
        .sched_mode(SchedMode::BusyPoll)
        .workers(1)
        .pin_workers(vec![100_000])
        .start()
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue, "{e}");
}

#[test]
fn allocating_more_than_the_device_has_is_no_memory_not_an_overflow() {
    let dpa = busy_dpa();
    let _one = dpa.mem_alloc(64).unwrap();
    let e = dpa.mem_alloc(usize::MAX).unwrap_err();
    assert_eq!(e.code(), ErrorCode::NoMemory, "{e}");
}

#[test]
fn an_mmap_gives_one_dpa_handle_per_device_however_often_asked() {
    use dpakit::mmap::{AccessFlags, Mmap};
    let dev = open_dpa_dev().unwrap();
    let mut mmap = Mmap::alloc(4096).unwrap();
    mmap.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    mmap.add_dev(&dev).unwrap();
    assert_eq!(
        mmap.dpa_handle(&dev).unwrap_err().code(),
        ErrorCode::NotPermitted,
        "not started"
    );
    mmap.start().unwrap();
    let first = mmap.dpa_handle(&dev).unwrap();
    for _ in 0..2_000 {
        assert_eq!(mmap.dpa_handle(&dev).unwrap(), first);
    }
    let mut other = Mmap::alloc(4096).unwrap();
    other.start().unwrap();
    assert_eq!(
        other.dpa_handle(&dev).unwrap_err().code(),
        ErrorCode::NotFound,
        "the device was not added"
    );
}

/// Starts the kit's echo kernel with `arg` as its thread argument and sends it one message;
/// returns the DPA's fatal error.
fn echo_with_arg(arg: u64) -> dpakit::Error {
    use dpakit::dpa::DpaThread;
    use dpakit::pe::Pe;
    let dpa = busy_dpa();
    let pe = Pe::new().unwrap();
    // Raw: the point is an argument that is not the address of a live MsgqPathArgs.
    let thread = DpaThread::builder(&dpa, &dpakit::kernels::ECHO.untyped())
        .arg(arg)
        .start()
        .unwrap();
    let _sent = one_message::send_one_message(&dpa, &pe, &thread);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        pe.progress();
        if let Some(e) = dpa.error() {
            return e;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the kernel never failed"
        );
        std::thread::yield_now();
    }
}

/// The kernel panics, which fails the context with the panic's message and location (with
/// feature `doca` too: the app library's panic handler reports it).
#[test]
fn a_null_thread_argument_is_refused_by_the_kernel() {
    let e = echo_with_arg(0);
    let text = e.message();
    assert!(
        text.starts_with("kernel `echo`: panicked at dpa-dev/src/thread.rs:")
            && text.ends_with(
                "thread argument is not the device address of its block (null or misaligned)"
            ),
        "{e}"
    );
}

#[test]
fn a_wild_thread_argument_faults_the_dpa_not_the_process() {
    let e = echo_with_arg(0xdead_0000);
    assert_eq!(e.code(), ErrorCode::Unexpected);
    assert!(
        e.message()
            .contains("kernel `echo`: memory fault (SIGSEGV) at address 0xdead0000"),
        "{e}"
    );
}

#[test]
fn a_thread_takes_the_same_number_of_completion_contexts_in_every_mode() {
    use dpakit::dpa::{ConsumerCompletion, DpaCompletion, DpaThread};
    for mode in [
        SchedMode::BusyPoll,
        SchedMode::Sleep,
        SchedMode::Deterministic { seed: 1 },
    ] {
        let dpa = dpa_in(mode);
        let max = dpa.max_completions_per_thread().unwrap();
        assert_eq!(max, 8, "{mode:?}");
        let (thread, _args) = DpaThread::builder(&dpa, &dpakit::kernels::ECHO)
            .start_deferred()
            .unwrap();
        let consumer_side = ConsumerCompletion::builder(&dpa)
            .dpa_thread(&thread)
            .start()
            .unwrap();
        let mut attached: Vec<DpaCompletion> = (1..max)
            .map(|_| DpaCompletion::start(&dpa, 8, Some(&thread)).unwrap())
            .collect();
        let e = DpaCompletion::start(&dpa, 8, Some(&thread)).unwrap_err();
        assert_eq!(e.code(), ErrorCode::NoMemory, "{mode:?}: {e}");
        assert!(
            e.message().contains("already has 8 completion contexts"),
            "{e}"
        );
        // Destroying one makes room again, however often.
        for _ in 0..3 * max {
            attached.pop();
            attached.push(DpaCompletion::start(&dpa, 8, Some(&thread)).unwrap());
        }
        drop(consumer_side);
        attached.push(DpaCompletion::start(&dpa, 8, Some(&thread)).unwrap());
    }
}

#[test]
fn mmap_views_follow_who_may_touch_the_memory() {
    use dpakit::mmap::{AccessFlags, Mmap};
    let dev = open_dpa_dev().unwrap();
    let mut source = Mmap::alloc(64).unwrap();
    // Local devices may write an mmap until its permissions say otherwise (DOCA's default).
    source
        .set_permissions(AccessFlags::LOCAL_READ_ONLY)
        .unwrap();
    source.add_dev(&dev).unwrap();
    source.as_mut_slice().unwrap().fill(7);
    source.start().unwrap();
    let e = source.as_mut_slice().unwrap_err();
    assert_eq!(e.code(), ErrorCode::BadState, "{e}");
    assert!(e.to_string().contains("fill it before"), "{e}");
    // Devices may only read it: a shared view stays valid.
    assert_eq!(source.as_slice().unwrap(), &[7; 64]);

    let mut target = Mmap::alloc(64).unwrap();
    target.add_dev(&dev).unwrap();
    target.as_mut_slice().unwrap()[3] = 9;
    assert_eq!(target.as_slice().unwrap()[3], 9, "before start: no device");
    target.start().unwrap();
    let e = target.as_slice().unwrap_err();
    assert_eq!(e.code(), ErrorCode::BadState, "{e}");
    assert!(e.to_string().contains("read_at"), "{e}");
    let mut bytes = [0u8; 4];
    target.read_at(2, &mut bytes).unwrap();
    assert_eq!(bytes, [0, 9, 0, 0]);
    for (offset, len) in [(61, 4), (usize::MAX, 1)] {
        let e = target.read_at(offset, &mut vec![0; len]).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidValue, "{e}");
    }
}
