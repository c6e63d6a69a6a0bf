//! A message's bytes as an event hands them out: a buffer from the endpoint's pool, which goes
//! back to it when dropped, so taking messages as values allocates nothing once warm.

use std::cell::RefCell;
use std::fmt;
use std::ops::Deref;
use std::rc::{Rc, Weak};

/// Buffers a pool keeps for reuse at most; more in flight at once are allocated and freed.
const POOL_KEEP: usize = 64;

/// An endpoint's spare message buffers.
#[derive(Debug, Default)]
pub(super) struct Pool {
    spare: Rc<RefCell<Vec<Vec<u8>>>>,
}

impl Pool {
    /// `bytes` in a buffer of the pool (one of `capacity` bytes when none is spare).
    pub(super) fn take(&self, bytes: &[u8], capacity: usize) -> MessageBuf {
        let mut buf = self
            .spare
            .borrow_mut()
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(capacity.max(bytes.len())));
        buf.extend_from_slice(bytes);
        MessageBuf {
            bytes: buf,
            pool: Rc::downgrade(&self.spare),
        }
    }
}

/// The bytes of a received message ([`Event::Message`](super::Event::Message)): a slice to
/// read (`Deref<Target = [u8]>`), whose buffer the endpoint reuses once it is dropped.
pub struct MessageBuf {
    bytes: Vec<u8>,
    /// The endpoint's spare buffers; gone with the endpoint.
    pool: Weak<RefCell<Vec<Vec<u8>>>>,
}

impl MessageBuf {
    /// The bytes, copied out of the pool's buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        self.bytes.clone()
    }
}

impl Deref for MessageBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl AsRef<[u8]> for MessageBuf {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Clone for MessageBuf {
    fn clone(&self) -> Self {
        match self.pool.upgrade() {
            Some(spare) => Pool { spare }.take(&self.bytes, self.bytes.capacity()),
            None => MessageBuf {
                bytes: self.bytes.clone(),
                pool: Weak::new(),
            },
        }
    }
}

impl Drop for MessageBuf {
    fn drop(&mut self) {
        let Some(spare) = self.pool.upgrade() else {
            return;
        };
        let mut spare = spare.borrow_mut();
        if spare.len() < POOL_KEEP {
            let mut buf = std::mem::take(&mut self.bytes);
            buf.clear();
            spare.push(buf);
        }
    }
}

impl fmt::Debug for MessageBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.bytes[..], f)
    }
}

impl PartialEq for MessageBuf {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for MessageBuf {}

impl PartialEq<[u8]> for MessageBuf {
    fn eq(&self, other: &[u8]) -> bool {
        self.bytes == other
    }
}
