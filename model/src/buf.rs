//! `doca_buf_inventory` and `doca_buf`: fixed pools of buffer descriptors pointing into mmaps.
//!
//! An inventory preallocates its elements at creation and never grows: taking a buffer pops a
//! free slot and allocates nothing, and an empty pool answers `NO_MEMORY` as DOCA does.
//!
//! A [`Buf`] handle is DOCA's `doca_buf *`: cloning it copies the pointer and leaves the
//! reference count alone, which [`Buf::inc_refcount`] / [`Buf::dec_refcount`] manage as in DOCA.
//! The element goes back to its inventory when the count reaches zero, or when the last handle is
//! dropped (nothing can name it any more). Using a handle after its element went back is
//! reported as `BAD_STATE`, never undefined behaviour: each handle carries the generation of the
//! slot it was issued for.

use crate::error::{Error, ErrorCode};
use crate::limits::BUF_INVENTORY_MAX_ELEMENTS;
use crate::mmap::{Mmap, RawPtr, range_contains};
use crate::sync::Ordering;
use crate::sync::plain::AtomicU64;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

type Result<T, E = Error> = core::result::Result<T, E>;

/// One element of an inventory.
struct Slot {
    /// Bumped each time the element goes back to the inventory, so old handles are recognised.
    generation: u64,
    live: bool,
    /// DOCA's reference count.
    refcount: u16,
    /// Live [`Buf`] handles naming this generation.
    handles: u64,
    mmap: Option<Mmap>,
    head: RawPtr,
    len: usize,
    data: RawPtr,
    data_len: usize,
}

impl Slot {
    fn empty() -> Self {
        Slot {
            generation: 0,
            live: false,
            refcount: 0,
            handles: 0,
            mmap: None,
            head: RawPtr(std::ptr::null_mut()),
            len: 0,
            data: RawPtr(std::ptr::null_mut()),
            data_len: 0,
        }
    }
}

struct InvState {
    started: bool,
    /// Indices of free slots; its capacity is the element count, so pushes never allocate.
    free: Vec<u32>,
    slots: Box<[Slot]>,
}

impl InvState {
    /// Returns slot `index` to the free list and uncounts its buffer on the mmap.
    fn release(&mut self, index: u32) {
        let slot = &mut self.slots[index as usize];
        slot.live = false;
        slot.generation = slot.generation.wrapping_add(1);
        slot.refcount = 0;
        slot.handles = 0;
        slot.head = RawPtr(std::ptr::null_mut());
        slot.data = RawPtr(std::ptr::null_mut());
        if let Some(mmap) = slot.mmap.take() {
            mmap.release_buf();
        }
        self.free.push(index);
    }
}

struct InvInner {
    id: u64,
    num_elements: u32,
    state: Mutex<InvState>,
}

impl InvInner {
    fn lock(&self) -> MutexGuard<'_, InvState> {
        // Every update under the lock leaves the pool consistent at each step that can panic
        // (none allocate or call user code), so a poisoned lock is used as is.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

static NEXT_INVENTORY_ID: AtomicU64 = AtomicU64::new(1);

/// `doca_buf_inventory`: a fixed pool of buffer descriptors. Cheap to clone; clones are the same
/// inventory. Buffers keep their inventory alive, so dropping it early is harmless.
#[derive(Clone)]
pub struct BufInventory {
    inner: Arc<InvInner>,
}

impl fmt::Debug for BufInventory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.inner.lock();
        f.debug_struct("BufInventory")
            .field("id", &self.inner.id)
            .field("num_elements", &self.inner.num_elements)
            .field("num_free_elements", &s.free.len())
            .field("started", &s.started)
            .finish()
    }
}

