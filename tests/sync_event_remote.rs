//! Sync events shared with the remote PCI side: exported by one process, imported by another
//! (`doca_sync_event_export_to_remote_pci`, `doca_sync_event_create_from_export`). The test
//! binary runs itself in a role for the other process (docs/soft-device.md has the design and
//! its trust rules: every blob is checked, nothing waits on the peer).

#[path = "support/procs.rs"]
mod procs;

use dpakit::ErrorCode;
use dpakit::dev::Dev;
use dpakit::pe::Pe;
use dpakit::soft::SoftSettings;
use dpakit::sync_event::{SyncEvent, SyncEventContext, TaskKind};
use dpakit_sys as sys;
use procs::{Proc, ev, runtime_dir, var, var_u64};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

const ARM: &str = "03:00.0";
const HOST: &str = "b1:00.0";
/// Where a blob's fields are (docs/soft-device.md).
const PID: usize = 16;
const FD: usize = 20;
const TOKEN: usize = 24;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len() / 2)
        .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

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

// ---------------------------------------------------------------------------------------------
// Roles (run in child processes)
// ---------------------------------------------------------------------------------------------

/// Entry point of the child processes; a no-op in a normal test run.
#[test]
fn role() {
    match var("DPAKIT_ROLE").as_str() {
        "exporter" => exporter_role(),
        "importer" => importer_role(),
        "cap" => cap_role(),
        _ => {}
    }
}

