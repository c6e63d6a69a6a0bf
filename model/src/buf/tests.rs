use super::*;

fn code<T: fmt::Debug>(r: Result<T>) -> ErrorCode {
    r.expect_err("expected an error").code()
}

/// A started 4 KiB mmap and a started inventory of `n` elements.
fn setup(n: usize) -> (Mmap, BufInventory, *mut u8) {
    let mmap = Mmap::alloc(4096).unwrap();
    mmap.start().unwrap();
    let inv = BufInventory::create(n).unwrap();
    inv.start().unwrap();
    let base = mmap.range().0;
    (mmap, inv, base)
}

#[test]
fn get_by_addr_and_by_data() {
    let (mmap, inv, base) = setup(4);
    let a = inv.buf_get_by_addr(&mmap, base, 128).unwrap();
    assert_eq!(a.get_head().unwrap(), base);
    assert_eq!(a.get_addr().unwrap(), base);
    assert_eq!(a.get_len().unwrap(), 128);
    assert_eq!(a.get_data().unwrap(), base);
    assert_eq!(a.get_data_len().unwrap(), 0);
    assert_eq!(a.get_refcount().unwrap(), 1);
    assert_eq!(a.get_mmap().unwrap(), mmap);
    let d = base.wrapping_add(256);
    let b = inv.buf_get_by_data(&mmap, d, 64).unwrap();
    let v = b.view().unwrap();
    assert_eq!((v.head, v.len, v.data, v.data_len), (d, 64, d, 64));
    assert_eq!(inv.get_num_free_elements(), 2);
    assert_eq!(mmap.get_num_bufs(), 2);
    assert_ne!(a, b);
    assert_eq!(b.inventory(), inv);
    let c = inv
        .buf_get_by_args(&mmap, base, 4096, base.wrapping_add(10), 20)
        .unwrap();
    assert_eq!(c.get_data().unwrap(), base.wrapping_add(10));
    assert_eq!(c.get_data_len().unwrap(), 20);
}

#[test]
fn set_data_within_the_buffer() {
    let (mmap, inv, base) = setup(1);
    let b = inv.buf_get_by_addr(&mmap, base, 100).unwrap();
    b.set_data(base.wrapping_add(10), 90).unwrap();
    assert_eq!(b.get_data_len().unwrap(), 90);
    b.set_data_len(50).unwrap();
    assert_eq!(b.get_data_len().unwrap(), 50);
    b.reset_data_len().unwrap();
    assert_eq!(
        (b.get_data().unwrap(), b.get_data_len().unwrap()),
        (base.wrapping_add(10), 0)
    );
    b.set_data(base.wrapping_add(100), 0).unwrap();
}

#[test]
fn set_data_outside_the_buffer_is_invalid_value() {
    let (mmap, inv, base) = setup(1);
    let b = inv
        .buf_get_by_addr(&mmap, base.wrapping_add(8), 100)
        .unwrap();
    assert_eq!(code(b.set_data(base, 4)), ErrorCode::InvalidValue);
    assert_eq!(
        code(b.set_data(base.wrapping_add(8), 101)),
        ErrorCode::InvalidValue
    );
    assert_eq!(
        code(b.set_data(base.wrapping_add(100), 9)),
        ErrorCode::InvalidValue
    );
    assert_eq!(
        code(b.set_data(base.wrapping_add(50), usize::MAX)),
        ErrorCode::InvalidValue
    );
    b.set_data(base.wrapping_add(58), 10).unwrap();
    assert_eq!(code(b.set_data_len(51)), ErrorCode::InvalidValue);
    // Failed calls change nothing.
    assert_eq!(b.get_data_len().unwrap(), 10);
}

#[test]
fn exhausted_inventory_is_no_memory() {
    let (mmap, inv, base) = setup(2);
    let a = inv.buf_get_by_addr(&mmap, base, 8).unwrap();
    let _b = inv.buf_get_by_addr(&mmap, base, 8).unwrap();
    let e = inv.buf_get_by_addr(&mmap, base, 8).unwrap_err();
    assert_eq!(e.code(), ErrorCode::NoMemory);
    assert!(e.message().contains("all 2 elements"), "{e}");
    // The failed call did not count a buffer on the mmap.
    assert_eq!(mmap.get_num_bufs(), 2);
    drop(a);
    assert_eq!(inv.get_num_free_elements(), 1);
    inv.buf_get_by_addr(&mmap, base, 8).unwrap();
}

