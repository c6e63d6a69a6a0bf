use super::*;

fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dpakit-sock-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
#[cfg_attr(miri, ignore = "Unix sockets and the file system: miri runs neither")]
fn a_live_listener_keeps_its_path_and_a_dead_one_gives_it_up() {
    let d = dir("stale");
    let path = d.join("srv");
    let first = Listener::bind(&path).unwrap();
    assert_eq!(
        Listener::bind(&path).unwrap_err().code(),
        ErrorCode::AlreadyExist
    );
    // A dead server: its socket closes, its file stays (as after kill -9).
    let ino = first.ino;
    // Closing the socket without Listener's drop leaves the file, as a killed process does.
    // SAFETY: the descriptor is closed once, here; `first` is forgotten, never dropped.
    unsafe { libc::close(first.fd()) };
    std::mem::forget(first);
    assert_eq!(inode(&path), ino, "the stale file is still there");
    assert!(matches!(SeqPacket::connect(&path).unwrap(), Connect::Stale));
    let second = Listener::bind(&path).unwrap();
    assert_ne!(second.ino, ino);
    drop(second);
    assert_eq!(inode(&path), 0, "a listener removes its file");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
#[cfg_attr(
    miri,
    ignore = "SOCK_SEQPACKET socketpair and SCM_RIGHTS: miri runs neither"
)]
fn messages_keep_their_boundaries_and_descriptors_travel() {
    let (a, b) = SeqPacket::pair().unwrap();
    let (x, _y) = SeqPacket::pair().unwrap();
    assert!(a.send(&[b"ab", b"c"], &[x.fd()]).unwrap());
    assert!(a.send(&[b"d"], &[]).unwrap());
    let mut buf = [0u8; 8];
    let mut fds = Vec::new();
    assert!(matches!(
        b.recv(&mut buf, &mut fds).unwrap(),
        Recv::Message(3)
    ));
    assert_eq!(&buf[..3], b"abc");
    assert_eq!(fds.len(), 1);
    assert!(matches!(
        b.recv(&mut buf, &mut fds).unwrap(),
        Recv::Message(1)
    ));
    assert!(matches!(b.recv(&mut buf, &mut fds).unwrap(), Recv::Empty));
    // A message larger than the buffer is a protocol error, not a silent cut.
    assert!(a.send(&[&[0u8; 16]], &[]).unwrap());
    assert_eq!(
        b.recv(&mut buf, &mut fds).unwrap_err().code(),
        ErrorCode::InvalidValue
    );
    drop(a);
    assert!(matches!(b.recv(&mut buf, &mut fds).unwrap(), Recv::Closed));
    assert_eq!(
        b.send(&[b"x"], &[]).unwrap_err().code(),
        ErrorCode::NotConnected
    );
}
