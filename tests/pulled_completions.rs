//! Completions as values: a CPU producer, a DMA context and a sync event context built with
//! `pull_completions` hand out each completion, in order, with its typed user data; one not
//! taken yet holds its task's place, so work past the pool is `NO_MEMORY` (nothing dropped, no
//! queue growing) until it is taken; a context reports to a callback or as values, never both.

use dpakit::abi::pod_struct;
use dpakit::buf::BufInventory;
use dpakit::comch::{CpuProducer, DpaConsumer};
use dpakit::dev::Dev;
use dpakit::dma::Dma;
use dpakit::dpa::{ConsumerCompletion, Dpa, DpaThread};
use dpakit::mmap::Mmap;
use dpakit::msgq::Msgq;
use dpakit::pe::Pe;
use dpakit::soft::{SchedMode, SoftSettings};
use dpakit::sync_event::{SyncEvent, SyncEventContext, TaskKind};
use dpakit::{ErrorCode, UserData, kernels, kit_app, open_dpa_dev};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

pod_struct! {
    /// What a program might carry in its user data: which request of which client.
    #[derive(Debug, PartialEq, Eq)]
    pub struct Tag {
        client: u32,
        seq: u32,
    }
}

#[test]
fn a_cpu_producer_hands_out_its_completions_in_order() {
    let dpa = Dpa::builder(&open_dpa_dev().unwrap())
        .app(kit_app())
        .sched_mode(SchedMode::BusyPoll)
        .workers(1)
        .start()
        .unwrap();
    let pe = Pe::new().unwrap();
    let to_dpa = Msgq::builder(dpa.dev()).dpa_consumer(&dpa).start().unwrap();
    let producer = CpuProducer::builder(&to_dpa, &pe)
        .num_send_tasks(4)
        .pull_completions()
        .start()
        .unwrap();
    let (thread, _args) = DpaThread::builder(&dpa, &kernels::SINK)
        .start_deferred()
        .unwrap();
    let completion = ConsumerCompletion::builder(&dpa)
        .dpa_thread(&thread)
        .start()
        .unwrap();
    let consumer = DpaConsumer::builder(&to_dpa, &completion).start().unwrap();
    // Credits for every send; the sink thread never runs: a send completes once its message
    // is in the consumer's completion context.
    dpa.rpc(dpa.app().consumer_ack(), (consumer.dpa_handle(), 64))
        .unwrap();
    assert_eq!(producer.try_completion(), None);
    for seq in 0..4 {
        let tag = Tag { client: 7, seq };
        producer.send(&[seq as u8; 8], consumer.id(), tag).unwrap();
    }
    // Four sends in flight or completed and not taken: the pool is full.
    let e = producer.send(&[9; 8], consumer.id(), 9u64).unwrap_err();
    assert_eq!(e.code(), ErrorCode::NoMemory, "{e}");
    assert!(e.to_string().contains("next_completion"), "{e}");
    for seq in 0..4 {
        let done = producer
            .next_completion(WAIT)
            .unwrap()
            .expect("a completion");
        assert_eq!(done.status, ErrorCode::Success);
        assert_eq!(done.user_data.get::<Tag>(), Tag { client: 7, seq });
    }
    // Taken: the pool is free again, and nothing else completes.
    producer.send(&[5; 8], consumer.id(), 5u64).unwrap();
    let done = producer.next_completion(WAIT).unwrap().unwrap();
    assert_eq!(done.user_data, UserData::from(5u64));
    assert_eq!(
        producer.next_completion(Duration::from_millis(20)).unwrap(),
        None
    );
    dpa.check().unwrap();
}

#[test]
fn a_dma_context_hands_out_its_completions_and_holds_the_pool_until_taken() {
    let dev = Dev::open_first(|d| d.dma_cap_task_memcpy_is_supported().is_ok()).unwrap();
    let pe = Pe::new().unwrap();
    let mmap = |fill: u8| {
        let mut m = Mmap::alloc(4096).unwrap();
        m.as_mut_slice().unwrap().fill(fill);
        m.add_dev(&dev).unwrap();
        m.start().unwrap();
        m
    };
    let (src, dst) = (mmap(0x5a), mmap(0));
    let inv = BufInventory::new(8).unwrap();
    let dma = Dma::builder(&dev, &pe)
        .num_tasks(2)
        .pull_completions()
        .start()
        .unwrap();
    let from = inv.buf_get_by_data(&src, src.range().0, 1024).unwrap();
    let to: Vec<_> = (0..3)
        .map(|i| {
            inv.buf_get_by_addr(&dst, dst.range().0.wrapping_add(i * 1024), 1024)
                .unwrap()
        })
        .collect();
    dma.memcpy(&from, &to[0], Tag { client: 1, seq: 0 })
        .unwrap();
    dma.memcpy(&from, &to[1], Tag { client: 1, seq: 1 })
        .unwrap();
    let e = dma.memcpy(&from, &to[2], 0u64).unwrap_err();
    assert_eq!(e.code(), ErrorCode::NoMemory, "{e}");
    for seq in 0..2 {
        let done = dma.next_completion(WAIT).unwrap().expect("a completion");
        assert_eq!(done.status, ErrorCode::Success);
        assert_eq!(done.user_data.get::<Tag>(), Tag { client: 1, seq });
    }
    dma.memcpy(&from, &to[2], 3u64).unwrap();
    assert_eq!(
        dma.next_completion(WAIT)
            .unwrap()
            .unwrap()
            .user_data
            .get::<u64>(),
        3
    );
    let mut copied = vec![0; 3072];
    dst.read_at(0, &mut copied).unwrap();
    assert!(copied.iter().all(|&b| b == 0x5a));
}

#[test]
fn a_sync_event_context_hands_out_values_with_its_completions() {
    let dev = Dev::open_by_pci("b1:00.0").unwrap();
    let pe = Pe::new().unwrap();
    let ctx = SyncEventContext::builder(
        SyncEvent::builder()
            .publisher_cpu(&dev)
            .subscriber_cpu(&dev),
        &pe,
    )
    .tasks(TaskKind::NotifySet, 1)
    .tasks(TaskKind::Get, 1)
    .pull_completions()
    .start()
    .unwrap();
    ctx.notify_set(40, 1u8).unwrap();
    ctx.get(2u8).unwrap();
    // Two tasks configured, both in flight or held: a third is refused.
    assert_eq!(ctx.get(3u8).unwrap_err().code(), ErrorCode::NoMemory);
    let set = ctx.next_completion(WAIT).unwrap().unwrap();
    assert_eq!(
        (set.kind, set.user_data.get::<u8>()),
        (TaskKind::NotifySet, 1)
    );
    let get = ctx.next_completion(WAIT).unwrap().unwrap();
    assert_eq!((get.kind, get.value), (TaskKind::Get, Some(40)));
    assert_eq!(ctx.try_completion(), None);
}

#[test]
fn completions_go_to_a_callback_or_out_as_values_never_both() {
    let dev = Dev::open_first(|d| d.dma_cap_task_memcpy_is_supported().is_ok()).unwrap();
    let pe = Pe::new().unwrap();
    let e = Dma::builder(&dev, &pe)
        .on_complete(|_| {})
        .pull_completions()
        .start()
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue, "{e}");
    // Without pull_completions there is nothing to wait for: said, not a silent timeout.
    let dma = Dma::builder(&dev, &pe).start().unwrap();
    let e = dma.next_completion(WAIT).unwrap_err();
    assert_eq!(e.code(), ErrorCode::BadState, "{e}");
    assert_eq!(dma.try_completion(), None);
}
