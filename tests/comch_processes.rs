//! The Comch control path between processes, as on a BlueField: a server process on the Arm
//! side, client processes on the host side. The test binary runs itself in a role (server or
//! client, chosen by environment) for each process; roles report what happens as `EV ...`
//! lines on stdout, stamped with CLOCK_MONOTONIC (shared by every process of the machine).

#[path = "support/procs.rs"]
mod procs;

use dpakit::ErrorCode;
use dpakit::comch::{Client, Connection, Server};
use dpakit::ctx::CtxState;
use dpakit::dev::{Dev, DevRep};
use dpakit::pe::Pe;
use procs::{Proc, ev, leftovers, runtime_dir, var, var_u64};
use std::cell::{Cell, RefCell};
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

const ARM: &str = "0000:03:00.0";
const HOST: &str = "0000:b1:00.0";
const HOST_VF: &str = "0000:b1:00.2";

// ---------------------------------------------------------------------------------------------
// Roles (run in child processes)
// ---------------------------------------------------------------------------------------------

/// Entry point of the child processes; a no-op in a normal test run.
#[test]
fn role() {
    match var("DPAKIT_ROLE").as_str() {
        "server" => server_role(),
        "client" => client_role(),
        _ => {}
    }
}

/// Serves until `EXIT_AFTER` clients have disconnected: checks each client's stream of
/// sequence numbers arrives exactly once and in order, echoes `ECHO` messages, and streams
/// `STREAM` numbered messages to each new client.
fn server_role() {
    let arm = Dev::open_by_pci(ARM).unwrap();
    let rep = DevRep::open_by_pci(&arm, &var("REP")).unwrap();
    let pe = Pe::new().unwrap();
    let exit_after = var_u64("EXIT_AFTER", 1);
    let stream = var_u64("STREAM", 0);
    let gone = Rc::new(Cell::new(0u64));
    let expected: Rc<RefCell<Vec<(Connection, u64, u64)>>> = Rc::default();
    let to_stream: Rc<RefCell<Vec<(Connection, u64)>>> = Rc::default();
    let mut builder = Server::builder(&arm, &rep, "procs", &pe).num_send_tasks(256);
    if let Ok(size) = var("MAX_MSG").parse() {
        builder = builder.max_msg_size(size);
    }
    let (g, e1, e2, s1) = (
        gone.clone(),
        expected.clone(),
        expected.clone(),
        to_stream.clone(),
    );
    let started = builder
        .on_connect(move |_, conn, ok| {
            ev(format_args!("connect {}", u8::from(ok)));
            if ok {
                e1.borrow_mut().push((conn, 0, 0));
                s1.borrow_mut().push((conn, 0));
            }
        })
        .on_disconnect(move |_, conn, _| {
            let mut e = e2.borrow_mut();
            let got = e.iter().find(|x| x.0 == conn).map_or(0, |x| x.1);
            e.retain(|x| x.0 != conn);
            ev(format_args!("disconnect {got}"));
            g.set(g.get() + 1);
        })
        .on_message({
            let e = expected.clone();
            move |ch, conn, msg| {
                if msg.starts_with(b"echo:") {
                    ch.send(conn, msg, 0).unwrap();
                    return;
                }
                let seq = u64::from_le_bytes(msg[..8].try_into().unwrap());
                let mut e = e.borrow_mut();
                let entry = e.iter_mut().find(|x| x.0 == conn).unwrap();
                assert_eq!(seq, entry.1, "message out of order or duplicated");
                entry.1 += 1;
            }
        })
        .start();
    let server = match started {
        Ok(s) => s,
        Err(e) => {
            ev(format_args!("start-failed {:?}", e.code()));
            return;
        }
    };
    ev(format_args!("ready"));
    while gone.get() < exit_after {
        for entry in to_stream.borrow_mut().iter_mut() {
            while entry.1 < stream
                && server
                    .channel()
                    .send(entry.0, &entry.1.to_le_bytes(), 0)
                    .is_ok()
            {
                entry.1 += 1;
            }
        }
        if !pe.progress() {
            let _ = pe.wait(Duration::from_millis(20));
        }
    }
    drop(server);
    ev(format_args!("exit"));
}

