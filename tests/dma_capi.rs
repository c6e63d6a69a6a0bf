//! DOCA DMA through DOCA's C API (`dpakit-sys`), as a C program drives it: the handle and state
//! rules of the context and its tasks, and callbacks that free, resubmit, stop and destroy.

use dpakit_sys::*;
use std::cell::{Cell, RefCell};
use std::ptr::{null, null_mut};

/// Calls a C function; its `doca_error_t`.
macro_rules! rc {
    ($call:expr) => {{
        // SAFETY: the tests pass live handles and valid pointers unless a test says otherwise,
        // and the soft device checks every handle it is given.
        unsafe { $call }
    }};
}

/// Calls a C function and asserts it answered `code`.
macro_rules! expect {
    ($call:expr, $code:expr) => {{
        let got = rc!($call);
        assert_eq!(got, $code, "{} answered {got}", stringify!($call));
    }};
}

/// What the callbacks do and saw; the context's user data points at it.
#[derive(Default)]
struct Record {
    /// (user data, status) of each callback, in order.
    seen: RefCell<Vec<(u64, doca_error_t)>>,
    /// What a callback does with its task (and the context).
    action: Cell<Action>,
    ctx: Cell<*mut doca_ctx>,
    dma: Cell<*mut doca_dma>,
    resubmits: Cell<u32>,
}

#[derive(Clone, Copy, Default, PartialEq, Debug)]
enum Action {
    #[default]
    Free,
    /// Resubmit while resubmits are left, then free.
    Resubmit,
    /// Free, stop the context and destroy it.
    FreeStopDestroy,
}

unsafe extern "C" fn done(
    task: *mut doca_dma_task_memcpy,
    task_user_data: doca_data,
    ctx_user_data: doca_data,
) {
    // SAFETY: the tests set the context's user data to a Record that outlives it.
    let r = unsafe { &*ctx_user_data.ptr.cast::<Record>() };
    let t = rc!(doca_dma_task_memcpy_as_task(task));
    // SAFETY: both members of the union are 8 plain bytes.
    let user = unsafe { task_user_data.u64_ };
    r.seen
        .borrow_mut()
        .push((user, rc!(doca_task_get_status(t))));
    match r.action.get() {
        Action::Resubmit if r.resubmits.get() > 0 => {
            r.resubmits.set(r.resubmits.get() - 1);
            let dst = rc!(doca_dma_task_memcpy_get_dst(task));
            expect!(doca_buf_reset_data_len(dst), DOCA_SUCCESS);
            expect!(doca_task_submit(t), DOCA_SUCCESS);
        }
        Action::Free | Action::Resubmit => rc!(doca_task_free(t)),
        Action::FreeStopDestroy => {
            rc!(doca_task_free(t));
            expect!(doca_ctx_stop(r.ctx.get()), DOCA_SUCCESS);
            expect!(doca_dma_destroy(r.dma.get()), DOCA_SUCCESS);
            // The task went with its context.
            expect!(doca_task_submit(t), DOCA_ERROR_INVALID_VALUE);
        }
    }
}

/// A device, a PE, a DMA context on both (configured with `num_tasks`, not started), 64 KiB of
/// memory in an mmap, and an inventory.
struct Fixture {
    dev: *mut doca_dev,
    pe: *mut doca_pe,
    dma: *mut doca_dma,
    ctx: *mut doca_ctx,
    mem: Vec<u8>,
    mmap: *mut doca_mmap,
    inv: *mut doca_buf_inventory,
    record: Box<Record>,
}

const MEM: usize = 64 << 10;

impl Fixture {
    fn new(num_tasks: u32) -> Fixture {
        let mut list = null_mut();
        let mut n = 0;
        expect!(doca_devinfo_create_list(&mut list, &mut n), DOCA_SUCCESS);
        assert!(n > 0);
        // SAFETY: the list holds `n` devinfos.
        let first = unsafe { *list };
        let mut dev = null_mut();
        expect!(doca_dev_open(first, &mut dev), DOCA_SUCCESS);
        expect!(doca_devinfo_destroy_list(list), DOCA_SUCCESS);
        let mut f = Fixture {
            dev,
            pe: null_mut(),
            dma: null_mut(),
            ctx: null_mut(),
            mem: vec![0; MEM],
            mmap: null_mut(),
            inv: null_mut(),
            record: Box::default(),
        };
        expect!(doca_pe_create(&mut f.pe), DOCA_SUCCESS);
        expect!(doca_dma_create(dev, &mut f.dma), DOCA_SUCCESS);
        f.ctx = rc!(doca_dma_as_ctx(f.dma));
        assert!(!f.ctx.is_null());
        f.record.ctx.set(f.ctx);
        f.record.dma.set(f.dma);
        let me = doca_data {
            ptr: (&*f.record as *const Record).cast_mut().cast(),
        };
        expect!(doca_ctx_set_user_data(f.ctx, me), DOCA_SUCCESS);
        expect!(
            doca_dma_task_memcpy_set_conf(f.dma, Some(done), Some(done), num_tasks),
            DOCA_SUCCESS
        );
        expect!(doca_pe_connect_ctx(f.pe, f.ctx), DOCA_SUCCESS);
        expect!(doca_mmap_create(&mut f.mmap), DOCA_SUCCESS);
        expect!(
            doca_mmap_set_memrange(f.mmap, f.mem.as_mut_ptr().cast(), MEM),
            DOCA_SUCCESS
        );
        expect!(doca_mmap_add_dev(f.mmap, dev), DOCA_SUCCESS);
        expect!(doca_mmap_start(f.mmap), DOCA_SUCCESS);
        expect!(doca_buf_inventory_create(32, &mut f.inv), DOCA_SUCCESS);
        expect!(doca_buf_inventory_start(f.inv), DOCA_SUCCESS);
        f
    }

