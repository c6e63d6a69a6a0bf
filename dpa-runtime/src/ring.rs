//! [`CompletionRing`]: the bounded multi-producer single-consumer ring that carries MsgQ
//! immediates (at most 32 bytes) from producers to one consumer.
//!
//! It is the soft device's datapath: one cache line per message, no locks, and no allocation
//! after [`CompletionRing::new`]. It is Dmitry Vyukov's bounded queue with the consumer's
//! dequeue split in two, because DOCA lets a DPA thread read a completion's immediate until it
//! acknowledges it: [`poll`](CompletionRing::poll) hands out a message and leaves its slot
//! occupied, [`release`](CompletionRing::release) frees the oldest polled slots in order.
//!
//! # Guarantees
//!
//! - Messages from one producer thread are polled in the order it pushed them.
//! - Every pushed message is polled exactly once.
//! - At most [`capacity`](CompletionRing::capacity) messages are pushed but not yet released;
//!   [`try_push`](CompletionRing::try_push) fails with [`RingFull`] beyond that.
//!
//! # Sequence numbers
//!
//! Position `pos` (a counter that never wraps in practice) lives in slot `pos % capacity`. The
//! slot's `seq` is `2·pos` while it waits for the producer of `pos`, `2·pos + 1` once that
//! producer has published, and releasing `pos` sets it to `2·(pos + capacity)`, handing the
//! slot to the producer of the next lap. Vyukov's original `pos + 1` encoding cannot tell
//! "published at `pos`" from "free for `pos + 1`" when the ring has a single slot; doubling can.

use crate::sync::{AtomicU64, CachePadded, Ordering, UnsafeCell};
use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;
use dpakit_abi::MAX_IMM_DATA_LEN;

/// `imm` (at most 32 bytes) zero-filled to 32. Full 32-byte immediates, the common case, are
/// copied as one block instead of through a variable-length `memcpy` call.
///
/// # Panics
///
/// If `imm` is longer than 32 bytes.
#[inline]
pub fn padded_imm(imm: &[u8]) -> [u8; MAX_IMM_DATA_LEN] {
    if let Ok(full) = <[u8; MAX_IMM_DATA_LEN]>::try_from(imm) {
        return full;
    }
    let mut bytes = [0; MAX_IMM_DATA_LEN];
    bytes[..imm.len()].copy_from_slice(imm);
    bytes
}

/// One message, padded to a cache line so that producers writing neighbouring slots never
/// share a line.
#[repr(C, align(64))]
struct Slot {
    seq: AtomicU64,
    meta: UnsafeCell<SlotMeta>,
    data: UnsafeCell<ImmData>,
}

#[derive(Clone, Copy)]
struct SlotMeta {
    len: u32,
    producer_id: u32,
}

/// The immediate's bytes, 32-byte aligned so that a consumer may view them as a
/// `dpakit_abi::ImmMessage` in place. Bytes past the message's length are zero.
#[repr(C, align(32))]
struct ImmData([u8; MAX_IMM_DATA_LEN]);

#[cfg(not(loom))]
mod layout {
    use super::Slot;
    use core::mem::{align_of, offset_of, size_of};
    use static_assertions::const_assert_eq;

    const_assert_eq!(size_of::<Slot>(), 64);
    const_assert_eq!(align_of::<Slot>(), 64);
    const_assert_eq!(offset_of!(Slot, seq), 0);
    const_assert_eq!(offset_of!(Slot, meta), 8);
    const_assert_eq!(offset_of!(Slot, data), 32);
}

impl Slot {
    fn new(pos: u64) -> Self {
        Slot {
            seq: AtomicU64::new(2 * pos),
            meta: UnsafeCell::new(SlotMeta {
                len: 0,
                producer_id: 0,
            }),
            data: UnsafeCell::new(ImmData([0; MAX_IMM_DATA_LEN])),
        }
    }
}

/// The consumer's counters. Only the consumer writes them, so plain `Relaxed` accesses do.
struct Cursor {
    /// Next position to poll.
    read: AtomicU64,
    /// Positions below this are released; `read - acked` are polled but not released.
    acked: AtomicU64,
}

