//! One test per documented rule of MsgQ and the DPA, each asserting DOCA's error code.
//!
//! Why one long file: every rule is a short test over the same fixtures (`common`), and each
//! integration-test file is a binary of its own to link; split by subject it would read no
//! better and cost the suite a link per part.

mod common;

use common::{DEPTH, Path, PathOptions, default_dev, echo_app, start_dpa};
use dpakit_abi::args::MsgqPathArgs;
use dpakit_abi::handles::MmapHandle;
use dpakit_abi::{Echo, ErrorCode, ImmMessage, bytes_of};
use dpakit_dev::comch::{Consumer, ConsumerCompletion, DmaCopy, Producer};
use dpakit_dev::runtime::CONSUMER_ACK;
use dpakit_dev::{thread, thread_kernel};
use dpakit_kernels::ECHO;
use dpakit_model::comch::{CpuConsumer, CpuProducer, DpaConsumer};
use dpakit_model::ctx::CtxState;
use dpakit_model::dpa::{self, App, Dpa, DpaDev, DpaThread, SchedMode};
use dpakit_model::mmap::{AccessFlags, Mmap};
use dpakit_model::msgq::Msgq;
use dpakit_model::pe::Pe;
use std::time::Duration;

fn echo_msg(i: u64) -> ImmMessage {
    ImmMessage::new(
        i as u32,
        &Echo {
            token: i,
            timestamp_ns: 0,
            tag: 0,
        },
    )
}

// ---- MsgQ ----

#[test]
fn an_immediate_longer_than_32_bytes_is_invalid_value() {
    let dpa = start_dpa(echo_app(), SchedMode::BusyPoll);
    let path = Path::echo(&dpa);
    let e = path
        .cpu_producer
        .send(&[0u8; 33], path.dpa_consumer.id(), 0)
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue);
    assert!(e.message().contains("32 bytes"), "{e}");
    assert_eq!(
        path.cpu_producer.in_flight(),
        0,
        "a refused send takes no task"
    );
}

#[test]
fn endpoints_need_a_started_queue() {
    let dpa = start_dpa(echo_app(), SchedMode::BusyPoll);
    let q = Msgq::builder(dpa.dev()).dpa_consumer(&dpa).start().unwrap();
    let pe = Pe::new().unwrap();
    q.stop().unwrap();
    assert_eq!(q.state(), CtxState::Idle);
    let e = CpuProducer::builder(&q, &pe).start().unwrap_err();
    assert_eq!(e.code(), ErrorCode::BadState);
    assert!(e.message().contains("not started"), "{e}");
    q.start().unwrap();
    CpuProducer::builder(&q, &pe).start().unwrap();
}

#[test]
fn a_queue_with_live_endpoints_cannot_stop() {
    let dpa = start_dpa(echo_app(), SchedMode::BusyPoll);
    let q = Msgq::builder(dpa.dev()).dpa_consumer(&dpa).start().unwrap();
    let pe = Pe::new().unwrap();
    let producer = CpuProducer::builder(&q, &pe).start().unwrap();
    let e = q.stop().unwrap_err();
    assert_eq!(e.code(), ErrorCode::InUse);
    assert_eq!(q.state(), CtxState::Running);
    drop(producer);
    q.stop().unwrap();
}

#[test]
fn a_queue_needs_a_direction() {
    let dev = default_dev();
    assert_eq!(
        Msgq::builder(&dev).start().unwrap_err().code(),
        ErrorCode::BadState
    );
}

#[test]
fn endpoints_must_match_the_queue_direction() {
    let dpa = start_dpa(echo_app(), SchedMode::BusyPoll);
    let to_dpa = Msgq::builder(dpa.dev()).dpa_consumer(&dpa).start().unwrap();
    let pe = Pe::new().unwrap();
    let e = CpuConsumer::builder(&to_dpa, &pe).start().unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotSupported);
}

