//! The Comch control path in shared memory: one ring per direction of a connection.
//!
//! After the handshake each side lays out a ring for what it receives in a sealed memfd and
//! announces it on the socket (`CTRL_RING`); the peer maps it, answers `CTRL_RING_ACK` on the
//! socket and from then on writes its control messages into the ring instead of the socket.
//! The receiver reads the ring only after that acknowledgement, so messages sent on the socket
//! before it are delivered first; it also empties the ring before it handles any later socket
//! message (a disconnect, a consumer announcement), so each side's messages keep the order
//! they were sent in.
//!
//! The socket stays for setup, liveness and wake-ups: a receiver that may sleep sets a flag
//! in the ring and its sender, after publishing, sends `WAKE` on the socket, which the
//! receiver's progress engine waits on; a sender that finds the ring full sets another flag
//! and the receiver wakes it when it frees a slot. Busy peers exchange no system call.
//!
//! A single producer and a single consumer (each connection's owner), sharing only atomics
//! through the concurrency facade, so loom checks the protocol. Trust: the ring's memory is
//! writable by the peer. The receiver keeps its own read position, accepts a published count
//! only within one ring of it and a length only up to the agreed maximum, and copies each
//! message out of the ring before anything reads it; the sender keeps its own write position
//! and accepts a read position only behind it. Anything else drops the peer.

use crate::Result;
use crate::fast_path::{Mapping, check_shared_file, memfd};
use dpakit_abi::bail;
use dpakit_abi::soft::limits::COMCH_CTRL_RING_MAX_DEPTH;
use dpakit_sync::{AtomicU32, AtomicU64, Ordering, fence};
use std::os::fd::{AsRawFd, OwnedFd};

/// The head of the region; each counter on its own cache line.
#[repr(C)]
struct Header {
    /// Messages the sender published (modulo 2^64).
    tail: Line,
    /// Messages the receiver took (modulo 2^64).
    head: Line,
    /// 1 while the receiver may sleep: the sender wakes it after publishing.
    sleeping: Line,
    /// 1 while the sender waits for room: the receiver wakes it after taking a message.
    send_waiting: Line,
}

#[repr(C, align(64))]
struct Line(AtomicU64);

/// A slot: the message's length, then its bytes (room for the agreed maximum).
#[repr(C)]
struct SlotHead {
    len: AtomicU32,
    _pad: u32,
}

/// What the receiver and the sender both know of a ring.
struct Ring {
    mem: Mapping,
    depth: u64,
    max_msg: usize,
}

impl Ring {
    fn slot_bytes(max_msg: usize) -> usize {
        (std::mem::size_of::<SlotHead>() + max_msg).next_multiple_of(64)
    }

    /// Bytes of a ring of `depth` slots for messages of up to `max_msg` bytes; `None` where
    /// that does not fit in the address space.
    fn bytes(depth: u64, max_msg: usize) -> Option<usize> {
        usize::try_from(depth)
            .ok()?
            .checked_mul(Self::slot_bytes(max_msg))?
            .checked_add(std::mem::size_of::<Header>())
    }

    fn header(&self) -> &Header {
        // SAFETY: the region starts with a Header (laid out by the receiver; size checked).
        unsafe { &*self.mem.ptr.cast::<Header>() }
    }

    fn slot(&self, i: u64) -> *mut u8 {
        let offset = std::mem::size_of::<Header>()
            + (i % self.depth) as usize * Self::slot_bytes(self.max_msg);
        // SAFETY: `i % depth` indexes a slot inside the region (its size was checked).
        unsafe { self.mem.ptr.add(offset) }
    }

    fn slot_head(&self, i: u64) -> &SlotHead {
        // SAFETY: every slot starts with a SlotHead, 64-byte aligned; accessed atomically.
        unsafe { &*self.slot(i).cast::<SlotHead>() }
    }

    fn payload(&self, i: u64) -> *mut u8 {
        // SAFETY: the slot's bytes follow its head, inside the slot.
        unsafe { self.slot(i).add(std::mem::size_of::<SlotHead>()) }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // In the loom model the atomics are loom objects in heap memory: end their lives.
        // Shared mappings hold plain atomics the peer may still use; nothing to drop there.
        if self.mem.is_heap() {
            // SAFETY: laid out by `CtrlReceiver::lay_out` (heap rings are only made so), once.
            unsafe {
                std::ptr::drop_in_place(self.mem.ptr.cast::<Header>());
                for i in 0..self.depth {
                    std::ptr::drop_in_place(self.slot(i).cast::<SlotHead>());
                }
            }
        }
    }
}

/// The depth of a receive ring for a receive queue of `recv_queue_size` messages: that many
/// slots, rounded up to a power of two, at most [`COMCH_CTRL_RING_MAX_DEPTH`].
pub fn depth_for(recv_queue_size: u32) -> u64 {
    u64::from(recv_queue_size.max(1))
        .next_power_of_two()
        .min(COMCH_CTRL_RING_MAX_DEPTH as u64)
}

