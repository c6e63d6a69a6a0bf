//! A hostile process on the same machine, speaking the soft device's Comch protocol to a
//! server by hand (see docs/comch.md, "Trust model"), must neither crash, block nor stall the
//! server, nor delay its service to a well-behaved client by more than a few milliseconds.
//!
//! The server runs in a child process (this binary in the `server` role): it echoes control
//! messages and, when a peer announces a consumer, sends it one 64-byte buffer from a producer
//! of its own — the write into the peer's ring and the wake-up are what a hostile peer attacks.
//! The attacker (raw protocol) and a well-behaved client (the safe API) run in the test.
//!
//! The server role, the raw protocol, the witness and the measurements live in
//! tests/support/hostile.rs, shared with the second round of attacks
//! (tests/comch_hostile_peers.rs).

#[path = "support/hostile.rs"]
mod hostile;
#[path = "support/procs.rs"]
mod procs;

use hostile::*;
use procs::var;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

#[test]
fn role() {
    if var("DPAKIT_ROLE") == "server" {
        server_role();
    }
}

// ---------------------------------------------------------------------------------------------
// The attacks
// ---------------------------------------------------------------------------------------------

/// 1. A wake-up whose reader is gone: a pipe (refused: not a socket) and a stream socket with
///    its other end closed (accepted; the write must not raise SIGPIPE).
#[test]
fn a_wake_up_with_no_reader_raises_no_sigpipe() {
    let mut s = Scene::new("sigpipe");
    let rss = rss_kib(s.server.child.id());
    let pipe_peer = s.handshake();
    let (r, w) = pipe();
    drop(r);
    let (ring_fd, data_fd) = (memfd(ring_bytes(4), &ring(4, false)), memfd(4096, &[]));
    pipe_peer.send(
        &consumer_new(1, 4, 4096),
        &[ring_fd.as_raw_fd(), data_fd.as_raw_fd(), w.as_raw_fd()],
    );
    assert!(
        pipe_peer.closed_within(T),
        "a pipe as wake-up drops the peer"
    );

    let socket_peer = s.handshake();
    let (mine, theirs) = stream_pair();
    drop(mine);
    socket_peer.send(
        &consumer_new(1, 4, 4096),
        &[ring_fd.as_raw_fd(), data_fd.as_raw_fd(), theirs.as_raw_fd()],
    );
    s.server.expect("probe-submitted 1", T);
    s.check("wake-up without a reader", rss);
}

