//! `doca_mmap`: a registered memory range, the devices that may reach it and their permissions.
//!
//! Configure (memrange, permissions, devices), then [`Mmap::start`]; a started mmap rejects
//! configuration and is what buffers ([`crate::buf`]) and the DMA/DPA models accept. An mmap is
//! a shared handle: clones name the same mmap, and the memory it owns (see [`Mmap::alloc`],
//! [`Mmap::with_memory`]) lives until the last clone and the last buffer pointing into it are
//! gone, so a buffer can never outlive its memory.

use crate::dev::Dev;
use crate::error::{Error, ErrorCode};
use crate::limits::MMAP_MAX_LEN;
use crate::sync::Ordering;
use crate::sync::plain::AtomicU64;
use std::alloc::Layout;
use std::fmt;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

type Result<T, E = Error> = core::result::Result<T, E>;

// ---------------------------------------------------------------------------------------------
// Access flags
// ---------------------------------------------------------------------------------------------

/// `enum doca_access_flag`: who may read and write an mmap's memory, a bit set with DOCA's
/// values. The local device can always read; the other bits grant more.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct AccessFlags(u32);

impl AccessFlags {
    /// `DOCA_ACCESS_FLAG_LOCAL_READ_ONLY` (0): local devices read, nobody writes.
    pub const LOCAL_READ_ONLY: AccessFlags = AccessFlags(0);
    /// `DOCA_ACCESS_FLAG_LOCAL_READ_WRITE` (1 << 0): local devices read and write.
    pub const LOCAL_READ_WRITE: AccessFlags = AccessFlags(1 << 0);
    /// `DOCA_ACCESS_FLAG_RDMA_READ` (1 << 1): remote devices read over RDMA.
    pub const RDMA_READ: AccessFlags = AccessFlags(1 << 1);
    /// `DOCA_ACCESS_FLAG_RDMA_WRITE` (1 << 2): remote devices write over RDMA.
    pub const RDMA_WRITE: AccessFlags = AccessFlags(1 << 2);
    /// `DOCA_ACCESS_FLAG_RDMA_ATOMIC` (1 << 3): remote devices run RDMA atomics.
    pub const RDMA_ATOMIC: AccessFlags = AccessFlags(1 << 3);
    /// `DOCA_ACCESS_FLAG_PCI_READ_ONLY` (1 << 4): a device on the same PCI (the other side of the
    /// BlueField) reads, after `doca_mmap_export_pci`. Excludes `PCI_READ_WRITE`.
    pub const PCI_READ_ONLY: AccessFlags = AccessFlags(1 << 4);
    /// `DOCA_ACCESS_FLAG_PCI_READ_WRITE` (1 << 5): a device on the same PCI reads and writes.
    /// Excludes `PCI_READ_ONLY`. Comch fast-path consumers need it on their buffers.
    pub const PCI_READ_WRITE: AccessFlags = AccessFlags(1 << 5);
    /// `DOCA_ACCESS_FLAG_PCI_RELAXED_ORDERING` (1 << 6): PCI accesses may be reordered.
    pub const PCI_RELAXED_ORDERING: AccessFlags = AccessFlags(1 << 6);

    const KNOWN: u32 = (1 << 7) - 1;

    const NAMES: [(AccessFlags, &'static str); 7] = [
        (Self::LOCAL_READ_WRITE, "LOCAL_READ_WRITE"),
        (Self::RDMA_READ, "RDMA_READ"),
        (Self::RDMA_WRITE, "RDMA_WRITE"),
        (Self::RDMA_ATOMIC, "RDMA_ATOMIC"),
        (Self::PCI_READ_ONLY, "PCI_READ_ONLY"),
        (Self::PCI_READ_WRITE, "PCI_READ_WRITE"),
        (Self::PCI_RELAXED_ORDERING, "PCI_RELAXED_ORDERING"),
    ];

    /// Flags from a raw `access_mask`; `INVALID_VALUE` for bits DOCA does not define.
    pub fn from_bits(bits: u32) -> Result<Self> {
        if bits & !Self::KNOWN != 0 {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                format!(
                    "access mask {bits:#x} sets bits {:#x} that doca_access_flag does not define \
                     (known: 0x1..=0x40)",
                    bits & !Self::KNOWN
                ),
            ));
        }
        Ok(Self(bits))
    }

    /// The raw `access_mask`.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Whether every bit of `other` is set (`LOCAL_READ_ONLY`, having no bits, is always set).
    pub const fn contains(self, other: AccessFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Both sets of flags.
    pub const fn union(self, other: AccessFlags) -> AccessFlags {
        AccessFlags(self.0 | other.0)
    }

    /// `INVALID_VALUE` for a combination DOCA rejects (PCI read-only together with PCI read-write).
    fn validate(self) -> Result<()> {
        if self.contains(Self::PCI_READ_ONLY) && self.contains(Self::PCI_READ_WRITE) {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                "mmap permissions PCI_READ_ONLY and PCI_READ_WRITE are mutually exclusive: \
                 keep one of them",
            ));
        }
        Ok(())
    }
}