#[test]
fn range_outside_the_mmap_is_invalid_value() {
    let (mmap, inv, base) = setup(2);
    assert_eq!(
        code(inv.buf_get_by_addr(&mmap, base, 4097)),
        ErrorCode::InvalidValue
    );
    assert_eq!(
        code(inv.buf_get_by_addr(&mmap, base.wrapping_add(4000), 100)),
        ErrorCode::InvalidValue
    );
    assert_eq!(
        code(inv.buf_get_by_addr(&mmap, base.wrapping_sub(1), 8)),
        ErrorCode::InvalidValue
    );
    assert_eq!(
        code(inv.buf_get_by_addr(&mmap, std::ptr::null_mut(), 8)),
        ErrorCode::InvalidValue
    );
    assert_eq!(
        code(inv.buf_get_by_data(&mmap, base, usize::MAX)),
        ErrorCode::InvalidValue
    );
    let other = Mmap::alloc(64).unwrap();
    other.start().unwrap();
    assert_eq!(
        code(inv.buf_get_by_addr(&other, base, 8)),
        ErrorCode::InvalidValue
    );
    assert_eq!(inv.get_num_free_elements(), 2);
    assert_eq!(mmap.get_num_bufs(), 0);
}

#[test]
fn zero_length_buffer_is_invalid_value() {
    let (mmap, inv, base) = setup(1);
    assert_eq!(
        code(inv.buf_get_by_addr(&mmap, base, 0)),
        ErrorCode::InvalidValue
    );
    assert_eq!(
        code(inv.buf_get_by_data(&mmap, base, 0)),
        ErrorCode::InvalidValue
    );
}

#[test]
fn data_outside_the_buffer_is_invalid_value() {
    let (mmap, inv, base) = setup(1);
    let r = inv.buf_get_by_args(&mmap, base.wrapping_add(64), 64, base, 8);
    assert_eq!(code(r), ErrorCode::InvalidValue);
    let r = inv.buf_get_by_args(&mmap, base, 64, base.wrapping_add(32), 33);
    assert_eq!(code(r), ErrorCode::InvalidValue);
}

#[test]
fn mmap_not_started_is_bad_state() {
    let mmap = Mmap::alloc(64).unwrap();
    let inv = BufInventory::create(1).unwrap();
    inv.start().unwrap();
    let e = inv.buf_get_by_addr(&mmap, mmap.range().0, 8).unwrap_err();
    assert_eq!(e.code(), ErrorCode::BadState);
    assert!(e.message().contains("Mmap::start"), "{e}");
    assert_eq!(inv.get_num_free_elements(), 1);
}

#[test]
fn inventory_not_started_is_bad_state() {
    let (mmap, inv, base) = setup(1);
    let fresh = BufInventory::create(1).unwrap();
    assert_eq!(
        code(fresh.buf_get_by_addr(&mmap, base, 8)),
        ErrorCode::BadState
    );
    inv.stop().unwrap();
    assert_eq!(
        code(inv.buf_get_by_addr(&mmap, base, 8)),
        ErrorCode::BadState
    );
    assert!(!inv.is_started());
    inv.start().unwrap();
    inv.buf_get_by_addr(&mmap, base, 8).unwrap();
}

#[test]
fn start_stop_state_rules_are_bad_state() {
    let inv = BufInventory::create(1).unwrap();
    assert_eq!(code(inv.stop()), ErrorCode::BadState);
    inv.start().unwrap();
    assert_eq!(code(inv.start()), ErrorCode::BadState);
}

#[test]
fn stopping_keeps_buffers_valid() {
    let (mmap, inv, base) = setup(1);
    let b = inv.buf_get_by_addr(&mmap, base, 8).unwrap();
    inv.stop().unwrap();
    assert_eq!(b.get_len().unwrap(), 8);
    drop(b);
    assert_eq!(inv.get_num_free_elements(), 1);
}

#[test]
fn bad_element_count_is_invalid_value() {
    assert_eq!(code(BufInventory::create(0)), ErrorCode::InvalidValue);
    assert_eq!(
        code(BufInventory::create(BUF_INVENTORY_MAX_ELEMENTS + 1)),
        ErrorCode::InvalidValue
    );
    let inv = BufInventory::create(3).unwrap();
    assert_eq!(
        (inv.get_num_elements(), inv.get_num_free_elements()),
        (3, 3)
    );
}

#[test]
fn refcount_counts_and_returns_at_zero() {
    let (mmap, inv, base) = setup(1);
    let b = inv.buf_get_by_addr(&mmap, base, 8).unwrap();
    assert_eq!(b.inc_refcount().unwrap(), 1);
    assert_eq!(b.inc_refcount().unwrap(), 2);
    assert_eq!(b.get_refcount().unwrap(), 3);
    assert_eq!(b.dec_refcount().unwrap(), 3);
    assert_eq!(b.dec_refcount().unwrap(), 2);
    assert_eq!(inv.get_num_free_elements(), 0);
    assert_eq!(b.dec_refcount().unwrap(), 1);
    // Back in the inventory; the mmap no longer counts it.
    assert_eq!(inv.get_num_free_elements(), 1);
    assert_eq!(mmap.get_num_bufs(), 0);
    mmap.stop().unwrap();
}