/// A bounded MPSC ring of 32-byte immediates; see the [module documentation](self).
///
/// Any number of threads may [`try_push`](Self::try_push) at once. The consumer methods
/// ([`poll`](Self::poll), [`release`](Self::release), [`pop_into`](Self::pop_into)) are
/// `unsafe` because the ring trusts its caller to run them on one thread at a time, for
/// example by letting only the DPA thread attached to a completion context, or the owner of a
/// CPU consumer, reach them.
pub struct CompletionRing {
    /// Next position a producer claims.
    tail: CachePadded<AtomicU64>,
    head: CachePadded<Cursor>,
    slots: Box<[Slot]>,
    mask: u64,
}

// SAFETY: the slots' cells are the only non-Sync parts. A producer writes a slot's cells only
// after claiming its position with a CAS on `tail` (so no other producer writes it) and while
// `seq` says the consumer has released it; the consumer reads them only after an Acquire load
// of `seq` sees the producer's Release publication, and until it releases the slot.
unsafe impl Sync for CompletionRing {}
static_assertions::assert_impl_all!(CompletionRing: Send, Sync);

/// [`CompletionRing::try_push`] found every slot pushed and not yet released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingFull;

impl fmt::Display for RingFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("completion ring is full")
    }
}

impl std::error::Error for RingFull {}

/// [`CompletionRing::release`] was asked to free more messages than were polled and not yet
/// released. Nothing was released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReleaseError {
    /// How many the caller asked to release.
    pub requested: u64,
    /// How many were polled and not yet released.
    pub outstanding: u64,
}

impl fmt::Display for ReleaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "asked to release {} completions but only {} are outstanding",
            self.requested, self.outstanding
        )
    }
}

impl std::error::Error for ReleaseError {}

/// A message handed out by [`CompletionRing::poll`] and not freed by it: its slot stays
/// occupied, and its bytes readable, until [`CompletionRing::release`] frees it.
///
/// Plain data (slot address, length, producer id, position); device functions find a held
/// message again by its position with [`CompletionRing::held`].
#[derive(Clone, Copy)]
pub struct Polled<'r> {
    slot: NonNull<Slot>,
    len: u32,
    producer_id: u32,
    pos: u64,
    ring: PhantomData<&'r CompletionRing>,
}

// SAFETY: a `Polled` is a read-only view of a slot that no one writes while it is outstanding
// (see `Polled::imm`). Moving or sharing it between threads in safe code goes through
// synchronization that orders the other thread's reads after the consumer's Acquire of `seq`.
unsafe impl Send for Polled<'_> {}
// SAFETY: as for Send; `Polled` has no interior mutability.
unsafe impl Sync for Polled<'_> {}

impl fmt::Debug for Polled<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Polled")
            .field("pos", &self.pos)
            .field("producer_id", &self.producer_id)
            .field("imm", &self.imm())
            .finish()
    }
}

impl<'r> Polled<'r> {
    /// The immediate's bytes.
    #[inline]
    pub fn imm(&self) -> &[u8] {
        // SAFETY: a Polled comes only from `poll` or `held`, whose callers promise to
        // read it only while it is outstanding: polled, not yet released, and the ring alive
        // (the lifetime 'r holds the ring borrowed). Until released the slot's seq stays
        // 2·pos + 1, which no producer accepts, so nothing writes the slot; the consumer's
        // Acquire load of that seq made the producer's writes visible.
        let slot = unsafe { self.slot.as_ref() };
        let len = self.len as usize;
        // SAFETY: as above: the cell is not written while this view exists, and len <= 32 was
        // checked by `try_push`.
        slot.data
            .with(|data| unsafe { (*data).0.get_unchecked(..len) })
    }

    /// The immediate's length in bytes (at most 32).
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether the immediate is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The id the producer passed to [`CompletionRing::try_push`].
    #[inline]
    pub fn producer_id(&self) -> u32 {
        self.producer_id
    }

    /// The message's position in the ring's total order (0 for the first ever pushed).
    #[inline]
    pub fn pos(&self) -> u64 {
        self.pos
    }
}

impl CompletionRing {
    /// A ring with room for `min_capacity` rounded up to a power of two (at least 1) messages.
    /// The only allocation the ring ever makes.
    pub fn new(min_capacity: usize) -> Self {
        let capacity = min_capacity.max(1).next_power_of_two();
        CompletionRing {
            tail: CachePadded(AtomicU64::new(0)),
            head: CachePadded(Cursor {
                read: AtomicU64::new(0),
                acked: AtomicU64::new(0),
            }),
            slots: (0..capacity as u64).map(Slot::new).collect(),
            mask: capacity as u64 - 1,
        }
    }

