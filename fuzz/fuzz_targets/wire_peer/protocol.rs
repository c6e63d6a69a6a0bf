//! The Comch wire protocol as the attacker speaks it: tags, HELLO, DATA, CONSUMER_NEW and
//! CTRL_RING messages (right, fuzzed, truncated or garbage), and the rings a peer shares.

use crate::fds::MAX_OWN_MAP;
use crate::support::Bytes;
use crate::{HOST, NAME};

/// The server's max message size (the default) and the room its receive buffer has beyond it.
const MAX_MSG: usize = 4080;
const OVERHEAD: usize = 512;

/// Ring layout (see `dpakit_wire::fuzzing::ring_bytes`): header lines, posts, completions.
pub const POST_HEAD: usize = 0;
pub const POST_TAIL: usize = 64;
pub const COMP_TAIL: usize = 128;
pub const ALIVE: usize = 192;
/// 1: the consumer sleeps, so producers wake it (through the descriptor it gave).
pub const SLEEPING: usize = 256;
pub const HEADER: usize = 320;
pub const POST: usize = 24;
pub const COMP: usize = 64;

const TAG_HELLO: u8 = 1;
const TAG_DATA: u8 = 4;
pub const TAG_BYE: u8 = 5;
const TAG_CONSUMER_NEW: u8 = 6;
pub const TAG_CONSUMER_GONE: u8 = 7;
pub const TAG_WAKE: u8 = 11;
const TAG_CTRL_RING: u8 = 12;
pub const TAG_CTRL_RING_ACK: u8 = 13;

/// Control-ring layout (wire/src/ctrl_ring.rs): four counter lines (tail, head, sleeping,
/// sender waiting), then slots of a length and room for the max message size, 64-aligned.
pub const CTRL_HEAD: usize = 64;
pub const CTRL_SLEEPING: usize = 128;
pub const CTRL_SEND_WAITING: usize = 192;
pub const CTRL_HEADER: usize = 256;
pub const CTRL_SLOT: usize = (8 + MAX_MSG).next_multiple_of(64);

/// Bytes of a control ring of `depth` slots (`None` where that overflows).
pub fn ctrl_ring_len(depth: u64) -> Option<u64> {
    depth
        .checked_mul(CTRL_SLOT as u64)?
        .checked_add(CTRL_HEADER as u64)
}

/// A `CTRL_RING` announcement.
pub fn ctrl_ring(depth: u64, ring_len: u64) -> Vec<u8> {
    let mut m = vec![TAG_CTRL_RING];
    m.extend_from_slice(&depth.to_le_bytes());
    m.extend_from_slice(&ring_len.to_le_bytes());
    m
}

/// A HELLO: right, with fuzzed fields, truncated, or garbage.
pub fn hello(b: &mut Bytes<'_>) -> Vec<u8> {
    let mode = b.u8() % 8;
    if mode == 7 {
        let n = usize::from(b.u8());
        return b.take(n).to_vec();
    }
    let fuzzed = mode >= 4;
    let pick = |b: &mut Bytes<'_>, right: &'static [u8], near: &'static [u8]| -> Vec<u8> {
        if !fuzzed {
            return right.to_vec();
        }
        match b.u8() % 4 {
            0 => right.to_vec(),
            1 => near.to_vec(),
            2 => Vec::new(),
            _ => {
                let n = usize::from(b.u8());
                b.take(n).to_vec()
            }
        }
    };
    let version = if fuzzed && b.bool() { b.u32() } else { 2 };
    let max = if fuzzed {
        [MAX_MSG as u32, MAX_MSG as u32 - 1, 0, b.u32()][usize::from(b.u8() % 4)]
    } else {
        MAX_MSG as u32
    };
    let function = pick(b, HOST.as_bytes(), b"0000:b1:00.2");
    let name = pick(b, NAME.to_bytes(), b"wire-pee");
    let mut m = vec![TAG_HELLO];
    m.extend_from_slice(&version.to_le_bytes());
    m.extend_from_slice(&max.to_le_bytes());
    for s in [function, name] {
        // The length as it is, or one that lies.
        let len = if fuzzed && b.u8().is_multiple_of(8) {
            b.u16()
        } else {
            s.len() as u16
        };
        m.extend_from_slice(&len.to_le_bytes());
        m.extend_from_slice(&s);
    }
    if fuzzed && b.u8().is_multiple_of(8) {
        m.extend_from_slice(b.take(4));
    }
    if mode == 6 {
        let cut = usize::from(b.u8()) % m.len();
        m.truncate(cut);
    }
    m
}

