//! The part of a completion context a busy-poll worker scans: its arming and whether it was
//! destroyed. A leaf, so the thread's scan list and the completion contexts do not name each
//! other.

use crate::sync::{AtomicBool, Ordering};
use crate::wake::Arm;
use std::fmt;

/// Arming of one completion context. Publishing into an armed context disarms it and triggers
/// the attached thread; `request_notification` re-arms it.
pub(crate) struct Trigger {
    pub(super) armed: Arm,
    /// The context was destroyed: it triggers nothing any more.
    retired: AtomicBool,
}

impl fmt::Debug for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trigger")
            .field("armed", &self.armed)
            .field("retired", &self.is_retired())
            .finish()
    }
}

impl Trigger {
    /// Armed from the start: the first completion triggers the thread.
    pub(super) fn new() -> Self {
        Self {
            armed: Arm::new(true),
            retired: AtomicBool::new(false),
        }
    }

    /// The worker's scan (busy-poll mode): if armed and `ready`, consume the arming.
    #[inline]
    pub(crate) fn take_if(&self, ready: impl FnOnce() -> bool) -> bool {
        if self.armed.is_armed_local() && !self.is_retired() && ready() {
            self.armed.set_local(false);
            true
        } else {
            false
        }
    }

    pub(super) fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }

    fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Relaxed)
    }
}
