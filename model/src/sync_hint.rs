//! Wake-up hints over the ring's counters.

use crate::ring::CompletionRing;

/// Whether a message waits to be polled. Callers check it after a SeqCst fence that pairs with
/// the producer's, so a wake-up is never lost.
#[inline]
pub(crate) fn has_unpolled(ring: &CompletionRing) -> bool {
    ring.has_ready()
}
