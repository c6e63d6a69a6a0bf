//! Reaching host memory registered in an mmap directly from the DPA.

use crate::sys;
use dpakit_abi::Pod;
use dpakit_abi::handles::{DevPtr, MemRange, MmapHandle};

/// `doca_dpa_dev_mmap_get_external_ptr`: the device pointer for address `addr` inside `mmap`.
///
/// Reading through it touches host memory, which is far slower than DPA memory; use it for data
/// the kernel must inspect (a checksum, a header), and DMA copy for bulk moves. [`HostMem`]
/// does the same with every access checked against the range the host handed over.
#[inline]
pub fn external_ptr(mmap: MmapHandle, addr: u64) -> DevPtr {
    // SAFETY: plain value arguments; the device validates the handle and range.
    DevPtr(unsafe { sys::doca_dpa_dev_mmap_get_external_ptr(mmap.raw(), addr) })
}

/// A range of host memory registered in an mmap, as a kernel reaches it: reads and writes in
/// place through the mmap's external pointer and sub-ranges for DMA copies, each checked to stay
/// inside the range, so a kernel needs no `unsafe` to touch host memory.
///
/// The host hands the range over typed ([`MemRange`], from `Mmap::dpa_range`); a kernel takes
/// it with [`HostMem::new`] or [`HostMem::from_parts`].
///
/// A kernel that answers each offset with the `u64` of host memory there:
///
/// ```
/// use dpakit::abi::args::MsgqPathArgs;
/// use dpakit::abi::handles::MemRange;
/// use dpakit::mmap::{AccessFlags, Mmap};
/// use dpakit_dev::mmap::HostMem;
/// use std::time::Duration;
///
/// dpakit::abi::pod_struct! {
///     /// The kernel's argument block: its path and the host memory it reads.
///     #[derive(Debug, Default)]
///     pub struct PeekArgs { pub path: MsgqPathArgs, pub mem: MemRange }
/// }
/// dpakit::thread_kernel! {
///     /// Answers each offset (8 bytes) with the value there, or `u64::MAX` past the range.
///     pub PEEK: fn doc_peek(args: &PeekArgs) {
///         let mem = HostMem::new(args.mem);
///         dpakit_dev::serve::serve(&args.path, |msg, producer, flags| {
///             let mut offset = [0u8; 8];
///             offset.copy_from_slice(&msg.imm()[..8]);
///             let value = mem.read_value::<u64>(u64::from_le_bytes(offset)).unwrap_or(u64::MAX);
///             let _ = producer.post_send_imm_only(args.path.cpu_consumer_id, &value.to_le_bytes(), flags);
///         })
///     }
/// }
/// dpakit::dpa_app! {
///     /// The example's app.
///     pub APP = doc_peek_app [PEEK]
/// }
///
/// # fn main() -> dpakit::Result<()> {
/// let dev = dpakit::open_dpa_dev()?;
/// let dpa = dpakit::dpa::Dpa::builder(&dev).app(&APP).start()?;
/// let mut memory = Mmap::alloc(64)?;
/// memory.as_mut_slice()?[8..16].copy_from_slice(&42u64.to_le_bytes());
/// memory.set_permissions(AccessFlags::LOCAL_READ_WRITE)?;
/// memory.add_dev(&dev)?;
/// memory.start()?;
/// let mem = memory.dpa_range(&dev)?;
/// let pe = dpakit::pe::Pe::new()?;
/// let path = dpakit::MsgqPath::builder(&dpa, &pe, &PEEK)
///     .args(move |path| PeekArgs { path, mem })
///     .start()?;
/// let wait = Duration::from_secs(5);
/// path.send(&8u64.to_le_bytes())?;
/// assert_eq!(path.recv(wait)?.bytes(), 42u64.to_le_bytes());
/// path.send(&60u64.to_le_bytes())?; // its 8 bytes would end past the 64
/// assert_eq!(path.recv(wait)?.bytes(), u64::MAX.to_le_bytes());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostMem {
    range: MemRange,
}

impl HostMem {
    /// The range the host handed over.
    #[inline]
    pub const fn new(range: MemRange) -> Self {
        Self { range }
    }

    /// The range `len` bytes from `base` in `mmap`.
    #[inline]
    pub const fn from_parts(mmap: MmapHandle, base: u64, len: u64) -> Self {
        Self {
            range: MemRange {
                base,
                len,
                mmap,
                reserved: 0,
            },
        }
    }

    /// Its length in bytes.
    #[inline]
    pub const fn len(&self) -> u64 {
        self.range.len
    }

    /// Whether it holds no byte.
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.range.len == 0
    }

    /// The mmap it lies in.
    #[inline]
    pub const fn mmap(&self) -> MmapHandle {
        self.range.mmap
    }

    /// The address of its first byte (what DMA copies take).
    #[inline]
    pub const fn addr(&self) -> u64 {
        self.range.base
    }

    /// The `len` bytes from `offset`, or `None` if they leave this range.
    #[inline]
    pub fn sub(&self, offset: u64, len: u64) -> Option<HostMem> {
        let end = offset.checked_add(len)?;
        (end <= self.range.len)
            .then(|| Self::from_parts(self.range.mmap, self.range.base + offset, len))
    }

    /// Calls `f` with the range's bytes, read in place through the mmap's external pointer.
    /// The host must not write the range meanwhile (DOCA's rule for memory a device reads).
    #[inline]
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        if self.range.len == 0 {
            return f(&[]);
        }
        let ptr = external_ptr(self.range.mmap, self.range.base);
        // SAFETY: the range is host memory the host registered in the mmap and handed to this
        // kernel, mapped for reading by the external pointer for its whole length; it stays
        // registered while the kernel runs, and the host does not write it meanwhile (the
        // contract above). The soft device checks every access of an ISA-mode kernel.
        f(unsafe {
            core::slice::from_raw_parts(ptr.raw() as usize as *const u8, self.range.len as usize)
        })
    }

    /// Copies the bytes at `offset` into `buf`; `None` if they leave the range.
    #[inline]
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> Option<()> {
        let part = self.sub(offset, buf.len() as u64)?;
        part.with_bytes(|bytes| buf.copy_from_slice(bytes));
        Some(())
    }

    /// The value of type `T` at `offset` (any alignment); `None` if it leaves the range.
    #[inline]
    pub fn read_value<T: Pod>(&self, offset: u64) -> Option<T> {
        let part = self.sub(offset, size_of::<T>() as u64)?;
        // SAFETY: T is Pod: every bit pattern of its size is a valid T; the read is unaligned
        // and covers exactly size_of::<T>() bytes of the checked range.
        Some(part.with_bytes(|bytes| unsafe { bytes.as_ptr().cast::<T>().read_unaligned() }))
    }

    /// Writes `bytes` at `offset` in place (the mmap must grant the device write access); `None`
    /// if they leave the range.
    #[inline]
    pub fn write(&self, offset: u64, bytes: &[u8]) -> Option<()> {
        let part = self.sub(offset, bytes.len() as u64)?;
        if bytes.is_empty() {
            return Some(());
        }
        let ptr = external_ptr(part.range.mmap, part.range.base);
        // SAFETY: as in `with_bytes`, for writing: the checked range, mapped by the external
        // pointer; the host does not touch it while the kernel writes.
        unsafe {
            core::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                ptr.raw() as usize as *mut u8,
                bytes.len(),
            )
        };
        Some(())
    }
}
