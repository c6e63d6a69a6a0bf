//! The sync event's task interface (`doca_sync_event_as_ctx`): the safe API's context, and the
//! rules of the C API each checked through it.

use dpakit::ErrorCode;
use dpakit::dev::Dev;
use dpakit::pe::Pe;
use dpakit::sync_event::{SyncEvent, SyncEventContext, TaskCompletion, TaskKind};
use dpakit_sys as sys;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

fn host() -> Dev {
    Dev::open_by_pci("b1:00.0").unwrap()
}

/// The code of the last failure and its message.
fn last_error() -> String {
    let soft = sys::soft::api().unwrap();
    let mut buf = [0u8; 1024];
    // SAFETY: a writable buffer of its length.
    unsafe { (soft.last_error)(buf.as_mut_ptr().cast(), buf.len()) };
    std::ffi::CStr::from_bytes_until_nul(&buf)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

type Log = Rc<RefCell<Vec<TaskCompletion>>>;

/// A CPU event as a context with `n` tasks of every kind, logging completions.
fn context(dev: &Dev, pe: &Pe, n: u32) -> (SyncEventContext, Log) {
    let log: Log = Rc::default();
    let seen = log.clone();
    let mut b = SyncEventContext::builder(
        SyncEvent::builder().publisher_cpu(dev).subscriber_cpu(dev),
        pe,
    );
    for kind in [
        TaskKind::Get,
        TaskKind::NotifySet,
        TaskKind::NotifyAdd,
        TaskKind::WaitEq,
        TaskKind::WaitNeq,
    ] {
        b = b.tasks(kind, n);
    }
    let ctx = b
        .on_complete(move |c| seen.borrow_mut().push(c))
        .start()
        .unwrap();
    (ctx, log)
}

fn progress_until(pe: &Pe, mut done: impl FnMut() -> bool) {
    pe.progress_until(Duration::from_secs(5), &mut done)
        .unwrap();
}

fn ok(kind: TaskKind, user_data: u64, value: Option<u64>) -> TaskCompletion {
    TaskCompletion {
        kind,
        user_data: user_data.into(),
        status: ErrorCode::Success,
        value,
    }
}

#[test]
fn tasks_run_at_progress_in_order_and_carry_their_values() {
    let (dev, pe) = (host(), Pe::new().unwrap());
    let (ctx, log) = context(&dev, &pe, 4);
    ctx.notify_set(40, 1).unwrap();
    ctx.notify_add(2, 2).unwrap();
    ctx.get(3).unwrap();
    assert!(log.borrow().is_empty(), "nothing runs before progress");
    assert_eq!(ctx.in_flight(), 3);
    progress_until(&pe, || log.borrow().len() == 3);
    assert_eq!(
        *log.borrow(),
        [
            ok(TaskKind::NotifySet, 1, None),
            ok(TaskKind::NotifyAdd, 2, Some(40)),
            ok(TaskKind::Get, 3, Some(42)),
        ]
    );
    assert_eq!(ctx.in_flight(), 0);
}

#[test]
fn a_wait_completes_at_the_first_progress_that_finds_its_condition() {
    let (dev, pe) = (host(), Pe::new().unwrap());
    let (ctx, log) = context(&dev, &pe, 4);
    ctx.wait_eq(7, u64::MAX, 10).unwrap();
    ctx.wait_neq(0, 0xff, 11).unwrap();
    for _ in 0..100 {
        pe.progress();
    }
    assert!(log.borrow().is_empty(), "{:?}", log.borrow());
    ctx.notify_set(0x107, 1).unwrap();
    progress_until(&pe, || log.borrow().len() == 2);
    assert_eq!(
        *log.borrow(),
        [
            ok(TaskKind::NotifySet, 1, None),
            ok(TaskKind::WaitNeq, 11, None)
        ],
        "0x107 & 0xff is not 0, and 0x107 is not 7"
    );
    ctx.notify_set(7, 2).unwrap();
    progress_until(&pe, || log.borrow().len() == 4);
    assert_eq!(log.borrow()[3], ok(TaskKind::WaitEq, 10, None));
}

#[test]
fn a_sleeping_pe_wakes_for_a_wait_that_another_thread_satisfies() {
    let (dev, arm, pe) = (
        host(),
        Dev::open_by_pci("03:00.0").unwrap(),
        Pe::new().unwrap(),
    );
    let log: Log = Rc::default();
    let seen = log.clone();
    let ctx = SyncEventContext::builder(
        SyncEvent::builder()
            .publisher_remote_pci()
            .subscriber_cpu(&dev),
        &pe,
    )
    .tasks(TaskKind::WaitEq, 1)
    .on_complete(move |c| seen.borrow_mut().push(c))
    .start()
    .unwrap();
    // The other side's twin: its update reaches the context's counter with no signal at all.
    let twin =
        SyncEvent::create_from_export(&arm, ctx.export_to_remote_pci(&dev).unwrap()).unwrap();
    ctx.wait_eq(1, u64::MAX, 5).unwrap();
    let started = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            twin.set(1).unwrap();
        });
        // Each sleep may last 10 s: only the PE's own wake-ups end it sooner.
        while log.borrow().is_empty() {
            pe.wait(Duration::from_secs(10)).unwrap();
            pe.progress();
        }
    });
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the PE slept {:?} through a satisfied wait",
        started.elapsed()
    );
    assert_eq!(log.borrow()[0], ok(TaskKind::WaitEq, 5, None));
}

