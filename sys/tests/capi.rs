//! DOCA's C API at the boundary, called the way C calls it: NULL, destroyed handles, handles of
//! another kind, stray pointers, bad values and calls in the wrong state are DOCA errors, never
//! a crash; user data and state changes reach the callbacks.
//!
//! These run against the soft device (the default configuration of `dpakit-sys`).
#![cfg(all(feature = "soft", not(feature = "doca")))]

use dpakit_sys::*;
use std::cell::RefCell;
use std::ffi::{CStr, c_void};
use std::ptr::{null, null_mut};

/// The explanation of the calling thread's last failed call.
fn last_error() -> String {
    let mut buf = [0u8; 512];
    // SAFETY: a writable buffer of its length.
    unsafe { dpakit_soft_last_error(buf.as_mut_ptr().cast(), buf.len()) };
    CStr::from_bytes_until_nul(&buf)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// Asserts a call returns `code`, showing the soft device's explanation otherwise.
macro_rules! expect {
    ($call:expr, $code:expr) => {{
        // SAFETY: the point of these tests: C calls with whatever arguments, which the soft
        // device must survive.
        let got = unsafe { $call };
        assert_eq!(
            got,
            $code,
            "{} returned {:?} ({})",
            stringify!($call),
            got,
            last_error()
        );
    }};
}

fn open_dev() -> *mut doca_dev {
    let mut list = null_mut();
    let mut n = 0;
    expect!(doca_devinfo_create_list(&mut list, &mut n), DOCA_SUCCESS);
    let mut dev = null_mut();
    for i in 0..n as usize {
        // SAFETY: `list` holds `n` devinfos.
        let info = unsafe { *list.add(i) };
        let mut equal = 0;
        expect!(
            doca_devinfo_is_equal_pci_addr(info, c"b1:00.0".as_ptr(), &mut equal),
            DOCA_SUCCESS
        );
        if equal != 0 {
            expect!(doca_dev_open(info, &mut dev), DOCA_SUCCESS);
        }
    }
    expect!(doca_devinfo_destroy_list(list), DOCA_SUCCESS);
    assert!(
        !dev.is_null(),
        "the host PF b1:00.0 is in the default topology"
    );
    dev
}

fn started_dpa(dev: *mut doca_dev) -> *mut doca_dpa {
    let mut dpa = null_mut();
    expect!(doca_dpa_create(dev, &mut dpa), DOCA_SUCCESS);
    expect!(
        doca_dpa_set_app(dpa, dpakit_kernels::APP.raw().cast()),
        DOCA_SUCCESS
    );
    expect!(
        dpakit_soft_dpa_set_sched_mode(dpa, dpakit_sys::soft::SCHED_DETERMINISTIC, 7),
        DOCA_SUCCESS
    );
    expect!(doca_dpa_start(dpa), DOCA_SUCCESS);
    dpa
}

#[test]
fn null_handles_are_invalid_value_in_every_family() {
    let v = DOCA_ERROR_INVALID_VALUE;
    let mut out_u32 = 0u32;
    let mut out_ptr: *mut c_void = null_mut();
    // Core: devices, PE, contexts, tasks.
    expect!(doca_devinfo_create_list(null_mut(), &mut out_u32), v);
    expect!(doca_dev_open(null_mut(), null_mut()), v);
    expect!(doca_dev_close(null_mut()), v);
    expect!(doca_dev_as_devinfo(null()), null_mut());
    expect!(doca_pe_create(null_mut()), v);
    expect!(doca_pe_destroy(null_mut()), v);
    expect!(doca_pe_progress(null_mut()), 0);
    expect!(doca_pe_connect_ctx(null_mut(), null_mut()), v);
    expect!(doca_ctx_start(null_mut()), v);
    expect!(doca_ctx_stop(null_mut()), v);
    expect!(doca_task_submit(null_mut()), v);
    expect!(doca_task_get_status(null()), v);
    // SAFETY: as in `expect!`.
    unsafe { doca_task_free(null_mut()) };
    assert!(last_error().contains("task is NULL"), "{}", last_error());
    // Memory.
    expect!(doca_mmap_create(null_mut()), v);
    expect!(doca_mmap_destroy(null_mut()), v);
    expect!(doca_mmap_set_permissions(null_mut(), 1), v);
    expect!(doca_buf_inventory_create(8, null_mut()), v);
    expect!(doca_buf_get_data(null(), &mut out_ptr), v);
    expect!(doca_buf_dec_refcount(null_mut(), null_mut()), v);
    // Comch MsgQ and endpoints.
    expect!(doca_comch_msgq_create(null_mut(), null_mut()), v);
    expect!(doca_comch_msgq_start(null_mut()), v);
    expect!(doca_comch_msgq_consumer_create(null_mut(), null_mut()), v);
    expect!(doca_comch_consumer_destroy(null_mut()), v);
    expect!(doca_comch_consumer_as_ctx(null_mut()), null_mut());
    expect!(doca_comch_producer_get_id(null(), &mut out_u32), v);
    expect!(
        doca_comch_producer_task_send_alloc_init(null_mut(), null(), null_mut(), 0, 1, null_mut()),
        v
    );
    expect!(doca_comch_consumer_completion_create(null_mut()), v);
    expect!(doca_comch_consumer_completion_start(null_mut()), v);
    // DPA.
    expect!(doca_dpa_create(null_mut(), null_mut()), v);
    expect!(doca_dpa_start(null_mut()), v);
    expect!(doca_dpa_mem_alloc(null_mut(), 64, null_mut()), v);
    expect!(doca_dpa_rpc(null_mut(), None, null_mut()), v);
    expect!(doca_dpa_thread_create(null_mut(), null_mut()), v);
    expect!(doca_dpa_thread_start(null_mut()), v);
    expect!(doca_dpa_completion_create(null_mut(), 8, null_mut()), v);
    expect!(
        doca_dpa_notification_completion_create(null_mut(), null_mut(), null_mut()),
        v
    );
    expect!(doca_dpa_eu_affinity_set(null_mut(), 0), v);
    expect!(dpakit_soft_dpa_set_sched_mode(null_mut(), 0, 0), v);
    // Error names never fail, even for codes DOCA does not define.
    // SAFETY: static strings.
    let name = unsafe { CStr::from_ptr(doca_error_get_name(9999)) };
    assert_eq!(name.to_str().unwrap(), "DOCA_ERROR_UNRECOGNIZED");
}

#[test]
fn destroyed_handles_are_refused_without_being_touched() {
    let v = DOCA_ERROR_INVALID_VALUE;
    let destroyed = |what: &str| {
        let e = last_error();
        assert!(e.contains("was destroyed"), "{what}: {e}");
    };
    let mut pe = null_mut();
    expect!(doca_pe_create(&mut pe), DOCA_SUCCESS);
    expect!(doca_pe_destroy(pe), DOCA_SUCCESS);
    expect!(doca_pe_progress(pe), 0);
    destroyed("pe");
    expect!(doca_pe_destroy(pe), v);

    let mut mmap = null_mut();
    expect!(doca_mmap_create(&mut mmap), DOCA_SUCCESS);
    expect!(doca_mmap_destroy(mmap), DOCA_SUCCESS);
    expect!(doca_mmap_start(mmap), v);
    destroyed("mmap");

    let mut inv = null_mut();
    expect!(doca_buf_inventory_create(4, &mut inv), DOCA_SUCCESS);
    expect!(doca_buf_inventory_destroy(inv), DOCA_SUCCESS);
    expect!(doca_buf_inventory_start(inv), v);
    destroyed("inventory");

    let dev = open_dev();
    let dpa = started_dpa(dev);
    let mut thread = null_mut();
    expect!(doca_dpa_thread_create(dpa, &mut thread), DOCA_SUCCESS);
    expect!(doca_dpa_thread_destroy(thread), DOCA_SUCCESS);
    expect!(doca_dpa_thread_start(thread), v);
    destroyed("thread");
    let mut comp = null_mut();
    expect!(doca_dpa_completion_create(dpa, 16, &mut comp), DOCA_SUCCESS);
    expect!(doca_dpa_completion_destroy(comp), DOCA_SUCCESS);
    expect!(doca_dpa_completion_start(comp), v);
    destroyed("completion");
    let mut msgq = null_mut();
    expect!(doca_comch_msgq_create(dev, &mut msgq), DOCA_SUCCESS);
    expect!(doca_comch_msgq_set_dpa_producer(msgq, dpa), DOCA_SUCCESS);
    expect!(doca_comch_msgq_start(msgq), DOCA_SUCCESS);
    let mut consumer = null_mut();
    expect!(
        doca_comch_msgq_consumer_create(msgq, &mut consumer),
        DOCA_SUCCESS
    );
    expect!(doca_comch_consumer_destroy(consumer), DOCA_SUCCESS);
    expect!(doca_comch_consumer_get_id(consumer, &mut 0), v);
    destroyed("consumer");
    expect!(doca_comch_msgq_stop(msgq), DOCA_SUCCESS);
    expect!(doca_comch_msgq_destroy(msgq), DOCA_SUCCESS);
    expect!(doca_comch_msgq_start(msgq), v);
    destroyed("msgq");
    expect!(doca_dpa_destroy(dpa), DOCA_SUCCESS);
    expect!(doca_dpa_start(dpa), v);
    destroyed("dpa");
    expect!(doca_dev_close(dev), DOCA_SUCCESS);
    expect!(doca_dev_close(dev), v);
    destroyed("dev");
}

#[test]
fn handles_of_another_kind_and_stray_pointers_are_refused() {
    let v = DOCA_ERROR_INVALID_VALUE;
    let mut pe = null_mut();
    expect!(doca_pe_create(&mut pe), DOCA_SUCCESS);
    // A PE where an mmap, a context or a task belongs.
    expect!(doca_mmap_start(pe.cast()), v);
    assert!(
        last_error().contains("is a struct doca_pe, not a struct doca_mmap"),
        "{}",
        last_error()
    );
    expect!(doca_ctx_start(pe.cast()), v);
    expect!(doca_task_submit(pe.cast()), v);
    // Memory the soft device never handed out, aligned or not.
    let local = [0u64; 4];
    expect!(doca_pe_destroy(local.as_ptr().cast_mut().cast()), v);
    assert!(
        last_error().contains("not a struct doca_pe the soft device created"),
        "{}",
        last_error()
    );
    let inside = (pe as usize + 8) as *mut doca_pe;
    expect!(doca_pe_destroy(inside), v);
    expect!(doca_pe_destroy(pe), DOCA_SUCCESS);
    // A DPA app that is not one.
    let dev = open_dev();
    let mut dpa = null_mut();
    expect!(doca_dpa_create(dev, &mut dpa), DOCA_SUCCESS);
    expect!(doca_dpa_set_app(dpa, local.as_ptr().cast_mut().cast()), v);
    expect!(doca_dpa_set_app(dpa, 16usize as *mut doca_dpa_app), v);
    assert!(last_error().contains("not readable"), "{}", last_error());
    expect!(doca_dpa_start(dpa), DOCA_ERROR_BAD_STATE);
    expect!(doca_dpa_destroy(dpa), DOCA_SUCCESS);
    expect!(doca_dev_close(dev), DOCA_SUCCESS);
}

#[test]
fn values_and_out_parameters_are_checked() {
    let dev = open_dev();
    let dpa = started_dpa(dev);
    let mut msgq = null_mut();
    expect!(doca_comch_msgq_create(dev, &mut msgq), DOCA_SUCCESS);
    expect!(
        doca_comch_msgq_set_max_num_consumers(msgq, 0),
        DOCA_ERROR_INVALID_VALUE
    );
    expect!(doca_comch_msgq_start(msgq), DOCA_ERROR_BAD_STATE);
    assert!(
        last_error().contains("needs a direction"),
        "{}",
        last_error()
    );
    expect!(doca_comch_msgq_set_dpa_consumer(msgq, dpa), DOCA_SUCCESS);
    expect!(doca_comch_msgq_start(msgq), DOCA_SUCCESS);
    expect!(
        doca_comch_msgq_set_max_num_consumers(msgq, 2),
        DOCA_ERROR_BAD_STATE
    );
    let mut producer = null_mut();
    expect!(
        doca_comch_msgq_producer_create(msgq, &mut producer),
        DOCA_SUCCESS
    );
    expect!(
        doca_comch_msgq_producer_create(msgq, &mut null_mut()),
        DOCA_ERROR_NO_MEMORY
    );
    expect!(
        doca_comch_producer_get_id(producer, null_mut()),
        DOCA_ERROR_INVALID_VALUE
    );
    expect!(
        doca_comch_producer_task_send_set_conf(producer, None, None, 8),
        DOCA_ERROR_INVALID_VALUE
    );
    expect!(doca_comch_msgq_stop(msgq), DOCA_ERROR_IN_USE);
    // A kernel the app does not have, an RPC with a thread kernel.
    let mut thread = null_mut();
    expect!(doca_dpa_thread_create(dpa, &mut thread), DOCA_SUCCESS);
    extern "C" fn not_a_kernel() {}
    expect!(
        doca_dpa_thread_set_func_arg(thread, Some(not_a_kernel), 0),
        DOCA_ERROR_NOT_FOUND
    );
    assert!(
        last_error().contains("values_and_out_parameters_are_checked::not_a_kernel` (0x"),
        "{}",
        last_error()
    );
    let echo: unsafe extern "C" fn() =
        // SAFETY: a function address, as doca_dpa_func_t holds.
        unsafe { std::mem::transmute(dpakit_kernels::ECHO.func()) };
    let mut ret = 0u64;
    expect!(
        doca_dpa_rpc(dpa, Some(echo), &mut ret, 1u64),
        DOCA_ERROR_NOT_FOUND
    );
    assert!(
        last_error().contains("`echo` is a thread kernel"),
        "{}",
        last_error()
    );
    expect!(
        doca_dpa_mem_alloc(dpa, usize::MAX, &mut 0),
        DOCA_ERROR_NO_MEMORY
    );
    expect!(doca_dpa_thread_destroy(thread), DOCA_SUCCESS);
    expect!(doca_comch_producer_destroy(producer), DOCA_SUCCESS);
    expect!(doca_comch_msgq_stop(msgq), DOCA_SUCCESS);
    expect!(doca_comch_msgq_destroy(msgq), DOCA_SUCCESS);
    expect!(doca_dev_close(dev), DOCA_ERROR_IN_USE);
    expect!(doca_dpa_destroy(dpa), DOCA_SUCCESS);
    expect!(doca_dev_close(dev), DOCA_SUCCESS);
}

thread_local! {
    /// What the callbacks below saw: `(event, ctx user data, task user data or state, status)`.
    static SEEN: RefCell<Vec<(&'static str, u64, u64, u32)>> = const { RefCell::new(Vec::new()) };
}

unsafe extern "C" fn state_changed(
    user_data: doca_data,
    _ctx: *mut doca_ctx,
    prev: doca_ctx_states,
    next: doca_ctx_states,
) {
    // SAFETY: the tests store integers in the user data.
    let ud = unsafe { user_data.u64_ };
    SEEN.with(|s| s.borrow_mut().push(("state", ud, u64::from(prev), next)));
}

unsafe extern "C" fn recv_ok(
    task: *mut doca_comch_consumer_task_post_recv,
    task_ud: doca_data,
    ctx_ud: doca_data,
) {
    // SAFETY: a completed task of this test; the user data holds integers.
    unsafe {
        SEEN.with(|s| s.borrow_mut().push(("recv", ctx_ud.u64_, task_ud.u64_, 0)));
        doca_task_free(doca_comch_consumer_task_post_recv_as_task(task));
    }
}

unsafe extern "C" fn recv_err(
    task: *mut doca_comch_consumer_task_post_recv,
    task_ud: doca_data,
    ctx_ud: doca_data,
) {
    // SAFETY: as in recv_ok.
    unsafe {
        let t = doca_comch_consumer_task_post_recv_as_task(task);
        let status = doca_task_get_status(t);
        SEEN.with(|s| {
            s.borrow_mut()
                .push(("recv_err", ctx_ud.u64_, task_ud.u64_, status))
        });
        doca_task_free(t);
    }
}

#[test]
fn the_state_machine_and_user_data_through_callbacks() {
    let dev = open_dev();
    let dpa = started_dpa(dev);
    let mut pe = null_mut();
    expect!(doca_pe_create(&mut pe), DOCA_SUCCESS);
    let mut msgq = null_mut();
    expect!(doca_comch_msgq_create(dev, &mut msgq), DOCA_SUCCESS);
    expect!(doca_comch_msgq_set_dpa_producer(msgq, dpa), DOCA_SUCCESS);
    expect!(doca_comch_msgq_start(msgq), DOCA_SUCCESS);
    let mut consumer = null_mut();
    expect!(
        doca_comch_msgq_consumer_create(msgq, &mut consumer),
        DOCA_SUCCESS
    );
    // SAFETY: a live consumer.
    let ctx = unsafe { doca_comch_consumer_as_ctx(consumer) };
    // Start needs the task configuration and a PE.
    expect!(doca_ctx_start(ctx), DOCA_ERROR_BAD_STATE);
    expect!(
        doca_comch_consumer_task_post_recv_set_conf(consumer, Some(recv_ok), Some(recv_err), 4),
        DOCA_SUCCESS
    );
    expect!(doca_ctx_start(ctx), DOCA_ERROR_BAD_STATE);
    expect!(doca_pe_connect_ctx(pe, ctx), DOCA_SUCCESS);
    expect!(
        doca_ctx_set_user_data(ctx, doca_data { u64_: 0xc0ffee }),
        DOCA_SUCCESS
    );
    expect!(
        doca_ctx_set_state_changed_cb(ctx, Some(state_changed)),
        DOCA_SUCCESS
    );
    expect!(doca_ctx_stop(ctx), DOCA_ERROR_BAD_STATE);
    expect!(doca_ctx_start(ctx), DOCA_SUCCESS);
    expect!(doca_ctx_start(ctx), DOCA_ERROR_BAD_STATE);
    expect!(
        doca_comch_consumer_set_imm_data_len(consumer, 8),
        DOCA_ERROR_BAD_STATE
    );
    expect!(doca_comch_consumer_destroy(consumer), DOCA_ERROR_BAD_STATE);
    // Three receives posted, with their user data; a fourth task only allocated.
    let mut tasks = [null_mut(); 4];
    for (i, t) in tasks.iter_mut().enumerate() {
        expect!(
            doca_comch_consumer_task_post_recv_alloc_init(consumer, null_mut(), t),
            DOCA_SUCCESS
        );
        // SAFETY: a task just allocated.
        let task = unsafe { doca_comch_consumer_task_post_recv_as_task(*t) };
        // SAFETY: as above.
        unsafe {
            doca_task_set_user_data(
                task,
                doca_data {
                    u64_: 100 + i as u64,
                },
            )
        };
        if i < 3 {
            expect!(doca_task_submit(task), DOCA_SUCCESS);
            expect!(doca_task_submit(task), DOCA_ERROR_BAD_STATE);
        }
    }
    expect!(
        doca_comch_consumer_task_post_recv_alloc_init(consumer, null_mut(), &mut null_mut()),
        DOCA_ERROR_NO_MEMORY
    );
    let mut inflight = 0usize;
    expect!(
        doca_ctx_get_num_inflight_tasks(ctx, &mut inflight),
        DOCA_SUCCESS
    );
    assert_eq!(inflight, 3);
    // Stop with tasks outstanding: STOPPING, finished through progress.
    expect!(doca_ctx_stop(ctx), DOCA_ERROR_IN_PROGRESS);
    let mut state = 0;
    expect!(doca_ctx_get_state(ctx, &mut state), DOCA_SUCCESS);
    assert_eq!(state, DOCA_CTX_STATE_STOPPING);
    // SAFETY: a live PE.
    unsafe { doca_pe_progress(pe) };
    expect!(doca_ctx_get_state(ctx, &mut state), DOCA_SUCCESS);
    assert_eq!(
        state, DOCA_CTX_STATE_STOPPING,
        "one task is still allocated"
    );
    // SAFETY: the fourth task is ours and was never submitted.
    unsafe { doca_task_free(doca_comch_consumer_task_post_recv_as_task(tasks[3])) };
    // SAFETY: a live PE.
    unsafe { doca_pe_progress(pe) };
    expect!(doca_ctx_get_state(ctx, &mut state), DOCA_SUCCESS);
    assert_eq!(state, DOCA_CTX_STATE_IDLE);
    let seen = SEEN.with(|s| s.borrow().clone());
    let io_failed = DOCA_ERROR_IO_FAILED;
    assert_eq!(
        seen,
        [
            (
                "state",
                0xc0ffee,
                u64::from(DOCA_CTX_STATE_IDLE),
                DOCA_CTX_STATE_RUNNING
            ),
            (
                "state",
                0xc0ffee,
                u64::from(DOCA_CTX_STATE_RUNNING),
                DOCA_CTX_STATE_STOPPING
            ),
            ("recv_err", 0xc0ffee, 100, io_failed),
            ("recv_err", 0xc0ffee, 101, io_failed),
            ("recv_err", 0xc0ffee, 102, io_failed),
            (
                "state",
                0xc0ffee,
                u64::from(DOCA_CTX_STATE_STOPPING),
                DOCA_CTX_STATE_IDLE
            ),
        ]
    );
    // A freed task is gone for good; the context can be destroyed, then the rest.
    expect!(doca_task_submit(tasks[0].cast()), DOCA_ERROR_BAD_STATE);
    expect!(doca_pe_destroy(pe), DOCA_ERROR_IN_USE);
    expect!(doca_comch_consumer_destroy(consumer), DOCA_SUCCESS);
    expect!(doca_task_submit(tasks[0].cast()), DOCA_ERROR_INVALID_VALUE);
    expect!(doca_pe_destroy(pe), DOCA_SUCCESS);
    expect!(doca_comch_msgq_stop(msgq), DOCA_SUCCESS);
    expect!(doca_comch_msgq_destroy(msgq), DOCA_SUCCESS);
    expect!(doca_dpa_destroy(dpa), DOCA_SUCCESS);
    expect!(doca_dev_close(dev), DOCA_SUCCESS);
}

#[test]
fn a_stopped_mmap_takes_configuration_again() {
    let dev = open_dev();
    let mut memory = vec![0u8; 4096];
    let mut mmap = null_mut();
    expect!(doca_mmap_create(&mut mmap), DOCA_SUCCESS);
    expect!(
        doca_mmap_set_memrange(mmap, memory.as_mut_ptr().cast(), memory.len()),
        DOCA_SUCCESS
    );
    expect!(doca_mmap_add_dev(mmap, dev), DOCA_SUCCESS);
    expect!(doca_mmap_stop(mmap), DOCA_ERROR_BAD_STATE);
    expect!(doca_mmap_start(mmap), DOCA_SUCCESS);
    expect!(
        doca_mmap_set_permissions(mmap, DOCA_ACCESS_FLAG_PCI_READ_WRITE),
        DOCA_ERROR_BAD_STATE
    );
    let mut handle = 0;
    expect!(
        doca_mmap_dev_get_dpa_handle(mmap, dev, &mut handle),
        DOCA_SUCCESS
    );
    // A buffer points into it: no stop until it is returned.
    let mut inventory = null_mut();
    expect!(doca_buf_inventory_create(4, &mut inventory), DOCA_SUCCESS);
    expect!(doca_buf_inventory_start(inventory), DOCA_SUCCESS);
    let mut buf = null_mut();
    expect!(
        doca_buf_inventory_buf_get_by_args(
            inventory,
            mmap,
            memory.as_mut_ptr().cast(),
            64,
            memory.as_mut_ptr().cast(),
            0,
            &mut buf
        ),
        DOCA_SUCCESS
    );
    expect!(doca_mmap_stop(mmap), DOCA_ERROR_NOT_PERMITTED);
    assert!(last_error().contains("buffer"), "{}", last_error());
    expect!(doca_buf_dec_refcount(buf, null_mut()), DOCA_SUCCESS);
    expect!(doca_mmap_stop(mmap), DOCA_SUCCESS);
    expect!(doca_mmap_stop(mmap), DOCA_ERROR_BAD_STATE);
    // Configured anew and started again; its DPA handle is taken anew.
    expect!(
        doca_mmap_set_permissions(mmap, DOCA_ACCESS_FLAG_PCI_READ_WRITE),
        DOCA_SUCCESS
    );
    expect!(
        doca_mmap_dev_get_dpa_handle(mmap, dev, &mut handle),
        DOCA_ERROR_NOT_PERMITTED
    );
    expect!(doca_mmap_start(mmap), DOCA_SUCCESS);
    expect!(
        doca_mmap_dev_get_dpa_handle(mmap, dev, &mut handle),
        DOCA_SUCCESS
    );
    expect!(doca_mmap_stop(null_mut()), DOCA_ERROR_INVALID_VALUE);
    expect!(doca_buf_inventory_stop(inventory), DOCA_SUCCESS);
    expect!(doca_buf_inventory_destroy(inventory), DOCA_SUCCESS);
    expect!(doca_mmap_destroy(mmap), DOCA_SUCCESS);
    expect!(doca_dev_close(dev), DOCA_SUCCESS);
}
