use super::*;
use crate::buf::BufInventory;
use crate::dev::{Side, Topology};
use crate::mmap::{AccessFlags, Mmap};

fn host_dev() -> Dev {
    Dev::open_by_pci(Topology::global(), Side::Host, "b1:00.0").unwrap()
}

fn arm_dev() -> Dev {
    Dev::open_by_pci(Topology::global(), Side::Arm, "03:00.0").unwrap()
}

fn code<T: fmt::Debug>(r: Result<T>) -> ErrorCode {
    r.expect_err("expected an error").code()
}

/// A started mmap of `len` bytes with `dev` added, filled with `fill`.
fn mmap(dev: &Dev, len: usize, fill: u8, access: Option<AccessFlags>) -> Mmap {
    let m = Mmap::with_memory(vec![fill; len].into_boxed_slice()).unwrap();
    if let Some(a) = access {
        m.set_permissions(a).unwrap();
    }
    m.add_dev(dev).unwrap();
    m.start().unwrap();
    m
}

struct Setup {
    dev: Dev,
    pe: Pe,
    inv: BufInventory,
    src: Mmap,
    dst: Mmap,
    done: Rc<RefCell<Vec<MemcpyCompletion>>>,
}

fn setup(len: usize) -> Setup {
    let dev = host_dev();
    let inv = BufInventory::create(16).unwrap();
    inv.start().unwrap();
    Setup {
        src: mmap(&dev, len, 0x5a, None),
        dst: mmap(&dev, len, 0, None),
        pe: Pe::new().unwrap(),
        inv,
        dev,
        done: Rc::default(),
    }
}

impl Setup {
    fn dma(&self, num_tasks: u32) -> Dma {
        let done = self.done.clone();
        Dma::builder(&self.dev, &self.pe)
            .num_tasks(num_tasks)
            .on_complete(move |c| done.borrow_mut().push(c))
            .start()
            .unwrap()
    }

    /// A source buffer over the whole source mmap, all data.
    fn src_buf(&self) -> Buf {
        let (addr, len) = self.src.range();
        self.inv.buf_get_by_data(&self.src, addr, len).unwrap()
    }

    /// A destination buffer over the whole destination mmap, no data.
    fn dst_buf(&self) -> Buf {
        let (addr, len) = self.dst.range();
        self.inv.buf_get_by_addr(&self.dst, addr, len).unwrap()
    }

    fn dst_bytes(&self) -> Vec<u8> {
        let (addr, len) = self.dst.range();
        // SAFETY: the mmap's own memory; no copy is running (the tests progress on this thread).
        unsafe { std::slice::from_raw_parts(addr, len) }.to_vec()
    }
}

#[test]
fn a_memcpy_lands_after_the_destination_data_and_grows_it() {
    let s = setup(4096);
    let dma = s.dma(4);
    let (src, dst) = (s.src_buf(), s.dst_buf());
    dma.memcpy(&src, &dst, 7).unwrap();
    assert_eq!(dma.in_flight(), 1);
    assert!(
        s.done.borrow().is_empty(),
        "copied by progress, not by submit"
    );
    assert_eq!(s.pe.progress(), 1);
    assert_eq!(
        *s.done.borrow(),
        [MemcpyCompletion {
            user_data: 7,
            status: ErrorCode::Success
        }]
    );
    assert_eq!(dst.get_data_len().unwrap(), 4096);
    assert!(s.dst_bytes().iter().all(|&b| b == 0x5a));
    assert_eq!(dma.in_flight(), 0);

    // A second copy appends after the data: here there is no room left.
    let e = dma.memcpy(&src, &dst, 8).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue);
    assert!(e.message().contains("room for 0 bytes"), "{e}");
    // Half the source into a destination reset to empty, twice: both halves, one after the other.
    dst.reset_data_len().unwrap();
    let (addr, _) = s.src.range();
    src.set_data(addr, 2048).unwrap();
    dma.memcpy(&src, &dst, 9).unwrap();
    s.pe.progress();
    dma.memcpy(&src, &dst, 10).unwrap();
    s.pe.progress();
    assert_eq!(dst.get_data_len().unwrap(), 4096);
    assert_eq!(s.done.borrow().len(), 3);
}

