//! A DPA context's first fatal error: recorded once under a lock, and announced by a flag so
//! that the checks every API call makes cost one load while there is none. The first error
//! wins; a reader that sees the flag finds the error (the loom model below).

use crate::sync::{AtomicBool, Mutex, Ordering};

/// The first error recorded, if any.
#[derive(Debug)]
pub(crate) struct Fatal<E> {
    error: Mutex<Option<E>>,
    set: AtomicBool,
}

impl<E: Clone> Fatal<E> {
    pub(crate) fn new() -> Self {
        Self {
            error: Mutex::new(None),
            set: AtomicBool::new(false),
        }
    }

    /// Records `error` unless an error is recorded already; if it was the first, then runs
    /// `first` with it, still under the lock.
    pub(crate) fn set(&self, error: E, first: impl FnOnce(&E)) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            let error = slot.insert(error);
            self.set.store(true, Ordering::Release);
            first(error);
        }
    }

    /// The error recorded, if any.
    pub(crate) fn get(&self) -> Option<E> {
        if !self.set.load(Ordering::Acquire) {
            return None;
        }
        self.error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// Two threads fault at once while a third checks twice. Exactly one error is recorded,
    /// once, and a check never sees an error change or disappear.
    #[test]
    fn the_first_error_wins_and_stays() {
        crate::sync::model(3, || {
            let fatal = Arc::new(Fatal::<u32>::new());
            let firsts = Arc::new(loom::sync::atomic::AtomicUsize::new(0));
            let faulting: Vec<_> = [1, 2]
                .into_iter()
                .map(|code| {
                    let (fatal, firsts) = (fatal.clone(), firsts.clone());
                    thread::spawn(move || {
                        fatal.set(code, |_| {
                            firsts.fetch_add(1, Ordering::Relaxed);
                        })
                    })
                })
                .collect();
            thread::yield_now();
            let early = fatal.get();
            let later = fatal.get();
            if early.is_some() {
                assert_eq!(early, later, "the recorded error changed or vanished");
            }
            for t in faulting {
                t.join().unwrap();
            }
            let last = fatal.get();
            assert!(matches!(last, Some(1 | 2)));
            if later.is_some() {
                assert_eq!(later, last, "the recorded error changed");
            }
            assert_eq!(
                firsts.load(Ordering::Relaxed),
                1,
                "more than one first error"
            );
        });
    }
}
