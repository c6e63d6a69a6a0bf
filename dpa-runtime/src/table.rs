//! Fixed-capacity tables of shared objects, read lock-free on the datapath.
//!
//! Registration (control path) takes a mutex; lookups are one atomic load. Removal clears the
//! slot, so a later lookup fails cleanly instead of touching freed memory; the object itself
//! lives on until no reader can hold it: until the table drops ([`Table::remove`]), or until a
//! grace period has passed ([`Table::retire`], for tables whose readers report quiescent
//! points, see [`Grace`]).

use crate::grace::{Grace, Snapshot};
use crate::sync::{AtomicPtr, AtomicU32, Ordering};
use std::fmt;
use std::sync::{Arc, Mutex};

/// Slots `0..capacity` of `Arc<T>`.
pub struct Table<T> {
    slots: Box<[AtomicPtr<T>]>,
    /// Times each slot was emptied: the generation part of the ids it hands out.
    generations: Box<[AtomicU32]>,
    owned: Mutex<Owned<T>>,
}

/// The references that keep table objects alive.
struct Owned<T> {
    /// The occupant of each slot.
    by_slot: Vec<Option<Arc<T>>>,
    /// Removed with [`Table::remove`]: kept until the table drops.
    kept: Vec<Arc<T>>,
    /// Removed with [`Table::retire`]: freed once their grace period has passed.
    retired: Vec<(Arc<T>, Snapshot)>,
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
    pub fn new(capacity: usize) -> Self {
        Self {
            slots: (0..capacity)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            generations: (0..capacity).map(|_| AtomicU32::new(0)).collect(),
            owned: Mutex::new(Owned {
                by_slot: (0..capacity).map(|_| None).collect(),
                kept: Vec::new(),
                retired: Vec::new(),
            }),
        }
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Puts `obj` in the first free slot; `None` when the table is full.
    pub fn insert(&self, obj: Arc<T>) -> Option<usize> {
        self.insert_with(|_| obj).map(|(index, _)| index)
    }

    /// Builds the object from the index of the first free slot and puts it there.
    pub fn insert_with(&self, make: impl FnOnce(usize) -> Arc<T>) -> Option<(usize, Arc<T>)> {
        let mut owned = self.owned.lock().unwrap_or_else(|p| p.into_inner());
        let index = self
            .slots
            .iter()
            .position(|s| s.load(Ordering::Relaxed).is_null())?;
        let obj = make(index);
        self.slots[index].store(Arc::as_ptr(&obj).cast_mut(), Ordering::Release);
        owned.by_slot[index] = Some(obj.clone());
        Some((index, obj))
    }

    /// Builds the object for slot `index` and puts it there; `None` when the slot is taken or out
    /// of range.
    pub fn insert_at(&self, index: usize, make: impl FnOnce(usize) -> Arc<T>) -> Option<Arc<T>> {
        let mut owned = self.owned.lock().unwrap_or_else(|p| p.into_inner());
        let slot = self.slots.get(index)?;
        if !slot.load(Ordering::Relaxed).is_null() {
            return None;
        }
        let obj = make(index);
        slot.store(Arc::as_ptr(&obj).cast_mut(), Ordering::Release);
        owned.by_slot[index] = Some(obj.clone());
        Some(obj)
    }

    /// Empties slot `index`; the object itself lives on until the table drops.
    pub fn remove(&self, index: usize) {
        let mut owned = self.owned.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(obj) = self.clear(&mut owned, index) {
            owned.kept.push(obj);
        }
    }

    /// Empties slot `index`; the object is freed once every reader `grace` tracks has passed a
    /// quiescent point (checked now and at every later `retire`).
    pub fn retire(&self, index: usize, grace: &Grace) {
        let mut owned = self.owned.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(obj) = self.clear(&mut owned, index) {
            let snapshot = grace.snapshot();
            owned.retired.push((obj, snapshot));
        }
        Self::collect_locked(&mut owned, grace);
    }

    /// Frees what `grace` allows, then counts the objects removed and not freed yet.
    pub fn retained(&self, grace: &Grace) -> usize {
        let mut owned = self.owned.lock().unwrap_or_else(|p| p.into_inner());
        Self::collect_locked(&mut owned, grace);
        owned.kept.len() + owned.retired.len()
    }

    fn collect_locked(owned: &mut Owned<T>, grace: &Grace) {
        owned
            .retired
            .retain_mut(|(_, snapshot)| !grace.elapsed(snapshot));
    }

    /// Clears slot `index` and hands back its occupant.
    fn clear(&self, owned: &mut Owned<T>, index: usize) -> Option<Arc<T>> {
        let slot = self.slots.get(index)?;
        slot.store(std::ptr::null_mut(), Ordering::Release);
        self.generations[index].fetch_add(1, Ordering::Relaxed);
        owned.by_slot[index].take()
    }

    /// The id of whatever occupies slot `index` next: `index + 1` the first time, then a
    /// capacity higher each time the slot is reused, so an id held by a program (a send waiting
    /// for its consumer) never names a later occupant. Ids start over past `u32::MAX`.
    pub fn id_for(&self, index: usize) -> u32 {
        let capacity = self.slots.len() as u64;
        let generation = u64::from(self.generations[index].load(Ordering::Relaxed));
        let span = u64::from(u32::MAX) / capacity.max(1);
        (index as u64 + 1 + capacity * (generation % span)) as u32
    }

    /// The slot an id from [`id_for`](Self::id_for) names (the occupant may have another id).
    #[inline]
    pub fn index_of_id(&self, id: u32) -> usize {
        let first = (id as usize).wrapping_sub(1);
        // A slot's first occupant has id index + 1: no division on the common path.
        if first < self.slots.len() {
            return first;
        }
        first % self.slots.len().max(1)
    }

    /// The object `id` names: the occupant of its slot if `id_of` says it has that id.
    #[inline]
    pub fn get_by_id(&self, id: u32, id_of: impl FnOnce(&T) -> u32) -> Option<&T> {
        self.get(self.index_of_id(id))
            .filter(|obj| id_of(obj) == id)
    }

    /// The object in slot `index`, if any.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&T> {
        let ptr = self.slots.get(index)?.load(Ordering::Acquire);
        // SAFETY: non-null pointers in slots come from Arcs held in `owned`; a removed object
        // is dropped only with the table (`remove`, and `&self` keeps the table alive) or after
        // every reader passed a quiescent point (`retire`), which a caller's reference outlives
        // by the grace protocol's contract.
        (!ptr.is_null()).then(|| unsafe { &*ptr })
    }