/// Exports an event (publisher: the remote PCI side, subscriber: this CPU), prints the blob,
/// then for `ROUNDS` rounds waits for the importer's odd value and answers with the next even
/// one. Then stays alive until killed if `HOLD` is set.
fn exporter_role() {
    let host = Dev::open_by_pci(HOST).unwrap();
    let event = SyncEvent::builder()
        .publisher_remote_pci()
        .subscriber_cpu(&host)
        .start()
        .unwrap();
    ev(format_args!(
        "blob {}",
        hex(event.export_to_remote_pci(&host).unwrap())
    ));
    for round in 1..=var_u64("ROUNDS", 0) {
        event.wait_eq_yield(2 * round - 1, u64::MAX).unwrap();
        event.add(1).unwrap();
    }
    ev(format_args!("done {}", event.get().unwrap()));
    if var("HOLD") == "1" {
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

/// Imports `BLOB` on the Arm side, adds 1, and stays alive until killed.
fn importer_role() {
    let arm = Dev::open_by_pci(ARM).unwrap();
    let event = SyncEvent::create_from_export(&arm, &unhex(&var("BLOB"))).unwrap();
    ev(format_args!("added {}", event.add(1).unwrap()));
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// With 64 descriptors allowed, the process shares at most 16 events: the 17th export is
/// refused, and one destroyed makes room.
fn cap_role() {
    let limit = libc::rlimit {
        rlim_cur: 64,
        rlim_max: 64,
    };
    // SAFETY: a valid rlimit.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
    let host = Dev::open_by_pci(HOST).unwrap();
    let make = || {
        SyncEvent::builder()
            .publisher_remote_pci()
            .subscriber_cpu(&host)
            .start()
    };
    let mut events: Vec<SyncEvent> = (0..16).map(|_| make().unwrap()).collect();
    let e = make().unwrap_err();
    ev(format_args!("refused {:?} {e}", e.code()));
    events.pop();
    ev(format_args!("again {}", make().is_ok()));
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

fn exporter(test: &str, rounds: u64, hold: bool) -> (Proc, Vec<u8>) {
    let p = Proc::spawn(
        &runtime_dir(test),
        "exporter",
        &[
            ("ROUNDS", rounds.to_string()),
            ("HOLD", if hold { "1" } else { "0" }.to_string()),
        ],
    );
    let (_, line) = p.expect("blob ", Duration::from_secs(20));
    let blob = unhex(line.trim_start_matches("blob "));
    (p, blob)
}

#[test]
fn two_processes_share_one_counter_and_the_importer_outlives_its_exporter() {
    const ROUNDS: u64 = 1000;
    let (p, blob) = exporter("share", ROUNDS, false);
    let arm = Dev::open_by_pci(ARM).unwrap();
    let event = SyncEvent::create_from_export(&arm, &blob).unwrap();
    for round in 1..=ROUNDS {
        assert_eq!(event.add(1).unwrap(), 2 * round - 2);
        event.wait_eq_yield(2 * round, u64::MAX).unwrap();
    }
    p.expect("done 2000", Duration::from_secs(20));
    p.wait_ok();
    // The exporter is gone: the importer's counter is still there, and no new import.
    assert_eq!(event.get().unwrap(), 2 * ROUNDS);
    event.set(7).unwrap();
    assert_eq!(event.get().unwrap(), 7);
    let e = SyncEvent::create_from_export(&arm, &blob).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue, "{e}");
    assert!(e.to_string().contains("is gone"), "{e}");
}

#[test]
fn an_importer_that_is_killed_leaves_the_exporter_whole() {
    let host = Dev::open_by_pci(HOST).unwrap();
    let event = SyncEvent::builder()
        .publisher_remote_pci()
        .subscriber_cpu(&host)
        .start()
        .unwrap();
    let blob = hex(event.export_to_remote_pci(&host).unwrap());
    let mut p = Proc::spawn(
        &runtime_dir("killed-importer"),
        "importer",
        &[("BLOB", blob)],
    );
    p.expect("added 0", Duration::from_secs(20));
    event.wait_eq(1, u64::MAX).unwrap();
    p.kill9();
    event.add(1).unwrap();
    assert_eq!(event.get().unwrap(), 2);
    // Exported through the same device again: the same bytes.
    let again = event.export_to_remote_pci(&host).unwrap();
    assert_eq!(hex(again), hex(event.export_to_remote_pci(&host).unwrap()));
}

#[test]
fn a_wait_task_on_a_dead_exporter_s_event_ends_with_its_context() {
    let (mut p, blob) = exporter("dead-exporter", 0, true);
    let arm = Dev::open_by_pci(ARM).unwrap();
    let pe = Pe::new().unwrap();
    let statuses = Rc::new(RefCell::new(Vec::new()));
    let seen = statuses.clone();
    let ctx = SyncEventContext::from_export(&arm, &blob, &pe)
        .tasks(TaskKind::WaitEq, 1)
        .tasks(TaskKind::NotifyAdd, 1)
        .on_complete(move |c| seen.borrow_mut().push((c.kind, c.status)))
        .start()
        .unwrap();
    ctx.wait_eq(u64::MAX, u64::MAX, 0).unwrap();
    p.kill9();
    let until = Instant::now() + Duration::from_millis(100);
    while Instant::now() < until {
        pe.progress();
    }
    assert!(statuses.borrow().is_empty(), "nobody sets the counter");
    // Its own updates still work; the stop ends the wait with an error, at once.
    ctx.notify_add(1, 0).unwrap();
    pe.progress_until(Duration::from_secs(5), || !statuses.borrow().is_empty())
        .unwrap();
    let started = Instant::now();
    ctx.stop().unwrap();
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(
        *statuses.borrow(),
        [
            (TaskKind::NotifyAdd, ErrorCode::Success),
            (TaskKind::WaitEq, ErrorCode::IoFailed)
        ]
    );
}

#[test]
fn hostile_blobs_are_refused_at_once_naming_the_rule() {
    let (host, arm) = (
        Dev::open_by_pci(HOST).unwrap(),
        Dev::open_by_pci(ARM).unwrap(),
    );
    let event = SyncEvent::builder()
        .publisher_cpu(&host)
        .subscriber_remote_pci()
        .start()
        .unwrap();
    let good = event.export_to_remote_pci(&host).unwrap().to_vec();
    // A memory file of two pages, sealed like the real one: the right kind, the wrong size.
    // SAFETY: no pointers; the results are checked.
    let big = unsafe { libc::memfd_create(c"big".as_ptr(), libc::MFD_ALLOW_SEALING) };
    assert!(big >= 0);
    // SAFETY: as above.
    unsafe {
        assert_eq!(libc::ftruncate(big, 8192), 0);
        assert_eq!(libc::fcntl(big, libc::F_ADD_SEALS, libc::F_SEAL_SHRINK), 0);
    }
    let with = |at: usize, bytes: &[u8]| {
        let mut b = good.clone();
        b[at..at + bytes.len()].copy_from_slice(bytes);
        b
    };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "truncated",
            good[..good.len() - 1].to_vec(),
            "exactly 48 bytes",
        ),
        ("extended", [&good[..], &[0]].concat(), "exactly 48 bytes"),
        ("empty", Vec::new(), "sz is 0 bytes"),
        ("wrong magic", with(0, b"DOCAblob"), "magic number"),
        (
            "forged token",
            with(TOKEN, &[0x5a; 16]),
            "token does not match",
        ),
        (
            "a memory file of another size",
            with(FD, &(big as u32).to_le_bytes()),
            "not the one page",
        ),
        (
            "this process's stdin",
            with(FD, &0u32.to_le_bytes()),
            "descriptor 0",
        ),
        (
            "a process that does not exist",
            with(PID, &0x7fff_fff0u32.to_le_bytes()),
            "is gone",
        ),
        (
            "no process",
            with(PID, &0u32.to_le_bytes()),
            "not a process",
        ),
        (
            "a negative descriptor",
            with(FD, &u32::MAX.to_le_bytes()),
            "not a process",
        ),
    ];
    for (what, blob, rule) in cases {
        let started = Instant::now();
        let e = SyncEvent::create_from_export(&arm, &blob).unwrap_err();
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "{what} took {:?}",
            started.elapsed()
        );
        assert_eq!(e.code(), ErrorCode::InvalidValue, "{what}: {e}");
        assert!(e.to_string().contains(rule), "{what}: {e}");
    }
    // A huge size is refused before a byte is read; so is NULL data.
    let mut out = std::ptr::null_mut();
    for (data, sz) in [
        (good.as_ptr(), usize::MAX),
        (good.as_ptr(), 1 << 40),
        (std::ptr::null(), 48),
    ] {
        // SAFETY: the soft device reads nothing of a blob whose size is not 48, nor a NULL one.
        let rc =
            unsafe { sys::doca_sync_event_create_from_export(arm.as_raw(), data, sz, &mut out) };
        assert_eq!(rc, sys::DOCA_ERROR_INVALID_VALUE, "{sz}: {}", last_error());
    }
    // Imported on the exporter's own side: refused too.
    let e = SyncEvent::create_from_export(&host, &good).unwrap_err();
    assert!(e.to_string().contains("import it on the other side"), "{e}");
    // SAFETY: ours, closed once.
    unsafe { libc::close(big) };
    let twin = SyncEvent::create_from_export(&arm, &good).unwrap();
    twin.set(3).unwrap();
    assert_eq!(event.get().unwrap(), 3, "the real blob still imports");
}

