//! `cc_peer`: the legacy Comm Channel attacked from the other end of its socket, both ways.
//!
//! The first byte picks the victim:
//! - a **service** (the Arm side's listener), which lives for the whole run with a well-behaved
//!   client connected to it; the attacker connects as one more client;
//! - a **client** (the host side), made afresh per input and connected to a fake service the
//!   attacker runs: the attacker accepts it and answers its hello.
//!
//! Then the attacker's script: a handshake (the right one, one with fuzzed sizes, names and
//! version, a refusal, raw bytes, or none) and frames until the input ends — DATA of any length,
//! credits back (`CC_ACK`) of any count, BYE, another handshake, unknown tags, truncated frames,
//! any of them with a descriptor attached, a flood of credits of count 0 — interleaved with the
//! victim's own calls: progress, receive (messages taken, resets disconnected as a program does),
//! send, statistics, sends until the attacker's credit is gone and then one that waits. The
//! attacker reads what comes back or lets it pile up (never takes, never returns credits).
//! Against a service, up to 96 more raw peers may join (each with a hello) and all leave at
//! once.
//!
//! The victims' stall time is shortened to `STALL`, so a peer that holds its credits is aborted
//! within an input. Every call of the victim must return within `CALL_BOUND`: a call that runs
//! for as long as a peer writes, fails or holds its credits is a finding.
//!
//! A zero byte (and the end of the input, which reads as zeros) picks the well-behaved choice
//! where there is one, so short inputs get through the handshake.
//!
//! After each input the attacker closes its end. Within 2 s the victim must have let the
//! connection go (a service: reported once and disconnected, nothing pending; a client: its
//! peer in the error state), every descriptor must be back (the client victim is dropped), and
//! the service must still serve its good client: one message there and back. A panic, crash,
//! `SIGPIPE`, hang, leaked descriptor or a service that stopped serving is a finding; errors
//! and refusals are expected.
#![no_main]

mod support;

use dpakit_abi::ErrorCode;
use dpakit_model::comm_channel::{Endpoint, Mode, PeerId, Received};
use dpakit_wire::proto;
use dpakit_wire::{Connect, Listener, Recv, SeqPacket};
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};
use support::Bytes;

/// The host function whose representor the services stand on.
const FUNCTION: &str = "0000:b1:00.0";
/// The victim service's name, and the name the fake service listens under.
const SERVICE: &str = "cc-peer";
const FAKE: &str = "cc-peer-fake";
/// How long the victim has to let a closed connection go.
const SETTLE: Duration = Duration::from_secs(2);
/// The victims' stall time: a peer that makes no room for a send this long is aborted.
const STALL: Duration = Duration::from_millis(20);
/// The longest one call of the victim may take (a blocking send waits for `STALL` at most).
const CALL_BOUND: Duration = Duration::from_secs(1);
/// Most raw peers that join a service besides the attacker: more than a poller pass takes, so
/// their leaving together fills passes with failed connections.
const CROWD: usize = 96;

/// The victim service, its good client and that client's peer; the fake service's socket.
struct Rig {
    service: Endpoint,
    good: Endpoint,
    to_service: PeerId,
    /// The good client as the service knows it.
    good_at_service: PeerId,
    fake: Listener,
    fds: usize,
}

thread_local! {
    static RIG: RefCell<Option<Rig>> = const { RefCell::new(None) };
}

fuzz_target!(
    init: init(),
    |data: &[u8]| RIG.with(|rig| run(rig.borrow_mut().get_or_insert_with(Rig::new), data))
);

fn init() {
    support::private_runtime_dir("dpakit-fuzz-cc");
}

