//! Ordinary and careless use of paths, queues and endpoints through the public API: errors that
//! name the rule or correct waiting, never a dead DPA context, a hang or a leak.

use dpakit::abi::{ErrorCode, SubmitFlags};
use dpakit::comch::{CpuProducer, DpaConsumer};
use dpakit::dpa::{ConsumerCompletion, Dpa, DpaThread};
use dpakit::msgq::Msgq;
use dpakit::pe::Pe;
use dpakit::soft::SchedMode;
use dpakit::soft::SoftSettings;
use dpakit::{MsgqPath, kernels, kit_app, open_dpa_dev};
use std::time::Duration;

const MODES: [SchedMode; 3] = [
    SchedMode::BusyPoll,
    SchedMode::Sleep,
    SchedMode::Deterministic { seed: 7 },
];

fn dpa(mode: SchedMode) -> Dpa {
    Dpa::builder(&open_dpa_dev().unwrap())
        .app(kit_app())
        .sched_mode(mode)
        .workers(1)
        .start()
        .unwrap()
}

fn token(i: u64) -> [u8; 8] {
    i.to_le_bytes()
}

#[test]
fn sending_more_than_the_depth_before_receiving_waits_instead_of_failing() {
    for mode in MODES {
        let dpa = dpa(mode);
        let pe = Pe::new().unwrap();
        let depth = 4;
        let path = MsgqPath::builder(&dpa, &pe, &kernels::ECHO)
            .depth(depth)
            .start()
            .unwrap();
        for burst in [depth + 1, 2 * depth, 5 * depth] {
            for i in 0..u64::from(burst) {
                path.send(&token(i)).unwrap();
            }
            for i in 0..u64::from(burst) {
                let r = path.recv(Duration::from_secs(10)).unwrap();
                assert_eq!(&r.msg.as_bytes()[..8], &token(i), "{mode:?} burst {burst}");
            }
        }
        assert_eq!(dpa.check(), Ok(()), "{mode:?}");
    }
}

#[test]
fn optimized_reports_keep_working() {
    for mode in MODES {
        let dpa = dpa(mode);
        let pe = Pe::new().unwrap();
        let path = MsgqPath::builder(&dpa, &pe, &kernels::ECHO)
            .depth(8)
            .submit_flags(SubmitFlags::OPTIMIZE_REPORTS)
            .start()
            .unwrap();
        for i in 0..2_000u64 {
            path.send(&token(i)).unwrap();
            let r = path.recv(Duration::from_secs(10)).unwrap();
            assert_eq!(&r.msg.as_bytes()[..8], &token(i), "{mode:?}");
        }
        assert_eq!(dpa.check(), Ok(()), "{mode:?}");
    }
}

#[test]
fn a_failed_path_start_leaks_no_device_memory() {
    let dpa = dpa(SchedMode::BusyPoll);
    let pe = Pe::new().unwrap();
    // Leave 64 KiB of device memory: every failed start below would leak a few hundred bytes.
    let limit = 256 << 20;
    let hog = dpa.mem_alloc(limit - (64 << 10)).unwrap();
    for _ in 0..1_000 {
        // A depth no completion context accepts: fails after the path allocated its blocks.
        let e = MsgqPath::builder(&dpa, &pe, &kernels::ECHO)
            .depth(1 << 30)
            .start()
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidValue, "{e}");
    }
    dpa.mem_free(hog).unwrap();
    let _all = dpa.mem_alloc(limit).unwrap();
}

#[test]
fn completion_contexts_of_one_dpa_are_refused_by_a_thread_of_another() {
    let a = dpa(SchedMode::BusyPoll);
    let b = dpa(SchedMode::BusyPoll);
    let thread_b = DpaThread::builder(&b, &kernels::ECHO)
        .start_deferred()
        .unwrap()
        .0;
    let e = ConsumerCompletion::builder(&a)
        .dpa_thread(&thread_b)
        .start()
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue, "{e}");
    let e = dpakit::dpa::DpaCompletion::start(&a, 8, Some(&thread_b)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue, "{e}");
    let e = dpakit::dpa::NotificationCompletion::start(&a, &thread_b).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue, "{e}");
}

/// A CPU→DPA queue into the sink kernel's completion context, with a CPU producer whose
/// completions (user data, status) are recorded. No DPA consumer yet, and no credits.
struct SinkQueue {
    statuses: std::rc::Rc<std::cell::RefCell<Vec<(u64, ErrorCode)>>>,
    producer: CpuProducer,
    completion: ConsumerCompletion,
    _thread: DpaThread,
    to_dpa: Msgq,
    pe: Pe,
    dpa: Dpa,
}