impl std::ops::BitOr for AccessFlags {
    type Output = AccessFlags;

    fn bitor(self, rhs: AccessFlags) -> AccessFlags {
        self.union(rhs)
    }
}

impl std::ops::BitOrAssign for AccessFlags {
    fn bitor_assign(&mut self, rhs: AccessFlags) {
        *self = self.union(rhs);
    }
}

impl fmt::Debug for AccessFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("LOCAL_READ_ONLY");
        }
        let mut first = true;
        for (flag, name) in Self::NAMES {
            if self.contains(flag) {
                if !first {
                    f.write_str(" | ")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Owned memory
// ---------------------------------------------------------------------------------------------

/// Memory an mmap allocated or was given, freed when the mmap's last handle goes.
enum OwnedMemory {
    /// From [`Mmap::alloc`]: `layout` describes the allocation at `ptr`.
    Aligned { ptr: NonNull<u8>, layout: Layout },
    /// From [`Mmap::with_memory`]: a leaked `Box<[u8]>`.
    Boxed { ptr: NonNull<u8>, len: usize },
}

// SAFETY: `OwnedMemory` uniquely owns a heap allocation; it holds no thread-bound state, and the
// allocation may be freed from any thread. Accesses to the bytes go through raw pointers whose
// users synchronise as device memory requires (a completion orders a DMA write before its read).
unsafe impl Send for OwnedMemory {}

impl Drop for OwnedMemory {
    fn drop(&mut self) {
        match *self {
            OwnedMemory::Aligned { ptr, layout } => {
                // SAFETY: `ptr` came from `alloc_zeroed(layout)` in `Mmap::alloc` and is freed once,
                // here.
                unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) }
            }
            OwnedMemory::Boxed { ptr, len } => {
                let slice = std::ptr::slice_from_raw_parts_mut(ptr.as_ptr(), len);
                // SAFETY: `slice` is the pointer `Box::into_raw` returned in `Mmap::with_memory`,
                // with its length; it is turned back into a box once, here.
                drop(unsafe { Box::from_raw(slice) })
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Mmap
// ---------------------------------------------------------------------------------------------

/// A raw pointer into registered memory that may be stored in shared objects. Keeping the
/// pointer (not its address) keeps its provenance, so pointers handed back are the caller's own.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawPtr(pub(crate) *mut u8);

// SAFETY: a `RawPtr` is only an address with provenance; owning or sharing one grants no access
// by itself. Code that dereferences it synchronises as device memory requires (see
// `Mmap::set_memrange`'s contract).
unsafe impl Send for RawPtr {}
// SAFETY: as for `Send`: `&RawPtr` only allows copying the pointer.
unsafe impl Sync for RawPtr {}

impl fmt::Debug for RawPtr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:p}", self.0)
    }
}

struct MmapState {
    /// `(start, length)` once `set_memrange` succeeded.
    memrange: Option<(RawPtr, usize)>,
    /// Memory the mmap frees on drop (declared after `memrange`, which points into it).
    owned: Option<OwnedMemory>,
    permissions: AccessFlags,
    devs: Vec<Dev>,
    started: bool,
    num_bufs: u32,
    user_data: u64,
}

struct MmapInner {
    id: u64,
    state: Mutex<MmapState>,
}

static NEXT_MMAP_ID: AtomicU64 = AtomicU64::new(1);

/// `doca_mmap`. Cheap to clone; clones are the same mmap.
#[derive(Clone)]
pub struct Mmap {
    inner: Arc<MmapInner>,
}

impl fmt::Debug for Mmap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.lock();
        let mut d = f.debug_struct("Mmap");
        d.field("id", &self.inner.id);
        match s.memrange {
            Some((addr, len)) => d.field("memrange", &format_args!("{:p}+{len:#x}", addr.0)),
            None => d.field("memrange", &"unset"),
        };
        d.field("owned", &s.owned.is_some())
            .field("permissions", &s.permissions)
            .field("devs", &s.devs.len())
            .field("started", &s.started)
            .field("num_bufs", &s.num_bufs)
            .finish()
    }
}

