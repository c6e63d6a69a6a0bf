//! DPA device memory (`doca_dpa_mem_alloc` …) and mmap views for DMA.
//!
//! Device memory on the soft device is host memory owned by the DPA context; a device pointer is
//! its address, so kernels dereference it as they would on the DPA. Every copy is checked to lie
//! inside one live allocation.

use super::DpaShared;
use super::grace::{Grace, Snapshot};
use crate::DeviceId;
use crate::error::{Result, bail};
use crate::sync::Ordering;
use crate::sync::plain::AtomicU64;
use crate::table::Table;
use dpakit_abi::handles::MmapHandle;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

pub use dpakit_abi::handles::DevPtr;

/// Counts the times memory a kernel could reach stopped being reachable: an allocation freed,
/// an mmap handle retired. ISA mode keeps what it checked (windows, direct ranges) only while
/// this stays the same, so nothing it keeps outlives the grant behind it.
static REACH_GENERATION: AtomicU64 = AtomicU64::new(0);

/// The current [`REACH_GENERATION`]: one plain load, made before each direct access.
#[inline(always)]
pub(crate) fn reach_generation() -> u64 {
    REACH_GENERATION.load(Ordering::Relaxed)
}

/// Call after making memory unreachable (the slot or map entry is gone already): a reader that
/// sees the new generation checks again and finds it gone.
fn unreachable_now() {
    REACH_GENERATION.fetch_add(1, Ordering::Release);
}

/// 64-byte aligned storage unit.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([u8; 64]);

#[derive(Default)]
struct Allocations {
    /// Start address → (storage, requested length).
    by_addr: BTreeMap<u64, (Box<[Line]>, usize)>,
    total: usize,
    /// Freed storage a kernel running in ISA mode may still be reading: dropped once the
    /// context's workers and host readers have passed a quiescent point.
    retired: Vec<(Box<[Line]>, Snapshot)>,
}

impl std::fmt::Debug for Allocations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Allocations")
            .field("live", &self.by_addr.len())
            .field("total", &self.total)
            .field("retired", &self.retired.len())
            .finish()
    }
}

impl std::fmt::Debug for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Line")
    }
}

#[derive(Debug)]
pub struct DeviceMemory {
    limit: usize,
    allocations: Mutex<Allocations>,
}

