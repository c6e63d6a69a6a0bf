//! Reaching host memory registered in an mmap directly from the DPA.

use crate::sys;
use dpakit_abi::handles::{DevPtr, MmapHandle};

/// `doca_dpa_dev_mmap_get_external_ptr`: the device pointer for address `addr` inside `mmap`.
///
/// Reading through it touches host memory, which is far slower than DPA memory; use it for data
/// the kernel must inspect (a checksum, a header), and DMA copy for bulk moves.
#[inline]
pub fn external_ptr(mmap: MmapHandle, addr: u64) -> DevPtr {
    // SAFETY: plain value arguments; the device validates the handle and range.
    DevPtr(unsafe { sys::doca_dpa_dev_mmap_get_external_ptr(mmap.raw(), addr) })
}
