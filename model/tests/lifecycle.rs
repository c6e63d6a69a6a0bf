//! Workers, progress and activations always end: dropping a DPA stops its workers, one progress
//! call does bounded work, and no device function finds a stale activation.

mod common;

use common::{Path, PathOptions, default_dev, echo_app, start_dpa};
use dpakit_abi::handles::NotificationCompletionHandle;
use dpakit_abi::{Echo, ErrorCode, ImmMessage, bytes_of};
use dpakit_dev::runtime::CONSUMER_ACK;
use dpakit_dev::{rpc_kernel, thread, thread_kernel};
use dpakit_kernels::ECHO;
use dpakit_model::dpa::{self, App, Dpa, DpaThread, SchedMode};
use std::sync::mpsc;
use std::time::Duration;

thread_kernel! {
    /// Triggers itself on every activation, forever.
    pub SELF_NOTIFY: fn self_notify(arg: u64) {
        // SAFETY: the test writes the thread's own notification handle at `arg`.
        let me: &NotificationCompletionHandle = unsafe { thread::arg_ref(arg) };
        thread::notify(*me);
        thread::reschedule()
    }
}

/// Runs `f` on a thread of its own; fails the test if it does not finish within a minute.
fn finishes(what: &str, f: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        f();
        let _ = done.send(());
    });
    if finished.recv_timeout(Duration::from_secs(60)).is_err() {
        panic!("{what} did not finish within a minute");
    }
}

/// Waits up to 10 s for `cond`.
fn eventually(mut cond: impl FnMut() -> bool, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Threads of this process named `dpa<id>-w…` (the workers of DPA context `id`).
fn workers_of(id: u64) -> usize {
    let prefix = format!("dpa{id}-w");
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end().starts_with(&prefix))
        .count()
}

#[test]
fn dropping_a_dpa_stops_every_worker() {
    for mode in [SchedMode::BusyPoll, SchedMode::Sleep] {
        let dpa = Dpa::builder(&default_dev())
            .app(echo_app())
            .sched_mode(mode)
            .workers(2)
            .start()
            .unwrap();
        let id = dpa.dpa_handle();
        let path = Path::echo(&dpa);
        // A worker names itself once it runs.
        eventually(
            || workers_of(id) == 2,
            &format!("{mode:?}: two workers running"),
        );
        drop(path);
        drop(dpa);
        eventually(
            || workers_of(id) == 0,
            &format!("{mode:?}: workers outlive their DPA"),
        );
    }
}

#[test]
fn a_kernel_that_keeps_notifying_itself_does_not_hold_progress() {
    finishes("progress beside a self-notifying kernel", || {
        let app = App::new("lifecycle")
            .thread_kernel(&SELF_NOTIFY)
            .thread_kernel(&ECHO)
            .rpc_kernel(&CONSUMER_ACK);
        let dpa = start_dpa(app, SchedMode::Deterministic { seed: 5 });
        let arg = dpa.mem_alloc(8).unwrap();
        let looping = DpaThread::builder(&dpa, &SELF_NOTIFY, arg.raw())
            .start()
            .unwrap();
        let me = dpa::NotificationCompletion::start(&dpa, &looping).unwrap();
        dpa.h2d_memcpy(arg, bytes_of(&me.dpa_handle())).unwrap();
        looping.run().unwrap();
        looping.notify();
        let path = Path::echo(&dpa);
        for i in 0..20u64 {
            let msg = ImmMessage::new(
                0,
                &Echo {
                    token: i,
                    timestamp_ns: 0,
                    tag: 0,
                },
            );
            path.cpu_producer
                .send(msg.as_bytes(), path.dpa_consumer.id(), i)
                .unwrap();
            path.wait_received(i as usize + 1);
        }
        assert_eq!(dpa.check(), Ok(()));
        assert!(looping.activations() >= 20, "it ran once per round");
        assert_eq!(dpa.run_until_idle(), dpa::RUN_UNTIL_IDLE_LIMIT);
        // The trace keeps the most recent activations only: a long run does not grow it.
        let trace = dpa.trace();
        assert_eq!(trace.len(), dpa::TRACE_CAPACITY);
        let last = trace.last().unwrap();
        assert_eq!(last.activation, looping.activations());
    });
}

