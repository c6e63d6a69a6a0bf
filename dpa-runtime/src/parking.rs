//! How a sleep-mode DPA worker parks when its run queue is empty, and how a notifier that
//! queued a thread knows to unpark it: the worker announces it sleeps, then rechecks its queue;
//! the notifier queues, then checks the announcement. With a full fence on each side one of
//! them sees the other's write, so a queued thread never waits for the park timeout (the loom
//! model below parks without one).

use crate::sync::{AtomicBool, Ordering, fence};

/// A worker's "I am about to sleep" flag.
#[derive(Debug, Default)]
pub(crate) struct Parking {
    sleeping: AtomicBool,
}

impl Parking {
    /// Notifier side, after queueing work: whether the worker may be asleep (the caller
    /// unparks it).
    #[inline]
    pub(crate) fn wake_needed(&self) -> bool {
        fence(Ordering::SeqCst);
        self.sleeping.load(Ordering::Relaxed)
    }

    /// Worker side, with nothing to do: announces it sleeps, and `park`s unless `has_work`
    /// (checked after the announcement) finds work after all.
    #[inline]
    pub(crate) fn sleep(&self, has_work: impl FnOnce() -> bool, park: impl FnOnce()) {
        self.sleeping.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if !has_work() {
            park();
        }
        self.sleeping.store(false, Ordering::Relaxed);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// A worker with an empty queue sleeps with no timeout; a notifier queues one item and
    /// unparks it if needed. A lost wake-up leaves the worker parked for ever, which loom reports as a
    /// deadlock.
    #[test]
    fn a_queued_thread_wakes_the_parked_worker() {
        loom::model(|| {
            let parking = Arc::new(Parking::default());
            let queued = Arc::new(AtomicBool::new(false));
            let worker = {
                let (parking, queued) = (parking.clone(), queued.clone());
                // Sleeps first, then checks: a spawned thread that starts with a load is not
                // explored (tokio-rs/loom#392), and a swap racing a store breaks loom's
                // modification order (tokio-rs/loom#282), so the queue is a flag read with loads.
                thread::spawn(move || {
                    loop {
                        parking.sleep(|| queued.load(Ordering::Relaxed), thread::park);
                        if queued.load(Ordering::Acquire) {
                            break;
                        }
                    }
                })
            };
            // Loom's DPOR misses a load racing a later store of another thread when the
            // loading thread runs first (tokio-rs/loom#166): let the worker start.
            thread::yield_now();
            queued.store(true, Ordering::Release);
            if parking.wake_needed() {
                worker.thread().unpark();
            }
            worker.join().unwrap();
        });
    }
}
