//! Doors for the fuzz targets (`fuzz/`) into the transport's decoders: the Comch wire protocol,
//! the fast path's consumer announcements, where a Comch server listens and how large a peer's
//! ring is (what a target playing the peer needs to know). Not part of the API: compiled only
//! with feature `fuzzing`, unstable, and nothing but the fuzz targets calls it.

use crate::Result;
use crate::fast_path::{ConnShared, FastProducer, PeerFds, RemoteConsumer};
use crate::{SeqPacket, proto};
use dpakit_abi::bail;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Decodes one Comch protocol message; a message that decodes re-encodes to the same bytes.
/// Panics (a finding) if it does not.
pub fn wire_message(bytes: &[u8]) {
    use proto::Message;
    let Ok(message) = proto::decode(bytes) else {
        return;
    };
    let again = match message {
        Message::Hello {
            version: proto::VERSION,
            max_msg_size,
            function,
            name,
        } => proto::hello(max_msg_size, function, name),
        Message::ConsumerNew {
            id,
            depth,
            imm_len,
            ring_len,
            data_len,
        } => proto::consumer_new(id, depth, imm_len, ring_len, data_len),
        Message::ConsumerGone { id } => proto::with_id(proto::TAG_CONSUMER_GONE, id).to_vec(),
        _ => return,
    };
    assert_eq!(again, bytes, "{message:?} does not re-encode to its bytes");
}

/// What a peer's consumer announcement carries besides the message: the files it shares.
#[derive(Debug)]
pub struct SharedFiles<'a> {
    /// The ring file's size and first bytes (the rest is zero).
    pub ring_len: usize,
    /// The ring region's contents as the peer wrote them.
    pub ring: &'a [u8],
    /// The data file's size.
    pub data_len: usize,
    /// Whether the files are sealed against shrinking (a well-behaved peer seals them).
    pub sealed: bool,
    /// How many descriptors travel with the message (3 for a well-formed one).
    pub num_fds: usize,
    /// Whether the wake-up is a stream socket, as a well-behaved peer sends, or an eventfd
    /// (which must be refused: its blocking flag is the peer's to change).
    pub wake_socket: bool,
}

/// A peer's `CONSUMER_NEW` message `msg` with `files`, received the way a connection receives
/// it; if the consumer attaches, one send of `data` and `imm` to it from a producer of this
/// side, which reads the peer's ring (the peer's bytes, trusted for nothing).
pub fn consumer_announcement(
    msg: &[u8],
    files: &SharedFiles<'_>,
    data: &[u8],
    imm: &[u8],
) -> Result<()> {
    let proto::Message::ConsumerNew {
        id,
        depth,
        imm_len,
        ring_len,
        data_len,
    } = proto::decode(msg)?
    else {
        return Ok(());
    };
    let mut fds = Vec::new();
    for i in 0..files.num_fds.min(4) {
        fds.push(match i {
            0 => memory_file(files.ring_len, files.ring, files.sealed)?,
            1 => memory_file(files.data_len, &[], files.sealed)?,
            _ if files.wake_socket => stream_socket()?,
            _ => crate::socket::eventfd()?,
        });
    }
    let budget = PeerFds::new(1);
    let consumer = RemoteConsumer::attach(id, depth, imm_len, ring_len, data_len, fds, &budget)?;
    let (ours, _peer) = SeqPacket::pair()?;
    let shared = ConnShared::new(&ours)?;
    shared.add_remote(consumer)?;
    // Never waits: a ring whose completion slots do not free fails the send at once.
    FastProducer::new(shared, 1)
        .try_send(id, data, imm)
        .map(drop)
}

/// A memory file of `len` bytes starting with `contents`, sealed against shrinking if `sealed`.
fn memory_file(len: usize, contents: &[u8], sealed: bool) -> Result<OwnedFd> {
    // SAFETY: a NUL-terminated name; the result is checked.
    let fd = unsafe {
        libc::memfd_create(
            c"dpakit-fuzz".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    if fd < 0 {
        bail!(OperatingSystem, "memfd_create failed");
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let contents = &contents[..contents.len().min(len)];
    // SAFETY: writes `contents` (a live slice) to the file; then sizes and seals it.
    let ok = unsafe {
        libc::write(fd.as_raw_fd(), contents.as_ptr().cast(), contents.len())
            == contents.len() as isize
            && libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) == 0
            && (!sealed || libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, libc::F_SEAL_SHRINK) == 0)
    };
    if !ok {
        bail!(OperatingSystem, "preparing a memory file failed");
    }
    Ok(fd)
}

/// One end of a stream socket pair (the other end closes: writes to it must still neither
/// block nor raise `SIGPIPE`).
fn stream_socket() -> Result<OwnedFd> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for two descriptors; the result is checked.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } < 0
    {
        bail!(OperatingSystem, "socketpair failed");
    }
    // SAFETY: two fresh descriptors nothing else owns; the second is closed at once.
    unsafe {
        drop(OwnedFd::from_raw_fd(fds[1]));
        Ok(OwnedFd::from_raw_fd(fds[0]))
    }
}

/// The socket the Comch server `name` of the host function `function` (a PCI address as DOCA
/// prints it, `0000:b1:00.0`) listens on, in this process's runtime directory: where a peer
/// connects.
pub fn comch_server_path(function: &str, name: &str) -> Result<std::path::PathBuf> {
    crate::server_path(function, name)
}

/// Bytes of the ring region a fast-path consumer of `depth` receives shares, as its
/// `CONSUMER_NEW` must announce it (`None` where the size overflows). The region is a 256-byte
/// header of four `u64` counters, one per 64-byte line (receives claimed by producers,
/// receives posted, completion slots claimed, 1 while the consumer runs), then `depth` posted
/// receives of 24 bytes (data offset, capacity, task index), then `depth` completion slots of
/// 64 bytes (the slot's round, then the completion).
pub fn ring_bytes(depth: u64) -> Option<usize> {
    crate::fast_path::ring_bytes(depth)
}
