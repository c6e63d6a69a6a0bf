//! The two sides of the fast path: a consumer with its ring and memory, and a producer with
//! the peer's consumers it writes into.

use super::ring::{Claim, Done, Post, Ring, Stall};
use super::{ConnShared, Mapping, PeerFd, PeerFds, SharedMemory, check_shared_file, memfd};
use crate::Result;
use dpakit_abi::soft::limits::MAX_IMM_DATA_LEN;
use dpakit_abi::{Error, ErrorCode, bail};
use dpakit_sync::{AtomicBool, Ordering};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// Consumer side
// ---------------------------------------------------------------------------------------------

/// What a received completion says.
#[derive(Debug)]
pub struct Received {
    pub task: u32,
    pub len: usize,
    pub producer: u32,
    pub imm: [u8; MAX_IMM_DATA_LEN],
    pub imm_len: u32,
}

/// A running consumer on a connection.
pub struct FastConsumer {
    pub id: u32,
    ring: Ring,
    ring_fd: OwnedFd,
    /// Our end of the wake-up socket pair: producers write a byte to the other end.
    wake: OwnedFd,
    /// The end the peer's producers write to, sent with the announcement.
    wake_peer: OwnedFd,
    memory: Arc<SharedMemory>,
    shared: Arc<ConnShared>,
    depth: u64,
    imm_len: u32,
    /// Whether the peer was told of this consumer (`CONSUMER_NEW` written).
    announced: std::cell::Cell<bool>,
    /// Completions consumed so far.
    head: std::cell::Cell<u64>,
    /// Asked producers to wake it ([`sleep`](Self::sleep)) and not awake since.
    sleeping: std::cell::Cell<bool>,
}

impl std::fmt::Debug for FastConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastConsumer")
            .field("id", &self.id)
            .field("depth", &self.depth)
            .field("imm_len", &self.imm_len)
            .finish_non_exhaustive()
    }
}

