//! The descriptors an attack passes: memfds of any size and seals (the ring one mapped here
//! too, for the scribbler), socket pairs, pipes, eventfds, the rig's files, the attacking
//! socket itself; and what holds them until the attack ends.

use crate::peer::Peer;
use crate::rig::Rig;
use crate::support::Bytes;
use std::ffi::c_void;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::null_mut;

/// Largest ring memfd the target maps itself (to scribble on).
pub const MAX_OWN_MAP: usize = 1 << 20;
/// Largest memfd the target makes (sparse).
pub const MAX_FILE: u64 = 1 << 36;

/// Seals for a memfd: against shrinking (what the server wants), none, or more.
pub fn seals(b: &mut Bytes<'_>) -> i32 {
    match b.u8() % 16 {
        15 => 0,
        14 => libc::F_SEAL_SHRINK | libc::F_SEAL_WRITE,
        13 => libc::F_SEAL_SHRINK | libc::F_SEAL_FUTURE_WRITE,
        12 => libc::F_SEAL_GROW,
        11 => libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL,
        _ => libc::F_SEAL_SHRINK,
    }
}

/// What an attack passes or maps, released when it ends.
#[derive(Default)]
pub struct Held {
    fds: Vec<OwnedFd>,
    maps: Vec<Map>,
}

impl Held {
    fn keep(&mut self, fd: OwnedFd) -> RawFd {
        let raw = fd.as_raw_fd();
        self.fds.push(fd);
        raw
    }
}

/// The target's own mapping of a ring memfd.
struct Map {
    addr: usize,
    len: usize,
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: a mapping made in `memfd`, unmapped once (the scribbler has stopped).
        unsafe { libc::munmap(self.addr as *mut c_void, self.len) };
    }
}

fn owned(fd: i32) -> Option<OwnedFd> {
    // SAFETY: a fresh descriptor nothing else owns, if valid.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A memfd of `size` bytes starting with `contents`, with `seals`; mapped here too if `map`
/// (for the scribbler), as far as [`MAX_OWN_MAP`] and the seals allow. -1 if it could not be
/// made.
pub fn memfd(
    size: u64,
    contents: &[u8],
    seals: i32,
    map: bool,
    held: &mut Held,
) -> (RawFd, Option<(usize, usize)>) {
    // SAFETY: a NUL-terminated name.
    let fd = unsafe {
        libc::memfd_create(
            c"wire-peer".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    let Some(fd) = owned(fd) else {
        return (-1, None);
    };
    let raw = fd.as_raw_fd();
    // SAFETY: writes a live slice, sizes and seals the file; failures leave it as it is.
    unsafe {
        libc::write(raw, contents.as_ptr().cast(), contents.len());
        libc::ftruncate(raw, size as libc::off_t);
        libc::fcntl(raw, libc::F_ADD_SEALS, seals);
    }
    let len = size.min(MAX_OWN_MAP as u64) as usize;
    let mut mapped = None;
    if map && len > 0 && seals & (libc::F_SEAL_WRITE | libc::F_SEAL_FUTURE_WRITE) == 0 {
        // SAFETY: a fresh shared mapping of the file's first `len` bytes; checked.
        let addr = unsafe {
            libc::mmap(
                null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                raw,
                0,
            )
        };
        if addr != libc::MAP_FAILED {
            held.maps.push(Map {
                addr: addr as usize,
                len,
            });
            mapped = Some((addr as usize, len));
        }
    }
    (held.keep(fd), mapped)
}

/// One end of a socket pair of `kind`; the other end kept open unless `close_peer`.
pub fn socket_pair(kind: i32, close_peer: bool, nonblocking: bool, held: &mut Held) -> RawFd {
    let mut fds = [0; 2];
    let flags = if nonblocking { libc::SOCK_NONBLOCK } else { 0 };
    // SAFETY: room for two descriptors; checked.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            kind | flags | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } < 0
    {
        return -1;
    }
    let (ours, theirs) = (owned(fds[0]), owned(fds[1]));
    if let Some(t) = theirs.filter(|_| !close_peer) {
        held.keep(t);
    }
    ours.map_or(-1, |o| held.keep(o))
}

/// A descriptor of a random kind.
pub fn descriptor(b: &mut Bytes<'_>, rig: &Rig, peer: &Peer, held: &mut Held) -> RawFd {
    match b.u8() % 12 {
        0 => {
            let size = match b.u8() % 4 {
                0 => b.u64() % MAX_FILE,
                1 => 0,
                _ => u64::from(b.u16()) * 8,
            };
            let s = seals(b);
            memfd(size, &[], s, false, held).0
        }
        1 => socket_pair(libc::SOCK_STREAM, b.bool(), b.bool(), held),
        2 => socket_pair(libc::SOCK_DGRAM, b.bool(), b.bool(), held),
        3 => socket_pair(libc::SOCK_SEQPACKET, b.bool(), b.bool(), held),
        4 | 5 => {
            // A pipe's read or write end, the other end open or closed.
            let mut fds = [0; 2];
            // SAFETY: room for two descriptors; checked.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
                return -1;
            }
            let (r, w) = (owned(fds[0]), owned(fds[1]));
            let (send, other) = if b.bool() { (r, w) } else { (w, r) };
            if let Some(o) = other.filter(|_| !b.bool()) {
                held.keep(o);
            }
            send.map_or(-1, |s| held.keep(s))
        }
        6 => {
            let flags = if b.bool() { libc::EFD_NONBLOCK } else { 0 };
            // SAFETY: no pointers.
            let Some(fd) = owned(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | flags) }) else {
                return -1;
            };
            if b.bool() {
                // At its maximum: a blocking write to it would never return.
                let max = u64::MAX - 1;
                // SAFETY: writes 8 bytes from a live u64.
                unsafe { libc::write(fd.as_raw_fd(), (&max as *const u64).cast(), 8) };
            }
            held.keep(fd)
        }
        7 => rig.null.as_raw_fd(),
        8 => rig.file.as_raw_fd(),
        9 => rig.dir.as_raw_fd(),
        10 => peer.sock.as_raw_fd(),
        _ => socket_pair(libc::SOCK_STREAM, false, true, held),
    }
}

/// Up to 14 descriptors of random kinds.
pub fn random_fds(b: &mut Bytes<'_>, rig: &Rig, peer: &Peer, held: &mut Held) -> Vec<RawFd> {
    let n = 1 + b.u8() % 14;
    let mut fds: Vec<RawFd> = (0..n).map(|_| descriptor(b, rig, peer, held)).collect();
    fds.retain(|&fd| fd >= 0);
    fds
}

/// Usually none: descriptors on a frame that carries none.
pub fn maybe_fds(b: &mut Bytes<'_>, rig: &Rig, peer: &Peer, held: &mut Held) -> Vec<RawFd> {
    if b.u8() % 8 == 7 {
        random_fds(b, rig, peer, held)
    } else {
        Vec::new()
    }
}
