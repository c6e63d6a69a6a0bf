//! Comch servers and clients without callbacks: every event comes out as a value, in order,
//! through `try_event` and `next_event`; a full queue says how much it lost.

use dpakit::ErrorCode;
use dpakit::comch::{Client, EVENT_QUEUE_CAP, Event, Server};
use dpakit::dev::{Dev, DevRep};
use dpakit::pe::Pe;
use std::time::Duration;

const ARM: &str = "0000:03:00.0";
const HOST: &str = "0000:b1:00.0";
const WAIT: Duration = Duration::from_secs(10);

fn private_runtime_dir() {
    let dir = std::env::temp_dir().join(format!("dpakit-events-{}", std::process::id()));
    // SAFETY: set before any thread of this test binary reads it (every test sets the same).
    unsafe { std::env::set_var("DPAKIT_SOFT_RUNTIME_DIR", &dir) };
}

/// A server and a connected client on one PE, and the server's view of the connection.
fn pair(name: &str, pe: &Pe) -> (Server, Client, dpakit::comch::Connection) {
    private_runtime_dir();
    let arm = Dev::open_by_pci(ARM).unwrap();
    let rep = DevRep::open_by_pci(&arm, HOST).unwrap();
    let host = Dev::open_by_pci(HOST).unwrap();
    let server = Server::builder(&arm, &rep, name, pe).start().unwrap();
    let client = Client::builder(&host, name, pe).start().unwrap();
    client.connect(WAIT).unwrap();
    let conn = match server.next_event(WAIT).unwrap() {
        Some(Event::Connected { conn }) => conn,
        other => panic!("expected the client's connection first, got {other:?}"),
    };
    (server, client, conn)
}

#[test]
fn messages_and_completions_come_as_values_in_order() {
    let pe = Pe::new().unwrap();
    let (server, client, at_server) = pair("events-in-order", &pe);
    // A client has no connection events (DOCA registers them on servers): `connect` is its
    // way to wait for the connection.
    let at_client = client.connection().unwrap();
    for i in 0..50u64 {
        client
            .channel()
            .send(at_client, format!("m{i}").as_bytes(), i)
            .unwrap();
    }
    let mut got = Vec::new();
    while got.len() < 50 {
        match server.next_event(WAIT).unwrap() {
            Some(Event::Message { conn, msg }) => {
                assert_eq!(conn, at_server);
                got.push(String::from_utf8(msg.to_vec()).unwrap());
            }
            other => panic!("expected a message, got {other:?}"),
        }
    }
    assert_eq!(got, (0..50).map(|i| format!("m{i}")).collect::<Vec<_>>());
    let mut done = Vec::new();
    while done.len() < 50 {
        match client.next_event(WAIT).unwrap() {
            Some(Event::SendDone(c)) => {
                assert_eq!(c.status, ErrorCode::Success);
                done.push(c.user_data.get::<u64>());
            }
            other => panic!("expected a send completion, got {other:?}"),
        }
    }
    assert_eq!(done, (0..50).collect::<Vec<_>>());
    assert_eq!(server.try_event(), None, "nothing else happened");
    client.stop().unwrap();
    assert_eq!(
        server.next_event(WAIT).unwrap(),
        Some(Event::Disconnected { conn: at_server })
    );
}

#[test]
fn a_wait_with_nothing_to_report_ends_at_its_timeout() {
    let pe = Pe::new().unwrap();
    let (server, _client, _) = pair("events-timeout", &pe);
    let started = std::time::Instant::now();
    assert_eq!(server.next_event(Duration::from_millis(50)).unwrap(), None);
    assert!(started.elapsed() >= Duration::from_millis(50));
}

#[test]
fn an_endpoint_with_callbacks_queues_nothing_and_one_without_queues_all() {
    private_runtime_dir();
    let pe = Pe::new().unwrap();
    let arm = Dev::open_by_pci(ARM).unwrap();
    let rep = DevRep::open_by_pci(&arm, HOST).unwrap();
    let host = Dev::open_by_pci(HOST).unwrap();
    // The server reports through its callback (an echo); the client hands out values.
    let server = Server::builder(&arm, &rep, "events-styles", &pe)
        .on_message(|ch, conn, msg| ch.send(conn, msg, 0).unwrap())
        .start()
        .unwrap();
    let client = Client::builder(&host, "events-styles", &pe)
        .start()
        .unwrap();
    let conn = client.connect(WAIT).unwrap();
    client.channel().send(conn, b"ping", 7).unwrap();
    let mut echoed = false;
    let mut sent = false;
    while !(echoed && sent) {
        match client.next_event(WAIT).unwrap() {
            Some(Event::Message { msg, .. }) => {
                assert_eq!(&*msg, b"ping");
                echoed = true;
            }
            Some(Event::SendDone(c)) => {
                assert_eq!(
                    (c.user_data.get::<u64>(), c.status),
                    (7, ErrorCode::Success)
                );
                sent = true;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    // Its connection, and its echo's completion, went nowhere: it has callbacks.
    assert_eq!(server.try_event(), None);
}

#[test]
fn a_full_queue_counts_what_it_lost_and_says_so_first() {
    let pe = Pe::new().unwrap();
    let (server, client, _) = pair("events-lagged", &pe);
    let conn = client.connection().unwrap();
    let total = EVENT_QUEUE_CAP as u64 + 100;
    let mut sent = 0u64;
    // The program progresses without taking the server's events: past the cap they are lost.
    while sent < total {
        match client.channel().send(conn, &sent.to_le_bytes(), 0) {
            Ok(()) => sent += 1,
            Err(e) if e.code() == ErrorCode::NoMemory => {
                pe.progress();
            }
            Err(e) => panic!("{e}"),
        }
    }
    let deadline = std::time::Instant::now() + WAIT;
    while client.channel().in_flight() > 0 {
        pe.progress();
        assert!(
            std::time::Instant::now() < deadline,
            "sends did not complete"
        );
    }
    for _ in 0..100 {
        pe.progress();
    }
    assert_eq!(server.try_event(), Some(Event::Lagged { dropped: 100 }));
    // Then the ones that fit, oldest first.
    for i in 0..EVENT_QUEUE_CAP as u64 {
        match server.try_event() {
            Some(Event::Message { msg, .. }) => assert_eq!(*msg, i.to_le_bytes()),
            other => panic!("message {i}: got {other:?}"),
        }
    }
    assert_eq!(server.try_event(), None);
}
