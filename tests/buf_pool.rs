//! Buffer pools through the safe API, on the soft device.

use dpakit::ErrorCode;
use dpakit::buf_pool::BufPool;
use dpakit::mmap::Mmap;

/// A started mmap over `len` bytes aligned to a page.
fn started_mmap(len: usize) -> Mmap {
    let mut mmap = Mmap::alloc_aligned(len, 4096).unwrap();
    mmap.start().unwrap();
    mmap
}

#[test]
fn every_element_is_taken_once_and_comes_back_in_place() {
    let mmap = started_mmap(16 * 256);
    let base = mmap.range().0.addr();
    let pool = BufPool::builder(&mmap, 16, 200)
        .element_alignment(256)
        .start()
        .unwrap();
    assert_eq!(pool.num_elements().unwrap(), 16);
    assert_eq!(pool.element_alignment().unwrap(), 256);
    let bufs: Vec<_> = (0..16).map(|_| pool.alloc().unwrap()).collect();
    let mut offsets: Vec<usize> = bufs
        .iter()
        .map(|b| b.head().unwrap().addr() - base)
        .collect();
    offsets.sort_unstable();
    assert_eq!(offsets, (0..16).map(|i| i * 256).collect::<Vec<_>>());
    assert!(bufs.iter().all(|b| b.len().unwrap() == 200));
    assert!(bufs.iter().all(|b| b.data_len().unwrap() == 0));
    assert_eq!(pool.alloc().unwrap_err().code(), ErrorCode::Empty);
    assert_eq!(pool.num_free_elements().unwrap(), 0);
    let head = bufs[5].head().unwrap();
    drop(bufs);
    assert_eq!(pool.num_free_elements().unwrap(), 16);
    let again: Vec<_> = (0..16).map(|_| pool.alloc().unwrap()).collect();
    assert!(again.iter().any(|b| b.head().unwrap() == head));
}

#[test]
fn the_pool_is_checked_against_its_mmap() {
    let small = started_mmap(1000);
    let err = BufPool::builder(&small, 11, 100).start().unwrap_err();
    assert_eq!(err.code(), ErrorCode::Initialization);
    let err = BufPool::builder(&small, 2, 100)
        .element_alignment(3)
        .start()
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidValue);
    let unstarted = Mmap::alloc(1000).unwrap();
    let err = BufPool::builder(&unstarted, 2, 100).start().unwrap_err();
    assert_eq!(err.code(), ErrorCode::BadState);
    let err = BufPool::builder(&small, 0, 100).start().unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidValue);
}
