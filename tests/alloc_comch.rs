//! Comch allocates nothing once warm: control-path round trips and fast-path sends between a
//! server and a client of this process, and the legacy Comm Channel's round trips between a
//! service and a client endpoint, with a counting global allocator.

#[path = "support/counting.rs"]
mod counting;

use counting::allocations;
use dpakit::comch::{Client, Connection, Consumer, Producer, Server};
use dpakit::dev::{Dev, DevRep};
use dpakit::pe::Pe;
use std::cell::Cell;
use std::rc::Rc;
use std::sync::Once;
use std::time::{Duration, Instant};

fn main() {
    // The allocator's count is the process's: the tests run one after the other.
    counting::run(&[
        (
            "control_and_fast_path_allocate_nothing_after_warm_up",
            control_and_fast_path_allocate_nothing_after_warm_up,
        ),
        (
            "comm_channel_round_trips_allocate_nothing_after_warm_up",
            comm_channel_round_trips_allocate_nothing_after_warm_up,
        ),
        (
            "events_taken_as_values_allocate_nothing_after_warm_up",
            events_taken_as_values_allocate_nothing_after_warm_up,
        ),
    ]);
}

/// A runtime directory for this binary's sockets, set before any test touches the soft device.
fn runtime_dir() {
    static SET: Once = Once::new();
    SET.call_once(|| {
        let dir = std::env::temp_dir().join(format!("dpakit-alloc-comch-{}", std::process::id()));
        // SAFETY: set once, before either test reads the environment (both call this first).
        unsafe { std::env::set_var("DPAKIT_SOFT_RUNTIME_DIR", &dir) };
    });
}

fn control_and_fast_path_allocate_nothing_after_warm_up() {
    runtime_dir();
    let arm = Dev::open_by_pci("03:00.0").unwrap();
    let rep = DevRep::open_by_pci(&arm, "b1:00.0").unwrap();
    let host = Dev::open_by_pci("b1:00.0").unwrap();
    let (spe, cpe) = (Pe::new().unwrap(), Pe::new().unwrap());
    let consumer_id = Rc::new(Cell::new(None));
    let c2 = consumer_id.clone();
    let server = Server::builder(&arm, &rep, "alloc", &spe)
        .on_connect(|_, _, _| {})
        .on_message(|ch, conn, msg| ch.send(conn, msg, 0).unwrap())
        .on_consumer(move |_, _, id, created| c2.set(created.then_some(id)))
        .start()
        .unwrap();
    let echoes = Rc::new(Cell::new(0u64));
    let e2 = echoes.clone();
    let client = Client::builder(&host, "alloc", &cpe)
        .on_message(move |_, _, _| e2.set(e2.get() + 1))
        .start()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let progress = || {
        spe.progress();
        cpe.progress();
        assert!(Instant::now() < deadline, "timed out");
    };
    while client.state().unwrap() != dpakit::ctx::CtxState::Running
        || server.channel().connections().is_empty()
    {
        progress();
    }
    let conn = client.connection().unwrap();

    // Control path: one message at a time, echoed.
    let ctrl = |n: u64| {
        for i in 0..n {
            let want = echoes.get() + 1;
            client.channel().send(conn, &i.to_le_bytes(), i).unwrap();
            while echoes.get() < want {
                progress();
            }
        }
    };
    ctrl(1_000);
    let before = allocations();
    ctrl(10_000);
    assert_eq!(
        allocations() - before,
        0,
        "control-path round trips allocate"
    );

    // Fast path: the client's producer into the server's consumer.
    let sconn: Connection = server.channel().connections()[0];
    let received = Rc::new(Cell::new(0u64));
    let r2 = received.clone();
    let consumer = Consumer::builder(conn, &host, &cpe)
        .num_recv(8)
        .buf_size(4096)
        .on_recv(move |r| {
            assert_eq!(r.data.len(), 256);
            r2.set(r2.get() + 1)
        })
        .start()
        .unwrap();
    // The consumer is the client's; the server's producer sends into it.
    let producer = Producer::builder(sconn, &arm, &spe)
        .num_send(8)
        .buf_size(4096)
        .start()
        .unwrap();
    let id = consumer.id();
    while consumer_id.get() != Some(id) {
        progress();
    }
    let fast = |n: u64| {
        for i in 0..n {
            let want = received.get() + 1;
            loop {
                match producer.loan(256) {
                    Ok(mut loan) => {
                        loan.as_mut_slice().fill(i as u8);
                        loan.send(id, &i.to_le_bytes(), i).unwrap();
                        break;
                    }
                    Err(_) => progress(),
                }
            }
            while received.get() < want {
                progress();
            }
        }
    };
    fast(1_000);
    let before = allocations();
    fast(10_000);
    assert_eq!(allocations() - before, 0, "fast-path sends allocate");
    drop(producer);
    drop(consumer);
}

