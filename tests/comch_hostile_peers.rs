//! Hostile peers, round two: a local peer that stops taking what the server sends it, that
//! parks idle connections by the hundred, that hands over descriptors until the process's
//! table would fill, or whose consumer never posts a receive. Each runs from this process
//! against a server in a child process (tests/support/hostile.rs) while a well-behaved client
//! is served; see docs/comch.md, "Trust model", for the limits each attack meets.
//!
//! The server sleeps on its PE when idle (`SLEEP=1`), so its CPU time is what the peers cost
//! it: each test prints the server's idle CPU, RSS and descriptors before and after.

#[path = "support/hostile.rs"]
mod hostile;
#[path = "support/procs.rs"]
mod procs;

use hostile::*;
use procs::var;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

#[test]
fn role() {
    if var("DPAKIT_ROLE") == "server" {
        server_role();
    }
}

/// The documented stall time (COMCH_PEER_STALL_TIMEOUT_MS).
const STALL: Duration = Duration::from_millis(2000);
/// The server's send tasks in these scenes: what DOCA's control-path sample configures.
const SEND_TASKS: &str = "32";

fn scene(test: &str) -> Scene {
    Scene::with(test, &[("SEND_TASKS", SEND_TASKS), ("SLEEP", "1")])
}

/// A scene whose server may hold the descriptors of hundreds of connections.
fn crowded_scene(test: &str) -> Scene {
    raise_fd_limit(); // this process holds the peers' ends
    Scene::with(
        test,
        &[
            ("SEND_TASKS", SEND_TASKS),
            ("SLEEP", "1"),
            ("FD_LIMIT", "8192"),
        ],
    )
}

/// The server's idle CPU (percent of a core over half a second), RSS (KiB) and descriptors.
fn footprint(s: &Scene) -> (u64, u64, usize) {
    let pid = s.server.child.id();
    (
        cpu_percent(pid, Duration::from_millis(500)),
        rss_kib(pid),
        open_fds(pid),
    )
}

/// Prints the figures of an attack and checks, once its peers are gone, that the idle server
/// does not spin, is back to its descriptors and close to its memory, and obeys SIGTERM.
fn report(s: &mut Scene, attack: &str, before: (u64, u64, usize)) {
    let after = footprint(s);
    eprintln!(
        "{attack}: server idle CPU {}% -> {}%, RSS {} -> {} KiB, descriptors {} -> {}",
        before.0, after.0, before.1, after.1, before.2, after.2
    );
    assert!(
        after.0 < 50,
        "{attack}: the idle server uses {}% of a core",
        after.0
    );
    assert!(
        after.2 <= before.2 + 2,
        "{attack}: the server holds {} descriptors, {} before",
        after.2,
        before.2
    );
    assert!(
        after.1 <= before.1 + 16 * 1024,
        "{attack}: the server grew from {} to {} KiB",
        before.1,
        after.1
    );
    // SAFETY: signals our own child.
    unsafe { libc::kill(s.server.child.id() as i32, libc::SIGTERM) };
    s.server.expect("terminated", Duration::from_secs(2));
    assert!(
        s.server.child.wait().unwrap().success(),
        "{attack}: the server's exit"
    );
}

/// A DATA frame (a control message on the socket).
fn data(len: usize) -> Vec<u8> {
    let mut m = vec![4u8];
    m.resize(len + 1, 0x5A);
    m
}

/// The events the server printed so far.
fn events(s: &Scene) -> Vec<String> {
    std::iter::from_fn(|| s.server.events.try_recv().ok().map(|(_, e)| e)).collect()
}

/// Sends `n` control messages of `len` bytes and waits until the server has received them.
fn flood(s: &Scene, peer: &Raw, n: usize, len: usize) -> Vec<String> {
    let mut seen = Vec::new();
    for _ in 0..n {
        assert!(
            peer.send(&data(len), &[]),
            "the server takes control messages"
        );
    }
    let deadline = Instant::now() + T;
    while seen
        .iter()
        .filter(|e: &&String| e.starts_with("message"))
        .count()
        < n
    {
        assert!(Instant::now() < deadline, "the server received {seen:?}");
        if let Ok((_, e)) = s.server.events.recv_timeout(Duration::from_millis(100)) {
            seen.push(e);
        }
    }
    seen
}

