//! The deterministic mode's ready set and trace, without a lock: the host's progress asks for a
//! round on every call, a notification adds a thread from whichever host thread sends, and the
//! round picks among the ready threads with a seeded generator.
//!
//! Ready threads are bits of a bitmap (one per thread index), so adding one is a `fetch_or` and
//! the common "nothing ready" answer four loads. A pick takes the k-th set bit, k drawn from an
//! xorshift64* generator; the same seed and the same notifications give the same picks. The
//! trace is a ring of packed events written at a claimed position.

use super::activation::Ending;
use crate::sync::{AtomicU64, Ordering, plain};
use dpakit_abi::soft::TraceEvent;

const THREADS: usize = crate::limits::DPA_MAX_THREADS;
const WORDS: usize = THREADS.div_ceil(64);

/// Activations the trace keeps (the most recent ones): a long run's trace must not grow without
/// bound.
pub const TRACE_CAPACITY: usize = 1 << 12;

/// A packed trace event: the activation number above, the ending in bits 9..11, the thread
/// index plus one in the low 9 bits (0 marks a slot never written).
const THREAD_BITS: u32 = 9;
const ENDING_BITS: u32 = 2;
const _: () = assert!(THREADS < 1 << THREAD_BITS);

pub(crate) struct Deterministic {
    ready: [AtomicU64; WORDS],
    rng: AtomicU64,
    /// Events written so far; the trace holds the last [`TRACE_CAPACITY`]. A diagnostic: each
    /// slot is one atomic word, and nothing waits on them.
    written: plain::AtomicU64,
    trace: Box<[plain::AtomicU64]>,
}

impl Deterministic {
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            ready: std::array::from_fn(|_| AtomicU64::new(0)),
            // xorshift needs a non-zero state.
            rng: AtomicU64::new(seed ^ 0x9e37_79b9_7f4a_7c15 | 1),
            written: plain::AtomicU64::new(0),
            trace: (0..TRACE_CAPACITY)
                .map(|_| plain::AtomicU64::new(0))
                .collect(),
        }
    }

    /// Thread `index` is ready (the caller set its QUEUED bit, so it is not in the set yet).
    #[inline]
    pub(crate) fn add(&self, index: usize) {
        self.ready[index / 64].fetch_or(1 << (index % 64), Ordering::Release);
    }

    /// Takes every thread ready now, for a round that runs them all (threads their
    /// activations make ready wait for the next round); None if none is ready.
    #[inline]
    pub(crate) fn take_ready(&self) -> Option<ReadySet> {
        // Most progress calls find nothing: loads first, the swaps only when something is there.
        if self.ready.iter().all(|w| w.load(Ordering::Relaxed) == 0) {
            return None;
        }
        Some(ReadySet(std::array::from_fn(|i| {
            self.ready[i].swap(0, Ordering::AcqRel)
        })))
    }

    /// Takes one ready thread, chosen by the generator among those ready now; None if there
    /// is none.
    pub(crate) fn pick(&self) -> Option<usize> {
        loop {
            let mut now = ReadySet(std::array::from_fn(|i| {
                self.ready[i].load(Ordering::Acquire)
            }));
            let index = now.pick(self)?;
            let mask = 1u64 << (index % 64);
            // Another host thread running a round may have taken it meanwhile: pick again.
            if self.ready[index / 64].fetch_and(!mask, Ordering::AcqRel) & mask != 0 {
                return Some(index);
            }
        }
    }

    /// xorshift64*: tiny, seedable, good enough to pick among a handful of threads.
    fn next_random(&self) -> u64 {
        let mut x = self.rng.load(Ordering::Relaxed);
        loop {
            let mut next = x;
            next ^= next >> 12;
            next ^= next << 25;
            next ^= next >> 27;
            match self
                .rng
                .compare_exchange_weak(x, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return next.wrapping_mul(0x2545_f491_4f6c_dd1d),
                Err(now) => x = now,
            }
        }
    }

    /// Records an activation.
    #[inline]
    pub(crate) fn record(&self, event: TraceEvent) {
        let at = self.written.fetch_add(1, Ordering::Relaxed) as usize % TRACE_CAPACITY;
        let ending = match event.ending {
            Ending::Reschedule => 0,
            Ending::Return => 1,
            Ending::Finish => 2,
            Ending::Fault => 3,
        };
        let packed = (event.activation << (THREAD_BITS + ENDING_BITS))
            | (ending << THREAD_BITS)
            | (event.thread as u64 + 1);
        self.trace[at].store(packed, Ordering::Release);
    }

    /// The most recent activations, oldest first.
    pub(crate) fn trace(&self) -> Vec<TraceEvent> {
        let written = self.written.load(Ordering::Acquire) as usize;
        let first = written.saturating_sub(TRACE_CAPACITY);
        (first..written)
            .map(|i| self.trace[i % TRACE_CAPACITY].load(Ordering::Acquire))
            .filter(|&packed| packed & ((1 << THREAD_BITS) - 1) != 0)
            .map(|packed| TraceEvent {
                thread: (packed & ((1 << THREAD_BITS) - 1)) as usize - 1,
                activation: packed >> (THREAD_BITS + ENDING_BITS),
                ending: match (packed >> THREAD_BITS) & 0b11 {
                    0 => Ending::Reschedule,
                    1 => Ending::Return,
                    2 => Ending::Finish,
                    _ => Ending::Fault,
                },
            })
            .collect()
    }
}