impl PartialEq for Mmap {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for Mmap {}

fn bad_state(message: &'static str) -> Error {
    Error::new(ErrorCode::BadState, message)
}

fn check_len(len: usize) -> Result<()> {
    if len == 0 {
        return Err(Error::new(
            ErrorCode::InvalidValue,
            "mmap memrange length is 0: register at least one byte",
        ));
    }
    if len > MMAP_MAX_LEN {
        return Err(Error::new(
            ErrorCode::InvalidValue,
            format!(
                "mmap memrange of {len} bytes exceeds the soft device's MMAP_MAX_LEN of \
                 {MMAP_MAX_LEN} bytes: split the memory over several mmaps"
            ),
        ));
    }
    Ok(())
}

impl Mmap {
    /// Alignment of [`Mmap::alloc`] memory: one cache line, the unit the soft device's rings and
    /// DMA work in.
    pub const ALLOC_ALIGN: usize = 64;

    /// `doca_mmap_create`: an mmap with no memory, no devices and local read-write permission.
    pub fn create() -> Result<Mmap> {
        Ok(Mmap {
            inner: Arc::new(MmapInner {
                id: NEXT_MMAP_ID.fetch_add(1, Ordering::Relaxed),
                state: Mutex::new(MmapState {
                    memrange: None,
                    owned: None,
                    permissions: AccessFlags::LOCAL_READ_WRITE,
                    devs: Vec::new(),
                    started: false,
                    num_bufs: 0,
                    user_data: 0,
                }),
            }),
        })
    }

    /// An mmap owning `len` zeroed bytes aligned to [`Mmap::ALLOC_ALIGN`], memrange already set.
    /// `INVALID_VALUE` for 0 or more than `MMAP_MAX_LEN` bytes, `NO_MEMORY` if allocation fails.
    pub fn alloc(len: usize) -> Result<Mmap> {
        check_len(len)?;
        let layout = Layout::from_size_align(len, Self::ALLOC_ALIGN).map_err(|_| {
            Error::new(
                ErrorCode::InvalidValue,
                format!("cannot lay out {len} bytes aligned to 64"),
            )
        })?;
        // SAFETY: `layout` has a non-zero size (checked by `check_len`).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(ptr) else {
            return Err(Error::new(
                ErrorCode::NoMemory,
                format!("allocating {len} bytes for the mmap failed"),
            ));
        };
        let owned = OwnedMemory::Aligned { ptr, layout };
        let mmap = Mmap::create()?;
        mmap.set_memrange_inner(ptr.as_ptr(), len, Some(owned))?;
        Ok(mmap)
    }

    /// An mmap owning `memory` (freed with the mmap), memrange already set. `INVALID_VALUE` for
    /// empty memory or more than `MMAP_MAX_LEN` bytes.
    pub fn with_memory(memory: Box<[u8]>) -> Result<Mmap> {
        let len = memory.len();
        check_len(len)?;
        let raw = Box::into_raw(memory);
        // A box of at least one byte is never null; `cast` keeps the address.
        let Some(ptr) = NonNull::new(raw.cast::<u8>()) else {
            return Err(Error::new(
                ErrorCode::Unexpected,
                "Box::into_raw returned null",
            ));
        };
        let owned = OwnedMemory::Boxed { ptr, len };
        let mmap = Mmap::create()?;
        mmap.set_memrange_inner(ptr.as_ptr(), len, Some(owned))?;
        Ok(mmap)
    }