    /// How many messages may be pushed and not yet released.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Messages pushed (or being pushed) and not yet released. Exact only when no thread is
    /// pushing or releasing.
    #[inline]
    pub fn len_hint(&self) -> usize {
        let acked = self.head.acked.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Relaxed);
        (tail.saturating_sub(acked) as usize).min(self.capacity())
    }

    /// Messages pushed (counting any being pushed) and messages polled, since the ring was
    /// made: for statistics, read relaxed.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.tail.load(Ordering::Relaxed),
            self.head.read.load(Ordering::Relaxed),
        )
    }

    /// Messages polled and not yet released.
    #[inline]
    pub fn outstanding(&self) -> u64 {
        let acked = self.head.acked.load(Ordering::Relaxed);
        self.head.read.load(Ordering::Relaxed).wrapping_sub(acked)
    }

    /// Whether a published message waits at the consumer's read position: what [`poll`]
    /// would return. Exact on the consumer's thread; from elsewhere a hint (memory-safe, possibly
    /// stale). Reads only the slot's sequence word, which stays cached until a producer writes it.
    ///
    /// [`poll`]: Self::poll
    #[inline]
    pub fn has_ready(&self) -> bool {
        let pos = self.head.read.load(Ordering::Acquire);
        self.slot(pos).seq.load(Ordering::Acquire) == 2 * pos + 1
    }

    #[inline]
    fn slot(&self, pos: u64) -> &Slot {
        &self.slots[(pos & self.mask) as usize]
    }

    /// Appends `imm` (at most 32 bytes), tagged with `producer_id`. Any thread may push.
    ///
    /// # Panics
    ///
    /// If `imm` is longer than 32 bytes; callers reject that with a DOCA error first.
    #[inline]
    pub fn try_push(&self, imm: &[u8], producer_id: u32) -> Result<(), RingFull> {
        // Checked before claiming a position: a panic after the claim would wedge the ring.
        assert!(
            imm.len() <= MAX_IMM_DATA_LEN,
            "immediate of {} bytes",
            imm.len()
        );
        let data = ImmData(padded_imm(imm));
        let meta = SlotMeta {
            len: imm.len() as u32,
            producer_id,
        };

        let mut pos = self.tail.load(Ordering::Relaxed);
        loop {
            let slot = self.slot(pos);
            // Acquire: the consumer's reads of this slot's previous lap happen before our writes.
            let seq = slot.seq.load(Ordering::Acquire);
            let lag = seq.wrapping_sub(2 * pos) as i64;
            if lag == 0 {
                // The CAS only decides which producer owns `pos`; `seq` carries the data.
                match self.tail.compare_exchange_weak(
                    pos,
                    pos + 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        // SAFETY: winning the CAS for `pos` while seq == 2·pos makes this
                        // producer the slot's only writer, and the consumer released it.
                        slot.meta.with_mut(|cell| unsafe { cell.write(meta) });
                        // SAFETY: as above.
                        slot.data.with_mut(|cell| unsafe { cell.write(data) });
                        slot.seq.store(2 * pos + 1, Ordering::Release);
                        return Ok(());
                    }
                    Err(current) => pos = current,
                }
            } else if lag < 0 {
                // The slot still holds the message from `capacity` positions back.
                return Err(RingFull);
            } else {
                // Another producer took `pos`; start again from the current tail.
                pos = self.tail.load(Ordering::Relaxed);
            }
        }
    }

    /// The next message, if one is published. The message stays readable, and its slot
    /// occupied, until [`release`](Self::release) frees it.
    ///
    /// # Safety
    ///
    /// No other thread runs `poll`, `release` or `pop_into` on this ring at the same time;
    /// consumer calls made from different threads are ordered by happens-before (a mutex, a
    /// channel, a join). The returned message is read only until it is released.
    #[inline]
    pub unsafe fn poll(&self) -> Option<Polled<'_>> {
        let pos = self.head.read.load(Ordering::Relaxed);
        let slot = self.slot(pos);
        // Acquire: pairs with the producer's Release publication of the slot's cells.
        if slot.seq.load(Ordering::Acquire) != 2 * pos + 1 {
            return None;
        }
        // SAFETY: published and not released, so no producer writes the slot.
        let meta = slot.meta.with(|meta| unsafe { *meta });
        self.head.read.store(pos + 1, Ordering::Relaxed);
        Some(Polled {
            slot: NonNull::from(slot),
            len: meta.len,
            producer_id: meta.producer_id,
            pos,
            ring: PhantomData,
        })
    }

    /// The message at position `pos` if it is polled and not released yet: the window in which
    /// a completion element is valid. `pos` may be cut to its low `bits` bits (at least
    /// enough for the capacity); the window, never wider than the ring, makes it unambiguous.
    ///
    /// # Safety
    ///
    /// The single-consumer rule of [`poll`](Self::poll); the message is read only until it is
    /// released.
    #[inline]
    pub unsafe fn held(&self, pos: u64, bits: u32) -> Option<Polled<'_>> {
        let read = self.head.read.load(Ordering::Relaxed);
        let acked = self.head.acked.load(Ordering::Relaxed);
        let mask = 1u64.checked_shl(bits).map_or(u64::MAX, |m| m - 1);
        // The newest position below `read` with those low bits.
        let mut full = (read & !mask) | (pos & mask);
        if full >= read {
            full = full.checked_sub(mask.checked_add(1)?)?;
        }
        if full < acked {
            return None;
        }
        let slot = self.slot(full);
        // SAFETY: polled and not released, so no producer writes the slot (see `Polled::imm`).
        let meta = slot.meta.with(|meta| unsafe { *meta });
        Some(Polled {
            slot: NonNull::from(slot),
            len: meta.len,
            producer_id: meta.producer_id,
            pos: full,
            ring: PhantomData,
        })
    }

    /// Frees the `n` oldest polled messages, in order, for producers to reuse. Asking for more
    /// than [`outstanding`](Self::outstanding) releases nothing and fails.
    ///
    /// # Safety
    ///
    /// The single-consumer rule of [`poll`](Self::poll), and no released message (nor any copy
    /// of its [`Polled`], nor a slice from [`Polled::imm`]) is read afterwards.
    #[inline]
    pub unsafe fn release(&self, n: u64) -> Result<(), ReleaseError> {
        let acked = self.head.acked.load(Ordering::Relaxed);
        let outstanding = self.head.read.load(Ordering::Relaxed) - acked;
        if n > outstanding {
            return Err(ReleaseError {
                requested: n,
                outstanding,
            });
        }
        let lap = self.capacity() as u64;
        for pos in acked..acked + n {
            // Release: our reads of the slot happen before the next producer's writes.
            self.slot(pos).seq.store(2 * (pos + lap), Ordering::Release);
        }
        self.head.acked.store(acked + n, Ordering::Relaxed);
        Ok(())
    }

    /// Takes the next message: copies its 32 bytes (zero past its length) into `out`, frees its
    /// slot and returns `(len, producer_id)`. For consumers that never hold messages.
    ///
    /// # Safety
    ///
    /// The single-consumer rule of [`poll`](Self::poll).
    ///
    /// # Panics
    ///
    /// If polled messages are outstanding: freeing out of order is not possible.
    #[inline]
    pub unsafe fn pop_into(&self, out: &mut [u8; MAX_IMM_DATA_LEN]) -> Option<(u32, u32)> {
        let pos = self.head.read.load(Ordering::Relaxed);
        assert_eq!(
            pos,
            self.head.acked.load(Ordering::Relaxed),
            "pop_into while polled messages are outstanding"
        );
        let slot = self.slot(pos);
        if slot.seq.load(Ordering::Acquire) != 2 * pos + 1 {
            return None;
        }
        // SAFETY: published and not released, so no producer writes the slot.
        let meta = slot.meta.with(|meta| unsafe { *meta });
        // SAFETY: as above.
        *out = slot.data.with(|data| unsafe { (*data).0 });
        slot.seq
            .store(2 * (pos + self.capacity() as u64), Ordering::Release);
        self.head.read.store(pos + 1, Ordering::Relaxed);
        self.head.acked.store(pos + 1, Ordering::Relaxed);
        Some((meta.len, meta.producer_id))
    }

    /// Empties the ring for reuse, dropping whatever it holds.
    pub fn reset(&mut self) {
        for (pos, slot) in self.slots.iter().enumerate() {
            slot.seq.store(2 * pos as u64, Ordering::Relaxed);
        }
        self.tail.store(0, Ordering::Relaxed);
        self.head.read.store(0, Ordering::Relaxed);
        self.head.acked.store(0, Ordering::Relaxed);
    }
}

impl fmt::Debug for CompletionRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompletionRing")
            .field("capacity", &self.capacity())
            .field("tail", &self.tail.load(Ordering::Relaxed))
            .field("read", &self.head.read.load(Ordering::Relaxed))
            .field("acked", &self.head.acked.load(Ordering::Relaxed))
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_tests;