/// Ready threads taken for a round, a bit per thread index.
pub(crate) struct ReadySet([u64; WORDS]);

impl ReadySet {
    /// Removes and returns one thread of the set, chosen by `det`'s generator.
    #[inline]
    pub(crate) fn pick(&mut self, det: &Deterministic) -> Option<usize> {
        let mut nonzero = self.0.iter().enumerate().filter(|(_, w)| **w != 0);
        let (first, &w) = nonzero.next()?;
        // The common case, one thread ready: no count and no draw.
        let (word, bit) = if w & (w - 1) == 0 && nonzero.next().is_none() {
            (first, w.trailing_zeros())
        } else {
            let total: u32 = self.0.iter().map(|w| w.count_ones()).sum();
            let mut k = (det.next_random() % u64::from(total)) as u32;
            self.0
                .iter()
                .enumerate()
                .find_map(|(i, &w)| {
                    let n = w.count_ones();
                    if k < n {
                        Some((i, nth_set_bit(w, k)))
                    } else {
                        k -= n;
                        None
                    }
                })
                .expect("k is below the number of set bits")
        };
        self.0[word] &= !(1u64 << bit);
        Some(word * 64 + bit as usize)
    }
}

/// The position of the `k`-th (from 0) set bit of `w`, which has more than `k`.
fn nth_set_bit(mut w: u64, k: u32) -> u32 {
    for _ in 0..k {
        w &= w - 1;
    }
    w.trailing_zeros()
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// A host thread readies two DPA threads while another runs a round and then steps: each
    /// ready thread runs exactly once, whichever way the bits race.
    #[test]
    fn every_ready_thread_is_taken_exactly_once() {
        crate::sync::model(3, || {
            let d = Arc::new(Deterministic::new(11));
            let notifier = {
                let d = d.clone();
                thread::spawn(move || {
                    d.add(1);
                    d.add(70);
                })
            };
            let mut ran = Vec::new();
            if let Some(mut round) = d.take_ready() {
                ran.extend(std::iter::from_fn(|| round.pick(&d)));
            }
            ran.extend(d.pick());
            notifier.join().unwrap();
            ran.extend(std::iter::from_fn(|| d.pick()));
            ran.sort_unstable();
            assert_eq!(ran, [1, 70]);
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn picks_each_ready_thread_once_and_the_same_order_for_a_seed() {
        let order = |seed| {
            let d = Deterministic::new(seed);
            for i in [3, 64, 200, 255, 0] {
                d.add(i);
            }
            let picks: Vec<usize> = std::iter::from_fn(|| d.pick()).collect();
            assert!(d.take_ready().is_none());
            picks
        };
        let a = order(7);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 3, 64, 200, 255]);
        assert_eq!(a, order(7), "the same seed picks in the same order");
    }

    #[test]
    fn a_round_takes_the_threads_ready_now_and_leaves_later_ones() {
        let d = Deterministic::new(3);
        d.add(5);
        d.add(130);
        let mut round = d.take_ready().unwrap();
        d.add(9); // made ready by an activation of the round
        let mut ran = vec![round.pick(&d).unwrap(), round.pick(&d).unwrap()];
        assert!(round.pick(&d).is_none());
        ran.sort_unstable();
        assert_eq!(ran, [5, 130]);
        assert_eq!(d.take_ready().unwrap().pick(&d), Some(9));
    }

    #[test]
    fn the_trace_keeps_the_most_recent_events_in_order() {
        let d = Deterministic::new(1);
        let event = |i: u64| TraceEvent {
            thread: (i % 256) as usize,
            activation: i + 1,
            ending: [
                Ending::Reschedule,
                Ending::Return,
                Ending::Finish,
                Ending::Fault,
            ][(i % 4) as usize],
        };
        for i in 0..(TRACE_CAPACITY as u64 + 10) {
            d.record(event(i));
        }
        let trace = d.trace();
        assert_eq!(trace.len(), TRACE_CAPACITY);
        assert_eq!(trace[0], event(10));
        assert_eq!(trace[TRACE_CAPACITY - 1], event(TRACE_CAPACITY as u64 + 9));
    }
}
