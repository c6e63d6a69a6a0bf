//! `wire_peer`: a Comch server attacked from the peer's side, through its socket.
//!
//! One server lives in this process for the whole run, driven through the C API on a PE, with
//! a program that echoes control messages and, when a peer announces a consumer, sends to it
//! from a producer on the connection. Each input is one attacking connection speaking raw
//! bytes on a `SOCK_SEQPACKET` socket, descriptors passed with `SCM_RIGHTS`:
//! - the handshake: a correct HELLO, one with fuzzed version, max message size, function and
//!   name (lengths that lie, bytes that are not UTF-8), a truncated one, garbage, or none;
//!   descriptors may come with it;
//! - frames: DATA of any length, CONSUMER_NEW, CONSUMER_GONE, BYE, unknown tags, truncated
//!   messages, any of them carrying descriptors; the attacker reads the answers or lets them
//!   pile up, floods the server with messages whose answers it never takes (its share of the
//!   server's send tasks runs out), and opens a crowd of connections that all close together;
//! - consumer announcements whose descriptors are the three a consumer shares or anything
//!   else: memfds of fuzzed sizes, sealed or not (or against writing), pipe ends with their
//!   other end open or closed, eventfds blocking or not, stream, datagram and seqpacket sockets
//!   with their peer open or closed, `/dev/null`, a regular file, a directory, the attacking
//!   socket itself; too many or too few. The ring memfd is laid out as a consumer lays it out,
//!   then poked;
//! - the ring written concurrently: once a ring is announced, a second thread of the target
//!   keeps writing fuzz-chosen values into it (counters, posted receives, completion slots) —
//!   what a consumer in another process can do at any moment — while the server's producer
//!   sends to that consumer (and sends more as the input asks, to any id).
//!
//! A zero byte, and the end of the input (which reads as zeros), picks the well-behaved choice
//! wherever there is one, so short inputs reach deep: a correct handshake, an announcement a
//! real consumer would make, with receives posted.
//!
//! After each input the attacking connection is closed. Within a couple of seconds the server
//! must then have dropped it and given back every descriptor and C API object it took for it
//! (the program stops and destroys the connection's producers on disconnection, as DOCA
//! programs do), and it must still serve a well-behaved client: connect, handshake, one
//! control-message round trip. A panic (even one the API turns into an error), crash,
//! `SIGPIPE`, hang, leaked descriptor or object, or a server that no longer serves is a
//! finding; errors, refusals and dropped connections are expected.
//!
//! This file holds the run's setup; the rest lives in `wire_peer/`: the rig (the server, the
//! well-behaved client and progress), the server's program, the checks after each input, the
//! attack, and the attacker's socket, protocol messages, descriptors and scribbler.
#![no_main]
// The scribbler stands for another process writing shared memory: std atomics, no loom model.
#![allow(clippy::disallowed_types)]

mod support;

// A bin target's `mod x;` would look for `fuzz_targets/x.rs`: the modules sit in a folder
// named after the target.
#[path = "wire_peer/attack.rs"]
mod attack;
#[path = "wire_peer/checks.rs"]
mod checks;
#[path = "wire_peer/fds.rs"]
mod fds;
#[path = "wire_peer/peer.rs"]
mod peer;
#[path = "wire_peer/program.rs"]
mod program;
#[path = "wire_peer/protocol.rs"]
mod protocol;
#[path = "wire_peer/rig.rs"]
mod rig;
#[path = "wire_peer/scribbler.rs"]
mod scribbler;

use libfuzzer_sys::fuzz_target;
use protocol::{COMP, HEADER, POST};
use rig::Rig;
use std::ffi::CStr;

/// The server's name and the host function its representor stands for (its clients').
const NAME: &CStr = c"wire-peer";
const HOST: &str = "0000:b1:00.0";

thread_local! {
    static RIG: Rig = Rig::new();
}

fuzz_target!(
    init: init(),
    |data: &[u8]| RIG.with(|rig| rig.run(data))
);

fn init() {
    // A private runtime directory for this process's server socket, removed at exit.
    support::private_runtime_dir("dpakit-fuzz-wire");
    let layout = dpakit_wire::fuzzing::ring_bytes(2);
    assert_eq!(
        layout,
        Some(HEADER + 2 * (POST + COMP)),
        "the ring layout changed"
    );
}
