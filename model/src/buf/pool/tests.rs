use super::*;

fn code<T: fmt::Debug>(r: Result<T>) -> ErrorCode {
    r.expect_err("expected an error").code()
}

fn started_mmap(len: usize) -> Mmap {
    let mmap = Mmap::alloc(len).unwrap();
    mmap.start().unwrap();
    mmap
}

#[test]
fn elements_have_fixed_places_in_the_mmap() {
    let mmap = started_mmap(4096);
    let base = mmap.range().0.addr();
    let pool = BufPool::create(4, 100, &mmap).unwrap();
    pool.start().unwrap();
    let bufs: Vec<Buf> = (0..4).map(|_| pool.buf_alloc().unwrap()).collect();
    let mut heads: Vec<usize> = bufs.iter().map(|b| b.get_head().unwrap().addr()).collect();
    heads.sort_unstable();
    assert_eq!(heads, [base, base + 100, base + 200, base + 300]);
    for b in &bufs {
        assert_eq!(b.get_len().unwrap(), 100);
        assert_eq!(b.get_data().unwrap(), b.get_head().unwrap());
        assert_eq!(b.get_data_len().unwrap(), 0);
        assert_eq!(b.get_refcount().unwrap(), 1);
    }
    assert_eq!(pool.get_num_free_elements(), 0);
    assert_eq!(mmap.get_num_bufs(), 4);
    assert_eq!(code(pool.buf_alloc()), ErrorCode::Empty);
    // A returned element comes back at the same place.
    let head = bufs[2].get_head().unwrap();
    assert_eq!(bufs[2].dec_refcount().unwrap(), 1);
    let again = pool.buf_alloc().unwrap();
    assert_eq!(again.get_head().unwrap(), head);
    drop(bufs);
    drop(again);
    assert_eq!(pool.get_num_free_elements(), 4);
    assert_eq!(mmap.get_num_bufs(), 0);
}

#[test]
fn alignment_spaces_the_elements() {
    let mmap = started_mmap(8192);
    let base = mmap.range().0.addr();
    let pool = BufPool::create(3, 100, &mmap).unwrap();
    assert_eq!(pool.get_element_alignment(), 1);
    assert_eq!(code(pool.set_element_alignment(0)), ErrorCode::InvalidValue);
    assert_eq!(
        code(pool.set_element_alignment(48)),
        ErrorCode::InvalidValue
    );
    pool.set_element_alignment(256).unwrap();
    pool.start().unwrap();
    let first = base.next_multiple_of(256);
    let bufs: Vec<Buf> = (0..3).map(|_| pool.buf_alloc().unwrap()).collect();
    let mut heads: Vec<usize> = bufs.iter().map(|b| b.get_head().unwrap().addr()).collect();
    heads.sort_unstable();
    assert_eq!(heads, [first, first + 256, first + 512]);
}

#[test]
fn start_needs_a_started_mmap_large_enough() {
    let mmap = Mmap::alloc(1000).unwrap();
    let pool = BufPool::create(10, 100, &mmap).unwrap();
    assert_eq!(code(pool.start()), ErrorCode::BadState);
    mmap.start().unwrap();
    pool.start().unwrap();
    pool.stop().unwrap();
    // 10 elements of 100 bytes at a 128-byte stride need more than 1000 bytes.
    pool.set_element_alignment(128).unwrap();
    assert_eq!(code(pool.start()), ErrorCode::Initialization);
    let big = BufPool::create(11, 100, &mmap).unwrap();
    assert_eq!(code(big.start()), ErrorCode::Initialization);
}

#[test]
fn states_and_properties() {
    let mmap = started_mmap(4096);
    let pool = BufPool::create(2, 64, &mmap).unwrap();
    assert_eq!(code(pool.buf_alloc()), ErrorCode::BadState);
    assert_eq!(code(pool.stop()), ErrorCode::BadState);
    assert_eq!(pool.get_user_data(), 0);
    pool.set_user_data(42).unwrap();
    pool.start().unwrap();
    assert_eq!(code(pool.start()), ErrorCode::BadState);
    assert_eq!(code(pool.set_user_data(1)), ErrorCode::BadState);
    assert_eq!(code(pool.set_element_alignment(8)), ErrorCode::BadState);
    assert_eq!(pool.get_user_data(), 42);
    let b = pool.buf_alloc().unwrap();
    assert_eq!(code(pool.stop()), ErrorCode::InUse);
    assert_eq!(code(pool.check_all_returned("destroy")), ErrorCode::InUse);
    drop(b);
    pool.stop().unwrap();
    pool.check_all_returned("destroy").unwrap();
    assert_eq!(pool.get_num_elements(), 2);
}

#[test]
fn create_refuses_what_cannot_be_a_pool() {
    let mmap = started_mmap(4096);
    assert_eq!(code(BufPool::create(0, 64, &mmap)), ErrorCode::InvalidValue);
    assert_eq!(code(BufPool::create(4, 0, &mmap)), ErrorCode::InvalidValue);
    assert_eq!(
        code(BufPool::create(2, usize::MAX, &mmap)),
        ErrorCode::InvalidValue
    );
    assert_eq!(
        code(BufPool::create(BUF_INVENTORY_MAX_ELEMENTS + 1, 1, &mmap)),
        ErrorCode::InvalidValue
    );
    let empty = Mmap::create().unwrap();
    assert_eq!(code(BufPool::create(1, 1, &empty)), ErrorCode::InvalidValue);
}

#[test]
fn layout_never_overflows() {
    let top = usize::MAX - 10;
    assert_eq!(
        layout(top, 10, 1, 4, 64).unwrap_err().code(),
        ErrorCode::Initialization
    );
    assert_eq!(
        layout(0x1000, usize::MAX, usize::MAX, 2, 1)
            .unwrap_err()
            .code(),
        ErrorCode::Initialization
    );
    assert_eq!(
        layout(0x1001, 0x100, 2, 0x10, 0x10).unwrap(),
        (0x1010, 0x10)
    );
}
