//! The scribbler: a second thread that keeps writing into the rings the target mapped, what a
//! consumer in another process can do at any moment, while the server's producer sends.

use crate::protocol::{
    ALIVE, COMP, COMP_TAIL, CTRL_HEAD, CTRL_HEADER, CTRL_SEND_WAITING, CTRL_SLEEPING, CTRL_SLOT,
    HEADER, POST, POST_HEAD, POST_TAIL,
};
use crate::support::Bytes;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One write the scribbler repeats into a ring.
#[derive(Clone, Copy)]
enum Write {
    Set(u64),
    Add(u64),
}

/// A value a peer would write into a counter (0, 1, one more, one less) or any other.
fn write(b: &mut Bytes<'_>) -> Write {
    match b.u8() % 6 {
        0 => Write::Set(0),
        1 => Write::Set(1),
        2 => Write::Set(u64::MAX),
        3 => Write::Add(1),
        4 => Write::Add(u64::MAX),
        _ => Write::Set(b.u64()),
    }
}

/// The writes the scribbler keeps making into one ring the target mapped.
pub struct Job {
    addr: usize,
    writes: Vec<(usize, Write)>,
}

/// Writes into the ring mapped at `addr` (`len` bytes, of `depth`): to its counters, posted
/// receives, completion slots or anywhere, values a consumer would write and others.
pub fn scribbles(b: &mut Bytes<'_>, addr: usize, len: usize, depth: u64) -> Option<Job> {
    let d = depth.clamp(1, 1 << 16) as usize;
    let n = b.u8() % 8;
    if n == 0 {
        return None;
    }
    let mut writes = Vec::new();
    for _ in 0..n {
        let i = usize::from(b.u16()) % d;
        let at = match b.u8() % 7 {
            0 => POST_HEAD,
            1 => POST_TAIL,
            2 => COMP_TAIL,
            3 => ALIVE,
            4 => HEADER + i * POST + 8 * usize::from(b.u8() % 3),
            5 => HEADER + d * POST + i * COMP,
            _ => usize::from(b.u16()) * 8,
        };
        let w = write(b);
        if at + 8 <= len {
            writes.push((at, w));
        }
    }
    (!writes.is_empty()).then_some(Job { addr, writes })
}

/// Writes into a control ring the attacker announced (mapped at `addr`, `len` bytes, of
/// `depth`), which the target writes its messages into: its read position, its flags, slot
/// lengths or anywhere.
pub fn ctrl_scribbles(b: &mut Bytes<'_>, addr: usize, len: usize, depth: u64) -> Option<Job> {
    let d = depth.clamp(1, 1 << 16) as usize;
    let mut writes = Vec::new();
    for _ in 0..b.u8() % 8 {
        let at = match b.u8() % 5 {
            0 => CTRL_HEAD,
            1 => CTRL_SLEEPING,
            2 => CTRL_SEND_WAITING,
            3 => CTRL_HEADER + (usize::from(b.u16()) % d) * CTRL_SLOT,
            _ => usize::from(b.u16()) * 8,
        };
        let w = write(b);
        if at + 8 <= len {
            writes.push((at, w));
        }
    }
    (!writes.is_empty()).then_some(Job { addr, writes })
}

/// The second thread: keeps making every job's writes until `stop`.
pub fn scribble(jobs: &Mutex<Vec<Job>>, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        {
            let jobs = jobs.lock().unwrap_or_else(|p| p.into_inner());
            for job in jobs.iter() {
                for &(at, w) in &job.writes {
                    // SAFETY: `at + 8` lies inside the job's mapping (checked when made), which
                    // lives until the scribbler has stopped; 8-aligned (page-aligned base).
                    let word = unsafe { &*((job.addr + at) as *const AtomicU64) };
                    match w {
                        Write::Set(v) => word.store(v, Ordering::Relaxed),
                        Write::Add(v) => {
                            word.fetch_add(v, Ordering::Relaxed);
                        }
                    }
                }
            }
        }
        std::thread::yield_now();
    }
}