/// The receiving side of one direction: lays the ring out and takes messages from it.
pub struct CtrlReceiver {
    ring: Ring,
    /// Messages taken: the receiver's own count, never read back from shared memory.
    head: u64,
    /// Whether this side set the sleeping flag (so only it clears it).
    armed: bool,
}

/// The sending side of one direction: writes messages into the peer's ring.
pub struct CtrlSender {
    ring: Ring,
    /// Messages published: the sender's own count.
    tail: u64,
}

impl std::fmt::Debug for CtrlReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CtrlReceiver")
            .field("depth", &self.ring.depth)
            .field("head", &self.head)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for CtrlSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CtrlSender")
            .field("depth", &self.ring.depth)
            .field("tail", &self.tail)
            .finish_non_exhaustive()
    }
}

/// What a send found.
#[derive(Debug, PartialEq, Eq)]
pub enum Pushed {
    /// In the ring; `wake` says the receiver may be asleep: send it `WAKE`.
    Sent { wake: bool },
    /// No room: keep the message and try again once the receiver frees a slot (it sends
    /// `WAKE` then).
    Full,
}

impl CtrlReceiver {
    /// A ring of `depth` slots (a power of two) for messages of up to `max_msg` bytes in a
    /// fresh sealed memfd, and the memfd to announce.
    pub fn create(depth: u64, max_msg: usize) -> Result<(CtrlReceiver, OwnedFd, u64)> {
        let Some(len) = Ring::bytes(depth, max_msg).filter(|_| depth.is_power_of_two()) else {
            bail!(
                InvalidValue,
                "a control ring of {depth} slots of {max_msg} bytes"
            );
        };
        let fd = memfd(c"dpakit-comch-ctrl", len)?;
        let mem = Mapping::map(fd.as_raw_fd(), len)?;
        Ok((Self::lay_out(mem, depth, max_msg), fd, len as u64))
    }

    fn lay_out(mem: Mapping, depth: u64, max_msg: usize) -> CtrlReceiver {
        let ring = Ring {
            mem,
            depth,
            max_msg,
        };
        // A fresh memfd reads as zeros, which is what every counter, flag and slot length
        // starts as: nothing is written, so a slot's pages become resident only once a message
        // passes through it and an idle connection costs no ring memory. Heap rings (in the
        // loom model the atomics are objects of their own) are laid out in full.
        if ring.mem.is_heap() {
            // SAFETY: the region is ours alone until it is announced; each object is written
            // in place at its aligned offset inside it.
            unsafe {
                ring.mem.ptr.cast::<Header>().write(Header {
                    tail: Line(AtomicU64::new(0)),
                    head: Line(AtomicU64::new(0)),
                    sleeping: Line(AtomicU64::new(0)),
                    send_waiting: Line(AtomicU64::new(0)),
                });
                for i in 0..depth {
                    ring.slot(i).cast::<SlotHead>().write(SlotHead {
                        len: AtomicU32::new(0),
                        _pad: 0,
                    });
                }
            }
        }
        CtrlReceiver {
            ring,
            head: 0,
            armed: false,
        }
    }

    /// Takes the next message into `buf` (at least the agreed maximum long): its length, or
    /// `None` when the ring is empty. `INVALID_VALUE` when the peer broke the protocol.
    pub fn pop(&mut self, buf: &mut [u8]) -> Result<Option<usize>> {
        let tail = self.ring.header().tail.0.load(Ordering::Acquire);
        let ready = tail.wrapping_sub(self.head);
        if ready == 0 {
            return Ok(None);
        }
        if ready > self.ring.depth {
            bail!(
                InvalidValue,
                "the peer published {ready} control messages into a ring of {}",
                self.ring.depth
            );
        }
        let len = self.ring.slot_head(self.head).len.load(Ordering::Relaxed) as usize;
        if len > self.ring.max_msg || len > buf.len() {
            bail!(
                InvalidValue,
                "a {len}-byte control message, more than the {} bytes agreed",
                self.ring.max_msg
            );
        }
        // SAFETY: `len` bytes of the slot (checked against its room) into our own buffer
        // (checked against its length). The peer may still scribble on the slot: it can only
        // change what it sent, never how it is read, since only the copy is used.
        unsafe {
            std::ptr::copy_nonoverlapping(self.ring.payload(self.head), buf.as_mut_ptr(), len)
        };
        self.head = self.head.wrapping_add(1);
        self.ring
            .header()
            .head
            .0
            .store(self.head, Ordering::Release);
        Ok(Some(len))
    }

    /// After taking messages: whether the sender waits for room (send it `WAKE`). Clears the
    /// flag, so one wake-up answers one wait.
    pub fn sender_waiting(&self) -> bool {
        fence(Ordering::SeqCst);
        take_flag(&self.ring.header().send_waiting.0)
    }

