//! A DPA thread's state word ([`flags`]) and the transitions notifiers, the host and the
//! worker make on it, each one atomic: a notification is never lost, a thread is never queued
//! twice nor activated twice at once, and no activation starts after `stop` returns (the loom
//! models below).

use crate::sync::{AtomicU32, Ordering};
use flags::*;

/// The bits of a thread's state word.
pub(crate) mod flags {
    /// `doca_dpa_thread_run` was called: notifications trigger activations.
    pub const RUN: u32 = 1 << 0;
    /// In a worker's run queue.
    pub const QUEUED: u32 = 1 << 1;
    /// An activation is executing.
    pub const ACTIVE: u32 = 1 << 2;
    /// Notified while queued, active or not yet running: run (again) afterwards.
    pub const PENDING: u32 = 1 << 3;
    /// `thread_finish` was called or the thread was stopped.
    pub const FINISHED: u32 = 1 << 4;
    /// The thread's kernel faulted (panic or device-side misuse).
    pub const FAULTED: u32 = 1 << 5;
}

/// The state word of one DPA thread.
#[derive(Debug)]
pub(crate) struct ThreadState(AtomicU32);

impl ThreadState {
    pub(crate) fn new() -> Self {
        Self(AtomicU32::new(0))
    }

    /// The flags now.
    #[inline]
    pub(crate) fn get(&self) -> u32 {
        self.0.load(Ordering::Acquire)
    }

    /// Busy-poll scan, by the thread's worker: `None` while the thread cannot be triggered
    /// (not run, finished, faulted or active), else whether a notification was pending, which
    /// it consumes.
    #[inline]
    pub(crate) fn take_pending(&self) -> Option<bool> {
        let s = self.0.load(Ordering::Acquire);
        if s & RUN == 0 || s & (FINISHED | FAULTED | ACTIVE) != 0 {
            return None;
        }
        if s & PENDING != 0 {
            self.0.fetch_and(!PENDING, Ordering::AcqRel);
            return Some(true);
        }
        Some(false)
    }

    /// A notification in busy-poll mode: the worker's scan sees the flag.
    #[inline]
    pub(crate) fn notify_scanned(&self) {
        if self.0.load(Ordering::Acquire) & (FINISHED | FAULTED) == 0 {
            self.0.fetch_or(PENDING, Ordering::AcqRel);
        }
    }