#[test]
fn max_consumers_and_producers_are_enforced() {
    let dpa = start_dpa(echo_app(), SchedMode::BusyPoll);
    let q = Msgq::builder(dpa.dev())
        .max_num_producers(2)
        .max_num_consumers(1)
        .dpa_consumer(&dpa)
        .start()
        .unwrap();
    let pe = Pe::new().unwrap();
    let _a = CpuProducer::builder(&q, &pe).start().unwrap();
    let _b = CpuProducer::builder(&q, &pe).start().unwrap();
    assert_eq!(
        CpuProducer::builder(&q, &pe).start().unwrap_err().code(),
        ErrorCode::NoMemory
    );

    let cc = dpa::ConsumerCompletion::builder(&dpa)
        .max_num_consumers(2)
        .start()
        .unwrap();
    let _c = DpaConsumer::builder(&q, &cc).start().unwrap();
    assert_eq!(
        DpaConsumer::builder(&q, &cc).start().unwrap_err().code(),
        ErrorCode::NoMemory
    );
    let too_many = Msgq::builder(dpa.dev())
        .max_num_consumers(65)
        .dpa_consumer(&dpa)
        .start()
        .unwrap_err();
    assert_eq!(too_many.code(), ErrorCode::InvalidValue);
}

#[test]
fn completion_context_limits_are_enforced() {
    let dpa = start_dpa(echo_app(), SchedMode::BusyPoll);
    let e = dpa::ConsumerCompletion::builder(&dpa)
        .max_num_recv(8193)
        .start()
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue);
    let e = dpa::ConsumerCompletion::builder(&dpa)
        .imm_data_len(33)
        .start()
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue);
    assert_eq!(
        dpa::DpaCompletion::start(&dpa, 0, None).unwrap_err().code(),
        ErrorCode::InvalidValue
    );
}

#[test]
fn send_task_pools_are_fixed() {
    let dpa = start_dpa(echo_app(), SchedMode::BusyPoll);
    // No credits: every send waits inside the soft device and holds its task.
    let path = Path::new(
        &dpa,
        &ECHO,
        PathOptions {
            depth: 4,
            credits: 0,
            receives: 4,
            ..PathOptions::default()
        },
        |a| bytes_of(&a).to_vec(),
    );
    for i in 0..4 {
        path.cpu_producer
            .send(echo_msg(i).as_bytes(), path.dpa_consumer.id(), i)
            .unwrap();
    }
    let e = path
        .cpu_producer
        .send(echo_msg(4).as_bytes(), path.dpa_consumer.id(), 4)
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::NoMemory);
    assert!(e.message().contains("4 send tasks"), "{e}");
    let e = path.cpu_consumer.post_recv(9).unwrap_err();
    assert_eq!(
        e.code(),
        ErrorCode::NoMemory,
        "all 4 receives are already posted"
    );
}

#[test]
fn an_immediate_over_the_consumers_imm_data_len_is_refused() {
    let dpa = start_dpa(echo_app(), SchedMode::BusyPoll);
    let q = Msgq::builder(dpa.dev()).dpa_consumer(&dpa).start().unwrap();
    let cc = dpa::ConsumerCompletion::builder(&dpa)
        .imm_data_len(8)
        .start()
        .unwrap();
    let consumer = DpaConsumer::builder(&q, &cc).start().unwrap();
    let pe = Pe::new().unwrap();
    let producer = CpuProducer::builder(&q, &pe).start().unwrap();
    let e = producer.send(&[1u8; 9], consumer.id(), 0).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue);
    assert_eq!(
        producer.send(&[1u8; 5], 99, 0).unwrap_err().code(),
        ErrorCode::NotFound
    );
}

// ---- Credits and ordering ----

