//! A local peer is untrusted: a raw socket speaking the Comm Channel protocol by hand breaks
//! each rule in turn; its connection goes to the error state (or it is refused or dropped), the
//! service neither crashes nor blocks, and a well-behaved client beside it is served throughout.

use super::*;
use dpakit_abi::ErrorCode;
use dpakit_wire::proto::{self, Message};
use dpakit_wire::{Connect, Recv, SeqPacket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

const FUNCTION: &str = "0000:b1:00.0";

fn runtime_dir() {
    super::tests::runtime_dir();
}

/// A raw connection to the service `name`.
fn raw(name: &str) -> SeqPacket {
    match SeqPacket::connect(&dpakit_wire::service_path(FUNCTION, name).unwrap()).unwrap() {
        Connect::Connected(s) => s,
        other => panic!("{other:?}"),
    }
}

/// Receives one frame (waiting up to 1 s, progressing `service` meanwhile).
fn frame(sock: &SeqPacket, service: &mut Endpoint) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 8192];
    let mut fds = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline {
        service.progress();
        match sock.recv(&mut buf, &mut fds).unwrap() {
            Recv::Message(n) => return Some(buf[..n].to_vec()),
            Recv::Closed => return None,
            Recv::Empty => std::thread::yield_now(),
        }
    }
    None
}

/// A raw peer that completed the handshake with `recv_queue` credits for the service.
fn welcomed(name: &str, service: &mut Endpoint) -> SeqPacket {
    let sock = raw(name);
    assert!(
        sock.send(&[&proto::cc_hello(4080, 16, FUNCTION, name)], &[])
            .unwrap()
    );
    let answer = frame(&sock, service).expect("an answer");
    assert!(
        matches!(proto::decode(&answer).unwrap(), Message::CcWelcome { .. }),
        "{answer:?}"
    );
    sock
}

/// The service reports one connection reset (the attacker's) and goes on serving `good`.
fn reset_then_served(service: &mut Endpoint, client: &mut Endpoint, good: PeerId, why: &str) {
    let mut buf = [0u8; 64];
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match service.recv(&mut buf, false) {
            Ok(Received::Reset { peer, error }) => {
                assert!(error.message().contains(why), "{error}");
                service.disconnect(peer).unwrap();
                break;
            }
            // Messages the attacker sent within its credit are delivered before its reset.
            Ok(Received::Message { len, .. }) => assert_eq!(&buf[..len], b"x", "{why}"),
            Err(e) if e.code() == ErrorCode::Again => {}
            Err(e) => panic!("{e}"),
        }
        assert!(Instant::now() < deadline, "no reset for `{why}`");
    }
    super::tests::still_served(service, client, good);
}

/// One way of breaking the protocol, sent over a connected client's socket.
type Attack<'a> = Box<dyn Fn(&SeqPacket) + 'a>;

fn service_and_client(name: &str) -> (Endpoint, Endpoint, PeerId) {
    let (service, client, peer) = super::tests::pair(name, |_, _| {});
    (service, client, peer)
}

#[test]
#[cfg_attr(miri, ignore = "Unix sockets, epoll and the runtime directory")]
fn a_peer_that_breaks_the_protocol_loses_its_connection_only() {
    runtime_dir();
    let name = "hostile-rules";
    let (mut service, mut client, good) = service_and_client(name);
    let data = |body: &[u8]| [&[proto::TAG_DATA][..], body].concat();
    let cases: Vec<(&str, Attack<'_>)> = vec![
        (
            "past its credit",
            Box::new(move |s: &SeqPacket| {
                for _ in 0..=64 {
                    let _ = s.send(&[&data(b"x")], &[]);
                }
            }),
        ),
        (
            "past the 4080-byte max_msg_size",
            Box::new(move |s: &SeqPacket| {
                let _ = s.send(&[&data(&[0; 4081])], &[]);
            }),
        ),
        (
            "credits back with 0 messages in flight",
            Box::new(|s: &SeqPacket| {
                let _ = s.send(&[&proto::with_id(proto::TAG_CC_ACK, 5)], &[]);
            }),
        ),
        (
            "descriptors",
            Box::new(|s: &SeqPacket| {
                let file = std::fs::File::open("/dev/null").unwrap();
                let _ = s.send(&[&data(b"x")], &[file.as_raw_fd()]);
            }),
        ),
        (
            "while Connected",
            Box::new(|s: &SeqPacket| {
                let _ = s.send(&[&proto::cc_welcome(4080, 16)], &[]);
            }),
        ),
        (
            "unknown Comch protocol message tag",
            Box::new(|s: &SeqPacket| {
                let _ = s.send(&[&[0xee, 1, 2, 3]], &[]);
            }),
        ),
    ];
    for (why, attack) in cases {
        let attacker = welcomed(name, &mut service);
        attack(&attacker);
        reset_then_served(&mut service, &mut client, good, why);
        // The attacker's socket is shut: it sees the end.
        assert_eq!(frame(&attacker, &mut service), None, "{why}");
    }
    assert_eq!(service.peers().count(), 1, "only the good client is left");
}

#[test]
#[cfg_attr(miri, ignore = "Unix sockets, epoll and the runtime directory")]
fn wrong_hellos_are_refused_and_silent_connections_dropped() {
    runtime_dir();
    let name = "hostile-hello";
    let (mut service, mut client, good) = service_and_client(name);
    for (hello, code) in [
        (
            proto::cc_hello(4080, 16, FUNCTION, "another"),
            ErrorCode::NotFound,
        ),
        (
            proto::cc_hello(4080, 16, "0000:b1:00.2", name),
            ErrorCode::NotFound,
        ),
        (
            proto::cc_hello(100_000, 16, FUNCTION, name),
            ErrorCode::NotSupported,
        ),
        (
            proto::cc_hello(4080, 0, FUNCTION, name),
            ErrorCode::NotSupported,
        ),
    ] {
        let s = raw(name);
        assert!(s.send(&[&hello], &[]).unwrap());
        let answer = frame(&s, &mut service).expect("an answer");
        match proto::decode(&answer).unwrap() {
            Message::Refuse { code: c, .. } => assert_eq!(c, code.raw()),
            other => panic!("{other:?}"),
        }
    }
    // A flood of silent connections: at most 64 wait, the rest push the oldest out, and after
    // the handshake bound none is left; the good client is served all along.
    let silent: Vec<SeqPacket> = (0..100).map(|_| raw(name)).collect();
    service.progress();
    assert!(service.pending_connections() <= 64);
    let mut buf = [0u8; 16];
    client.send(good, b"ok", true).unwrap();
    assert!(matches!(
        service.recv(&mut buf, true).unwrap(),
        Received::Message { len: 2, .. }
    ));
    std::thread::sleep(Duration::from_millis(1100));
    service.progress();
    assert_eq!(service.pending_connections(), 0);
    drop(silent);
    assert_eq!(service.peers().count(), 1);
}
