//! Buffer pools (`doca_buf_pool`): buffers with a fixed place each in one mmap.

use crate::buf::Buf;
use crate::error::{Result, doca};
use crate::mmap::Mmap;
use dpakit_sys as sys;
use std::fmt;
use std::marker::PhantomData;

/// Configures a [`BufPool`] before it starts (DOCA's properties can only be set then).
#[derive(Debug)]
#[must_use = "a builder does nothing until `start` is called"]
pub struct BufPoolBuilder<'a> {
    mmap: &'a Mmap,
    num_elements: usize,
    element_size: usize,
    alignment: usize,
}

impl<'a> BufPoolBuilder<'a> {
    /// `doca_buf_pool_set_element_alignment`: each element starts at a multiple of
    /// `alignment` (a power of two; 1, no alignment, by default).
    #[doc(alias = "doca_buf_pool_set_element_alignment")]
    pub fn element_alignment(mut self, alignment: usize) -> Self {
        self.alignment = alignment;
        self
    }

    /// `doca_buf_pool_create`, the properties, then `doca_buf_pool_start`. The mmap must be
    /// started and large enough for the aligned elements (`INITIALIZATION` otherwise).
    #[doc(alias = "doca_buf_pool_create")]
    #[doc(alias = "doca_buf_pool_start")]
    pub fn start(self) -> Result<BufPool<'a>> {
        let mut raw = std::ptr::null_mut();
        doca!(doca_buf_pool_create(
            self.num_elements,
            self.element_size,
            self.mmap.raw(),
            &mut raw
        ))?;
        // From here on, dropping the pool destroys it.
        let pool = BufPool {
            raw,
            _mmap: PhantomData,
        };
        doca!(doca_buf_pool_set_element_alignment(raw, self.alignment))?;
        doca!(doca_buf_pool_start(raw))?;
        Ok(pool)
    }
}

/// `doca_buf_pool`: `num_elements` buffers of `element_size` bytes, each always over the same
/// bytes of its mmap. Taking one allocates nothing; dropping a [`Buf`] gives it back.
#[doc(alias = "doca_buf_pool")]
pub struct BufPool<'a> {
    raw: *mut sys::doca_buf_pool,
    _mmap: PhantomData<&'a Mmap>,
}

impl fmt::Debug for BufPool<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufPool")
            .field("num_elements", &self.num_elements().ok())
            .field("num_free_elements", &self.num_free_elements().ok())
            .finish()
    }
}

impl<'a> BufPool<'a> {
    /// A pool of `num_elements` elements of `element_size` bytes in `mmap`.
    pub fn builder(mmap: &'a Mmap, num_elements: usize, element_size: usize) -> BufPoolBuilder<'a> {
        BufPoolBuilder {
            mmap,
            num_elements,
            element_size,
            alignment: 1,
        }
    }

    /// `doca_buf_pool_buf_alloc`: an empty buffer over a free element (`EMPTY` when every
    /// element is taken).
    #[doc(alias = "doca_buf_pool_buf_alloc")]
    pub fn alloc(&self) -> Result<Buf<'_>> {
        let mut raw = std::ptr::null_mut();
        doca!(doca_buf_pool_buf_alloc(self.raw, &mut raw))?;
        // SAFETY: DOCA handed out this buffer with one reference, which the Buf now owns.
        Ok(unsafe { Buf::from_raw(raw) })
    }

    /// `doca_buf_pool_get_num_elements`.
    #[doc(alias = "doca_buf_pool_get_num_elements")]
    pub fn num_elements(&self) -> Result<u32> {
        let mut n = 0;
        doca!(doca_buf_pool_get_num_elements(self.raw, &mut n))?;
        Ok(n)
    }

    /// `doca_buf_pool_get_num_free_elements`.
    #[doc(alias = "doca_buf_pool_get_num_free_elements")]
    pub fn num_free_elements(&self) -> Result<u32> {
        let mut n = 0;
        doca!(doca_buf_pool_get_num_free_elements(self.raw, &mut n))?;
        Ok(n)
    }

    /// `doca_buf_pool_get_element_alignment`.
    #[doc(alias = "doca_buf_pool_get_element_alignment")]
    pub fn element_alignment(&self) -> Result<usize> {
        let mut a = 0;
        doca!(doca_buf_pool_get_element_alignment(self.raw, &mut a))?;
        Ok(a)
    }
}

impl Drop for BufPool<'_> {
    #[doc(alias = "doca_buf_pool_destroy")]
    fn drop(&mut self) {
        // Buffers borrow the pool, so none is out; destroy stops the pool.
        let _ = doca!(doca_buf_pool_destroy(self.raw));
    }
}
