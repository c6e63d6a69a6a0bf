//! Buffer inventories (`doca_buf_inventory`) and buffers (`doca_buf`).

use crate::error::{Result, check, doca};
use crate::mmap::Mmap;
use dpakit_sys as sys;
use std::fmt;
use std::marker::PhantomData;

/// `doca_buf_inventory`: a fixed pool of buffer descriptors.
#[doc(alias = "doca_buf_inventory")]
pub struct BufInventory {
    raw: *mut sys::doca_buf_inventory,
}

impl fmt::Debug for BufInventory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufInventory").finish_non_exhaustive()
    }
}

impl BufInventory {
    /// `doca_buf_inventory_create` + `doca_buf_inventory_start`: `num_elements` descriptors.
    #[doc(alias = "doca_buf_inventory_create")]
    pub fn new(num_elements: usize) -> Result<Self> {
        let mut raw = std::ptr::null_mut();
        doca!(doca_buf_inventory_create(num_elements, &mut raw))?;
        let inv = Self { raw };
        doca!(doca_buf_inventory_start(raw))?;
        Ok(inv)
    }

    /// `doca_buf_inventory_buf_get_by_args`: a buffer over `[addr, addr + len)` of `mmap`
    /// whose data is `[data, data + data_len)`.
    #[doc(alias = "doca_buf_inventory_buf_get_by_args")]
    pub fn buf_get_by_args<'a>(
        &'a self,
        mmap: &'a Mmap,
        addr: *mut u8,
        len: usize,
        data: *mut u8,
        data_len: usize,
    ) -> Result<Buf<'a>> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: DOCA checks the ranges against the mmap; nothing is dereferenced here.
        let rc = unsafe {
            sys::doca_buf_inventory_buf_get_by_args(
                self.raw,
                mmap.raw(),
                addr.cast(),
                len,
                data.cast(),
                data_len,
                &mut raw,
            )
        };
        check("doca_buf_inventory_buf_get_by_args", rc)?;
        // SAFETY: DOCA handed out this buffer with one reference, which the Buf now owns.
        Ok(unsafe { Buf::from_raw(raw) })
    }

    /// A buffer over `[addr, addr + len)` holding no data yet (DOCA's `buf_get_by_addr`).
    #[doc(alias = "doca_buf_inventory_buf_get_by_addr")]
    pub fn buf_get_by_addr<'a>(
        &'a self,
        mmap: &'a Mmap,
        addr: *mut u8,
        len: usize,
    ) -> Result<Buf<'a>> {
        self.buf_get_by_args(mmap, addr, len, addr, 0)
    }

    /// A buffer whose data is all of `[data, data + data_len)` (DOCA's `buf_get_by_data`).
    #[doc(alias = "doca_buf_inventory_buf_get_by_data")]
    pub fn buf_get_by_data<'a>(
        &'a self,
        mmap: &'a Mmap,
        data: *mut u8,
        data_len: usize,
    ) -> Result<Buf<'a>> {
        self.buf_get_by_args(mmap, data, data_len, data, data_len)
    }
}

impl Drop for BufInventory {
    #[doc(alias = "doca_buf_inventory_destroy")]
    fn drop(&mut self) {
        // Buffers borrow the inventory, so none is left.
        let _ = doca!(doca_buf_inventory_destroy(self.raw));
    }
}

/// `doca_buf`: a region of an mmap and the data inside it. Dropping it releases its reference.
#[doc(alias = "doca_buf")]
pub struct Buf<'a> {
    raw: *mut sys::doca_buf,
    _borrow: PhantomData<&'a Mmap>,
}

impl fmt::Debug for Buf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buf")
            .field("data_len", &self.data_len().ok())
            .finish()
    }
}

impl Buf<'_> {
    /// Wraps a buffer DOCA handed out with one reference.
    ///
    /// # Safety
    /// `raw` is a live `doca_buf` whose reference the new value owns (it drops it).
    pub(crate) unsafe fn from_raw(raw: *mut sys::doca_buf) -> Self {
        Buf {
            raw,
            _borrow: PhantomData,
        }
    }

    /// The `struct doca_buf *`, for calls through `dpakit-sys`; valid while `self` lives.
    pub fn as_raw(&self) -> *mut sys::doca_buf {
        self.raw
    }

    /// `doca_buf_get_head`: start of the region.
    #[doc(alias = "doca_buf_get_head")]
    pub fn head(&self) -> Result<*mut u8> {
        let mut p = std::ptr::null_mut();
        doca!(doca_buf_get_head(self.raw, &mut p))?;
        Ok(p.cast())
    }

    /// `doca_buf_get_len`: length of the region.
    #[doc(alias = "doca_buf_get_len")]
    pub fn len(&self) -> Result<usize> {
        let mut n = 0;
        doca!(doca_buf_get_len(self.raw, &mut n))?;
        Ok(n)
    }

    /// Whether the region is empty (never, for a buffer DOCA handed out).
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// `doca_buf_get_data`.
    #[doc(alias = "doca_buf_get_data")]
    pub fn data(&self) -> Result<*mut u8> {
        let mut p = std::ptr::null_mut();
        doca!(doca_buf_get_data(self.raw, &mut p))?;
        Ok(p.cast())
    }

    /// `doca_buf_get_data_len`.
    #[doc(alias = "doca_buf_get_data_len")]
    pub fn data_len(&self) -> Result<usize> {
        let mut n = 0;
        doca!(doca_buf_get_data_len(self.raw, &mut n))?;
        Ok(n)
    }

    /// `doca_buf_set_data`: the data window, inside the region.
    #[doc(alias = "doca_buf_set_data")]
    pub fn set_data(&self, data: *mut u8, data_len: usize) -> Result<()> {
        doca!(doca_buf_set_data(self.raw, data.cast(), data_len))
    }

    /// `doca_buf_set_data_len`.
    #[doc(alias = "doca_buf_set_data_len")]
    pub fn set_data_len(&self, data_len: usize) -> Result<()> {
        doca!(doca_buf_set_data_len(self.raw, data_len))
    }

    /// `doca_buf_reset_data_len`.
    #[doc(alias = "doca_buf_reset_data_len")]
    pub fn reset_data_len(&self) -> Result<()> {
        doca!(doca_buf_reset_data_len(self.raw))
    }

    /// `doca_buf_get_refcount`.
    #[doc(alias = "doca_buf_get_refcount")]
    pub fn refcount(&self) -> Result<u16> {
        let mut n = 0;
        doca!(doca_buf_get_refcount(self.raw, &mut n))?;
        Ok(n)
    }
}

impl Drop for Buf<'_> {
    #[doc(alias = "doca_buf_dec_refcount")]
    fn drop(&mut self) {
        let _ = doca!(doca_buf_dec_refcount(self.raw, std::ptr::null_mut()));
    }
}
