//! The Comch fast path in one process: producers write into the buffers consumers posted,
//! through the C API, on a connection the safe control path made.

#[path = "support/fast.rs"]
mod fast;

use dpakit::comch::{Client, Connection, Server};
use dpakit::dev::{Dev, DevRep};
use dpakit::pe::Pe;
use fast::{Consumer, Producer};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

fn private_runtime_dir() {
    let dir = std::env::temp_dir().join(format!("dpakit-fast-{}", std::process::id()));
    // SAFETY: every test sets the same value before anything reads it.
    unsafe { std::env::set_var("DPAKIT_SOFT_RUNTIME_DIR", &dir) };
}

struct Pair {
    spe: Pe,
    cpe: Pe,
    server: Server,
    client: Client,
    sconn: Connection,
    cconn: Connection,
    arm: Dev,
    host: Dev,
    consumers: Rc<RefCell<Vec<(u32, bool)>>>,
}

fn pair(name: &str) -> Pair {
    private_runtime_dir();
    let arm = Dev::open_by_pci("03:00.0").unwrap();
    let rep = DevRep::open_by_pci(&arm, "b1:00.0").unwrap();
    let host = Dev::open_by_pci("b1:00.0").unwrap();
    let (spe, cpe) = (Pe::new().unwrap(), Pe::new().unwrap());
    let consumers: Rc<RefCell<Vec<(u32, bool)>>> = Rc::default();
    let c2 = consumers.clone();
    let server = Server::builder(&arm, &rep, name, &spe)
        .on_connect(|_, _, _| {})
        .on_message(|_, _, _| {})
        .on_consumer(move |_, _, id, created| c2.borrow_mut().push((id, created)))
        .start()
        .unwrap();
    let client = Client::builder(&host, name, &cpe)
        .on_message(|_, _, _| {})
        .start()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.channel().connections().is_empty()
        || client.state().unwrap() != dpakit::ctx::CtxState::Running
    {
        spe.progress();
        cpe.progress();
        assert!(Instant::now() < deadline);
    }
    let cconn = client.connection().unwrap();
    let sconn = server.channel().connections()[0];
    Pair {
        spe,
        cpe,
        server,
        client,
        sconn,
        cconn,
        arm,
        host,
        consumers,
    }
}

#[test]
fn buffers_from_64_bytes_to_1_mib_arrive_intact_and_in_order() {
    let p = pair("fast-in-order");
    let consumer = Consumer::start(p.cconn.as_raw(), p.host.as_raw(), 8);
    consumer.inbox.borrow_mut().keep = true;
    // The consumer's announcement reaches the server as a new-consumer event.
    let deadline = Instant::now() + Duration::from_secs(5);
    while p.consumers.borrow().is_empty() {
        p.spe.progress();
        assert!(Instant::now() < deadline);
    }
    assert_eq!(*p.consumers.borrow(), [(consumer.id, true)]);
    let mut producer = Producer::start(p.sconn.as_raw(), p.arm.as_raw(), 8);
    let n = 3000u64;
    let (mut sent, mut in_flight) = (0u64, 0usize);
    let deadline = Instant::now() + Duration::from_secs(60);
    while consumer.inbox.borrow().count < n {
        while sent < n && in_flight < producer.slots {
            assert_eq!(producer.send(consumer.id, sent), 0);
            sent += 1;
            in_flight += 1;
        }
        producer.progress();
        in_flight -= std::mem::take(&mut producer.outbox.borrow_mut().done).len();
        consumer.progress();
        assert!(Instant::now() < deadline, "stalled");
    }
    let inbox = consumer.inbox.borrow();
    assert_eq!(inbox.bad, 0, "every byte arrives as sent");
    assert_eq!(inbox.disorder, 0);
    assert!(inbox.errors.is_empty());
    for (i, (seq, _, _)) in inbox.got.iter().enumerate() {
        assert_eq!(*seq, i as u64, "in order");
    }
    drop(inbox);
    producer.destroy();
    consumer.destroy();
    drop(p.client);
    drop(p.server);
}

/// Progresses the pair's control path until `done`.
fn until(p: &Pair, others: &[&dyn Fn() -> bool], mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        p.spe.progress();
        p.cpe.progress();
        for o in others {
            o();
        }
        assert!(Instant::now() < deadline, "timed out");
    }
}

