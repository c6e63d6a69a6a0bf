//! The Comch fast path between processes: producers in the server process (Arm side) and
//! consumers in the client process (host side), each on its own thread with its own progress
//! engine; every byte checked, per-producer order checked, nothing lost or duplicated.

#[path = "support/fast.rs"]
mod fast;
#[path = "support/procs.rs"]
mod procs;

use dpakit::comch::{Client, Server};
use dpakit::dev::{Dev, DevRep};
use dpakit::pe::Pe;
use fast::{Consumer, Producer, seq_of};
use procs::{Proc, ev, leftovers, runtime_dir, var_u64};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// A raw handle carried to another thread; the owner keeps the object alive until the thread
/// is joined.
#[derive(Clone, Copy)]
struct Raw(usize);

/// Entry point of the child processes; a no-op in a normal test run.
#[test]
fn role() {
    match procs::var("DPAKIT_ROLE").as_str() {
        "producers" => producers_role(),
        "consumers" => consumers_role(),
        _ => {}
    }
}

/// The server: once the client's `CONSUMERS` consumers are announced, `PRODUCERS` threads
/// each send `PER_PAIR` messages to every consumer.
fn producers_role() {
    let arm = Dev::open_by_pci("03:00.0").unwrap();
    let rep = DevRep::open_by_pci(&arm, "b1:00.0").unwrap();
    let pe = Pe::new().unwrap();
    let n_consumers = var_u64("CONSUMERS", 1) as usize;
    let n_producers = var_u64("PRODUCERS", 1);
    let per_pair = var_u64("PER_PAIR", 1000);
    let ids: Rc<RefCell<Vec<u32>>> = Rc::default();
    let gone = Rc::new(RefCell::new(0usize));
    let (i2, g2) = (ids.clone(), gone.clone());
    let server = Server::builder(&arm, &rep, "fast-procs", &pe)
        .on_connect(|_, _, _| {})
        .on_disconnect(move |_, _, _| *g2.borrow_mut() += 1)
        .on_message(|_, _, _| {})
        .on_consumer(move |_, _, id, created| {
            if created {
                i2.borrow_mut().push(id)
            }
        })
        .start()
        .unwrap();
    ev(format_args!("ready"));
    while ids.borrow().len() < n_consumers {
        if !pe.progress() {
            let _ = pe.wait(Duration::from_millis(10));
        }
    }
    let conn = Raw(server.channel().connections()[0].as_raw() as usize);
    let dev = Raw(arm.as_raw() as usize);
    let targets = ids.borrow().clone();
    let threads: Vec<_> = (0..n_producers)
        .map(|k| {
            let targets = targets.clone();
            std::thread::spawn(move || {
                let mut p = Producer::start(conn.0 as *mut _, dev.0 as *mut _, 8);
                let (mut n, mut in_flight, mut failed) = (0u64, 0usize, 0usize);
                // A failed send (the consumer went away) ends the stream.
                while (n < per_pair && failed == 0) || in_flight > 0 {
                    while n < per_pair && failed == 0 && in_flight + targets.len() <= p.slots {
                        for &id in &targets {
                            assert_eq!(p.send(id, seq_of(k, n)), 0);
                        }
                        n += 1;
                        in_flight += targets.len();
                    }
                    if !p.progress() {
                        fast::pe_wait(p.pe, 10);
                    }
                    let done = std::mem::take(&mut p.outbox.borrow_mut().done);
                    failed += done.iter().filter(|d| d.1 != 0).count();
                    in_flight -= done.len();
                }
                p.destroy();
                failed
            })
        })
        .collect();
    // The server keeps progressing its control path while the producers run.
    while !threads.iter().all(|t| t.is_finished()) {
        if !pe.progress() {
            let _ = pe.wait(Duration::from_millis(10));
        }
    }
    let failed: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    ev(format_args!("sent failed={failed}"));
    while *gone.borrow() == 0 {
        if !pe.progress() {
            let _ = pe.wait(Duration::from_millis(10));
        }
    }
    drop(server);
    ev(format_args!("exit"));
}

