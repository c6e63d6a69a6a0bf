//! No local peer can pin, spin or starve an endpoint: every loop of a call ends whatever the
//! peers do (connections in the error state stop counting as ready, a peer that writes without
//! end is read a bounded number of frames a pass), and a peer that takes nothing while this side
//! waits to send loses its connection after the stall time.

use super::peer::Peer;
use super::tests::still_served;
use super::*;
use crate::limits::{
    COMM_CHANNEL_FRAMES_PER_PASS, COMM_CHANNEL_PASSES_PER_CALL, COMM_CHANNEL_PEER_STALL_TIMEOUT_MS,
};
use dpakit_abi::ErrorCode;
use dpakit_wire::proto::{self, Message};
use dpakit_wire::{Connect, Listener, Recv, SeqPacket};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const FUNCTION: &str = "0000:b1:00.0";

/// A raw peer that completed the handshake (announcing a receive queue of 16).
fn welcomed(name: &str, service: &mut Endpoint) -> SeqPacket {
    let path = dpakit_wire::service_path(FUNCTION, name).unwrap();
    let sock = match SeqPacket::connect(&path).unwrap() {
        Connect::Connected(s) => s,
        other => panic!("{other:?}"),
    };
    assert!(
        sock.send(&[&proto::cc_hello(4080, 16, FUNCTION, name)], &[])
            .unwrap()
    );
    let mut buf = vec![0u8; 8192];
    let mut fds = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        service.progress();
        if let Recv::Message(n) = sock.recv(&mut buf, &mut fds).unwrap() {
            assert!(matches!(
                proto::decode(&buf[..n]).unwrap(),
                Message::CcWelcome { .. }
            ));
            return sock;
        }
        assert!(Instant::now() < deadline, "no welcome");
        std::thread::yield_now();
    }
}

/// Runs `f` on `ep` in a thread and hands the endpoint back, or fails the test if `f` has not
/// returned within `bound` (the thread is left behind: it is what the test found).
fn returns_within<R: Send + 'static>(
    ep: Endpoint,
    bound: Duration,
    what: &str,
    f: impl FnOnce(&mut Endpoint) -> R + Send + 'static,
) -> (Endpoint, R) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut ep = ep;
        let r = f(&mut ep);
        let _ = tx.send((ep, r));
    });
    rx.recv_timeout(bound)
        .unwrap_or_else(|_| panic!("{what} did not return within {bound:?}"))
}

fn readable(fd: std::os::fd::RawFd) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd for the duration of the call.
    unsafe { libc::poll(&mut p, 1, 0) > 0 }
}

/// 100 clients that leave together: one call handles what it can and returns, their
/// connections stop counting as ready the moment they fail (the receive channel goes quiet once
/// each is reported, before the program disconnects any), and each is reported once.
#[test]
#[cfg_attr(miri, ignore = "Unix sockets, epoll and the runtime directory")]
fn connections_that_fail_together_leave_the_poller() {
    let name = "live-leave";
    let (mut service, mut client, good) = super::tests::pair(name, |_, _| {});
    let raws: Vec<SeqPacket> = (0..100).map(|_| welcomed(name, &mut service)).collect();
    assert_eq!(service.peers().count(), 101);
    drop(raws);
    let (mut service, ()) = returns_within(service, Duration::from_secs(10), "progress", |s| {
        s.progress()
    });
    let mut buf = [0u8; 64];
    let mut reset = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while reset.len() < 100 {
        match service.recv(&mut buf, false) {
            Ok(Received::Reset { peer, error }) => {
                assert_eq!(error.code(), ErrorCode::ConnectionReset, "{error}");
                reset.push(peer);
            }
            Err(e) if e.code() == ErrorCode::Again => {}
            other => panic!("{other:?}"),
        }
        assert!(Instant::now() < deadline, "{} of 100 reported", reset.len());
    }
    // Reported, not yet disconnected: nothing is ready any more.
    service.arm_recv().unwrap();
    let (_, recv_fd) = service.event_channels().unwrap();
    assert!(
        !readable(recv_fd),
        "failed connections still count as ready"
    );
    assert_eq!(
        service.recv(&mut buf, false).unwrap_err().code(),
        ErrorCode::Again,
        "each is reported once"
    );
    for peer in reset {
        service.disconnect(peer).unwrap();
    }
    still_served(&mut service, &mut client, good);
}

