//! The flags and counters benchmark threads share: the benchmarks' own concurrency facade
//! (the workspace's `clippy.toml` keeps std atomics out of everything else).
#![allow(clippy::disallowed_types)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Tells a partner thread to stop.
#[derive(Debug, Default)]
pub struct StopFlag(AtomicBool);

impl StopFlag {
    pub fn stop(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// A count one thread publishes and others read: what was counted happened before a reader
/// sees the count (release/acquire).
#[derive(Debug, Default)]
pub struct Published(AtomicU64);

impl Published {
    pub fn set(&self, n: u64) {
        self.0.store(n, Ordering::Release);
    }

    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Release);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}
