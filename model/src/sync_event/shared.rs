//! A sync event shared with the remote PCI side (`doca_sync_event_export_to_remote_pci`,
//! `doca_sync_event_create_from_export`): on the soft device the two sides are two processes of
//! one machine, and the counter is 8 bytes of a one-page memory file both map.
//!
//! The exporter creates the file (a memfd sealed against shrinking and growing), writes a
//! header — a magic number, a version and a random 128-bit token — and keeps the file open for
//! the life of the event. Its blob names the file by the exporter's process id and descriptor
//! number, plus the token, the side and the card it was exported from. The importer opens
//! `/proc/<pid>/fd/<fd>`: the kernel serves that without the exporter's cooperation, and only
//! to a process allowed to read the exporter's state (its own user, the exporter dumpable). No
//! byte of the blob is trusted: the importer checks the length, magic, version and reserved
//! bytes, that the descriptor is a memory file (on the kernel's internal shared-memory mount,
//! before anything is opened for reading or writing, so no open can wait on a file system a peer
//! controls), exactly one page, sealed against shrinking (a peer cannot make the mapping fault),
//! and that the page's header carries the blob's token (so a blob naming another file, or an
//! event destroyed and its descriptor number reused, is refused). Every step is one system call
//! that returns at once: nothing waits for the exporter, and a dead exporter is a descriptor
//! that is gone.
//!
//! After the import both processes update and read the counter atomically in the shared page;
//! each waits on it by polling, as DOCA's waits do. A peer can write any value there at any
//! time (it shares the counter on purpose); that is all it can do to the other process.

use crate::dev::{Dev, Side};
use crate::error::{Error, ErrorCode, Result, bail, err};
use crate::limits::{SYNC_EVENT_MAX_EXPORTED, SYNC_EVENT_MAX_IMPORTED};
use crate::sync::Ordering;
// Process-wide caps, and a counter in memory another process maps (loom cannot model either).
use crate::sync::plain::{AtomicU64, AtomicUsize};
use dpakit_wire::fast_path::{Mapping, memfd, page_size};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

/// Bytes of an export blob.
pub const BLOB_LEN: usize = 48;
/// What an export blob starts with.
const BLOB_MAGIC: [u8; 8] = *b"dpkSyncE";
/// The blob and page layout this soft device writes and reads.
const VERSION: u16 = 1;
/// What the shared page starts with.
const PAGE_MAGIC: u64 = u64::from_le_bytes(*b"dpkSEpg1");
/// Where the counter is in the page: a cache line of its own, after the header.
const COUNTER_OFFSET: usize = 64;

/// Where each field of a blob is (little-endian).
mod at {
    pub const MAGIC: usize = 0;
    pub const VERSION: usize = 8;
    pub const SIDE: usize = 10;
    pub const RESERVED: usize = 11;
    pub const CARD: usize = 12;
    pub const PID: usize = 16;
    pub const FD: usize = 20;
    pub const TOKEN: usize = 24;
    pub const EVENT: usize = 40;
}

