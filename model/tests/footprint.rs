//! Creating and dropping paths on a long-lived DPA gives their memory back: a thread's stack
//! goes with the thread, and every object of the path once no worker can hold it, not with the
//! DPA.
//!
//! What is measured is the soft device's own memory, not the process's: the stacks it maps
//! (counted in `/proc/self/maps` by their shape) and the bytes it holds on the heap (a counting
//! allocator: allocated minus freed). Neither moves with the machine's load, with memory the
//! allocator keeps cached after a free, or with the address space glibc reserves for a thread's
//! arena, which is what made resident and mapped sizes unreliable here. (One test in a file of
//! its own: the counters see every thread of the process.)

mod common;

use common::{Path, echo_app, start_dpa};
use dpakit_model::dpa::{Dpa, SchedMode};
use std::time::{Duration, Instant};

// A global allocator cannot allocate, so its counter is a bare static atomic.
#[allow(clippy::disallowed_types)]
mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicIsize, Ordering};

    /// Bytes allocated and not yet freed, on every thread (a free on another thread than the
    /// allocation's may briefly make it negative).
    static LIVE: AtomicIsize = AtomicIsize::new(0);

    pub struct Counting;

    // SAFETY: forwards to the system allocator unchanged; only counts.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: same contract as the caller's.
            let p = unsafe { System.alloc(layout) };
            if !p.is_null() {
                LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
            }
            p
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            // SAFETY: same contract as the caller's.
            let p = unsafe { System.alloc_zeroed(layout) };
            if !p.is_null() {
                LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
            }
            p
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
            // SAFETY: same contract as the caller's.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            // SAFETY: same contract as the caller's.
            let p = unsafe { System.realloc(ptr, layout, new_size) };
            if !p.is_null() {
                LIVE.fetch_add(
                    new_size as isize - layout.size() as isize,
                    Ordering::Relaxed,
                );
            }
            p
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    /// Heap bytes the process holds now.
    pub fn live_bytes() -> isize {
        LIVE.load(Ordering::SeqCst)
    }
}

use counting::live_bytes;

/// A DPA thread's stack: 256 KiB mapped read-write above a guard page.
const STACK_BYTES: u64 = 256 * 1024;

/// The DPA thread stacks mapped now: read-write anonymous mappings of [`STACK_BYTES`] that start
/// where an inaccessible one-page guard ends (the shape of every stack the soft device maps).
fn stacks_mapped() -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let page = 4096;
    // (start, end, permissions, anonymous)
    let regions: Vec<(u64, u64, &str, bool)> = maps
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (range, perms) = (fields.next()?, fields.next()?);
            let inode = fields.nth(2)?;
            let anonymous = inode == "0" && fields.next().is_none();
            let (start, end) = range.split_once('-')?;
            Some((
                u64::from_str_radix(start, 16).ok()?,
                u64::from_str_radix(end, 16).ok()?,
                perms,
                anonymous,
            ))
        })
        .collect();
    regions
        .windows(2)
        .filter(|w| {
            let (guard, stack) = (w[0], w[1]);
            guard.3
                && stack.3
                && guard.2 == "---p"
                && guard.1 - guard.0 == page
                && stack.0 == guard.1
                && stack.2 == "rw-p"
                && stack.1 - stack.0 == STACK_BYTES
        })
        .count()
}

#[test]
fn paths_created_and_dropped_on_one_dpa_give_their_memory_back() {
    stacks_go_with_their_threads();
    objects_of_dropped_paths_are_freed_while_the_dpa_lives();
}

fn stacks_go_with_their_threads() {
    let dpa = start_dpa(echo_app(), SchedMode::BusyPoll);
    for _ in 0..10 {
        cycle(&dpa);
    }
    let before = stacks_mapped();
    let kept = Path::echo(&dpa);
    // The measure sees a live thread's stack.
    assert_eq!(stacks_mapped(), before + 1, "a live thread's stack is seen");
    free(&dpa, kept);
    for _ in 0..300 {
        cycle(&dpa);
    }
    let after = stacks_mapped();
    // Kept, the 300 stacks would be 75 MiB of mappings. A thread whose kernel is running when
    // it is dropped keeps its stack until the grace period ends: a few may still be there.
    assert!(
        after <= before + 8,
        "{} DPA thread stacks still mapped after 300 paths were dropped",
        after - before
    );
}

fn objects_of_dropped_paths_are_freed_while_the_dpa_lives() {
    for mode in [
        SchedMode::BusyPoll,
        SchedMode::Sleep,
        SchedMode::Deterministic { seed: 3 },
    ] {
        let dpa = start_dpa(echo_app(), mode);
        // Warm up: tables, the trace and the free lists reach their working sizes.
        for _ in 0..50 {
            cycle(&dpa);
        }
        wait_for_frees(&dpa, mode);
        let before = live_bytes();
        let kept = Path::echo(&dpa);
        // The measure sees a live path.
        let one_path = live_bytes() - before;
        free(&dpa, kept);
        for _ in 0..1_000 {
            cycle(&dpa);
        }
        wait_for_frees(&dpa, mode);
        let grown = live_bytes() - before;
        // Kept, the paths' rings and records would be one path's bytes each: megabytes here.
        assert!(
            grown < 10 * one_path,
            "{mode:?}: the heap holds {grown} bytes more after 1,000 paths were dropped (one \
             path holds {one_path})"
        );
    }
}

/// Creates a path on `dpa` and drops it.
fn cycle(dpa: &Dpa) {
    free(dpa, Path::echo(dpa));
}

/// Drops `path`, and frees the DPA memory that held its kernel's arguments (the path leaves it
/// to its owner, as `doca_dpa_mem_alloc` does).
fn free(dpa: &Dpa, path: Path) {
    let args = path.args;
    drop(path);
    dpa.mem_free(args).unwrap();
}

/// Waits until the DPA has freed what its tables retired.
fn wait_for_frees(dpa: &Dpa, mode: SchedMode) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while dpa.pending_frees() > 0 {
        assert!(Instant::now() < deadline, "{mode:?}: objects never freed");
        std::thread::sleep(Duration::from_millis(1));
    }
}
