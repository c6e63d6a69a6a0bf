//! A producer on a Comch connection (the fast path, `dpakit_wire::fast_path`): its sends wait,
//! in order, until the peer's consumer has a receive posted, and a peer that posts none for
//! the stall time loses the connection.

use super::Done;
use super::Link;
use crate::comch::FLUSHED;
use crate::error::{ErrorCode, Result, err, report};
use crate::limits::{COMCH_PEER_STALL_TIMEOUT_MS, MAX_IMM_DATA_LEN};
use crate::retry_timer::RetryTimer;
use dpakit_wire::fast_path::{Attempt, FastProducer};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// How often a send waiting for a posted receive tries again while its PE sleeps.
const RETRY: Duration = Duration::from_micros(200);

/// One send as the layer above keeps it (in its task).
#[derive(Debug)]
pub struct FastSend<'a> {
    /// The consumer it goes to.
    pub consumer: u32,
    /// Its immediate data (`imm_len` bytes of it).
    pub imm: [u8; MAX_IMM_DATA_LEN],
    /// How many bytes of `imm` are the message's.
    pub imm_len: usize,
    /// The bytes of its buffer (empty: immediate data only).
    pub data: &'a [u8],
}

/// What a fast-path producer needs from the layer above.
pub trait FastFace {
    /// The progress engine's notification handle follows `fd` from now on.
    fn watch(&self, fd: RawFd) -> Result<()>;
    /// Undoes [`watch`](Self::watch).
    fn unwatch(&self, fd: RawFd);
    /// Send `index` as its task says now (the layer checks the task's buffer).
    fn send_of(&self, index: u32) -> Result<FastSend<'_>>;
    /// Send `index` finished with `status`.
    fn send_done(&self, index: u32, status: ErrorCode);
}

/// A producer on a Comch connection, while it runs.
#[derive(Debug)]
pub struct FastSender {
    fast: FastProducer,
    /// Sends waiting for a posted receive, in submission order.
    waiting: RefCell<VecDeque<u32>>,
    /// Finished sends whose completions are reported at the next progress.
    done: RefCell<Done>,
    /// While sends wait for a posted receive: a timer that wakes the PE to try again (the
    /// consumer's side has no signal for producers), so a waiting producer sleeps, not spins.
    retry: RetryTimer,
    /// Since when the first waiting send has found no receive posted: past
    /// [`COMCH_PEER_STALL_TIMEOUT_MS`] the peer is taking nothing, and the connection goes.
    waiting_since: Cell<Option<Instant>>,
}

impl FastSender {
    /// Producer `id` on `link`'s connection, with room for `num_tasks` sends.
    pub fn new(link: &Link, id: u32, num_tasks: u32) -> Self {
        let n = num_tasks as usize;
        Self {
            fast: FastProducer::new(link.shared().clone(), id),
            waiting: RefCell::new(VecDeque::with_capacity(n)),
            done: RefCell::new(VecDeque::with_capacity(n)),
            retry: RetryTimer::new(RETRY),
            waiting_since: Cell::new(None),
        }
    }

    /// Send `index` was submitted: it waits behind the others until [`drive`](Self::drive)
    /// finds its consumer with a receive posted.
    pub fn queue(&self, index: u32) {
        self.waiting.borrow_mut().push_back(index);
    }

    /// Sends what waits, in order, while consumers have receives posted.
    pub fn drive(&self, face: &impl FastFace) {
        loop {
            let Some(index) = self.waiting.borrow().front().copied() else {
                break;
            };
            let attempt = face.send_of(index).and_then(|send| {
                self.fast
                    .try_send(send.consumer, send.data, &send.imm[..send.imm_len])
            });
            let status = match attempt {
                Ok(Attempt::Wait) => {
                    let now = Instant::now();
                    let since = self.waiting_since.get().unwrap_or(now);
                    self.waiting_since.set(Some(since));
                    let limit = Duration::from_millis(COMCH_PEER_STALL_TIMEOUT_MS);
                    if now.saturating_duration_since(since) < limit {
                        self.sleep_until_retry(face, true);
                    } else {
                        self.abandon(face);
                    }
                    return;
                }
                Ok(Attempt::Sent) => {
                    self.waiting_since.set(None);
                    ErrorCode::Success
                }
                Err(e) => {
                    if e.code() == ErrorCode::ConnectionAborted {
                        report("comch fast path: dropping the connection", &e);
                    }
                    e.code()
                }
            };
            self.waiting.borrow_mut().pop_front();
            self.done.borrow_mut().push_back((index, status));
        }
        self.sleep_until_retry(face, false);
    }

    /// The peer posted no receive for the stall time while sends waited: the connection is
    /// dropped (its owner sees it closed at its next progress) and every waiting send fails
    /// with `CONNECTION_ABORTED`.
    fn abandon(&self, face: &impl FastFace) {
        let e = err(
            ErrorCode::ConnectionAborted,
            format!(
                "the peer's consumer posted no receive for {COMCH_PEER_STALL_TIMEOUT_MS} ms \
                 (COMCH_PEER_STALL_TIMEOUT_MS) while producer {} had sends waiting: the \
                 connection is dropped and the sends fail",
                self.fast.id
            ),
        );
        report("comch fast path", &e);
        self.fast.abort();
        self.end_waiting(face, e.code());
    }

    /// Every waiting send ends with `status`; the retry timer stops.
    fn end_waiting(&self, face: &impl FastFace, status: ErrorCode) {
        self.waiting_since.set(None);
        let mut done = self.done.borrow_mut();
        done.extend(self.waiting.borrow_mut().drain(..).map(|i| (i, status)));
        drop(done);
        self.sleep_until_retry(face, false);
    }

    /// Starts (`true`) or ends the retry timer of sends waiting for a receive.
    fn sleep_until_retry(&self, face: &impl FastFace, waiting: bool) {
        if waiting {
            // Without a timer the sends are tried at the next progress only.
            let _ = self.retry.on(|fd| face.watch(fd));
        } else {
            self.retry.off(|fd| face.unwatch(fd));
        }
    }

    /// A progress pass: sends what can go, then reports the sends finished before the pass
    /// (what a completion submits and finishes at once waits for the next pass, so a program
    /// that resubmits in its callback cannot hold the progress call). Returns how many.
    pub fn poll(&self, face: &impl FastFace) -> usize {
        self.drive(face);
        let ready = self.done.borrow().len();
        for n in 0..ready {
            let Some((index, status)) = self.done.borrow_mut().pop_front() else {
                return n;
            };
            face.send_done(index, status);
        }
        ready
    }

    /// A stop: the waiting sends are flushed (reported at the next progress).
    pub fn flush(&self, face: &impl FastFace) {
        self.end_waiting(face, FLUSHED);
    }

    /// Whether a progress pass has something to do now: completions to report, or sends
    /// waiting with no timer to wake the engine for them.
    pub fn has_pending(&self) -> bool {
        !self.done.borrow().is_empty() || (!self.waiting.borrow().is_empty() && !self.retry.is_on())
    }
}