/// `CLIENTS` clients of the server through `PCI`: each sends `COUNT` numbered messages and
/// checks the server's stream of `STREAM` messages arrives exactly once and in order; then
/// stops (or, with `HOLD`, stays connected until killed).
fn client_role() {
    let host = Dev::open_by_pci(&var("PCI")).unwrap();
    let count = var_u64("COUNT", 0);
    let stream = var_u64("STREAM", 0);
    let n_clients = var_u64("CLIENTS", 1) as usize;
    let mut pes = Vec::new();
    let mut clients = Vec::new();
    let received: Rc<RefCell<Vec<u64>>> = Rc::new(RefCell::new(vec![0; n_clients]));
    for i in 0..n_clients {
        let pe = Pe::new().unwrap();
        let mut builder = Client::builder(&host, "procs", &pe).num_send_tasks(256);
        if let Ok(size) = var("MAX_MSG").parse() {
            builder = builder.max_msg_size(size);
        }
        let r = received.clone();
        let client = builder
            .on_message(move |_, _, msg| {
                let seq = u64::from_le_bytes(msg[..8].try_into().unwrap());
                let mut r = r.borrow_mut();
                assert_eq!(seq, r[i], "message out of order or duplicated");
                r[i] += 1;
            })
            .start()
            .unwrap();
        pes.push(pe);
        clients.push(client);
    }
    let mut conns = Vec::new();
    for c in &clients {
        match c.connect(Duration::from_millis(var_u64("CONNECT_MS", 5000))) {
            Ok(conn) => conns.push(conn),
            Err(e) => {
                ev(format_args!("connect-failed {:?}", e.code()));
                return;
            }
        }
    }
    ev(format_args!("connected {}", conns.len()));
    if var("HOLD") == "1" {
        loop {
            for (pe, c) in pes.iter().zip(&clients) {
                pe.progress();
                if c.state().unwrap() != CtxState::Running {
                    ev(format_args!("lost"));
                    return;
                }
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    let mut sent = vec![0u64; n_clients];
    loop {
        let mut done = true;
        for i in 0..n_clients {
            while sent[i] < count
                && clients[i]
                    .channel()
                    .send(conns[i], &sent[i].to_le_bytes(), 0)
                    .is_ok()
            {
                sent[i] += 1;
            }
            pes[i].progress();
            done &= sent[i] == count
                && clients[i].channel().in_flight() == 0
                && received.borrow()[i] == stream;
        }
        if done {
            break;
        }
    }
    for (c, conn) in clients.iter().zip(&conns) {
        let k = c.channel().counters(*conn).unwrap();
        assert_eq!(k.sent_messages, count);
        assert_eq!(k.recv_messages, stream);
    }
    ev(format_args!("done {}", sent.iter().sum::<u64>()));
}

// ---------------------------------------------------------------------------------------------
// The tests (parent process)
// ---------------------------------------------------------------------------------------------

const T: Duration = Duration::from_secs(30);

fn server(dir: &Path, env: &[(&str, String)]) -> Proc {
    let mut all = vec![("REP", HOST.to_string())];
    all.extend_from_slice(env);
    let s = Proc::spawn(dir, "server", &all);
    s.expect("ready", T);
    s
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "a volume test: cargo xtask test runs it in release (the feature-doca stage)"
)]
fn a_million_messages_each_way_arrive_once_and_in_order() {
    let dir = runtime_dir("million");
    let n = "1000000".to_string();
    let s = server(&dir, &[("STREAM", n.clone())]);
    let c = Proc::spawn(
        &dir,
        "client",
        &[("PCI", HOST.into()), ("COUNT", n.clone()), ("STREAM", n)],
    );
    c.expect("connected", T);
    s.expect("connect 1", T);
    c.expect("done 1000000", Duration::from_secs(240));
    c.wait_ok();
    assert_eq!(s.expect("disconnect", T).1, "disconnect 1000000");
    s.expect("exit", T);
    s.wait_ok();
    assert_eq!(leftovers(&dir), Vec::<String>::new());
}

#[test]
fn sixty_four_clients_share_one_server() {
    let dir = runtime_dir("sixty-four");
    let s = server(
        &dir,
        &[("EXIT_AFTER", "64".into()), ("STREAM", "100".into())],
    );
    let clients: Vec<Proc> = (0..4)
        .map(|_| {
            Proc::spawn(
                &dir,
                "client",
                &[
                    ("PCI", HOST.into()),
                    ("CLIENTS", "16".into()),
                    ("COUNT", "1000".into()),
                    ("STREAM", "100".into()),
                ],
            )
        })
        .collect();
    for c in clients {
        c.expect("done 16000", T);
        c.wait_ok();
    }
    for _ in 0..64 {
        assert_eq!(s.expect("disconnect", T).1, "disconnect 1000");
    }
    s.expect("exit", T);
    s.wait_ok();
    assert_eq!(leftovers(&dir), Vec::<String>::new());
}

#[test]
fn a_client_on_another_pci_function_never_reaches_the_server() {
    let dir = runtime_dir("isolation");
    let s = server(&dir, &[]);
    let c = Proc::spawn(
        &dir,
        "client",
        &[("PCI", HOST_VF.into()), ("CONNECT_MS", "500".into())],
    );
    assert_eq!(
        c.expect("connect-failed", T).1,
        format!("connect-failed {:?}", ErrorCode::TimeOut)
    );
    c.wait_ok();
    assert!(
        s.events.try_recv().is_err(),
        "the server must not hear of a client of another function"
    );
}

#[test]
fn a_second_server_of_a_name_is_refused_across_processes() {
    let dir = runtime_dir("duplicate");
    let _s = server(&dir, &[]);
    let second = Proc::spawn(&dir, "server", &[("REP", HOST.into())]);
    assert_eq!(
        second.expect("start-failed", T).1,
        format!("start-failed {:?}", ErrorCode::AlreadyExist)
    );
    second.wait_ok();
}

#[test]
fn a_max_message_size_mismatch_refuses_the_connection_on_both_sides() {
    let dir = runtime_dir("mismatch");
    let s = server(&dir, &[("MAX_MSG", "2048".into())]);
    let c = Proc::spawn(
        &dir,
        "client",
        &[("PCI", HOST.into()), ("MAX_MSG", "1024".into())],
    );
    assert_eq!(
        c.expect("connect-failed", T).1,
        format!("connect-failed {:?}", ErrorCode::ConnectionAborted)
    );
    c.wait_ok();
    s.expect("connect 0", T);
}

#[test]
fn a_killed_client_is_a_disconnection_within_100_ms_and_the_server_goes_on() {
    let dir = runtime_dir("kill-client");
    let s = server(&dir, &[("EXIT_AFTER", "2".into())]);
    let mut c = Proc::spawn(
        &dir,
        "client",
        &[("PCI", HOST.into()), ("HOLD", "1".into())],
    );
    c.expect("connected", T);
    s.expect("connect 1", T);
    let killed = c.kill9();
    let (seen, _) = s.expect("disconnect", T);
    let ms = (seen.saturating_sub(killed)) as f64 / 1e6;
    eprintln!("disconnection seen {ms:.2} ms after kill -9");
    assert!(ms < 100.0, "disconnection seen {ms:.1} ms after kill -9");
    let again = Proc::spawn(
        &dir,
        "client",
        &[("PCI", HOST.into()), ("COUNT", "10".into())],
    );
    again.expect("done 10", T);
    again.wait_ok();
    s.expect("exit", T);
    s.wait_ok();
    assert_eq!(leftovers(&dir), Vec::<String>::new());
}

#[test]
fn a_killed_server_is_a_disconnection_within_100_ms_and_a_new_one_serves() {
    let dir = runtime_dir("kill-server");
    let mut s = server(&dir, &[]);
    let c = Proc::spawn(
        &dir,
        "client",
        &[("PCI", HOST.into()), ("HOLD", "1".into())],
    );
    c.expect("connected", T);
    let killed = s.kill9();
    let (seen, _) = c.expect("lost", T);
    let ms = (seen.saturating_sub(killed)) as f64 / 1e6;
    eprintln!("disconnection seen {ms:.2} ms after kill -9");
    assert!(ms < 100.0, "disconnection seen {ms:.1} ms after kill -9");
    c.wait_ok();
    let s2 = server(&dir, &[]);
    let again = Proc::spawn(
        &dir,
        "client",
        &[("PCI", HOST.into()), ("COUNT", "10".into())],
    );
    again.expect("done 10", T);
    again.wait_ok();
    s2.expect("exit", T);
    s2.wait_ok();
    assert_eq!(leftovers(&dir), Vec::<String>::new());
}