thread_kernel! {
    /// Echo that acks completions but never gives credits back.
    pub HOLD: fn hold(arg: u64) {
        // SAFETY: the test writes a MsgqPathArgs at `arg`.
        let args: &MsgqPathArgs = unsafe { thread::arg_ref(arg) };
        let mut completions = ConsumerCompletion::new(args.consumer_completion);
        let producer = Producer::new(args.producer);
        let mut reports = dpakit_dev::completion::Completion::new(args.producer_completion);
        while let Some(msg) = completions.get() {
            producer.post_send_imm_only(args.cpu_consumer_id, msg.imm(), args.submit_flags).unwrap();
            completions.ack(1);
            while reports.get().is_some() {
                reports.ack(1);
            }
        }
        completions.request_notification();
        thread::reschedule()
    }
}

/// A DPA in `mode` running HOLD on a path of `depth`, its consumer starting with `credits`;
/// CONSUMER_ACK gives it more.
fn hold_path(mode: SchedMode, depth: u32, credits: u32) -> (Dpa, Path) {
    let app = App::new("rules")
        .thread_kernel(&HOLD)
        .rpc_kernel(&CONSUMER_ACK);
    let dpa = start_dpa(app, mode);
    let path = Path::new(
        &dpa,
        &HOLD,
        PathOptions {
            depth,
            credits,
            receives: depth,
            ..PathOptions::default()
        },
        |a| bytes_of(&a).to_vec(),
    );
    (dpa, path)
}

/// Runs the DPA's ready activations and the PE until a pass changes nothing (deterministic mode:
/// nothing runs unless asked, so what has not arrived then never will).
fn settle(dpa: &dpakit_model::dpa::Dpa, path: &Path) {
    let mut seen = usize::MAX;
    for _ in 0..1_000 {
        let ran = dpa.run_until_idle();
        path.pe.progress();
        let now = path.received.borrow().len();
        if ran == 0 && now == seen {
            return;
        }
        seen = now;
    }
    panic!("the DPA never went idle");
}

#[test]
fn a_dpa_consumer_receives_only_what_it_acked_and_nothing_is_dropped() {
    let (dpa, path) = hold_path(SchedMode::Deterministic { seed: 3 }, 8, 3);
    for i in 0..6 {
        path.cpu_producer
            .send(echo_msg(i).as_bytes(), path.dpa_consumer.id(), i)
            .unwrap();
    }
    settle(&dpa, &path);
    assert_eq!(
        path.received.borrow().len(),
        3,
        "only 3 credits were posted"
    );
    assert_eq!(
        path.cpu_producer.in_flight(),
        3,
        "the other sends wait, not fail"
    );

    dpa.rpc(&CONSUMER_ACK, (path.dpa_consumer.dpa_handle().raw(), 3))
        .unwrap();
    settle(&dpa, &path);
    assert_eq!(path.received.borrow().len(), 6);
    let tokens: Vec<u64> = path
        .received
        .borrow()
        .iter()
        .map(|(b, len, _)| {
            ImmMessage::from_bytes(&b[..*len])
                .unwrap()
                .view::<Echo>()
                .unwrap()
                .token
        })
        .collect();
    assert_eq!(
        tokens,
        [0, 1, 2, 3, 4, 5],
        "in order, none lost, none duplicated"
    );
    path.pe.progress();
    assert_eq!(path.cpu_producer.in_flight(), 0);
}

/// Whether `fd` becomes readable within `timeout_ms`.
fn readable_within(fd: std::os::fd::RawFd, timeout_ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut pfd, 1, timeout_ms) == 1 }
}

#[test]
fn posting_credits_wakes_the_pe_of_a_producer_waiting_for_them() {
    let (dpa, path) = hold_path(SchedMode::Sleep, 4, 0);
    path.cpu_producer
        .send(echo_msg(0).as_bytes(), path.dpa_consumer.id(), 0)
        .unwrap();
    path.pe.progress();
    path.pe.request_notification();
    let fd = path.pe.notification_handle().unwrap();
    assert!(
        !readable_within(fd, 0),
        "nothing can happen without a credit"
    );

    // The DPA posts one receive: the send waiting for it can go, so the sleeping PE is woken.
    dpa.rpc(&CONSUMER_ACK, (path.dpa_consumer.dpa_handle().raw(), 1))
        .unwrap();
    assert!(
        readable_within(fd, 10_000),
        "the PE was not woken when the credit appeared"
    );
    path.wait_received(1);
    path.pe.progress();
    assert_eq!(path.cpu_producer.in_flight(), 0);
}