    fn lock(&self) -> MutexGuard<'_, MmapState> {
        // A panic elsewhere while holding the lock leaves consistent state (every update is a
        // single assignment), so a poisoned lock is used as is.
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// `doca_mmap_set_memrange`: registers `[addr, addr + len)`. Once only: a second call is
    /// `NOT_PERMITTED`; after start, `BAD_STATE`; a null `addr`, a zero length, more than
    /// `MMAP_MAX_LEN` bytes or a range past the end of the address space is `INVALID_VALUE`.
    ///
    /// # Safety
    ///
    /// The range must be memory the caller may read and write and that stays allocated (neither
    /// freed nor moved) until the last clone of this mmap and of every buffer pointing into it is
    /// dropped, because the soft device's DMA and DPA models read and write it through raw
    /// pointers from any thread. While the soft device may write the range (a posted receive, a
    /// DMA destination), the caller must not hold Rust references to those bytes. Prefer
    /// [`Mmap::alloc`] or [`Mmap::with_memory`], which own their memory.
    pub unsafe fn set_memrange(&self, addr: *mut u8, len: usize) -> Result<()> {
        if addr.is_null() {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                "mmap memrange address is null: pass the start of the memory to register",
            ));
        }
        self.set_memrange_inner(addr, len, None)
    }

    fn set_memrange_inner(
        &self,
        addr: *mut u8,
        len: usize,
        owned: Option<OwnedMemory>,
    ) -> Result<()> {
        let mut s = self.lock();
        if s.started {
            return Err(bad_state(
                "mmap memrange cannot change after doca_mmap_start (call stop first; a memrange is \
                 set once, before the first start)",
            ));
        }
        if s.memrange.is_some() {
            return Err(Error::new(
                ErrorCode::NotPermitted,
                "mmap memrange was already set: doca_mmap_set_memrange is allowed once per mmap; \
                 create another mmap for other memory",
            ));
        }
        check_len(len)?;
        if addr.addr().checked_add(len).is_none() {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                format!("mmap memrange {addr:p}+{len:#x} overflows the address space"),
            ));
        }
        s.memrange = Some((RawPtr(addr), len));
        s.owned = owned;
        Ok(())
    }

    /// `doca_mmap_get_memrange`: the registered `(address, length)`; `BAD_STATE` if never set.
    pub fn get_memrange(&self) -> Result<(*mut u8, usize)> {
        match self.lock().memrange {
            Some((addr, len)) => Ok((addr.0, len)),
            None => Err(bad_state(
                "mmap memrange was never set: call set_memrange (or use Mmap::alloc / with_memory)",
            )),
        }
    }

    /// `doca_mmap_set_permissions`. `BAD_STATE` after start; `INVALID_VALUE` for PCI read-only
    /// together with PCI read-write (undefined bits are refused by [`AccessFlags::from_bits`]).
    pub fn set_permissions(&self, access: AccessFlags) -> Result<()> {
        let mut s = self.lock();
        if s.started {
            return Err(bad_state(
                "mmap permissions cannot change after doca_mmap_start: call set_permissions \
                 before start (or stop the mmap first)",
            ));
        }
        access.validate()?;
        s.permissions = access;
        Ok(())
    }

    /// The permissions (`LOCAL_READ_WRITE` until [`Mmap::set_permissions`]).
    pub fn get_permissions(&self) -> AccessFlags {
        self.lock().permissions
    }

    /// `doca_mmap_add_dev`: lets `dev` reach the memory. `NOT_PERMITTED` after start (as DOCA
    /// documents for this call), `ALREADY_EXIST` if `dev` was added before.
    pub fn add_dev(&self, dev: &Dev) -> Result<()> {
        let mut s = self.lock();
        if s.started {
            return Err(Error::new(
                ErrorCode::NotPermitted,
                "devices cannot be added to a started mmap: call add_dev before doca_mmap_start \
                 (or stop the mmap first)",
            ));
        }
        if s.devs.contains(dev) {
            return Err(Error::new(
                ErrorCode::AlreadyExist,
                format!(
                    "device {} was already added to this mmap",
                    dev.as_devinfo().pci_addr()
                ),
            ));
        }
        s.devs.push(dev.clone());
        Ok(())
    }

    /// `doca_mmap_rm_dev`. `NOT_PERMITTED` after start, `NOT_FOUND` if `dev` was never added.
    pub fn rm_dev(&self, dev: &Dev) -> Result<()> {
        let mut s = self.lock();
        if s.started {
            return Err(Error::new(
                ErrorCode::NotPermitted,
                "devices cannot be removed from a started mmap: stop it first",
            ));
        }
        let Some(pos) = s.devs.iter().position(|d| d == dev) else {
            return Err(Error::new(
                ErrorCode::NotFound,
                format!(
                    "device {} was never added to this mmap",
                    dev.as_devinfo().pci_addr()
                ),
            ));
        };
        s.devs.remove(pos);
        Ok(())
    }

    /// The devices added with [`Mmap::add_dev`].
    pub fn devs(&self) -> Vec<Dev> {
        self.lock().devs.clone()
    }

    /// Whether `dev` was added (the DMA and DPA models refuse devices that were not).
    pub fn has_dev(&self, dev: &Dev) -> bool {
        self.lock().devs.contains(dev)
    }

    /// `doca_mmap_set_user_data`; `BAD_STATE` after start.
    pub fn set_user_data(&self, user_data: u64) -> Result<()> {
        let mut s = self.lock();
        if s.started {
            return Err(bad_state(
                "mmap user data cannot change after doca_mmap_start",
            ));
        }
        s.user_data = user_data;
        Ok(())
    }

    /// `doca_mmap_get_user_data` (0 if never set).
    pub fn get_user_data(&self) -> u64 {
        self.lock().user_data
    }

    /// `doca_mmap_start`: freezes the configuration. `INVALID_VALUE` without a memrange (it is
    /// mandatory), `BAD_STATE` if already started.
    pub fn start(&self) -> Result<()> {
        let mut s = self.lock();
        if s.started {
            return Err(bad_state(
                "mmap is already started (doca_mmap_start was called twice)",
            ));
        }
        if s.memrange.is_none() {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                "mmap memrange must be set before doca_mmap_start (call set_memrange, or create \
                 the mmap with Mmap::alloc / Mmap::with_memory)",
            ));
        }
        s.started = true;
        Ok(())
    }

    /// `doca_mmap_stop`: allows configuration again. `NOT_PERMITTED` while buffers point into
    /// the mmap (return them first), `BAD_STATE` if not started.
    pub fn stop(&self) -> Result<()> {
        let mut s = self.lock();
        if !s.started {
            return Err(bad_state(
                "mmap is not started: doca_mmap_stop needs a started mmap",
            ));
        }
        if s.num_bufs != 0 {
            return Err(Error::new(
                ErrorCode::NotPermitted,
                format!(
                    "{} buffer(s) still point into this mmap: return them (dec_refcount to 0 or \
                     drop them) before doca_mmap_stop",
                    s.num_bufs
                ),
            ));
        }
        s.started = false;
        Ok(())
    }

    /// `doca_mmap_get_num_bufs`: buffers currently pointing into the mmap.
    pub fn get_num_bufs(&self) -> u32 {
        self.lock().num_bufs
    }

    // --- helpers for the buffer, DMA and DPA models ---------------------------------------------

    /// A number unique to this mmap in the process, stable for its lifetime.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Whether the mmap is started.
    pub fn is_started(&self) -> bool {
        self.lock().started
    }

    /// The registered range as `(start, length)`; `(null, 0)` before `set_memrange`.
    pub fn range(&self) -> (*mut u8, usize) {
        match self.lock().memrange {
            Some((addr, len)) => (addr.0, len),
            None => (std::ptr::null_mut(), 0),
        }
    }

    /// Whether `[addr, addr + len)` lies inside the registered range. Never overflows; false
    /// before `set_memrange`.
    pub fn contains(&self, addr: usize, len: usize) -> bool {
        match self.lock().memrange {
            Some((start, range_len)) => range_contains((start.0.addr(), range_len), addr, len),
            None => false,
        }
    }

    /// Whether local devices may read: always, as DOCA documents ("the buffer can always be read
    /// locally, regardless of permissions").
    pub fn allows_local_read(&self) -> bool {
        true
    }

    /// Whether local devices may write (`LOCAL_READ_WRITE`).
    pub fn allows_local_write(&self) -> bool {
        self.get_permissions()
            .contains(AccessFlags::LOCAL_READ_WRITE)
    }

    /// Whether the other side of the PCI may read (`PCI_READ_ONLY` or `PCI_READ_WRITE`).
    pub fn allows_pci_read(&self) -> bool {
        let p = self.get_permissions();
        p.contains(AccessFlags::PCI_READ_ONLY) || p.contains(AccessFlags::PCI_READ_WRITE)
    }

    /// Whether the other side of the PCI may write (`PCI_READ_WRITE`).
    pub fn allows_pci_write(&self) -> bool {
        self.get_permissions().contains(AccessFlags::PCI_READ_WRITE)
    }

    /// Counts a buffer on `[addr, addr + len)`: `BAD_STATE` if the mmap is not started,
    /// `INVALID_VALUE` if the range is outside the memrange.
    #[allow(
        dead_code,
        reason = "used by crate::buf; lib.rs may not declare it in every build"
    )]
    pub(crate) fn acquire_buf(&self, addr: usize, len: usize) -> Result<()> {
        let mut s = self.lock();
        if !s.started {
            return Err(bad_state(
                "the mmap must be started before buffers are taken from it (call Mmap::start \
                 before doca_buf_inventory_buf_get_by_*)",
            ));
        }
        let Some((start, range_len)) = s.memrange else {
            return Err(bad_state("the mmap has no memrange"));
        };
        let range = (start.0.addr(), range_len);
        if !range_contains(range, addr, len) {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                format!(
                    "buffer {addr:#x}+{len:#x} is not inside the mmap's memrange {:#x}+{:#x}: \
                     take buffers from memory the mmap registered",
                    range.0, range.1
                ),
            ));
        }
        s.num_bufs += 1;
        Ok(())
    }

    /// Uncounts a buffer taken with [`Mmap::acquire_buf`].
    #[allow(
        dead_code,
        reason = "used by crate::buf; lib.rs may not declare it in every build"
    )]
    pub(crate) fn release_buf(&self) {
        let mut s = self.lock();
        s.num_bufs = s.num_bufs.saturating_sub(1);
    }
}

