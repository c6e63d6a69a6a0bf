//! Stopping and dropping an endpoint from inside one of its own callbacks, through the safe
//! API: the call returns at once (waiting would progress the PE from its own callback), the
//! context finishes stopping through the progress that follows, and nothing the running
//! callback uses is freed under it. A second stop of an IDLE context answers as the C API does.

#[path = "support/echo_path.rs"]
mod echo_path;

use dpakit::ErrorCode;
use dpakit::abi::{Echo, ImmMessage};
use dpakit::comch::{Client, Connection, Consumer, CpuConsumer, CpuProducer, Producer, Server};
use dpakit::ctx::CtxState;
use dpakit::dev::{Dev, DevRep};
use dpakit::dpa::Dpa;
use dpakit::pe::Pe;
use dpakit::{kit_app, open_dpa_dev};
use echo_path::EchoPath;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

const ARM: &str = "0000:03:00.0";
const HOST: &str = "0000:b1:00.0";

/// Far above anything a teardown in a callback takes, far below the 10 s a wait on the PE from
/// its own callback used to spin before giving up.
const PROMPT: Duration = Duration::from_secs(5);

fn private_runtime_dir() {
    let dir = std::env::temp_dir().join(format!("dpakit-teardown-{}", std::process::id()));
    // SAFETY: every test sets the same value before anything reads it.
    unsafe { std::env::set_var("DPAKIT_SOFT_RUNTIME_DIR", &dir) };
}

fn until(pes: &[&Pe], what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        for pe in pes {
            pe.progress();
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
    }
}

/// Progresses until `client` runs, then sends `msg` on its connection.
fn connect_and_send(pes: &[&Pe], client: &Client, msg: &[u8]) {
    until(pes, "the connection", || {
        client.state().unwrap() == CtxState::Running
    });
    let conn = client.connection().unwrap();
    client.channel().send(conn, msg, 0).unwrap();
}

/// An object a callback may take and drop (or stop), with how long that took.
struct Slot<T> {
    object: RefCell<Option<T>>,
    took: Cell<Option<Duration>>,
}

impl<T> Slot<T> {
    fn new() -> Rc<Self> {
        Rc::new(Slot {
            object: RefCell::new(None),
            took: Cell::new(None),
        })
    }

    /// Drops the object, once, timing the drop.
    fn drop_now(&self) {
        if let Some(object) = self.object.borrow_mut().take() {
            let started = Instant::now();
            drop(object);
            self.took.set(Some(started.elapsed()));
        }
    }

    fn dropped_promptly(&self) {
        let took = self.took.get().expect("the callback dropped the object");
        assert!(took < PROMPT, "the drop inside its callback took {took:?}");
        assert!(self.object.borrow().is_none());
    }
}

struct Devs {
    arm: Dev,
    rep: DevRep,
    host: Dev,
}

fn devs() -> Devs {
    private_runtime_dir();
    let arm = Dev::open_by_pci(ARM).unwrap();
    let rep = DevRep::open_by_pci(&arm, HOST).unwrap();
    let host = Dev::open_by_pci(HOST).unwrap();
    Devs { arm, rep, host }
}

/// An echoing server that logs its connections and disconnections.
fn echo_server(d: &Devs, name: &str, pe: &Pe, log: &Rc<RefCell<Vec<&'static str>>>) -> Server {
    let (l1, l2) = (log.clone(), log.clone());
    Server::builder(&d.arm, &d.rep, name, pe)
        .on_connect(move |_, _, _| l1.borrow_mut().push("connect"))
        .on_disconnect(move |_, _, _| l2.borrow_mut().push("disconnect"))
        .on_message(|ch, conn, msg| {
            let _ = ch.send(conn, msg, 0);
        })
        .start()
        .unwrap()
}