#[test]
fn order_is_kept_per_producer_with_two_producers() {
    let dpa = start_dpa(echo_app(), SchedMode::BusyPoll);
    let opts = PathOptions {
        producers: 2,
        ..PathOptions::default()
    };
    let path = Path::new(&dpa, &ECHO, opts, |a| bytes_of(&a).to_vec());
    let second = CpuProducer::builder(&path.to_dpa, &path.pe)
        .num_send_tasks(DEPTH)
        .start()
        .unwrap();
    assert_eq!(
        CpuProducer::builder(&path.to_dpa, &path.pe)
            .start()
            .unwrap_err()
            .code(),
        ErrorCode::NoMemory,
        "the queue allows two producers"
    );
    let producers = [&path.cpu_producer, &second];
    let total = 2_000u64;
    let (mut sent, mut next) = ([0u64; 2], [0u64; 2]);
    let mut got = 0;
    while got < 2 * total {
        for (p, producer) in producers.iter().enumerate() {
            // Both producers share the consumer's credits; stay within the receives posted.
            if sent[p] < total
                && producer.in_flight() < DEPTH / 4
                && (sent[0] + sent[1]) - got < u64::from(DEPTH) / 2
            {
                let msg = ImmMessage::new(
                    0,
                    &Echo {
                        token: sent[p],
                        timestamp_ns: 0,
                        tag: p as u64,
                    },
                );
                producer
                    .send(msg.as_bytes(), path.dpa_consumer.id(), 0)
                    .unwrap();
                sent[p] += 1;
            }
        }
        path.pe.progress();
        dpa.check().unwrap();
        while let Some((bytes, len, _)) = path.received.borrow_mut().pop_front() {
            let echo: Echo = ImmMessage::from_bytes(&bytes[..len])
                .unwrap()
                .view()
                .unwrap();
            let p = echo.tag as usize;
            assert_eq!(
                echo.token, next[p],
                "producer {p}: out of order, lost or duplicated"
            );
            next[p] += 1;
            got += 1;
            path.cpu_consumer.post_recv(0).unwrap();
        }
    }
    assert_eq!(next, [total, total]);
}

// ---- DPA device-side rules ----

#[test]
fn consumer_ack_beyond_its_queue_is_a_fatal_invalid_value() {
    let dpa = start_dpa(echo_app(), SchedMode::BusyPoll);
    let path = Path::new(
        &dpa,
        &ECHO,
        PathOptions {
            depth: 8,
            credits: 8,
            receives: 8,
            ..PathOptions::default()
        },
        |a| bytes_of(&a).to_vec(),
    );
    let e = dpa
        .rpc(&CONSUMER_ACK, (path.dpa_consumer.dpa_handle().raw(), 1))
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue);
    assert!(
        e.message().contains("exceeds the consumer's queue of 8"),
        "{e}"
    );
    assert_eq!(dpa.error().unwrap().code(), ErrorCode::InvalidValue);
    assert_eq!(
        dpa.state(),
        CtxState::Stopping,
        "a fatal error stops the context"
    );
}

thread_kernel! {
    /// Replies to each message without asking whether the CPU consumer has a receive posted.
    pub BLIND_ECHO: fn blind_echo(arg: u64) {
        // SAFETY: the test writes a MsgqPathArgs at `arg`.
        let p: &MsgqPathArgs = unsafe { thread::arg_ref(arg) };
        let mut completions = ConsumerCompletion::new(p.consumer_completion);
        let producer = Producer::new(p.producer);
        while let Some(msg) = completions.get() {
            producer.post_send_imm_only(p.cpu_consumer_id, msg.imm(), p.submit_flags).unwrap();
            completions.ack(1);
        }
        completions.request_notification();
        thread::reschedule()
    }
}