#[test]
fn one_progress_call_is_bounded_while_receive_callbacks_keep_sending() {
    finishes("a progress call whose callbacks keep sending", || {
        let dpa = start_dpa(echo_app(), SchedMode::BusyPoll);
        let path = std::rc::Rc::new(Path::new(&dpa, &ECHO, PathOptions::default(), |a| {
            bytes_of(&a).to_vec()
        }));
        let again = std::rc::Rc::downgrade(&path);
        // Every reply is answered with a new message and its receive posted again, as a
        // ping-pong program does from its callback. A send whose task has not been reported
        // complete yet (NO_MEMORY) is made after the call instead.
        let deferred = std::rc::Rc::new(std::cell::Cell::new(0u32));
        let owed = deferred.clone();
        let send = |p: &Path| {
            let msg = ImmMessage::new(0, &Echo::default());
            p.cpu_producer.send(msg.as_bytes(), p.dpa_consumer.id(), 0)
        };
        path.set_on_received(move || {
            let p = again.upgrade().expect("the path outlives its callbacks");
            p.cpu_consumer.post_recv(0).unwrap();
            if let Err(e) = send(&p) {
                assert_eq!(e.code(), ErrorCode::NoMemory, "{e}");
                owed.set(owed.get() + 1);
            }
        });
        for _ in 0..common::DEPTH {
            send(&path).unwrap();
        }
        for _ in 0..2_000 {
            // Each call completes at most the sends and receives outstanding when it began.
            let n = path.pe.progress();
            assert!(n <= 2 * common::DEPTH as usize, "{n} callbacks in one call");
            while deferred.get() > 0 && send(&path).is_ok() {
                deferred.set(deferred.get() - 1);
            }
        }
        assert_eq!(dpa.check(), Ok(()));
        path.set_on_received(|| {});
    });
}

/// Run as a child process by the test below: a device function called from host code after an
/// activation ended must find no activation.
#[test]
#[ignore = "run by a_device_function_outside_an_activation_stops_with_the_rule"]
fn child_calls_a_device_function_after_an_activation() {
    let dpa = start_dpa(echo_app(), SchedMode::Deterministic { seed: 1 });
    let path = Path::echo(&dpa);
    let msg = ImmMessage::new(0, &Echo::default());
    path.cpu_producer
        .send(msg.as_bytes(), path.dpa_consumer.id(), 0)
        .unwrap();
    path.wait_received(1);
    // The activation rescheduled on this very thread; now plain host code calls the device.
    let _ = thread::local_storage();
    unreachable!("the device function returned outside an activation");
}

#[test]
fn a_device_function_outside_an_activation_stops_with_the_rule() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_calls_a_device_function_after_an_activation",
            "--ignored",
            "--nocapture",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(
            "doca_dpa_dev_thread_get_local_storage called outside a DPA kernel activation"
        ),
        "{stderr}"
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{stderr}");
}

/// Runs `f` on a thread started with `pthread_create`, which, unlike the threads Rust starts,
/// has no alternate signal stack of its own: the soft device gives it one for the RPC.
fn on_a_plain_thread(f: impl FnOnce() + Send + 'static) {
    extern "C" fn start(arg: *mut libc::c_void) -> *mut libc::c_void {
        // SAFETY: `arg` is the box leaked below, taken back once.
        let f = unsafe { Box::from_raw(arg.cast::<Box<dyn FnOnce() + Send>>()) };
        f();
        std::ptr::null_mut()
    }
    let f: Box<Box<dyn FnOnce() + Send>> = Box::new(Box::new(f));
    let mut thread: libc::pthread_t = 0;
    // SAFETY: a valid start routine and an argument it owns from here on.
    let rc = unsafe {
        libc::pthread_create(
            &mut thread,
            std::ptr::null(),
            start,
            Box::into_raw(f).cast(),
        )
    };
    assert_eq!(rc, 0);
    // SAFETY: joins the thread just created, once.
    let joined = unsafe { libc::pthread_join(thread, std::ptr::null_mut()) };
    assert_eq!(joined, 0);
}

rpc_kernel! {
    /// Adds one.
    pub ADD_ONE: fn add_one(x: u64) -> u64 {
        x + 1
    }
}

#[test]
fn the_alternate_signal_stack_of_an_rpc_caller_goes_with_its_thread() {
    let app = App::new("lifecycle")
        .rpc_kernel(&ADD_ONE)
        .rpc_kernel(&CONSUMER_ACK);
    let dpa = start_dpa(app, SchedMode::BusyPoll);
    let before = dpa::live_alt_stacks();
    for _ in 0..20 {
        let dpa = dpa.clone();
        on_a_plain_thread(move || {
            assert_eq!(dpa.rpc(&ADD_ONE, (41,)).unwrap(), 42);
            assert!(
                dpa::live_alt_stacks() > before,
                "the RPC ran on an alternate stack"
            );
        });
        assert_eq!(
            dpa::live_alt_stacks(),
            before,
            "the thread ended: its alternate signal stack is freed"
        );
    }
}