/// One counted use of a process-wide budget, given back when dropped.
#[derive(Debug)]
struct Slot(&'static AtomicUsize);

impl Slot {
    /// Counts one more in `held`; `NO_MEMORY` naming `what` at `cap`.
    fn take(held: &'static AtomicUsize, cap: usize, what: &str) -> Result<Slot> {
        let mut n = held.load(Ordering::Relaxed);
        loop {
            if n >= cap {
                bail!(NoMemory, "{what}");
            }
            match held.compare_exchange_weak(n, n + 1, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Ok(Slot(held)),
                Err(now) => n = now,
            }
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

static EXPORTED: AtomicUsize = AtomicUsize::new(0);
static IMPORTED: AtomicUsize = AtomicUsize::new(0);
static NEXT_EVENT: AtomicU64 = AtomicU64::new(1);

/// The exporter's cap: [`SYNC_EVENT_MAX_EXPORTED`], and at most a quarter of the descriptors
/// the process may open.
fn exported_cap() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: fills the struct it is given.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX)
    } else {
        1024
    };
    SYNC_EVENT_MAX_EXPORTED.min(soft / 4)
}

/// A sync event's counter in a page shared with the remote PCI side: the exporter's (which
/// holds the memory file open, for importers to reach) or an importer's mapping of it.
#[derive(Debug)]
pub struct SharedCounter {
    map: Mapping,
    /// The exporter's memory file; `None` in an importer.
    file: Option<OwnedFd>,
    token: [u8; 16],
    /// Names the event in messages (the exporter's number for it).
    event: u64,
    _slot: Slot,
}

impl SharedCounter {
    /// The exporter's side: a fresh page whose counter starts at `initial`. `NO_MEMORY` past
    /// the process's cap.
    pub fn create(initial: u64) -> Result<SharedCounter> {
        let slot = Slot::take(
            &EXPORTED,
            exported_cap(),
            &format!(
                "this process shares {} sync events with the remote PCI side already, the most \
                 it may (SYNC_EVENT_MAX_EXPORTED, at most a quarter of RLIMIT_NOFILE): destroy \
                 some first",
                EXPORTED.load(Ordering::Relaxed)
            ),
        )?;
        let len = page_size();
        let file = memfd(c"dpakit-sync-event", len)?;
        // SAFETY: no pointers. Growing is sealed too: the page is all there is.
        let rc = unsafe {
            libc::fcntl(
                file.as_raw_fd(),
                libc::F_ADD_SEALS,
                libc::F_SEAL_GROW | libc::F_SEAL_SEAL,
            )
        };
        if rc < 0 {
            bail!(
                OperatingSystem,
                "sealing the sync event's memory file: {}",
                std::io::Error::last_os_error()
            );
        }
        let map = Mapping::map(file.as_raw_fd(), len)?;
        let mut token = [0u8; 16];
        random(&mut token)?;
        let shared = SharedCounter {
            map,
            file: Some(file),
            token,
            event: NEXT_EVENT.fetch_add(1, Ordering::Relaxed),
            _slot: slot,
        };
        let words = shared.header();
        words[0].store(PAGE_MAGIC, Ordering::Relaxed);
        words[1].store(u64::from(VERSION), Ordering::Relaxed);
        words[2].store(
            u64::from_le_bytes(token[..8].try_into().unwrap_or_default()),
            Ordering::Relaxed,
        );
        words[3].store(
            u64::from_le_bytes(token[8..].try_into().unwrap_or_default()),
            Ordering::Relaxed,
        );
        shared.atomic().store(initial, Ordering::Release);
        Ok(shared)
    }

    /// The header's four words (magic, version, token).
    fn header(&self) -> &[AtomicU64; 4] {
        // SAFETY: the mapping is at least a page, page-aligned, and lives as long as `self`;
        // its first 32 bytes are only accessed atomically.
        unsafe { &*self.map.as_ptr().cast::<[AtomicU64; 4]>() }
    }

    /// The counter.
    pub(super) fn atomic(&self) -> &AtomicU64 {
        // SAFETY: 8 aligned bytes inside the mapping (at least a page), only accessed
        // atomically, by this process and the other side's; alive as long as `self`.
        unsafe { &*self.map.as_ptr().add(COUNTER_OFFSET).cast::<AtomicU64>() }
    }

    /// Whether this is an importer's mapping.
    pub fn is_imported(&self) -> bool {
        self.file.is_none()
    }

    /// The blob that lets the remote side of `dev` import the event (the exporter only).
    pub fn blob(&self, dev: &Dev) -> Result<[u8; BLOB_LEN]> {
        let Some(file) = &self.file else {
            bail!(
                NotSupported,
                "this event was imported from the remote PCI side: only its exporter exports it"
            );
        };
        let info = dev.as_devinfo();
        let mut b = [0u8; BLOB_LEN];
        b[at::MAGIC..at::MAGIC + 8].copy_from_slice(&BLOB_MAGIC);
        b[at::VERSION..at::VERSION + 2].copy_from_slice(&VERSION.to_le_bytes());
        b[at::SIDE] = side_byte(info.side());
        b[at::CARD..at::CARD + 4].copy_from_slice(&info.card().to_le_bytes());
        // SAFETY: getpid cannot fail.
        let pid = unsafe { libc::getpid() } as u32;
        b[at::PID..at::PID + 4].copy_from_slice(&pid.to_le_bytes());
        b[at::FD..at::FD + 4].copy_from_slice(&(file.as_raw_fd() as u32).to_le_bytes());
        b[at::TOKEN..at::TOKEN + 16].copy_from_slice(&self.token);
        b[at::EVENT..at::EVENT + 8].copy_from_slice(&self.event.to_le_bytes());
        Ok(b)
    }

    /// The importer's side: the event `data` (a blob of [`blob`](Self::blob)) names, for the
    /// device `dev` on the remote side of the exporter's. Every failure of the blob is
    /// `INVALID_VALUE` naming the rule; `NO_MEMORY` past the process's cap. Never waits.
    pub fn import(data: &[u8], dev: &Dev) -> Result<SharedCounter> {
        let blob = Blob::parse(data)?;
        let info = dev.as_devinfo();
        if blob.side == info.side() {
            bail!(
                InvalidValue,
                "the event was exported from the {0:?} side to the remote PCI side, and dev is \
                 a {0:?}-side device: import it on the other side (the BlueField's Arm for an \
                 export from the host, the host for one from the Arm)",
                blob.side
            );
        }
        if blob.card != info.card() {
            bail!(
                InvalidValue,
                "the event was exported on BlueField {} and dev belongs to BlueField {}: an \
                 export reaches the other side of its own PCI link only",
                blob.card,
                info.card()
            );
        }
        let slot = Slot::take(
            &IMPORTED,
            SYNC_EVENT_MAX_IMPORTED,
            &format!(
                "this process has imported {SYNC_EVENT_MAX_IMPORTED} sync events already \
                 (SYNC_EVENT_MAX_IMPORTED): destroy some first"
            ),
        )?;
        let len = page_size();
        let file = open_exported(&blob, len)?;
        let map = Mapping::map(file.as_raw_fd(), len)?;
        let shared = SharedCounter {
            map,
            file: None,
            token: blob.token,
            event: blob.event,
            _slot: slot,
        };
        let words: [u64; 4] = std::array::from_fn(|i| shared.header()[i].load(Ordering::Acquire));
        let mut token = [0u8; 16];
        token[..8].copy_from_slice(&words[2].to_le_bytes());
        token[8..].copy_from_slice(&words[3].to_le_bytes());
        if words[0] != PAGE_MAGIC || words[1] != u64::from(VERSION) || !same(&token, &blob.token) {
            bail!(
                InvalidValue,
                "the blob's token does not match the shared counter of process {}'s descriptor \
                 {}: a forged, stale or damaged export (each export carries the token of its \
                 own event)",
                blob.pid,
                blob.fd
            );
        }
        Ok(shared)
    }
}

fn side_byte(side: Side) -> u8 {
    match side {
        Side::Host => 0,
        Side::Arm => 1,
    }
}

/// Fills `buf` from the kernel's random source.
fn random(buf: &mut [u8]) -> Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        // SAFETY: writes at most `len - filled` bytes into `buf` past `filled`.
        let n =
            unsafe { libc::getrandom(buf[filled..].as_mut_ptr().cast(), buf.len() - filled, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            bail!(OperatingSystem, "getrandom: {e}");
        }
        filled += n as usize;
    }
    Ok(())
}