/// A path whose CPU consumer has no receive posted.
fn no_receives<A>(dpa: &Dpa, kernel: &dpakit_dev::ThreadKernel<A>) -> Path {
    let opts = PathOptions {
        depth: 8,
        credits: 8,
        receives: 0,
        ..PathOptions::default()
    };
    Path::new(dpa, kernel, opts, |a| bytes_of(&a).to_vec())
}

#[test]
fn a_dpa_send_with_no_receive_posted_is_a_fatal_empty() {
    let app = App::new("rules")
        .thread_kernel(&BLIND_ECHO)
        .rpc_kernel(&CONSUMER_ACK);
    let dpa = start_dpa(app, SchedMode::BusyPoll);
    let path = no_receives(&dpa, &BLIND_ECHO);
    path.cpu_producer
        .send(echo_msg(1).as_bytes(), path.dpa_consumer.id(), 1)
        .unwrap();
    let e = path.wait_fault();
    assert_eq!(e.code(), ErrorCode::Empty);
    assert!(e.message().contains("no receive posted"), "{e}");
    assert!(path.thread.is_faulted());
}

#[test]
fn the_kits_kernels_wait_for_a_receive_instead_of_sending_into_none() {
    for mode in [
        SchedMode::BusyPoll,
        SchedMode::Sleep,
        SchedMode::Deterministic { seed: 9 },
    ] {
        let dpa = start_dpa(echo_app(), mode);
        let path = no_receives(&dpa, &ECHO);
        path.cpu_producer
            .send(echo_msg(1).as_bytes(), path.dpa_consumer.id(), 1)
            .unwrap();
        for _ in 0..1_000 {
            path.pe.progress();
        }
        assert_eq!(dpa.check(), Ok(()), "{mode:?}");
        assert!(path.received.borrow().is_empty());
        path.cpu_consumer.post_recv(0).unwrap();
        path.wait_received(1);
        assert_eq!(dpa.check(), Ok(()), "{mode:?}");
        assert_eq!(path.received.borrow()[0].0[..], echo_msg(1).as_bytes()[..]);
    }
}

thread_kernel! {
    /// Panics on its first message.
    pub PANICS: fn panics(_arg: u64) {
        panic!("kernel bug on purpose");
    }
}

#[test]
fn a_kernel_panic_is_a_fatal_error_not_an_abort() {
    let app = App::new("rules")
        .thread_kernel(&PANICS)
        .rpc_kernel(&CONSUMER_ACK);
    let dpa = start_dpa(app, SchedMode::BusyPoll);
    let path = Path::new(&dpa, &PANICS, PathOptions::default(), |a| {
        bytes_of(&a).to_vec()
    });
    path.cpu_producer
        .send(echo_msg(1).as_bytes(), path.dpa_consumer.id(), 1)
        .unwrap();
    let e = path.wait_fault();
    assert_eq!(e.code(), ErrorCode::Unexpected);
    assert!(
        e.message()
            .starts_with("kernel `panics`: panicked at model/tests/rules.rs:")
            && e.message().ends_with(": kernel bug on purpose"),
        "{e}"
    );
    assert_eq!(dpa.state(), CtxState::Stopping);
    assert!(path.thread.is_faulted());
    // The context refuses new work with the recorded error.
    assert_eq!(dpa.mem_alloc(8).unwrap_err().code(), ErrorCode::Unexpected);
}

#[test]
fn kernels_outside_the_app_are_not_found() {
    let dpa = start_dpa(App::new("empty"), SchedMode::BusyPoll);
    let e = DpaThread::builder(&dpa, &ECHO, 0).start().unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotFound);
    // Named as the host function it is, not as a number.
    assert!(e.message().starts_with("`echo` (0x"), "{e}");
    assert_eq!(
        dpa.rpc(&CONSUMER_ACK, (0, 0)).unwrap_err().code(),
        ErrorCode::NotFound
    );
}

#[test]
fn a_dpa_needs_an_app() {
    let e = Dpa::builder(&default_dev()).start().unwrap_err();
    assert_eq!(e.code(), ErrorCode::BadState);
}

