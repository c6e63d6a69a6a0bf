//! Non-blocking Unix `SOCK_SEQPACKET` sockets (message boundaries kept, connection-oriented, a
//! dead peer seen at once), descriptor passing, and an epoll set to wait on many of them.

use crate::Result;
use dpakit_abi::{Error, ErrorCode, bail};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

fn os_error(what: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::OperatingSystem,
        format!("{what}: {}", io::Error::last_os_error()),
    )
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn new_socket() -> Result<OwnedFd> {
    // SAFETY: no pointers; the result is checked.
    let fd = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(os_error("socket(AF_UNIX, SOCK_SEQPACKET)"));
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn sockaddr(path: &Path) -> Result<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: sockaddr_un is plain data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() >= addr.sun_path.len() {
        bail!(InvalidValue, "socket path {} is too long", path.display());
    }
    for (dst, &src) in addr.sun_path.iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    Ok((addr, len as libc::socklen_t))
}

/// The inode a path names now (0 if none).
fn inode(path: &Path) -> u64 {
    std::fs::symlink_metadata(path).map_or(0, |m| m.ino())
}

/// A listening socket published at a path, removed from there when dropped.
#[derive(Debug)]
pub struct Listener {
    fd: OwnedFd,
    path: PathBuf,
    /// The inode of our socket file: what we remove on drop, and nothing a successor created.
    ino: u64,
    /// A descriptor kept in reserve: when the process is out of descriptors, it is closed to
    /// accept and drop one pending connection, so the backlog drains instead of keeping the
    /// listener readable (and its owner spinning) for ever.
    reserve: std::cell::RefCell<Option<OwnedFd>>,
}

/// A descriptor to hold in reserve (`/dev/null`).
fn reserve_fd() -> Option<OwnedFd> {
    std::fs::File::open("/dev/null").ok().map(OwnedFd::from)
}

