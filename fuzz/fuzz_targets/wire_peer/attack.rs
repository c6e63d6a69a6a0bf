//! The attack: one connection per input, read off the input as a handshake and then frames,
//! consumer announcements, reads, pauses and sends of the program, with the scribbler started
//! on the first ring the target could map.

use crate::fds::{Held, MAX_FILE, descriptor, maybe_fds, memfd, random_fds, seals, socket_pair};
use crate::peer::Peer;
use crate::program::with;
use crate::protocol::{
    TAG_BYE, TAG_CONSUMER_GONE, TAG_CTRL_RING_ACK, TAG_WAKE, consumer_new, ctrl_ring,
    ctrl_ring_len, data_frame, hello, ring_contents, ring_len,
};
use crate::rig::{MEM_LEN, Rig};
use crate::scribbler::{Job, ctrl_scribbles, scribble, scribbles};
use crate::support::Bytes;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Most frames one input sends.
const MAX_OPS: usize = 48;

impl Rig {
    /// One attacking connection, from the handshake to its close.
    pub fn attack(&self, b: &mut Bytes<'_>) {
        let mode = b.u8();
        let mut peer = Peer::connect(&self.path);
        // What the attack passes or maps, closed once it ends (after the scribbler stopped).
        let mut held = Held::default();
        // Extra connections the attack opened: closed together when it ends.
        let mut crowd: Vec<Peer> = Vec::new();
        let jobs: Mutex<Vec<Job>> = Mutex::default();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let mut scribbler = None;
            if mode % 8 != 7 {
                let hello = hello(b);
                let fds = if mode % 8 == 6 {
                    random_fds(b, self, &peer, &mut held)
                } else {
                    Vec::new()
                };
                peer.send(self, &hello, &fds);
            }
            let mut ids = Ids::default();
            for _ in 0..MAX_OPS {
                if b.is_empty() || peer.dead {
                    break;
                }
                self.pass();
                match b.u8() % 16 {
                    0..=2 if b.u8() % 8 == 7 => {
                        // A flood the attacker never reads the answers to: the server's sends
                        // to it wait, up to the connection's share of the send tasks.
                        for _ in 0..=b.u8() % 64 {
                            let data = data_frame(b);
                            peer.send(self, &data, &[]);
                        }
                    }
                    0..=2 => {
                        let data = data_frame(b);
                        let fds = maybe_fds(b, self, &peer, &mut held);
                        peer.send(self, &data, &fds);
                    }
                    3..=6 => {
                        let job = self.announce(b, &mut peer, &mut held, &mut ids);
                        if let Some(job) = job {
                            jobs.lock().unwrap_or_else(|p| p.into_inner()).push(job);
                            with(|p| p.stats.scribbled += 1);
                            if scribbler.is_none() {
                                scribbler = Some(s.spawn(|| scribble(&jobs, &stop)));
                            }
                        }
                    }
                    7 => {
                        let id = ids.pick(b);
                        let mut m = vec![TAG_CONSUMER_GONE];
                        m.extend_from_slice(&id.to_le_bytes());
                        let fds = maybe_fds(b, self, &peer, &mut held);
                        peer.send(self, &m, &fds);
                    }
                    8 => {
                        let mut m = vec![TAG_BYE];
                        if b.u8().is_multiple_of(4) {
                            m.push(b.u8());
                        }
                        let fds = maybe_fds(b, self, &peer, &mut held);
                        peer.send(self, &m, &fds);
                    }
                    9 => {
                        // Any tag, any body: unknown tags, HELLO or WELCOME once established.
                        let mut m = vec![b.u8()];
                        let n = usize::from(b.u8());
                        m.extend_from_slice(b.take(n));
                        let fds = maybe_fds(b, self, &peer, &mut held);
                        peer.send(self, &m, &fds);
                    }
                    10 => {
                        let mut m = match b.u8() % 3 {
                            0 => hello(b),
                            1 => consumer_new(ids.fresh(), 4, 32, ring_len(4), 4096),
                            _ => vec![TAG_CONSUMER_GONE, 1, 0, 0, 0],
                        };
                        let cut = usize::from(b.u8()) % m.len().max(1);
                        m.truncate(cut);
                        let fds = maybe_fds(b, self, &peer, &mut held);
                        peer.send(self, &m, &fds);
                    }
                    11 if b.u8() % 4 == 3 => {
                        // A crowd of well-behaved connections that all close together when
                        // the attack ends (shrinking every connection's share meanwhile).
                        for _ in 0..=b.u8() % 32 {
                            let mut extra = Peer::connect(&self.path);
                            extra.send(self, &hello(&mut Bytes::new(&[])), &[]);
                            crowd.push(extra);
                            self.pass();
                        }
                    }
                    11 => {
                        for _ in 0..b.u8() % 8 {
                            self.pass();
                        }
                    }
                    12 => peer.drain(usize::from(b.u8() % 16) + 1),
                    13 => {
                        // The program sends again, to the last consumer announced or any id.
                        let id = ids.pick(b);
                        let probe = (
                            usize::from(b.u16()) % (MEM_LEN + 1),
                            usize::from(b.u8() % 40),
                            b.u8() % 8 != 7,
                        );
                        if let Some(p) = self.attacked().and_then(|c| self.producer(c)) {
                            self.send(p, id, probe);
                        }
                    }
                    14 => {
                        // Time for retry timers and the scribbler.
                        let until = Instant::now() + Duration::from_micros(u64::from(b.u8()) * 4);
                        while Instant::now() < until {
                            self.pass();
                        }
                    }
                    _ if b.bool() => {
                        let hello = hello(b);
                        peer.send(self, &hello, &[]);
                    }
                    _ => {
                        if let Some(job) = self.control_ring(b, &mut peer, &mut held) {
                            jobs.lock().unwrap_or_else(|p| p.into_inner()).push(job);
                            with(|p| p.stats.scribbled += 1);
                            if scribbler.is_none() {
                                scribbler = Some(s.spawn(|| scribble(&jobs, &stop)));
                            }
                        }
                    }
                }
            }
            for _ in 0..4 {
                self.pass();
            }
            stop.store(true, Ordering::Relaxed);
        });
        drop(peer);
        drop(held);
    }

    /// A `CONSUMER_NEW` with its descriptors; the job that scribbles on its ring, if the
    /// target could map the ring.
    fn announce(
        &self,
        b: &mut Bytes<'_>,
        peer: &mut Peer,
        held: &mut Held,
        ids: &mut Ids,
    ) -> Option<Job> {
        let id = match b.u8() % 4 {
            0 | 1 => ids.fresh(),
            2 => ids.last,
            _ => b.u32(),
        };
        ids.last = id;
        let depth = match b.u8() % 8 {
            0..=4 => 1u64 << (b.u8() % 8),
            5 => 1u64 << (b.u8() % 64),
            6 => b.u64(),
            _ => [65536, 131072, 0, 3][usize::from(b.u8() % 4)],
        };
        let imm_len = match b.u8() % 4 {
            0 | 1 => 32,
            2 => u32::from(b.u8() % 40),
            _ => b.u32(),
        };
        let good_ring = dpakit_wire::fuzzing::ring_bytes(depth).map(|n| n as u64);
        let ring_len = match b.u8() % 8 {
            7 => b.u64(),
            6 => good_ring.map_or(0, |n| n.wrapping_add(u64::from(b.u8())).wrapping_sub(128)),
            _ => good_ring.unwrap_or_else(|| b.u64()),
        };
        let data_len = match b.u8() % 8 {
            7 => b.u64(),
            6 => (1u64 << 30) + 8192 + u64::from(b.u8() % 2),
            5 => 0,
            _ => 4096 * (1 + u64::from(b.u8() % 16)),
        };
        let msg = consumer_new(id, depth, imm_len, ring_len, data_len);
        let shape = b.u8();
        let mut job = None;
        let mut fds = Vec::new();
        if shape % 4 != 3 {
            // The three a consumer shares, each maybe something else.
            for slot in 0..3 {
                if b.u8() % 8 == 7 {
                    fds.push(descriptor(b, self, peer, held));
                    continue;
                }
                let seals = seals(b);
                fds.push(match slot {
                    0 => {
                        let size = if b.u8() % 8 == 7 {
                            b.u64() % MAX_FILE
                        } else {
                            ring_len.min(MAX_FILE)
                        };
                        let ring = ring_contents(b, size, depth);
                        let (fd, map) = memfd(size, &ring, seals, true, held);
                        if let Some((addr, len)) = map {
                            job = scribbles(b, addr, len, depth);
                        }
                        fd
                    }
                    1 => {
                        let size = if b.u8() % 8 == 7 {
                            b.u64() % MAX_FILE
                        } else {
                            data_len.min(MAX_FILE)
                        };
                        memfd(size, &[], seals, false, held).0
                    }
                    _ => socket_pair(libc::SOCK_STREAM, b.u8() % 4 == 3, b.bool(), held),
                });
            }
            match shape % 16 {
                1 => fds.push(descriptor(b, self, peer, held)),
                2 => {
                    fds.pop();
                }
                _ => {}
            }
        } else {
            for _ in 0..b.u8() % 15 {
                fds.push(descriptor(b, self, peer, held));
            }
        }
        fds.retain(|&fd| fd >= 0);
        peer.send(self, &msg, &fds);
        job
    }
}