/// A connected pair of non-blocking Unix stream sockets: the consumer's wake-up. A producer
/// writes with `MSG_DONTWAIT | MSG_NOSIGNAL`, which neither blocks nor raises `SIGPIPE` whatever
/// the peer does to its end (an eventfd's blocking flag, by contrast, is the peer's to change).
fn wake_pair() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors; the result is checked.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc < 0 {
        bail!(
            OperatingSystem,
            "socketpair: {}",
            std::io::Error::last_os_error()
        );
    }
    // SAFETY: two fresh descriptors nothing else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl FastConsumer {
    /// Makes the ring for `num_tasks` receives; [`announce`](Self::announce) tells the peer.
    /// `FULL` past the consumers a connection may have.
    pub fn start(
        shared: Arc<ConnShared>,
        id: u32,
        num_tasks: u32,
        imm_len: u32,
        memory: Arc<SharedMemory>,
    ) -> Result<FastConsumer> {
        let depth = u64::from(num_tasks.next_power_of_two());
        let len = Ring::bytes(depth);
        let ring_fd = memfd(c"dpakit-comch-ring", len)?;
        let ring = Ring::create(Mapping::map(ring_fd.as_raw_fd(), len)?, depth);
        let (wake, wake_peer) = wake_pair()?;
        shared.hold_local_consumer()?;
        Ok(FastConsumer {
            id,
            ring,
            ring_fd,
            wake,
            wake_peer,
            memory,
            shared,
            depth,
            imm_len,
            announced: std::cell::Cell::new(false),
            head: std::cell::Cell::new(0),
            sleeping: std::cell::Cell::new(false),
        })
    }

    /// Tells the peer of the consumer (`CONSUMER_NEW` with the ring, the memory and the
    /// wake-up): `Ok(false)` while the connection's queue is full (try again at the next
    /// progress), `Ok(true)` once sent.
    pub fn announce(&self) -> Result<bool> {
        let msg = crate::proto::consumer_new(
            self.id,
            self.depth,
            self.imm_len,
            Ring::bytes(self.depth) as u64,
            self.memory.len as u64,
        );
        let sent = self.shared.sock.send(
            &[&msg],
            &[
                self.ring_fd.as_raw_fd(),
                self.memory.fd.as_raw_fd(),
                self.wake_peer.as_raw_fd(),
            ],
        )?;
        self.announced.set(sent);
        Ok(sent)
    }

    /// The ring's depth: the most receives it has outstanding.
    pub fn depth(&self) -> usize {
        self.depth as usize
    }

    /// The descriptor the consumer's PE watches.
    pub fn wake_fd(&self) -> RawFd {
        self.wake.as_raw_fd()
    }

    /// Posts task `task`'s buffer: data lands at `data` (the buffer's tail), at most
    /// `capacity` bytes. The buffer lies in the shared memory (checked by the caller).
    pub fn post(&self, task: u32, data: usize, capacity: usize) {
        self.ring.post(Post {
            offset: (data - self.memory.base) as u64,
            capacity: capacity as u64,
            task,
            _pad: 0,
        });
    }

    /// The next completion, if one is ready.
    pub fn next(&self) -> Option<Received> {
        let head = self.head.get();
        let d = self.ring.next(head)?;
        self.head.set(head + 1);
        Some(Received {
            task: d.task,
            len: d.len as usize,
            producer: d.producer,
            imm: d.imm,
            imm_len: d.imm_len,
        })
    }

    /// Makes a producer's `len` bytes at `addr` (a posted buffer's tail) visible there.
    pub fn settle(&self, addr: usize, len: usize) {
        self.memory.settle(addr, len);
    }

    /// Whether a completion is ready.
    pub fn ready(&self) -> bool {
        self.ring.ready(self.head.get())
    }

    /// The consumer's PE is about to wait: producers wake it from now on. Returns whether a
    /// completion is ready already (looked at after asking, so none is missed).
    pub fn sleep(&self) -> bool {
        self.sleeping.set(true);
        self.ring.sleep();
        self.ready()
    }

    /// The consumer runs again: producers stop waking it, and the wake-ups sent while it slept
    /// are consumed (only then: a busy consumer makes no system call). The flag that decides
    /// is this side's own, not the shared one a peer could change.
    pub fn wake_up(&self) {
        if self.sleeping.replace(false) {
            self.ring.awake();
            self.clear_wake();
        }
    }

    /// Consumes the wake-up signals (the PE's handle stays readable until they are read): at
    /// most 4 KiB per call, since the peer writes them and may never stop.
    fn clear_wake(&self) {
        let mut buf = [0u8; 256];
        for _ in 0..16 {
            // SAFETY: reads into a live buffer of that size; EAGAIN means nothing left.
            let n = unsafe {
                libc::recv(
                    self.wake.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n < buf.len() as isize {
                return;
            }
        }
    }

    /// Stops: producers see the consumer gone, the peer is told (by the connection's owner at
    /// its next progress if the queue is full now).
    pub fn stop(&self) {
        self.ring.stop();
        if !self.announced.replace(false) {
            return;
        }
        self.shared.consumer_gone(self.id);
    }
}

impl Drop for FastConsumer {
    fn drop(&mut self) {
        self.shared.release_local_consumer();
    }
}

// ---------------------------------------------------------------------------------------------
// Producer side
// ---------------------------------------------------------------------------------------------

/// A consumer of the peer, as a producer sees it.
pub struct RemoteConsumer {
    pub id: u32,
    imm_len: u32,
    ring: Ring,
    data: Mapping,
    /// Our end of the consumer's wake-up: a stream socket, written without blocking.
    wake: OwnedFd,
    /// `wake` counted in its server's (or client's) descriptor budget.
    _counted: PeerFd,
    /// Set when the consumer is gone or the connection closed.
    pub(super) dead: AtomicBool,
}

impl std::fmt::Debug for RemoteConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteConsumer")
            .field("id", &self.id)
            .field("imm_len", &self.imm_len)
            .finish_non_exhaustive()
    }
}