#[test]
fn every_rule_is_checked_at_submit() {
    let s = setup(256);
    let dma = s.dma(4);
    let (src, dst) = (s.src_buf(), s.dst_buf());
    // Length 0.
    src.set_data_len(0).unwrap();
    let e = dma.memcpy(&src, &dst, 0).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue);
    assert!(e.message().contains("no data"), "{e}");
    src.set_data_len(256).unwrap();
    // A destination too small: 128 bytes of room after 128 bytes of data.
    dst.set_data_len(128).unwrap();
    assert_eq!(code(dma.memcpy(&src, &dst, 0)), ErrorCode::InvalidValue);
    dst.reset_data_len().unwrap();
    // Overlap: the source's data and the room after the destination's data in one mmap.
    let (addr, _) = s.src.range();
    let a = s.inv.buf_get_by_data(&s.src, addr, 128).unwrap();
    let b = s
        .inv
        .buf_get_by_addr(&s.src, addr.wrapping_add(64), 192)
        .unwrap();
    let e = dma.memcpy(&a, &b, 0).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue);
    assert!(e.message().contains("overlap"), "{e}");
    // Disjoint halves of one mmap are fine, and a buffer's data may go to its own tail.
    let c = s
        .inv
        .buf_get_by_addr(&s.src, addr.wrapping_add(128), 128)
        .unwrap();
    dma.memcpy(&a, &c, 0).unwrap();
    let whole = s.inv.buf_get_by_args(&s.src, addr, 256, addr, 128).unwrap();
    dma.memcpy(&whole, &whole, 0).unwrap();
    s.pe.progress();
    assert_eq!(whole.get_data_len().unwrap(), 256);
    assert!(
        s.done
            .borrow()
            .iter()
            .all(|c| c.status == ErrorCode::Success)
    );

    // A destination its mmap does not let devices write.
    let ro = mmap(&s.dev, 256, 0, Some(AccessFlags::LOCAL_READ_ONLY));
    let (ro_addr, _) = ro.range();
    let ro_dst = s.inv.buf_get_by_addr(&ro, ro_addr, 256).unwrap();
    let e = dma.memcpy(&src, &ro_dst, 0).unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotPermitted);
    assert!(e.message().contains("LOCAL_READ_WRITE"), "{e}");
    // ... which may still be a source: local devices always read.
    let ro_src = s.inv.buf_get_by_data(&ro, ro_addr, 256).unwrap();
    dma.memcpy(&ro_src, &dst, 0).unwrap();
    // An mmap the device was not added to, on either side of the copy.
    let other = mmap(&arm_dev(), 256, 0, None);
    let (o_addr, _) = other.range();
    let o_dst = s.inv.buf_get_by_addr(&other, o_addr, 256).unwrap();
    let e = dma.memcpy(&src, &o_dst, 0).unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotPermitted);
    assert!(e.message().contains("doca_mmap_add_dev"), "{e}");
    let o_src = s.inv.buf_get_by_data(&other, o_addr, 256).unwrap();
    assert_eq!(code(dma.memcpy(&o_src, &dst, 0)), ErrorCode::NotPermitted);
}