#[test]
fn only_cpu_and_remote_pci_events_are_exported() {
    let host = Dev::open_by_pci(HOST).unwrap();
    let dpa = dpakit::dpa::Dpa::builder(&host)
        .app(dpakit::kit_app())
        .workers(1)
        .start()
        .unwrap();
    let on_dpa = SyncEvent::builder()
        .publisher_dpa(&dpa)
        .subscriber_remote_pci()
        .start()
        .unwrap();
    let e = on_dpa.export_to_remote_pci(&host).unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotSupported, "{e}");
    assert!(e.to_string().contains("is a DPA context"), "{e}");
    // A CPU-only event started with its counter in its own memory: too late.
    let local = SyncEvent::builder()
        .publisher_cpu(&host)
        .subscriber_cpu(&host)
        .start()
        .unwrap();
    let e = local.export_to_remote_pci(&host).unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotSupported, "{e}");
    assert!(e.to_string().contains("export before start"), "{e}");
}

/// A raw event on `dev` with a CPU publisher and the subscriber `remote` chooses.
fn raw_event(dev: &Dev, remote: bool) -> *mut sys::doca_sync_event {
    let mut ev = std::ptr::null_mut();
    // SAFETY: live handles and out-pointers.
    unsafe {
        assert_eq!(sys::doca_sync_event_create(&mut ev), 0);
        assert_eq!(
            sys::doca_sync_event_add_publisher_location_cpu(ev, dev.as_raw()),
            0
        );
        let rc = if remote {
            sys::doca_sync_event_add_subscriber_location_remote_pci(ev)
        } else {
            sys::doca_sync_event_add_subscriber_location_cpu(ev, dev.as_raw())
        };
        assert_eq!(rc, 0);
    }
    ev
}

