//! The Comch fast path on a connection: consumers post buffers, producers write into them in
//! place, whichever process each side lives in.
//!
//! A consumer shares two memory files with the peer when it starts: its mmap's pages (moved
//! onto a memfd, see [`share_mmap`]) and a ring region holding its posted receives and its
//! completions, plus a socket end that wakes it. The `CONSUMER_NEW` message carries them over
//! the connection's socket. A producer claims a posted receive, copies its buffer's data into
//! the consumer's memory (the one copy), publishes a completion and, if the consumer may be
//! asleep (a flag in its ring), writes a byte to its wake-up; no byte of data goes through the
//! socket. Every producer and consumer runs on its own progress
//! engine, on any thread: they share only atomics in the ring and the connection's table of
//! the peer's consumers.

use crate::Result;
use crate::SeqPacket;
use dpakit_abi::bail;
use dpakit_abi::soft::limits::{
    COMCH_MAX_CONSUMERS_PER_CONNECTION, COMCH_MAX_SHARED_BYTES_PER_CONNECTION,
};
use dpakit_sync::{AtomicBool, AtomicU32, Ordering};
pub use endpoints::Endpoints;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};

/// What a connection shares with the producers and consumers created on it, which may run on
/// other threads than the connection's server or client.
pub struct ConnShared {
    /// The connection's socket (a duplicate), for consumers to announce themselves.
    sock: SeqPacket,
    next_consumer_id: AtomicU32,
    next_producer_id: AtomicU32,
    /// Consumers of this side that announced themselves (bounded like the peer's).
    local_consumers: AtomicU32,
    /// Producers and consumers alive on the connection, and whether new ones may come.
    pub endpoints: Endpoints,
    /// The peer's consumers, as announced.
    remote: Mutex<Vec<Arc<RemoteConsumer>>>,
    /// `CONSUMER_GONE` messages a stopping consumer could not send (the socket was full): the
    /// connection's owner sends them at its next progress.
    gone_unsent: Mutex<Vec<u32>>,
    /// Whether `gone_unsent` has any: read at every progress without taking its lock.
    unsent: AtomicBool,
}

impl std::fmt::Debug for ConnShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnShared")
            .field("next_consumer_id", &self.next_consumer_id)
            .field("endpoints", &self.endpoints)
            .finish_non_exhaustive()
    }
}

impl ConnShared {
    pub fn new(sock: &SeqPacket) -> Result<Arc<ConnShared>> {
        Ok(Arc::new(ConnShared {
            sock: sock.try_clone()?,
            next_consumer_id: AtomicU32::new(1),
            next_producer_id: AtomicU32::new(1),
            local_consumers: AtomicU32::new(0),
            endpoints: Endpoints::default(),
            remote: Mutex::new(Vec::new()),
            gone_unsent: Mutex::new(Vec::new()),
            unsent: AtomicBool::new(false),
        }))
    }

    /// A consumer id never used on this connection before (ids are not reused, so a late send
    /// cannot reach a newer consumer).
    pub fn consumer_id(&self) -> u32 {
        self.next_consumer_id.fetch_add(1, Ordering::Relaxed)
    }