#[test]
fn list_length_size_and_pool_limits() {
    let s = setup(64);
    let (src, dst) = (s.src_buf(), s.dst_buf());
    let (sv, dv) = (src.view().unwrap(), dst.view().unwrap());
    assert!(check_memcpy(&s.dev, &sv, &dv, 1, 1).is_ok());
    let e = check_memcpy(&s.dev, &sv, &dv, 2, 1).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue);
    assert!(e.message().contains("max_buf_list_len"), "{e}");
    assert_eq!(
        code(check_memcpy(&s.dev, &sv, &dv, 1, 2)),
        ErrorCode::InvalidValue
    );
    // Larger than a task copies.
    let huge = BufView {
        data_len: DMA_MAX_BUF_SIZE as usize + 1,
        ..sv.clone()
    };
    let e = check_memcpy(&s.dev, &huge, &dv, 1, 1).unwrap_err();
    assert!(e.message().contains("max_buf_size"), "{e}");
    // Pools: 0 and past the maximum refused; a full pool is NO_MEMORY.
    assert_eq!(code(check_num_tasks(0)), ErrorCode::InvalidValue);
    assert_eq!(
        code(check_num_tasks(DMA_MAX_NUM_TASKS + 1)),
        ErrorCode::InvalidValue
    );
    check_num_tasks(DMA_MAX_NUM_TASKS).unwrap();
    let dma = s.dma(1);
    let small = s.inv.buf_get_by_addr(&s.dst, s.dst.range().0, 1).unwrap();
    let one = s.inv.buf_get_by_data(&s.src, s.src.range().0, 1).unwrap();
    dma.memcpy(&one, &small, 0).unwrap();
    assert_eq!(code(dma.memcpy(&one, &dst, 0)), ErrorCode::NoMemory);
    let info = s.dev.as_devinfo();
    assert_eq!(cap_task_memcpy_get_max_buf_list_len(info).unwrap(), 2);
    assert_eq!(cap_task_memcpy_get_max_buf_size(info).unwrap(), 1 << 30);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "megabytes of copies take minutes under miri; the other tests copy the same way"
)]
fn a_long_copy_spans_progress_calls_and_completions_keep_order() {
    let len = 3 * DMA_PROGRESS_MAX_BYTES + 100;
    let s = setup(len);
    let dma = s.dma(8);
    let (src, dst) = (s.src_buf(), s.dst_buf());
    let (d_addr, _) = s.dst.range();
    let small_src = s.inv.buf_get_by_data(&s.src, s.src.range().0, 16).unwrap();
    let small_dst = s.inv.buf_get_by_addr(&s.dst, d_addr, 16).unwrap();
    dst.set_data(d_addr.wrapping_add(16), 0).unwrap();
    let rest = s
        .inv
        .buf_get_by_data(&s.src, s.src.range().0, len - 16)
        .unwrap();
    drop(src);
    dma.memcpy(&rest, &dst, 1).unwrap();
    dma.memcpy(&small_src, &small_dst, 2).unwrap();
    let mut calls = 0;
    while s.done.borrow().len() < 2 {
        s.pe.progress();
        calls += 1;
        assert!(calls < 100);
    }
    assert_eq!(
        calls, 4,
        "1 MiB per call, then the small one in the same call"
    );
    let order: Vec<u64> = s.done.borrow().iter().map(|c| c.user_data).collect();
    assert_eq!(order, [1, 2], "completions in submission order");
    assert!(s.dst_bytes().iter().all(|&b| b == 0x5a));
}

#[test]
fn a_flood_of_small_copies_is_bounded_per_progress_call() {
    let s = setup(1024);
    let dma = s.dma(1024);
    let src = s.inv.buf_get_by_data(&s.src, s.src.range().0, 1).unwrap();
    let (d_addr, _) = s.dst.range();
    let inv = BufInventory::create(1024).unwrap();
    inv.start().unwrap();
    let dsts: Vec<Buf> = (0..1000)
        .map(|i| {
            inv.buf_get_by_addr(&s.dst, d_addr.wrapping_add(i), 1)
                .unwrap()
        })
        .collect();
    for (i, d) in dsts.iter().enumerate() {
        dma.memcpy(&src, d, i as u64).unwrap();
    }
    assert_eq!(s.pe.progress(), DMA_PROGRESS_MAX_TASKS);
    while s.pe.progress() > 0 {}
    assert_eq!(s.done.borrow().len(), 1000);
}