/// A peer that never reads its socket, and one that announces a control ring of one slot and
/// never takes from it, each sending more messages than the server has send tasks: the server
/// answers each, and each answer holds a task until the peer takes it. A peer holds at most its
/// share of the tasks (the pool divided by the connections), so the well-behaved client is
/// served throughout; after the stall time the peer loses its connection and its tasks come
/// back.
#[test]
fn a_peer_that_never_takes_holds_only_its_share_and_then_loses_its_connection() {
    let mut s = scene("never-take");
    let before = footprint(&s);
    let rss = before.1;

    // Never reads its socket: answers fill it, then wait for room.
    let deaf = s.handshake();
    let seen = flood(&s, &deaf, 200, 4000);
    s.check("a peer that never reads its socket (during)", rss);
    let mut all = seen;
    all.extend(events(&s));
    assert!(
        all.iter().any(|e| e == "send-refused NoMemory"),
        "the peer's share ran out: {all:?}"
    );
    let started = Instant::now();
    assert!(
        deaf.hung_up_within(STALL + Duration::from_secs(3)),
        "the stalled peer is dropped"
    );
    assert!(
        started.elapsed() >= STALL / 2,
        "dropped only after the stall time"
    );
    s.server.expect("disconnect", T);
    s.check("a peer that never reads its socket (after)", rss);

    // A one-slot ring never taken from: one answer in the ring, the rest waiting for room.
    let stuck = s.handshake();
    let len = ctrl_ring_len(1);
    let ring = memfd(len as usize, &[]);
    assert!(stuck.send(&ctrl_ring_msg(1, len), &[ring.as_raw_fd()]));
    let _ = flood(&s, &stuck, 100, 8);
    s.check("a peer that never takes from its ring (during)", rss);
    assert!(
        stuck.hung_up_within(STALL + Duration::from_secs(3)),
        "the stalled peer is dropped"
    );
    s.server.expect("disconnect", T);
    s.check("a peer that never takes from its ring (after)", rss);
    report(&mut s, "peers that never take", before);
}

/// Five hundred connections that handshake and then sit idle: a connection's control ring is
/// touched only as messages pass through it, so they cost the server little memory.
#[test]
fn idle_connections_cost_little_memory() {
    let mut s = crowded_scene("idle");
    let before = footprint(&s);
    let mut idle = Vec::new();
    for _ in 0..500 {
        idle.push(s.handshake());
    }
    // Every connection established on the server's side (it announced its ring to each).
    for peer in &idle {
        let _ = peer.server_ring();
    }
    let grown = rss_kib(s.server.child.id()).saturating_sub(before.1);
    eprintln!("500 idle connections: server RSS grew by {grown} KiB");
    assert!(
        grown <= 50 * 1024,
        "500 idle connections cost the server {grown} KiB (at most 50 MiB)"
    );
    s.check("500 idle connections", before.1);
    drop(idle);
    s.check("500 idle connections gone", before.1);
    report(&mut s, "500 idle connections", before);
}

/// Connections that leave all at once: the server drops each and goes on.
#[test]
fn many_peers_leaving_together_leave_the_server_serving() {
    let mut s = crowded_scene("leave");
    let before = footprint(&s);
    let peers: Vec<Raw> = (0..100).map(|_| s.handshake()).collect();
    drop(peers);
    s.check("100 peers leaving together", before.1);
    report(&mut s, "100 peers leaving together", before);
}