#[test]
fn a_stop_completes_the_waits_still_submitted_with_an_error() {
    let (dev, pe) = (host(), Pe::new().unwrap());
    let (ctx, log) = context(&dev, &pe, 4);
    ctx.wait_eq(9, u64::MAX, 1).unwrap();
    ctx.wait_neq(0, 0, 2).unwrap();
    pe.progress();
    ctx.stop().unwrap();
    assert_eq!(ctx.state().unwrap(), dpakit::ctx::CtxState::Idle);
    let flushed: Vec<_> = log
        .borrow()
        .iter()
        .map(|c| (c.user_data.get::<u64>(), c.status))
        .collect();
    assert_eq!(
        flushed,
        [(1, ErrorCode::IoFailed), (2, ErrorCode::IoFailed)],
        "mask 0: (v & 0) != 0 never holds"
    );
    assert_eq!(ctx.in_flight(), 0);
}

#[test]
fn an_empty_pool_answers_no_memory() {
    let (dev, pe) = (host(), Pe::new().unwrap());
    let (ctx, _log) = context(&dev, &pe, 2);
    ctx.wait_eq(1, u64::MAX, 0).unwrap();
    ctx.wait_eq(1, u64::MAX, 0).unwrap();
    let e = ctx.wait_eq(1, u64::MAX, 0).unwrap_err();
    assert_eq!(e.code(), ErrorCode::NoMemory, "{e}");
    ctx.wait_neq(1, u64::MAX, 0).unwrap();
}

#[test]
fn a_wait_mask_is_whole_consecutive_bytes() {
    let (dev, pe) = (host(), Pe::new().unwrap());
    let (ctx, _log) = context(&dev, &pe, 2);
    for bad in [0x0f, 0xff00ff, 0xffffff] {
        let e = ctx.wait_eq(0, bad, 0).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidValue, "{bad:#x}: {e}");
        assert!(e.to_string().contains("consecutive 0xFF bytes"), "{e}");
    }
    ctx.wait_neq(0, 0xffff_0000, 0).unwrap();
}

/// A raw sync event as a context on `pe`, with `n` tasks of each wait kind, started.
fn raw_context(dev: &Dev, pe: &Pe, n: u32) -> *mut sys::doca_sync_event {
    unsafe extern "C" fn cb(
        _: *mut sys::doca_sync_event_task_wait_eq,
        _: sys::doca_data,
        _: sys::doca_data,
    ) {
    }
    unsafe extern "C" fn get_cb(
        _: *mut sys::doca_sync_event_task_get,
        _: sys::doca_data,
        _: sys::doca_data,
    ) {
    }
    let mut ev = std::ptr::null_mut();
    // SAFETY: live handles and out-pointers throughout.
    unsafe {
        assert_eq!(sys::doca_sync_event_create(&mut ev), 0);
        assert_eq!(
            sys::doca_sync_event_add_publisher_location_cpu(ev, dev.as_raw()),
            0
        );
        assert_eq!(
            sys::doca_sync_event_add_subscriber_location_cpu(ev, dev.as_raw()),
            0
        );
        assert_eq!(
            sys::doca_sync_event_task_wait_eq_set_conf(ev, Some(cb), Some(cb), n),
            0
        );
        assert_eq!(
            sys::doca_sync_event_task_get_set_conf(ev, Some(get_cb), Some(get_cb), n),
            0
        );
        let ctx = sys::doca_sync_event_as_ctx(ev);
        assert!(!ctx.is_null());
        assert_eq!(sys::doca_pe_connect_ctx(pe.as_raw(), ctx), 0);
        assert_eq!(sys::doca_ctx_start(ctx), 0);
    }
    ev
}

