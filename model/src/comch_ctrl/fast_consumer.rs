//! A consumer on a Comch connection (the fast path, `dpakit_wire::fast_path`): it shares its
//! mmap's memory with the peer, announces itself, and takes what the peer's producers write
//! into the buffers it posted — checking every completion, since the peer writes the ring.

use super::Link;
use crate::buf::Buf;
use crate::error::{Error, ErrorCode, Result, err};
use crate::limits::{COMCH_ANNOUNCE_TIMEOUT_MS, MAX_IMM_DATA_LEN};
use crate::mmap::Mmap;
use dpakit_wire::fast_path::FastConsumer;
use std::cell::Cell;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// What a fast-path consumer needs from the layer above.
pub trait RecvFace {
    /// The buffer of receive task `index`, if it has one.
    fn recv_buf(&self, index: u32) -> Option<&Buf>;
    /// Receive `index` finished with `status`, carrying `imm` from producer `producer`.
    fn received(&self, index: u32, status: ErrorCode, imm: &[u8], producer: u32);
}

/// Where a starting consumer's announcement is.
#[derive(Debug)]
pub enum Announced {
    /// The peer is told: the consumer runs.
    Yes,
    /// The connection's queue is full: try again at the next progress.
    NotYet,
    /// The start failed (the queue stayed full past the announcement timeout, or the
    /// connection closed): the consumer goes back to IDLE.
    Failed(Error),
}

/// A consumer on a Comch connection, while it runs.
#[derive(Debug)]
pub struct FastReceiver {
    fast: FastConsumer,
    /// When it started: it is STARTING until its announcement to the peer is written, which
    /// must happen within `COMCH_ANNOUNCE_TIMEOUT_MS`.
    starting_since: Cell<Option<Instant>>,
    /// Stopped (by a callback of the pass that delivers, say): nothing more is delivered.
    stopped: Cell<bool>,
}

impl FastReceiver {
    /// Consumer `id` on `link`'s connection, receiving into `mmap` (started, with PCI
    /// read-write access), for `num_tasks` receives of up to `imm_len` immediate bytes.
    pub fn start(link: &Link, mmap: &Mmap, id: u32, num_tasks: u32, imm_len: u32) -> Result<Self> {
        let memory = mmap.share()?;
        Ok(Self {
            fast: FastConsumer::start(link.shared().clone(), id, num_tasks, imm_len, memory)?,
            starting_since: Cell::new(Some(Instant::now())),
            stopped: Cell::new(false),
        })
    }

    /// The descriptor the consumer's PE watches.
    pub fn wake_fd(&self) -> RawFd {
        self.fast.wake_fd()
    }

    /// A STARTING consumer announces itself to the peer.
    pub fn announce(&self) -> Announced {
        let timeout = Duration::from_millis(COMCH_ANNOUNCE_TIMEOUT_MS);
        let failed = match self.fast.announce() {
            Ok(true) => {
                self.starting_since.set(None);
                return Announced::Yes;
            }
            Ok(false)
                if self
                    .starting_since
                    .get()
                    .is_some_and(|t| t.elapsed() < timeout) =>
            {
                return Announced::NotYet;
            }
            Ok(false) => err(
                ErrorCode::TimeOut,
                "the consumer could not announce itself: the connection's queue stayed full \
                 (the peer does not progress)",
            ),
            Err(e) => e,
        };
        self.starting_since.set(None);
        Announced::Failed(failed)
    }

    /// Posts receive `index`: data lands in `buf` (at its tail), or, without a buffer, only
    /// immediate data arrives. `buf` must come from the consumer's mmap.
    pub fn post(&self, mmap: &Mmap, index: u32, buf: Option<&Buf>) -> Result<()> {
        let Some(buf) = buf else {
            self.fast.post(index, mmap.share()?.base, 0);
            return Ok(());
        };
        let view = buf.view()?;
        if view.mmap.id() != mmap.id() {
            crate::error::bail!(
                InvalidValue,
                "the task's buffer is not from the consumer's mmap (doca_comch_consumer_create)"
            );
        }
        let tail = view.data as usize + view.data_len;
        let end = view.head as usize + view.len;
        self.fast.post(index, tail, end - tail);
        Ok(())
    }

    /// Delivers what producers wrote; returns how many receives completed. At most one ring's
    /// worth per progress: the ring is the peer's to write, and a peer that keeps publishing
    /// (bogus) completions must not hold the progress call from everything else on the PE.
    pub fn poll(&self, face: &impl RecvFace) -> usize {
        let mut n = 0;
        loop {
            // A callback of this pass may have stopped the consumer.
            let next = if self.stopped.get() || n >= self.fast.depth() {
                None
            } else {
                if n == 0 {
                    self.fast.wake_up();
                }
                self.fast.next()
            };
            let Some(r) = next else {
                return n;
            };
            let imm = r.imm;
            let imm = &imm[..(r.imm_len as usize).min(MAX_IMM_DATA_LEN)];
            let grown = face.recv_buf(r.task).and_then(|buf| {
                let view = buf.view().ok()?;
                let tail = view.data as usize + view.data_len;
                // The producer checked the posted room; a peer that lied does not get further.
                if tail.checked_add(r.len)? > view.head as usize + view.len {
                    return None;
                }
                self.fast.settle(tail, r.len);
                buf.set_data_len(view.data_len + r.len).ok()
            });
            let status = match (grown, r.len) {
                (Some(()), _) | (None, 0) => ErrorCode::Success,
                _ => ErrorCode::Unexpected,
            };
            face.received(r.task, status, imm, r.producer);
            n += 1;
        }
    }

    /// A stop: the ring closes and the peer is told the consumer is gone.
    pub fn stop(&self) {
        self.stopped.set(true);
        self.fast.stop();
    }

    /// Before the PE sleeps: producers wake it from now on. Whether a completion is there
    /// already (then it must not sleep).
    pub fn sleep(&self) -> bool {
        self.fast.sleep()
    }
}
