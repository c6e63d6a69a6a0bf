//! A global allocator that counts allocations, for the tests that prove a datapath allocates
//! nothing once warm.
#![allow(dead_code)]
// A global allocator cannot allocate, so its counter is a bare static atomic.
#![allow(clippy::disallowed_types)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

pub struct Counting;

pub static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
pub static GLOBAL: Counting = Counting;

/// Allocations so far, on every thread.
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::SeqCst)
}

/// Runs a test binary's tests one after the other on the main thread, in place of libtest
/// (`harness = false`): its harness books tests on threads of its own while they run, and a
/// measurement under load counted those allocations.
pub fn run(tests: &[(&str, fn())]) {
    for (name, test) in tests {
        println!("test {name} ...");
        test();
        println!("test {name} ... ok");
    }
}