impl PartialEq for BufInventory {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for BufInventory {}

impl BufInventory {
    /// `doca_buf_inventory_create`: a pool of `num_elements` buffers, all preallocated.
    /// `INVALID_VALUE` for 0 or more than `BUF_INVENTORY_MAX_ELEMENTS`, `NO_MEMORY` if the
    /// elements cannot be allocated.
    pub fn create(num_elements: usize) -> Result<BufInventory> {
        if num_elements == 0 {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                "a buffer inventory needs at least one element (doca_buf_inventory_create(0))",
            ));
        }
        if num_elements > BUF_INVENTORY_MAX_ELEMENTS {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                format!(
                    "{num_elements} elements exceed the soft device's BUF_INVENTORY_MAX_ELEMENTS \
                     of {BUF_INVENTORY_MAX_ELEMENTS}: use several inventories"
                ),
            ));
        }
        let no_memory = |_| {
            Error::new(
                ErrorCode::NoMemory,
                format!("allocating {num_elements} buffer inventory elements failed"),
            )
        };
        let mut slots = Vec::new();
        slots.try_reserve_exact(num_elements).map_err(no_memory)?;
        slots.resize_with(num_elements, Slot::empty);
        let mut free = Vec::new();
        free.try_reserve_exact(num_elements).map_err(no_memory)?;
        // Popping from the end hands out element 0 first.
        free.extend((0..num_elements as u32).rev());
        Ok(BufInventory {
            inner: Arc::new(InvInner {
                id: NEXT_INVENTORY_ID.fetch_add(1, Ordering::Relaxed),
                num_elements: num_elements as u32,
                state: Mutex::new(InvState {
                    started: false,
                    free,
                    slots: slots.into_boxed_slice(),
                }),
            }),
        })
    }

    /// `doca_buf_inventory_start`: allows taking buffers. `BAD_STATE` if already started.
    pub fn start(&self) -> Result<()> {
        let mut s = self.inner.lock();
        if s.started {
            return Err(Error::new(
                ErrorCode::BadState,
                "buffer inventory is already started (doca_buf_inventory_start was called twice)",
            ));
        }
        s.started = true;
        Ok(())
    }

    /// `doca_buf_inventory_stop`: refuses further buffers; buffers already taken stay valid.
    /// `BAD_STATE` if not started.
    pub fn stop(&self) -> Result<()> {
        let mut s = self.inner.lock();
        if !s.started {
            return Err(Error::new(
                ErrorCode::BadState,
                "buffer inventory is not started: doca_buf_inventory_stop needs a started inventory",
            ));
        }
        s.started = false;
        Ok(())
    }

    /// Whether the inventory is started.
    pub fn is_started(&self) -> bool {
        self.inner.lock().started
    }

    /// `doca_buf_inventory_get_num_elements`.
    pub fn get_num_elements(&self) -> u32 {
        self.inner.num_elements
    }

    /// `doca_buf_inventory_get_num_free_elements`.
    pub fn get_num_free_elements(&self) -> u32 {
        self.inner.lock().free.len() as u32
    }

    /// `IN_USE` naming `call` while buffers of this inventory, or of the `owner` kept on it
    /// ("inventory", "pool"), are still referenced: what stop and destroy answer then.
    pub fn check_all_returned(&self, call: &str, owner: &str) -> Result<()> {
        match self.get_num_elements() - self.get_num_free_elements() {
            0 => Ok(()),
            n => Err(Error::new(
                ErrorCode::InUse,
                format!(
                    "{call}: {n} buffer(s) of the {owner} are still referenced; \
                     doca_buf_dec_refcount them to 0 first"
                ),
            )),
        }
    }

    /// `doca_buf_inventory_buf_get_by_addr`: a buffer over `[addr, addr + len)` with no data
    /// (data at `addr`, data length 0), refcount 1.
    pub fn buf_get_by_addr(&self, mmap: &Mmap, addr: *mut u8, len: usize) -> Result<Buf> {
        self.buf_get_by_args(mmap, addr, len, addr, 0)
    }

    /// `doca_buf_inventory_buf_get_by_data`: a buffer over `[data, data + data_len)` that is all
    /// data, refcount 1.
    pub fn buf_get_by_data(&self, mmap: &Mmap, data: *mut u8, data_len: usize) -> Result<Buf> {
        self.buf_get_by_args(mmap, data, data_len, data, data_len)
    }

    /// `doca_buf_inventory_buf_get_by_args`: a buffer over `[addr, addr + len)` whose data is
    /// `[data, data + data_len)`, refcount 1.
    ///
    /// `BAD_STATE` if the inventory or the mmap is not started; `INVALID_VALUE` for a zero `len`,
    /// a buffer outside the mmap's memrange or data outside the buffer (DOCA leaves the last one
    /// undefined; the soft device reports it); `NO_MEMORY` when every element is in use.
    pub fn buf_get_by_args(
        &self,
        mmap: &Mmap,
        addr: *mut u8,
        len: usize,
        data: *mut u8,
        data_len: usize,
    ) -> Result<Buf> {
        let mut s = self.inner.lock();
        if !s.started {
            return Err(Error::new(
                ErrorCode::BadState,
                "the buffer inventory must be started before taking buffers (call \
                 BufInventory::start)",
            ));
        }
        if len == 0 {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                "a buffer covers at least one byte: buffer length is 0",
            ));
        }
        if !range_contains((addr.addr(), len), data.addr(), data_len) {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                format!(
                    "buffer data {data:p}+{data_len:#x} is not inside the buffer {addr:p}+{len:#x}: \
                     data must lie within [addr, addr + len)"
                ),
            ));
        }
        let num_elements = self.inner.num_elements;
        let taken = self.take(&mut s, mmap, |_| (addr, len, data, data_len))?;
        taken.ok_or_else(|| {
            Error::new(
                ErrorCode::NoMemory,
                format!(
                    "the buffer inventory is empty: all {num_elements} elements are in use; \
                     return buffers (dec_refcount to 0 or drop them) or create the inventory \
                     with more elements"
                ),
            )
        })
    }

    /// Takes a free element (`None` when every one is in use) and places it where `place` says
    /// for its index: `(head, len, data, data_len)`, counted on `mmap` (which checks the range).
    /// The buffer pool gives each index a fixed element of its mmap through this.
    pub(crate) fn take_placed(
        &self,
        mmap: &Mmap,
        place: impl FnOnce(u32) -> (*mut u8, usize, *mut u8, usize),
    ) -> Result<Option<Buf>> {
        let mut s = self.inner.lock();
        self.take(&mut s, mmap, place)
    }

    fn take(
        &self,
        s: &mut InvState,
        mmap: &Mmap,
        place: impl FnOnce(u32) -> (*mut u8, usize, *mut u8, usize),
    ) -> Result<Option<Buf>> {
        let Some(&index) = s.free.last() else {
            return Ok(None);
        };
        let (head, len, data, data_len) = place(index);
        mmap.acquire_buf(head.addr(), len)?;
        s.free.pop();
        let slot = &mut s.slots[index as usize];
        slot.live = true;
        slot.refcount = 1;
        slot.handles = 1;
        slot.mmap = Some(mmap.clone());
        slot.head = RawPtr(head);
        slot.len = len;
        slot.data = RawPtr(data);
        slot.data_len = data_len;
        Ok(Some(Buf {
            inv: self.inner.clone(),
            index,
            generation: slot.generation,
        }))
    }
}

