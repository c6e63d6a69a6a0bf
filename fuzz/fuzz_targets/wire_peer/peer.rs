//! The attacker's end: a `SOCK_SEQPACKET` connection to the server's socket that sends raw
//! messages with descriptors (`SCM_RIGHTS`) and reads what comes back.

use crate::rig::Rig;
use std::ffi::c_void;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The attacking connection.
pub struct Peer {
    pub sock: OwnedFd,
    /// The server closed it: nothing more gets through.
    pub dead: bool,
}

impl Peer {
    /// Connects to the server's socket (its backlog is never full here: a refusal is a
    /// finding).
    pub fn connect(path: &std::path::Path) -> Peer {
        // SAFETY: no pointers; the result is checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                0,
            )
        };
        assert!(fd >= 0, "socket");
        // SAFETY: a fresh descriptor.
        let sock = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sockaddr_un is plain data.
        let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let bytes = path.as_os_str().as_encoded_bytes();
        for (d, &s) in addr.sun_path.iter_mut().zip(bytes) {
            *d = s as libc::c_char;
        }
        // SAFETY: a valid address of that size.
        let rc = unsafe {
            libc::connect(
                sock.as_raw_fd(),
                (&addr as *const libc::sockaddr_un).cast(),
                std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
            )
        };
        assert_eq!(
            rc,
            0,
            "connecting to the server: {}",
            std::io::Error::last_os_error()
        );
        Peer { sock, dead: false }
    }

    /// Sends one message with `fds`, progressing the server while its queue is full.
    pub fn send(&mut self, rig: &Rig, bytes: &[u8], fds: &[RawFd]) {
        #[repr(C, align(8))]
        struct Control([u8; 128]);
        if self.dead {
            return;
        }
        let fds = &fds[..fds.len().min(16)];
        for _ in 0..32 {
            let mut iov = libc::iovec {
                iov_base: bytes.as_ptr() as *mut c_void,
                iov_len: bytes.len(),
            };
            let mut control = Control([0; 128]);
            // SAFETY: msghdr is plain data; the pointers stay valid during sendmsg.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            if !fds.is_empty() {
                let len = std::mem::size_of_val(fds) as u32;
                msg.msg_control = control.0.as_mut_ptr().cast();
                // SAFETY: arithmetic, then a header and 16 descriptors at most written inside
                // the 128-byte control buffer.
                unsafe {
                    msg.msg_controllen = libc::CMSG_SPACE(len) as _;
                    let c = libc::CMSG_FIRSTHDR(&msg);
                    (*c).cmsg_level = libc::SOL_SOCKET;
                    (*c).cmsg_type = libc::SCM_RIGHTS;
                    (*c).cmsg_len = libc::CMSG_LEN(len) as _;
                    std::ptr::copy_nonoverlapping(
                        fds.as_ptr(),
                        libc::CMSG_DATA(c).cast(),
                        fds.len(),
                    );
                }
            }
            // SAFETY: `msg` describes live buffers.
            if unsafe { libc::sendmsg(self.sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) } >= 0 {
                return;
            }
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EAGAIN | libc::ENOBUFS | libc::EINTR) => rig.pass(),
                Some(libc::EPIPE | libc::ECONNRESET | libc::ENOTCONN) => {
                    self.dead = true;
                    return;
                }
                // Too large, too many descriptors in flight: this message does not go.
                _ => return,
            }
        }
    }

    /// Reads up to `n` messages the server sent (descriptors, if any, are discarded).
    pub fn drain(&mut self, n: usize) {
        let mut buf = [0u8; 8192];
        for _ in 0..n {
            // SAFETY: reads into a live buffer.
            let got = unsafe {
                libc::recv(
                    self.sock.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if got == 0 {
                self.dead = true;
            }
            if got <= 0 {
                return;
            }
        }
    }
}
