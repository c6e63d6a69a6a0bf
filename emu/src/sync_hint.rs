//! Wake-up hints over the ring's public counters.

use crate::ring::CompletionRing;

/// Whether a message was pushed (or is being pushed) and not yet polled. A hint: it may report a
/// message a producer is still writing, which costs at most one spurious wake-up, never a lost
/// one (callers check it after a SeqCst fence that pairs with the producer's).
#[inline]
pub(crate) fn has_unpolled(ring: &CompletionRing) -> bool {
    ring.len_hint() as u64 > ring.outstanding()
}
