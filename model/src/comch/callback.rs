//! Completion callbacks that may call back into the context that runs them.

use std::cell::RefCell;

/// A user callback held by a PE-bound context. It is taken out of its cell while it runs, so it
/// may use the context again (repost a receive, send the next message) without a double borrow.
pub(crate) struct Callback<F: ?Sized>(RefCell<Option<Box<F>>>);

impl<F: ?Sized> Callback<F> {
    pub(crate) fn new(f: Option<Box<F>>) -> Self {
        Self(RefCell::new(f))
    }

    /// Runs the callback, if one is set, through `call`.
    #[inline]
    pub(crate) fn run(&self, call: impl FnOnce(&mut F)) {
        let taken = self.0.borrow_mut().take();
        if let Some(mut f) = taken {
            call(&mut f);
            self.0.borrow_mut().get_or_insert(f);
        }
    }
}