/// A snapshot of a buffer's placement, taken under one lock (for the DMA and Comch models).
#[derive(Clone, Debug)]
pub struct BufView {
    /// Start of the buffer (`doca_buf_get_head`).
    pub head: *mut u8,
    /// Length of the buffer.
    pub len: usize,
    /// Start of the data.
    pub data: *mut u8,
    /// Length of the data.
    pub data_len: usize,
    /// The mmap the buffer points into.
    pub mmap: Mmap,
}

/// `doca_buf`: a descriptor of a region of an mmap and of the data inside it. Cloning copies the
/// pointer (see the module documentation for reference counting).
pub struct Buf {
    inv: Arc<InvInner>,
    index: u32,
    generation: u64,
}

impl fmt::Debug for Buf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Buf");
        d.field("inventory", &self.inv.id)
            .field("index", &self.index);
        match self.view() {
            Ok(v) => d
                .field("head", &v.head)
                .field("len", &v.len)
                .field("data", &v.data)
                .field("data_len", &v.data_len),
            Err(_) => d.field("returned", &true),
        };
        d.finish()
    }
}

impl Clone for Buf {
    fn clone(&self) -> Self {
        let mut s = self.inv.lock();
        let slot = &mut s.slots[self.index as usize];
        if slot.live && slot.generation == self.generation {
            slot.handles += 1;
        }
        Buf {
            inv: self.inv.clone(),
            index: self.index,
            generation: self.generation,
        }
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        let mut s = self.inv.lock();
        let slot = &mut s.slots[self.index as usize];
        if slot.live && slot.generation == self.generation {
            slot.handles -= 1;
            if slot.handles == 0 {
                s.release(self.index);
            }
        }
    }
}

impl PartialEq for Buf {
    /// Same element of the same inventory, same generation: DOCA's pointer equality.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inv, &other.inv)
            && self.index == other.index
            && self.generation == other.generation
    }
}

impl Eq for Buf {}

fn returned() -> Error {
    Error::new(
        ErrorCode::BadState,
        "this doca_buf was returned to its inventory (its refcount reached 0): take a new \
         buffer with buf_get_by_addr / buf_get_by_data",
    )
}

fn data_outside(data: *mut u8, data_len: usize, head: *mut u8, len: usize) -> Error {
    Error::new(
        ErrorCode::InvalidValue,
        format!(
            "buffer data {data:p}+{data_len:#x} is not inside the buffer {head:p}+{len:#x}: \
             data must lie within [head, head + len)"
        ),
    )
}

impl Buf {
    /// Runs `f` on the slot if this handle still names a live element.
    fn with_slot<R>(&self, f: impl FnOnce(&mut Slot) -> Result<R>) -> Result<R> {
        let mut s = self.inv.lock();
        let slot = &mut s.slots[self.index as usize];
        if !slot.live || slot.generation != self.generation {
            return Err(returned());
        }
        f(slot)
    }