    /// A buffer over `[off, off + len)` of the memory whose first `data_len` bytes are data.
    fn buf(&mut self, off: usize, len: usize, data_len: usize) -> *mut doca_buf {
        let mut b = null_mut();
        let p = self.mem[off..].as_mut_ptr().cast();
        expect!(
            doca_buf_inventory_buf_get_by_args(self.inv, self.mmap, p, len, p, data_len, &mut b),
            DOCA_SUCCESS
        );
        b
    }

    /// A task copying a 1 KiB block to the next one, with `user` as its user data.
    fn task(&mut self, at: usize, user: u64) -> *mut doca_task {
        let (src, dst) = (self.buf(at, 1024, 1024), self.buf(at + 1024, 1024, 0));
        let mut t = null_mut();
        expect!(
            doca_dma_task_memcpy_alloc_init(self.dma, src, dst, doca_data { u64_: user }, &mut t),
            DOCA_SUCCESS
        );
        rc!(doca_dma_task_memcpy_as_task(t))
    }

    fn progress(&self) -> u8 {
        rc!(doca_pe_progress(self.pe))
    }

    fn state(&self) -> doca_ctx_states {
        let mut s = 0;
        expect!(doca_ctx_get_state(self.ctx, &mut s), DOCA_SUCCESS);
        s
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if rc!(doca_dma_destroy(self.dma)) == DOCA_ERROR_IN_USE {
            rc!(doca_ctx_stop(self.ctx));
            while self.state() != DOCA_CTX_STATE_IDLE && self.progress() != 0 {}
            rc!(doca_dma_destroy(self.dma));
        }
        rc!(doca_pe_destroy(self.pe));
        rc!(doca_buf_inventory_destroy(self.inv));
        rc!(doca_mmap_destroy(self.mmap));
        rc!(doca_dev_close(self.dev));
    }
}

#[test]
fn handles_and_states_are_checked() {
    let mut f = Fixture::new(2);
    let mut t = null_mut();
    let none = doca_data { u64_: 0 };
    // Before start: no tasks; configuration is allowed.
    expect!(
        doca_dma_task_memcpy_alloc_init(f.dma, null(), null_mut(), none, &mut t),
        DOCA_ERROR_BAD_STATE
    );
    expect!(
        doca_dma_task_memcpy_set_conf(f.dma, Some(done), None, 2),
        DOCA_ERROR_INVALID_VALUE
    );
    expect!(doca_ctx_start(f.ctx), DOCA_SUCCESS);
    assert_eq!(f.state(), DOCA_CTX_STATE_RUNNING);
    expect!(
        doca_dma_task_memcpy_set_conf(f.dma, Some(done), Some(done), 2),
        DOCA_ERROR_BAD_STATE
    );
    expect!(doca_dma_destroy(f.dma), DOCA_ERROR_IN_USE);
    // NULL and foreign handles.
    expect!(doca_dma_create(f.dev, null_mut()), DOCA_ERROR_INVALID_VALUE);
    expect!(
        doca_dma_cap_task_memcpy_is_supported(null()),
        DOCA_ERROR_INVALID_VALUE
    );
    expect!(
        doca_dma_cap_get_max_num_tasks(f.dma, null_mut()),
        DOCA_ERROR_INVALID_VALUE
    );
    assert!(rc!(doca_dma_as_ctx(f.pe.cast())).is_null());
    let foreign = f.mmap.cast::<doca_buf>();
    expect!(
        doca_dma_task_memcpy_alloc_init(f.dma, foreign, null_mut(), none, &mut t),
        DOCA_ERROR_INVALID_VALUE
    );
    // A task: set/get its buffers, not while it is submitted.
    let task = f.task(0, 1);
    let m = task.cast::<doca_dma_task_memcpy>();
    let (src, dst) = (
        rc!(doca_dma_task_memcpy_get_src(m)),
        rc!(doca_dma_task_memcpy_get_dst(m)),
    );
    assert!(!src.is_null() && !dst.is_null());
    expect!(doca_task_submit(task), DOCA_SUCCESS);
    let mut n = 0;
    expect!(doca_ctx_get_num_inflight_tasks(f.ctx, &mut n), DOCA_SUCCESS);
    assert_eq!(n, 1);
    rc!(doca_dma_task_memcpy_set_src(m, null()));
    assert_eq!(
        rc!(doca_dma_task_memcpy_get_src(m)),
        src,
        "refused while submitted"
    );
    expect!(doca_task_submit(task), DOCA_ERROR_BAD_STATE);
    while f.progress() == 0 {}
    assert_eq!(*f.record.seen.borrow(), [(1, DOCA_SUCCESS)]);
    assert_eq!(&f.mem[1024..2048], &f.mem[0..1024]);
    let mut len = 0;
    expect!(doca_buf_get_data_len(dst, &mut len), DOCA_SUCCESS);
    assert_eq!(len, 1024);
    // Freed by the callback: back in the pool, refused until allocated again.
    expect!(doca_task_submit(task), DOCA_ERROR_BAD_STATE);
}