    pub fn producer_id(&self) -> u32 {
        self.next_producer_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Counts a consumer of this side in before it announces itself; `FULL` past the limit
    /// the peer enforces.
    fn hold_local_consumer(&self) -> Result<()> {
        let n = self.local_consumers.fetch_add(1, Ordering::Relaxed);
        if n as usize >= COMCH_MAX_CONSUMERS_PER_CONNECTION {
            self.local_consumers.fetch_sub(1, Ordering::Relaxed);
            bail!(
                Full,
                "the connection has {COMCH_MAX_CONSUMERS_PER_CONNECTION} consumers on this side, the most a peer accepts (stop one first)"
            );
        }
        Ok(())
    }

    fn release_local_consumer(&self) {
        self.local_consumers.fetch_sub(1, Ordering::Relaxed);
    }

    /// The peer announced a consumer: `INVALID_VALUE` (a protocol violation) for an id it
    /// announced already, or past the per-connection limits on consumers and shared memory.
    pub fn add_remote(&self, c: Arc<RemoteConsumer>) -> Result<()> {
        let mut remote = self.remote.lock().unwrap_or_else(|p| p.into_inner());
        if remote.iter().any(|r| r.id == c.id) {
            bail!(InvalidValue, "the peer announced consumer {} twice", c.id);
        }
        if remote.len() >= COMCH_MAX_CONSUMERS_PER_CONNECTION {
            bail!(
                InvalidValue,
                "the peer announced more than {COMCH_MAX_CONSUMERS_PER_CONNECTION} consumers on one connection"
            );
        }
        let shared: u64 = remote.iter().map(|r| r.shared_bytes()).sum();
        if shared + c.shared_bytes() > COMCH_MAX_SHARED_BYTES_PER_CONNECTION {
            bail!(
                InvalidValue,
                "the peer's consumers would share more than {COMCH_MAX_SHARED_BYTES_PER_CONNECTION} bytes on one connection"
            );
        }
        remote.push(c);
        Ok(())
    }

    /// The peer's consumer `id` is gone: sends waiting for it fail. `INVALID_VALUE` (a protocol
    /// violation) if the peer never announced it.
    pub fn remove_remote(&self, id: u32) -> Result<()> {
        let mut remote = self.remote.lock().unwrap_or_else(|p| p.into_inner());
        let Some(at) = remote.iter().position(|c| c.id == id) else {
            bail!(
                InvalidValue,
                "the peer ended consumer {id}, which it never announced"
            );
        };
        let c = remote.swap_remove(at);
        c.dead.store(true, Ordering::Release);
        Ok(())
    }

    /// The connection closed: every consumer of the peer is gone.
    pub fn close(&self) {
        self.endpoints.seal();
        let mut remote = self.remote.lock().unwrap_or_else(|p| p.into_inner());
        for c in remote.drain(..) {
            c.dead.store(true, Ordering::Release);
        }
    }

    /// The peer broke the fast-path protocol: the connection ends now, from whichever thread
    /// saw it. Its owner sees the socket closed at its next progress and disconnects (the
    /// program's disconnect callback runs, waiting sends fail); the peer sees it too. The
    /// caller hands the error on (`CONNECTION_ABORTED`), for the C API to report.
    pub fn abort(&self) {
        self.sock.shutdown();
    }

    /// Tells the peer that consumer `id` of this side is gone, now if its queue has room, else
    /// at a later progress of the connection's owner ([`flush_unsent`](Self::flush_unsent)).
    /// Never waits: the messages go one `sendmsg` each, from any thread.
    fn consumer_gone(&self, id: u32) {
        if matches!(self.send_gone(id), Ok(false)) {
            self.gone_unsent
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(id);
            self.unsent.store(true, Ordering::Release);
        }
    }

    /// One `CONSUMER_GONE`: `Ok(false)` while the peer's queue is full.
    fn send_gone(&self, id: u32) -> Result<bool> {
        let msg = crate::proto::with_id(crate::proto::TAG_CONSUMER_GONE, id);
        self.sock.send(&[&msg], &[])
    }

    /// Sends what stopping consumers could not (called by the connection's owner at each
    /// progress). A peer that leaves its queue full keeps them waiting, no more.
    pub fn flush_unsent(&self) {
        if !self.unsent.load(Ordering::Acquire) {
            return;
        }
        let mut unsent = self.gone_unsent.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(&id) = unsent.first() {
            match self.send_gone(id) {
                Ok(true) => {
                    unsent.remove(0);
                }
                Ok(false) => return,
                Err(_) => unsent.clear(),
            }
        }
        self.unsent.store(false, Ordering::Release);
    }

    fn find_remote(&self, id: u32) -> Option<Arc<RemoteConsumer>> {
        self.remote
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|c| c.id == id)
            .cloned()
    }
}

