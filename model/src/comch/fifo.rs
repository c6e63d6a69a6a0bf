//! [`Fifo`]: the fixed-capacity queue a CPU endpoint keeps per task (sends completed, receives
//! posted). Its capacity is the endpoint's task pool, which bounds what it ever holds, so
//! pushing never allocates and both ends inline to a few instructions (a `VecDeque` keeps its
//! growth path in every push).

use std::cell::Cell;

/// A queue of at most `capacity` `Copy` values, for one thread (`Cell`s, no borrows).
pub(crate) struct Fifo<T: Copy> {
    slots: Box<[Cell<T>]>,
    head: Cell<usize>,
    len: Cell<usize>,
}

impl<T: Copy> Fifo<T> {
    /// An empty queue with room for `capacity` values (at least one), its slots filled with
    /// `fill`; its only allocation.
    pub(crate) fn new(capacity: usize, fill: T) -> Self {
        Self {
            slots: (0..capacity.max(1)).map(|_| Cell::new(fill)).collect(),
            head: Cell::new(0),
            len: Cell::new(0),
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len.get()
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len.get() == 0
    }

    /// Appends `value`; gives it back when the queue is full.
    #[inline]
    pub(crate) fn push(&self, value: T) -> Result<(), T> {
        let (len, cap) = (self.len.get(), self.slots.len());
        if len == cap {
            return Err(value);
        }
        let at = self.head.get() + len;
        self.slots[if at >= cap { at - cap } else { at }].set(value);
        self.len.set(len + 1);
        Ok(())
    }

    /// Appends `value` to a queue its caller keeps within capacity by a count of its own (the
    /// tasks in flight, the receives posted); a full queue there is the caller's bug.
    #[inline]
    pub(crate) fn push_within_capacity(&self, value: T) {
        let pushed = self.push(value);
        debug_assert!(pushed.is_ok(), "a FIFO pushed past its capacity");
    }

    /// The oldest value, removed.
    #[inline]
    pub(crate) fn pop(&self) -> Option<T> {
        let len = self.len.get();
        if len == 0 {
            return None;
        }
        let head = self.head.get();
        let value = self.slots[head].get();
        let next = head + 1;
        self.head
            .set(if next == self.slots.len() { 0 } else { next });
        self.len.set(len - 1);
        Some(value)
    }

    /// Forgets every value.
    pub(crate) fn clear(&self) {
        self.len.set(0);
    }

    /// Removes the newest `n` values (all if fewer), oldest first, through `f`.
    pub(crate) fn drain_newest(&self, n: usize, mut f: impl FnMut(T)) {
        let n = n.min(self.len.get());
        let keep = self.len.get() - n;
        let cap = self.slots.len();
        for i in keep..keep + n {
            f(self.slots[(self.head.get() + i) % cap].get());
        }
        self.len.set(keep);
    }
}

#[cfg(test)]
mod tests {
    use super::Fifo;

    #[test]
    fn keeps_order_across_the_wrap_and_refuses_past_capacity() {
        let q = Fifo::new(3, 0u32);
        for round in 0..5u32 {
            for i in 0..3 {
                assert_eq!(q.push(round * 10 + i), Ok(()));
            }
            assert_eq!(q.push(99), Err(99), "full at capacity");
            assert_eq!(q.len(), 3);
            assert_eq!(q.pop(), Some(round * 10));
            assert_eq!(q.push(round * 10 + 3), Ok(()));
            let got: Vec<u32> = std::iter::from_fn(|| q.pop()).collect();
            assert_eq!(got, [1, 2, 3].map(|i| round * 10 + i));
            assert!(q.is_empty());
        }
    }

    #[test]
    fn drain_newest_takes_the_tail_in_order() {
        let q = Fifo::new(4, 0u32);
        for i in 0..4 {
            q.push(i).unwrap();
        }
        q.pop();
        q.push(4).unwrap(); // wraps: 1 2 3 4
        let mut taken = Vec::new();
        q.drain_newest(2, |v| taken.push(v));
        assert_eq!(taken, [3, 4]);
        assert_eq!(std::iter::from_fn(|| q.pop()).collect::<Vec<_>>(), [1, 2]);
        q.drain_newest(9, |_| panic!("empty"));
    }
}
