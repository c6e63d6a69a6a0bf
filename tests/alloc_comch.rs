//! Comch allocates nothing once warm: control-path round trips and fast-path sends between a
//! server and a client of this process, with a counting global allocator.

#[path = "support/counting.rs"]
mod counting;

use counting::allocations;
use dpakit::comch::{Client, Connection, Consumer, Producer, Server};
use dpakit::dev::{Dev, DevRep};
use dpakit::pe::Pe;
use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

#[test]
fn control_and_fast_path_allocate_nothing_after_warm_up() {
    let dir = std::env::temp_dir().join(format!("dpakit-alloc-comch-{}", std::process::id()));
    // SAFETY: the only test of this binary sets it before anything reads it.
    unsafe { std::env::set_var("DPAKIT_SOFT_RUNTIME_DIR", &dir) };
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
