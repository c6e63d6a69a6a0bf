//! The export blob and its checks, within one process (the blob names this process's own
//! descriptor, which is what another process would open too).

use super::*;
use crate::dev::Topology;

fn host() -> Dev {
    Dev::open_by_pci(Topology::global(), Side::Host, "0000:b1:00.0").unwrap()
}

fn arm() -> Dev {
    Dev::open_by_pci(Topology::global(), Side::Arm, "0000:03:00.0").unwrap()
}

fn code(r: Result<SharedCounter>) -> (ErrorCode, String) {
    let e = r.unwrap_err();
    (e.code(), e.message().to_string())
}

#[test]
#[cfg_attr(miri, ignore = "memfd, mmap and /proc: system calls miri does not run")]
fn the_importer_shares_the_exporter_s_counter() {
    let exported = SharedCounter::create(7).unwrap();
    let blob = exported.blob(&host()).unwrap();
    let imported = SharedCounter::import(&blob, &arm()).unwrap();
    assert!(imported.is_imported() && !exported.is_imported());
    assert_eq!(imported.atomic().load(Ordering::Acquire), 7);
    imported.atomic().fetch_add(5, Ordering::AcqRel);
    assert_eq!(exported.atomic().load(Ordering::Acquire), 12);
    // The importer's mapping outlives the exporter's file.
    drop(exported);
    imported.atomic().store(1, Ordering::Release);
    let e = code(SharedCounter::import(&blob, &arm()));
    assert_eq!(e.0, ErrorCode::InvalidValue, "{}", e.1);
    assert!(e.1.contains("is gone") || e.1.contains("token"), "{}", e.1);
    let e = imported.blob(&arm()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotSupported, "{e}");
}

#[test]
#[cfg_attr(miri, ignore = "memfd, mmap and /proc: system calls miri does not run")]
fn an_export_is_imported_on_the_other_side_of_its_card_only() {
    let exported = SharedCounter::create(0).unwrap();
    let e = code(SharedCounter::import(
        &exported.blob(&host()).unwrap(),
        &host(),
    ));
    assert_eq!(e.0, ErrorCode::InvalidValue);
    assert!(e.1.contains("import it on the other side"), "{}", e.1);
    let mut blob = exported.blob(&arm()).unwrap();
    assert!(SharedCounter::import(&blob, &host()).is_ok(), "Arm -> host");
    blob[at::CARD] = 9;
    let e = code(SharedCounter::import(&blob, &host()));
    assert!(e.1.contains("BlueField 9"), "{}", e.1);
}

#[test]
#[cfg_attr(miri, ignore = "memfd, mmap and /proc: system calls miri does not run")]
fn malformed_blobs_are_refused_by_their_form() {
    let exported = SharedCounter::create(0).unwrap();
    let good = exported.blob(&host()).unwrap();
    type Damage = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: [(&str, Damage); 8] = [
        ("exactly 48 bytes", Box::new(|b| b.truncate(47))),
        ("exactly 48 bytes", Box::new(|b| b.push(0))),
        ("magic number", Box::new(|b| b[0] ^= 1)),
        ("version", Box::new(|b| b[at::VERSION] = 2)),
        ("neither the host", Box::new(|b| b[at::SIDE] = 7)),
        ("reserved byte", Box::new(|b| b[at::RESERVED] = 1)),
        (
            "not a process",
            Box::new(|b| b[at::PID..at::PID + 4].fill(0)),
        ),
        ("not a process", Box::new(|b| b[at::FD + 3] = 0x80)),
    ];
    for (rule, damage) in cases {
        let mut blob = good.to_vec();
        damage(&mut blob);
        let e = code(SharedCounter::import(&blob, &arm()));
        assert_eq!(e.0, ErrorCode::InvalidValue, "{rule}: {}", e.1);
        assert!(e.1.contains(rule), "{rule}: {}", e.1);
    }
    let e = code(SharedCounter::import(&[], &arm()));
    assert!(e.1.contains("sz is 0 bytes"), "{}", e.1);
}

/// `good` pointing at descriptor `fd` of this process.
fn naming(good: &[u8; BLOB_LEN], fd: RawFd) -> [u8; BLOB_LEN] {
    let mut b = *good;
    b[at::FD..at::FD + 4].copy_from_slice(&(fd as u32).to_le_bytes());
    b
}

#[test]
#[cfg_attr(miri, ignore = "memfd, mmap and /proc: system calls miri does not run")]
fn a_blob_naming_anything_but_the_shared_counter_is_refused() {
    let exported = SharedCounter::create(0).unwrap();
    let good = exported.blob(&host()).unwrap();
    let refuse = |fd: RawFd, rule: &str| {
        let e = code(SharedCounter::import(&naming(&good, fd), &arm()));
        assert_eq!(e.0, ErrorCode::InvalidValue, "{rule}: {}", e.1);
        assert!(e.1.contains(rule), "{rule}: {}", e.1);
    };
    // A pipe, a regular file, /dev/null: not memory files.
    let mut pipe = [0; 2];
    // SAFETY: fills two descriptors.
    assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
    refuse(pipe[0], "not a memory file");
    let file = std::fs::File::open("/proc/self/exe").unwrap();
    refuse(file.as_raw_fd(), "not a memory file");
    let null = std::fs::File::open("/dev/null").unwrap();
    refuse(null.as_raw_fd(), "not a memory file");
    // Memory files of the wrong size, unsealed, or another page with no token.
    let big = memfd(c"big", 2 * page_size()).unwrap();
    refuse(big.as_raw_fd(), "not the one page");
    // SAFETY: no pointers; the result is checked.
    let raw = unsafe { libc::memfd_create(c"unsealed".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(raw >= 0);
    // SAFETY: fresh, ours.
    let unsealed = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: no pointers.
    let sized = unsafe { libc::ftruncate(raw, page_size() as libc::off_t) };
    assert_eq!(sized, 0);
    refuse(unsealed.as_raw_fd(), "not sealed against shrinking");
    let blank = memfd(c"blank", page_size()).unwrap();
    refuse(blank.as_raw_fd(), "token does not match");
    // Another event's page, with this blob's token: forged.
    let other = SharedCounter::create(0).unwrap();
    let fd = other.file.as_ref().unwrap().as_raw_fd();
    refuse(fd, "token does not match");
    // A descriptor that is not open.
    refuse(i32::MAX - 1, "is gone");
    // SAFETY: ours, closed once.
    unsafe {
        libc::close(pipe[0]);
        libc::close(pipe[1]);
    }
    assert!(
        SharedCounter::import(&good, &arm()).is_ok(),
        "the real one still"
    );
}

#[test]
#[cfg_attr(miri, ignore = "memfd, mmap and /proc: system calls miri does not run")]
fn a_forged_token_is_refused() {
    let exported = SharedCounter::create(0).unwrap();
    let mut blob = exported.blob(&host()).unwrap();
    blob[at::TOKEN + 15] ^= 0x40;
    let e = code(SharedCounter::import(&blob, &arm()));
    assert_eq!(e.0, ErrorCode::InvalidValue);
    assert!(e.1.contains("token does not match"), "{}", e.1);
}