// ---- DMA copy ----

dpakit_abi::pod_struct! {
    /// What RAW_DMA copies.
    #[derive(Debug, Default)]
    pub struct RawDmaArgs {
        pub path: MsgqPathArgs,
        pub dst_mmap: MmapHandle,
        pub src_mmap: MmapHandle,
        pub dst_addr: u64,
        pub src_addr: u64,
        pub length: u64,
    }
}

thread_kernel! {
    /// On each message, performs exactly the DMA copy its arguments describe.
    pub RAW_DMA: fn raw_dma(arg: u64) {
        // SAFETY: the test writes a RawDmaArgs at `arg`.
        let args: &RawDmaArgs = unsafe { thread::arg_ref(arg) };
        let p = &args.path;
        let mut completions = ConsumerCompletion::new(p.consumer_completion);
        let producer = Producer::new(p.producer);
        while let Some(msg) = completions.get() {
            let copy = DmaCopy {
                dst_mmap: args.dst_mmap,
                dst_addr: args.dst_addr,
                src_mmap: args.src_mmap,
                src_addr: args.src_addr,
                length: args.length as usize,
            };
            producer.dma_copy(p.cpu_consumer_id, copy, msg.imm(), p.submit_flags).unwrap();
            completions.ack(1);
            Consumer::new(p.consumer).ack(1);
        }
        completions.request_notification();
        thread::reschedule()
    }
}

struct DmaSetup {
    dpa: Dpa,
    src: Mmap,
    dst: Mmap,
    src_h: MmapHandle,
    dst_h: MmapHandle,
}

fn dma_setup(dst_access: AccessFlags) -> DmaSetup {
    let app = App::new("rules")
        .thread_kernel(&RAW_DMA)
        .rpc_kernel(&CONSUMER_ACK);
    let dpa = start_dpa(app, SchedMode::BusyPoll);
    let src = Mmap::alloc(4096).unwrap();
    src.set_permissions(AccessFlags::LOCAL_READ_ONLY).unwrap();
    src.start().unwrap();
    let dst = Mmap::alloc(4096).unwrap();
    dst.set_permissions(dst_access).unwrap();
    dst.start().unwrap();
    // SAFETY: the source mmap owns 4096 bytes and nothing else uses them yet.
    unsafe { std::ptr::write_bytes(src.range().0, 0xab, 4096) };
    let src_h = dpa.mmap_handle(&src).unwrap();
    let dst_h = dpa.mmap_handle(&dst).unwrap();
    DmaSetup {
        dpa,
        src,
        dst,
        src_h,
        dst_h,
    }
}

/// Runs RAW_DMA once: `length` bytes from `src` (+`src_off`) to `dst` (+`dst_off`).
fn run_dma(
    s: &DmaSetup,
    dst: (&Mmap, MmapHandle, u64),
    src: (&Mmap, MmapHandle, u64),
    length: u64,
) -> Path {
    let path = Path::new(&s.dpa, &RAW_DMA, PathOptions::default(), |p| {
        bytes_of(&RawDmaArgs {
            path: p,
            dst_mmap: dst.1,
            src_mmap: src.1,
            dst_addr: dst.0.range().0 as u64 + dst.2,
            src_addr: src.0.range().0 as u64 + src.2,
            length,
        })
        .to_vec()
    });
    path.cpu_producer
        .send(b"go", path.dpa_consumer.id(), 0)
        .unwrap();
    path
}

#[test]
fn dma_copy_moves_the_bytes_then_sends_the_immediate() {
    let s = dma_setup(AccessFlags::LOCAL_READ_WRITE);
    let path = run_dma(&s, (&s.dst, s.dst_h, 100), (&s.src, s.src_h, 0), 1000);
    path.wait_received(1);
    assert_eq!(s.dpa.check(), Ok(()));
    let (bytes, len, _) = path.received.borrow()[0];
    assert_eq!(&bytes[..len], b"go");
    // SAFETY: the copy completed before its immediate arrived; nothing writes the mmap now.
    let dst = unsafe { std::slice::from_raw_parts(s.dst.range().0, 4096) };
    assert!(dst[100..1100].iter().all(|&b| b == 0xab));
    assert!(dst[..100].iter().chain(&dst[1100..]).all(|&b| b == 0));
}