impl Rig {
    fn new() -> Rig {
        let mut service = Endpoint::new(Mode::NonBlocking);
        service.set_peer_stall_timeout(STALL);
        service.listen(FUNCTION, SERVICE).expect("listen");
        let mut good = Endpoint::new(Mode::NonBlocking);
        let to_service = good.connect(FUNCTION, SERVICE).expect("connect");
        settle(&mut service, SETTLE, || {
            good.update_info(to_service).is_ok()
        });
        // The fake service's socket (the runtime directory exists now).
        let path = dpakit_wire::service_path(FUNCTION, FAKE).expect("path");
        let fake = Listener::bind(&path).expect("bind the fake service");
        let mut rig = Rig {
            service,
            good,
            to_service,
            good_at_service: PeerId(0),
            fake,
            fds: 0,
        };
        rig.good_at_service = rig.round_trip();
        rig.fds = open_fds();
        rig
    }

    /// The good client's message there and back; the good client's id at the service.
    fn round_trip(&mut self) -> PeerId {
        self.good
            .send(self.to_service, b"still served?", true)
            .expect("the good client sends");
        let mut buf = [0u8; 64];
        let deadline = Instant::now() + SETTLE;
        let at_service = loop {
            match self.service.recv(&mut buf, false) {
                Ok(Received::Message { len, peer }) if &buf[..len] == b"still served?" => {
                    self.service.send(peer, &buf[..len], true).expect("echo");
                    break peer;
                }
                Ok(other) => panic!("after the attack the service still reports {other:?}"),
                Err(e) if e.code() == ErrorCode::Again => {}
                Err(e) => panic!("the service no longer serves: {e}"),
            }
            assert!(Instant::now() < deadline, "the service no longer serves");
        };
        match self.good.recv(&mut buf, true) {
            Ok(Received::Message { len, .. }) => assert_eq!(&buf[..len], b"still served?"),
            other => panic!("the good client got {other:?}"),
        }
        at_service
    }
}

fn run(rig: &mut Rig, data: &[u8]) {
    let mut input = Bytes::new(data);
    if input.u8() & 1 == 0 {
        attack_service(rig, &mut input);
    } else {
        attack_client(rig, &mut input);
    }
    let at_service = rig.round_trip();
    assert_eq!(
        at_service, rig.good_at_service,
        "the good client's connection changed"
    );
    let fds = open_fds();
    assert_eq!(
        fds, rig.fds,
        "descriptors leaked: {fds} open, {} before",
        rig.fds
    );
}