/// Stops and destroys a raw context, progressing `pe` until IDLE.
fn raw_teardown(ev: *mut sys::doca_sync_event, pe: &Pe) {
    // SAFETY: a live event of this test.
    unsafe {
        let ctx = sys::doca_sync_event_as_ctx(ev);
        let rc = sys::doca_ctx_stop(ctx);
        assert!(
            rc == 0 || rc == sys::DOCA_ERROR_IN_PROGRESS,
            "{}",
            last_error()
        );
        let mut state = 1;
        while state != 0 {
            pe.progress();
            assert_eq!(sys::doca_ctx_get_state(ctx, &mut state), 0);
        }
        assert_eq!(sys::doca_sync_event_destroy(ev), 0, "{}", last_error());
    }
}

#[test]
fn task_configuration_needs_an_idle_context() {
    let (dev, pe) = (host(), Pe::new().unwrap());
    let ev = raw_context(&dev, &pe, 2);
    unsafe extern "C" fn cb(
        _: *mut sys::doca_sync_event_task_notify_set,
        _: sys::doca_data,
        _: sys::doca_data,
    ) {
    }
    // SAFETY: a live event.
    let rc = unsafe { sys::doca_sync_event_task_notify_set_set_conf(ev, Some(cb), Some(cb), 4) };
    assert_eq!(rc, sys::DOCA_ERROR_NOT_PERMITTED, "{}", last_error());
    assert!(
        last_error().contains("while it is IDLE"),
        "{}",
        last_error()
    );
    // A kind not configured before the start has no tasks.
    let mut task = std::ptr::null_mut();
    let data = sys::doca_data { u64_: 0 };
    // SAFETY: a live event and out-pointer.
    let rc = unsafe { sys::doca_sync_event_task_notify_set_alloc_init(ev, 1, data, &mut task) };
    assert_eq!(rc, sys::DOCA_ERROR_BAD_STATE, "{}", last_error());
    assert!(
        last_error().contains("no notify_set tasks"),
        "{}",
        last_error()
    );
    raw_teardown(ev, &pe);
}

#[test]
fn a_task_is_checked_for_its_kind_its_pointer_and_its_state() {
    let (dev, pe) = (host(), Pe::new().unwrap());
    let ev = raw_context(&dev, &pe, 2);
    let data = sys::doca_data { u64_: 0 };
    let mut wait = std::ptr::null_mut();
    let mut get = std::ptr::null_mut();
    let mut slot = 0u64;
    // SAFETY: live handles and out-pointers; the tasks are this test's.
    unsafe {
        let rc = sys::doca_sync_event_task_get_alloc_init(ev, std::ptr::null_mut(), data, &mut get);
        assert_eq!(rc, sys::DOCA_ERROR_INVALID_VALUE, "{}", last_error());
        assert!(
            last_error().contains("ret_val_ptr is NULL"),
            "{}",
            last_error()
        );
        assert_eq!(
            sys::doca_sync_event_task_get_alloc_init(ev, &mut slot, data, &mut get),
            0
        );
        assert_eq!(
            sys::doca_sync_event_task_wait_eq_alloc_init(ev, 3, u64::MAX, data, &mut wait),
            0
        );
        // A wait task is not a get task.
        let wrong = sys::doca_sync_event_task_get_as_doca_task(wait.cast());
        assert!(wrong.is_null());
        assert!(
            last_error().contains(
                "is a struct doca_sync_event_task_wait_eq, not a struct \
                                   doca_sync_event_task_get"
            ),
            "{}",
            last_error()
        );
        // A mask set after alloc_init is checked at submit.
        sys::doca_sync_event_task_wait_eq_set_mask(wait, 0x0f0);
        let t = sys::doca_sync_event_task_wait_eq_as_doca_task(wait);
        assert_eq!(sys::doca_task_submit(t), sys::DOCA_ERROR_INVALID_VALUE);
        assert!(
            last_error().contains("consecutive 0xFF bytes"),
            "{}",
            last_error()
        );
        sys::doca_sync_event_task_wait_eq_set_mask(wait, 0xff);
        assert_eq!(sys::doca_sync_event_task_wait_eq_get_mask(wait), 0xff);
        assert_eq!(sys::doca_sync_event_task_wait_eq_get_wait_val(wait), 3);
        assert_eq!(sys::doca_task_submit(t), 0);
        // Submitted: its setters are refused, its fields unchanged.
        sys::doca_sync_event_task_wait_eq_set_wait_val(wait, 4);
        assert!(last_error().contains("is submitted"), "{}", last_error());
        assert_eq!(sys::doca_sync_event_task_wait_eq_get_wait_val(wait), 3);
        assert_eq!(
            sys::doca_sync_event_update_set(ev, 3),
            0,
            "the context's counter"
        );
        let g = sys::doca_sync_event_task_get_as_doca_task(get);
        assert_eq!(sys::doca_task_submit(g), 0);
        let mut inflight = 0;
        let ctx = sys::doca_sync_event_as_ctx(ev);
        while {
            assert_eq!(sys::doca_ctx_get_num_inflight_tasks(ctx, &mut inflight), 0);
            inflight > 0
        } {
            pe.progress();
        }
        assert_eq!(slot, 3, "the get's value landed where it was asked");
        assert_eq!(sys::doca_task_get_status(t), 0);
        sys::doca_task_free(t);
        sys::doca_task_free(g);
    }
    raw_teardown(ev, &pe);
}

