//! Memory maps (`doca_mmap`): memory registered with the devices that may reach it.

use crate::dev::Dev;
use crate::error::{Result, bail, check, doca};
use dpakit_abi::handles::{MemRange, MmapHandle};
use dpakit_sys as sys;
use std::alloc::Layout;
use std::cell::Cell;
use std::fmt;
use std::ptr::NonNull;

/// `enum doca_access_flag`: who may read and write an mmap's memory, with DOCA's values. The
/// local device can always read; the other bits grant more.
#[doc(alias = "doca_access_flag")]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct AccessFlags(u32);

impl AccessFlags {
    /// `DOCA_ACCESS_FLAG_LOCAL_READ_ONLY` (0).
    pub const LOCAL_READ_ONLY: AccessFlags = AccessFlags(sys::DOCA_ACCESS_FLAG_LOCAL_READ_ONLY);
    /// `DOCA_ACCESS_FLAG_LOCAL_READ_WRITE`.
    pub const LOCAL_READ_WRITE: AccessFlags = AccessFlags(sys::DOCA_ACCESS_FLAG_LOCAL_READ_WRITE);
    /// `DOCA_ACCESS_FLAG_RDMA_READ`.
    pub const RDMA_READ: AccessFlags = AccessFlags(sys::DOCA_ACCESS_FLAG_RDMA_READ);
    /// `DOCA_ACCESS_FLAG_RDMA_WRITE`.
    pub const RDMA_WRITE: AccessFlags = AccessFlags(sys::DOCA_ACCESS_FLAG_RDMA_WRITE);
    /// `DOCA_ACCESS_FLAG_RDMA_ATOMIC`.
    pub const RDMA_ATOMIC: AccessFlags = AccessFlags(sys::DOCA_ACCESS_FLAG_RDMA_ATOMIC);
    /// `DOCA_ACCESS_FLAG_PCI_READ_ONLY`.
    pub const PCI_READ_ONLY: AccessFlags = AccessFlags(sys::DOCA_ACCESS_FLAG_PCI_READ_ONLY);
    /// `DOCA_ACCESS_FLAG_PCI_READ_WRITE`: what Comch fast-path consumers need on their buffers.
    pub const PCI_READ_WRITE: AccessFlags = AccessFlags(sys::DOCA_ACCESS_FLAG_PCI_READ_WRITE);
    /// `DOCA_ACCESS_FLAG_PCI_RELAXED_ORDERING`.
    pub const PCI_RELAXED_ORDERING: AccessFlags =
        AccessFlags(sys::DOCA_ACCESS_FLAG_PCI_RELAXED_ORDERING);

    /// Flags from a raw `access_mask` (the device checks the bits).
    pub const fn from_bits(bits: u32) -> Self {
        Self(bits)
    }

    /// The raw `access_mask`.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: AccessFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether a device may write the memory (locally, by RDMA or over PCI).
    pub const fn lets_devices_write(self) -> bool {
        let writers = Self::LOCAL_READ_WRITE.0
            | Self::RDMA_WRITE.0
            | Self::RDMA_ATOMIC.0
            | Self::PCI_READ_WRITE.0;
        self.0 & writers != 0
    }
}

impl std::ops::BitOr for AccessFlags {
    type Output = AccessFlags;

    fn bitor(self, rhs: AccessFlags) -> AccessFlags {
        AccessFlags(self.0 | rhs.0)
    }
}

impl fmt::Debug for AccessFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AccessFlags({:#x})", self.0)
    }
}