#[test]
fn a_client_dropped_in_its_message_callback_tears_down_after_the_callback() {
    let d = devs();
    let (spe, cpe) = (Pe::new().unwrap(), Pe::new().unwrap());
    let log = Rc::default();
    let _server = echo_server(&d, "drop-in-message", &spe, &log);
    let slot: Rc<Slot<Client>> = Slot::new();
    let s2 = slot.clone();
    let client = Client::builder(&d.host, "drop-in-message", &cpe)
        .on_message(move |ch, conn, _| {
            // A send in flight: the stop cannot finish inside the callback.
            ch.send(conn, b"last", 0).unwrap();
            s2.drop_now();
        })
        .start()
        .unwrap();
    connect_and_send(&[&spe, &cpe], &client, b"ping");
    *slot.object.borrow_mut() = Some(client);
    until(&[&spe, &cpe], "the echo", || slot.took.get().is_some());
    slot.dropped_promptly();
    // The client stopped in order: the server hears of it.
    until(&[&spe, &cpe], "the disconnection", || {
        log.borrow().contains(&"disconnect")
    });
}

#[test]
fn a_client_stopped_in_its_message_callback_becomes_idle_through_progress() {
    let d = devs();
    let (spe, cpe) = (Pe::new().unwrap(), Pe::new().unwrap());
    let log = Rc::default();
    let _server = echo_server(&d, "stop-in-message", &spe, &log);
    let client: Rc<RefCell<Option<Client>>> = Rc::default();
    let c2 = client.clone();
    let stopped = Rc::new(Cell::new(None));
    let s2 = stopped.clone();
    let started = Client::builder(&d.host, "stop-in-message", &cpe)
        .on_message(move |ch, conn, _| {
            // A send in flight: the stop cannot finish inside the callback.
            ch.send(conn, b"last", 0).unwrap();
            let started = Instant::now();
            let r = c2.borrow().as_ref().unwrap().stop().map_err(|e| e.code());
            assert!(
                started.elapsed() < PROMPT,
                "stop took {:?}",
                started.elapsed()
            );
            s2.set(Some(r));
        })
        .start()
        .unwrap();
    *client.borrow_mut() = Some(started);
    connect_and_send(&[&spe, &cpe], client.borrow().as_ref().unwrap(), b"ping");
    let state = || client.borrow().as_ref().unwrap().state().unwrap();
    until(&[&spe, &cpe], "the echo", || stopped.get().is_some());
    assert_eq!(stopped.get(), Some(Ok(())));
    until(&[&spe, &cpe], "IDLE", || state() == CtxState::Idle);
    // As doca_ctx_stop answers an IDLE context.
    let again = client.borrow().as_ref().unwrap().stop().unwrap_err();
    assert_eq!(again.code(), ErrorCode::BadState, "{again}");
    // Break the cycle (the callback holds the slot) and tear down normally.
    drop(client.borrow_mut().take());
}

#[test]
fn a_server_dropped_in_its_message_callback_tells_its_client() {
    let d = devs();
    let (spe, cpe) = (Pe::new().unwrap(), Pe::new().unwrap());
    let slot: Rc<Slot<Server>> = Slot::new();
    let s2 = slot.clone();
    let server = Server::builder(&d.arm, &d.rep, "server-drop-in-message", &spe)
        .on_connect(|_, _, _| {})
        .on_message(move |_, _, _| s2.drop_now())
        .start()
        .unwrap();
    *slot.object.borrow_mut() = Some(server);
    let client = Client::builder(&d.host, "server-drop-in-message", &cpe)
        .on_message(|_, _, _| {})
        .start()
        .unwrap();
    connect_and_send(&[&spe, &cpe], &client, b"bye");
    until(&[&spe, &cpe], "the message", || slot.took.get().is_some());
    slot.dropped_promptly();
    // The server went away: the client loses its connection and stops.
    until(&[&spe, &cpe], "the client to stop", || {
        client.state().unwrap() != CtxState::Running
    });
}