/// The client: `CONSUMERS` threads, each with a consumer expecting `PRODUCERS * PER_PAIR`
/// messages.
fn consumers_role() {
    let host = Dev::open_by_pci("b1:00.0").unwrap();
    let pe = Pe::new().unwrap();
    let client = Client::builder(&host, "fast-procs", &pe)
        .on_message(|_, _, _| {})
        .start()
        .unwrap();
    let conn = client.connect(Duration::from_secs(10)).unwrap();
    let expected = var_u64("PRODUCERS", 1) * var_u64("PER_PAIR", 1000);
    let (conn, dev) = (Raw(conn.as_raw() as usize), Raw(host.as_raw() as usize));
    let threads: Vec<_> = (0..var_u64("CONSUMERS", 1))
        .map(|_| {
            std::thread::spawn(move || {
                let c = Consumer::start(conn.0 as *mut _, dev.0 as *mut _, 8);
                let mut told = false;
                while c.inbox.borrow().count < expected {
                    if !told && c.inbox.borrow().count > 0 {
                        ev(format_args!("receiving"));
                        told = true;
                    }
                    if !c.progress() {
                        fast::pe_wait(c.pe, 10);
                    }
                }
                let i = c.inbox.borrow();
                let result = (i.count, i.bad, i.disorder, i.errors.len());
                drop(i);
                c.destroy();
                result
            })
        })
        .collect();
    while !threads.iter().all(|t| t.is_finished()) {
        if !pe.progress() {
            let _ = pe.wait(Duration::from_millis(10));
        }
    }
    let (mut count, mut bad, mut disorder, mut errors) = (0, 0, 0, 0);
    for t in threads {
        let r = t.join().unwrap();
        count += r.0;
        bad += r.1;
        disorder += r.2;
        errors += r.3;
    }
    ev(format_args!(
        "received {count} bad={bad} disorder={disorder} errors={errors}"
    ));
    drop(client);
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "a volume test: cargo xtask test runs it in release (the feature-doca stage)"
)]
fn a_million_buffers_from_64_bytes_to_1_mib_cross_processes_intact() {
    let dir = runtime_dir("fast-million");
    let env = [
        ("PRODUCERS", "2".to_string()),
        ("CONSUMERS", "2".to_string()),
        ("PER_PAIR", "250000".to_string()),
    ];
    let s = Proc::spawn(&dir, "producers", &env);
    s.expect("ready", Duration::from_secs(30));
    let c = Proc::spawn(&dir, "consumers", &env);
    let t = Duration::from_secs(600);
    assert_eq!(s.expect("sent", t).1, "sent failed=0");
    assert_eq!(
        c.expect("received", t).1,
        "received 1000000 bad=0 disorder=0 errors=0"
    );
    c.wait_ok();
    s.expect("exit", Duration::from_secs(30));
    s.wait_ok();
    assert_eq!(leftovers(&dir), Vec::<String>::new());
}

#[test]
fn a_consumer_process_killed_mid_stream_fails_the_sends_and_the_server_goes_on() {
    let dir = runtime_dir("fast-kill");
    let env = [
        ("PRODUCERS", "1".to_string()),
        ("CONSUMERS", "1".to_string()),
        ("PER_PAIR", "100000000".to_string()),
    ];
    let s = Proc::spawn(&dir, "producers", &env);
    s.expect("ready", Duration::from_secs(30));
    let mut c = Proc::spawn(&dir, "consumers", &env);
    c.expect("receiving", Duration::from_secs(30));
    c.kill9();
    let (_, sent) = s.expect("sent", Duration::from_secs(30));
    assert!(
        sent != "sent failed=0",
        "sends to a dead consumer fail: {sent}"
    );
    s.expect("exit", Duration::from_secs(30));
    s.wait_ok();
    assert_eq!(leftovers(&dir), Vec::<String>::new());
}