impl DeviceMemory {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            allocations: Mutex::new(Allocations::default()),
        }
    }

    pub fn alloc(&self, size: usize) -> Result<DevPtr> {
        if size == 0 {
            bail!(InvalidValue, "doca_dpa_mem_alloc of 0 bytes");
        }
        let mut a = self.allocations.lock().unwrap_or_else(|p| p.into_inner());
        if a.total
            .checked_add(size)
            .is_none_or(|total| total > self.limit)
        {
            bail!(
                NoMemory,
                "DPA device memory exhausted: {} bytes in use, {size} requested, limit {} bytes",
                a.total,
                self.limit
            );
        }
        let storage: Box<[Line]> = vec![Line([0; 64]); size.div_ceil(64)].into_boxed_slice();
        let addr = storage.as_ptr() as u64;
        let (storage, _) = a.by_addr.entry(addr).or_insert((storage, size));
        // Kernels and copies write through the address: expose it from a mutable borrow, taken
        // once the storage is in place (a pointer from `as_ptr` is read-only).
        let _ = storage.as_mut_ptr().expose_provenance();
        a.total += size;
        Ok(DevPtr(addr))
    }

    /// `doca_dpa_mem_free`: the address is invalid at once; the storage goes after a grace
    /// period of `grace` (an ISA-mode activation checks an address, then reads it).
    pub fn free(&self, ptr: DevPtr, grace: &Grace) -> Result<()> {
        let mut a = self.allocations.lock().unwrap_or_else(|p| p.into_inner());
        a.retired
            .retain_mut(|(_, snapshot)| !grace.elapsed(snapshot));
        match a.by_addr.remove(&ptr.raw()) {
            Some((storage, size)) => {
                a.total -= size;
                a.retired.push((storage, grace.snapshot()));
                unreachable_now();
                Ok(())
            }
            None => bail!(
                InvalidValue,
                "doca_dpa_mem_free of {:#x}: not the start of a live allocation",
                ptr.raw()
            ),
        }
    }

    /// The live allocation `[start, end)` holding `[addr, addr + len)`, if one does. Its
    /// storage stays valid until the caller's next quiescent point, even if it is freed.
    pub fn allocation_containing(&self, addr: u64, len: u64) -> Option<(u64, u64)> {
        let a = self.allocations.lock().unwrap_or_else(|p| p.into_inner());
        let (&start, (_, size)) = a.by_addr.range(..=addr).next_back()?;
        let end = start + *size as u64;
        (addr.checked_add(len)? <= end).then_some((start, end))
    }

    /// Runs `f` on the range `[ptr, ptr + len)` if it lies inside one live allocation.
    fn with_range<R>(
        &self,
        ptr: DevPtr,
        len: usize,
        what: &str,
        f: impl FnOnce(*mut u8) -> R,
    ) -> Result<R> {
        let a = self.allocations.lock().unwrap_or_else(|p| p.into_inner());
        let addr = ptr.raw();
        let inside = a
            .by_addr
            .range(..=addr)
            .next_back()
            .is_some_and(|(&start, (_, size))| {
                addr.checked_add(len as u64)
                    .is_some_and(|end| end <= start + *size as u64)
            });
        if !inside {
            bail!(
                InvalidValue,
                "{what}: {len} bytes at {addr:#x} are not inside one DPA memory allocation"
            );
        }
        Ok(f(addr as usize as *mut u8))
    }

    /// The host address of `[ptr, ptr + len)` if it lies inside one live allocation.
    pub fn range_ptr(&self, ptr: DevPtr, len: usize, what: &str) -> Result<*mut u8> {
        self.with_range(ptr, len, what, |p| p)
    }

    pub fn h2d(&self, dst: DevPtr, src: &[u8]) -> Result<()> {
        self.with_range(dst, src.len(), "doca_dpa_h2d_memcpy", |p| {
            // SAFETY: the range is inside a live allocation (checked under the lock, held during
            // the copy), and `src` is a separate host slice.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), p, src.len()) }
        })
    }

    pub fn d2h(&self, dst: &mut [u8], src: DevPtr) -> Result<()> {
        self.with_range(src, dst.len(), "doca_dpa_d2h_memcpy", |p| {
            // SAFETY: as in h2d, in the other direction.
            unsafe { std::ptr::copy_nonoverlapping(p, dst.as_mut_ptr(), dst.len()) }
        })
    }

    pub fn memset(&self, dst: DevPtr, value: u8, size: usize) -> Result<()> {
        self.with_range(dst, size, "doca_dpa_memset", |p| {
            // SAFETY: the range is inside a live allocation.
            unsafe { std::ptr::write_bytes(p, value, size) }
        })
    }
}

/// What DMA needs to know about an mmap, captured when its DPA handle is taken.
#[derive(Debug)]
pub struct MmapView {
    pub base: u64,
    pub len: u64,
    pub readable: bool,
    pub writable: bool,
    /// The device whose DPAs may use the handle.
    pub device: DeviceId,
    /// Keeps the memory registered while the handle exists (the layer above's mmap).
    pub keep: Box<dyn std::fmt::Debug + Send + Sync>,
}

impl MmapView {
    /// Whether `[addr, addr + len)` lies inside the mmap's range (overflow-safe).
    #[inline]
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        addr >= self.base
            && addr
                .checked_add(len)
                .is_some_and(|end| end <= self.base + self.len)
    }
}

/// Most mmap DPA handles alive at once in a process.
const MAX_MMAP_HANDLES: usize = 1 << 16;

/// The mmap handles of every device. `doca_dpa_dev_mmap_t` names an mmap for all DPAs of one
/// device (`doca_mmap_dev_get_dpa_handle` takes the device, not a DPA), so the table is
/// process-wide and each entry records its device.
fn handles() -> &'static Table<MmapView> {
    static HANDLES: OnceLock<Table<MmapView>> = OnceLock::new();
    HANDLES.get_or_init(|| Table::new(MAX_MMAP_HANDLES))
}

/// Registers an mmap's view for the DPAs of its device (`doca_mmap_dev_get_dpa_handle`, whose
/// rules the layer above checked); returns the handle kernels use.
pub fn register_mmap_view(view: MmapView) -> Result<MmapHandle> {
    let Some(index) = handles().insert(Arc::new(view)) else {
        bail!(
            NoMemory,
            "{MAX_MMAP_HANDLES} mmap DPA handles are alive: destroy mmaps that are no longer used"
        );
    };
    Ok(MmapHandle(index as u32 + 1))
}

