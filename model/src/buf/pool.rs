//! `doca_buf_pool`: buffers with a fixed place each, carved out of one mmap.
//!
//! A pool is an inventory whose element `i` always covers the same bytes of its mmap: the
//! elements start at the first address of the memrange aligned to the pool's element alignment
//! and follow each other every `element_size` rounded up to that alignment. Taking a buffer is
//! the inventory's pop (nothing allocated); an empty pool answers `EMPTY`, as DOCA's does, where
//! an inventory answers `NO_MEMORY`.

use super::{Buf, BufInventory};
use crate::error::{Error, ErrorCode};
use crate::limits::BUF_INVENTORY_MAX_ELEMENTS;
use crate::mmap::Mmap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

type Result<T, E = Error> = core::result::Result<T, E>;

/// What changes between create and destroy.
struct PoolState {
    started: bool,
    /// Power of two, 1 by default (no alignment).
    alignment: usize,
    user_data: u64,
    /// Address of element 0 and the distance between elements, fixed at start.
    first: usize,
    stride: usize,
}

struct PoolInner {
    inv: BufInventory,
    mmap: Mmap,
    num_elements: u32,
    element_size: usize,
    state: Mutex<PoolState>,
}

/// `doca_buf_pool`. Cheap to clone; clones are the same pool. Buffers keep it alive.
#[derive(Clone)]
pub struct BufPool {
    inner: Arc<PoolInner>,
}

impl fmt::Debug for BufPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.lock();
        f.debug_struct("BufPool")
            .field("num_elements", &self.inner.num_elements)
            .field("element_size", &self.inner.element_size)
            .field("alignment", &s.alignment)
            .field("started", &s.started)
            .finish()
    }
}

