//! The CPU endpoints of a MsgQ used from their own callbacks, as DOCA programs use them: the
//! receive callback posts the next receive, so one receive task carries a whole exchange.

use dpakit::abi::args::{MsgqPathArgs, ServeState};
use dpakit::abi::{Echo, ErrorCode, ImmMessage, SubmitFlags};
use dpakit::comch::{CpuConsumer, CpuProducer, DpaConsumer, DpaProducer};
use dpakit::dpa::{ConsumerCompletion, Dpa, DpaCompletion, DpaThread};
use dpakit::msgq::Msgq;
use dpakit::pe::Pe;
use dpakit::soft::SchedMode;
use dpakit::{kernels, kit_app, open_dpa_dev};
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

#[test]
fn one_receive_task_reposted_in_its_callback_carries_every_reply() {
    const ROUNDS: u32 = 1_000;
    let dpa = Dpa::builder(&open_dpa_dev().unwrap())
        .app(kit_app())
        .sched_mode(SchedMode::BusyPoll)
        .workers(1)
        .start()
        .unwrap();
    let pe = Pe::new().unwrap();
    let to_dpa = Msgq::builder(dpa.dev()).dpa_consumer(&dpa).start().unwrap();
    let from_dpa = Msgq::builder(dpa.dev()).dpa_producer(&dpa).start().unwrap();
    let state = dpa
        .mem_alloc_init(&ServeState {
            report_every: 1,
            sends: 0,
        })
        .unwrap();
    let (thread, args) = DpaThread::builder(&dpa, &kernels::ECHO)
        .local_storage(state)
        .start_deferred()
        .unwrap();
    let consumer_completion = ConsumerCompletion::builder(&dpa)
        .dpa_thread(&thread)
        .start()
        .unwrap();
    let dpa_consumer = DpaConsumer::builder(&to_dpa, &consumer_completion)
        .start()
        .unwrap();
    let producer_completion = DpaCompletion::start(&dpa, 64, None).unwrap();
    let dpa_producer = DpaProducer::builder(&from_dpa, &producer_completion)
        .start()
        .unwrap();
    let producer = CpuProducer::builder(&to_dpa, &pe).start().unwrap();

    let seen = Rc::new(RefCell::new(Seen::default()));
    let log = seen.clone();
    let consumer = CpuConsumer::builder(&from_dpa, &pe)
        .num_recv_tasks(1)
        .on_recv(move |r| {
            if r.status != ErrorCode::Success {
                return; // flushed by the stop at the end
            }
            let mut log = log.borrow_mut();
            log.seqs
                .push(ImmMessage::from_bytes(r.imm).unwrap().header.seq);
            log.user_data.push(r.user_data);
            log.reposts
                .push(r.post_recv(r.user_data + 1).map_err(|e| e.code()));
        })
        .start()
        .unwrap();

    let block = MsgqPathArgs {
        consumer_completion: consumer_completion.dpa_handle(),
        consumer: dpa_consumer.dpa_handle(),
        producer: dpa_producer.dpa_handle(),
        producer_completion: producer_completion.dpa_handle(),
        cpu_consumer_id: consumer.id(),
        submit_flags: SubmitFlags::FLUSH,
    };
    args.write(&block).unwrap();
    thread.run().unwrap();
    dpa.rpc(
        dpa.app().consumer_ack(),
        (dpa_consumer.dpa_handle().raw(), 1),
    )
    .unwrap();
    consumer.post_recv(0).unwrap();

    let deadline = Instant::now() + Duration::from_secs(30);
    for seq in 0..ROUNDS {
        let msg = ImmMessage::new(seq, &Echo::default());
        producer
            .send(msg.as_bytes(), dpa_consumer.id(), u64::from(seq))
            .unwrap();
        while seen.borrow().seqs.len() <= seq as usize {
            pe.progress();
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
    dpa.check().unwrap();
}