/// 2. A wake-up that would block: a blocking eventfd at its maximum (refused), and a blocking
///    stream socket whose buffer is full (written without waiting).
#[test]
fn a_wake_up_that_would_block_blocks_nothing() {
    let mut s = Scene::new("block");
    let rss = rss_kib(s.server.child.id());
    let (ring_fd, data_fd) = (memfd(ring_bytes(4), &ring(4, false)), memfd(4096, &[]));

    let eventfd_peer = s.handshake();
    // SAFETY: no pointers.
    let efd = unsafe { OwnedFd::from_raw_fd(libc::eventfd(0, libc::EFD_CLOEXEC)) };
    let max = u64::MAX - 1;
    // SAFETY: writes 8 bytes from a live u64.
    unsafe { libc::write(efd.as_raw_fd(), (&max as *const u64).cast(), 8) };
    eventfd_peer.send(
        &consumer_new(1, 4, 4096),
        &[ring_fd.as_raw_fd(), data_fd.as_raw_fd(), efd.as_raw_fd()],
    );
    assert!(
        eventfd_peer.closed_within(T),
        "an eventfd as wake-up drops the peer"
    );

    let full_peer = s.handshake();
    let (_mine, theirs) = stream_pair();
    // Fill the socket's buffer, then leave it blocking.
    // SAFETY: no pointers.
    unsafe { libc::fcntl(theirs.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    let chunk = [0u8; 4096];
    // SAFETY: sends from a live buffer until the socket is full.
    while unsafe { libc::send(theirs.as_raw_fd(), chunk.as_ptr().cast(), 4096, 0) } > 0 {}
    // SAFETY: no pointers.
    unsafe { libc::fcntl(theirs.as_raw_fd(), libc::F_SETFL, 0) };
    full_peer.send(
        &consumer_new(1, 4, 4096),
        &[ring_fd.as_raw_fd(), data_fd.as_raw_fd(), theirs.as_raw_fd()],
    );
    s.server.expect("probe-submitted 1", T);
    s.check("wake-up that would block", rss);
}

/// 3. A ring whose completion slots never free: the send fails at once and the peer is
///    dropped, instead of holding the server's thread.
#[test]
fn a_ring_that_never_frees_its_slots_stalls_nothing() {
    let mut s = Scene::new("stuck");
    let rss = rss_kib(s.server.child.id());
    let peer = s.handshake();
    let (ring_fd, data_fd) = (memfd(ring_bytes(4), &ring(4, true)), memfd(4096, &[]));
    let (_mine, theirs) = stream_pair();
    peer.send(
        &consumer_new(1, 4, 4096),
        &[ring_fd.as_raw_fd(), data_fd.as_raw_fd(), theirs.as_raw_fd()],
    );
    s.server.expect("probe-submitted 1", T);
    assert!(peer.closed_within(T), "a broken ring drops the peer");
    s.check("completion slots never freed", rss);
}

/// 4. A control message longer than the agreed maximum is never delivered: the peer is dropped.
#[test]
fn an_oversized_message_is_not_delivered() {
    let mut s = Scene::new("oversized");
    let rss = rss_kib(s.server.child.id());
    let peer = s.handshake();
    let mut data = vec![4u8];
    data.resize(4591, 0xAB);
    peer.send(&data, &[]);
    assert!(peer.closed_within(T), "the peer is dropped");
    let mut events = Vec::new();
    while let Ok((_, e)) = s.server.events.try_recv() {
        events.push(e);
    }
    assert!(
        !events.iter().any(|e| e == "message 4590"),
        "delivered: {events:?}"
    );
    s.check("oversized control message", rss);
}

/// 5. Connections that never say HELLO: the server keeps at most 64 and drops each after 1 s;
///    its descriptors stay bounded and a well-behaved client is served meanwhile.
#[test]
fn silent_connections_cannot_exhaust_the_server() {
    let mut s = Scene::new("silent");
    let rss = rss_kib(s.server.child.id());
    let pid = s.server.child.id();
    let fds_before = open_fds(pid);
    raise_fd_limit();
    let path = s.socket();
    let mut silent = Vec::new();
    for _ in 0..1530 {
        match Raw::connect(&path) {
            Some(r) => silent.push(r),
            None => std::thread::sleep(Duration::from_micros(200)),
        }
        if silent.len() % 100 == 0 {
            s.witness.pe.progress();
        }
    }
    s.check("1,530 silent connections", rss);
    let fds = open_fds(pid);
    assert!(
        fds <= fds_before + 64 + 8,
        "the server holds {fds} descriptors (before: {fds_before})"
    );
    // The handshake timeout frees the rest.
    std::thread::sleep(Duration::from_millis(1500));
    s.witness.worst_round_trip(10);
    assert!(open_fds(pid) <= fds_before + 8);
}

/// 6. Too many consumers on one connection, and a 64 TiB memory file: the peer is dropped, the
///    server maps neither.
#[test]
fn announcements_past_the_limits_are_refused() {
    let mut s = Scene::new("limits");
    let rss = rss_kib(s.server.child.id());
    let ring_fd = memfd(ring_bytes(4), &ring(4, false));
    let data_fd = memfd(4096, &[]);

    let many = s.handshake();
    let mut keep = Vec::new();
    for id in 1..=40 {
        let (_mine, theirs) = stream_pair();
        if !many.send(
            &consumer_new(id, 4, 4096),
            &[ring_fd.as_raw_fd(), data_fd.as_raw_fd(), theirs.as_raw_fd()],
        ) {
            break;
        }
        keep.push(_mine);
    }
    assert!(many.closed_within(T), "the 33rd consumer drops the peer");

    let huge = s.handshake();
    let big = memfd(0, &[]);
    // SAFETY: no pointers; a sparse file.
    assert_eq!(unsafe { libc::ftruncate(big.as_raw_fd(), 1 << 46) }, 0);
    let (_mine, theirs) = stream_pair();
    huge.send(
        &consumer_new(1, 4, 1 << 46),
        &[ring_fd.as_raw_fd(), big.as_raw_fd(), theirs.as_raw_fd()],
    );
    assert!(
        huge.closed_within(T),
        "a 64 TiB announcement drops the peer"
    );
    s.check("consumer limits", rss);
}

/// 7. Descriptors on a message that carries none — a DATA frame, or an empty message (which
///    reads as the peer hanging up) — are closed with the connection they break, not kept until
///    the server next receives from anyone: a pipe's reader sees its end of file at once.
#[test]
fn descriptors_on_a_broken_connection_are_closed_with_it() {
    let mut s = Scene::new("stray-fds");
    let rss = rss_kib(s.server.child.id());
    for (what, msg) in [
        ("a DATA frame", &[4u8, 1, 2, 3][..]),
        ("an empty message", &[]),
    ] {
        let peer = s.handshake();
        let (r, w) = pipe();
        assert!(peer.send(msg, &[w.as_raw_fd()]), "sending {what}");
        drop(w);
        assert!(
            peer.closed_within(T),
            "{what} with a descriptor drops the peer"
        );
        assert!(
            end_of_file_within(&r, Duration::from_secs(5)),
            "the server still holds the pipe's write end that came with {what}"
        );
    }
    s.check("descriptors on a message that carries none", rss);
}

/// 8. The control path in shared memory: a ring announced in a file that can shrink, or of
///    the wrong size, or without its file; an acknowledgement repeated; a control message on
///    the socket once the ring is acknowledged; and, in the server's own ring, a published
///    count past the ring or a message longer than agreed. Each drops its peer alone.
#[test]
fn control_ring_violations_drop_their_peer() {
    let mut s = Scene::new("ctrl-ring");
    let rss = rss_kib(s.server.child.id());
    let len = ctrl_ring_len(128);
    // SAFETY: a NUL-terminated name; a fresh descriptor, sized but not sealed.
    let unsealed = unsafe {
        let fd = libc::memfd_create(c"unsealed".as_ptr(), libc::MFD_CLOEXEC);
        assert!(fd >= 0);
        assert_eq!(libc::ftruncate(fd, len as libc::off_t), 0);
        OwnedFd::from_raw_fd(fd)
    };
    let sealed = memfd(len as usize, &[]);
    let announcements: [(&str, Vec<u8>, Vec<RawFd>); 3] = [
        (
            "a ring that can shrink",
            ctrl_ring_msg(128, len),
            vec![unsealed.as_raw_fd()],
        ),
        (
            "a ring of the wrong size",
            ctrl_ring_msg(128, len - 64),
            vec![sealed.as_raw_fd()],
        ),
        ("a ring without its file", ctrl_ring_msg(128, len), vec![]),
    ];
    for (what, msg, fds) in announcements {
        let peer = s.handshake();
        peer.send(&msg, &fds);
        assert!(peer.closed_within(T), "{what} drops the peer");
    }
    let twice = s.handshake();
    twice.send(&[13], &[]);
    twice.send(&[13], &[]);
    assert!(
        twice.closed_within(T),
        "a second acknowledgement drops the peer"
    );

    let socket_after_ack = s.handshake();
    socket_after_ack.send(&[13], &[]);
    socket_after_ack.send(&[4, 1, 2, 3], &[]);
    assert!(
        socket_after_ack.closed_within(T),
        "a control message on the socket after the acknowledgement drops the peer"
    );

    for (what, offset, value) in [
        ("a published count past the ring", 0, 1000u64),
        ("a message longer than agreed", CTRL_HEADER, 5000),
    ] {
        let peer = s.handshake();
        let (depth, ring_len, fd) = peer.server_ring();
        assert_eq!((depth, ring_len), (128, len), "the server's ring");
        peer.send(&[13], &[]);
        poke_ring(&fd, ring_len, offset, value);
        if offset != 0 {
            poke_ring(&fd, ring_len, 0, 1); // one message published
        }
        peer.send(&[11], &[]); // WAKE
        assert!(peer.closed_within(T), "{what} drops the peer");
    }
    s.check("control ring violations", rss);
}
