//! How many producers and consumers exist on a connection, and whether new ones may come.
//!
//! Endpoints may be created on any thread while the connection's owner disconnects or stops
//! it. "No endpoint exists, so disconnect" and "not disconnecting, so add an endpoint" must not
//! both succeed: the count and a sealed bit share one word, and each side changes it with one
//! compare-exchange (the loom model below).

use dpakit_sync::{AtomicU64, Ordering};

/// Set while the connection is being (or has been) taken down: no new endpoint.
const SEALED: u64 = 1 << 63;

/// The endpoint count of one connection and its sealed bit.
#[derive(Debug, Default)]
pub struct Endpoints(AtomicU64);

impl Endpoints {
    /// Counts a new endpoint in; false once sealed.
    pub fn hold(&self) -> bool {
        let mut s = self.0.load(Ordering::Acquire);
        loop {
            if s & SEALED != 0 {
                return false;
            }
            match self
                .0
                .compare_exchange_weak(s, s + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
    }

    /// An endpoint is gone.
    pub fn release(&self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }

    /// Endpoints alive.
    #[cfg(all(test, loom))]
    pub fn count(&self) -> u64 {
        self.0.load(Ordering::Acquire) & !SEALED
    }

    /// Seals the connection if no endpoint exists; else how many do.
    pub fn seal_if_unused(&self) -> Result<(), u64> {
        let mut s = self.0.load(Ordering::Acquire);
        loop {
            let n = s & !SEALED;
            if n != 0 {
                return Err(n);
            }
            match self
                .0
                .compare_exchange_weak(s, s | SEALED, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(()),
                Err(now) => s = now,
            }
        }
    }

    /// Undoes a seal whose takedown did not happen after all.
    pub fn unseal(&self) {
        self.0.fetch_and(!SEALED, Ordering::AcqRel);
    }

    /// Seals for good (the connection is closed whatever exists on it).
    pub fn seal(&self) {
        self.0.fetch_or(SEALED, Ordering::AcqRel);
    }
}

#[cfg(all(test, loom))]
mod loom {
    use super::*;
    use ::loom::sync::Arc;
    use ::loom::thread;

    #[test]
    fn an_endpoint_is_never_added_to_a_sealed_connection() {
        dpakit_sync::model(3, || {
            let e = Arc::new(Endpoints::default());
            let creator = {
                let e = e.clone();
                thread::spawn(move || e.hold())
            };
            let sealed = e.seal_if_unused().is_ok();
            let held = creator.join().unwrap();
            assert!(
                !(sealed && held),
                "a disconnected connection got an endpoint"
            );
            assert!(sealed || held, "one of them wins");
            assert_eq!(e.count(), u64::from(held));
        });
    }
}
