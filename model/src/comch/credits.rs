//! Credits between the two sides of a MsgQ endpoint pair: receives the consumer side posted
//! (granted) and the producer side fills (spends).
//!
//! Both are monotonic counters split by writer: the granting side bumps its own cache line,
//! and the spending side keeps its own count plus a cached copy of the grants, re-reading the
//! granter's line only when that copy runs out. A credit is spent at most once and never
//! before it is granted, and a bounded grant never leaves more than `max` outstanding (the
//! loom models below).

use crate::sync::{AtomicBool, AtomicU32, AtomicU64, CachePadded, Ordering};

/// A spender's side of a grant counter: how much it spent, and what it last saw granted.
#[derive(Debug, Default)]
struct Spent {
    spent: AtomicU64,
    granted_seen: AtomicU64,
}

/// One grant counter and its spender's side, each on cache lines of its own.
#[derive(Debug, Default)]
pub(crate) struct Credits {
    granted: CachePadded<AtomicU64>,
    spent: CachePadded<Spent>,
}

impl Credits {
    /// Granting side: `n` more credits.
    #[inline]
    pub(crate) fn grant(&self, n: u64) {
        self.granted.fetch_add(n, Ordering::Release);
    }

    /// Granting side: `n` more credits unless that would leave more than `max` outstanding
    /// (granted and not spent). `used` counts credits known to be spent already (messages
    /// the granter took), a bound that needs no read of the spender's line; only if it is not
    /// enough does this count the spent credits themselves. Returns the credits outstanding on
    /// refusal.
    pub(crate) fn grant_bounded(&self, n: u64, max: u64, used: &AtomicU64) -> Result<(), u64> {
        let mut granted = self.granted.load(Ordering::Relaxed);
        loop {
            if (granted + n).saturating_sub(used.load(Ordering::Relaxed)) > max {
                let spent = self.spent.spent.load(Ordering::Acquire);
                let outstanding = granted.saturating_sub(spent);
                if outstanding + n > max {
                    return Err(outstanding);
                }
            }
            match self.granted.compare_exchange_weak(
                granted,
                granted + n,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                Err(now) => granted = now,
            }
        }
    }

    /// Spending side: spends one credit if there is one. Reads the granter's line only when
    /// the cached view is used up.
    #[inline]
    pub(crate) fn try_spend(&self) -> bool {
        let own = &self.spent;
        let mut spent = own.spent.load(Ordering::Relaxed);
        loop {
            if spent >= own.granted_seen.load(Ordering::Relaxed) {
                let fresh = self.granted.load(Ordering::Acquire);
                own.granted_seen.fetch_max(fresh, Ordering::Relaxed);
                if spent >= fresh {
                    return false;
                }
            }
            match own.spent.compare_exchange_weak(
                spent,
                spent + 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => spent = now,
            }
        }
    }

    /// Whether no credit is left to spend. Like [`try_spend`](Self::try_spend), it reads the
    /// granting side's counter (a cache line the other side writes) only when the credits
    /// already seen are spent: the common case costs no cross-core transfer.
    #[inline]
    pub(crate) fn exhausted(&self) -> bool {
        let own = &self.spent;
        let spent = own.spent.load(Ordering::Relaxed);
        if spent < own.granted_seen.load(Ordering::Relaxed) {
            return false;
        }
        let fresh = self.granted.load(Ordering::Acquire);
        own.granted_seen.fetch_max(fresh, Ordering::Relaxed);
        spent >= fresh
    }

    /// Credits spent since the counter was made: for statistics, read relaxed.
    pub(crate) fn spent(&self) -> u64 {
        self.spent.spent.load(Ordering::Relaxed)
    }

    /// Credits granted and not spent yet.
    pub(crate) fn available(&self) -> u64 {
        self.granted
            .load(Ordering::Acquire)
            .saturating_sub(self.spent.spent.load(Ordering::Acquire))
    }
}

/// How many of a queue's producers have sends waiting for credits, so that the granting side
/// reads one quiet cache line while nobody waits. Part of the wake-up handshake: a producer
/// sets its flag before its PE arms ([`crate::wake::Arm::request`]), the granter grants, runs
/// its barrier, then checks here before waking (the loom model below).
#[derive(Debug, Default)]
pub(crate) struct Waiting {
    count: CachePadded<AtomicU32>,
}

