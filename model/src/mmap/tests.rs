use super::*;
use crate::dev::{Side, Topology};

fn code<T: fmt::Debug>(r: Result<T>) -> ErrorCode {
    r.expect_err("expected an error").code()
}

fn host_dev() -> Dev {
    Dev::open_by_pci(Topology::global(), Side::Host, "b1:00.0").unwrap()
}

#[test]
fn access_flags_have_doca_values() {
    assert_eq!(AccessFlags::LOCAL_READ_ONLY.bits(), 0);
    assert_eq!(AccessFlags::LOCAL_READ_WRITE.bits(), 1);
    assert_eq!(AccessFlags::RDMA_READ.bits(), 2);
    assert_eq!(AccessFlags::RDMA_WRITE.bits(), 4);
    assert_eq!(AccessFlags::RDMA_ATOMIC.bits(), 8);
    assert_eq!(AccessFlags::PCI_READ_ONLY.bits(), 16);
    assert_eq!(AccessFlags::PCI_READ_WRITE.bits(), 32);
    assert_eq!(AccessFlags::PCI_RELAXED_ORDERING.bits(), 64);
    let f = AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE;
    assert_eq!(f.bits(), 0x21);
    assert_eq!(AccessFlags::from_bits(0x21).unwrap(), f);
    assert_eq!(format!("{f:?}"), "LOCAL_READ_WRITE | PCI_READ_WRITE");
    assert_eq!(
        format!("{:?}", AccessFlags::LOCAL_READ_ONLY),
        "LOCAL_READ_ONLY"
    );
    let mut g = AccessFlags::RDMA_READ;
    g |= AccessFlags::RDMA_WRITE;
    assert!(g.contains(AccessFlags::RDMA_WRITE) && !g.contains(AccessFlags::RDMA_ATOMIC));
}

#[test]
fn undefined_access_flag_is_invalid_value() {
    assert_eq!(
        code(AccessFlags::from_bits(1 << 7)),
        ErrorCode::InvalidValue
    );
    assert_eq!(
        code(AccessFlags::from_bits(u32::MAX)),
        ErrorCode::InvalidValue
    );
}

#[test]
fn pci_read_only_with_read_write_is_invalid_value() {
    let m = Mmap::alloc(64).unwrap();
    let e = m
        .set_permissions(AccessFlags::PCI_READ_ONLY | AccessFlags::PCI_READ_WRITE)
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue);
    assert!(e.message().contains("mutually exclusive"), "{e}");
    assert_eq!(m.get_permissions(), AccessFlags::LOCAL_READ_WRITE);
}

#[test]
fn happy_path() {
    let dev = host_dev();
    let m = Mmap::alloc(4096).unwrap();
    m.add_dev(&dev).unwrap();
    m.set_permissions(AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE)
        .unwrap();
    m.set_user_data(7).unwrap();
    assert!(!m.is_started());
    m.start().unwrap();
    assert!(m.is_started());
    let (ptr, len) = m.get_memrange().unwrap();
    assert_eq!(len, 4096);
    assert_eq!(ptr.addr() % Mmap::ALLOC_ALIGN, 0);
    assert_eq!(m.range(), (ptr, len));
    // SAFETY: the mmap owns 4096 zeroed bytes at `ptr` and nothing else accesses them.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
    assert!(bytes.iter().all(|&b| b == 0));
    assert!(m.has_dev(&dev));
    assert_eq!(m.devs(), vec![dev]);
    assert!(m.allows_local_read() && m.allows_local_write());
    assert!(m.allows_pci_read() && m.allows_pci_write());
    assert_eq!(m.get_user_data(), 7);
    assert_eq!(m.get_num_bufs(), 0);
    m.stop().unwrap();
    // Stopped: configurable again, restartable.
    m.set_permissions(AccessFlags::LOCAL_READ_ONLY | AccessFlags::PCI_READ_ONLY)
        .unwrap();
    m.start().unwrap();
    assert!(!m.allows_local_write() && m.allows_local_read());
    assert!(m.allows_pci_read() && !m.allows_pci_write());
}