#[test]
fn a_server_stopped_in_its_connection_callback_refuses_nobody_afterwards() {
    let d = devs();
    let (spe, cpe) = (Pe::new().unwrap(), Pe::new().unwrap());
    let server: Rc<RefCell<Option<Server>>> = Rc::default();
    let (s2, stopped) = (server.clone(), Rc::new(Cell::new(None)));
    let st = stopped.clone();
    let started = Server::builder(&d.arm, &d.rep, "stop-in-connect", &spe)
        .on_connect(move |_, _, _| {
            st.set(Some(
                s2.borrow().as_ref().unwrap().stop().map_err(|e| e.code()),
            ));
        })
        .on_message(|_, _, _| {})
        .start()
        .unwrap();
    *server.borrow_mut() = Some(started);
    let client = Client::builder(&d.host, "stop-in-connect", &cpe)
        .on_message(|_, _, _| {})
        .start()
        .unwrap();
    until(&[&spe, &cpe], "the connection callback", || {
        stopped.get().is_some()
    });
    assert_eq!(stopped.get(), Some(Ok(())));
    let state = || server.borrow().as_ref().unwrap().state().unwrap();
    until(&[&spe, &cpe], "the server to be IDLE", || {
        state() == CtxState::Idle
    });
    until(&[&spe, &cpe], "the client to stop", || {
        client.state().unwrap() != CtxState::Running
    });
    drop(server.borrow_mut().take());
}

#[test]
fn a_server_stopped_in_its_connection_callback_takes_no_client_of_the_same_pass() {
    let d = devs();
    let (spe, cpe) = (Pe::new().unwrap(), Pe::new().unwrap());
    let server: Rc<RefCell<Option<Server>>> = Rc::default();
    let (s2, connects) = (server.clone(), Rc::new(Cell::new(0)));
    let c2 = connects.clone();
    let started = Server::builder(&d.arm, &d.rep, "stop-in-connect-backlog", &spe)
        .on_connect(move |_, _, _| {
            c2.set(c2.get() + 1);
            let _ = s2.borrow().as_ref().unwrap().stop();
        })
        .on_message(|_, _, _| {})
        .start()
        .unwrap();
    *server.borrow_mut() = Some(started);
    // Two clients in the server's backlog before it next looks: one accept pass meets both.
    let clients: Vec<Client> = (0..2)
        .map(|_| {
            Client::builder(&d.host, "stop-in-connect-backlog", &cpe)
                .on_message(|_, _, _| {})
                .start()
                .unwrap()
        })
        .collect();
    for _ in 0..8 {
        cpe.progress();
    }
    let state = || server.borrow().as_ref().unwrap().state().unwrap();
    until(&[&spe, &cpe], "the server to be IDLE", || {
        state() == CtxState::Idle
    });
    until(&[&spe, &cpe], "the clients to stop", || {
        clients
            .iter()
            .all(|c| c.state().unwrap() != CtxState::Running)
    });
    // The second client was not taken once the first one's callback stopped the server (a
    // connection made then outlived the stop, its handle never released).
    assert_eq!(connects.get(), 1);
    drop(server.borrow_mut().take());
}

#[test]
fn msgq_endpoints_dropped_in_their_own_callbacks() {
    let path = EchoPath::new(
        Dpa::builder(&open_dpa_dev().unwrap())
            .app(kit_app())
            .start()
            .unwrap(),
    );
    let producer_slot: Rc<Slot<CpuProducer>> = Slot::new();
    let consumer_slot: Rc<Slot<CpuConsumer>> = Slot::new();
    let (p2, c2) = (producer_slot.clone(), consumer_slot.clone());
    let producer = CpuProducer::builder(&path.to_dpa, &path.pe)
        .on_send_complete(move |_| p2.drop_now())
        .start()
        .unwrap();
    let consumer = CpuConsumer::builder(&path.from_dpa, &path.pe)
        .on_recv(move |r| {
            // The first echo; the second receive is flushed by the stop.
            if r.user_data.get::<u64>() == 0 {
                assert_eq!(r.status, ErrorCode::Success);
            }
            c2.drop_now();
        })
        .start()
        .unwrap();
    path.run(consumer.id());
    // A second receive and a second send stay outstanding when the first callbacks run: the
    // stops cannot finish inside them.
    consumer.post_recv(0).unwrap();
    consumer.post_recv(1).unwrap();
    let consumer_id = path.dpa_consumer.id();
    for seq in 0..2 {
        let msg = ImmMessage::new(seq, &Echo::default());
        producer
            .send(msg.as_bytes(), consumer_id, u64::from(seq))
            .unwrap();
    }
    *producer_slot.object.borrow_mut() = Some(producer);
    *consumer_slot.object.borrow_mut() = Some(consumer);
    until(&[&path.pe], "the echo", || {
        producer_slot.took.get().is_some() && consumer_slot.took.get().is_some()
    });
    producer_slot.dropped_promptly();
    consumer_slot.dropped_promptly();
    // Both were destroyed when the progress call that ran their callbacks returned: the queues
    // take new endpoints in their place.
    let again = CpuConsumer::builder(&path.from_dpa, &path.pe).start();
    assert!(again.is_ok(), "{:?}", again.err());
    path.dpa.check().unwrap();
}

