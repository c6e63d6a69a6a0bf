//! DOCA DMA through the safe API, on the soft device: memcpy tasks copy, each rule is answered
//! with DOCA's code, a stop flushes what is in flight, and callbacks may resubmit, stop and drop
//! their context. (`tests/dma_capi.rs` drives the same from DOCA's C API.)

use dpakit::ErrorCode;
use dpakit::buf::{Buf, BufInventory};
use dpakit::ctx::CtxState;
use dpakit::dev::Dev;
use dpakit::dma::{Dma, MemcpyCompletion};
use dpakit::mmap::{AccessFlags, Mmap};
use dpakit::pe::Pe;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

fn dev() -> Dev {
    Dev::open_first(|d| d.dma_cap_task_memcpy_is_supported().is_ok()).unwrap()
}

/// A started mmap of `len` bytes holding `fill`, reachable by `dev` (unless None), with
/// `access` if given.
fn mmap(dev: Option<&Dev>, len: usize, fill: u8, access: Option<AccessFlags>) -> Mmap {
    let mut m = Mmap::alloc(len).unwrap();
    m.as_mut_slice().unwrap().fill(fill);
    if let Some(a) = access {
        m.set_permissions(a).unwrap();
    }
    if let Some(d) = dev {
        m.add_dev(d).unwrap();
    }
    m.start().unwrap();
    m
}

fn bytes(m: &Mmap, offset: usize, len: usize) -> Vec<u8> {
    let mut out = vec![0; len];
    m.read_at(offset, &mut out).unwrap();
    out
}

/// The completions a context reported, in order.
type Log = Rc<RefCell<Vec<MemcpyCompletion>>>;

fn logging(dev: &Dev, pe: &Pe, num_tasks: u32) -> (Dma, Log) {
    let log = Log::default();
    let l = log.clone();
    let dma = Dma::builder(dev, pe)
        .num_tasks(num_tasks)
        .on_complete(move |c| l.borrow_mut().push(c))
        .start()
        .unwrap();
    (dma, log)
}

#[test]
fn a_memcpy_lands_at_the_destination_and_grows_its_data() {
    let dev = dev();
    let info = dev.as_devinfo();
    assert_eq!(info.dma_cap_task_memcpy_get_max_buf_list_len().unwrap(), 2);
    assert_eq!(
        info.dma_cap_task_memcpy_get_max_buf_size().unwrap(),
        1 << 30
    );
    let pe = Pe::new().unwrap();
    let (src, dst) = (
        mmap(Some(&dev), 8192, 0x3c, None),
        mmap(Some(&dev), 8192, 0, None),
    );
    let inv = BufInventory::new(4).unwrap();
    let from = inv.buf_get_by_data(&src, src.range().0, 8192).unwrap();
    let to = inv.buf_get_by_addr(&dst, dst.range().0, 8192).unwrap();
    let (dma, log) = logging(&dev, &pe, 4);
    assert_eq!(dma.max_num_tasks().unwrap(), 65536);
    assert_eq!(dma.state().unwrap(), CtxState::Running);
    dma.memcpy(&from, &to, 42).unwrap();
    assert_eq!(dma.in_flight(), 1);
    // The PE's notification handle fires for the copy.
    assert!(
        pe.wait(WAIT).unwrap(),
        "a submitted copy signals the handle"
    );
    pe.progress_until(WAIT, || !log.borrow().is_empty())
        .unwrap();
    assert_eq!(
        *log.borrow(),
        [MemcpyCompletion {
            user_data: 42u64.into(),
            status: ErrorCode::Success
        }]
    );
    assert_eq!(to.data_len().unwrap(), 8192);
    assert_eq!(to.data().unwrap(), dst.range().0);
    assert!(bytes(&dst, 0, 8192).iter().all(|&b| b == 0x3c));
    assert_eq!(dma.in_flight(), 0);
    // Nothing left: the handle stays quiet.
    assert!(!pe.wait(Duration::from_millis(20)).unwrap());
}

