//! The physical limit of a round trip between two cores.

// The raw atomics are the baseline being measured, not a way around the concurrency facade.
#![allow(clippy::disallowed_types)]

use dpakit::soft::pin_current_thread;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

/// Payload words a line carries: 32 bytes, a MsgQ immediate.
const WORDS: usize = 4;
/// The low bits of the sequence word carry the payload length.
const LEN_BITS: u32 = 6;

/// One cache line: a sequence word (count << 6 | payload length) and up to 32 payload bytes.
#[repr(align(64))]
struct Line {
    seq: AtomicU64,
    words: [AtomicU64; WORDS],
}

impl Line {
    fn new() -> Self {
        Self {
            seq: AtomicU64::new(0),
            words: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// The initiator writes the payload and a sequence number into one cache line, a responder
/// thread on the other core sees the new sequence number, copies the payload into a second line
/// and publishes the same sequence number there; the initiator reads the payload back.
/// With no payload it is a bare two-line ping-pong.
pub struct PingPong {
    ping: Arc<Line>,
    pong: Arc<Line>,
    stop: Arc<AtomicBool>,
    next: u64,
    responder: Option<JoinHandle<()>>,
}

impl PingPong {
    /// Starts the responder pinned to `core`.
    pub fn start(core: usize) -> Self {
        let ping = Arc::new(Line::new());
        let pong = Arc::new(Line::new());
        let stop = Arc::new(AtomicBool::new(false));
        let responder = {
            let (ping, pong, stop) = (ping.clone(), pong.clone(), stop.clone());
            std::thread::spawn(move || {
                pin_current_thread(core).expect("pin to a core this machine has");
                let mut seen = 0;
                while !stop.load(Ordering::Relaxed) {
                    let v = ping.seq.load(Ordering::Acquire);
                    if v != seen {
                        seen = v;
                        let len = (v & ((1 << LEN_BITS) - 1)) as usize;
                        for i in 0..len.div_ceil(8) {
                            let w = ping.words[i].load(Ordering::Relaxed);
                            pong.words[i].store(w, Ordering::Relaxed);
                        }
                        pong.seq.store(v, Ordering::Release);
                    }
                    std::hint::spin_loop();
                }
            })
        };
        Self {
            ping,
            pong,
            stop,
            next: 0,
            responder: Some(responder),
        }
    }

    /// One round trip with no payload.
    #[inline]
    pub fn round_trip(&mut self) {
        self.round_trip_payload(&[], &mut []);
    }

    /// One round trip carrying `msg` (at most 32 bytes) there and back into `reply` (as long).
    #[inline]
    pub fn round_trip_payload(&mut self, msg: &[u8], reply: &mut [u8]) {
        debug_assert!(msg.len() <= WORDS * 8 && reply.len() == msg.len());
        for (word, chunk) in self.ping.words.iter().zip(msg.chunks(8)) {
            let mut bytes = [0u8; 8];
            bytes[..chunk.len()].copy_from_slice(chunk);
            word.store(u64::from_le_bytes(bytes), Ordering::Relaxed);
        }
        self.next += 1;
        let v = self.next << LEN_BITS | msg.len() as u64;
        self.ping.seq.store(v, Ordering::Release);
        while self.pong.seq.load(Ordering::Acquire) != v {
            std::hint::spin_loop();
        }
        for (word, chunk) in self.pong.words.iter().zip(reply.chunks_mut(8)) {
            let bytes = word.load(Ordering::Relaxed).to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

impl Drop for PingPong {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.responder.take() {
            let _ = t.join();
        }
    }
}