/// Receives whatever the server sent on `peer` (without waiting) and whether a REFUSE naming
/// `what` was among it.
fn refused(peer: &Raw, what: &str) -> bool {
    let mut buf = [0u8; 8192];
    loop {
        // SAFETY: reads into a live buffer.
        let n = unsafe {
            libc::recv(
                peer.0.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n <= 0 {
            return false;
        }
        let msg = &buf[..n as usize];
        if msg[0] == 3 && String::from_utf8_lossy(msg).contains(what) {
            return true;
        }
    }
}

/// Peers announcing consumers on many connections (32 each, the most one connection may):
/// with the server's descriptor limit at 256 it keeps at most a quarter of it for its peers,
/// refuses the announcement past that with a reason, and still accepts and serves clients.
#[test]
fn descriptors_from_peers_have_a_server_wide_cap() {
    let mut s = Scene::with(
        "fd-cap",
        &[
            ("SEND_TASKS", SEND_TASKS),
            ("SLEEP", "1"),
            ("FD_LIMIT", "256"),
        ],
    );
    let before = footprint(&s);
    let pid = s.server.child.id();
    let fds_before = open_fds(pid);
    let ring_fd = memfd(ring_bytes(4), &ring(4, false));
    let data_fd = memfd(4096, &[]);
    let mut peers = Vec::new();
    let mut ours = Vec::new();
    for _ in 0..8 {
        let peer = s.handshake();
        let _ = peer.server_ring();
        for id in 1..=32 {
            let (mine, theirs) = stream_pair();
            if !peer.send(
                &consumer_new(id, 4, 4096),
                &[ring_fd.as_raw_fd(), data_fd.as_raw_fd(), theirs.as_raw_fd()],
            ) {
                break;
            }
            ours.push(mine);
        }
        peers.push(peer);
        s.witness.worst_round_trip(5);
    }
    let refusals = peers
        .iter()
        .filter(|p| p.closed_within(Duration::from_millis(200)) || refused(p, "DESCRIPTORS"))
        .count();
    let fds = open_fds(pid);
    eprintln!(
        "descriptor cap: {refusals} connection(s) refused, server holds {fds} (before {fds_before})"
    );
    assert!(refusals > 0, "some announcement met the cap");
    assert!(
        fds <= fds_before + 8 * 2 + 64 + 8,
        "the server holds {fds} descriptors (before {fds_before}; cap 64 for peers)"
    );
    // The table never filled: a new client still gets in.
    let newcomer = s.handshake();
    let _ = newcomer.server_ring();
    s.check("descriptors past the cap", before.1);
    drop((peers, newcomer));
    report(&mut s, "descriptors past the cap", before);
}

/// A consumer that never posts a receive: the server's send to it waits, and after the stall
/// time the connection goes (the send fails) instead of waiting for ever.
#[test]
fn a_consumer_that_never_posts_loses_its_connection() {
    let mut s = scene("never-post");
    let before = footprint(&s);
    let peer = s.handshake();
    let _ = peer.server_ring();
    // A ring with nothing posted.
    let mut empty = ring(4, false);
    empty[64..72].copy_from_slice(&0u64.to_le_bytes());
    let (ring_fd, data_fd) = (memfd(ring_bytes(4), &empty), memfd(4096, &[]));
    let (_mine, theirs) = stream_pair();
    assert!(peer.send(
        &consumer_new(1, 4, 4096),
        &[ring_fd.as_raw_fd(), data_fd.as_raw_fd(), theirs.as_raw_fd()],
    ));
    s.server.expect("probe-submitted 1", T);
    s.check("a consumer that never posts (during)", before.1);
    assert!(
        peer.hung_up_within(STALL + Duration::from_secs(3)),
        "the connection of a consumer that never posts is dropped"
    );
    s.check("a consumer that never posts (after)", before.1);
    report(&mut s, "a consumer that never posts", before);
}

/// A wake-up socket that is not connected would swallow every wake-up: refused.
#[test]
fn an_unconnected_wake_up_socket_is_refused() {
    let mut s = scene("unconnected");
    let before = footprint(&s);
    let peer = s.handshake();
    // SAFETY: no pointers; a fresh descriptor.
    let unconnected = unsafe {
        OwnedFd::from_raw_fd(libc::socket(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
        ))
    };
    let (ring_fd, data_fd) = (memfd(ring_bytes(4), &ring(4, false)), memfd(4096, &[]));
    peer.send(
        &consumer_new(1, 4, 4096),
        &[
            ring_fd.as_raw_fd(),
            data_fd.as_raw_fd(),
            unconnected.as_raw_fd(),
        ],
    );
    assert!(
        peer.closed_within(T),
        "an unconnected wake-up drops the peer"
    );
    s.check("an unconnected wake-up socket", before.1);
    report(&mut s, "an unconnected wake-up socket", before);
}