#[test]
fn borrowed_memrange() {
    let mut memory = vec![0u8; 256];
    let m = Mmap::create().unwrap();
    // SAFETY: `memory` outlives `m` (dropped at the end of the test, after `m`), and no
    // reference to it is used while the mmap exists.
    unsafe { m.set_memrange(memory.as_mut_ptr(), memory.len()).unwrap() };
    m.start().unwrap();
    let base = memory.as_ptr().addr();
    assert_eq!(m.get_memrange().unwrap(), (memory.as_mut_ptr(), 256));
    assert!(m.contains(base, 256) && m.contains(base + 255, 1) && m.contains(base + 256, 0));
    assert!(!m.contains(base + 1, 256) && !m.contains(base - 1, 1));
    assert!(!m.contains(base + 200, usize::MAX) && !m.contains(usize::MAX, usize::MAX));
    drop(m);
    drop(memory);
}

#[test]
fn with_memory_owns_the_box() {
    let m = Mmap::with_memory(vec![5u8; 100].into_boxed_slice()).unwrap();
    let (ptr, len) = m.get_memrange().unwrap();
    // SAFETY: the mmap owns these 100 bytes and nothing writes them.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
    assert_eq!(bytes, &[5u8; 100][..]);
    let clone = m.clone();
    drop(m);
    assert_eq!(clone.range().1, 100);
}

#[test]
fn start_without_memrange_is_invalid_value() {
    let e = Mmap::create().unwrap().start().unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue);
    assert!(e.message().contains("set_memrange"), "{e}");
}

#[test]
fn start_twice_is_bad_state() {
    let m = Mmap::alloc(8).unwrap();
    m.start().unwrap();
    assert_eq!(code(m.start()), ErrorCode::BadState);
}

#[test]
fn stop_when_not_started_is_bad_state() {
    assert_eq!(code(Mmap::alloc(8).unwrap().stop()), ErrorCode::BadState);
}

#[test]
fn get_memrange_never_set_is_bad_state() {
    let m = Mmap::create().unwrap();
    assert_eq!(code(m.get_memrange()), ErrorCode::BadState);
    assert_eq!(m.range(), (std::ptr::null_mut(), 0));
    assert!(!m.contains(0, 0));
}

#[test]
fn configuration_after_start_is_refused() {
    let dev = host_dev();
    let m = Mmap::alloc(64).unwrap();
    m.start().unwrap();
    assert_eq!(
        code(m.set_permissions(AccessFlags::LOCAL_READ_ONLY)),
        ErrorCode::BadState
    );
    assert_eq!(code(m.set_user_data(1)), ErrorCode::BadState);
    let mut other = [0u8; 8];
    // SAFETY: the call fails before registering anything.
    let r = unsafe { m.set_memrange(other.as_mut_ptr(), other.len()) };
    assert_eq!(code(r), ErrorCode::BadState);
    // DOCA documents NOT_PERMITTED for adding or removing devices on a started mmap.
    assert_eq!(code(m.add_dev(&dev)), ErrorCode::NotPermitted);
    assert_eq!(code(m.rm_dev(&dev)), ErrorCode::NotPermitted);
}

#[test]
fn memrange_twice_is_not_permitted() {
    let m = Mmap::alloc(64).unwrap();
    let mut other = [0u8; 8];
    // SAFETY: the call fails before registering anything.
    let r = unsafe { m.set_memrange(other.as_mut_ptr(), other.len()) };
    assert_eq!(code(r), ErrorCode::NotPermitted);
}

#[test]
fn bad_memrange_is_invalid_value() {
    let m = Mmap::create().unwrap();
    let mut byte = [0u8; 1];
    // SAFETY: each call fails validation before registering anything.
    unsafe {
        assert_eq!(
            code(m.set_memrange(std::ptr::null_mut(), 8)),
            ErrorCode::InvalidValue
        );
        assert_eq!(
            code(m.set_memrange(byte.as_mut_ptr(), 0)),
            ErrorCode::InvalidValue
        );
        assert_eq!(
            code(m.set_memrange(byte.as_mut_ptr(), MMAP_MAX_LEN + 1)),
            ErrorCode::InvalidValue
        );
        let end = std::ptr::without_provenance_mut::<u8>(usize::MAX);
        assert_eq!(code(m.set_memrange(end, 2)), ErrorCode::InvalidValue);
    }
    // Nothing was registered by the failed calls.
    assert_eq!(code(m.get_memrange()), ErrorCode::BadState);
}