#[test]
fn callbacks_resubmit_and_free() {
    let mut f = Fixture::new(4);
    f.record.action.set(Action::Resubmit);
    f.record.resubmits.set(10);
    expect!(doca_ctx_start(f.ctx), DOCA_SUCCESS);
    f.mem[..1024].fill(0xab);
    let (a, b) = (f.task(0, 1), f.task(4096, 2));
    expect!(doca_task_submit(a), DOCA_SUCCESS);
    expect!(doca_task_submit(b), DOCA_SUCCESS);
    // Each progress call reports what was copied before it: resubmits wait for the next.
    let mut calls = 0;
    while f.record.seen.borrow().len() < 12 {
        assert_eq!(f.progress(), 1);
        calls += 1;
    }
    assert!(calls >= 6, "{calls} progress calls for 12 completions");
    assert!(
        f.record
            .seen
            .borrow()
            .iter()
            .all(|&(_, s)| s == DOCA_SUCCESS)
    );
    assert!(f.mem[1024..2048].iter().all(|&x| x == 0xab));
    expect!(doca_ctx_stop(f.ctx), DOCA_SUCCESS);
}

#[test]
fn a_task_freed_in_flight_returns_to_the_pool_without_its_callback() {
    let mut f = Fixture::new(1);
    expect!(doca_ctx_start(f.ctx), DOCA_SUCCESS);
    let t = f.task(0, 5);
    expect!(doca_task_submit(t), DOCA_SUCCESS);
    rc!(doca_task_free(t));
    while f.progress() != 0 {}
    f.progress();
    assert!(f.record.seen.borrow().is_empty());
    // The pool's one task is free again.
    let again = f.task(8192, 6);
    rc!(doca_task_free(again));
}

#[test]
fn a_callback_stops_and_destroys_its_context() {
    let mut f = Fixture::new(2);
    f.record.action.set(Action::FreeStopDestroy);
    expect!(doca_ctx_start(f.ctx), DOCA_SUCCESS);
    let t = f.task(0, 9);
    expect!(doca_task_submit(t), DOCA_SUCCESS);
    assert_eq!(f.progress(), 1);
    assert_eq!(*f.record.seen.borrow(), [(9, DOCA_SUCCESS)]);
    // Gone: its handles are refused from now on.
    expect!(doca_dma_destroy(f.dma), DOCA_ERROR_INVALID_VALUE);
    expect!(doca_task_submit(t), DOCA_ERROR_INVALID_VALUE);
    assert_eq!(f.progress(), 0);
    // The fixture's teardown finds the context destroyed; make another so it has one.
    expect!(doca_dma_create(f.dev, &mut f.dma), DOCA_SUCCESS);
    f.ctx = rc!(doca_dma_as_ctx(f.dma));
}

#[test]
fn a_stop_flushes_what_flies_and_what_is_submitted_while_stopping() {
    let mut f = Fixture::new(2);
    expect!(doca_ctx_start(f.ctx), DOCA_SUCCESS);
    let kept = f.task(0, 1);
    let flown = f.task(4096, 2);
    expect!(doca_task_submit(flown), DOCA_SUCCESS);
    expect!(doca_ctx_stop(f.ctx), DOCA_ERROR_IN_PROGRESS);
    assert_eq!(f.state(), DOCA_CTX_STATE_STOPPING);
    // Submitted while stopping: accepted, and flushed.
    expect!(doca_task_submit(kept), DOCA_SUCCESS);
    while f.progress() != 0 {}
    let seen = f.record.seen.borrow().clone();
    assert_eq!(seen, [(2, DOCA_ERROR_IO_FAILED), (1, DOCA_ERROR_IO_FAILED)]);
    assert_eq!(f.state(), DOCA_CTX_STATE_IDLE);
    expect!(doca_ctx_stop(f.ctx), DOCA_ERROR_BAD_STATE);
}
