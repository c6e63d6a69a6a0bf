//! The legacy Comm Channel between processes, as on a BlueField: a service process on the Arm
//! side, client processes on the host side, through the safe API (`dpakit::comm_channel`). The
//! test binary runs itself in a role for each process; roles report what happens as `EV ...`
//! lines on stdout.

#[path = "support/procs.rs"]
mod procs;

use dpakit::comm_channel::{Endpoint, Event, PeerAddr};
use dpakit::dev::{Dev, DevRep};
use procs::{Proc, ev, leftovers, runtime_dir, var, var_u64};
use std::collections::HashMap;
use std::time::Duration;

const ARM: &str = "0000:03:00.0";
const HOST: &str = "0000:b1:00.0";
const NAME: &str = "cc-procs";
const T: Duration = Duration::from_secs(60);

/// Entry point of the child processes; a no-op in a normal test run.
#[test]
fn role() {
    match var("DPAKIT_ROLE").as_str() {
        "service" => service_role(),
        "client" => client_role(),
        _ => {}
    }
}

/// Echoes every message and checks each connection's numbers arrive once and in order; exits
/// after `EXIT_AFTER` connections went away, disconnecting each.
fn service_role() {
    let arm = Dev::open_by_pci(ARM).unwrap();
    let rep = DevRep::open_by_pci(&arm, HOST).unwrap();
    let ep = Endpoint::builder(&arm)
        .representor(&rep)
        .recv_queue_size(64)
        .listen(NAME)
        .unwrap();
    ev(format_args!("listening"));
    let exit_after = var_u64("EXIT_AFTER", 1);
    let mut next: HashMap<PeerAddr, u64> = HashMap::new();
    let (mut gone, mut total) = (0, 0u64);
    let mut buf = [0u8; 4080];
    while gone < exit_after {
        match ep.recv_timeout(&mut buf, T).unwrap() {
            Event::Message { len, peer } => {
                let n = u64::from_le_bytes(buf[..8].try_into().unwrap());
                let want = next.entry(peer).or_insert(0);
                assert_eq!(n, *want, "message {n} from {peer:?}, expected {want}");
                *want += 1;
                total += 1;
                ep.send(peer, &buf[..len]).unwrap();
            }
            Event::Reset { peer } => {
                gone += 1;
                ev(format_args!("disconnect {gone} after {total} messages"));
                ep.disconnect(peer).unwrap();
            }
        }
    }
    ev(format_args!("exit {total}"));
}

/// Sends `COUNT` numbered messages of `SIZE` bytes, keeping as many in flight as the service's
/// credit allows, checks every echo, then the statistics; `HOLD` keeps it connected afterwards.
fn client_role() {
    let host = Dev::open_by_pci(HOST).unwrap();
    let (ep, peer) = Endpoint::builder(&host)
        .connect(NAME, Duration::from_secs(5))
        .unwrap();
    ev(format_args!("connected"));
    let count = var_u64("COUNT", 1000);
    let size = var_u64("SIZE", 64) as usize;
    let blocking = var("BLOCKING") == "1";
    let mut msg = vec![0u8; size];
    let mut buf = [0u8; 4080];
    let (mut sent, mut echoed) = (0u64, 0u64);
    while echoed < count {
        while sent < count {
            msg[..8].copy_from_slice(&sent.to_le_bytes());
            msg[8..].fill(sent as u8);
            let r = if blocking && sent == echoed {
                ep.send(peer, &msg)
            } else {
                ep.try_send(peer, &msg)
            };
            match r {
                Ok(()) => sent += 1,
                Err(e) if e.code() == dpakit::ErrorCode::Again => break,
                Err(e) => panic!("send {sent}: {e}"),
            }
        }
        // Something is in flight: the loop above sends at least one message when nothing is.
        match ep.recv_timeout(&mut buf, T).unwrap() {
            Event::Message { len, peer: from } => {
                assert_eq!((len, from), (size, peer));
                let n = u64::from_le_bytes(buf[..8].try_into().unwrap());
                assert_eq!(n, echoed, "echo {n}, expected {echoed}");
                assert!(
                    buf[8..len].iter().all(|&b| b == n as u8),
                    "echo {n} corrupted"
                );
                echoed += 1;
            }
            Event::Reset { .. } => {
                ev(format_args!("lost"));
                return;
            }
        }
    }
    let stats = ep.stats(peer).unwrap();
    let bytes = count * size as u64;
    assert_eq!(
        (
            stats.send_messages,
            stats.send_bytes,
            stats.recv_messages,
            stats.recv_bytes
        ),
        (count, bytes, count, bytes),
        "{stats:?}"
    );
    ev(format_args!(
        "done {count} in-flight {}",
        stats.send_in_flight_messages
    ));
    if var("HOLD") == "1" {
        match ep.recv_timeout(&mut buf, T) {
            Ok(Event::Reset { .. }) => ev(format_args!("lost")),
            other => panic!("{other:?}"),
        }
        return;
    }
    ep.disconnect(peer).unwrap();
}