#[test]
fn a_send_waits_for_a_receive_and_a_larger_one_fails_with_invalid_value() {
    let p = pair("fast-edges");
    let consumer = Consumer::start_sized(p.cconn.as_raw(), p.host.as_raw(), 2, 4096);
    until(&p, &[], || !p.consumers.borrow().is_empty());
    let mut producer = Producer::start(p.sconn.as_raw(), p.arm.as_raw(), 4);
    // seq 1 is a small message (65..4096 bytes): it waits, since nothing is posted.
    let seq = (1..).find(|&s| fast::size_of(s) <= 4096).unwrap();
    assert_eq!(producer.send(consumer.id, seq), 0);
    for _ in 0..100 {
        producer.progress();
        consumer.progress_only();
    }
    assert!(
        producer.outbox.borrow().done.is_empty(),
        "no receive posted: the send waits"
    );
    consumer.post_all();
    until(
        &p,
        &[&|| producer.progress(), &|| consumer.progress()],
        || consumer.inbox.borrow().count == 1,
    );
    assert_eq!(producer.outbox.borrow().done, [(seq, 0)]);
    // Message 97 is at least 64 bytes and every 97th is large: pick one over 4 KiB.
    let big = (0..)
        .map(|k| k * 97)
        .find(|&s| fast::size_of(s) > 4096)
        .unwrap();
    assert_eq!(producer.send(consumer.id, big), 0);
    until(
        &p,
        &[&|| producer.progress(), &|| consumer.progress()],
        || producer.outbox.borrow().done.len() == 2,
    );
    assert_eq!(
        producer.outbox.borrow().done[1],
        (big, dpakit_sys::DOCA_ERROR_INVALID_VALUE),
        "larger than the posted buffer"
    );
    // The posted buffer is still there for a send that fits.
    assert_eq!(producer.send(consumer.id, seq), 0);
    until(
        &p,
        &[&|| producer.progress(), &|| consumer.progress()],
        || consumer.inbox.borrow().count == 2,
    );
    assert_eq!(consumer.inbox.borrow().bad, 0);
    // An id no consumer has: NOT_FOUND through the error callback.
    assert_eq!(producer.send(consumer.id + 100, seq), 0);
    until(&p, &[&|| producer.progress()], || {
        producer.outbox.borrow().done.len() == 4
    });
    assert_eq!(
        producer.outbox.borrow().done[3].1,
        dpakit_sys::DOCA_ERROR_NOT_FOUND
    );
    // The connection cannot go while producers and consumers live on it.
    assert_eq!(
        p.server.channel().disconnect(p.sconn).unwrap_err().code(),
        dpakit::ErrorCode::InUse
    );
    assert_eq!(
        p.client.stop().unwrap_err().code(),
        dpakit::ErrorCode::InUse
    );
    producer.destroy();
    let id = consumer.id;
    consumer.destroy();
    until(&p, &[], || p.consumers.borrow().len() == 2);
    assert_eq!(
        p.consumers.borrow()[1],
        (id, false),
        "the peer hears the consumer expired"
    );
    // A new consumer never reuses the id of the old one.
    let again = Consumer::start(p.cconn.as_raw(), p.host.as_raw(), 1);
    assert_ne!(again.id, id);
    again.destroy();
    p.client.stop().unwrap();
}

#[test]
fn the_safe_api_loans_writes_and_sends_into_a_consumer() {
    let p = pair("fast-safe");
    /// Data, immediate data and producer id of each message received.
    type Log = Rc<RefCell<Vec<(Vec<u8>, Vec<u8>, u32)>>>;
    let got: Log = Rc::default();
    let g = got.clone();
    let cpe2 = Pe::new().unwrap();
    let consumer = dpakit::comch::Consumer::builder(p.cconn, &p.host, &cpe2)
        .num_recv(4)
        .buf_size(1 << 20)
        .on_recv(move |r| {
            g.borrow_mut()
                .push((r.data.to_vec(), r.imm.to_vec(), r.producer_id))
        })
        .start()
        .unwrap();
    until(&p, &[], || !p.consumers.borrow().is_empty());
    let spe2 = Pe::new().unwrap();
    let done: Rc<RefCell<Vec<(u64, dpakit::ErrorCode)>>> = Rc::default();
    let d = done.clone();
    let producer = dpakit::comch::Producer::builder(p.sconn, &p.arm, &spe2)
        .num_send(4)
        .buf_size(1 << 20)
        .on_send_complete(move |c| d.borrow_mut().push((c.user_data.get::<u64>(), c.status)))
        .start()
        .unwrap();
    let n = 200u64;
    let mut sent = 0u64;
    until(&p, &[&|| spe2.progress(), &|| cpe2.progress()], || {
        while sent < n {
            let len = fast::size_of(sent);
            let Ok(mut loan) = producer.loan(len) else {
                break;
            };
            fast::fill(loan.as_mut_slice(), sent);
            loan.send(consumer.id(), &sent.to_le_bytes(), sent).unwrap();
            sent += 1;
        }
        got.borrow().len() == n as usize && done.borrow().len() == n as usize
    });
    for (i, (data, imm, producer_id)) in got.borrow().iter().enumerate() {
        assert_eq!(data.len(), fast::size_of(i as u64));
        assert!(fast::check(data, i as u64), "message {i} intact");
        assert_eq!(imm.as_slice(), &(i as u64).to_le_bytes());
        assert_eq!(*producer_id, producer.id());
    }
    assert!(
        done.borrow()
            .iter()
            .all(|d| d.1 == dpakit::ErrorCode::Success)
    );
    // More than the buffer: refused before it is sent.
    assert_eq!(
        producer.loan((1 << 20) + 1).unwrap_err().code(),
        dpakit::ErrorCode::InvalidValue
    );
    drop(producer);
    drop(consumer);
    p.client.stop().unwrap();
}