#[test]
fn dma_copy_out_of_range_is_a_fatal_invalid_value() {
    let s = dma_setup(AccessFlags::LOCAL_READ_WRITE);
    let path = run_dma(&s, (&s.dst, s.dst_h, 4000), (&s.src, s.src_h, 0), 200);
    let e = path.wait_fault();
    assert_eq!(e.code(), ErrorCode::InvalidValue);
    assert!(e.message().contains("outside the destination mmap"), "{e}");
}

#[test]
fn dma_copy_source_range_is_checked_too() {
    let s = dma_setup(AccessFlags::LOCAL_READ_WRITE);
    let path = run_dma(&s, (&s.dst, s.dst_h, 0), (&s.src, s.src_h, 4090), 64);
    let e = path.wait_fault();
    assert_eq!(e.code(), ErrorCode::InvalidValue);
    assert!(e.message().contains("outside the source mmap"), "{e}");
}

#[test]
fn dma_copy_needs_a_writable_destination() {
    let s = dma_setup(AccessFlags::LOCAL_READ_ONLY);
    let path = run_dma(&s, (&s.dst, s.dst_h, 0), (&s.src, s.src_h, 0), 64);
    let e = path.wait_fault();
    assert_eq!(e.code(), ErrorCode::NotPermitted);
}

#[test]
fn dma_copy_ranges_must_not_overlap() {
    let s = dma_setup(AccessFlags::LOCAL_READ_WRITE);
    // The writable mmap as both source and destination, ranges 10 bytes apart.
    let path = run_dma(&s, (&s.dst, s.dst_h, 10), (&s.dst, s.dst_h, 0), 64);
    let e = path.wait_fault();
    assert_eq!(e.code(), ErrorCode::InvalidValue);
    assert!(e.message().contains("overlap"), "{e}");
}

#[test]
fn mmap_handles_need_a_started_mmap() {
    let dpa = start_dpa(echo_app(), SchedMode::BusyPoll);
    let m = Mmap::alloc(64).unwrap();
    // DOCA's doca_mmap_dev_get_dpa_handle says NOT_PERMITTED before start.
    assert_eq!(
        dpa.mmap_handle(&m).unwrap_err().code(),
        ErrorCode::NotPermitted
    );
}

// ---- Notification completions ----

dpakit_abi::pod_struct! {
    /// Echo path plus the notification completion of another thread.
    #[derive(Debug, Default)]
    pub struct NotifyArgs {
        pub path: MsgqPathArgs,
        pub target: dpakit_abi::handles::NotificationCompletionHandle,
    }
}

thread_kernel! {
    /// Echoes, and triggers the target thread once per message.
    pub NOTIFY_OTHER: fn notify_other(arg: u64) {
        // SAFETY: the test writes a NotifyArgs at `arg`.
        let args: &NotifyArgs = unsafe { thread::arg_ref(arg) };
        let p = &args.path;
        let mut completions = ConsumerCompletion::new(p.consumer_completion);
        let producer = Producer::new(p.producer);
        let mut reports = dpakit_dev::completion::Completion::new(p.producer_completion);
        while let Some(msg) = completions.get() {
            thread::notify(args.target);
            producer.post_send_imm_only(p.cpu_consumer_id, msg.imm(), p.submit_flags).unwrap();
            completions.ack(1);
            Consumer::new(p.consumer).ack(1);
            while reports.get().is_some() {
                reports.ack(1);
            }
        }
        completions.request_notification();
        thread::reschedule()
    }
}

thread_kernel! {
    /// Does nothing but count its activations (the host reads them).
    pub IDLE: fn idle(_arg: u64) {
        thread::reschedule()
    }
}