impl Rig {
    /// The control path in shared memory: an acknowledgement, a wake-up, or an announcement
    /// of a control ring (right, fuzzed or with other descriptors) that the target writes its
    /// messages into; the job that scribbles on it, if the target could map it.
    fn control_ring(&self, b: &mut Bytes<'_>, peer: &mut Peer, held: &mut Held) -> Option<Job> {
        match b.u8() % 4 {
            0 => {
                let fds = maybe_fds(b, self, peer, held);
                peer.send(self, &[TAG_CTRL_RING_ACK], &fds);
                return None;
            }
            1 => {
                let fds = maybe_fds(b, self, peer, held);
                peer.send(self, &[TAG_WAKE], &fds);
                return None;
            }
            _ => {}
        }
        let depth = match b.u8() % 4 {
            0 | 1 => 1u64 << (b.u8() % 9),
            2 => 1u64 << (b.u8() % 64),
            _ => b.u64(),
        };
        let good = ctrl_ring_len(depth);
        let ring_len = match b.u8() % 4 {
            3 => b.u64(),
            2 => good.map_or(0, |n| n.wrapping_add(u64::from(b.u8())).wrapping_sub(128)),
            _ => good.unwrap_or_else(|| b.u64()),
        };
        let size = if b.u8() % 8 == 7 {
            b.u64() % MAX_FILE
        } else {
            ring_len.min(MAX_FILE)
        };
        let (fd, map) = memfd(size, &[], seals(b), true, held);
        let job = map.and_then(|(addr, len)| ctrl_scribbles(b, addr, len, depth));
        let mut fds = if b.u8() % 8 == 7 {
            random_fds(b, self, peer, held)
        } else {
            vec![fd]
        };
        fds.retain(|&fd| fd >= 0);
        peer.send(self, &ctrl_ring(depth, ring_len), &fds);
        job
    }
}

/// Consumer ids the attack uses.
#[derive(Default)]
struct Ids {
    next: u32,
    last: u32,
}

impl Ids {
    fn fresh(&mut self) -> u32 {
        self.next += 1;
        self.next
    }

    /// The last id announced, another recent one, or any.
    fn pick(&self, b: &mut Bytes<'_>) -> u32 {
        match b.u8() % 4 {
            0 | 1 => self.last,
            2 => self.next.saturating_sub(u32::from(b.u8() % 4)),
            _ => b.u32(),
        }
    }
}