/// Memory the mmap owns (from [`Mmap::alloc`]), freed after the mmap is destroyed.
struct Owned {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout by Mmap::alloc, freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// `doca_mmap`. Configure (memrange, permissions, devices), then [`start`](Mmap::start).
///
/// ```
/// use dpakit::mmap::{AccessFlags, Mmap};
///
/// # fn main() -> dpakit::Result<()> {
/// let dev = dpakit::open_dpa_dev()?;
/// // 4 KiB the mmap owns, which the device may read and write.
/// let mut mmap = Mmap::alloc(4096)?;
/// // Filled before start: once started, devices may read it at any time.
/// mmap.as_mut_slice()?[..5].copy_from_slice(b"hello");
/// mmap.set_permissions(AccessFlags::LOCAL_READ_WRITE)?;
/// mmap.add_dev(&dev)?;
/// mmap.start()?;
/// // Its handle travels to a DPA kernel, which reaches the memory through it.
/// let _handle = mmap.dpa_handle(&dev)?;
/// # Ok(())
/// # }
/// ```
#[doc(alias = "doca_mmap")]
pub struct Mmap {
    raw: *mut sys::doca_mmap,
    range: (*mut u8, usize),
    devs: std::cell::RefCell<Vec<Dev>>,
    /// The permissions set, and whether the mmap was started: what decides which views of the
    /// memory are sound (see [`Mmap::as_slice`]).
    access: Cell<AccessFlags>,
    started: Cell<bool>,
    /// Memory of [`Mmap::alloc`], dropped after `raw` is destroyed (see Drop).
    _owned: Option<Owned>,
}

impl fmt::Debug for Mmap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mmap")
            .field("addr", &self.range.0)
            .field("len", &self.range.1)
            .finish()
    }
}

impl Mmap {
    /// Alignment of [`Mmap::alloc`] memory: one cache line.
    pub const ALLOC_ALIGN: usize = 64;

    /// `doca_mmap_create` + `doca_mmap_set_memrange` over `len` zeroed bytes the mmap owns.
    #[doc(alias = "doca_mmap_create")]
    pub fn alloc(len: usize) -> Result<Mmap> {
        Self::alloc_aligned(len, Self::ALLOC_ALIGN)
    }