#[test]
fn the_counter_s_home_is_chosen_at_start() {
    let (host, arm) = (
        Dev::open_by_pci(HOST).unwrap(),
        Dev::open_by_pci(ARM).unwrap(),
    );
    let (mut data, mut sz) = (std::ptr::null(), 0usize);
    // SAFETY: live handles and out-pointers throughout; the blob is read while its event lives.
    unsafe {
        // A CPU-only event exported before start keeps its counter in the shared page.
        let ev = raw_event(&host, false);
        assert_eq!(
            sys::doca_sync_event_export_to_remote_pci(ev, host.as_raw(), &mut data, &mut sz),
            0
        );
        assert_eq!(sys::doca_sync_event_start(ev), 0);
        let twin =
            SyncEvent::create_from_export(&arm, std::slice::from_raw_parts(data, sz)).unwrap();
        twin.set(11).unwrap();
        let mut v = 0;
        assert_eq!(sys::doca_sync_event_get(ev, &mut v), 0);
        assert_eq!(v, 11);
        // The bytes are the event's: the same pointer for the same device.
        let first = data;
        assert_eq!(
            sys::doca_sync_event_export_to_remote_pci(ev, host.as_raw(), &mut data, &mut sz),
            0
        );
        assert_eq!(first, data);
        assert_eq!(sys::doca_sync_event_destroy(ev), 0);
        // Program memory and a remote location do not go together.
        let ev = raw_event(&host, true);
        let mut word = 0u64;
        assert_eq!(sys::doca_sync_event_set_addr(ev, &mut word), 0);
        assert_eq!(
            sys::doca_sync_event_start(ev),
            sys::DOCA_ERROR_NOT_SUPPORTED
        );
        assert!(
            last_error().contains("memory of its own"),
            "{}",
            last_error()
        );
        assert_eq!(sys::doca_sync_event_destroy(ev), 0);
        // A missing location.
        let mut ev = std::ptr::null_mut();
        assert_eq!(sys::doca_sync_event_create(&mut ev), 0);
        assert_eq!(
            sys::doca_sync_event_add_publisher_location_remote_pci(ev),
            0
        );
        let rc = sys::doca_sync_event_export_to_remote_pci(ev, host.as_raw(), &mut data, &mut sz);
        assert_eq!(rc, sys::DOCA_ERROR_NOT_SUPPORTED, "{}", last_error());
        assert!(
            last_error().contains("no subscriber location"),
            "{}",
            last_error()
        );
        assert_eq!(sys::doca_sync_event_destroy(ev), 0);
    }
}

#[test]
fn an_imported_event_cannot_be_configured_and_takes_either_route() {
    let (host, arm) = (
        Dev::open_by_pci(HOST).unwrap(),
        Dev::open_by_pci(ARM).unwrap(),
    );
    let event = SyncEvent::builder()
        .publisher_remote_pci()
        .subscriber_cpu(&host)
        .start()
        .unwrap();
    let blob = event.export_to_remote_pci(&host).unwrap().to_vec();
    let (mut a, mut b) = (std::ptr::null_mut(), std::ptr::null_mut());
    let mut word = 0u64;
    // SAFETY: live handles and out-pointers throughout.
    unsafe {
        assert_eq!(
            sys::doca_sync_event_create_from_export(arm.as_raw(), blob.as_ptr(), 48, &mut a),
            0
        );
        assert_eq!(
            sys::doca_sync_event_update_add(a, 5, std::ptr::null_mut()),
            0,
            "usable at once"
        );
        for rc in [
            sys::doca_sync_event_add_publisher_location_cpu(a, arm.as_raw()),
            sys::doca_sync_event_add_subscriber_location_remote_pci(a),
            sys::doca_sync_event_set_addr(a, &mut word),
        ] {
            assert_eq!(rc, sys::DOCA_ERROR_NOT_PERMITTED, "{}", last_error());
            assert!(
                last_error().contains("cannot be configured"),
                "{}",
                last_error()
            );
        }
        let (mut data, mut sz) = (std::ptr::null(), 0);
        let rc = sys::doca_sync_event_export_to_remote_pci(a, arm.as_raw(), &mut data, &mut sz);
        assert_eq!(rc, sys::DOCA_ERROR_NOT_SUPPORTED, "{}", last_error());
        // Started stand-alone, and stopped: its counter stays the exporter's.
        assert_eq!(sys::doca_sync_event_start(a), 0);
        assert_eq!(sys::doca_sync_event_stop(a), 0);
        let mut v = 0;
        assert_eq!(sys::doca_sync_event_get(a, &mut v), 0);
        assert_eq!(v, 5);
        // Closing its device waits for the event.
        assert_eq!(
            sys::doca_sync_event_create_from_export(arm.as_raw(), blob.as_ptr(), 48, &mut b),
            0
        );
        assert!(
            !sys::doca_sync_event_as_ctx(b).is_null(),
            "{}",
            last_error()
        );
        assert_eq!(sys::doca_sync_event_destroy(a), 0);
        assert_eq!(sys::doca_sync_event_destroy(b), 0);
    }
    assert_eq!(event.get().unwrap(), 5);
}

#[test]
fn a_process_shares_a_bounded_number_of_events() {
    let p = Proc::spawn(&runtime_dir("cap"), "cap", &[]);
    let (_, refused) = p.expect("refused", Duration::from_secs(20));
    assert!(refused.starts_with("refused NoMemory"), "{refused}");
    assert!(refused.contains("SYNC_EVENT_MAX_EXPORTED"), "{refused}");
    p.expect("again true", Duration::from_secs(20));
    p.wait_ok();
}
