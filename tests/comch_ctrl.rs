//! The Comch control path in one process: server and client on their own progress engines.

use dpakit::ErrorCode;
use dpakit::comch::{Client, Connection, Server};
use dpakit::dev::{Dev, DevRep};
use dpakit::pe::Pe;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

const ARM: &str = "0000:03:00.0";
const HOST: &str = "0000:b1:00.0";

fn private_runtime_dir() {
    // Each test binary gets its own directory, so tests of other binaries do not collide.
    let dir = std::env::temp_dir().join(format!("dpakit-ctrl-{}", std::process::id()));
    // SAFETY: set before any thread of this test binary reads it (every test sets the same).
    unsafe { std::env::set_var("DPAKIT_SOFT_RUNTIME_DIR", &dir) };
}

fn until(pes: &[&Pe], mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        for pe in pes {
            pe.progress();
        }
        assert!(Instant::now() < deadline, "timed out");
    }
}

#[test]
fn a_client_and_a_server_exchange_messages_in_order() {
    private_runtime_dir();
    let arm = Dev::open_by_pci(ARM).unwrap();
    let rep = DevRep::open_by_pci(&arm, HOST).unwrap();
    let host = Dev::open_by_pci(HOST).unwrap();
    let spe = Pe::new().unwrap();
    let cpe = Pe::new().unwrap();
    let connected = Rc::new(RefCell::new(Vec::new()));
    let c2 = connected.clone();
    let server = Server::builder(&arm, &rep, "in-order", &spe)
        .on_connect(move |_, conn, ok| c2.borrow_mut().push((conn, ok)))
        .on_message(|ch, conn, msg| ch.send(conn, msg, 0).unwrap())
        .start()
        .unwrap();
    let got = Rc::new(RefCell::new(Vec::new()));
    let g2 = got.clone();
    let client = Client::builder(&host, "in-order", &cpe)
        .on_message(move |_, _, msg| g2.borrow_mut().push(msg.to_vec()))
        .start()
        .unwrap();
    until(&[&spe, &cpe], || {
        client.state().unwrap() == dpakit::ctx::CtxState::Running
    });
    let conn = client.connection().unwrap();
    until(&[&spe, &cpe], || !connected.borrow().is_empty());
    assert!(connected.borrow()[0].1);
    let n = 10_000u32;
    let mut sent = 0u32;
    until(&[&spe, &cpe], || {
        while sent < n && client.channel().send(conn, &sent.to_le_bytes(), 0).is_ok() {
            sent += 1;
        }
        got.borrow().len() == n as usize
    });
    for (i, m) in got.borrow().iter().enumerate() {
        assert_eq!(m.as_slice(), &(i as u32).to_le_bytes());
    }
    let c = client.channel().counters(conn).unwrap();
    assert_eq!(c.sent_messages, n as u64);
    assert_eq!(c.recv_messages, n as u64);
    drop(client);
    drop(server);
}

#[test]
fn a_second_server_of_the_same_name_already_exists() {
    private_runtime_dir();
    let arm = Dev::open_by_pci(ARM).unwrap();
    let rep = DevRep::open_by_pci(&arm, HOST).unwrap();
    let pe = Pe::new().unwrap();
    let _first = Server::builder(&arm, &rep, "twice", &pe)
        .on_connect(|_, _, _| {})
        .on_message(|_, _, _| {})
        .start()
        .unwrap();
    let e = Server::builder(&arm, &rep, "twice", &pe)
        .on_connect(|_, _, _| {})
        .on_message(|_, _, _| {})
        .start()
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::AlreadyExist, "{e}");
}

fn pair(name: &str, spe: &Pe, cpe: &Pe) -> (Server, Client, Rc<RefCell<Vec<String>>>) {
    let arm = Dev::open_by_pci(ARM).unwrap();
    let rep = DevRep::open_by_pci(&arm, HOST).unwrap();
    let host = Dev::open_by_pci(HOST).unwrap();
    let log: Rc<RefCell<Vec<String>>> = Rc::default();
    let (l1, l2) = (log.clone(), log.clone());
    let server = Server::builder(&arm, &rep, name, spe)
        .on_connect(move |ch, conn, ok| {
            ch.set_user_data(conn, 77).unwrap();
            l1.borrow_mut().push(format!("connect {ok}"));
        })
        .on_disconnect(move |_, _, ok| l2.borrow_mut().push(format!("disconnect {ok}")))
        .on_message(|ch, conn, msg| {
            assert_eq!(ch.user_data(conn).unwrap().get::<u64>(), 77);
            // Echoes all but what asks for quiet.
            if !msg.starts_with(b"quiet") {
                ch.send(conn, msg, 0).unwrap()
            }
        })
        .start()
        .unwrap();
    let client = Client::builder(&host, name, cpe)
        .on_message(|_, _, _| {})
        .start()
        .unwrap();
    (server, client, log)
}

