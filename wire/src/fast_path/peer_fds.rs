//! How many descriptors a server (or client) keeps open for its peers: one per consumer a peer
//! announced (its wake-up; the ring and memory files are mapped and closed at once). Each
//! connection may announce [`COMCH_MAX_CONSUMERS_PER_CONNECTION`], and a server takes
//! [`COMCH_MAX_CLIENTS`] connections: without a cap of its own, peers together could fill the
//! process's descriptor table, after which the kernel truncates the descriptors of whatever
//! message arrives next and some correct peer is dropped for it. The cap leaves most of the
//! table to the program and to the connections' own sockets.
//!
//! [`COMCH_MAX_CONSUMERS_PER_CONNECTION`]: dpakit_abi::soft::limits::COMCH_MAX_CONSUMERS_PER_CONNECTION
//! [`COMCH_MAX_CLIENTS`]: dpakit_abi::soft::limits::COMCH_MAX_CLIENTS

use crate::Result;
use dpakit_abi::bail;
use dpakit_abi::soft::limits::COMCH_MAX_PEER_DESCRIPTORS;
// A cap, not a protocol: no thread waits on it or publishes data through it.
use dpakit_sync::Ordering;
use dpakit_sync::plain::AtomicUsize;
use std::sync::Arc;

/// The descriptors one server or client holds for its peers, and the most it may.
#[derive(Debug)]
pub struct PeerFds {
    held: AtomicUsize,
    cap: usize,
}

/// One descriptor counted in [`PeerFds`]: given back when dropped (with the descriptor).
#[derive(Debug)]
pub struct PeerFd(Arc<PeerFds>);

impl PeerFds {
    /// A budget of `cap` descriptors.
    pub fn new(cap: usize) -> Arc<PeerFds> {
        Arc::new(PeerFds {
            held: AtomicUsize::new(0),
            cap,
        })
    }

    /// The cap for this process: [`COMCH_MAX_PEER_DESCRIPTORS`], and at most a quarter of the
    /// descriptors the process may open (its soft `RLIMIT_NOFILE` now).
    pub fn for_process() -> Arc<PeerFds> {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: fills the struct it is given.
        let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX)
        } else {
            1024
        };
        Self::new(COMCH_MAX_PEER_DESCRIPTORS.min(soft / 4))
    }

    /// Counts one more descriptor in; `FULL` at the cap.
    pub fn take(self: &Arc<Self>) -> Result<PeerFd> {
        let mut held = self.held.load(Ordering::Relaxed);
        loop {
            if held >= self.cap {
                bail!(
                    Full,
                    "the peers' consumers already hold {held} descriptors of this process, the \
                     most one Comch server or client keeps (COMCH_MAX_PEER_DESCRIPTORS, at most a \
                     quarter of RLIMIT_NOFILE): the announcement is refused"
                );
            }
            match self.held.compare_exchange_weak(
                held,
                held + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(PeerFd(self.clone())),
                Err(now) => held = now,
            }
        }
    }

    /// Descriptors held now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// The most that may be held.
    pub fn cap(&self) -> usize {
        self.cap
    }
}

impl Drop for PeerFd {
    fn drop(&mut self) {
        self.0.held.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_cap_refuses_and_a_drop_gives_back() {
        let fds = PeerFds::new(2);
        let a = fds.take().unwrap();
        let _b = fds.take().unwrap();
        let e = fds.take().unwrap_err();
        assert_eq!(e.code(), dpakit_abi::ErrorCode::Full);
        assert!(e.message().contains("COMCH_MAX_PEER_DESCRIPTORS"), "{e}");
        drop(a);
        assert_eq!(fds.held(), 1);
        fds.take().unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "getrlimit is a system call miri does not run")]
    fn the_process_cap_leaves_most_of_the_table() {
        let fds = PeerFds::for_process();
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: fills the struct it is given.
        let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
        assert_eq!(rc, 0);
        assert!(fds.cap() as u64 <= limit.rlim_cur / 4);
        assert!(fds.cap() <= COMCH_MAX_PEER_DESCRIPTORS);
    }
}