    /// The object in slot `index`, if any, as an `Arc` of the caller's: it outlives a removal.
    pub(crate) fn get_arc(&self, index: usize) -> Option<Arc<T>> {
        let ptr = self.slots.get(index)?.load(Ordering::Acquire);
        if ptr.is_null() {
            return None;
        }
        // SAFETY: the pointer came from `Arc::as_ptr` of an Arc that is alive as in `get`; one
        // more strong count makes the Arc returned its own.
        unsafe {
            Arc::increment_strong_count(ptr);
            Some(Arc::from_raw(ptr))
        }
    }

    /// The objects in use, by slot. A reader of a table that retires entries
    /// ([`Table::retire`]) holds a grace-period read section meanwhile, as for [`Table::get`].
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        (0..self.slots.len()).filter_map(|i| self.get(i))
    }

    /// Sums `f` over the objects in use.
    pub fn sum(&self, f: impl Fn(&T) -> u64) -> u64 {
        self.iter().map(f).sum()
    }

    /// How many slots are in use.
    pub fn len(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| !s.load(Ordering::Acquire).is_null())
            .count()
    }

    /// Whether no slot is in use.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    #[test]
    fn ids_are_not_reused_when_slots_are() {
        let t = Table::new(3);
        let (i, _) = t.insert_with(|i| Arc::new(t_id(i))).unwrap();
        assert_eq!(t.id_for(i), 1);
        t.remove(i);
        assert_eq!(t.id_for(i), 4, "a capacity higher");
        assert_eq!(t.index_of_id(4), i);
        let (j, _) = t.insert_with(|i| Arc::new(t_id(i))).unwrap();
        assert_eq!(j, i);
        assert_eq!(t.get_by_id(1, |_| 4), None, "the old id names nothing");
        assert_eq!(t.get_by_id(4, |_| 4), Some(&0));
    }

    fn t_id(i: usize) -> u32 {
        i as u32
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