#[test]
fn a_server_side_disconnect_stops_the_client() {
    private_runtime_dir();
    let (spe, cpe) = (Pe::new().unwrap(), Pe::new().unwrap());
    let (server, client, log) = pair("server-disconnects", &spe, &cpe);
    until(&[&spe, &cpe], || log.borrow().len() == 1);
    let conn = server.channel().connections()[0];
    server.channel().disconnect(conn).unwrap();
    assert_eq!(
        server.channel().disconnect(conn).unwrap_err().code(),
        ErrorCode::NotConnected,
        "a connection disconnects once"
    );
    until(&[&spe, &cpe], || {
        client.state().unwrap() == dpakit::ctx::CtxState::Idle && log.borrow().len() == 2
    });
    assert_eq!(*log.borrow(), ["connect true", "disconnect true"]);
    assert!(server.channel().connections().is_empty());
    assert_eq!(
        server.channel().send(conn, b"late", 0).unwrap_err().code(),
        ErrorCode::NotConnected
    );
}

#[test]
fn a_stopped_client_is_a_disconnection_on_the_server() {
    private_runtime_dir();
    let (spe, cpe) = (Pe::new().unwrap(), Pe::new().unwrap());
    let (server, client, log) = pair("client-stops", &spe, &cpe);
    until(&[&spe, &cpe], || log.borrow().len() == 1);
    client.stop().unwrap();
    assert_eq!(client.state().unwrap(), dpakit::ctx::CtxState::Idle);
    until(&[&spe], || log.borrow().len() == 2);
    assert!(server.channel().connections().is_empty());
}

/// A connected pair with a few round trips done, so control messages travel through the
/// shared-memory rings both ways: a sleeping side is then woken by its peer's WAKE on the
/// socket, not by the message itself.
fn warm_pair(name: &str, spe: &Pe, cpe: &Pe) -> (Server, Client, Connection) {
    let (server, client, log) = pair(name, spe, cpe);
    until(&[spe, cpe], || log.borrow().len() == 1);
    let conn = client.connection().unwrap();
    for _ in 0..3 {
        client.channel().send(conn, b"warm", 0).unwrap();
        until(&[spe, cpe], || client.channel().in_flight() == 0);
    }
    for _ in 0..100 {
        spe.progress();
        cpe.progress();
    }
    (server, client, conn)
}

/// Runs `pe` until it has nothing to do, checks that it would sleep, and arms its notification
/// handle as a program does before it sleeps.
fn put_to_sleep(pe: &Pe) {
    while pe.progress() {}
    assert!(!pe.wait(Duration::from_millis(20)).unwrap());
    pe.request_notification().unwrap();
}

