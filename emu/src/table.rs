//! Fixed-capacity tables of shared objects, read lock-free on the datapath.
//!
//! Registration (control path) takes a mutex; lookups are one atomic load. Registered objects
//! stay alive until the table is dropped, so a pointer read from a slot never dangles, and
//! removal only clears the slot: a later lookup fails cleanly instead of touching freed memory.

use crate::sync::{AtomicPtr, Ordering};
use std::fmt;
use std::sync::{Arc, Mutex};

/// Slots `0..capacity` of `Arc<T>`.
pub(crate) struct Table<T> {
    slots: Box<[AtomicPtr<T>]>,
    owned: Mutex<Vec<Arc<T>>>,
}

impl<T> fmt::Debug for Table<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let used = self
            .slots
            .iter()
            .filter(|s| !s.load(Ordering::Relaxed).is_null())
            .count();
        f.debug_struct("Table")
            .field("capacity", &self.slots.len())
            .field("used", &used)
            .finish()
    }
}

impl<T: Send + Sync> Table<T> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            slots: (0..capacity)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            owned: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Puts `obj` in the first free slot; `None` when the table is full.
    pub(crate) fn insert(&self, obj: Arc<T>) -> Option<usize> {
        self.insert_with(|_| obj).map(|(index, _)| index)
    }

    /// Builds the object from the index of the first free slot and puts it there.
    pub(crate) fn insert_with(
        &self,
        make: impl FnOnce(usize) -> Arc<T>,
    ) -> Option<(usize, Arc<T>)> {
        let mut owned = self.owned.lock().unwrap_or_else(|p| p.into_inner());
        let index = self
            .slots
            .iter()
            .position(|s| s.load(Ordering::Relaxed).is_null())?;
        let obj = make(index);
        self.slots[index].store(Arc::as_ptr(&obj).cast_mut(), Ordering::Release);
        owned.push(obj.clone());
        Some((index, obj))
    }

    /// Builds the object for slot `index` and puts it there; `None` when the slot is taken or out
    /// of range.
    pub(crate) fn insert_at(
        &self,
        index: usize,
        make: impl FnOnce(usize) -> Arc<T>,
    ) -> Option<Arc<T>> {
        let mut owned = self.owned.lock().unwrap_or_else(|p| p.into_inner());
        let slot = self.slots.get(index)?;
        if !slot.load(Ordering::Relaxed).is_null() {
            return None;
        }
        let obj = make(index);
        slot.store(Arc::as_ptr(&obj).cast_mut(), Ordering::Release);
        owned.push(obj.clone());
        Some(obj)
    }

    /// Empties slot `index` (the object itself lives on until the table drops).
    pub(crate) fn remove(&self, index: usize) {
        if let Some(slot) = self.slots.get(index) {
            slot.store(std::ptr::null_mut(), Ordering::Release);
        }
    }

    /// The object in slot `index`, if any.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        let ptr = self.slots.get(index)?.load(Ordering::Acquire);
        // SAFETY: non-null pointers in slots come from Arcs held in `owned`, which are only
        // dropped with the table itself, and `&self` keeps the table alive.
        (!ptr.is_null()).then(|| unsafe { &*ptr })
    }

    /// Sums `f` over the objects in use.
    pub(crate) fn sum(&self, f: impl Fn(&T) -> u64) -> u64 {
        (0..self.slots.len())
            .filter_map(|i| self.get(i))
            .map(f)
            .sum()
    }

    /// How many slots are in use.
    pub(crate) fn len(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| !s.load(Ordering::Acquire).is_null())
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_get_remove() {
        let t = Table::new(2);
        let a = t.insert(Arc::new(1u32)).unwrap();
        let b = t.insert(Arc::new(2u32)).unwrap();
        assert_eq!(t.insert(Arc::new(3u32)), None, "full");
        assert_eq!(t.get(a), Some(&1));
        t.remove(a);
        assert_eq!(t.get(a), None);
        assert_eq!(t.get(b), Some(&2));
        assert_eq!(t.get(7), None);
        assert_eq!(t.len(), 1);
        assert_eq!(t.insert(Arc::new(4u32)), Some(a), "slots are reused");
        assert!(t.insert_at(a, |_| Arc::new(5)).is_none(), "taken");
        t.remove(b);
        assert_eq!(t.insert_at(b, |i| Arc::new(i as u32)).as_deref(), Some(&1));
        assert!(t.insert_at(9, |_| Arc::new(6)).is_none(), "out of range");
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::UnsafeCell;
    use loom::thread;

    /// An object with plain (non-atomic) contents, written before it is published.
    struct Obj(UnsafeCell<u32>);

    // SAFETY: the contents are written once, before publication, and only read afterwards.
    unsafe impl Sync for Obj {}
    // SAFETY: as above.
    unsafe impl Send for Obj {}

    /// A reader looks an object up while another thread inserts it: it finds nothing or the
    /// object fully built (loom reports a read of contents the publication does not order).
    #[test]
    fn a_lookup_sees_nothing_or_the_whole_object() {
        loom::model(|| {
            let table = loom::sync::Arc::new(Table::<Obj>::new(1));
            let writer = {
                let table = table.clone();
                thread::spawn(move || {
                    table.insert_with(|_| {
                        let obj = Arc::new(Obj(UnsafeCell::new(0)));
                        // SAFETY: not shared yet.
                        obj.0.with_mut(|v| unsafe { *v = 7 });
                        obj
                    });
                })
            };
            // Loom's DPOR misses a load racing a later store of another thread when the
            // loading thread runs first (tokio-rs/loom#166): let the writer start.
            thread::yield_now();
            if let Some(obj) = table.get(0) {
                // SAFETY: published objects are only read.
                assert_eq!(obj.0.with(|v| unsafe { *v }), 7);
            }
            writer.join().unwrap();
            assert!(table.get(0).is_some());
        });
    }
}