/// A DATA frame of some length: empty, at the limits the server agreed, past them, any.
pub fn data_frame(b: &mut Bytes<'_>) -> Vec<u8> {
    let len = match b.u8() % 8 {
        0 => 0,
        1 => MAX_MSG,
        2 => MAX_MSG + 1,
        3 => MAX_MSG + OVERHEAD - 2 + usize::from(b.u8() % 4),
        4 => usize::from(b.u16()) % 9000,
        _ => usize::from(b.u8()),
    };
    let mut m = vec![TAG_DATA];
    m.extend_from_slice(b.take(len));
    m.resize(len + 1, 0xAB);
    m
}

pub fn consumer_new(id: u32, depth: u64, imm_len: u32, ring_len: u64, data_len: u64) -> Vec<u8> {
    let mut m = vec![TAG_CONSUMER_NEW];
    m.extend_from_slice(&id.to_le_bytes());
    m.extend_from_slice(&depth.to_le_bytes());
    m.extend_from_slice(&imm_len.to_le_bytes());
    m.extend_from_slice(&ring_len.to_le_bytes());
    m.extend_from_slice(&data_len.to_le_bytes());
    m
}

pub fn ring_len(depth: u64) -> u64 {
    (HEADER as u64) + depth * (POST + COMP) as u64
}

/// A ring as a consumer lays it out — alive, receives posted from a (maybe wrapping) start,
/// completion slots free — then poked; or raw bytes.
pub fn ring_contents(b: &mut Bytes<'_>, size: u64, depth: u64) -> Vec<u8> {
    let len = size.min(MAX_OWN_MAP as u64) as usize;
    let mut r = vec![0u8; len];
    let put = |r: &mut [u8], at: usize, v: u64| {
        if let Some(s) = r.get_mut(at..at + 8) {
            s.copy_from_slice(&v.to_le_bytes());
        }
    };
    if b.u8() % 8 == 7 {
        let raw = b.take(len.min(512));
        r[..raw.len()].copy_from_slice(raw);
        return r;
    }
    let d = depth.clamp(1, 1 << 16);
    let start = match b.u8() % 4 {
        3 => u64::MAX - u64::from(b.u8() % 4),
        2 => u64::from(b.u8()),
        _ => 0,
    };
    let posted = d - u64::from(b.u8()) % (d + 1);
    put(&mut r, POST_HEAD, start);
    put(&mut r, POST_TAIL, start.wrapping_add(posted));
    put(&mut r, COMP_TAIL, start);
    // One byte, as before the sleeping flag existed (seeds keep their meaning): asleep unless
    // its bit 3 says otherwise, so every send tries the wake-up descriptor.
    let state = b.u8();
    put(&mut r, ALIVE, u64::from(state % 8 != 7));
    put(&mut r, SLEEPING, u64::from(state & 8 == 0));
    for k in 0..posted.min(64) {
        let i = (start.wrapping_add(k) % d) as usize;
        let at = HEADER + i * POST;
        let offset = match b.u8() % 4 {
            3 => b.u64(),
            2 => u64::from(b.u16()) * 8,
            _ => 0,
        };
        let capacity = match b.u8() % 4 {
            3 => b.u64(),
            2 => u64::from(b.u16()),
            _ => 1 << 16,
        };
        put(&mut r, at, offset);
        put(&mut r, at + 8, capacity);
        put(&mut r, at + 16, u64::from(b.u32()));
    }
    // Completion slots: slot `k` of the round starting at `start` is free for producers when
    // its round is `start + k`; or none ever is.
    let stuck = b.u8() % 8 == 7;
    let comps = HEADER + d as usize * POST;
    for k in 0..d.min(4096) {
        let i = (start.wrapping_add(k) % d) as usize;
        let seq = if stuck {
            u64::MAX
        } else {
            start.wrapping_add(k)
        };
        put(&mut r, comps + i * COMP, seq);
    }
    for _ in 0..b.u8() % 8 {
        let at = (usize::from(b.u16()) * 8) % len.max(1);
        put(&mut r, at, b.u64());
    }
    r
}
