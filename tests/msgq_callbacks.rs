//! The CPU endpoints of a MsgQ used from their own callbacks, as DOCA programs use them: the
//! receive callback posts the next receive, so one receive task carries a whole exchange.

#[path = "support/echo_path.rs"]
mod echo_path;

use dpakit::abi::{Echo, ErrorCode, ImmMessage};
use dpakit::comch::{CpuConsumer, CpuProducer};
use dpakit::dpa::Dpa;
use dpakit::soft::SchedMode;
use dpakit::soft::SoftSettings;
use dpakit::{kit_app, open_dpa_dev};
use echo_path::EchoPath;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// What the receive callback saw: each echo's sequence number and its receive's user data,
/// and each repost's result.
#[derive(Default)]
struct Seen {
    seqs: Vec<u32>,
    user_data: Vec<u64>,
    reposts: Vec<Result<(), ErrorCode>>,
}

/// The kit's kernels on one busy-polling worker.
fn busy_dpa() -> Dpa {
    Dpa::builder(&open_dpa_dev().unwrap())
        .app(kit_app())
        .sched_mode(SchedMode::BusyPoll)
        .workers(1)
        .start()
        .unwrap()
}

#[test]
fn one_receive_task_reposted_in_its_callback_carries_every_reply() {
    const ROUNDS: u32 = 1_000;
    let path = EchoPath::new(busy_dpa());
    let producer = CpuProducer::builder(&path.to_dpa, &path.pe)
        .start()
        .unwrap();

    let seen = Rc::new(RefCell::new(Seen::default()));
    let log = seen.clone();
    let consumer = CpuConsumer::builder(&path.from_dpa, &path.pe)
        .num_recv_tasks(1)
        .on_recv(move |r| {
            if r.status != ErrorCode::Success {
                return; // flushed by the stop at the end
            }
            let mut log = log.borrow_mut();
            log.seqs
                .push(ImmMessage::from_bytes(r.imm).unwrap().header.seq);
            log.user_data.push(r.user_data.get::<u64>());
            log.reposts.push(
                r.post_recv(r.user_data.get::<u64>() + 1)
                    .map_err(|e| e.code()),
            );
        })
        .start()
        .unwrap();

    path.run(consumer.id());
    consumer.post_recv(0).unwrap();

    let deadline = Instant::now() + Duration::from_secs(30);
    for seq in 0..ROUNDS {
        let msg = ImmMessage::new(seq, &Echo::default());
        producer
            .send(msg.as_bytes(), path.dpa_consumer.id(), u64::from(seq))
            .unwrap();
        while seen.borrow().seqs.len() <= seq as usize {
            path.pe.progress();
            if let Some(Err(e)) = seen.borrow().reposts.last() {
                panic!(
                    "the repost inside the callback of reply {} failed: {e:?}",
                    seq - 1
                );
            }
            assert!(Instant::now() < deadline, "reply {seq} never came");
        }
    }
    let seen = seen.borrow();
    assert_eq!(
        seen.seqs,
        (0..ROUNDS).collect::<Vec<_>>(),
        "each reply once, in order"
    );
    assert_eq!(
        seen.user_data,
        (0..u64::from(ROUNDS)).collect::<Vec<_>>(),
        "each receive carries the user data of the post that made it (the first 0, then each \
         repost one more)"
    );
    assert!(
        seen.reposts.iter().all(Result::is_ok),
        "a repost inside the callback failed: {:?}",
        seen.reposts.iter().find(|r| r.is_err())
    );
    assert_eq!(consumer.posted(), 1, "the last repost is posted");
    consumer.stop().unwrap();
    path.dpa.check().unwrap();
}

#[test]
fn a_consumer_without_a_callback_hands_out_every_reply_as_a_value() {
    const ROUNDS: u32 = 500;
    const TASKS: u32 = 4;
    let path = EchoPath::new(busy_dpa());
    let producer = CpuProducer::builder(&path.to_dpa, &path.pe)
        .start()
        .unwrap();
    let consumer = CpuConsumer::builder(&path.from_dpa, &path.pe)
        .num_recv_tasks(TASKS)
        .start()
        .unwrap();
    path.run(consumer.id());
    for i in 0..u64::from(TASKS) {
        consumer.post_recv(i).unwrap();
    }
    // Every receive posted: one more is refused until a message is taken.
    assert_eq!(
        consumer.post_recv(99).unwrap_err().code(),
        ErrorCode::NoMemory
    );
    let wait = Duration::from_secs(10);
    for seq in 0..ROUNDS {
        let msg = ImmMessage::new(seq, &Echo::default());
        producer
            .send(msg.as_bytes(), path.dpa_consumer.id(), u64::from(seq))
            .unwrap();
        let reply = consumer.next_recv(wait).unwrap().expect("the echo");
        assert_eq!(reply.status, ErrorCode::Success);
        assert_eq!(ImmMessage::from_bytes(reply.imm()).unwrap().header.seq, seq);
        assert_eq!(
            reply.user_data.get::<u64>(),
            u64::from(seq % TASKS),
            "receives complete in order"
        );
        // Its task is free again: post it with the user data it had.
        consumer.post_recv(reply.user_data).unwrap();
    }
    assert_eq!(consumer.try_recv(), None);
    consumer.stop().unwrap();
    path.dpa.check().unwrap();
}