    /// Before the receiver may sleep: from now on the sender wakes it. Returns whether a
    /// message is there already (then do not sleep): with the fences here and in
    /// [`CtrlSender::push`], either this look sees a message published meanwhile or its sender
    /// sees the flag.
    pub fn sleep(&mut self) -> bool {
        self.armed = true;
        self.ring.header().sleeping.0.store(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        self.ring.header().tail.0.load(Ordering::Acquire) != self.head
    }

    /// The receiver runs: the sender need not wake it.
    pub fn awake(&mut self) {
        if self.armed {
            self.armed = false;
            self.ring.header().sleeping.0.store(0, Ordering::Relaxed);
        }
    }
}

impl CtrlSender {
    /// Maps the ring the peer announced: `fd` must be a sealed memfd of exactly the ring's
    /// size for `depth` (a power of two, at most [`COMCH_CTRL_RING_MAX_DEPTH`]) and the
    /// agreed `max_msg`. `INVALID_VALUE` otherwise.
    pub fn attach(fd: &OwnedFd, depth: u64, ring_len: u64, max_msg: usize) -> Result<CtrlSender> {
        let expected = Ring::bytes(depth, max_msg);
        if !depth.is_power_of_two()
            || depth > COMCH_CTRL_RING_MAX_DEPTH as u64
            || expected.map(|n| n as u64) != Some(ring_len)
        {
            bail!(
                InvalidValue,
                "the peer announced a control ring of {depth} slots in {ring_len} bytes (at most \
                 {COMCH_CTRL_RING_MAX_DEPTH} slots, a power of two, of {max_msg}-byte messages)"
            );
        }
        let len = ring_len as usize;
        check_shared_file(fd.as_raw_fd(), len)?;
        let mem = Mapping::map(fd.as_raw_fd(), len)?;
        Ok(Self::over(mem, depth, max_msg))
    }

    fn over(mem: Mapping, depth: u64, max_msg: usize) -> CtrlSender {
        CtrlSender {
            ring: Ring {
                mem,
                depth,
                max_msg,
            },
            tail: 0,
        }
    }

    /// Writes `msg` (at most the agreed maximum: the caller checked) into the next slot.
    /// `INVALID_VALUE` when the peer broke the protocol.
    pub fn push(&mut self, msg: &[u8]) -> Result<Pushed> {
        debug_assert!(msg.len() <= self.ring.max_msg);
        if !self.has_room()? {
            // Ask to be woken, then look again: either this look sees the slot the receiver
            // freed meanwhile, or the receiver sees the flag (fences here and in
            // `CtrlReceiver::sender_waiting`).
            self.ask_to_be_woken();
            if !self.has_room()? {
                return Ok(Pushed::Full);
            }
        }
        let len = msg.len().min(self.ring.max_msg);
        // SAFETY: the slot at `tail` is the sender's until it publishes it (the receiver has
        // taken everything before it, by `has_room`); `len` fits its room.
        unsafe { std::ptr::copy_nonoverlapping(msg.as_ptr(), self.ring.payload(self.tail), len) };
        self.ring
            .slot_head(self.tail)
            .len
            .store(len as u32, Ordering::Relaxed);
        self.tail = self.tail.wrapping_add(1);
        self.ring
            .header()
            .tail
            .0
            .store(self.tail, Ordering::Release);
        fence(Ordering::SeqCst);
        let wake = take_flag(&self.ring.header().sleeping.0);
        Ok(Pushed::Sent { wake })
    }

    /// Messages the receiver has taken (modulo 2^64): a send is delivered once this passes
    /// it. `INVALID_VALUE` for a count the receiver could not have reached.
    pub fn taken(&self) -> Result<u64> {
        let head = self.ring.header().head.0.load(Ordering::Acquire);
        if self.tail.wrapping_sub(head) > self.ring.depth {
            bail!(
                InvalidValue,
                "the peer's control ring says it took messages that were never sent"
            );
        }
        Ok(head)
    }

    /// Before the sender sleeps with messages in the ring: the receiver wakes it when it takes
    /// one. Whether the receiver took any since `seen` (then do not sleep).
    pub fn sleep_until_taken(&self, seen: u64) -> bool {
        self.ask_to_be_woken();
        self.ring.header().head.0.load(Ordering::Acquire) != seen
    }

    /// Sets the flag that makes the receiver wake this sender after it takes a message; the
    /// fence orders it before the sender's next look at the read position.
    fn ask_to_be_woken(&self) {
        self.ring
            .header()
            .send_waiting
            .0
            .store(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }

    /// Whether the slot at `tail` is free; `INVALID_VALUE` for a read position the receiver
    /// could not have reached.
    fn has_room(&self) -> Result<bool> {
        Ok(self.tail.wrapping_sub(self.taken()?) < self.ring.depth)
    }
}

/// Clears a wake-up flag the other side set: whether it was set (then wake it). Looks before it
/// swaps, so an unset flag costs no write to the other side's line.
fn take_flag(flag: &AtomicU64) -> bool {
    flag.load(Ordering::Relaxed) != 0 && flag.swap(0, Ordering::Relaxed) != 0
}

#[cfg(test)]
mod tests;