/// Readers of the process-wide handle table: device functions of every DPA, which count
/// themselves in while they use a view (there are no workers to report quiescent points).
fn readers() -> &'static Grace {
    static READERS: OnceLock<Grace> = OnceLock::new();
    READERS.get_or_init(|| Grace::new(0))
}

/// Retires a handle (its mmap is being destroyed): kernels using it afterwards fault. The
/// view, and the registration of the mmap's memory it holds, go once no device function can
/// be using it.
pub fn unregister_mmap(handle: MmapHandle) {
    if let Some(index) = (handle.raw() as usize).checked_sub(1) {
        handles().retire(index, readers());
        unreachable_now();
    }
}

/// The views behind `mmaps`, as [`with_mmaps`] finds them, held: each keeps its memory
/// registered for as long as the caller keeps it, even once its handle is retired.
pub(crate) fn hold_mmaps<const N: usize>(
    dpa: &DpaShared,
    mmaps: [u32; N],
) -> [Option<Arc<MmapView>>; N] {
    let _reading = readers().host();
    mmaps.map(|handle| {
        let index = (handle as usize).checked_sub(1)?;
        handles()
            .get_arc(index)
            .filter(|view| view.device == dpa.device)
    })
}

/// Runs `f` with the views behind `mmaps` (`None` for a handle that is not one of `dpa`'s
/// device). The views, and the memory they describe, stay alive while `f` runs; `f` must
/// not end the activation (fault after it returned).
#[inline]
pub fn with_mmaps<const N: usize, R>(
    dpa: &DpaShared,
    mmaps: [u32; N],
    f: impl FnOnce([Option<&MmapView>; N]) -> R,
) -> R {
    let _reading = readers().host();
    let views = mmaps.map(|handle| {
        let index = (handle as usize).checked_sub(1)?;
        handles()
            .get(index)
            .filter(|view| view.device == dpa.device)
    });
    f(views)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpakit_abi::ErrorCode;

    #[test]
    fn copies_stay_inside_one_allocation() {
        let m = DeviceMemory::new(1 << 20);
        let p = m.alloc(100).unwrap();
        m.h2d(p, &[7; 100]).unwrap();
        let mut out = [0u8; 100];
        m.d2h(&mut out, p).unwrap();
        assert_eq!(out, [7; 100]);
        assert_eq!(
            m.h2d(p, &[0; 101]).unwrap_err().code(),
            ErrorCode::InvalidValue
        );
        assert_eq!(
            m.memset(DevPtr(p.raw() + 50), 1, 51).unwrap_err().code(),
            ErrorCode::InvalidValue
        );
        m.memset(DevPtr(p.raw() + 50), 1, 50).unwrap();
        let grace = Grace::new(0);
        m.free(p, &grace).unwrap();
        assert_eq!(
            m.free(p, &grace).unwrap_err().code(),
            ErrorCode::InvalidValue
        );
        assert_eq!(
            m.d2h(&mut out, p).unwrap_err().code(),
            ErrorCode::InvalidValue
        );
    }

    #[test]
    fn unregistered_mmap_handles_are_freed() {
        let memory = vec![0u8; 4096];
        // A few rounds show the same under miri, where each costs seconds.
        for _ in 0..if cfg!(miri) { 5 } else { 100 } {
            let view = MmapView {
                base: memory.as_ptr() as u64,
                len: memory.len() as u64,
                readable: true,
                writable: true,
                device: DeviceId::new(0, 0),
                keep: Box::new(()),
            };
            let handle = register_mmap_view(view).unwrap();
            unregister_mmap(handle);
        }
        // No device function is using a view: none waits to be freed.
        assert_eq!(handles().retained(readers()), 0);
    }

    #[test]
    fn the_limit_is_enforced() {
        let m = DeviceMemory::new(1000);
        let p = m.alloc(600).unwrap();
        assert_eq!(m.alloc(600).unwrap_err().code(), ErrorCode::NoMemory);
        m.free(p, &Grace::new(0)).unwrap();
        m.alloc(600).unwrap();
        assert_eq!(m.alloc(0).unwrap_err().code(), ErrorCode::InvalidValue);
    }
}
