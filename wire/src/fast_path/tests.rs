use super::*;

#[test]
#[cfg_attr(miri, ignore = "memfd and mmap are system calls miri does not run")]
fn sharing_moves_whole_pages_only_and_settles_the_edges() {
    let page = page_size();
    let mut mem = vec![0u8; 6 * page];
    let base = mem.as_mut_ptr() as usize;
    // Page-align inside the vector, then start the range mid-page.
    let aligned = base.div_ceil(page) * page;
    let start = aligned + 100;
    let len = 3 * page;
    for (i, b) in mem.iter_mut().enumerate() {
        *b = i as u8;
    }
    let before: Vec<u8> = mem.clone();
    let shared = share_mmap(start as *mut u8, len).unwrap();
    assert_eq!(mem, before, "sharing changes no byte");
    let peer = Mapping::map(shared.fd.as_raw_fd(), shared.len).unwrap();
    let at = |addr: usize| addr - shared.base;
    // A write by the peer on a whole page is visible at once.
    let interior = aligned + page + 10;
    // SAFETY: inside the peer's mapping of the file.
    unsafe { *peer.ptr.add(at(interior)) = 0xAA };
    assert_eq!(mem[interior - base], 0xAA);
    // One on the partial first page shows once settled, and only inside the range.
    // SAFETY: as above.
    unsafe {
        *peer.ptr.add(at(start)) = 0xBB;
        *peer.ptr.add(at(start - 1)) = 0xCC;
    }
    assert_eq!(mem[start - base], before[start - base]);
    shared.settle(start - 1, 2);
    assert_eq!(mem[start - base], 0xBB);
    assert_eq!(
        mem[start - 1 - base],
        before[start - 1 - base],
        "not ours to write"
    );
    // The partial last page likewise.
    let last = start + len - 1;
    // SAFETY: as above.
    unsafe { *peer.ptr.add(at(last)) = 0xDD };
    shared.settle(last, 1);
    assert_eq!(mem[last - base], 0xDD);
    drop(peer);
    drop(shared);
}

#[test]
#[cfg_attr(miri, ignore = "memfd and fcntl are system calls miri does not run")]
fn only_sealed_memfds_of_the_announced_size_are_mapped() {
    let good = memfd(c"test", 8192).unwrap();
    assert!(check_shared_file(good.as_raw_fd(), 8192).is_ok());
    assert!(
        check_shared_file(good.as_raw_fd(), 8193).is_err(),
        "smaller than announced"
    );
    // SAFETY: a NUL-terminated name; the result is checked below.
    let raw = unsafe { libc::memfd_create(c"unsealed".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(raw >= 0);
    // SAFETY: a fresh descriptor nothing else owns.
    let unsealed = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: no pointers.
    unsafe { libc::ftruncate(unsealed.as_raw_fd(), 8192) };
    assert!(
        check_shared_file(unsealed.as_raw_fd(), 4096).is_err(),
        "a file the peer could shrink"
    );
    // SAFETY: no pointers; shrinking a sealed memfd must fail.
    assert!(unsafe { libc::ftruncate(good.as_raw_fd(), 0) } < 0);
}

#[test]
#[cfg_attr(miri, ignore = "memfd and mmap are system calls miri does not run")]
fn announced_depths_whose_ring_size_overflows_are_refused() {
    // 2^61 receives of 88 bytes wrap the ring size to the 256-byte header: a peer could
    // announce a 256-byte file for a ring the producer would index far past.
    let depth = 1u64 << 61;
    let wrapped = ring::Ring::bytes(2).wrapping_sub(2 * 88);
    assert_eq!(ring::Ring::checked_bytes(depth), None);
    let fds = vec![
        memfd(c"ring", wrapped).unwrap(),
        memfd(c"data", 4096).unwrap(),
        memfd(c"wake", 0).unwrap(),
    ];
    let e = RemoteConsumer::attach(1, depth, 0, wrapped as u64, 4096, fds, &PeerFds::new(1))
        .expect_err("refused");
    assert_eq!(e.code(), dpakit_abi::ErrorCode::InvalidValue, "{e}");
    assert_eq!(ring::Ring::checked_bytes(4), Some(ring::Ring::bytes(4)));
}

#[test]
#[cfg_attr(miri, ignore = "memfd and mmap are system calls miri does not run")]
fn ring_counters_a_peer_set_to_the_maximum_wrap_around() {
    let depth = 4u64;
    let len = ring::Ring::bytes(depth);
    // The peer's ring: one receive posted at the last index before the counters wrap.
    let ring_fd = memfd(c"ring", len).unwrap();
    let mut bytes = vec![0u8; len];
    bytes[..8].copy_from_slice(&u64::MAX.to_le_bytes()); // posts claimed
    bytes[192..200].copy_from_slice(&1u64.to_le_bytes()); // alive
    let post = ring::Ring::bytes(0) + 3 * 24; // slot u64::MAX % 4 (after the header)
    bytes[post + 8..post + 16].copy_from_slice(&64u64.to_le_bytes()); // capacity
    bytes[post + 16..post + 20].copy_from_slice(&7u32.to_le_bytes()); // task
    // SAFETY: writes `bytes` (a live buffer) at offset 0 of our memfd.
    let written = unsafe { libc::pwrite(ring_fd.as_raw_fd(), bytes.as_ptr().cast(), len, 0) };
    assert_eq!(written, len as isize);
    let data_fd = memfd(c"data", 4096).unwrap();
    let (wake, _peer_end) = stream_pair();
    let fds = vec![
        ring_fd.try_clone().unwrap(),
        data_fd.try_clone().unwrap(),
        wake,
    ];
    let consumer =
        RemoteConsumer::attach(1, depth, 32, len as u64, 4096, fds, &PeerFds::new(1)).unwrap();
    let (ours, _theirs) = SeqPacket::pair().unwrap();
    let shared = ConnShared::new(&ours).unwrap();
    shared.add_remote(consumer).unwrap();
    let sent = FastProducer::new(shared, 5)
        .try_send(1, b"data", b"imm")
        .unwrap();
    assert!(matches!(sent, Attempt::Sent));

    // The peer's view: the claim counter wrapped to 0, the completion names the receive,
    // the data landed at the receive's offset.
    let view = ring::Ring::attach(Mapping::map(ring_fd.as_raw_fd(), len).unwrap(), depth);
    let done = view.next(0).expect("a completion in slot 0");
    assert_eq!((done.task, done.producer, done.len), (7, 5, 4));
    assert_eq!(&done.imm[..done.imm_len as usize], b"imm");
    let mut head = [0u8; 8];
    // SAFETY: reads 8 bytes at offset 0 of our memfd into a live buffer.
    unsafe { libc::pread(ring_fd.as_raw_fd(), head.as_mut_ptr().cast(), 8, 0) };
    assert_eq!(
        u64::from_le_bytes(head),
        0,
        "the claim counter wrapped around"
    );
    let mut data = [0u8; 4];
    // SAFETY: as above, from the data file.
    unsafe { libc::pread(data_fd.as_raw_fd(), data.as_mut_ptr().cast(), 4, 0) };
    assert_eq!(&data, b"data");
}

/// One end of a stream socket pair, and the other.
fn stream_pair() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: room for two descriptors; checked.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    assert_eq!(rc, 0);
    // SAFETY: two fresh descriptors nothing else owns.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}