#[test]
fn bad_allocation_size_is_invalid_value() {
    assert_eq!(code(Mmap::alloc(0)), ErrorCode::InvalidValue);
    assert_eq!(code(Mmap::alloc(MMAP_MAX_LEN + 1)), ErrorCode::InvalidValue);
    assert_eq!(
        code(Mmap::with_memory(Box::new([]))),
        ErrorCode::InvalidValue
    );
    let e = Mmap::alloc(usize::MAX).unwrap_err();
    assert!(e.message().contains("MMAP_MAX_LEN"), "{e}");
}

#[test]
fn max_len_is_accepted() {
    // Registering (not allocating) the largest range is fine.
    let m = Mmap::create().unwrap();
    let base = std::ptr::without_provenance_mut::<u8>(Mmap::ALLOC_ALIGN);
    // SAFETY: the mmap is never started and nothing dereferences the range.
    unsafe { m.set_memrange(base, MMAP_MAX_LEN).unwrap() };
    assert_eq!(m.range().1, MMAP_MAX_LEN);
}

#[test]
fn add_dev_twice_is_already_exist() {
    let dev = host_dev();
    let m = Mmap::alloc(64).unwrap();
    m.add_dev(&dev).unwrap();
    // Opening the device again yields the same device.
    let again = Dev::open(dev.as_devinfo()).unwrap();
    assert_eq!(code(m.add_dev(&again)), ErrorCode::AlreadyExist);
    let arm = Dev::open_by_pci(Topology::global(), Side::Arm, "03:00.0").unwrap();
    m.add_dev(&arm).unwrap();
    assert_eq!(m.devs().len(), 2);
}

#[test]
fn rm_dev_absent_is_not_found() {
    let dev = host_dev();
    let m = Mmap::alloc(64).unwrap();
    assert_eq!(code(m.rm_dev(&dev)), ErrorCode::NotFound);
    m.add_dev(&dev).unwrap();
    m.rm_dev(&dev).unwrap();
    assert!(!m.has_dev(&dev));
}

#[test]
fn stop_with_buffers_is_not_permitted() {
    let m = Mmap::alloc(64).unwrap();
    m.start().unwrap();
    let base = m.range().0.addr();
    m.acquire_buf(base, 64).unwrap();
    assert_eq!(m.get_num_bufs(), 1);
    let e = m.stop().unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotPermitted);
    assert!(e.message().contains("1 buffer"), "{e}");
    m.release_buf();
    m.stop().unwrap();
}

#[test]
fn acquire_checks_state_and_range() {
    let m = Mmap::alloc(64).unwrap();
    let base = m.range().0.addr();
    assert_eq!(code(m.acquire_buf(base, 8)), ErrorCode::BadState);
    m.start().unwrap();
    assert_eq!(code(m.acquire_buf(base + 60, 8)), ErrorCode::InvalidValue);
    assert_eq!(m.get_num_bufs(), 0);
}

#[test]
fn ids_are_unique_and_clones_are_the_same_mmap() {
    let a = Mmap::alloc(8).unwrap();
    let b = Mmap::alloc(8).unwrap();
    assert_ne!(a.id(), b.id());
    assert_ne!(a, b);
    let c = a.clone();
    assert_eq!(a, c);
    assert_eq!(a.id(), c.id());
    c.start().unwrap();
    assert!(a.is_started());
    assert!(format!("{a:?}").contains("started: true"));
}

#[test]
fn shared_across_threads() {
    fn check<T: Send + Sync + Clone>() {}
    check::<Mmap>();
    let m = Mmap::alloc(64).unwrap();
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let m = m.clone();
            std::thread::spawn(move || m.contains(m.range().0.addr(), 64))
        })
        .collect();
    for h in handles {
        assert!(h.join().unwrap());
    }
}
