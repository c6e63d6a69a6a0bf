//! The Comch control path in one process: server and client on their own progress engines.

use dpakit::ErrorCode;
use dpakit::comch::{Client, Server};
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