fn comm_channel_round_trips_allocate_nothing_after_warm_up() {
    use dpakit::comm_channel::{Endpoint, Event};
    runtime_dir();
    let arm = Dev::open_by_pci("03:00.0").unwrap();
    let rep = DevRep::open_by_pci(&arm, "b1:00.0").unwrap();
    let host = Dev::open_by_pci("b1:00.0").unwrap();
    let service = Endpoint::builder(&arm)
        .representor(&rep)
        .listen("alloc-cc")
        .unwrap();
    let (client, to_service) = Endpoint::builder(&host).start_connect("alloc-cc").unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !client.is_connected(to_service).unwrap() {
        service.peers().unwrap();
        assert!(Instant::now() < deadline, "no handshake");
    }
    let mut buf = [0u8; 64];
    let round_trip = |i: u64, buf: &mut [u8; 64]| {
        client.send(to_service, &i.to_le_bytes()).unwrap();
        let Event::Message { len, peer } = service.recv(buf).unwrap() else {
            panic!("a reset")
        };
        service.send(peer, &buf[..len]).unwrap();
        let Event::Message { len, .. } = client.recv(buf).unwrap() else {
            panic!("a reset")
        };
        assert_eq!(&buf[..len], &i.to_le_bytes());
    };
    for i in 0..1000 {
        round_trip(i, &mut buf);
    }
    let before = allocations();
    for i in 0..10_000 {
        round_trip(i, &mut buf);
    }
    let during = allocations() - before;
    assert_eq!(
        during, 0,
        "{during} allocations in 10,000 Comm Channel round trips"
    );
}

/// Both endpoints without callbacks: messages and send completions taken as events (the
/// messages' buffers come back to the endpoint's pool when dropped).
fn events_taken_as_values_allocate_nothing_after_warm_up() {
    use dpakit::comch::Event;
    runtime_dir();
    let arm = Dev::open_by_pci("03:00.0").unwrap();
    let rep = DevRep::open_by_pci(&arm, "b1:00.0").unwrap();
    let host = Dev::open_by_pci("b1:00.0").unwrap();
    let (spe, cpe) = (Pe::new().unwrap(), Pe::new().unwrap());
    let server = Server::builder(&arm, &rep, "alloc-events", &spe)
        .start()
        .unwrap();
    let client = Client::builder(&host, "alloc-events", &cpe)
        .start()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let conn = loop {
        spe.progress();
        if let Ok(Some(conn)) = client.connect(Duration::from_millis(1)).map(Some) {
            break conn;
        }
        assert!(Instant::now() < deadline, "timed out connecting");
    };
    let round_trips = |n: u64| {
        for i in 0..n {
            client.channel().send(conn, &i.to_le_bytes(), i).unwrap();
            let (mut echoed, mut done) = (false, false);
            while !(echoed && done) {
                assert!(Instant::now() < deadline, "timed out");
                spe.progress();
                cpe.progress();
                while let Some(event) = server.try_event() {
                    if let Event::Message { conn, msg } = event {
                        server.channel().send(conn, &msg, 0).unwrap();
                    }
                }
                while let Some(event) = client.try_event() {
                    match event {
                        Event::Message { msg, .. } => {
                            assert_eq!(*msg, i.to_le_bytes());
                            echoed = true;
                        }
                        Event::SendDone(_) => done = true,
                        other => panic!("unexpected {other:?}"),
                    }
                }
            }
        }
    };
    round_trips(1_000);
    let before = allocations();
    round_trips(10_000);
    assert_eq!(allocations() - before, 0, "events taken as values allocate");
}