/// Whether `pe`'s notification handle, armed before, is signalled within `timeout` (without
/// arming it again, which would look at the rings itself); the signal is consumed.
fn signalled(pe: &Pe, timeout: Duration) -> bool {
    let mut pfd = libc::pollfd {
        fd: pe.notification_handle(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    let rc = unsafe { libc::poll(&mut pfd, 1, timeout.as_millis() as i32) };
    pe.clear_notification().unwrap();
    rc == 1
}

#[test]
fn a_message_wakes_a_sleeping_progress_engine() {
    private_runtime_dir();
    let (spe, cpe) = (Pe::new().unwrap(), Pe::new().unwrap());
    let (_server, client, conn) = warm_pair("wakes", &spe, &cpe);
    // Nothing pending: the server's PE sleeps until the timeout.
    put_to_sleep(&spe);
    client.channel().send(conn, b"wake", 0).unwrap();
    cpe.progress();
    assert!(
        signalled(&spe, Duration::from_secs(5)),
        "a message must signal the sleeping server's notification handle"
    );
    until(&[&spe, &cpe], || client.channel().in_flight() == 0);
}

#[test]
fn a_sleeping_client_is_woken_by_a_message_and_by_a_delivery() {
    private_runtime_dir();
    let (spe, cpe) = (Pe::new().unwrap(), Pe::new().unwrap());
    let (server, client, conn) = warm_pair("wakes-client", &spe, &cpe);
    // A message from the server wakes the client.
    put_to_sleep(&cpe);
    let sconn = server.channel().connections()[0];
    server.channel().send(sconn, b"hello", 0).unwrap();
    spe.progress();
    assert!(
        signalled(&cpe, Duration::from_secs(5)),
        "a message must signal the sleeping client's notification handle"
    );
    until(&[&spe, &cpe], || server.channel().in_flight() == 0);
    // A client sleeping with a send in flight is woken once the server has taken it: its
    // completion (DOCA: delivered to the remote side) is work for it. No echo comes back.
    client
        .channel()
        .send(conn, b"quiet: deliver me", 0)
        .unwrap();
    while cpe.progress() {}
    assert_eq!(
        client.channel().in_flight(),
        1,
        "delivered only once the server took it"
    );
    cpe.request_notification().unwrap();
    spe.progress();
    assert!(
        signalled(&cpe, Duration::from_secs(5)),
        "the delivery must signal the sleeping client's notification handle"
    );
    until(&[&cpe], || client.channel().in_flight() == 0);
}

#[test]
fn a_client_without_a_server_keeps_trying_and_stops_cleanly() {
    private_runtime_dir();
    let host = Dev::open_by_pci(HOST).unwrap();
    let pe = Pe::new().unwrap();
    let client = Client::builder(&host, "nobody-here", &pe)
        .on_message(|_, _, _| {})
        .start()
        .unwrap();
    assert_eq!(client.state().unwrap(), dpakit::ctx::CtxState::Starting);
    // The retry timer wakes a sleeping PE while the client is starting.
    assert!(pe.wait(Duration::from_secs(1)).unwrap());
    assert_eq!(
        client
            .connect(Duration::from_millis(50))
            .unwrap_err()
            .code(),
        ErrorCode::TimeOut
    );
    client.stop().unwrap();
    assert_eq!(client.state().unwrap(), dpakit::ctx::CtxState::Idle);
}

#[test]
fn oversized_messages_are_refused_before_they_are_sent() {
    private_runtime_dir();
    let (spe, cpe) = (Pe::new().unwrap(), Pe::new().unwrap());
    let (_server, client, log) = pair("oversized", &spe, &cpe);
    until(&[&spe, &cpe], || log.borrow().len() == 1);
    let conn = client.connection().unwrap();
    let max = client.max_msg_size() as usize;
    assert_eq!(max, 4080);
    let big = vec![0u8; max + 1];
    assert_eq!(
        client.channel().send(conn, &big, 0).unwrap_err().code(),
        ErrorCode::InvalidValue
    );
    client.channel().send(conn, &big[..max], 0).unwrap();
}

/// What one side's receive callback saw.
type Log = Rc<RefCell<Vec<Vec<u8>>>>;

/// A server and a client of `name`, each on its PE, connected and past a first message, so
/// their control rings are up. The server answers with `server_answers`; the messages the
/// server (`log_at_server`) or else the client receives are logged, and the log starts empty.
fn ring_pair(
    name: &str,
    spe: &Pe,
    cpe: &Pe,
    server_answers: bool,
    log_at_server: bool,
) -> (Server, Client, Log) {
    let arm = Dev::open_by_pci(ARM).unwrap();
    let rep = DevRep::open_by_pci(&arm, HOST).unwrap();
    let host = Dev::open_by_pci(HOST).unwrap();
    let log: Log = Rc::default();
    let (at_server, at_client) = (log.clone(), log.clone());
    let server = Server::builder(&arm, &rep, name, spe)
        .on_message(move |ch, conn, msg| {
            if log_at_server {
                at_server.borrow_mut().push(msg.to_vec());
            }
            if server_answers {
                ch.send(conn, msg, 0).unwrap();
            }
        })
        .start()
        .unwrap();
    let client = Client::builder(&host, name, cpe)
        .on_message(move |_, _, msg| {
            if !log_at_server {
                at_client.borrow_mut().push(msg.to_vec());
            }
        })
        .start()
        .unwrap();
    until(&[spe, cpe], || {
        client.state().unwrap() == dpakit::ctx::CtxState::Running
    });
    let conn = client.connection().unwrap();
    client.channel().send(conn, b"warm", 0).unwrap();
    until(&[spe, cpe], || {
        log.borrow().len() == 1 && client.channel().in_flight() == 0
    });
    for _ in 0..100 {
        spe.progress();
        cpe.progress();
    }
    log.borrow_mut().clear();
    (server, client, log)
}

/// Messages still in the server's ring when the client stops are read before the
/// disconnection, as a socket's bytes are read to its end.
#[test]
fn messages_in_flight_when_a_client_stops_are_delivered_in_order() {
    private_runtime_dir();
    let (spe, cpe) = (Pe::new().unwrap(), Pe::new().unwrap());
    let (_server, client, got) = ring_pair("stop-in-flight", &spe, &cpe, false, true);
    let conn = client.connection().unwrap();
    for m in [&b"one"[..], b"two", b"three"] {
        client.channel().send(conn, m, 0).unwrap();
    }
    cpe.progress();
    client.stop().unwrap();
    until(&[&spe, &cpe], || {
        got.borrow().len() == 3 && client.state().unwrap() == dpakit::ctx::CtxState::Idle
    });
    assert_eq!(*got.borrow(), [&b"one"[..], b"two", b"three"]);
}

/// Messages still in the client's ring when the server stops (it closes its connections
/// without a word) are read before the client sees the end of the connection.
#[test]
fn messages_in_flight_when_a_server_stops_are_delivered_in_order() {
    private_runtime_dir();
    let (spe, cpe) = (Pe::new().unwrap(), Pe::new().unwrap());
    let (server, client, got) = ring_pair("server-stop-in-flight", &spe, &cpe, true, false);
    let sconn = server.channel().connections()[0];
    for m in [&b"one"[..], b"two", b"three"] {
        server.channel().send(sconn, m, 0).unwrap();
    }
    spe.progress();
    server.stop().unwrap();
    until(&[&spe, &cpe], || {
        client.state().unwrap() == dpakit::ctx::CtxState::Idle
    });
    assert_eq!(*got.borrow(), [&b"one"[..], b"two", b"three"]);
}
