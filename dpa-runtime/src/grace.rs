//! Grace periods: when an object removed from a DPA's handle tables may be freed.
//!
//! The datapath reads table entries without reference counts: a device function or a worker's
//! scan turns a handle into a plain reference for the length of one call or one scan pass. So
//! an entry removed from its table is freed only once every reader that might still hold it has
//! passed a quiescent point (quiescent-state-based reclamation):
//!
//! - each worker publishes a word — a count of quiescent points it passed, and whether it is
//!   online (may hold references); it passes a quiescent point between activations and scan
//!   passes, and goes offline while it sleeps;
//! - host threads that run activations (RPCs, deterministic steps) or read tables count
//!   themselves in and out of a shared counter.
//!
//! Removal clears the slot first, then takes a snapshot of the worker words; the entry may be
//! freed once every worker that was online in the snapshot has moved on, and the host counter
//! has been seen at zero after the removal. Every access to a word or the counter is a
//! read-modify-write: RMWs of one location are totally ordered, so either the remover's
//! snapshot sees a reader's step, or the reader's step reads the remover's and with it sees the
//! cleared slot. (Plain stores and SeqCst fences would rely on the fence rules, which the loom
//! models could not check.) A reader pays one uncontended RMW per quiescent point, on a cache
//! line of its own; nothing on the datapath waits.

use crate::sync::{AtomicU64, AtomicUsize, CachePadded, Ordering};

/// Where every reader of one DPA's tables stands.
#[derive(Debug)]
pub struct Grace {
    /// Per worker: `passes << 1 | online`.
    workers: Box<[CachePadded<AtomicU64>]>,
    /// Host threads inside a read-side section.
    host: AtomicUsize,
}

/// What a removal saw: the workers' words right after the slot was cleared.
#[derive(Debug)]
pub struct Snapshot {
    words: Box<[u64]>,
    /// The host counter was seen at zero since the removal.
    host_clear: bool,
}

impl Grace {
    pub fn new(workers: usize) -> Self {
        Self {
            workers: (0..workers)
                .map(|_| CachePadded(AtomicU64::new(0)))
                .collect(),
            host: AtomicUsize::new(0),
        }
    }

    /// Worker `w` (offline) may hold references from now on. Call before it reads any table.
    pub fn online(&self, w: usize) {
        // Acquire: a removal this RMW comes after is seen, slot cleared.
        self.workers[w].fetch_add(1, Ordering::AcqRel);
    }

    /// Worker `w` (online) holds no reference from before this point.
    #[inline]
    pub fn quiescent(&self, w: usize) {
        // Release: every read before it happens before a remover that sees the new count.
        self.workers[w].fetch_add(2, Ordering::AcqRel);
    }

    /// Worker `w` (online) holds no reference and reads nothing until [`online`](Self::online).
    pub fn offline(&self, w: usize) {
        // +1 carries the online bit into the count: one pass more, offline.
        self.workers[w].fetch_add(1, Ordering::AcqRel);
    }

    /// Counts a host thread in for the guard's lifetime.
    pub fn host(&self) -> HostGuard<'_> {
        self.host.fetch_add(1, Ordering::AcqRel);
        HostGuard(self)
    }

    /// Call right after clearing the slot of an entry that is to be freed.
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = Snapshot {
            words: self
                .workers
                .iter()
                .map(|w| w.fetch_add(0, Ordering::AcqRel))
                .collect(),
            host_clear: false,
        };
        self.observe_host(&mut snapshot);
        snapshot
    }

    fn observe_host(&self, snapshot: &mut Snapshot) {
        if !snapshot.host_clear && self.host.fetch_add(0, Ordering::AcqRel) == 0 {
            snapshot.host_clear = true;
        }
    }

    /// Whether no reader can still hold the entry `snapshot` was taken for.
    pub fn elapsed(&self, snapshot: &mut Snapshot) -> bool {
        self.observe_host(snapshot);
        snapshot.host_clear
            && snapshot
                .words
                .iter()
                .zip(self.workers.iter())
                .all(|(&then, now)| then & 1 == 0 || now.load(Ordering::Acquire) != then)
    }
}

/// A host thread inside a read-side section (see [`Grace::host`]).
#[derive(Debug)]
pub struct HostGuard<'a>(&'a Grace);

impl Drop for HostGuard<'_> {
    fn drop(&mut self) {
        // Release: the section's reads happen before a remover sees the counter drop.
        self.0.host.fetch_sub(1, Ordering::Release);
    }
}

#[cfg(all(test, loom))]
mod loom {
    //! A reader that finds an entry through its slot never reads it after the remover freed
    //! it: the "free" is a write to the entry, which loom reports as a data race unless every
    //! read happens before it.
    use super::*;
    use crate::sync::{AtomicBool, UnsafeCell};
    use ::loom::sync::Arc;
    use ::loom::thread;

    struct World {
        grace: Grace,
        /// The slot: whether the entry is in the table.
        in_table: AtomicBool,
        entry: UnsafeCell<u64>,
    }

    // SAFETY: `entry` is only accessed as the protocol under test allows; loom checks it.
    unsafe impl Sync for World {}

    fn world() -> Arc<World> {
        Arc::new(World {
            grace: Grace::new(1),
            in_table: AtomicBool::new(true),
            entry: UnsafeCell::new(7),
        })
    }

    fn read_if_present(w: &World) {
        if w.in_table.load(Ordering::Acquire) {
            // SAFETY: what the model checks.
            let v = w.entry.with(|p| unsafe { *p });
            assert_eq!(v, 7, "read a freed entry");
        }
    }

    /// Removes the entry and frees it once the grace period allows (a few tries, as later
    /// table operations would).
    fn remove(w: &World) {
        w.in_table.store(false, Ordering::Release);
        let mut snapshot = w.grace.snapshot();
        for _ in 0..2 {
            if w.grace.elapsed(&mut snapshot) {
                // SAFETY: what the model checks.
                w.entry.with_mut(|p| unsafe { *p = 0 });
                return;
            }
            thread::yield_now();
        }
    }

    #[test]
    fn a_worker_never_reads_a_freed_entry() {
        ::loom::model(|| {
            let w = world();
            let r = w.clone();
            let worker = thread::spawn(move || {
                r.grace.online(0);
                read_if_present(&r);
                r.grace.quiescent(0);
                read_if_present(&r);
                r.grace.offline(0);
                r.grace.online(0);
                read_if_present(&r);
                r.grace.offline(0);
            });
            remove(&w);
            worker.join().unwrap();
        });
    }

    #[test]
    fn a_host_reader_never_reads_a_freed_entry() {
        ::loom::model(|| {
            let w = world();
            let r = w.clone();
            let host = thread::spawn(move || {
                let _guard = r.grace.host();
                read_if_present(&r);
            });
            remove(&w);
            host.join().unwrap();
        });
    }
}