impl Listener {
    /// Listens at `path`. The socket is bound under a temporary name and linked into place once
    /// it listens, so the path never names a socket that refuses connections while its owner
    /// lives: a refused connection always means a dead owner, whose file may be removed.
    /// `ALREADY_EXIST` if a live listener holds the path.
    pub fn bind(path: &Path) -> Result<Listener> {
        let fd = new_socket()?;
        // Unique per listener: servers of one process may start at the same time.
        static NEXT: dpakit_sync::plain::AtomicU64 = dpakit_sync::plain::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, dpakit_sync::Ordering::Relaxed);
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(format!(".{}.{n}.tmp", std::process::id()));
        let tmp = PathBuf::from(tmp);
        let _ = std::fs::remove_file(&tmp);
        let (addr, len) = sockaddr(&tmp)?;
        // SAFETY: a valid sockaddr_un of `len` bytes.
        if unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_un).cast(),
                len,
            )
        } < 0
        {
            return Err(os_error(format_args!("bind {}", tmp.display())));
        }
        let ino = inode(&tmp);
        let published = (|| {
            // SAFETY: no pointers.
            if unsafe { libc::listen(fd.as_raw_fd(), 512) } < 0 {
                return Err(os_error("listen"));
            }
            for _ in 0..2 {
                match std::fs::hard_link(&tmp, path) {
                    Ok(()) => return Ok(()),
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                        match SeqPacket::connect(path)? {
                            Connect::Connected(_) | Connect::Busy => bail!(
                                AlreadyExist,
                                "a live server already listens at {}",
                                path.display()
                            ),
                            Connect::Stale => remove_stale(path),
                            Connect::Absent => {}
                        }
                    }
                    Err(e) => bail!(
                        OperatingSystem,
                        "cannot publish {} at {}: {e}",
                        tmp.display(),
                        path.display()
                    ),
                }
            }
            bail!(
                AlreadyExist,
                "{} keeps being taken by another server",
                path.display()
            )
        })();
        let _ = std::fs::remove_file(&tmp);
        published?;
        Ok(Listener {
            fd,
            path: path.to_owned(),
            ino,
            reserve: std::cell::RefCell::new(reserve_fd()),
        })
    }

    /// A pending connection, if any.
    pub fn accept(&self) -> Result<Option<SeqPacket>> {
        // SAFETY: NULL address arguments are allowed; the result is checked.
        let fd = unsafe {
            libc::accept4(
                self.fd.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            )
        };
        if fd < 0 {
            return match errno() {
                libc::EAGAIN | libc::ECONNABORTED | libc::EINTR => Ok(None),
                libc::EMFILE | libc::ENFILE => {
                    self.shed();
                    Err(os_error("accept (a pending connection was dropped)"))
                }
                _ => Err(os_error("accept")),
            };
        }
        // SAFETY: a fresh descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Some(SeqPacket { fd }))
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Out of descriptors: frees the reserve, accepts one pending connection and closes it
    /// (its client sees the refusal), then takes the reserve back.
    fn shed(&self) {
        let mut reserve = self.reserve.borrow_mut();
        drop(reserve.take());
        // SAFETY: NULL address arguments are allowed; the descriptor is closed at once.
        let fd = unsafe {
            libc::accept4(
                self.fd.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC,
            )
        };
        if fd >= 0 {
            // SAFETY: a fresh descriptor nothing else owns.
            unsafe { libc::close(fd) };
        }
        *reserve = reserve_fd();
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if inode(&self.path) == self.ino {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Removes the socket file of a dead server, unless someone replaced it meanwhile.
pub fn remove_stale(path: &Path) {
    let before = inode(path);
    if before != 0
        && matches!(SeqPacket::connect(path), Ok(Connect::Stale))
        && inode(path) == before
    {
        let _ = std::fs::remove_file(path);
    }
}

/// What a connection attempt found.
#[derive(Debug)]
pub enum Connect {
    Connected(SeqPacket),
    /// No socket at the path: no server of that name (yet).
    Absent,
    /// A socket file whose owner is dead.
    Stale,
    /// The server's backlog is full: try again.
    Busy,
}

/// What a receive found.
#[derive(Debug)]
pub enum Recv {
    /// A message of this many bytes (and any descriptors it carried, appended to the vector).
    Message(usize),
    /// Nothing to read now.
    Empty,
    /// The peer closed the connection or died.
    Closed,
}

/// One end of a connected `SOCK_SEQPACKET` socket.
#[derive(Debug)]
pub struct SeqPacket {
    fd: OwnedFd,
}

/// Most descriptors one message carries.
const MAX_FDS: usize = 4;

impl SeqPacket {
    /// Connects to the listener at `path`.
    pub fn connect(path: &Path) -> Result<Connect> {
        let fd = new_socket()?;
        let (addr, len) = sockaddr(path)?;
        // SAFETY: a valid sockaddr_un of `len` bytes.
        let rc = unsafe {
            libc::connect(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_un).cast(),
                len,
            )
        };
        if rc == 0 {
            return Ok(Connect::Connected(SeqPacket { fd }));
        }
        match errno() {
            libc::ENOENT => Ok(Connect::Absent),
            libc::ECONNREFUSED => Ok(Connect::Stale),
            libc::EAGAIN | libc::EINPROGRESS => Ok(Connect::Busy),
            _ => Err(os_error(format_args!("connect {}", path.display()))),
        }
    }

    /// A connected pair, both ends in this process.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn pair() -> Result<(SeqPacket, SeqPacket)> {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors.
        let rc = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        if rc < 0 {
            return Err(os_error("socketpair"));
        }
        // SAFETY: two fresh descriptors nothing else owns.
        unsafe {
            Ok((
                SeqPacket {
                    fd: OwnedFd::from_raw_fd(fds[0]),
                },
                SeqPacket {
                    fd: OwnedFd::from_raw_fd(fds[1]),
                },
            ))
        }
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// A second handle of the same connection (`dup`), for use from another thread.
    pub fn try_clone(&self) -> Result<SeqPacket> {
        let fd = self
            .fd
            .try_clone()
            .map_err(|e| Error::new(ErrorCode::OperatingSystem, format!("dup: {e}")))?;
        Ok(SeqPacket { fd })
    }

    /// Ends the connection both ways now (the peer reads end-of-file), even while descriptors
    /// of it live on.
    pub fn shutdown(&self) {
        // SAFETY: no pointers; failure (already shut) is harmless.
        unsafe { libc::shutdown(self.fd.as_raw_fd(), libc::SHUT_RDWR) };
    }

    /// The peer's user id, from the kernel (`SO_PEERCRED`): what the peer cannot forge.
    pub fn peer_uid(&self) -> Result<u32> {
        // SAFETY: ucred is plain data.
        let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        // SAFETY: `cred` has `len` writable bytes.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                (&mut cred as *mut libc::ucred).cast(),
                &mut len,
            )
        };
        if rc < 0 {
            return Err(os_error("getsockopt(SO_PEERCRED)"));
        }
        Ok(cred.uid)
    }

    /// Sends one message made of `parts`, with `fds` attached. `Ok(false)`: the socket is full,
    /// try again later. `NOT_CONNECTED` if the peer is gone.
    pub fn send(&self, parts: &[&[u8]], fds: &[RawFd]) -> Result<bool> {
        let mut iov = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; 3];
        if parts.len() > iov.len() || fds.len() > MAX_FDS {
            bail!(
                Unexpected,
                "a wire message has at most 3 parts and 4 descriptors"
            );
        }
        for (v, p) in iov.iter_mut().zip(parts) {
            v.iov_base = p.as_ptr() as *mut libc::c_void;
            v.iov_len = p.len();
        }
        let mut control = Control::new();
        // SAFETY: msghdr is plain data; every pointer set below stays valid during sendmsg.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = parts.len() as _;
        if !fds.is_empty() {
            control.set_fds(&mut msg, fds);
        }
        // SAFETY: `msg` describes live buffers.
        let n = unsafe { libc::sendmsg(self.fd.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if n >= 0 {
            return Ok(true);
        }
        match errno() {
            libc::EAGAIN | libc::ENOBUFS | libc::EINTR => Ok(false),
            libc::EPIPE | libc::ECONNRESET | libc::ENOTCONN => {
                bail!(NotConnected, "the peer closed the connection")
            }
            _ => Err(os_error("sendmsg")),
        }
    }

    /// Receives one message into `buf`, appending the descriptors it carried to `fds`.
    /// `INVALID_VALUE` for a message larger than `buf` (the peer broke the protocol).
    pub fn recv(&self, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> Result<Recv> {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let mut control = Control::new();
        // SAFETY: msghdr is plain data; the pointers set below stay valid during recvmsg.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.buf.as_mut_ptr().cast();
        msg.msg_controllen = control.buf.len() as _;
        // SAFETY: `msg` describes live buffers.
        let n = unsafe {
            libc::recvmsg(
                self.fd.as_raw_fd(),
                &mut msg,
                libc::MSG_CMSG_CLOEXEC | libc::MSG_TRUNC,
            )
        };
        if n < 0 {
            return match errno() {
                libc::EAGAIN | libc::EINTR => Ok(Recv::Empty),
                libc::ECONNRESET | libc::EPIPE | libc::ENOTCONN => Ok(Recv::Closed),
                _ => Err(os_error("recvmsg")),
            };
        }
        // SAFETY: the kernel filled the control buffer described by `msg`.
        unsafe { control.take_fds(&msg, fds) };
        if n == 0 {
            return Ok(Recv::Closed);
        }
        let n = n as usize;
        if n > buf.len() || msg.msg_flags & libc::MSG_TRUNC != 0 {
            bail!(
                InvalidValue,
                "the peer sent a {n}-byte message, more than the {} bytes agreed",
                buf.len()
            );
        }
        Ok(Recv::Message(n))
    }
}

/// Ancillary data for descriptor passing, aligned as `cmsghdr` needs.
#[repr(C, align(8))]
struct Control {
    buf: [u8; 64],
}

impl Control {
    fn new() -> Self {
        Control { buf: [0; 64] }
    }

    fn set_fds(&mut self, msg: &mut libc::msghdr, fds: &[RawFd]) {
        let bytes = std::mem::size_of_val(fds) as u32;
        msg.msg_control = self.buf.as_mut_ptr().cast();
        // SAFETY: CMSG_SPACE is arithmetic.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(bytes) } as _;
        // SAFETY: the buffer holds CMSG_SPACE(4 descriptors) = 32 bytes <= 64, aligned; the
        // header and data written lie inside it.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(bytes) as _;
            std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(cmsg).cast(), fds.len());
        }
    }

    /// # Safety
    /// `msg` must be the header recvmsg filled with this control buffer.
    unsafe fn take_fds(&self, msg: &libc::msghdr, fds: &mut Vec<OwnedFd>) {
        // SAFETY: walking the control messages the kernel wrote, within msg_controllen.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(msg);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                    let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                    let len = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                    for i in 0..len / std::mem::size_of::<RawFd>() {
                        fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                    }
                }
                cmsg = libc::CMSG_NXTHDR(msg, cmsg);
            }
        }
    }
}