/// A peer that writes without end is read at most `COMM_CHANNEL_FRAMES_PER_PASS` frames a
/// pass: credits of count 0 (which the protocol allows) pile up in its socket and one pass
/// takes that many.
#[test]
#[cfg_attr(miri, ignore = "Unix sockets, epoll and the runtime directory")]
fn a_pass_reads_a_bounded_number_of_frames_from_one_peer() {
    super::tests::runtime_dir();
    let path = dpakit_wire::service_path(FUNCTION, "live-budget").unwrap();
    let listener = Listener::bind(&path).unwrap();
    let theirs = match SeqPacket::connect(&path).unwrap() {
        Connect::Connected(s) => s,
        other => panic!("{other:?}"),
    };
    let mine = listener.accept().unwrap().expect("a connection");
    let props = Props::new(Mode::NonBlocking);
    let mut peer = Peer::connected(PeerId(0), mine, &props, (4080, 16));
    let ack = proto::with_id(proto::TAG_CC_ACK, 0);
    let mut sent = 0;
    while sent < 1000 && theirs.send(&[&ack], &[]).unwrap() {
        sent += 1;
    }
    assert!(sent > COMM_CHANNEL_FRAMES_PER_PASS, "{sent} frames fit");
    let mut scratch = vec![0u8; 8192];
    let mut fds = Vec::new();
    peer.pump(&props, &mut scratch, &mut fds);
    assert!(peer.is_connected());
    let mut left = 0;
    while let Recv::Message(_) = peer.sock.recv(&mut scratch, &mut fds).unwrap() {
        left += 1;
    }
    assert_eq!(left, sent - COMM_CHANNEL_FRAMES_PER_PASS, "{sent} sent");
}