#[test]
fn each_rule_is_answered_with_its_code() {
    let dev = dev();
    let pe = Pe::new().unwrap();
    let src = mmap(Some(&dev), 4096, 1, None);
    let dst = mmap(Some(&dev), 4096, 0, None);
    let inv = BufInventory::new(16).unwrap();
    let base = src.range().0;
    let from = inv.buf_get_by_data(&src, base, 4096).unwrap();
    let to = inv.buf_get_by_addr(&dst, dst.range().0, 4096).unwrap();
    let (dma, _log) = logging(&dev, &pe, 2);
    let refused = |src: &Buf<'_>, dst: &Buf<'_>, code: ErrorCode, says: &str| {
        let e = dma.memcpy(src, dst, 0).unwrap_err();
        assert_eq!(e.code(), code, "{e}");
        assert!(e.to_string().contains(says), "{e}");
    };
    // Length 0.
    let empty = inv.buf_get_by_addr(&src, base, 4096).unwrap();
    refused(&empty, &to, ErrorCode::InvalidValue, "no data");
    // A destination too small, or full already.
    let small = inv.buf_get_by_addr(&dst, dst.range().0, 100).unwrap();
    refused(&from, &small, ErrorCode::InvalidValue, "room for 100 bytes");
    let full = inv.buf_get_by_data(&dst, dst.range().0, 4096).unwrap();
    refused(&from, &full, ErrorCode::InvalidValue, "room for 0 bytes");
    // Overlapping source data and destination room.
    let half = inv.buf_get_by_data(&src, base, 2048).unwrap();
    // SAFETY: inside the mmap's range.
    let overlap = inv
        .buf_get_by_addr(&src, unsafe { base.add(1024) }, 3072)
        .unwrap();
    refused(&half, &overlap, ErrorCode::InvalidValue, "overlap");
    // A destination its mmap does not let the device write (a source may be read-only).
    let ro = mmap(Some(&dev), 4096, 9, Some(AccessFlags::LOCAL_READ_ONLY));
    let ro_dst = inv.buf_get_by_addr(&ro, ro.range().0, 4096).unwrap();
    refused(&from, &ro_dst, ErrorCode::NotPermitted, "LOCAL_READ_WRITE");
    // An mmap the device was not added to.
    let foreign = mmap(None, 4096, 0, None);
    let foreign_dst = inv
        .buf_get_by_addr(&foreign, foreign.range().0, 4096)
        .unwrap();
    refused(
        &from,
        &foreign_dst,
        ErrorCode::NotPermitted,
        "doca_mmap_add_dev",
    );
    // The pool: two tasks in flight, the third finds none.
    let ro_src = inv.buf_get_by_data(&ro, ro.range().0, 64).unwrap();
    dma.memcpy(&ro_src, &to, 1).unwrap();
    dma.memcpy(&ro_src, &to, 2).unwrap();
    refused(&ro_src, &to, ErrorCode::NoMemory, "every task of the pool");
    // A refused submit takes no reference: the buffers drop back to their inventory.
    drop((empty, small, full, half, overlap, ro_dst, foreign_dst));
    // Pool sizes: 0 and past the maximum.
    for n in [0, 65537] {
        let e = Dma::builder(&dev, &pe).num_tasks(n).start().unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidValue, "{e}");
    }
}

#[test]
fn a_stop_flushes_the_copies_in_flight() {
    let dev = dev();
    let pe = Pe::new().unwrap();
    let len = 4 << 20;
    let (src, dst) = (
        mmap(Some(&dev), len, 5, None),
        mmap(Some(&dev), len, 0, None),
    );
    let inv = BufInventory::new(4).unwrap();
    let from = inv.buf_get_by_data(&src, src.range().0, len).unwrap();
    let to = inv.buf_get_by_addr(&dst, dst.range().0, len).unwrap();
    let states = Rc::new(RefCell::new(Vec::new()));
    let (s2, log) = (states.clone(), Log::default());
    let l2 = log.clone();
    let dma = Dma::builder(&dev, &pe)
        .on_complete(move |c| l2.borrow_mut().push(c))
        .on_state_changed(move |_, next| s2.borrow_mut().push(next))
        .start()
        .unwrap();
    dma.memcpy(&from, &to, 1).unwrap();
    // One progress call copies part of 4 MiB, not all of it.
    pe.progress();
    assert!(log.borrow().is_empty());
    dma.stop().unwrap();
    assert_eq!(dma.state().unwrap(), CtxState::Idle);
    assert_eq!(
        *log.borrow(),
        [MemcpyCompletion {
            user_data: 1u64.into(),
            status: ErrorCode::IoFailed
        }]
    );
    assert_eq!(
        *states.borrow(),
        [CtxState::Running, CtxState::Stopping, CtxState::Idle]
    );
    assert_eq!(to.data_len().unwrap(), 0, "a flushed copy adds no data");
    let e = dma.memcpy(&from, &to, 2).unwrap_err();
    assert_eq!(e.code(), ErrorCode::BadState, "{e}");
}