/// Whether `[addr, addr + len)` is inside `(start, range_len)`, without overflow.
pub(crate) fn range_contains((start, range_len): (usize, usize), addr: usize, len: usize) -> bool {
    let Some(offset) = addr.checked_sub(start) else {
        return false;
    };
    offset <= range_len && len <= range_len - offset
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dev::{Side, Topology};

    fn code<T: fmt::Debug>(r: Result<T>) -> ErrorCode {
        r.expect_err("expected an error").code()
    }

    fn host_dev() -> Dev {
        Dev::open_by_pci(Topology::global(), Side::Host, "b1:00.0").unwrap()
    }

    #[test]
    fn access_flags_have_doca_values() {
        assert_eq!(AccessFlags::LOCAL_READ_ONLY.bits(), 0);
        assert_eq!(AccessFlags::LOCAL_READ_WRITE.bits(), 1);
        assert_eq!(AccessFlags::RDMA_READ.bits(), 2);
        assert_eq!(AccessFlags::RDMA_WRITE.bits(), 4);
        assert_eq!(AccessFlags::RDMA_ATOMIC.bits(), 8);
        assert_eq!(AccessFlags::PCI_READ_ONLY.bits(), 16);
        assert_eq!(AccessFlags::PCI_READ_WRITE.bits(), 32);
        assert_eq!(AccessFlags::PCI_RELAXED_ORDERING.bits(), 64);
        let f = AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE;
        assert_eq!(f.bits(), 0x21);
        assert_eq!(AccessFlags::from_bits(0x21).unwrap(), f);
        assert_eq!(format!("{f:?}"), "LOCAL_READ_WRITE | PCI_READ_WRITE");
        assert_eq!(
            format!("{:?}", AccessFlags::LOCAL_READ_ONLY),
            "LOCAL_READ_ONLY"
        );
        let mut g = AccessFlags::RDMA_READ;
        g |= AccessFlags::RDMA_WRITE;
        assert!(g.contains(AccessFlags::RDMA_WRITE) && !g.contains(AccessFlags::RDMA_ATOMIC));
    }

    #[test]
    fn undefined_access_flag_is_invalid_value() {
        assert_eq!(
            code(AccessFlags::from_bits(1 << 7)),
            ErrorCode::InvalidValue
        );
        assert_eq!(
            code(AccessFlags::from_bits(u32::MAX)),
            ErrorCode::InvalidValue
        );
    }

    #[test]
    fn pci_read_only_with_read_write_is_invalid_value() {
        let m = Mmap::alloc(64).unwrap();
        let e = m
            .set_permissions(AccessFlags::PCI_READ_ONLY | AccessFlags::PCI_READ_WRITE)
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidValue);
        assert!(e.message().contains("mutually exclusive"), "{e}");
        assert_eq!(m.get_permissions(), AccessFlags::LOCAL_READ_WRITE);
    }

    #[test]
    fn happy_path() {
        let dev = host_dev();
        let m = Mmap::alloc(4096).unwrap();
        m.add_dev(&dev).unwrap();
        m.set_permissions(AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE)
            .unwrap();
        m.set_user_data(7).unwrap();
        assert!(!m.is_started());
        m.start().unwrap();
        assert!(m.is_started());
        let (ptr, len) = m.get_memrange().unwrap();
        assert_eq!(len, 4096);
        assert_eq!(ptr.addr() % Mmap::ALLOC_ALIGN, 0);
        assert_eq!(m.range(), (ptr, len));
        // SAFETY: the mmap owns 4096 zeroed bytes at `ptr` and nothing else accesses them.
        let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
        assert!(bytes.iter().all(|&b| b == 0));
        assert!(m.has_dev(&dev));
        assert_eq!(m.devs(), vec![dev]);
        assert!(m.allows_local_read() && m.allows_local_write());
        assert!(m.allows_pci_read() && m.allows_pci_write());
        assert_eq!(m.get_user_data(), 7);
        assert_eq!(m.get_num_bufs(), 0);
        m.stop().unwrap();
        // Stopped: configurable again, restartable.
        m.set_permissions(AccessFlags::LOCAL_READ_ONLY | AccessFlags::PCI_READ_ONLY)
            .unwrap();
        m.start().unwrap();
        assert!(!m.allows_local_write() && m.allows_local_read());
        assert!(m.allows_pci_read() && !m.allows_pci_write());
    }

    #[test]
    fn borrowed_memrange() {
        let mut memory = vec![0u8; 256];
        let m = Mmap::create().unwrap();
        // SAFETY: `memory` outlives `m` (dropped at the end of the test, after `m`), and no
        // reference to it is used while the mmap exists.
        unsafe { m.set_memrange(memory.as_mut_ptr(), memory.len()).unwrap() };
        m.start().unwrap();
        let base = memory.as_ptr().addr();
        assert_eq!(m.get_memrange().unwrap(), (memory.as_mut_ptr(), 256));
        assert!(m.contains(base, 256) && m.contains(base + 255, 1) && m.contains(base + 256, 0));
        assert!(!m.contains(base + 1, 256) && !m.contains(base - 1, 1));
        assert!(!m.contains(base + 200, usize::MAX) && !m.contains(usize::MAX, usize::MAX));
        drop(m);
        drop(memory);
    }

    #[test]
    fn with_memory_owns_the_box() {
        let m = Mmap::with_memory(vec![5u8; 100].into_boxed_slice()).unwrap();
        let (ptr, len) = m.get_memrange().unwrap();
        // SAFETY: the mmap owns these 100 bytes and nothing writes them.
        let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
        assert_eq!(bytes, &[5u8; 100][..]);
        let clone = m.clone();
        drop(m);
        assert_eq!(clone.range().1, 100);
    }

    #[test]
    fn start_without_memrange_is_invalid_value() {
        let e = Mmap::create().unwrap().start().unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidValue);
        assert!(e.message().contains("set_memrange"), "{e}");
    }

    #[test]
    fn start_twice_is_bad_state() {
        let m = Mmap::alloc(8).unwrap();
        m.start().unwrap();
        assert_eq!(code(m.start()), ErrorCode::BadState);
    }

    #[test]
    fn stop_when_not_started_is_bad_state() {
        assert_eq!(code(Mmap::alloc(8).unwrap().stop()), ErrorCode::BadState);
    }

    #[test]
    fn get_memrange_never_set_is_bad_state() {
        let m = Mmap::create().unwrap();
        assert_eq!(code(m.get_memrange()), ErrorCode::BadState);
        assert_eq!(m.range(), (std::ptr::null_mut(), 0));
        assert!(!m.contains(0, 0));
    }

    #[test]
    fn configuration_after_start_is_refused() {
        let dev = host_dev();
        let m = Mmap::alloc(64).unwrap();
        m.start().unwrap();
        assert_eq!(
            code(m.set_permissions(AccessFlags::LOCAL_READ_ONLY)),
            ErrorCode::BadState
        );
        assert_eq!(code(m.set_user_data(1)), ErrorCode::BadState);
        let mut other = [0u8; 8];
        // SAFETY: the call fails before registering anything.
        let r = unsafe { m.set_memrange(other.as_mut_ptr(), other.len()) };
        assert_eq!(code(r), ErrorCode::BadState);
        // DOCA documents NOT_PERMITTED for adding or removing devices on a started mmap.
        assert_eq!(code(m.add_dev(&dev)), ErrorCode::NotPermitted);
        assert_eq!(code(m.rm_dev(&dev)), ErrorCode::NotPermitted);
    }

    #[test]
    fn memrange_twice_is_not_permitted() {
        let m = Mmap::alloc(64).unwrap();
        let mut other = [0u8; 8];
        // SAFETY: the call fails before registering anything.
        let r = unsafe { m.set_memrange(other.as_mut_ptr(), other.len()) };
        assert_eq!(code(r), ErrorCode::NotPermitted);
    }

    #[test]
    fn bad_memrange_is_invalid_value() {
        let m = Mmap::create().unwrap();
        let mut byte = [0u8; 1];
        // SAFETY: each call fails validation before registering anything.
        unsafe {
            assert_eq!(
                code(m.set_memrange(std::ptr::null_mut(), 8)),
                ErrorCode::InvalidValue
            );
            assert_eq!(
                code(m.set_memrange(byte.as_mut_ptr(), 0)),
                ErrorCode::InvalidValue
            );
            assert_eq!(
                code(m.set_memrange(byte.as_mut_ptr(), MMAP_MAX_LEN + 1)),
                ErrorCode::InvalidValue
            );
            let end = std::ptr::without_provenance_mut::<u8>(usize::MAX);
            assert_eq!(code(m.set_memrange(end, 2)), ErrorCode::InvalidValue);
        }
        // Nothing was registered by the failed calls.
        assert_eq!(code(m.get_memrange()), ErrorCode::BadState);
    }

    #[test]
    fn bad_allocation_size_is_invalid_value() {
        assert_eq!(code(Mmap::alloc(0)), ErrorCode::InvalidValue);
        assert_eq!(code(Mmap::alloc(MMAP_MAX_LEN + 1)), ErrorCode::InvalidValue);
        assert_eq!(
            code(Mmap::with_memory(Box::new([]))),
            ErrorCode::InvalidValue
        );
        let e = Mmap::alloc(usize::MAX).unwrap_err();
        assert!(e.message().contains("MMAP_MAX_LEN"), "{e}");
    }

    #[test]
    fn max_len_is_accepted() {
        // Registering (not allocating) the largest range is fine.
        let m = Mmap::create().unwrap();
        let base = std::ptr::without_provenance_mut::<u8>(Mmap::ALLOC_ALIGN);
        // SAFETY: the mmap is never started and nothing dereferences the range.
        unsafe { m.set_memrange(base, MMAP_MAX_LEN).unwrap() };
        assert_eq!(m.range().1, MMAP_MAX_LEN);
    }

    #[test]
    fn add_dev_twice_is_already_exist() {
        let dev = host_dev();
        let m = Mmap::alloc(64).unwrap();
        m.add_dev(&dev).unwrap();
        // Opening the device again yields the same device.
        let again = Dev::open(dev.as_devinfo()).unwrap();
        assert_eq!(code(m.add_dev(&again)), ErrorCode::AlreadyExist);
        let arm = Dev::open_by_pci(Topology::global(), Side::Arm, "03:00.0").unwrap();
        m.add_dev(&arm).unwrap();
        assert_eq!(m.devs().len(), 2);
    }

    #[test]
    fn rm_dev_absent_is_not_found() {
        let dev = host_dev();
        let m = Mmap::alloc(64).unwrap();
        assert_eq!(code(m.rm_dev(&dev)), ErrorCode::NotFound);
        m.add_dev(&dev).unwrap();
        m.rm_dev(&dev).unwrap();
        assert!(!m.has_dev(&dev));
    }

    #[test]
    fn stop_with_buffers_is_not_permitted() {
        let m = Mmap::alloc(64).unwrap();
        m.start().unwrap();
        let base = m.range().0.addr();
        m.acquire_buf(base, 64).unwrap();
        assert_eq!(m.get_num_bufs(), 1);
        let e = m.stop().unwrap_err();
        assert_eq!(e.code(), ErrorCode::NotPermitted);
        assert!(e.message().contains("1 buffer"), "{e}");
        m.release_buf();
        m.stop().unwrap();
    }

    #[test]
    fn acquire_checks_state_and_range() {
        let m = Mmap::alloc(64).unwrap();
        let base = m.range().0.addr();
        assert_eq!(code(m.acquire_buf(base, 8)), ErrorCode::BadState);
        m.start().unwrap();
        assert_eq!(code(m.acquire_buf(base + 60, 8)), ErrorCode::InvalidValue);
        assert_eq!(m.get_num_bufs(), 0);
    }

    #[test]
    fn ids_are_unique_and_clones_are_the_same_mmap() {
        let a = Mmap::alloc(8).unwrap();
        let b = Mmap::alloc(8).unwrap();
        assert_ne!(a.id(), b.id());
        assert_ne!(a, b);
        let c = a.clone();
        assert_eq!(a, c);
        assert_eq!(a.id(), c.id());
        c.start().unwrap();
        assert!(a.is_started());
        assert!(format!("{a:?}").contains("started: true"));
    }

    #[test]
    fn shared_across_threads() {
        fn check<T: Send + Sync + Clone>() {}
        check::<Mmap>();
        let m = Mmap::alloc(64).unwrap();
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || m.contains(m.range().0.addr(), 64))
            })
            .collect();
        for h in handles {
            assert!(h.join().unwrap());
        }
    }
}