/// `INVALID_VALUE` unless `fd` is a stream socket: the only kind of wake-up a producer writes
/// to (with `MSG_DONTWAIT | MSG_NOSIGNAL`, so it never blocks nor raises a signal).
fn check_wake_socket(fd: RawFd) -> Result<()> {
    // SAFETY: stat is plain data; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid stat buffer.
    let is_socket =
        unsafe { libc::fstat(fd, &mut st) } == 0 && st.st_mode & libc::S_IFMT == libc::S_IFSOCK;
    let mut kind: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `kind` has `len` writable bytes.
    let stream = is_socket
        && unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_TYPE,
                (&mut kind as *mut libc::c_int).cast(),
                &mut len,
            )
        } == 0
        && kind == libc::SOCK_STREAM;
    if !stream {
        bail!(
            InvalidValue,
            "the peer's consumer announcement carried a wake-up that is not a stream socket"
        );
    }
    // An unconnected socket (or a listening one) would take no byte: wake-ups would vanish.
    // SAFETY: sockaddr_storage is plain data with room for any address; getpeername fills
    // at most `len` bytes of it.
    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: `addr` has `len` writable bytes.
    let connected = unsafe { libc::getpeername(fd, (&raw mut addr).cast(), &mut len) } == 0;
    if !connected {
        bail!(
            InvalidValue,
            "the peer's consumer announcement carried a wake-up socket that is not connected"
        );
    }
    Ok(())
}

impl RemoteConsumer {
    /// Maps what a `CONSUMER_NEW` message carried: descriptors ring, data, wake-up. Everything
    /// is checked: the sizes against the ring depth and the limits, the memory files sealed
    /// and large enough, the wake-up a connected stream socket. Only the wake-up descriptor is
    /// kept, counted in `budget` (`FULL` when that is spent).
    pub fn attach(
        id: u32,
        depth: u64,
        imm_len: u32,
        ring_len: u64,
        data_len: u64,
        mut fds: Vec<OwnedFd>,
        budget: &Arc<PeerFds>,
    ) -> Result<Arc<RemoteConsumer>> {
        let counted = budget.take()?;
        if fds.len() != 3
            || !depth.is_power_of_two()
            || depth > dpakit_abi::soft::limits::CPU_MAX_NUM_TASKS.next_power_of_two() as u64
            || Ring::checked_bytes(depth) != usize::try_from(ring_len).ok()
        {
            bail!(InvalidValue, "a malformed consumer announcement");
        }
        // An mmap registers at most MMAP_MAX_LEN bytes; its pages span at most two more.
        let max_data = (dpakit_abi::soft::limits::MMAP_MAX_LEN + 2 * super::page_size()) as u64;
        if data_len > max_data {
            bail!(
                InvalidValue,
                "the peer announced a consumer sharing {data_len} bytes; an mmap shares at most {max_data}"
            );
        }
        let wake = fds.pop().expect("three");
        let data_fd = fds.pop().expect("three");
        let ring_fd = fds.pop().expect("three");
        check_wake_socket(wake.as_raw_fd())?;
        check_shared_file(ring_fd.as_raw_fd(), ring_len as usize)?;
        check_shared_file(data_fd.as_raw_fd(), data_len as usize)?;
        let ring = Ring::attach(Mapping::map(ring_fd.as_raw_fd(), ring_len as usize)?, depth);
        let data = Mapping::map(data_fd.as_raw_fd(), data_len as usize)?;
        Ok(Arc::new(RemoteConsumer {
            id,
            imm_len: imm_len.min(MAX_IMM_DATA_LEN as u32),
            ring,
            data,
            wake,
            _counted: counted,
            dead: AtomicBool::new(false),
        }))
    }

    /// Memory the consumer shares with us: its ring and its data.
    pub fn shared_bytes(&self) -> u64 {
        (self.ring.len() + self.data.len) as u64
    }