/// What a callback reaches: its context (set once started) and 'static buffers.
struct Loop {
    dma: RefCell<Option<Dma>>,
    src: Buf<'static>,
    dst: Buf<'static>,
    rounds: Cell<u32>,
}

/// Buffers over leaked mmaps and a leaked inventory, so callbacks may hold them.
fn static_bufs(dev: &Dev, len: usize) -> (Buf<'static>, Buf<'static>, &'static Mmap) {
    let src: &'static Mmap = Box::leak(Box::new(mmap(Some(dev), len, 0x77, None)));
    let dst: &'static Mmap = Box::leak(Box::new(mmap(Some(dev), len, 0, None)));
    let inv: &'static BufInventory = Box::leak(Box::new(BufInventory::new(2).unwrap()));
    (
        inv.buf_get_by_data(src, src.range().0, len).unwrap(),
        inv.buf_get_by_addr(dst, dst.range().0, len).unwrap(),
        dst,
    )
}

/// A context whose callback resubmits the copy `rounds` times, then does `last` with its
/// context slot (stop it, drop it).
fn looping(dev: &Dev, pe: &Pe, rounds: u32, last: fn(&Loop)) -> (Rc<Loop>, &'static Mmap) {
    let (src, dst, dst_mmap) = static_bufs(dev, 256);
    let l = Rc::new(Loop {
        dma: RefCell::new(None),
        src,
        dst,
        rounds: Cell::new(0),
    });
    let me = l.clone();
    let dma = Dma::builder(dev, pe)
        .num_tasks(1)
        .on_complete(move |c| {
            assert_eq!(c.status, ErrorCode::Success);
            me.rounds.set(me.rounds.get() + 1);
            me.dst.reset_data_len().unwrap();
            if me.rounds.get() < rounds {
                // The task was freed before this callback: the pool's one task is free again.
                let dma = me.dma.borrow();
                dma.as_ref().unwrap().memcpy(&me.src, &me.dst, 0).unwrap();
            } else {
                last(&me);
            }
        })
        .start()
        .unwrap();
    dma.memcpy(&l.src, &l.dst, 0).unwrap();
    *l.dma.borrow_mut() = Some(dma);
    (l, dst_mmap)
}

#[test]
fn callbacks_resubmit_then_stop_their_context() {
    let dev = dev();
    let pe = Pe::new().unwrap();
    let (l, dst) = looping(&dev, &pe, 50, |l| {
        let dma = l.dma.borrow();
        let dma = dma.as_ref().unwrap();
        // Returns once requested: the PE whose callback runs cannot be waited on.
        dma.stop().unwrap();
        assert_eq!(
            dma.state().unwrap(),
            CtxState::Idle,
            "nothing was outstanding"
        );
    });
    pe.progress_until(WAIT, || l.rounds.get() == 50).unwrap();
    assert_eq!(
        l.dma.borrow().as_ref().unwrap().state().unwrap(),
        CtxState::Idle
    );
    assert!(bytes(dst, 0, 256).iter().all(|&b| b == 0x77));
    assert!(!pe.progress());
}

#[test]
fn callbacks_drop_their_context() {
    let dev = dev();
    let pe = Pe::new().unwrap();
    let (l, _) = looping(&dev, &pe, 3, |l| drop(l.dma.borrow_mut().take()));
    pe.progress_until(WAIT, || l.dma.borrow().is_none())
        .unwrap();
    assert_eq!(l.rounds.get(), 3);
    assert!(!pe.progress(), "the dropped context is gone from its PE");
}

#[test]
fn buffers_and_mmaps_dropped_in_flight_stay_valid_until_the_copy_ends() {
    let dev = dev();
    let pe = Pe::new().unwrap();
    let (dma, log) = logging(&dev, &pe, 4);
    {
        let (src, dst) = (
            mmap(Some(&dev), 4096, 0xee, None),
            mmap(Some(&dev), 4096, 0, None),
        );
        let inv = BufInventory::new(2).unwrap();
        let from = inv.buf_get_by_data(&src, src.range().0, 4096).unwrap();
        let to = inv.buf_get_by_addr(&dst, dst.range().0, 4096).unwrap();
        dma.memcpy(&from, &to, 3).unwrap();
        // Everything goes out of scope with the copy in flight: the task's references keep
        // the buffers, so the mmaps' memory is kept (leaked) rather than freed under it.
    }
    pe.progress_until(WAIT, || !log.borrow().is_empty())
        .unwrap();
    assert_eq!(log.borrow()[0].status, ErrorCode::Success);
}