/// A peer that takes none of the messages in flight to it: a blocking send waits until the
/// stall time and answers CONNECTION_ABORTED saying what the peer did not do; the connection is
/// in the error state (update_info: CONNECTION_ABORTED; recvfrom reports it once), left the
/// poller, and the peer's socket is shut. Credits of count 0 do not count as credits back.
#[test]
#[cfg_attr(miri, ignore = "Unix sockets, epoll and the runtime directory")]
fn a_peer_that_takes_nothing_is_aborted_after_the_stall_time() {
    let name = "live-stall";
    let (mut service, mut client, good) = super::tests::pair(name, |_, _| {});
    let raw = welcomed(name, &mut service);
    let stuck = service.peers().last().unwrap();
    // Its credit: min(the service's send queue, the 16 it announced).
    for i in 0..16u8 {
        service.send(stuck, &[i], false).unwrap();
    }
    let e = service.send(stuck, b"one more", false).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Again, "{e}");
    for _ in 0..5 {
        assert!(
            raw.send(&[&proto::with_id(proto::TAG_CC_ACK, 0)], &[])
                .unwrap()
        );
    }
    let bound = Duration::from_millis(COMM_CHANNEL_PEER_STALL_TIMEOUT_MS) + Duration::from_secs(8);
    let (mut service, sent) = returns_within(service, bound, "a blocking send", move |s| {
        s.send(stuck, b"one more", true)
    });
    let e = sent.unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConnectionAborted, "{e}");
    for words in ["waited", "returned no credit", "2000 ms"] {
        assert!(e.message().contains(words), "`{words}` in: {e}");
    }
    let e = service.update_info(stuck).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConnectionAborted, "{e}");
    let mut buf = [0u8; 64];
    match service.recv(&mut buf, false).unwrap() {
        Received::Reset { peer, error } => {
            assert_eq!(peer, stuck);
            assert!(error.message().contains("returned no credit"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    service.arm_recv().unwrap();
    let (_, recv_fd) = service.event_channels().unwrap();
    assert!(
        !readable(recv_fd),
        "the aborted connection still counts as ready"
    );
    // The peer sees the end after the 16 messages.
    let mut fds = Vec::new();
    let mut got = 0;
    loop {
        match raw.recv(&mut buf, &mut fds).unwrap() {
            Recv::Message(_) => got += 1,
            Recv::Closed => break,
            Recv::Empty => std::thread::yield_now(),
        }
    }
    assert_eq!(got, 16);
    service.disconnect(stuck).unwrap();
    still_served(&mut service, &mut client, good);
}

/// Without a blocking call, progress alone aborts the stalled peer (here with the stall time
/// shortened): a program that polls learns of it from recvfrom.
#[test]
#[cfg_attr(miri, ignore = "Unix sockets, epoll and the runtime directory")]
fn progress_aborts_a_stalled_peer_and_a_live_one_never() {
    let name = "live-stall-poll";
    let (mut service, mut client, good) = super::tests::pair(name, |_, _| {});
    service.set_peer_stall_timeout(Duration::from_millis(100));
    let _raw = welcomed(name, &mut service);
    let stuck = service.peers().last().unwrap();
    let mut n = 0;
    while service.send(stuck, b"x", false).is_ok() {
        n += 1;
    }
    assert_eq!(n, 16);
    let mut buf = [0u8; 64];
    let deadline = Instant::now() + Duration::from_secs(10);
    let error = loop {
        // The good client is slow but live: it takes its answers, 30 ms apart.
        client.send(good, b"ping", true).unwrap();
        match service.recv(&mut buf, true).unwrap() {
            Received::Message { len, peer } => service.send(peer, &buf[..len], false).unwrap(),
            Received::Reset { peer, error } => {
                assert_eq!(peer, stuck);
                break error;
            }
        }
        std::thread::sleep(Duration::from_millis(30));
        assert!(matches!(
            client.recv(&mut buf, true).unwrap(),
            Received::Message { len: 4, .. }
        ));
        assert!(
            Instant::now() < deadline,
            "the stalled peer is still connected"
        );
    };
    assert_eq!(error.code(), ErrorCode::ConnectionAborted, "{error}");
    assert!(error.message().contains("100 ms"), "{error}");
    // The last ping waits at the service.
    match service.recv(&mut buf, true).unwrap() {
        Received::Message { len, peer } => service.send(peer, &buf[..len], false).unwrap(),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        client.recv(&mut buf, true).unwrap(),
        Received::Message { len: 4, .. }
    ));
    service.disconnect(stuck).unwrap();
    still_served(&mut service, &mut client, good);
}

/// docs/comm-channel.md states the budgets and the stall time the endpoint keeps.
#[test]
fn the_documented_budgets_are_these() {
    let doc = include_str!("../../../docs/comm-channel.md");
    for (words, name) in [
        (
            format!("stall time {} s", COMM_CHANNEL_PEER_STALL_TIMEOUT_MS / 1000),
            "COMM_CHANNEL_PEER_STALL_TIMEOUT_MS",
        ),
        (
            format!("{COMM_CHANNEL_FRAMES_PER_PASS} frames of one connection per pass"),
            "COMM_CHANNEL_FRAMES_PER_PASS",
        ),
        (
            format!("at most {COMM_CHANNEL_PASSES_PER_CALL} passes"),
            "COMM_CHANNEL_PASSES_PER_CALL",
        ),
    ] {
        let row = doc
            .lines()
            .find(|l| l.contains(&format!("`{name}`")))
            .unwrap_or_else(|| panic!("docs/comm-channel.md does not name {name}"));
        assert!(row.contains(&words), "`{words}` in: {row}");
    }
}
