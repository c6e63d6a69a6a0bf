use super::*;
use dpakit_abi::ErrorCode;
use std::sync::Once;

const FUNCTION: &str = "0000:b1:00.0";

/// The runtime directory of this test process (the variable is read once per socket path, so
/// every test sets the same value first).
pub(super) fn runtime_dir() {
    static DIR: Once = Once::new();
    DIR.call_once(|| {
        let dir = std::env::temp_dir().join(format!("dpakit-cc-unit-{}", std::process::id()));
        // SAFETY: set once, before any test of this module reads it; nothing else sets it.
        unsafe { std::env::set_var("DPAKIT_SOFT_RUNTIME_DIR", dir) };
    });
}

/// A service and a connected client endpoint (non-blocking), with the client's peer.
pub(super) fn pair(
    name: &str,
    tweak: impl FnOnce(&mut Props, &mut Props),
) -> (Endpoint, Endpoint, PeerId) {
    runtime_dir();
    let mut service = Endpoint::new(Mode::NonBlocking);
    let mut client = Endpoint::new(Mode::NonBlocking);
    tweak(service.props_mut().unwrap(), client.props_mut().unwrap());
    service.listen(FUNCTION, name).unwrap();
    let peer = client.connect(FUNCTION, name).unwrap();
    let mut buf = [0u8; 16];
    for _ in 0..1000 {
        let _ = service.recv(&mut buf, false);
        match client.update_info(peer) {
            Ok(()) => return (service, client, peer),
            Err(e) if e.code() == ErrorCode::ConnectionInProgress => {}
            Err(e) => panic!("{e}"),
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("no handshake");
}

/// The good client's message there and back.
pub(super) fn still_served(service: &mut Endpoint, client: &mut Endpoint, good: PeerId) {
    let mut buf = [0u8; 64];
    client.send(good, b"still there?", true).unwrap();
    match service.recv(&mut buf, true).unwrap() {
        Received::Message { len, peer } => service.send(peer, &buf[..len], true).unwrap(),
        other => panic!("{other:?}"),
    }
    match client.recv(&mut buf, true).unwrap() {
        Received::Message { len, .. } => assert_eq!(&buf[..len], b"still there?"),
        other => panic!("{other:?}"),
    }
}

fn recv_one(ep: &mut Endpoint, buf: &mut [u8]) -> (usize, PeerId) {
    match ep.recv(buf, true).unwrap() {
        Received::Message { len, peer } => (len, peer),
        other => panic!("{other:?}"),
    }
}

#[test]
#[cfg_attr(miri, ignore = "Unix sockets, epoll and the runtime directory")]
fn messages_go_both_ways_once_and_in_order() {
    let (mut service, mut client, to_service) = pair("both-ways", |_, _| {});
    let mut buf = [0u8; 4080];
    for i in 0u32..1000 {
        client.send(to_service, &i.to_le_bytes(), true).unwrap();
        let (len, from) = recv_one(&mut service, &mut buf);
        assert_eq!(&buf[..len], &i.to_le_bytes());
        service.send(from, &buf[..len], true).unwrap();
        let (len, back) = recv_one(&mut client, &mut buf);
        assert_eq!((len, back), (4, to_service));
        assert_eq!(u32::from_le_bytes(buf[..4].try_into().unwrap()), i);
    }
    client.update_info(to_service).unwrap();
    let stats = client.stats(to_service).unwrap();
    assert_eq!((stats.send_messages, stats.send_bytes), (1000, 4000));
    assert_eq!((stats.recv_messages, stats.recv_bytes), (1000, 4000));
}

#[test]
#[cfg_attr(miri, ignore = "Unix sockets, epoll and the runtime directory")]
fn credits_bound_what_is_in_flight_and_come_back() {
    let (mut service, mut client, to_service) = pair("credits", |s, _| {
        s.set_recv_queue_size(16).unwrap();
    });
    for i in 0..16u8 {
        client.send(to_service, &[i], false).unwrap();
    }
    let e = client.send(to_service, &[16], false).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Again, "{e}");
    client.update_info(to_service).unwrap();
    assert_eq!(
        client.stats(to_service).unwrap().send_in_flight_messages,
        16
    );
    let mut buf = [0u8; 8];
    for i in 0..16u8 {
        let (len, _) = recv_one(&mut service, &mut buf);
        assert_eq!(&buf[..len], &[i]);
    }
    // The credits came back with the last message taken.
    client.send(to_service, &[16], true).unwrap();
    client.update_info(to_service).unwrap();
    assert_eq!(client.stats(to_service).unwrap().send_in_flight_messages, 1);
}

#[test]
#[cfg_attr(miri, ignore = "Unix sockets, epoll and the runtime directory")]
fn sizes_and_buffers_are_checked() {
    let (mut service, mut client, to_service) = pair("sizes", |s, _| {
        s.set_max_msg_size(300).unwrap();
    });
    let e = client.send(to_service, &[0; 301], false).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue, "{e}");
    client.send(to_service, &[7; 300], false).unwrap();
    let mut small = [0u8; 10];
    let e = loop {
        match service.recv(&mut small, false) {
            Err(e) if e.code() == ErrorCode::Again => continue,
            other => break other.unwrap_err(),
        }
    };
    assert_eq!(e.code(), ErrorCode::InvalidValue, "{e}");
    let mut buf = [0u8; 300];
    assert_eq!(
        recv_one(&mut service, &mut buf).0,
        300,
        "the message stayed"
    );
}