/// Compares two tokens in time independent of where they differ.
fn same(a: &[u8; 16], b: &[u8; 16]) -> bool {
    a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// `INVALID_VALUE` unless `sz` is the size of an export blob: checked before the importer
/// reads a byte of it.
pub fn check_blob_len(sz: usize) -> Result<()> {
    if sz != BLOB_LEN {
        bail!(
            InvalidValue,
            "sz is {sz} bytes: a sync event export of the soft device is exactly {BLOB_LEN} bytes \
             (pass the data and size doca_sync_event_export_to_remote_pci gave, unchanged)"
        );
    }
    Ok(())
}

/// A parsed export blob: every field checked for form (not yet for what it names).
struct Blob {
    side: Side,
    card: u32,
    pid: u32,
    fd: u32,
    token: [u8; 16],
    event: u64,
}

impl Blob {
    fn parse(data: &[u8]) -> Result<Blob> {
        check_blob_len(data.len())?;
        let u16_at = |i: usize| u16::from_le_bytes([data[i], data[i + 1]]);
        let u32_at =
            |i: usize| u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
        if data[at::MAGIC..at::MAGIC + 8] != BLOB_MAGIC {
            bail!(
                InvalidValue,
                "the data is not a sync event export of the soft device (its magic number \
                 differs): pass the blob doca_sync_event_export_to_remote_pci gave"
            );
        }
        let version = u16_at(at::VERSION);
        if version != VERSION {
            bail!(
                InvalidValue,
                "the export is of layout version {version}; this soft device reads version \
                 {VERSION} (both sides must run the same soft device)"
            );
        }
        let side = match data[at::SIDE] {
            0 => Side::Host,
            1 => Side::Arm,
            other => bail!(
                InvalidValue,
                "the export names side {other}, neither the host (0) nor the Arm (1): a damaged \
                 or forged export"
            ),
        };
        if data[at::RESERVED] != 0 {
            bail!(
                InvalidValue,
                "the export's reserved byte is not 0: a damaged or forged export"
            );
        }
        let pid = u32_at(at::PID);
        let fd = u32_at(at::FD);
        if pid == 0 || pid > i32::MAX as u32 || fd > i32::MAX as u32 {
            bail!(
                InvalidValue,
                "the export names process {pid}, descriptor {fd}: not a process and descriptor \
                 an exporter can have (a damaged or forged export)"
            );
        }
        let mut token = [0u8; 16];
        token.copy_from_slice(&data[at::TOKEN..at::TOKEN + 16]);
        let mut event = [0u8; 8];
        event.copy_from_slice(&data[at::EVENT..at::EVENT + 8]);
        Ok(Blob {
            side,
            card: u32_at(at::CARD),
            pid,
            fd,
            token,
            event: u64::from_le_bytes(event),
        })
    }
}

/// `INVALID_VALUE` for a blob naming something that is not a reachable shared counter.
fn refused(blob: &Blob, why: std::fmt::Arguments<'_>) -> Error {
    err(
        ErrorCode::InvalidValue,
        format!(
            "the export names descriptor {} of process {} (event {}), which {why}",
            blob.fd, blob.pid, blob.event
        ),
    )
}

/// The exporter's memory file, opened read-write, after checking it is one: a memory file (on
/// the kernel's internal shared-memory mount, before it is opened for I/O), exactly `len`
/// bytes, sealed against shrinking. Each step is a system call that returns at once.
fn open_exported(blob: &Blob, len: usize) -> Result<OwnedFd> {
    let path = std::ffi::CString::new(format!("/proc/{}/fd/{}", blob.pid, blob.fd))
        .map_err(|_| err(ErrorCode::Unexpected, "a path with a NUL"))?;
    // O_PATH: the file is not opened for I/O, so whatever it is, nothing of it runs.
    // SAFETY: a NUL-terminated path; the result is checked.
    let raw = unsafe { libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if raw < 0 {
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ENOENT | libc::ESRCH) => refused(
                blob,
                format_args!(
                    "is gone: the exporting process exited or destroyed the event (an export is \
                     valid while its event exists)"
                ),
            ),
            Some(libc::EACCES | libc::EPERM) => refused(
                blob,
                format_args!(
                    "this process may not reach ({e}): the exporter must run as the same user \
                     and be dumpable"
                ),
            ),
            _ => refused(blob, format_args!("cannot be reached: {e}")),
        });
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let opath = unsafe { OwnedFd::from_raw_fd(raw) };
    match (mount_id(opath.as_raw_fd()), memfd_mount_id()) {
        (Some(found), Some(memfds)) if found == memfds => {}
        (_, None) => bail!(
            NotSupported,
            "importing a sync event needs /proc (the soft device reaches the exporter's memory \
             file through it), and /proc/self/fdinfo cannot be read here"
        ),
        _ => {
            return Err(refused(
                blob,
                format_args!("is not a memory file: not a sync event's shared counter"),
            ));
        }
    }
    // SAFETY: stat is plain data; fstat fills it (on a memory file, it returns at once).
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid stat buffer and descriptor.
    if unsafe { libc::fstat(opath.as_raw_fd(), &mut st) } != 0
        || st.st_mode & libc::S_IFMT != libc::S_IFREG
        || st.st_size as u64 != len as u64
    {
        return Err(refused(
            blob,
            format_args!(
                "is a memory file of {} bytes, not the one page ({len} bytes) of a sync event's \
                 shared counter",
                st.st_size
            ),
        ));
    }
    let again = std::ffi::CString::new(format!("/proc/self/fd/{}", opath.as_raw_fd()))
        .map_err(|_| err(ErrorCode::Unexpected, "a path with a NUL"))?;
    // SAFETY: a NUL-terminated path; the result is checked.
    let raw = unsafe {
        libc::open(
            again.as_ptr(),
            libc::O_RDWR | libc::O_CLOEXEC | libc::O_NOCTTY | libc::O_NONBLOCK,
        )
    };
    if raw < 0 {
        let e = std::io::Error::last_os_error();
        return Err(refused(blob, format_args!("cannot be opened: {e}")));
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let file = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: no pointers.
    let seals = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GET_SEALS) };
    if seals < 0 || seals & libc::F_SEAL_SHRINK == 0 {
        return Err(refused(
            blob,
            format_args!(
                "is not sealed against shrinking: mapping it would let its owner make this \
                 process fault"
            ),
        ));
    }
    Ok(file)
}

/// The mount `fd` is on, from `/proc/self/fdinfo` (procfs: reading it touches nothing of the
/// file itself).
fn mount_id(fd: RawFd) -> Option<u64> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix("mnt_id:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The mount every memory file is on (the kernel's internal one), learnt once from a memory
/// file of our own.
fn memfd_mount_id() -> Option<u64> {
    static ID: OnceLock<Option<u64>> = OnceLock::new();
    *ID.get_or_init(|| {
        let probe = memfd(c"dpakit-probe", 0).ok()?;
        mount_id(probe.as_raw_fd())
    })
}

#[cfg(test)]
mod tests;