/// A fresh eventfd (counter 0, non-blocking, closed on exec): a wake-up a poller can watch.
pub fn eventfd() -> Result<OwnedFd> {
    // SAFETY: no pointers; the result is checked.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(os_error("eventfd"));
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// An epoll set: which of many descriptors are readable, in one system call.
#[derive(Debug)]
pub struct Poller {
    fd: OwnedFd,
}

impl Poller {
    pub fn new() -> Result<Poller> {
        // SAFETY: no pointers; the result is checked.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(os_error("epoll_create1"));
        }
        // SAFETY: a fresh descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Poller { fd })
    }

    /// Watches `fd` for input; `token` comes back with its events.
    pub fn add(&self, fd: RawFd, token: u64) -> Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: a valid event for the duration of the call.
        if unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
            return Err(os_error("epoll_ctl(ADD)"));
        }
        Ok(())
    }

    /// Watches `fd` for new input, edge-triggered: `token` comes back once per arrival, not
    /// while input waits unread.
    pub fn add_edge(&self, fd: RawFd, token: u64) -> Result<()> {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLET) as u32,
            u64: token,
        };
        // SAFETY: a valid event for the duration of the call.
        if unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
            return Err(os_error("epoll_ctl(ADD)"));
        }
        Ok(())
    }

    /// Waits up to `timeout_ms` (-1: for ever) for any watched descriptor; whether one is ready.
    /// A signal ends the wait early, as a spurious wake-up.
    pub fn wait(&self, timeout_ms: i32) -> bool {
        let mut event = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: room for one event.
        unsafe { libc::epoll_wait(self.fd.as_raw_fd(), &mut event, 1, timeout_ms) > 0 }
    }

    /// Stops watching `fd` (closing it does too).
    pub fn remove(&self, fd: RawFd) {
        // SAFETY: DEL ignores the event argument; a NULL one is allowed since Linux 2.6.9.
        unsafe {
            libc::epoll_ctl(
                self.fd.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                fd,
                std::ptr::null_mut(),
            )
        };
    }

    /// The tokens of the descriptors readable now, without waiting; returns how many it wrote.
    pub fn ready(&self, tokens: &mut [u64]) -> usize {
        const MAX: usize = 64;
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; MAX];
        let room = tokens.len().min(MAX) as i32;
        // SAFETY: `events` has room for `room` entries.
        let n = unsafe { libc::epoll_wait(self.fd.as_raw_fd(), events.as_mut_ptr(), room, 0) };
        let n = n.max(0) as usize;
        for (t, e) in tokens.iter_mut().zip(&events[..n]) {
            *t = e.u64;
        }
        n
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests;