    /// A notification in queued mode. True when it set QUEUED: the caller puts the thread on its
    /// worker's run queue. Otherwise the thread is queued or active already (it runs again
    /// after), not running yet (it runs once `run` is called) or ended.
    #[inline]
    pub(crate) fn notify_queued(&self) -> bool {
        let mut s = self.0.load(Ordering::Acquire);
        loop {
            if s & (FINISHED | FAULTED) != 0 {
                return false;
            }
            let next = if s & RUN == 0 || s & (QUEUED | ACTIVE) != 0 {
                s | PENDING
            } else {
                s | QUEUED
            };
            if next == s {
                return false;
            }
            match self
                .0
                .compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return next & QUEUED != 0 && s & QUEUED == 0,
                Err(actual) => s = actual,
            }
        }
    }

    /// `doca_dpa_thread_run`: sets RUN; returns the flags before.
    pub(crate) fn set_run(&self) -> u32 {
        self.0.fetch_or(RUN, Ordering::AcqRel)
    }

    /// Drops a pending notification (the caller notifies again itself).
    pub(crate) fn clear_pending(&self) {
        self.0.fetch_and(!PENDING, Ordering::AcqRel);
    }

    /// `stop`: no further activations (one that is active ends first: see
    /// [`is_active`](Self::is_active)).
    pub(crate) fn finish(&self) {
        self.0.fetch_or(FINISHED, Ordering::AcqRel);
    }

    /// For freeing a stopped thread's resources: takes ACTIVE if the thread is finished and no
    /// activation runs, so none can start ([`begin_activation`](Self::begin_activation) sees
    /// FINISHED first); false otherwise. Give it back with [`release`](Self::release).
    pub(crate) fn claim_finished(&self) -> bool {
        let s = self.0.load(Ordering::Acquire);
        s & FINISHED != 0
            && s & ACTIVE == 0
            && self
                .0
                .compare_exchange(s, s | ACTIVE, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    }

    /// Ends a [`claim_finished`](Self::claim_finished).
    pub(crate) fn release(&self) {
        self.0.fetch_and(!ACTIVE, Ordering::AcqRel);
    }

    /// Whether an activation is executing.
    pub(crate) fn is_active(&self) -> bool {
        self.0.load(Ordering::Acquire) & ACTIVE != 0
    }

    /// The worker starts an activation: takes ACTIVE and consumes QUEUED and PENDING. False (and
    /// QUEUED dropped) when the thread finished or faulted.
    #[inline]
    pub(crate) fn begin_activation(&self) -> bool {
        let mut s = self.0.load(Ordering::Acquire);
        loop {
            if s & (FINISHED | FAULTED) != 0 {
                self.0.fetch_and(!QUEUED, Ordering::AcqRel);
                return false;
            }
            let next = (s | ACTIVE) & !(QUEUED | PENDING);
            match self
                .0
                .compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(actual) => s = actual,
            }
        }
    }

    /// The activation ended, adding `end` (FINISHED, FAULTED or 0). With a run queue
    /// (`queued`: sleep and deterministic modes), true when a notification arrived meanwhile and
    /// the thread is queued again: the caller puts it on the run queue. In busy-poll mode such a
    /// notification stays PENDING, for the worker's scan: nobody reads a busy-poll run queue.
    #[inline]
    pub(crate) fn end_activation(&self, end: u32, queued: bool) -> bool {
        let mut s = self.0.load(Ordering::Acquire);
        loop {
            let mut next = (s & !ACTIVE) | end;
            let requeue = queued
                && next & PENDING != 0
                && next & RUN != 0
                && next & (FINISHED | FAULTED) == 0;
            if requeue {
                next = (next & !PENDING) | QUEUED;
            }
            match self
                .0
                .compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return requeue,
                Err(actual) => s = actual,
            }
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::UnsafeCell;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicUsize;
    use loom::thread;

    /// A thread's state, its worker's run queue (a count, which must stay 0 or 1) and what its
    /// activations saw: `seen` is touched only under ACTIVE, so loom reports two overlapping
    /// activations as a data race.
    struct Dpa {
        state: ThreadState,
        queued: AtomicUsize,
        /// Notifications sent (relaxed: an activation sees them only through the state word).
        sent: AtomicUsize,
        /// Notifications the last activation saw; written only by an activation.
        seen: UnsafeCell<usize>,
        /// Set when `stop` returned; an activation reads it, so one that is not over by then
        /// is a data race in loom's eyes, and one that starts later fails the assertion.
        stopped: UnsafeCell<bool>,
    }

    impl Dpa {
        fn new(running: bool) -> Arc<Self> {
            let dpa = Arc::new(Self {
                state: ThreadState::new(),
                queued: AtomicUsize::new(0),
                sent: AtomicUsize::new(0),
                seen: UnsafeCell::new(0),
                stopped: UnsafeCell::new(false),
            });
            if running {
                dpa.state.set_run();
            }
            dpa
        }

        fn enqueue(&self) {
            let before = self.queued.fetch_add(1, Ordering::Release);
            assert_eq!(before, 0, "a thread was queued twice");
        }

        /// Queued mode: a completion or `thread_notify`.
        fn notify(&self) {
            self.sent.fetch_add(1, Ordering::Relaxed);
            if self.state.notify_queued() {
                self.enqueue();
            }
        }

        /// `doca_dpa_thread_run`, as `DpaThread::run` does it.
        fn run(&self) {
            let prev = self.state.set_run();
            if prev & PENDING != 0 {
                self.state.clear_pending();
                if self.state.notify_queued() {
                    self.enqueue();
                }
            }
        }

        /// The kernel runs: it sees every notification sent before it began.
        fn activate(&self) {
            // SAFETY: written once `stop` returned, which no activation may overlap (checked).
            let stopped = self.stopped.with(|s| unsafe { *s });
            assert!(!stopped, "an activation started after stop returned");
            let sent = self.sent.load(Ordering::Relaxed);
            // SAFETY: only an activation touches `seen`, and the state word lets one run at a time
            // (loom checks that claim).
            self.seen.with_mut(|seen| unsafe { *seen = sent });
        }

        /// One step of the sleeping worker: pops the queue and runs the activation.
        fn work_once(&self) -> bool {
            if self
                .queued
                .compare_exchange(1, 0, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                return false;
            }
            if self.state.begin_activation() {
                self.activate();
                if self.state.end_activation(0, true) {
                    self.enqueue();
                }
            }
            true
        }

        fn seen(&self) -> usize {
            // SAFETY: called after every activation ended (threads joined).
            self.seen.with(|seen| unsafe { *seen })
        }
    }

    /// Two notifiers race the worker (which runs one activation) and each other; afterwards
    /// the worker drains its queue. The thread was never queued twice nor active twice, and
    /// the last activation saw both notifications.
    #[test]
    fn notifications_race_an_activation() {
        crate::sync::model(3, || {
            let dpa = Dpa::new(true);
            let notifiers: Vec<_> = (0..2)
                .map(|_| {
                    let dpa = dpa.clone();
                    thread::spawn(move || dpa.notify())
                })
                .collect();
            let worker = {
                let dpa = dpa.clone();
                thread::spawn(move || {
                    dpa.work_once();
                })
            };
            // Loom's DPOR misses a load racing a later store of another thread when the
            // loading thread runs first (tokio-rs/loom#166): let the others start.
            thread::yield_now();
            for t in notifiers {
                t.join().unwrap();
            }
            worker.join().unwrap();
            while dpa.work_once() {}
            assert_eq!(dpa.seen(), 2, "a notification was lost");
            assert_eq!(dpa.state.get() & (QUEUED | PENDING | ACTIVE), 0);
        });
    }

    /// A notification that arrives before `doca_dpa_thread_run` triggers the thread once it
    /// runs, whichever comes first.
    #[test]
    fn a_notification_before_run_is_kept() {
        crate::sync::model(4, || {
            let dpa = Dpa::new(false);
            let notifier = {
                let dpa = dpa.clone();
                thread::spawn(move || dpa.notify())
            };
            let worker = {
                let dpa = dpa.clone();
                thread::spawn(move || {
                    dpa.work_once();
                })
            };
            thread::yield_now();
            dpa.run();
            notifier.join().unwrap();
            worker.join().unwrap();
            while dpa.work_once() {}
            assert_eq!(dpa.seen(), 1, "the early notification was lost");
            assert_eq!(dpa.state.get() & (QUEUED | PENDING | ACTIVE), 0);
        });
    }

    /// `stop` (FINISHED, then waiting for ACTIVE to clear) races a notification and the
    /// worker: once it returns, no activation starts.
    #[test]
    fn no_activation_after_stop() {
        crate::sync::model(3, || {
            let dpa = Dpa::new(true);
            let notifier = {
                let dpa = dpa.clone();
                thread::spawn(move || dpa.notify())
            };
            let worker = {
                let dpa = dpa.clone();
                thread::spawn(move || {
                    dpa.work_once();
                })
            };
            thread::yield_now();
            dpa.state.finish();
            while dpa.state.is_active() {
                thread::yield_now();
            }
            // SAFETY: the model's claim under test: no activation runs any more.
            dpa.stopped.with_mut(|s| unsafe { *s = true });
            notifier.join().unwrap();
            worker.join().unwrap();
            while dpa.work_once() {}
        });
    }

    /// Busy-poll mode: a notifier sets PENDING twice while the worker scans and runs
    /// activations. The last activation saw both notifications (one that arrived during an
    /// activation used to be moved to a run queue no busy-poll worker reads, and lost).
    #[test]
    fn busy_poll_notification_is_not_lost() {
        crate::sync::model(3, || {
            let dpa = Dpa::new(true);
            let scan = |dpa: &Dpa| {
                if dpa.state.take_pending() == Some(true) && dpa.state.begin_activation() {
                    dpa.activate();
                    if dpa.state.end_activation(0, false) {
                        dpa.enqueue();
                    }
                    return true;
                }
                false
            };
            let notifier = {
                let dpa = dpa.clone();
                thread::spawn(move || {
                    for _ in 0..2 {
                        dpa.sent.fetch_add(1, Ordering::Relaxed);
                        dpa.state.notify_scanned();
                    }
                })
            };
            thread::yield_now();
            scan(&dpa);
            notifier.join().unwrap();
            while scan(&dpa) {}
            assert_eq!(dpa.seen(), 2, "a notification was lost");
            assert_eq!(dpa.state.get() & (QUEUED | PENDING | ACTIVE), 0);
        });
    }
}