#[test]
#[cfg_attr(miri, ignore = "Unix sockets, epoll and the runtime directory")]
fn a_disconnected_peer_is_reported_once_and_sends_fail() {
    let (mut service, mut client, to_service) = pair("disconnect", |_, _| {});
    client.send(to_service, b"hi", true).unwrap();
    let mut buf = [0u8; 8];
    let (_, from) = recv_one(&mut service, &mut buf);
    client.disconnect(to_service).unwrap();
    assert_eq!(
        client.send(to_service, b"x", false).unwrap_err().code(),
        ErrorCode::NotFound
    );
    match service.recv(&mut buf, true).unwrap() {
        Received::Reset { peer, .. } => assert_eq!(peer, from),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        service.send(from, b"x", false).unwrap_err().code(),
        ErrorCode::ConnectionReset
    );
    assert_eq!(
        service.update_info(from).unwrap_err().code(),
        ErrorCode::ConnectionReset
    );
    assert_eq!(
        service.recv(&mut buf, false).unwrap_err().code(),
        ErrorCode::Again,
        "reported once"
    );
    service.disconnect(from).unwrap();
    assert_eq!(service.peers().count(), 0);
}

#[test]
#[cfg_attr(miri, ignore = "Unix sockets, epoll and the runtime directory")]
fn one_listener_per_name_and_no_service_no_connection() {
    runtime_dir();
    let mut a = Endpoint::new(Mode::NonBlocking);
    a.listen(FUNCTION, "unique").unwrap();
    let mut b = Endpoint::new(Mode::NonBlocking);
    assert_eq!(
        b.listen(FUNCTION, "unique").unwrap_err().code(),
        ErrorCode::AlreadyExist
    );
    let mut c = Endpoint::new(Mode::NonBlocking);
    assert_eq!(
        c.connect(FUNCTION, "nobody").unwrap_err().code(),
        ErrorCode::NotConnected
    );
    let too_long = "n".repeat(120);
    assert_eq!(
        c.listen(FUNCTION, &too_long).unwrap_err().code(),
        ErrorCode::InvalidValue
    );
    assert_eq!(
        a.props_mut().unwrap_err().code(),
        ErrorCode::BadState,
        "properties are fixed once listening"
    );
}

#[test]
#[cfg_attr(miri, ignore = "Unix sockets, epoll and the runtime directory")]
fn the_receive_channel_turns_readable_when_a_message_waits() {
    let (mut service, mut client, to_service) = pair("channel", |_, _| {});
    let (_, recv_fd) = service.event_channels().unwrap();
    let readable = |fd| {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd for the duration of the call.
        unsafe { libc::poll(&mut p, 1, 0) > 0 }
    };
    service.arm_recv().unwrap();
    assert!(!readable(recv_fd));
    client.send(to_service, b"wake", true).unwrap();
    let mut p = libc::pollfd {
        fd: recv_fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd for the duration of the call.
    assert_eq!(unsafe { libc::poll(&mut p, 1, 5000) }, 1);
    let mut buf = [0u8; 8];
    assert_eq!(recv_one(&mut service, &mut buf).0, 4);
    service.arm_recv().unwrap();
    assert!(!readable(recv_fd));
}
