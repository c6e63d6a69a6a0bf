//! Completions and messages handed out as values, for objects built without a callback for them.
//!
//! The queue holds at most one entry per task of the object's pool: the object counts an entry
//! not taken yet as a task still in use, and refuses new work past the pool with `NO_MEMORY`.
//! So nothing is dropped, the queue never grows past what it reserved at creation, and taking
//! and queueing allocate nothing.

use crate::error::{Result, bail};
use crate::pe::Pe;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::time::Duration;

/// Values an object queues for the program to take.
#[derive(Debug)]
pub(crate) struct Pulled<T> {
    queue: RefCell<VecDeque<T>>,
}

impl<T> Pulled<T> {
    /// Room for `capacity` values: the object's task pool.
    pub(crate) fn new(capacity: u32) -> Self {
        Pulled {
            queue: RefCell::new(VecDeque::with_capacity(capacity as usize)),
        }
    }

    /// Queues `value`; within the reserved room, since the object counts queued values against
    /// its pool.
    pub(crate) fn push(&self, value: T) {
        self.queue.borrow_mut().push_back(value);
    }

    /// The oldest value, if any.
    pub(crate) fn pop(&self) -> Option<T> {
        self.queue.borrow_mut().pop_front()
    }

    /// Values not taken yet.
    pub(crate) fn len(&self) -> usize {
        self.queue.borrow().len()
    }

    /// The oldest value, progressing `pe` (asleep on its notification handle when idle) until
    /// one is there; `None` after `timeout`. `what` names the wait for the error raised inside
    /// one of `pe`'s callbacks, where waiting for progress cannot work.
    pub(crate) fn next(&self, pe: &Pe, what: &str, timeout: Duration) -> Result<Option<T>> {
        if let Some(value) = self.pop() {
            return Ok(Some(value));
        }
        pe.require_outside_callback(what)?;
        pe.progress_within(timeout, || self.len() > 0)?;
        Ok(self.pop())
    }
}

/// The next value an object hands out (as [`Pulled::next`]), for an object that may have been
/// built to report to a callback instead: `BAD_STATE` saying `why_none` then, rather than a
/// wait for values that never come.
pub(crate) fn next_of<T>(
    pulled: Option<&Pulled<T>>,
    pe: &Pe,
    what: &str,
    why_none: &str,
    timeout: Duration,
) -> Result<Option<T>> {
    match pulled {
        Some(pulled) => pulled.next(pe, what, timeout),
        None => bail!(BadState, "{why_none}"),
    }
}