/// A memory mapping of a shared file, unmapped on drop.
pub struct Mapping {
    pub(crate) ptr: *mut u8,
    pub(crate) len: usize,
    /// Heap memory standing in for a mapping (the ring's loom model), freed instead of
    /// unmapped.
    heap: bool,
}

impl std::fmt::Debug for Mapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mapping")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .field("heap", &self.heap)
            .finish_non_exhaustive()
    }
}

// SAFETY: the mapping is plain shared memory; every access through it is either to atomics or
// to bytes the protocol hands to one side at a time.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

/// `INVALID_VALUE` unless `fd` is a memory file of at least `len` bytes that cannot shrink:
/// mapping anything else from a peer could fault on access.
pub(crate) fn check_shared_file(fd: RawFd, len: usize) -> Result<()> {
    // SAFETY: no pointers.
    let seals = unsafe { libc::fcntl(fd, libc::F_GET_SEALS) };
    // SAFETY: stat is plain data; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid stat buffer.
    let size = if unsafe { libc::fstat(fd, &mut st) } == 0 {
        st.st_size as u64
    } else {
        0
    };
    if seals < 0 || seals & libc::F_SEAL_SHRINK == 0 || size < len as u64 {
        bail!(
            InvalidValue,
            "the peer announced a memory file that is not a sealed memfd of {len} bytes"
        );
    }
    Ok(())
}

impl Mapping {
    /// `len` bytes of the memory file `fd`, shared and read-write. The caller has checked that
    /// the file cannot shrink below `len` (sealed, as a peer's file is checked to be).
    pub fn map(fd: RawFd, len: usize) -> Result<Mapping> {
        // SAFETY: a fresh shared mapping of `len` bytes of `fd`; the result is checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            bail!(OperatingSystem, "mmap: {}", std::io::Error::last_os_error());
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
            heap: false,
        })
    }

    /// `len` zeroed bytes of heap, aligned to a cache line, in place of a mapping.
    #[cfg(test)]
    pub(crate) fn heap(len: usize) -> Mapping {
        let layout = Self::heap_layout(len);
        // SAFETY: a non-zero size (at least one cache line).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Mapping {
            ptr,
            len,
            heap: true,
        }
    }

    fn heap_layout(len: usize) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(len.max(64), 64).expect("a valid layout")
    }

    /// A second handle on this heap memory, for the other side of a model (loom, or a unit
    /// test miri runs). It must be forgotten, never dropped (it would unmap heap memory).
    #[cfg(test)]
    pub(crate) fn alias(&self) -> Mapping {
        Mapping {
            ptr: self.ptr,
            len: self.len,
            heap: false,
        }
    }

    pub(crate) fn is_heap(&self) -> bool {
        self.heap
    }

    /// Where the mapping starts (page-aligned).
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it maps nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if self.heap {
            // SAFETY: allocated in `heap` with this layout, freed once.
            unsafe { std::alloc::dealloc(self.ptr, Self::heap_layout(self.len)) };
        } else {
            // SAFETY: our own mapping, unmapped once.
            unsafe { libc::munmap(self.ptr.cast(), self.len) };
        }
    }
}

/// A memory file of `len` bytes named `name`, sealed against shrinking.
pub fn memfd(name: &std::ffi::CStr, len: usize) -> Result<OwnedFd> {
    // SAFETY: a NUL-terminated name; the result is checked.
    let fd =
        unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    if fd < 0 {
        bail!(
            OperatingSystem,
            "memfd_create: {}",
            std::io::Error::last_os_error()
        );
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: no pointers.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } < 0 {
        bail!(
            OperatingSystem,
            "ftruncate: {}",
            std::io::Error::last_os_error()
        );
    }
    // Sealed against shrinking: a peer maps it and must never touch pages that went away.
    // SAFETY: no pointers.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, libc::F_SEAL_SHRINK) } < 0 {
        bail!(
            OperatingSystem,
            "sealing a memfd: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(fd)
}

/// The system's page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory arguments.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 { n as usize } else { 4096 }
}