#[test]
fn an_event_takes_one_route_for_good() {
    unsafe extern "C" fn cb(
        _: *mut sys::doca_sync_event_task_get,
        _: sys::doca_data,
        _: sys::doca_data,
    ) {
    }
    let dev = host();
    let (mut standalone, mut ev) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: live handles and out-pointers throughout.
    unsafe {
        assert_eq!(sys::doca_sync_event_create(&mut standalone), 0);
        assert_eq!(
            sys::doca_sync_event_add_publisher_location_cpu(standalone, dev.as_raw()),
            0
        );
        assert_eq!(
            sys::doca_sync_event_add_subscriber_location_cpu(standalone, dev.as_raw()),
            0
        );
        assert_eq!(sys::doca_sync_event_start(standalone), 0);
        assert_eq!(sys::doca_sync_event_stop(standalone), 0);
        // Started stand-alone once: no context, no tasks, even stopped.
        assert!(sys::doca_sync_event_as_ctx(standalone).is_null());
        assert!(
            last_error().contains("can no longer become a DOCA context"),
            "{}",
            last_error()
        );
        let rc = sys::doca_sync_event_task_get_set_conf(standalone, Some(cb), Some(cb), 1);
        assert_eq!(rc, sys::DOCA_ERROR_NOT_PERMITTED, "{}", last_error());
        assert_eq!(sys::doca_sync_event_destroy(standalone), 0);
        // The other way: a context cannot be started stand-alone.
        assert_eq!(sys::doca_sync_event_create(&mut ev), 0);
        assert_eq!(
            sys::doca_sync_event_add_publisher_location_cpu(ev, dev.as_raw()),
            0
        );
        assert_eq!(
            sys::doca_sync_event_add_subscriber_location_cpu(ev, dev.as_raw()),
            0
        );
        assert!(!sys::doca_sync_event_as_ctx(ev).is_null());
        assert_eq!(
            sys::doca_sync_event_start(ev),
            sys::DOCA_ERROR_NOT_PERMITTED
        );
        assert!(last_error().contains("doca_ctx_start"), "{}", last_error());
        assert_eq!(sys::doca_sync_event_destroy(ev), 0);
    }
}

#[test]
fn a_running_context_cannot_be_destroyed() {
    let (dev, pe) = (host(), Pe::new().unwrap());
    let ev = raw_context(&dev, &pe, 1);
    // SAFETY: a live event.
    let rc = unsafe { sys::doca_sync_event_destroy(ev) };
    assert_eq!(rc, sys::DOCA_ERROR_BAD_STATE, "{}", last_error());
    raw_teardown(ev, &pe);
}

/// What the callbacks of `a_context_may_be_stopped_and_destroyed_from_its_callbacks` saw.
#[derive(Default)]
struct Teardown {
    event: usize,
    stop: sys::doca_error_t,
    flushed: sys::doca_error_t,
    destroyed: sys::doca_error_t,
}

thread_local! {
    static TEARDOWN: RefCell<Teardown> = RefCell::default();
}