    /// `doca_buf_get_head`: start of the buffer.
    pub fn get_head(&self) -> Result<*mut u8> {
        self.with_slot(|s| Ok(s.head.0))
    }

    /// Start of the buffer (older DOCA's `doca_buf_get_addr`; same as [`Buf::get_head`]).
    pub fn get_addr(&self) -> Result<*mut u8> {
        self.get_head()
    }

    /// `doca_buf_get_len`: length of the buffer.
    pub fn get_len(&self) -> Result<usize> {
        self.with_slot(|s| Ok(s.len))
    }

    /// `doca_buf_get_data`: start of the data.
    pub fn get_data(&self) -> Result<*mut u8> {
        self.with_slot(|s| Ok(s.data.0))
    }

    /// `doca_buf_get_data_len`: length of the data.
    pub fn get_data_len(&self) -> Result<usize> {
        self.with_slot(|s| Ok(s.data_len))
    }

    /// Start and length of the data under one lock: what the DMA engine compares, before each
    /// step of a copy, with what the buffer held when the task was submitted.
    pub fn data_window(&self) -> Result<(*mut u8, usize)> {
        self.with_slot(|s| Ok((s.data.0, s.data_len)))
    }

    /// `doca_buf_set_data`: the data is `[data, data + data_len)`, which must lie inside the
    /// buffer (`INVALID_VALUE` otherwise; DOCA leaves it undefined).
    pub fn set_data(&self, data: *mut u8, data_len: usize) -> Result<()> {
        self.with_slot(|s| {
            if !range_contains((s.head.0.addr(), s.len), data.addr(), data_len) {
                return Err(data_outside(data, data_len, s.head.0, s.len));
            }
            s.data = RawPtr(data);
            s.data_len = data_len;
            Ok(())
        })
    }

    /// `doca_buf_set_data_len`: keeps the data start; the data must still end inside the buffer
    /// (`INVALID_VALUE` otherwise).
    pub fn set_data_len(&self, data_len: usize) -> Result<()> {
        self.with_slot(|s| {
            if !range_contains((s.head.0.addr(), s.len), s.data.0.addr(), data_len) {
                return Err(data_outside(s.data.0, data_len, s.head.0, s.len));
            }
            s.data_len = data_len;
            Ok(())
        })
    }

    /// `doca_buf_reset_data_len`: data length 0, data start kept.
    pub fn reset_data_len(&self) -> Result<()> {
        self.with_slot(|s| {
            s.data_len = 0;
            Ok(())
        })
    }

    /// `doca_buf_inc_refcount`: returns the count before the call. `TOO_BIG` at `u16::MAX`.
    pub fn inc_refcount(&self) -> Result<u16> {
        self.with_slot(|s| {
            let before = s.refcount;
            s.refcount = before.checked_add(1).ok_or_else(|| {
                Error::new(
                    ErrorCode::TooBig,
                    "doca_buf reference count already reached its maximum of 65535",
                )
            })?;
            Ok(before)
        })
    }

    /// `doca_buf_dec_refcount`: returns the count before the call; at zero the element goes back
    /// to its inventory and every handle to it becomes invalid. `BAD_STATE` if it already went
    /// back.
    pub fn dec_refcount(&self) -> Result<u16> {
        let mut s = self.inv.lock();
        let slot = &mut s.slots[self.index as usize];
        if !slot.live || slot.generation != self.generation {
            return Err(returned());
        }
        let before = slot.refcount;
        slot.refcount -= 1;
        if slot.refcount == 0 {
            s.release(self.index);
        }
        Ok(before)
    }

    /// `doca_buf_get_refcount`.
    pub fn get_refcount(&self) -> Result<u16> {
        self.with_slot(|s| Ok(s.refcount))
    }

    /// The mmap the buffer points into.
    pub fn get_mmap(&self) -> Result<Mmap> {
        self.with_slot(|s| s.mmap.clone().ok_or_else(returned))
    }

    /// The inventory the buffer came from.
    pub fn inventory(&self) -> BufInventory {
        BufInventory {
            inner: self.inv.clone(),
        }
    }

    /// Head, length, data, data length and mmap at once.
    pub fn view(&self) -> Result<BufView> {
        self.with_slot(|s| {
            Ok(BufView {
                head: s.head.0,
                len: s.len,
                data: s.data.0,
                data_len: s.data_len,
                mmap: s.mmap.clone().ok_or_else(returned)?,
            })
        })
    }
}

pub mod pool;

#[cfg(test)]
mod tests;