impl PartialEq for BufPool {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for BufPool {}

fn bad_state(msg: &'static str) -> Error {
    Error::new(ErrorCode::BadState, msg)
}

impl BufPool {
    /// `doca_buf_pool_create`: `num_elements` buffers of `element_size` bytes each in `mmap`,
    /// whose memrange must be set. `INVALID_VALUE` for a zero count or size, more elements than
    /// `BUF_INVENTORY_MAX_ELEMENTS`, or an mmap without memory.
    pub fn create(num_elements: usize, element_size: usize, mmap: &Mmap) -> Result<BufPool> {
        if num_elements == 0 || element_size == 0 {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                format!(
                    "a buffer pool needs at least one element of at least one byte \
                     (doca_buf_pool_create({num_elements}, {element_size}, ...))"
                ),
            ));
        }
        if num_elements > BUF_INVENTORY_MAX_ELEMENTS {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                format!(
                    "{num_elements} elements exceed the soft device's BUF_INVENTORY_MAX_ELEMENTS \
                     of {BUF_INVENTORY_MAX_ELEMENTS}: use several pools"
                ),
            ));
        }
        if num_elements.checked_mul(element_size).is_none() {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                format!(
                    "{num_elements} elements of {element_size} bytes overflow the address space"
                ),
            ));
        }
        if mmap.range().0.is_null() {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                "the buffer pool's mmap has no memory: set its memrange before \
                 doca_buf_pool_create",
            ));
        }
        Ok(BufPool {
            inner: Arc::new(PoolInner {
                inv: BufInventory::create(num_elements)?,
                mmap: mmap.clone(),
                num_elements: num_elements as u32,
                element_size,
                state: Mutex::new(PoolState {
                    started: false,
                    alignment: 1,
                    user_data: 0,
                    first: 0,
                    stride: 0,
                }),
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        // Every update under the lock is a plain store, so a poisoned lock is consistent.
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn not_started(&self, call: &str) -> Result<MutexGuard<'_, PoolState>> {
        let s = self.lock();
        if s.started {
            return Err(Error::new(
                ErrorCode::BadState,
                format!("{call}: the buffer pool is started; stop it to change its properties"),
            ));
        }
        Ok(s)
    }

    /// `doca_buf_pool_set_element_alignment`: a power of two, at least 1. `BAD_STATE` once
    /// started.
    pub fn set_element_alignment(&self, alignment: usize) -> Result<()> {
        let mut s = self.not_started("doca_buf_pool_set_element_alignment")?;
        if !alignment.is_power_of_two() {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                format!("element alignment {alignment} is not a power of two (1, 2, 4, ...)"),
            ));
        }
        s.alignment = alignment;
        Ok(())
    }

    /// `doca_buf_pool_get_element_alignment`.
    pub fn get_element_alignment(&self) -> usize {
        self.lock().alignment
    }

    /// `doca_buf_pool_set_user_data`. `BAD_STATE` once started.
    pub fn set_user_data(&self, user_data: u64) -> Result<()> {
        self.not_started("doca_buf_pool_set_user_data")?.user_data = user_data;
        Ok(())
    }

    /// `doca_buf_pool_get_user_data`: 0 unless set.
    pub fn get_user_data(&self) -> u64 {
        self.lock().user_data
    }

    /// `doca_buf_pool_get_num_elements`.
    pub fn get_num_elements(&self) -> u32 {
        self.inner.num_elements
    }

    /// `doca_buf_pool_get_num_free_elements`.
    pub fn get_num_free_elements(&self) -> u32 {
        self.inner.inv.get_num_free_elements()
    }

    /// `doca_buf_pool_start`: fixes the elements' places. `BAD_STATE` if started already or if
    /// the mmap is not started; `INITIALIZATION` if the aligned elements do not fit in the
    /// mmap's memrange.
    pub fn start(&self) -> Result<()> {
        let mut s = self.lock();
        if s.started {
            return Err(bad_state(
                "the buffer pool is already started (doca_buf_pool_start was called twice)",
            ));
        }
        if !self.inner.mmap.is_started() {
            return Err(bad_state(
                "the buffer pool's mmap must be started before doca_buf_pool_start",
            ));
        }
        let (base, len) = self.inner.mmap.range();
        let (first, stride) = layout(
            base.addr(),
            len,
            self.inner.num_elements as usize,
            self.inner.element_size,
            s.alignment,
        )?;
        self.inner.inv.start()?;
        s.first = first;
        s.stride = stride;
        s.started = true;
        Ok(())
    }

    /// `doca_buf_pool_stop`: `IN_USE` while buffers are taken, `BAD_STATE` if not started.
    pub fn stop(&self) -> Result<()> {
        let mut s = self.lock();
        if !s.started {
            return Err(bad_state(
                "the buffer pool is not started: doca_buf_pool_stop needs a started pool",
            ));
        }
        self.check_all_returned("doca_buf_pool_stop")?;
        self.inner.inv.stop()?;
        s.started = false;
        Ok(())
    }

    /// `IN_USE` naming `call` while buffers of the pool are referenced (stop and destroy).
    pub fn check_all_returned(&self, call: &str) -> Result<()> {
        self.inner.inv.check_all_returned(call, "pool")
    }

    /// `doca_buf_pool_buf_alloc`: the next free element, empty (data at its start, length 0),
    /// refcount 1. `BAD_STATE` unless started, `EMPTY` when every element is taken.
    pub fn buf_alloc(&self) -> Result<Buf> {
        let s = self.lock();
        if !s.started {
            return Err(bad_state(
                "the buffer pool must be started before doca_buf_pool_buf_alloc",
            ));
        }
        let (first, stride, size) = (s.first, s.stride, self.inner.element_size);
        let taken = self.inner.inv.take_placed(&self.inner.mmap, |index| {
            // In range: start checked that every element fits in the memrange.
            let head = (first + index as usize * stride) as *mut u8;
            (head, size, head, 0)
        })?;
        taken.ok_or_else(|| {
            Error::new(
                ErrorCode::Empty,
                format!(
                    "the buffer pool is empty: all {} elements are taken; return one with \
                     doca_buf_dec_refcount",
                    self.inner.num_elements
                ),
            )
        })
    }
}

/// Where element 0 starts and how far apart elements are, or `INITIALIZATION` when
/// `num_elements` aligned elements do not fit in `[base, base + len)`.
fn layout(
    base: usize,
    len: usize,
    num_elements: usize,
    element_size: usize,
    alignment: usize,
) -> Result<(usize, usize)> {
    let too_small = || {
        Error::new(
            ErrorCode::Initialization,
            format!(
                "the mmap's memrange ({len} bytes at {base:#x}) is smaller than {num_elements} \
                 elements of {element_size} bytes aligned to {alignment} need"
            ),
        )
    };
    let first = base
        .checked_next_multiple_of(alignment)
        .ok_or_else(too_small)?;
    let stride = element_size
        .checked_next_multiple_of(alignment)
        .ok_or_else(too_small)?;
    let need = (num_elements - 1)
        .checked_mul(stride)
        .and_then(|n| n.checked_add(element_size))
        .and_then(|n| n.checked_add(first - base))
        .ok_or_else(too_small)?;
    if need > len {
        return Err(too_small());
    }
    Ok((first, stride))
}

#[cfg(test)]
mod tests;