#[test]
fn a_context_may_be_stopped_and_destroyed_from_its_callbacks() {
    unsafe extern "C" fn got(
        task: *mut sys::doca_sync_event_task_get,
        _: sys::doca_data,
        _: sys::doca_data,
    ) {
        let event = TEARDOWN.with(|t| t.borrow().event) as *mut sys::doca_sync_event;
        // SAFETY: the task is ours in its callback; the event is live.
        let stop = unsafe {
            sys::doca_task_free(sys::doca_sync_event_task_get_as_doca_task(task));
            sys::doca_ctx_stop(sys::doca_sync_event_as_ctx(event))
        };
        TEARDOWN.with(|t| t.borrow_mut().stop = stop);
    }
    unsafe extern "C" fn waited(
        task: *mut sys::doca_sync_event_task_wait_eq,
        _: sys::doca_data,
        _: sys::doca_data,
    ) {
        let t = sys::doca_sync_event_task_wait_eq_as_doca_task;
        // SAFETY: the task is ours in its callback.
        let status = unsafe { sys::doca_task_get_status(t(task)) };
        // SAFETY: as above.
        unsafe { sys::doca_task_free(t(task)) };
        TEARDOWN.with(|t| t.borrow_mut().flushed = status);
    }
    unsafe extern "C" fn state(
        _: sys::doca_data,
        _: *mut sys::doca_ctx,
        _: sys::doca_ctx_states,
        next: sys::doca_ctx_states,
    ) {
        if next == sys::DOCA_CTX_STATE_IDLE {
            let event = TEARDOWN.with(|t| t.borrow().event) as *mut sys::doca_sync_event;
            // SAFETY: the event is live until this call.
            let rc = unsafe { sys::doca_sync_event_destroy(event) };
            TEARDOWN.with(|t| t.borrow_mut().destroyed = rc);
        }
    }
    let (dev, pe) = (host(), Pe::new().unwrap());
    let (mut ev, mut get, mut wait, mut value) = (
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        0u64,
    );
    let data = sys::doca_data { u64_: 0 };
    // SAFETY: live handles and out-pointers; the callbacks above own what they free.
    unsafe {
        assert_eq!(sys::doca_sync_event_create(&mut ev), 0);
        TEARDOWN.with(|t| t.borrow_mut().event = ev as usize);
        assert_eq!(
            sys::doca_sync_event_add_publisher_location_cpu(ev, dev.as_raw()),
            0
        );
        assert_eq!(
            sys::doca_sync_event_add_subscriber_location_cpu(ev, dev.as_raw()),
            0
        );
        assert_eq!(
            sys::doca_sync_event_task_get_set_conf(ev, Some(got), Some(got), 1),
            0
        );
        assert_eq!(
            sys::doca_sync_event_task_wait_eq_set_conf(ev, Some(waited), Some(waited), 1),
            0
        );
        let ctx = sys::doca_sync_event_as_ctx(ev);
        assert_eq!(sys::doca_ctx_set_state_changed_cb(ctx, Some(state)), 0);
        assert_eq!(sys::doca_pe_connect_ctx(pe.as_raw(), ctx), 0);
        assert_eq!(sys::doca_ctx_start(ctx), 0);
        assert_eq!(
            sys::doca_sync_event_task_wait_eq_alloc_init(ev, 1, u64::MAX, data, &mut wait),
            0
        );
        assert_eq!(
            sys::doca_task_submit(sys::doca_sync_event_task_wait_eq_as_doca_task(wait)),
            0
        );
        assert_eq!(
            sys::doca_sync_event_task_get_alloc_init(ev, &mut value, data, &mut get),
            0
        );
        assert_eq!(
            sys::doca_task_submit(sys::doca_sync_event_task_get_as_doca_task(get)),
            0
        );
    }
    for _ in 0..10 {
        pe.progress();
    }
    TEARDOWN.with(|t| {
        let t = t.borrow();
        assert_eq!(
            t.stop,
            sys::DOCA_ERROR_IN_PROGRESS,
            "the wait was outstanding"
        );
        assert_eq!(t.flushed, sys::DOCA_ERROR_IO_FAILED);
        assert_eq!(t.destroyed, 0, "destroyed from its own IDLE callback");
    });
    // SAFETY: a stale handle is refused, never followed.
    let rc = unsafe { sys::doca_sync_event_get(ev, &mut value) };
    assert_eq!(rc, sys::DOCA_ERROR_INVALID_VALUE);
    drop(pe);
}