impl Waiting {
    /// Producer side: its sends start or stop waiting; `flag` is the producer's own.
    pub(crate) fn set(&self, flag: &AtomicBool, waiting: bool) {
        if flag.swap(waiting, Ordering::AcqRel) != waiting {
            if waiting {
                self.count.fetch_add(1, Ordering::AcqRel);
            } else {
                self.count.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// Granting side, after its barrier: whether any producer may be waiting (then it checks
    /// each producer's flag).
    #[inline]
    pub(crate) fn anyone(&self) -> bool {
        self.count.load(Ordering::Relaxed) != 0
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// Two spenders race each other for the one credit a granter grants meanwhile. At most one
    /// gets it, and if neither does it is still there. (Two credits and two tries each take
    /// five minutes to explore and find nothing more.)
    #[test]
    fn spends_never_exceed_grants() {
        crate::sync::model(3, || {
            let credits = Arc::new(Credits::default());
            let spenders: Vec<_> = (0..2)
                .map(|_| {
                    let credits = credits.clone();
                    thread::spawn(move || u64::from(credits.try_spend()))
                })
                .collect();
            let granter = {
                let credits = credits.clone();
                thread::spawn(move || credits.grant(1))
            };
            // Loom's DPOR misses a load racing a later store of another thread when the
            // loading thread runs first (tokio-rs/loom#166): let the others start.
            thread::yield_now();
            let spent: u64 = spenders.into_iter().map(|t| t.join().unwrap()).sum();
            granter.join().unwrap();
            assert!(spent <= 1, "{spent} credits spent of 1 granted");
            assert_eq!(credits.available(), 1 - spent, "a credit was lost");
            let mut flushed = 0;
            while credits.try_spend() {
                flushed += 1;
            }
            assert_eq!(spent + flushed, 1);
        });
    }

    /// A bounded granter (at most one outstanding) races a spender that delivers what it
    /// spends; the granter counts delivered messages it took as `used`. Outstanding credits
    /// never exceed the bound, and a grant refused is one that would have exceeded it.
    #[test]
    fn bounded_grants_never_exceed_the_queue() {
        crate::sync::model(3, || {
            let credits = Arc::new(Credits::default());
            let delivered = Arc::new(AtomicU64::new(0));
            let spender = {
                let (credits, delivered) = (credits.clone(), delivered.clone());
                thread::spawn(move || {
                    for _ in 0..2 {
                        if credits.try_spend() {
                            delivered.fetch_add(1, Ordering::Release);
                        }
                    }
                })
            };
            thread::yield_now();
            let used = AtomicU64::new(0);
            let mut granted = 0;
            for _ in 0..3 {
                // Take what was delivered, like the kernel polling its completion context.
                let taken = delivered.load(Ordering::Acquire);
                used.store(taken, Ordering::Relaxed);
                match credits.grant_bounded(1, 1, &used) {
                    Ok(()) => {
                        granted += 1;
                        let outstanding = granted - credits.spent.spent.load(Ordering::Acquire);
                        assert!(outstanding <= 1, "{outstanding} outstanding, bound 1");
                    }
                    Err(outstanding) => assert_eq!(outstanding, 1, "refused below the bound"),
                }
            }
            spender.join().unwrap();
            assert!(granted >= 1);
            assert_eq!(
                credits.available(),
                granted - delivered.load(Ordering::Acquire)
            );
        });
    }

    /// A producer with no credit marks itself waiting and its PE arms, checking for credits;
    /// meanwhile the DPA grants one and wakes waiting producers. Exactly one side fires: the
    /// producer's PE is never left asleep with a credit there, nor woken twice.
    #[test]
    fn a_credit_wakes_the_waiting_producer_exactly_once() {
        use crate::wake::{Arm, heavy_barrier, light_barrier};
        crate::sync::model(3, || {
            let credits = Arc::new(Credits::default());
            let waiting = Arc::new(Waiting::default());
            let flag = Arc::new(AtomicBool::new(false));
            let arm = Arc::new(Arm::new(false));
            let granter = {
                let (credits, waiting, flag, arm) =
                    (credits.clone(), waiting.clone(), flag.clone(), arm.clone());
                thread::spawn(move || {
                    credits.grant(1);
                    light_barrier();
                    waiting.anyone() && flag.load(Ordering::Relaxed) && arm.take_after_barrier()
                })
            };
            thread::yield_now();
            waiting.set(&flag, true);
            let producer_fired = arm.request(heavy_barrier, || credits.available() > 0);
            let granter_fired = granter.join().unwrap();
            assert!(
                producer_fired ^ granter_fired,
                "lost or doubled wake-up (producer {producer_fired}, granter {granter_fired})"
            );
        });
    }
}