    /// Wakes the consumer: one byte on its socket, never waiting, never signalling. A full
    /// socket has a wake-up pending already.
    fn wake(&self) {
        let one = 1u8;
        // SAFETY: sends one byte from a live variable.
        unsafe {
            libc::send(
                self.wake.as_raw_fd(),
                (&one as *const u8).cast(),
                1,
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
    }
}

/// What one attempt to send found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// Written and published.
    Sent,
    /// No receive posted yet: try again later.
    Wait,
}

/// A running producer on a connection.
pub struct FastProducer {
    pub id: u32,
    shared: Arc<ConnShared>,
    /// Consumers looked up before, so the datapath takes no lock.
    known: std::cell::RefCell<Vec<Arc<RemoteConsumer>>>,
}

impl std::fmt::Debug for FastProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastProducer")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl FastProducer {
    pub fn new(shared: Arc<ConnShared>, id: u32) -> FastProducer {
        FastProducer {
            id,
            shared,
            known: std::cell::RefCell::new(Vec::with_capacity(8)),
        }
    }

    fn consumer(&self, id: u32) -> Result<Arc<RemoteConsumer>> {
        if let Some(c) = self.known.borrow().iter().find(|c| c.id == id) {
            return Ok(c.clone());
        }
        let Some(c) = self.shared.find_remote(id) else {
            bail!(
                NotFound,
                "no consumer with id {id} on this connection (the peer announces its consumers \
                 through the new-consumer event; ids are not reused)"
            );
        };
        self.known.borrow_mut().push(c.clone());
        Ok(c)
    }

    /// Ends the connection from this side: its peer stopped taking (see
    /// [`ConnShared::abort`]).
    pub fn abort(&self) {
        self.shared.abort();
    }

    /// Sends `data` and `imm` to consumer `id`: `Wait` while it has no receive posted,
    /// `INVALID_VALUE` if the posted buffer or its immediate room is too small, `NOT_FOUND`
    /// once it is gone.
    pub fn try_send(&self, id: u32, data: &[u8], imm: &[u8]) -> Result<Attempt> {
        let c = self.consumer(id)?;
        if c.dead.load(Ordering::Acquire) || !c.ring.alive() {
            self.known.borrow_mut().retain(|k| k.id != id);
            bail!(NotFound, "consumer {id} is gone");
        }
        if imm.len() > c.imm_len as usize {
            bail!(
                InvalidValue,
                "{} bytes of immediate data for consumer {id}, which takes {} \
                 (doca_comch_consumer_set_imm_data_len)",
                imm.len(),
                c.imm_len
            );
        }
        let post = match c.ring.claim(data.len() as u64) {
            Claim::Got(post) => post,
            Claim::Empty => return Ok(Attempt::Wait),
            Claim::TooLarge(room) => bail!(
                InvalidValue,
                "a {}-byte send is larger than consumer {id}'s posted buffer ({room} bytes free \
                 at its tail)",
                data.len()
            ),
        };
        let end = (post.offset as usize).checked_add(data.len());
        if end.is_none_or(|end| end > c.data.len) {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                "the consumer posted a buffer outside its memory",
            ));
        }
        // SAFETY: `[offset, offset + len)` lies inside the consumer's shared memory (checked),
        // and the claimed receive gives this producer that range until it publishes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                c.data.ptr.add(post.offset as usize),
                data.len(),
            )
        };
        let mut imm_buf = [0u8; MAX_IMM_DATA_LEN];
        imm_buf[..imm.len()].copy_from_slice(imm);
        let done = Done {
            task: post.task,
            producer: self.id,
            len: data.len() as u64,
            imm_len: imm.len() as u32,
            imm: imm_buf,
        };
        match c.ring.complete(done, || c.dead.load(Ordering::Acquire)) {
            Ok(()) => {}
            Err(Stall::Gone) => bail!(NotFound, "consumer {id} is gone"),
            Err(Stall::Stuck) => {
                let e = Error::new(
                    ErrorCode::ConnectionAborted,
                    format!(
                        "consumer {id} does not return its completion slots (a broken or hostile \
                         peer): the connection is dropped"
                    ),
                );
                self.known.borrow_mut().retain(|k| k.id != id);
                c.dead.store(true, Ordering::Release);
                self.shared.abort();
                return Err(e);
            }
        }
        if c.ring.wants_wake() {
            c.wake();
        }
        Ok(Attempt::Sent)
    }
}