#[test]
fn thread_notify_triggers_the_target_thread() {
    for mode in [
        SchedMode::BusyPoll,
        SchedMode::Sleep,
        SchedMode::Deterministic { seed: 3 },
    ] {
        let app = App::new("rules")
            .thread_kernel(&NOTIFY_OTHER)
            .thread_kernel(&IDLE)
            .rpc_kernel(&CONSUMER_ACK);
        let dpa = start_dpa(app, mode);
        let target = DpaThread::builder(&dpa, &IDLE, 0).start().unwrap();
        let notification = dpa::NotificationCompletion::start(&dpa, &target).unwrap();
        target.run().unwrap();
        let handle = notification.dpa_handle();
        let path = Path::new(&dpa, &NOTIFY_OTHER, PathOptions::default(), |p| {
            bytes_of(&NotifyArgs {
                path: p,
                target: handle,
            })
            .to_vec()
        });
        for i in 0..3 {
            path.cpu_producer
                .send(echo_msg(i).as_bytes(), path.dpa_consumer.id(), i)
                .unwrap();
            path.wait_received(i as usize + 1);
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while target.activations() < i + 1 {
                path.pe.progress();
                assert!(
                    std::time::Instant::now() < deadline,
                    "{mode:?}: target not triggered"
                );
                std::thread::yield_now();
            }
        }
        assert_eq!(dpa.check(), Ok(()), "{mode:?}");
        // The host can trigger it too.
        target.notify();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while target.activations() < 4 {
            dpa.step();
            assert!(
                std::time::Instant::now() < deadline,
                "{mode:?}: host notify lost"
            );
            std::thread::yield_now();
        }
    }
}

#[test]
fn a_forged_handle_is_a_fatal_error_not_a_crash() {
    let dpa = start_dpa(echo_app(), SchedMode::BusyPoll);
    let e = dpa.rpc(&CONSUMER_ACK, (0xdead_beef, 1)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue);
    assert!(e.message().contains("invalid DPA consumer handle"), "{e}");
}

// ---- Context state machine ----

#[test]
fn contexts_report_every_state_change() {
    use std::sync::{Arc, Mutex};
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let app = App::new("rules")
        .thread_kernel(&PANICS)
        .rpc_kernel(&CONSUMER_ACK);
    let dpa = Dpa::builder(&default_dev())
        .app(app)
        .on_state_changed(move |from, to| log.lock().unwrap().push((from, to)))
        .start()
        .unwrap();
    use CtxState::*;
    assert_eq!(
        *seen.lock().unwrap(),
        [(Idle, Starting), (Starting, Running)]
    );

    // A fatal error (here a kernel panic) moves the context to STOPPING, and says so.
    let path = Path::new(&dpa, &PANICS, PathOptions::default(), |a| {
        bytes_of(&a).to_vec()
    });
    path.cpu_producer
        .send(echo_msg(1).as_bytes(), path.dpa_consumer.id(), 1)
        .unwrap();
    path.wait_fault();
    assert_eq!(seen.lock().unwrap().last(), Some(&(Running, Stopping)));

    let pe = Pe::new().unwrap();
    let q = Msgq::builder(&default_dev())
        .dpa_consumer(&start_dpa(echo_app(), SchedMode::BusyPoll))
        .start()
        .unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = events.clone();
    let producer = CpuProducer::builder(&q, &pe)
        .on_state_changed(move |from, to| log.lock().unwrap().push((from, to)))
        .start()
        .unwrap();
    assert_eq!(producer.state(), Running);
    producer.stop().unwrap();
    assert_eq!(producer.state(), Idle);
    assert_eq!(
        *events.lock().unwrap(),
        [
            (Idle, Starting),
            (Starting, Running),
            (Running, Stopping),
            (Stopping, Idle)
        ]
    );
    assert_eq!(
        producer.send(&[1], 1, 0).unwrap_err().code(),
        ErrorCode::BadState,
        "a stopped context takes no tasks"
    );
}