/// An mmap's memory as a shared file: `fd` holds the pages covering the range; the pages the
/// range covers whole are the same memory as the program's (moved in place), and the partial
/// first and last pages, which other objects of the program may share, are copied from the
/// file when a producer's data lands there ([`settle`](Self::settle)).
pub struct SharedMemory {
    pub fd: OwnedFd,
    /// Page-aligned start of the file's pages in the program's address space, and their length.
    pub base: usize,
    pub len: usize,
    /// The file, mapped here too: where the partial pages' bytes arrive.
    view: Mapping,
    /// The parts of the range on partial pages (absolute addresses, start..end).
    edges: [(usize, usize); 2],
}

impl std::fmt::Debug for SharedMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedMemory")
            .field("fd", &self.fd)
            .field("base", &self.base)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl SharedMemory {
    /// Makes `len` bytes a producer wrote at `addr` visible at `addr`: bytes on the partial
    /// pages are copied from the file (those on whole pages are there already).
    pub fn settle(&self, addr: usize, len: usize) {
        let end = addr.saturating_add(len);
        for &(lo, hi) in &self.edges {
            let (s, e) = (addr.max(lo), end.min(hi));
            if s < e {
                // SAFETY: `[s, e)` lies in the registered range (an edge of it) and at the same
                // offset in the file's view; the producer published these bytes (acquired by
                // the completion) and the receive they belong to is the caller's.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        self.view.ptr.add(s - self.base),
                        s as *mut u8,
                        e - s,
                    )
                };
            }
        }
    }
}

/// Shares the range `[addr, addr + len)` with peers through a memfd covering its pages. The
/// pages the range covers whole are moved onto the file in place — the program sees the same
/// bytes at the same addresses, and a peer writes into them directly, as a device writes into
/// registered memory. The partial first and last pages stay the program's own (other objects
/// may live there and be written by other threads meanwhile); the file's copy of them is
/// brought over by [`SharedMemory::settle`].
pub fn share_mmap(addr: *mut u8, len: usize) -> Result<SharedMemory> {
    let page = page_size();
    let start = addr as usize;
    let end = start + len;
    let base = start & !(page - 1);
    let span = end.div_ceil(page) * page - base;
    let whole = (start.div_ceil(page) * page, end & !(page - 1));
    let fd = memfd(c"dpakit-comch-mmap", span)?;
    let view = Mapping::map(fd.as_raw_fd(), span)?;
    if whole.0 < whole.1 {
        let (lo, n) = (whole.0, whole.1 - whole.0);
        // SAFETY: `[lo, lo + n)` are whole pages inside the program's registered range
        // (mapped, readable memory by DOCA's rule), copied into our view of the file.
        unsafe { std::ptr::copy_nonoverlapping(lo as *const u8, view.ptr.add(lo - base), n) };
        // SAFETY: replaces exactly those pages, which hold only the registered range, with
        // the same bytes, shared.
        let ptr = unsafe {
            libc::mmap(
                lo as *mut libc::c_void,
                n,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                fd.as_raw_fd(),
                (lo - base) as libc::off_t,
            )
        };
        if ptr == libc::MAP_FAILED {
            bail!(
                OperatingSystem,
                "cannot share the mmap's pages: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    let edges = if whole.0 < whole.1 {
        [(start, whole.0.min(end)), (whole.1.max(start), end)]
    } else {
        // No whole page: the range sits inside one or two partial pages.
        [(start, end), (end, end)]
    };
    Ok(SharedMemory {
        fd,
        base,
        len: span,
        view,
        edges,
    })
}

/// Bytes of a ring of `depth` receives as a peer announces it (`None` where it overflows).
#[cfg(feature = "fuzzing")]
pub fn ring_bytes(depth: u64) -> Option<usize> {
    ring::Ring::checked_bytes(depth)
}

mod endpoints;
mod peer_fds;
mod ring;
mod sides;
pub use peer_fds::{PeerFd, PeerFds};
pub use sides::{Attempt, FastConsumer, FastProducer, RemoteConsumer};

#[cfg(test)]
mod tests;