/// The attacker connects to the victim service as a client.
fn attack_service(rig: &mut Rig, input: &mut Bytes) {
    let path = dpakit_wire::service_path(FUNCTION, SERVICE).expect("path");
    let sock = match SeqPacket::connect(&path).expect("connect") {
        Connect::Connected(s) => s,
        other => panic!("the service's socket answered {other:?}"),
    };
    let hello = match input.u8() % 4 {
        0 => Some(proto::cc_hello(4080, 16, FUNCTION, SERVICE)),
        1 => Some(fuzzed_hello(input)),
        2 => Some(raw(input)),
        _ => None,
    };
    if let Some(hello) = hello {
        let _ = sock.send(&[&hello], &[]);
    }
    let mut victim = Victim::Service(&mut rig.service, rig.good_at_service);
    script(&sock, &mut victim, input);
    drop(sock);
    // The service reports the attacker's connection once and lets it go.
    let service = &mut rig.service;
    settle(service, Duration::from_millis(5), || false);
    let mut buf = vec![0u8; 4096];
    while let Ok(got) = service.recv(&mut buf, false) {
        if let Received::Reset { peer, .. } = got {
            service.disconnect(peer).expect("disconnect a reset peer");
        }
    }
    let deadline = Instant::now() + SETTLE;
    while service.peers().count() > 1 || service.pending_connections() > 0 {
        assert!(
            Instant::now() < deadline,
            "the attacker's connection is still held"
        );
        service.progress();
        while let Ok(Received::Reset { peer, .. }) = service.recv(&mut buf, false) {
            service.disconnect(peer).expect("disconnect a reset peer");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A fresh client connects to the attacker's fake service.
fn attack_client(rig: &mut Rig, input: &mut Bytes) {
    let mut client = Endpoint::new(Mode::NonBlocking);
    client.set_peer_stall_timeout(STALL);
    let peer = client
        .connect(FUNCTION, FAKE)
        .expect("connect to the fake service");
    let deadline = Instant::now() + SETTLE;
    let sock = loop {
        if let Some(s) = rig.fake.accept().expect("accept") {
            break s;
        }
        assert!(Instant::now() < deadline, "the client never connected");
        std::thread::yield_now();
    };
    // The client speaks first, and correctly.
    let mut buf = vec![0u8; 8192];
    let mut fds = Vec::new();
    let deadline = Instant::now() + SETTLE;
    loop {
        let _ = client.update_info(peer);
        match sock.recv(&mut buf, &mut fds).expect("recv the hello") {
            Recv::Message(n) => {
                let hello = proto::decode(&buf[..n]).expect("the client's hello decodes");
                assert!(matches!(hello, proto::Message::CcHello { .. }), "{hello:?}");
                break;
            }
            Recv::Closed => panic!("the client hung up before its hello"),
            Recv::Empty => {}
        }
        assert!(Instant::now() < deadline, "no hello from the client");
        std::thread::yield_now();
    }
    let welcome = match input.u8() % 5 {
        0 => Some(proto::cc_welcome(4080, 16).to_vec()),
        1 => Some(proto::cc_welcome(input.u32(), input.u32()).to_vec()),
        2 => Some(proto::refuse(input.u32() as i32, "fuzzed refusal")),
        3 => Some(raw(input)),
        _ => None,
    };
    if let Some(welcome) = welcome {
        let _ = sock.send(&[&welcome], &[]);
    }
    let mut victim = Victim::Client(&mut client, peer);
    script(&sock, &mut victim, input);
    drop(sock);
    // The client sees the end: its peer in the error state within the bound.
    let deadline = Instant::now() + SETTLE;
    loop {
        match client.update_info(peer) {
            Err(e) if e.code() != ErrorCode::ConnectionInProgress => break,
            _ => {}
        }
        let _ = client.recv(&mut buf, false);
        assert!(
            Instant::now() < deadline,
            "the client did not notice its service is gone"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let _ = client.disconnect(peer);
}

/// The endpoint under attack and, for a client, its one peer.
enum Victim<'a> {
    /// The service and its good client's id there (never the attacker's).
    Service(&'a mut Endpoint, PeerId),
    Client(&'a mut Endpoint, PeerId),
}

impl Victim<'_> {
    fn endpoint(&mut self) -> &mut Endpoint {
        match self {
            Victim::Service(ep, _) | Victim::Client(ep, _) => ep,
        }
    }

    /// The attacker's peer as the victim knows it (a service: the newest connection).
    fn peer(&mut self) -> Option<PeerId> {
        match self {
            Victim::Service(ep, good) => ep.peers().find(|p| p != good),
            Victim::Client(_, peer) => Some(*peer),
        }
    }
}

/// Runs one call of the victim, which must return within `CALL_BOUND`.
fn bounded<R>(what: &str, call: impl FnOnce() -> R) -> R {
    let start = Instant::now();
    let r = call();
    let took = start.elapsed();
    assert!(took < CALL_BOUND, "{what} took {took:?}");
    r
}

/// The attacker's frames, with the victim's calls in between.
fn script(sock: &SeqPacket, victim: &mut Victim, input: &mut Bytes) {
    let devnull = std::fs::File::open("/dev/null").expect("/dev/null");
    let mut buf = vec![0u8; 8192];
    let mut got: Vec<OwnedFd> = Vec::new();
    // More raw peers of a victim service; all leave at once.
    let mut crowd: Vec<SeqPacket> = Vec::new();
    for _ in 0..64 {
        if input.is_empty() {
            break;
        }
        let step = input.u8();
        let fds: &[i32] = if step & 0x80 != 0 {
            &[devnull.as_raw_fd()]
        } else {
            &[]
        };
        let frame: Option<Vec<u8>> = match step & 0x0f {
            0 => {
                let len = usize::from(input.u16()) % 4200;
                let mut m = vec![proto::TAG_DATA];
                m.extend(std::iter::repeat_n(input.u8(), len));
                Some(m)
            }
            1 => Some(proto::with_id(proto::TAG_CC_ACK, input.u32()).to_vec()),
            2 => Some(vec![proto::TAG_BYE]),
            3 => Some(proto::cc_hello(4080, 16, FUNCTION, SERVICE)),
            4 => Some(proto::cc_welcome(4080, 16).to_vec()),
            5 => Some(raw(input)),
            6 => Some(fuzzed_hello(input)),
            7 => {
                // A flood of credits of count 0, until the socket is full.
                let ack = proto::with_id(proto::TAG_CC_ACK, 0);
                for _ in 0..usize::from(input.u8()) * 8 {
                    if !matches!(sock.send(&[&ack], &[]), Ok(true)) {
                        break;
                    }
                }
                None
            }
            8 if matches!(victim, Victim::Service(..)) => {
                // 1 to 16 more peers join (their hellos answered as the service progresses).
                let path = dpakit_wire::service_path(FUNCTION, SERVICE).expect("path");
                for _ in 0..=input.u8() % 16 {
                    if crowd.len() >= CROWD {
                        break;
                    }
                    if let Ok(Connect::Connected(s)) = SeqPacket::connect(&path) {
                        let _ = s.send(&[&proto::cc_hello(4080, 16, FUNCTION, SERVICE)], &[]);
                        crowd.push(s);
                    }
                }
                None
            }
            9 => {
                crowd.clear();
                None
            }
            _ => None,
        };
        if let Some(frame) = frame {
            let _ = sock.send(&[&frame], fds);
        }
        // The victim's turn.
        let ep = victim.endpoint();
        match (step >> 4) & 0x7 {
            0 => bounded("progress", || ep.progress()),
            1 => {
                if let Ok(Received::Reset { peer, .. }) =
                    bounded("recv", || ep.recv(&mut buf, false))
                {
                    let _ = ep.disconnect(peer);
                }
            }
            2 => {
                let len = usize::from(input.u16()) % 4200;
                if let Some(peer) = victim.peer() {
                    let ep = victim.endpoint();
                    let _ = bounded("send", || ep.send(peer, &buf[..len], false));
                }
            }
            3 => {
                if let Some(peer) = victim.peer() {
                    let ep = victim.endpoint();
                    let _ = ep.update_info(peer);
                    let _ = ep.stats(peer);
                }
            }
            4 => {
                // The attacker reads what came back.
                while let Ok(Recv::Message(_)) = sock.recv(&mut buf, &mut got) {}
                got.clear();
            }
            5 => {
                // Sends until the attacker's credit (or socket) is full, then one that waits:
                // it returns by the stall time, the attacker's connection aborted, or sent.
                if let Some(peer) = victim.peer() {
                    let ep = victim.endpoint();
                    for _ in 0..512 {
                        if ep.send(peer, b"fill", false).is_err() {
                            break;
                        }
                    }
                    let _ = bounded("a blocking send", || ep.send(peer, b"wait", true));
                }
            }
            _ => {}
        }
    }
}

/// A hello with fuzzed sizes, version, function and name (lengths may lie).
fn fuzzed_hello(input: &mut Bytes) -> Vec<u8> {
    let mut m = vec![proto::TAG_CC_HELLO];
    m.extend_from_slice(&input.u32().to_le_bytes());
    m.extend_from_slice(&input.u32().to_le_bytes());
    m.extend_from_slice(&input.u32().to_le_bytes());
    for _ in 0..2 {
        let claimed = input.u16();
        let len = usize::from(input.u8());
        m.extend_from_slice(&claimed.to_le_bytes());
        m.extend_from_slice(input.take(len));
    }
    m
}

/// Up to 255 raw bytes.
fn raw(input: &mut Bytes) -> Vec<u8> {
    let len = usize::from(input.u8());
    input.take(len).to_vec()
}

/// Progresses `service` for `bound`, or until `done`.
fn settle(service: &mut Endpoint, bound: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + bound;
    while Instant::now() < deadline && !done() {
        service.progress();
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}