#[test]
fn returned_buffer_is_bad_state() {
    let (mmap, inv, base) = setup(1);
    let b = inv.buf_get_by_addr(&mmap, base, 8).unwrap();
    let alias = b.clone();
    b.dec_refcount().unwrap();
    // DOCA: "reference count is already 0" is BAD_STATE; every other use is reported too.
    assert_eq!(code(b.dec_refcount()), ErrorCode::BadState);
    assert_eq!(code(alias.get_len()), ErrorCode::BadState);
    assert_eq!(code(alias.inc_refcount()), ErrorCode::BadState);
    assert_eq!(code(alias.set_data(base, 1)), ErrorCode::BadState);
    assert_eq!(code(alias.get_mmap()), ErrorCode::BadState);
    // The element is reused; the old handles still do not reach it.
    let fresh = inv.buf_get_by_addr(&mmap, base, 16).unwrap();
    assert_eq!(code(alias.get_len()), ErrorCode::BadState);
    assert_ne!(fresh, alias);
    drop(b);
    drop(alias);
    assert_eq!(fresh.get_len().unwrap(), 16);
    assert!(format!("{:?}", BufInventory::create(1).unwrap()).contains("num_free_elements"));
}

#[test]
#[cfg_attr(miri, ignore = "65535 locked increments take minutes under miri")]
fn refcount_overflow_is_too_big() {
    let (mmap, inv, base) = setup(1);
    let b = inv.buf_get_by_addr(&mmap, base, 8).unwrap();
    for _ in 1..u16::MAX {
        b.inc_refcount().unwrap();
    }
    assert_eq!(b.get_refcount().unwrap(), u16::MAX);
    assert_eq!(code(b.inc_refcount()), ErrorCode::TooBig);
}

#[test]
fn dropping_the_last_handle_returns_the_element() {
    let (mmap, inv, base) = setup(1);
    let b = inv.buf_get_by_addr(&mmap, base, 8).unwrap();
    b.inc_refcount().unwrap();
    let clone = b.clone();
    assert_eq!(clone, b);
    drop(b);
    // A handle remains: the element is still taken, and clones do not change the refcount.
    assert_eq!(inv.get_num_free_elements(), 0);
    assert_eq!(clone.get_refcount().unwrap(), 2);
    drop(clone);
    assert_eq!(inv.get_num_free_elements(), 1);
    assert_eq!(mmap.get_num_bufs(), 0);
}

#[test]
fn mmap_cannot_stop_while_buffers_point_into_it() {
    let (mmap, inv, base) = setup(1);
    let b = inv.buf_get_by_addr(&mmap, base, 8).unwrap();
    assert_eq!(code(mmap.stop()), ErrorCode::NotPermitted);
    drop(b);
    mmap.stop().unwrap();
}

#[test]
fn buffers_keep_memory_and_inventory_alive() {
    let (mmap, inv, base) = setup(1);
    let b = inv.buf_get_by_data(&mmap, base, 4).unwrap();
    drop(mmap);
    drop(inv);
    let data = b.get_data().unwrap();
    // SAFETY: the buffer keeps the mmap, and so its 4096 owned bytes, alive; nothing else
    // accesses them.
    unsafe {
        data.write_bytes(0xab, 4);
        assert_eq!(std::slice::from_raw_parts(data, 4), &[0xab; 4]);
    }
    assert_eq!(b.inventory().get_num_free_elements(), 0);
}

#[test]
fn fixed_pool_is_reused_without_growing() {
    let (mmap, inv, base) = setup(3);
    for round in 0..100 {
        let bufs: Vec<Buf> = (0..3)
            .map(|i| {
                inv.buf_get_by_addr(&mmap, base.wrapping_add(i * 8), 8)
                    .unwrap()
            })
            .collect();
        assert_eq!(
            code(inv.buf_get_by_addr(&mmap, base, 8)),
            ErrorCode::NoMemory,
            "round {round}"
        );
        drop(bufs);
        assert_eq!(inv.get_num_free_elements(), 3);
    }
    assert_eq!(mmap.get_num_bufs(), 0);
}

#[test]
fn shared_across_threads() {
    fn check<T: Send + Sync + Clone>() {}
    check::<BufInventory>();
    check::<Buf>();
    let (mmap, inv, _) = setup(16);
    let workers: Vec<_> = (0..4)
        .map(|t| {
            let (mmap, inv) = (mmap.clone(), inv.clone());
            std::thread::spawn(move || {
                let base = mmap.range().0;
                // Fewer rounds under miri, which runs the threads' interleavings slowly.
                let rounds = if cfg!(miri) { 60 } else { 500 };
                for i in 0..rounds {
                    match inv.buf_get_by_addr(&mmap, base.wrapping_add(t * 64), 64) {
                        Ok(b) => {
                            let other = b.clone();
                            if i % 2 == 0 {
                                b.dec_refcount().unwrap();
                            }
                            drop(other);
                        }
                        Err(e) => assert_eq!(e.code(), ErrorCode::NoMemory),
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(inv.get_num_free_elements(), 16);
    assert_eq!(mmap.get_num_bufs(), 0);
}