#[test]
fn a_buffer_changed_or_returned_in_flight_fails_the_task() {
    let s = setup(128);
    let dma = s.dma(4);
    let (src, dst) = (s.src_buf(), s.dst_buf());
    dma.memcpy(&src, &dst, 1).unwrap();
    dst.set_data_len(1).unwrap();
    s.pe.progress();
    assert_eq!(s.done.borrow()[0].status, ErrorCode::BadState);
    assert!(s.dst_bytes().iter().all(|&b| b == 0), "nothing copied");
    dst.reset_data_len().unwrap();
    dma.memcpy(&src, &dst, 2).unwrap();
    src.dec_refcount().unwrap();
    s.pe.progress();
    assert_eq!(s.done.borrow()[1].status, ErrorCode::BadState);
    assert_eq!(dst.get_data_len().unwrap(), 0);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "megabytes of copies take minutes under miri; the other tests copy the same way"
)]
fn a_flush_completes_what_is_left_in_order_after_what_finished() {
    let s = setup(DMA_PROGRESS_MAX_BYTES * 2);
    let dma = s.dma(4);
    let (src, dst) = (s.src_buf(), s.dst_buf());
    let one = s.inv.buf_get_by_data(&s.src, s.src.range().0, 1).unwrap();
    let spare = Mmap::alloc(64).unwrap();
    spare.add_dev(&s.dev).unwrap();
    spare.start().unwrap();
    let spare_dst = s.inv.buf_get_by_addr(&spare, spare.range().0, 64).unwrap();
    dma.memcpy(&one, &spare_dst, 1).unwrap();
    dma.memcpy(&src, &dst, 2).unwrap();
    // The small copy finishes, the long one is half done and its callback waits.
    assert_eq!(s.pe.progress(), 1);
    assert_eq!(dma.flush(), 1);
    assert_eq!(s.pe.progress(), 1);
    let statuses: Vec<_> = s
        .done
        .borrow()
        .iter()
        .map(|c| (c.user_data, c.status))
        .collect();
    assert_eq!(
        statuses,
        [(1, ErrorCode::Success), (2, FLUSHED)],
        "the flushed task after the finished one"
    );
    assert_eq!(
        dst.get_data_len().unwrap(),
        0,
        "a flushed copy adds no data"
    );
    assert_eq!(dma.in_flight(), 0);
}

#[test]
fn callbacks_may_submit_and_drop_the_engine() {
    let s = setup(64);
    let slot: Rc<RefCell<Option<Dma>>> = Rc::default();
    let (src, dst) = (s.src_buf(), s.dst_buf());
    let bufs = Rc::new((src, dst));
    let (slot2, bufs2) = (slot.clone(), bufs.clone());
    let count = Rc::new(Cell::new(0));
    let count2 = count.clone();
    let dma = Dma::builder(&s.dev, &s.pe)
        .num_tasks(1)
        .on_complete(move |c| {
            assert_eq!(c.status, ErrorCode::Success);
            count2.set(count2.get() + 1);
            let (src, dst) = &*bufs2;
            dst.reset_data_len().unwrap();
            if count2.get() < 3 {
                // Resubmitted from the callback: copied at the next progress call.
                let guard = slot2.borrow();
                guard.as_ref().unwrap().memcpy(src, dst, 0).unwrap();
            } else {
                // Dropped from its own callback: the engine stops at once.
                drop(slot2.borrow_mut().take());
            }
        })
        .start()
        .unwrap();
    dma.memcpy(&bufs.0, &bufs.1, 0).unwrap();
    *slot.borrow_mut() = Some(dma);
    for expected in 1..=3 {
        assert_eq!(s.pe.progress(), 1);
        assert_eq!(count.get(), expected);
    }
    assert!(slot.borrow().is_none());
    assert_eq!(s.pe.progress(), 0);
}
