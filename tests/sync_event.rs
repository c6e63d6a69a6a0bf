//! Sync events, EU affinity and devinfo queries through the safe API, on the soft device.

use dpakit::dev::DevList;
use dpakit::dpa::{Dpa, DpaThread, EuAffinity};
use dpakit::soft::SoftSettings;
use dpakit::sync_event::SyncEvent;
use dpakit::{ErrorCode, kit_app, open_dpa_dev};

fn dpa() -> Dpa {
    Dpa::builder(&open_dpa_dev().unwrap())
        .app(kit_app())
        .workers(1)
        .start()
        .unwrap()
}

#[test]
fn a_cpu_event_synchronises_two_threads() {
    let dev = open_dpa_dev().unwrap();
    let ping = SyncEvent::builder()
        .publisher_cpu(&dev)
        .subscriber_cpu(&dev)
        .start()
        .unwrap();
    let pong = SyncEvent::builder()
        .publisher_cpu(&dev)
        .subscriber_cpu(&dev)
        .start()
        .unwrap();
    const ROUNDS: u64 = 500;
    std::thread::scope(|s| {
        s.spawn(|| {
            for round in 0..ROUNDS {
                ping.wait_gt_yield(round, u64::MAX).unwrap();
                assert_eq!(pong.add(1).unwrap(), round);
            }
        });
        for round in 0..ROUNDS {
            ping.set(round + 1).unwrap();
            pong.wait_gt(round, u64::MAX).unwrap();
        }
    });
    assert_eq!(pong.get().unwrap(), ROUNDS);
    assert_eq!(ping.get().unwrap(), ROUNDS);
}

#[test]
fn an_event_needs_both_locations() {
    let dev = open_dpa_dev().unwrap();
    let e = SyncEvent::builder()
        .publisher_cpu(&dev)
        .start()
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::BadState, "{e}");
}

#[test]
fn dpa_handles_are_for_the_event_s_dpa_only() {
    let (first, second) = (dpa(), dpa());
    let dev = first.dev().clone();
    let event = SyncEvent::builder()
        .publisher_dpa(&first)
        .subscriber_cpu(&dev)
        .start()
        .unwrap();
    let h = event.dpa_handle(&first).unwrap();
    assert_ne!(h.raw(), 0);
    assert_eq!(
        event.dpa_handle(&first).unwrap(),
        h,
        "the same handle again"
    );
    let e = event.dpa_handle(&second).unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotPermitted, "{e}");
    let cpu_only = SyncEvent::builder()
        .publisher_cpu(&dev)
        .subscriber_cpu(&dev)
        .start()
        .unwrap();
    assert_eq!(
        cpu_only.dpa_handle(&first).unwrap_err().code(),
        ErrorCode::NotPermitted
    );
    event.add(3).unwrap();
    assert_eq!(event.get().unwrap(), 3);
}

#[test]
fn eu_affinity_names_an_existing_eu() {
    let dpa = dpa();
    let total = dpa.total_num_eus_available().unwrap();
    let last = EuAffinity::new(&dpa, total - 1).unwrap();
    assert_eq!(last.eu(), total - 1);
    let e = EuAffinity::new(&dpa, total).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue, "{e}");
    assert!(e.to_string().contains("does not exist"), "{e}");
    let thread = DpaThread::builder(&dpa, &dpakit::kernels::ECHO)
        .affinity(&last)
        .start_deferred();
    assert!(thread.is_ok(), "{thread:?}");
}

#[test]
fn devinfo_reports_its_pci_address_and_ib_name() {
    let list = DevList::new().unwrap();
    let info = list.iter().next().unwrap();
    let pci = info.pci_addr_str().unwrap();
    assert_eq!(pci.len(), 12, "{pci}");
    assert!(info.is_equal_pci_addr(&pci).unwrap());
    assert!(!info.ibdev_name().unwrap().is_empty());
}
