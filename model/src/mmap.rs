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
use dpakit_wire::fast_path::{SharedMemory, share_mmap};
use std::alloc::Layout;
use std::fmt;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

mod access;
pub use access::AccessFlags;

type Result<T, E = Error> = core::result::Result<T, E>;

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
    /// Its memory as a shared file, once a Comch consumer received into it.
    shared: Mutex<Option<Arc<SharedMemory>>>,
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
                shared: Mutex::new(None),
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

    /// The mmap's memory, shared with a Comch peer (made so the first time): the receive
    /// buffers of consumers on a connection. The mmap must be started with PCI read-write
    /// access, as DOCA requires of consumer memory.
    pub fn share(&self) -> Result<Arc<SharedMemory>, Error> {
        if !self.is_started() {
            return Err(bad_state(
                "start the consumer's mmap first (doca_mmap_start)",
            ));
        }
        if !self.allows_pci_write() {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                "a consumer's mmap needs DOCA_ACCESS_FLAG_PCI_READ_WRITE \
                 (doca_mmap_set_permissions): the peer's producers write into it",
            ));
        }
        let mut shared = self
            .inner
            .shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(s) = shared.as_ref() {
            return Ok(s.clone());
        }
        let (addr, len) = self.get_memrange()?;
        let s = Arc::new(share_mmap(addr, len)?);
        *shared = Some(s.clone());
        Ok(s)
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
mod tests;