    /// [`alloc`](Self::alloc) with memory aligned to `align` (a power of two), e.g. a page for
    /// receive buffers a device or a peer writes into.
    pub fn alloc_aligned(len: usize, align: usize) -> Result<Mmap> {
        if len == 0 {
            bail!(InvalidValue, "an mmap covers at least one byte");
        }
        let Ok(layout) = Layout::from_size_align(len, align) else {
            bail!(
                InvalidValue,
                "cannot lay out {len} bytes aligned to {align}"
            );
        };
        // SAFETY: `layout` has a non-zero size.
        let Some(ptr) = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }) else {
            bail!(NoMemory, "allocating {len} bytes for the mmap failed");
        };
        let owned = Owned { ptr, layout };
        let mut raw = std::ptr::null_mut();
        doca!(doca_mmap_create(&mut raw))?;
        let mmap = Mmap {
            raw,
            range: (ptr.as_ptr(), len),
            devs: Default::default(),
            // DOCA's default, which its DMA samples rely on: local devices read and write.
            access: Cell::new(AccessFlags::LOCAL_READ_WRITE),
            started: Cell::new(false),
            _owned: Some(owned),
        };
        // SAFETY: the memory is owned by the mmap and freed only after doca_mmap_destroy.
        let rc = unsafe { sys::doca_mmap_set_memrange(raw, ptr.as_ptr().cast(), len) };
        check("doca_mmap_set_memrange", rc)?;
        Ok(mmap)
    }

    /// `doca_mmap_set_permissions`: before start. Takes `&mut self` so no view of the memory
    /// ([`as_slice`](Self::as_slice)) outlives a change of who may write it.
    #[doc(alias = "doca_mmap_set_permissions")]
    pub fn set_permissions(&mut self, access: AccessFlags) -> Result<()> {
        doca!(doca_mmap_set_permissions(self.raw, access.bits()))?;
        self.access.set(access);
        Ok(())
    }

    /// `doca_mmap_add_dev`: a device that may reach the memory (and take DPA handles for it).
    #[doc(alias = "doca_mmap_add_dev")]
    pub fn add_dev(&self, dev: &Dev) -> Result<()> {
        doca!(doca_mmap_add_dev(self.raw, dev.raw()))?;
        self.devs.borrow_mut().push(dev.clone());
        Ok(())
    }

    /// `doca_mmap_start`: from now on devices may reach the memory. Takes `&mut self` so no
    /// view taken before start outlives it.
    #[doc(alias = "doca_mmap_start")]
    pub fn start(&mut self) -> Result<()> {
        doca!(doca_mmap_start(self.raw))?;
        self.started.set(true);
        Ok(())
    }

    /// The registered memory: `(address, length)`.
    pub fn range(&self) -> (*mut u8, usize) {
        self.range
    }

    /// The memory, to fill before [`start`](Self::start). Once started, devices may read it
    /// (a DMA source) at any time, so no exclusive view is handed out: `BAD_STATE`.
    pub fn as_mut_slice(&mut self) -> Result<&mut [u8]> {
        if self.started.get() {
            bail!(
                BadState,
                "the mmap is started: devices may read its memory at any time, so it cannot be \
                 borrowed mutably; fill it before doca_mmap_start"
            );
        }
        // SAFETY: the mmap owns `range` (Mmap::alloc), nothing else can reach it before start,
        // and `&mut self` makes this the only view.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.range.0, self.range.1) })
    }

    /// The memory, shared: before [`start`](Self::start), or after it while no device may
    /// write it (permissions without a write bit, e.g. a DMA source set to
    /// [`AccessFlags::LOCAL_READ_ONLY`]; an mmap lets local devices write until
    /// [`set_permissions`](Self::set_permissions) says otherwise). Memory devices may write
    /// changes under any view: `BAD_STATE`, read it with [`read_at`](Self::read_at).
    pub fn as_slice(&self) -> Result<&[u8]> {
        let access = self.access.get();
        if self.started.get() && access.lets_devices_write() {
            bail!(
                BadState,
                "devices may write this started mmap ({access:?}), so a shared view could change \
                 under it; copy bytes out with Mmap::read_at once the device's writes are done"
            );
        }
        // SAFETY: the mmap owns `range`; before start no device reaches it, after it devices
        // only read it, and every host-side mutable view needs `&mut self`.
        Ok(unsafe { std::slice::from_raw_parts(self.range.0, self.range.1) })
    }

    /// Copies `buf.len()` bytes at `offset` into `buf`, with volatile reads (memory a device
    /// writes: read it after the device says its writes are done, e.g. after the kernel's
    /// reply). `INVALID_VALUE` past the end.
    pub fn read_at(&self, offset: usize, buf: &mut [u8]) -> Result<()> {
        if offset
            .checked_add(buf.len())
            .is_none_or(|end| end > self.range.1)
        {
            bail!(
                InvalidValue,
                "{} bytes at offset {offset} run past the mmap's {} bytes",
                buf.len(),
                self.range.1
            );
        }
        for (i, b) in buf.iter_mut().enumerate() {
            // SAFETY: in bounds (checked) of memory the mmap owns while `self` lives.
            *b = unsafe { self.range.0.add(offset + i).read_volatile() };
        }
        Ok(())
    }

    /// `doca_mmap_dev_get_dpa_handle`: the handle DPA kernels of `dev` use for this mmap.
    #[doc(alias = "doca_mmap_dev_get_dpa_handle")]
    pub fn dpa_handle(&self, dev: &Dev) -> Result<MmapHandle> {
        let mut h = 0;
        doca!(doca_mmap_dev_get_dpa_handle(self.raw, dev.raw(), &mut h))?;
        Ok(MmapHandle(h))
    }

    /// The whole mmap as DPA kernels of `dev` reach it: its handle and memory range, typed, for
    /// a kernel's argument block (`dpakit_dev::mmap::HostMem` checks every access against it).
    pub fn dpa_range(&self, dev: &Dev) -> Result<MemRange> {
        Ok(MemRange {
            base: self.range.0 as u64,
            len: self.range.1 as u64,
            mmap: self.dpa_handle(dev)?,
            reserved: 0,
        })
    }

    pub(crate) fn raw(&self) -> *mut sys::doca_mmap {
        self.raw
    }

    /// The `struct doca_mmap *`, for calls through `dpakit-sys`; valid while `self` lives.
    pub fn as_raw(&self) -> *mut sys::doca_mmap {
        self.raw
    }
}

impl Drop for Mmap {
    #[doc(alias = "doca_mmap_destroy")]
    fn drop(&mut self) {
        // Buffers keep the mmap borrowed, so no `Buf` points into it any more; a DMA task in
        // flight still holds its buffers' references, and then the destroy is refused
        // (`IN_USE`): the memory is leaked rather than freed under the device's copy.
        if doca!(doca_mmap_destroy(self.raw)).is_err() {
            std::mem::forget(self._owned.take());
        }
        // Otherwise `_owned` drops after this, so the memory outlives the mmap.
    }
}