#[test]
fn fast_path_endpoints_dropped_in_their_own_callbacks() {
    let d = devs();
    let (spe, cpe) = (Pe::new().unwrap(), Pe::new().unwrap());
    let announced = Rc::new(Cell::new(false));
    let a2 = announced.clone();
    let server = Server::builder(&d.arm, &d.rep, "fast-drop", &spe)
        .on_connect(|_, _, _| {})
        .on_message(|_, _, _| {})
        .on_consumer(move |_, _, _, created| a2.set(created))
        .start()
        .unwrap();
    let client = Client::builder(&d.host, "fast-drop", &cpe)
        .on_message(|_, _, _| {})
        .start()
        .unwrap();
    until(&[&spe, &cpe], "the connection", || {
        client.state().unwrap() == CtxState::Running && !server.channel().connections().is_empty()
    });
    let sconn: Connection = server.channel().connections()[0];
    let consumer_slot: Rc<Slot<Consumer>> = Slot::new();
    let producer_slot: Rc<Slot<Producer>> = Slot::new();
    let (c2, p2) = (consumer_slot.clone(), producer_slot.clone());
    let consumer = Consumer::builder(client.connection().unwrap(), &d.host, &cpe)
        .on_recv(move |r| {
            assert_eq!(r.data, b"payload");
            c2.drop_now();
        })
        .start()
        .unwrap();
    let consumer_id = consumer.id();
    *consumer_slot.object.borrow_mut() = Some(consumer);
    let producer = Producer::builder(sconn, &d.arm, &spe)
        .on_send_complete(move |done| {
            assert_eq!(done.status, ErrorCode::Success);
            p2.drop_now();
        })
        .start()
        .unwrap();
    until(&[&spe, &cpe], "the consumer's announcement", || {
        announced.get()
    });
    // Two sends: one is still in flight when the first completion drops the producer.
    producer.send(consumer_id, b"payload", b"imm", 0).unwrap();
    producer.send(consumer_id, b"payload", b"imm", 1).unwrap();
    *producer_slot.object.borrow_mut() = Some(producer);
    until(&[&spe, &cpe], "both callbacks", || {
        consumer_slot.took.get().is_some() && producer_slot.took.get().is_some()
    });
    consumer_slot.dropped_promptly();
    producer_slot.dropped_promptly();
    // With no endpoint left on the connection, the client can stop (IN_USE otherwise).
    client.stop().unwrap();
}

#[test]
fn waiting_on_a_pe_from_its_own_callback_is_refused_at_once() {
    let d = devs();
    let (spe, cpe) = (Pe::new().unwrap(), Pe::new().unwrap());
    let log = Rc::default();
    let _server = echo_server(&d, "wait-in-callback", &spe, &log);
    let answer: Rc<Cell<Option<(ErrorCode, Duration)>>> = Rc::default();
    let (a2, pe2) = (answer.clone(), cpe.clone());
    let client = Client::builder(&d.host, "wait-in-callback", &cpe)
        .on_message(move |_, _, _| {
            let started = Instant::now();
            let e = pe2
                .progress_until(Duration::from_secs(10), || false)
                .unwrap_err();
            a2.set(Some((e.code(), started.elapsed())));
        })
        .start()
        .unwrap();
    connect_and_send(&[&spe, &cpe], &client, b"ping");
    until(&[&spe, &cpe], "the echo", || answer.get().is_some());
    let (code, took) = answer.get().unwrap();
    assert_eq!(code, ErrorCode::BadState);
    assert!(took < PROMPT, "refused after {took:?}");
}