fn service(dir: &std::path::Path, exit_after: u64) -> Proc {
    let s = Proc::spawn(dir, "service", &[("EXIT_AFTER", exit_after.to_string())]);
    s.expect("listening", T);
    s
}

#[test]
fn a_hundred_thousand_messages_each_way_arrive_once_and_in_order() {
    let dir = runtime_dir("cc-100k");
    let s = service(&dir, 1);
    let c = Proc::spawn(&dir, "client", &[("COUNT", "100000".into())]);
    let (_, done) = c.expect("done 100000", T);
    assert!(done.ends_with("in-flight 0"), "{done}");
    c.wait_ok();
    s.expect("exit 100000", T);
    s.wait_ok();
    assert_eq!(leftovers(&dir), Vec::<String>::new());
}

#[test]
fn blocking_calls_and_the_largest_messages() {
    let dir = runtime_dir("cc-blocking");
    let s = service(&dir, 2);
    let c = Proc::spawn(
        &dir,
        "client",
        &[("COUNT", "5000".into()), ("BLOCKING", "1".into())],
    );
    c.expect("done 5000", T);
    c.wait_ok();
    let big = Proc::spawn(
        &dir,
        "client",
        &[("COUNT", "2000".into()), ("SIZE", "4080".into())],
    );
    big.expect("done 2000", T);
    big.wait_ok();
    s.expect("exit 7000", T);
    s.wait_ok();
}

#[test]
fn a_killed_client_is_seen_by_the_service_which_goes_on() {
    let dir = runtime_dir("cc-kill-client");
    let s = service(&dir, 2);
    let mut c = Proc::spawn(
        &dir,
        "client",
        &[("COUNT", "10".into()), ("HOLD", "1".into())],
    );
    c.expect("done 10", T);
    c.kill9();
    s.expect("disconnect 1", T);
    let again = Proc::spawn(&dir, "client", &[("COUNT", "10".into())]);
    again.expect("done 10", T);
    again.wait_ok();
    s.expect("exit 20", T);
    s.wait_ok();
    assert_eq!(leftovers(&dir), Vec::<String>::new());
}

#[test]
fn a_killed_service_is_seen_by_its_client_and_leaves_nothing_behind() {
    let dir = runtime_dir("cc-kill-service");
    let mut s = service(&dir, 1);
    let c = Proc::spawn(
        &dir,
        "client",
        &[("COUNT", "10".into()), ("HOLD", "1".into())],
    );
    c.expect("done 10", T);
    s.kill9();
    c.expect("lost", T);
    c.wait_ok();
    // The dead service's socket file is stale: a new service takes the name over.
    let again = service(&dir, 1);
    let c = Proc::spawn(&dir, "client", &[("COUNT", "10".into())]);
    c.expect("done 10", T);
    c.wait_ok();
    again.expect("exit 10", T);
    again.wait_ok();
    assert_eq!(leftovers(&dir), Vec::<String>::new());
}