#[test]
fn chained_buffers_are_not_supported() {
    let dev = Dev::open_by_pci("b1:00.0").unwrap();
    let mut mem = fast::Memory::new(dev.as_raw(), 8192, 2, true);
    let (a, b) = (mem.buf(0, 4096), mem.buf(4096, 4096));
    // SAFETY: two live buffers of ours.
    let rc = unsafe { dpakit_sys::doca_buf_chain_list(a, b) };
    assert_eq!(rc, dpakit_sys::DOCA_ERROR_NOT_SUPPORTED);
    for buf in [a, b] {
        let mut left = 0;
        // SAFETY: as above.
        unsafe { dpakit_sys::doca_buf_dec_refcount(buf, &mut left) };
    }
}

/// The safe API's fast-path endpoints on the pair's connection, each on a progress engine of
/// its own.
struct SafeEndpoints {
    cpe2: Pe,
    consumer: dpakit::comch::Consumer,
    spe2: Pe,
    producer: dpakit::comch::Producer,
}

/// A consumer of `num_recv` 4 KiB buffers, announced to the server's side before a producer of
/// `num_send` is made there (`pull`: built to hand out its completions as values).
fn safe_endpoints(p: &Pair, num_recv: u32, num_send: u32, pull: bool) -> SafeEndpoints {
    let cpe2 = Pe::new().unwrap();
    let consumer = dpakit::comch::Consumer::builder(p.cconn, &p.host, &cpe2)
        .num_recv(num_recv)
        .buf_size(4096)
        .start()
        .unwrap();
    until(p, &[], || !p.consumers.borrow().is_empty());
    let spe2 = Pe::new().unwrap();
    let producer = dpakit::comch::Producer::builder(p.sconn, &p.arm, &spe2)
        .num_send(num_send)
        .buf_size(4096);
    let producer = if pull {
        producer.pull_completions()
    } else {
        producer
    };
    let producer = producer.start().unwrap();
    SafeEndpoints {
        cpe2,
        consumer,
        spe2,
        producer,
    }
}

#[test]
fn a_consumer_without_a_callback_hands_out_samples_posted_again_when_dropped() {
    let p = pair("fast-samples");
    // Two buffers: a third message waits until a sample is dropped.
    let SafeEndpoints {
        cpe2,
        consumer,
        spe2,
        producer,
    } = safe_endpoints(&p, 2, 4, false);
    for i in 0..3u64 {
        let mut loan = producer.loan(100).unwrap();
        fast::fill(loan.as_mut_slice(), i);
        loan.send(consumer.id(), &i.to_le_bytes(), i).unwrap();
    }
    let wait = Duration::from_secs(5);
    let progress_all = || {
        p.spe.progress();
        p.cpe.progress();
        spe2.progress();
    };
    let mut held = Vec::new();
    for i in 0..2u64 {
        progress_all();
        let sample = consumer.next_recv(wait).unwrap().expect("a message");
        assert!(fast::check(sample.data(), i), "message {i} intact");
        assert_eq!(sample.imm(), &i.to_le_bytes());
        assert_eq!(sample.producer_id(), producer.id());
        held.push(sample);
    }
    // Both buffers are held: the third message cannot land.
    for _ in 0..100 {
        progress_all();
        cpe2.progress();
    }
    assert!(consumer.try_recv().is_none(), "no buffer was posted for it");
    drop(held);
    let deadline = Instant::now() + wait;
    let third = loop {
        progress_all();
        if let Some(s) = consumer.next_recv(Duration::from_millis(10)).unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the third message never came");
    };
    assert!(fast::check(third.data(), 2));
    drop(third);
    drop(producer);
    consumer.stop().unwrap();
    drop(consumer);
    p.client.stop().unwrap();
}

#[test]
fn a_producer_built_to_pull_hands_out_completions_and_holds_buffers_until_taken() {
    let p = pair("fast-pulled");
    let SafeEndpoints {
        cpe2,
        consumer,
        spe2,
        producer,
    } = safe_endpoints(&p, 8, 2, true);
    for i in 0..2u32 {
        producer
            .send(consumer.id(), &[i as u8; 64], &i.to_le_bytes(), i)
            .unwrap();
    }
    let progress_all = || {
        p.spe.progress();
        p.cpe.progress();
        cpe2.progress();
        spe2.progress();
    };
    // Both sends complete; their completions, not taken, hold both buffers.
    let deadline = Instant::now() + Duration::from_secs(5);
    while producer.in_flight() > 0 {
        progress_all();
        assert!(Instant::now() < deadline, "the sends never completed");
    }
    let e = producer.loan(64).unwrap_err();
    assert_eq!(e.code(), dpakit::ErrorCode::NoMemory, "{e}");
    assert!(e.to_string().contains("completion not taken"), "{e}");
    for i in 0..2u32 {
        let done = producer
            .next_completion(Duration::from_secs(5))
            .unwrap()
            .expect("a completion");
        assert_eq!(done.status, dpakit::ErrorCode::Success);
        assert_eq!(done.user_data.get::<u32>(), i);
    }
    assert!(producer.try_completion().is_none());
    producer.loan(64).unwrap();
    drop(producer);
    consumer.stop().unwrap();
    drop(consumer);
    p.client.stop().unwrap();
}