impl SinkQueue {
    fn new(send_tasks: u32) -> SinkQueue {
        let dpa = dpa(SchedMode::BusyPoll);
        let pe = Pe::new().unwrap();
        let to_dpa = Msgq::builder(dpa.dev()).dpa_consumer(&dpa).start().unwrap();
        let statuses = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let sink = statuses.clone();
        let producer = CpuProducer::builder(&to_dpa, &pe)
            .num_send_tasks(send_tasks)
            .on_send_complete(move |c| sink.borrow_mut().push((c.user_data.get::<u64>(), c.status)))
            .start()
            .unwrap();
        let thread = DpaThread::builder(&dpa, &kernels::SINK)
            .start_deferred()
            .unwrap()
            .0;
        let completion = ConsumerCompletion::builder(&dpa)
            .dpa_thread(&thread)
            .start()
            .unwrap();
        SinkQueue {
            statuses,
            producer,
            completion,
            _thread: thread,
            to_dpa,
            pe,
            dpa,
        }
    }
}

#[test]
fn a_send_waiting_for_a_destroyed_consumer_fails_and_never_reaches_its_successor() {
    let q = SinkQueue::new(4);
    let (dpa, pe, to_dpa, producer, cc, statuses) = (
        &q.dpa,
        &q.pe,
        &q.to_dpa,
        &q.producer,
        &q.completion,
        &q.statuses,
    );
    let first = DpaConsumer::builder(to_dpa, cc).start().unwrap();
    let first_id = first.id();
    // No credits were posted: the send waits for one.
    producer.send(&token(1), first_id, 1).unwrap();
    pe.progress();
    assert_eq!(producer.in_flight(), 1);
    drop(first);
    let second = DpaConsumer::builder(to_dpa, cc).start().unwrap();
    assert_ne!(
        second.id(),
        first_id,
        "consumer ids are not reused while sends may name them"
    );
    dpa.rpc(dpa.app().consumer_ack(), (second.dpa_handle(), 4))
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while producer.in_flight() > 0 {
        pe.progress();
        assert!(
            std::time::Instant::now() < deadline,
            "the send stays in flight"
        );
    }
    assert_eq!(statuses.borrow().len(), 1);
    let (user_data, status) = statuses.borrow()[0];
    assert_eq!(user_data, 1);
    assert_eq!(status, ErrorCode::NotFound);
    producer.stop().unwrap();
}

#[test]
fn stopping_a_producer_with_sends_in_flight_completes_them_with_an_error() {
    use dpakit::ctx::CtxState;
    let q = SinkQueue::new(8);
    let (pe, producer, statuses) = (&q.pe, &q.producer, &q.statuses);
    let consumer = DpaConsumer::builder(&q.to_dpa, &q.completion)
        .start()
        .unwrap();
    // No credits: every send waits.
    for i in 0..5 {
        producer.send(&token(i), consumer.id(), i).unwrap();
    }
    pe.progress();
    assert_eq!(producer.in_flight(), 5);
    producer.stop().unwrap();
    assert_eq!(producer.state().unwrap(), CtxState::Idle);
    assert_eq!(producer.in_flight(), 0);
    let done = statuses.borrow().clone();
    assert_eq!(
        done.len(),
        5,
        "every outstanding send completes exactly once"
    );
    for (i, (user_data, status)) in done.into_iter().enumerate() {
        assert_eq!(user_data, i as u64, "in order");
        assert_ne!(status, ErrorCode::Success, "through the error outcome");
    }
}

#[test]
fn a_path_needs_the_kernel_s_argument_type() {
    use dpakit::abi::args::RankedPathArgs;
    let dpa = dpa(SchedMode::BusyPoll);
    let pe = Pe::new().unwrap();
    let e = MsgqPath::builder(&dpa, &pe, &kernels::RANKED_ECHO)
        .start()
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue, "{e}");
    assert!(e.to_string().contains("RankedPathArgs"), "{e}");
    let path = MsgqPath::builder(&dpa, &pe, &kernels::RANKED_ECHO)
        .args(|path| RankedPathArgs {
            path,
            rank: 3,
            reserved: 0,
        })
        .start()
        .unwrap();
    let msg = dpakit::ImmMessage::new(5, &dpakit::abi::Echo::default());
    let reply = path.round_trip(&msg, Duration::from_secs(10)).unwrap();
    assert_eq!(reply.msg.header.seq, 5);
}
