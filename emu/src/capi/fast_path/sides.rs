//! The two sides of the fast path: a consumer with its ring and memory, and a producer with
//! the peer's consumers it writes into.

use super::ring::{Claim, Done, Post, Ring, Stall};
use super::{ConnShared, Mapping, SharedMemory, check_shared_file, memfd};
use crate::error::{ErrorCode, Result, bail, err};
use crate::limits::MAX_IMM_DATA_LEN;
use crate::sync::{AtomicBool, Ordering};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// Consumer side
// ---------------------------------------------------------------------------------------------

/// What a received completion says.
pub(crate) struct Received {
    pub task: u32,
    pub len: usize,
    pub producer: u32,
    pub imm: [u8; MAX_IMM_DATA_LEN],
    pub imm_len: u32,
}

/// A running consumer on a connection.
pub(crate) struct FastConsumer {
    pub id: u32,
    ring: Ring,
    ring_fd: OwnedFd,
    wake: OwnedFd,
    memory: Arc<SharedMemory>,
    shared: Arc<ConnShared>,
    /// Completions consumed so far.
    head: std::cell::Cell<u64>,
}

impl FastConsumer {
    /// Makes the ring for `num_tasks` receives and announces the consumer to the peer.
    pub(crate) fn start(
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
        // SAFETY: no pointers; the result is checked.
        let wake = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if wake < 0 {
            bail!(
                OperatingSystem,
                "eventfd: {}",
                std::io::Error::last_os_error()
            );
        }
        // SAFETY: a fresh descriptor nothing else owns.
        let wake = unsafe { OwnedFd::from_raw_fd(wake) };
        let c = FastConsumer {
            id,
            ring,
            ring_fd,
            wake,
            memory,
            shared,
            head: std::cell::Cell::new(0),
        };
        c.announce(depth, imm_len)?;
        Ok(c)
    }

    fn announce(&self, depth: u64, imm_len: u32) -> Result<()> {
        let msg = crate::wire::proto::consumer_new(
            self.id,
            depth,
            imm_len,
            Ring::bytes(depth) as u64,
            self.memory.len as u64,
        );
        self.shared.send(
            &[&msg],
            &[
                self.ring_fd.as_raw_fd(),
                self.memory.fd.as_raw_fd(),
                self.wake.as_raw_fd(),
            ],
        )
    }

    /// The descriptor the consumer's PE watches.
    pub(crate) fn wake_fd(&self) -> RawFd {
        self.wake.as_raw_fd()
    }

    /// Posts task `task`'s buffer: data lands at `data` (the buffer's tail), at most
    /// `capacity` bytes. The buffer lies in the shared memory (checked by the caller).
    pub(crate) fn post(&self, task: u32, data: usize, capacity: usize) {
        self.ring.post(Post {
            offset: (data - self.memory.base) as u64,
            capacity: capacity as u64,
            task,
            _pad: 0,
        });
    }

    /// The next completion, if one is ready.
    pub(crate) fn next(&self) -> Option<Received> {
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
    pub(crate) fn settle(&self, addr: usize, len: usize) {
        self.memory.settle(addr, len);
    }

    /// Whether a completion is ready.
    pub(crate) fn ready(&self) -> bool {
        self.ring.ready(self.head.get())
    }

    /// Consumes the wake-up signal (the PE's handle stays readable until it is read).
    pub(crate) fn clear_wake(&self) {
        let mut v = 0u64;
        // SAFETY: reads 8 bytes into a live u64; EAGAIN means no signal.
        unsafe { libc::read(self.wake.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    }

    /// Stops: producers see the consumer gone, the peer is told.
    pub(crate) fn stop(&self) {
        self.ring.stop();
        let _ = self.shared.send(
            &[&crate::wire::proto::with_id(
                crate::wire::proto::TAG_CONSUMER_GONE,
                self.id,
            )],
            &[],
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Producer side
// ---------------------------------------------------------------------------------------------

/// A consumer of the peer, as a producer sees it.
pub(crate) struct RemoteConsumer {
    pub id: u32,
    imm_len: u32,
    ring: Ring,
    data: Mapping,
    wake: OwnedFd,
    /// Set when the consumer is gone or the connection closed.
    pub(super) dead: AtomicBool,
}

impl RemoteConsumer {
    /// Maps what a `CONSUMER_NEW` message carried: descriptors ring, data, wake-up.
    pub(crate) fn attach(
        id: u32,
        depth: u64,
        imm_len: u32,
        ring_len: u64,
        data_len: u64,
        mut fds: Vec<OwnedFd>,
    ) -> Result<Arc<RemoteConsumer>> {
        if fds.len() != 3
            || !depth.is_power_of_two()
            || Ring::checked_bytes(depth) != usize::try_from(ring_len).ok()
        {
            bail!(InvalidValue, "a malformed consumer announcement");
        }
        let wake = fds.pop().expect("three");
        let data_fd = fds.pop().expect("three");
        let ring_fd = fds.pop().expect("three");
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
            dead: AtomicBool::new(false),
        }))
    }
}

/// What one attempt to send found.
pub(crate) enum Attempt {
    /// Written and published.
    Sent,
    /// No receive posted yet: try again later.
    Wait,
}

/// A running producer on a connection.
pub(crate) struct FastProducer {
    pub id: u32,
    shared: Arc<ConnShared>,
    /// Consumers looked up before, so the datapath takes no lock.
    known: std::cell::RefCell<Vec<Arc<RemoteConsumer>>>,
}

impl FastProducer {
    pub(crate) fn new(shared: Arc<ConnShared>, id: u32) -> FastProducer {
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

    /// Sends `data` and `imm` to consumer `id`: `Wait` while it has no receive posted,
    /// `INVALID_VALUE` if the posted buffer or its immediate room is too small, `NOT_FOUND`
    /// once it is gone.
    pub(crate) fn try_send(&self, id: u32, data: &[u8], imm: &[u8]) -> Result<Attempt> {
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
            return Err(err(
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
            Err(Stall::Stuck) => bail!(
                IoFailed,
                "consumer {id} does not return completion slots: its ring is corrupt"
            ),
        }
        let one = 1u64;
        // SAFETY: writes 8 bytes to the consumer's eventfd; a full counter already signals.
        unsafe { libc::write(c.wake.as_raw_fd(), (&one as *const u64).cast(), 8) };
        Ok(Attempt::Sent)
    }
}
