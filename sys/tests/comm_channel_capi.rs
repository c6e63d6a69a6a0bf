//! The legacy Comm Channel's C API (`doca_comm_channel.h`) in one process: every function
//! refuses NULL parameters and destroyed endpoints and peer addresses with
//! `DOCA_ERROR_INVALID_VALUE` (one table per subject, a row per call); the mandatory
//! properties, the sides, the limits and the flags are checked and named; a service and a
//! client exchange messages, keep statistics and see a one-sided disconnect.
//!
//! These run against the soft device (the default configuration of `dpakit-sys`), each test
//! under service names of its own.
#![cfg(all(feature = "soft", not(feature = "doca")))]

#[macro_use]
#[path = "support/comch.rs"]
mod support;

use dpakit_sys::*;
use std::ffi::CStr;
use std::ptr::{null, null_mut};
use support::*;

/// An endpoint made with `doca_comm_channel_ep_create`.
fn endpoint() -> *mut doca_comm_channel_ep_t {
    let mut ep = null_mut();
    expect!(doca_comm_channel_ep_create(&mut ep), DOCA_SUCCESS);
    ep
}

/// A listening service on the Arm device for the host PF, named `name`.
fn service(arm: *mut doca_dev, rep: *mut doca_dev_rep, name: &CStr) -> *mut doca_comm_channel_ep_t {
    let ep = endpoint();
    expect!(doca_comm_channel_ep_set_device(ep, arm), DOCA_SUCCESS);
    expect!(doca_comm_channel_ep_set_device_rep(ep, rep), DOCA_SUCCESS);
    expect!(doca_comm_channel_ep_listen(ep, name.as_ptr()), DOCA_SUCCESS);
    ep
}

/// A client endpoint connected to `name` (handshake done, `service` accepting meanwhile).
fn client(
    host: *mut doca_dev,
    service: *mut doca_comm_channel_ep_t,
    name: &CStr,
) -> (*mut doca_comm_channel_ep_t, *mut doca_comm_channel_addr_t) {
    let ep = endpoint();
    expect!(doca_comm_channel_ep_set_device(ep, host), DOCA_SUCCESS);
    let mut peer = null_mut();
    expect!(
        doca_comm_channel_ep_connect(ep, name.as_ptr(), &mut peer),
        DOCA_SUCCESS
    );
    for _ in 0..5000 {
        expect!(
            doca_comm_channel_ep_update_service_state_info(service),
            DOCA_SUCCESS
        );
        // SAFETY: a live peer address.
        match unsafe { doca_comm_channel_peer_addr_update_info(peer) } {
            DOCA_SUCCESS => return (ep, peer),
            DOCA_ERROR_CONNECTION_INPROGRESS => {
                std::thread::sleep(std::time::Duration::from_micros(200))
            }
            other => panic!(
                "update_info answered {} ({})",
                error_name(other),
                last_error()
            ),
        }
    }
    panic!("no handshake");
}

/// The next message on `ep`, waiting for it: (length, peer address).
fn recv(ep: *mut doca_comm_channel_ep_t, buf: &mut [u8]) -> (usize, *mut doca_comm_channel_addr_t) {
    for _ in 0..100_000 {
        let mut len = buf.len();
        let mut peer = null_mut();
        // SAFETY: a live endpoint and a buffer of `len` bytes.
        match unsafe {
            doca_comm_channel_ep_recvfrom(
                ep,
                buf.as_mut_ptr().cast(),
                &mut len,
                DOCA_CC_MSG_FLAG_NONE as i32,
                &mut peer,
            )
        } {
            DOCA_SUCCESS => return (len, peer),
            DOCA_ERROR_AGAIN => std::thread::yield_now(),
            other => panic!("recvfrom answered {} ({})", error_name(other), last_error()),
        }
    }
    panic!("nothing arrived");
}

#[test]
fn null_parameters_are_invalid_value() {
    setup();
    let devices = Devices::open();
    let Devices { arm, rep, host } = devices;
    let svc = service(arm, rep, c"cc-null");
    let (ep, peer) = client(host, svc, c"cc-null");
    let mut buf = [0u8; 8];
    let msg = buf.as_mut_ptr().cast();
    expect_refused(
        DOCA_ERROR_INVALID_VALUE,
        [
            row!(doca_comm_channel_get_max_service_name_len(null_mut())),
            row!(doca_comm_channel_get_max_message_size(
                null_mut(),
                &mut 0u32
            )),
            row!(doca_comm_channel_get_max_send_queue_size(
                null_mut(),
                &mut 0u32
            )),
            row!(doca_comm_channel_get_max_recv_queue_size(
                null_mut(),
                &mut 0u32
            )),
            row!(doca_comm_channel_get_service_max_num_connections(
                null_mut(),
                &mut 0u32
            )),
            row!(doca_comm_channel_ep_create(null_mut())),
            row!(
                dpakit_soft_comm_channel_ep_create_attr(null_mut(), &mut null_mut()),
                "attr is NULL"
            ),
            row!(doca_comm_channel_ep_destroy(null_mut())),
            row!(doca_comm_channel_ep_set_device(null_mut(), host)),
            row!(doca_comm_channel_ep_set_device(endpoint(), null_mut())),
            row!(doca_comm_channel_ep_set_device_rep(null_mut(), rep)),
            row!(doca_comm_channel_ep_set_device_rep(endpoint(), null_mut())),
            row!(doca_comm_channel_ep_set_max_msg_size(null_mut(), 256)),
            row!(doca_comm_channel_ep_set_send_queue_size(null_mut(), 16)),
            row!(doca_comm_channel_ep_set_recv_queue_size(null_mut(), 16)),
            row!(doca_comm_channel_ep_get_device(null_mut(), &mut null_mut())),
            row!(doca_comm_channel_ep_get_device(ep, null_mut())),
            row!(doca_comm_channel_ep_get_device_rep(
                null_mut(),
                &mut null_mut()
            )),
            row!(doca_comm_channel_ep_get_device_rep(ep, null_mut())),
            row!(doca_comm_channel_ep_get_max_msg_size(null_mut(), &mut 0u16)),
            row!(doca_comm_channel_ep_get_max_msg_size(ep, null_mut())),
            row!(doca_comm_channel_ep_get_send_queue_size(
                null_mut(),
                &mut 0u16
            )),
            row!(doca_comm_channel_ep_get_send_queue_size(ep, null_mut())),
            row!(doca_comm_channel_ep_get_recv_queue_size(
                null_mut(),
                &mut 0u16
            )),
            row!(doca_comm_channel_ep_get_recv_queue_size(ep, null_mut())),
            row!(doca_comm_channel_ep_listen(null_mut(), c"x".as_ptr())),
            row!(doca_comm_channel_ep_listen(endpoint(), null())),
            row!(doca_comm_channel_ep_connect(
                null_mut(),
                c"x".as_ptr(),
                &mut null_mut()
            )),
            row!(doca_comm_channel_ep_connect(
                endpoint(),
                null(),
                &mut null_mut()
            )),
            row!(doca_comm_channel_ep_connect(
                endpoint(),
                c"x".as_ptr(),
                null_mut()
            )),
            row!(doca_comm_channel_ep_sendto(null_mut(), msg, 1, 0, peer)),
            row!(doca_comm_channel_ep_sendto(ep, null(), 1, 0, peer)),
            row!(doca_comm_channel_ep_sendto(ep, msg, 1, 0, null_mut())),
            row!(doca_comm_channel_ep_recvfrom(
                null_mut(),
                msg,
                &mut 8usize,
                0,
                &mut null_mut()
            )),
            row!(doca_comm_channel_ep_recvfrom(
                ep,
                null_mut(),
                &mut 8usize,
                0,
                &mut null_mut()
            )),
            row!(doca_comm_channel_ep_recvfrom(
                ep,
                msg,
                null_mut(),
                0,
                &mut null_mut()
            )),
            row!(doca_comm_channel_ep_recvfrom(
                ep,
                msg,
                &mut 8usize,
                0,
                null_mut()
            )),
            row!(doca_comm_channel_ep_disconnect(null_mut(), peer)),
            row!(doca_comm_channel_ep_disconnect(ep, null_mut())),
            row!(doca_comm_channel_ep_update_service_state_info(null_mut())),
            row!(doca_comm_channel_ep_get_peer_addr_list(
                null(),
                &mut null_mut(),
                &mut 0u32
            )),
            row!(doca_comm_channel_ep_get_peer_addr_list(
                svc,
                null_mut(),
                &mut 0u32
            )),
            row!(doca_comm_channel_ep_get_peer_addr_list(
                svc,
                &mut null_mut(),
                null_mut()
            )),
            row!(doca_comm_channel_ep_get_pending_connections(
                null(),
                &mut 0u32
            )),
            row!(doca_comm_channel_ep_get_pending_connections(
                svc,
                null_mut()
            )),
            row!(doca_comm_channel_ep_get_event_channel(
                null_mut(),
                &mut 0,
                &mut 0
            )),
            row!(
                doca_comm_channel_ep_get_event_channel(ep, null_mut(), null_mut()),
                "both NULL"
            ),
            row!(doca_comm_channel_ep_get_service_event_channel(
                null_mut(),
                &mut 0
            )),
            row!(doca_comm_channel_ep_get_service_event_channel(
                svc,
                null_mut()
            )),
            row!(doca_comm_channel_ep_event_handle_arm_send(null_mut())),
            row!(doca_comm_channel_ep_event_handle_arm_recv(null_mut())),
            row!(doca_comm_channel_peer_addr_update_info(null_mut())),
            row!(doca_comm_channel_peer_addr_set_user_data(null_mut(), 1)),
            row!(doca_comm_channel_peer_addr_get_user_data(
                null_mut(),
                &mut 0u64
            )),
            row!(doca_comm_channel_peer_addr_get_user_data(peer, null_mut())),
            row!(doca_comm_channel_peer_addr_user_data_set(null_mut(), 1)),
            row!(doca_comm_channel_peer_addr_user_data_get(peer, null_mut())),
            row!(doca_comm_channel_peer_addr_get_send_messages(
                null(),
                &mut 0u64
            )),
            row!(doca_comm_channel_peer_addr_get_send_messages(
                peer,
                null_mut()
            )),
            row!(doca_comm_channel_peer_addr_get_send_bytes(
                null(),
                &mut 0u64
            )),
            row!(doca_comm_channel_peer_addr_get_recv_messages(
                null(),
                &mut 0u64
            )),
            row!(doca_comm_channel_peer_addr_get_recv_bytes(
                null(),
                &mut 0u64
            )),
            row!(doca_comm_channel_peer_addr_get_send_in_flight_messages(
                null(),
                &mut 0u64
            )),
            row!(doca_comm_channel_peer_addr_get_send_in_flight_messages(
                peer,
                null_mut()
            )),
        ],
    );
    expect!(doca_comm_channel_ep_destroy(ep), DOCA_SUCCESS);
    expect!(doca_comm_channel_ep_destroy(svc), DOCA_SUCCESS);
    devices.close();
}

#[test]
fn destroyed_endpoints_and_peer_addresses_are_invalid_value() {
    setup();
    let devices = Devices::open();
    let Devices { arm, rep, host } = devices;
    let svc = service(arm, rep, c"cc-destroyed");
    let (ep, peer) = client(host, svc, c"cc-destroyed");
    expect!(doca_comm_channel_ep_disconnect(ep, peer), DOCA_SUCCESS);
    let gone = endpoint();
    expect!(doca_comm_channel_ep_destroy(gone), DOCA_SUCCESS);
    let mut buf = [0u8; 8];
    let msg = buf.as_mut_ptr().cast();
    expect_refused(
        DOCA_ERROR_INVALID_VALUE,
        [
            row!(doca_comm_channel_ep_destroy(gone), "destroyed"),
            row!(
                doca_comm_channel_ep_set_max_msg_size(gone, 256),
                "destroyed"
            ),
            row!(
                doca_comm_channel_ep_listen(gone, c"x".as_ptr()),
                "destroyed"
            ),
            row!(
                doca_comm_channel_ep_recvfrom(gone, msg, &mut 8usize, 0, &mut null_mut()),
                "destroyed"
            ),
            row!(
                doca_comm_channel_ep_sendto(ep, msg, 1, 0, peer),
                "destroyed"
            ),
            row!(doca_comm_channel_ep_disconnect(ep, peer), "destroyed"),
            row!(doca_comm_channel_peer_addr_update_info(peer), "destroyed"),
            row!(
                doca_comm_channel_peer_addr_get_send_messages(peer, &mut 0u64),
                "destroyed"
            ),
            // Handles of another kind.
            row!(doca_comm_channel_ep_listen(peer.cast(), c"x".as_ptr())),
            row!(doca_comm_channel_peer_addr_update_info(ep.cast())),
            row!(doca_comm_channel_ep_set_device(ep, rep.cast())),
        ],
    );
    expect!(doca_comm_channel_ep_destroy(ep), DOCA_SUCCESS);
    expect!(doca_comm_channel_ep_destroy(svc), DOCA_SUCCESS);
    devices.close();
}

#[test]
fn properties_sides_and_flags_are_checked() {
    setup();
    let devices = Devices::open();
    let Devices { arm, rep, host } = devices;
    let ep = endpoint();
    // Defaults, and the rules of each setter.
    let mut v = 0u16;
    expect!(
        doca_comm_channel_ep_get_max_msg_size(ep, &mut v),
        DOCA_SUCCESS
    );
    assert_eq!(v, 4080);
    expect!(
        doca_comm_channel_ep_set_max_msg_size(ep, 0),
        DOCA_ERROR_INVALID_VALUE
    );
    expect!(
        doca_comm_channel_ep_set_max_msg_size(ep, 4081),
        DOCA_ERROR_INVALID_VALUE
    );
    explained("4080");
    expect!(doca_comm_channel_ep_set_max_msg_size(ep, 100), DOCA_SUCCESS);
    expect!(
        doca_comm_channel_ep_get_max_msg_size(ep, &mut v),
        DOCA_SUCCESS
    );
    assert_eq!(v, 256, "raised to the minimum");
    expect!(
        doca_comm_channel_ep_set_send_queue_size(ep, 20),
        DOCA_SUCCESS
    );
    expect!(
        doca_comm_channel_ep_get_send_queue_size(ep, &mut v),
        DOCA_SUCCESS
    );
    assert_eq!(v, 32, "rounded up to a power of two");
    expect!(
        doca_comm_channel_ep_set_recv_queue_size(ep, 8192),
        DOCA_ERROR_INVALID_VALUE
    );
    // Mandatory properties and sides.
    expect!(
        doca_comm_channel_ep_listen(ep, c"cc-props".as_ptr()),
        DOCA_ERROR_BAD_STATE
    );
    explained("set_device is mandatory");
    expect!(doca_comm_channel_ep_set_device(ep, arm), DOCA_SUCCESS);
    expect!(
        doca_comm_channel_ep_listen(ep, c"cc-props".as_ptr()),
        DOCA_ERROR_BAD_STATE
    );
    explained("set_device_rep is mandatory");
    let mut fd = 0;
    expect!(
        doca_comm_channel_ep_get_event_channel(ep, &mut fd, null_mut()),
        DOCA_ERROR_BAD_STATE
    );
    let mut peer = null_mut();
    expect!(
        doca_comm_channel_ep_connect(ep, c"cc-props".as_ptr(), &mut peer),
        DOCA_ERROR_NOT_PERMITTED
    );
    expect!(doca_comm_channel_ep_set_device_rep(ep, rep), DOCA_SUCCESS);
    let long = [b'n'; 120];
    let long = CStr::from_bytes_with_nul(&[&long[..119], &[0]].concat())
        .unwrap()
        .to_owned();
    expect!(doca_comm_channel_ep_listen(ep, long.as_ptr()), DOCA_SUCCESS);
    expect!(
        doca_comm_channel_ep_set_max_msg_size(ep, 300),
        DOCA_ERROR_BAD_STATE
    );
    let other = endpoint();
    expect!(doca_comm_channel_ep_set_device(other, arm), DOCA_SUCCESS);
    expect!(
        doca_comm_channel_ep_set_device_rep(other, rep),
        DOCA_SUCCESS
    );
    expect!(
        doca_comm_channel_ep_listen(other, long.as_ptr()),
        DOCA_ERROR_ALREADY_EXIST
    );
    let too_long = [&[b'n'; 120][..], &[0]].concat();
    expect!(
        doca_comm_channel_ep_listen(other, too_long.as_ptr().cast()),
        DOCA_ERROR_INVALID_VALUE
    );
    let host_ep = endpoint();
    expect!(doca_comm_channel_ep_set_device(host_ep, host), DOCA_SUCCESS);
    expect!(
        doca_comm_channel_ep_set_device_rep(host_ep, rep),
        DOCA_SUCCESS
    );
    expect!(
        doca_comm_channel_ep_listen(host_ep, c"cc-props".as_ptr()),
        DOCA_ERROR_NOT_PERMITTED
    );
    expect!(
        doca_comm_channel_ep_connect(host_ep, c"nobody".as_ptr(), &mut peer),
        DOCA_ERROR_NOT_CONNECTED
    );
    // Flags, sizes and the DOCA 1.2 creation form.
    let (client_ep, to_service) = client(host, ep, long.as_c_str());
    let msg = [1u8; 300];
    expect!(
        doca_comm_channel_ep_sendto(client_ep, msg.as_ptr().cast(), 1, 4, to_service),
        DOCA_ERROR_INVALID_VALUE
    );
    expect!(
        doca_comm_channel_ep_sendto(client_ep, msg.as_ptr().cast(), 0, 0, to_service),
        DOCA_ERROR_INVALID_VALUE
    );
    expect!(
        doca_comm_channel_ep_sendto(client_ep, msg.as_ptr().cast(), 300, 0, to_service),
        DOCA_ERROR_INVALID_VALUE
    );
    explained("max_msg_size");
    let mut attr = doca_comm_channel_init_attr {
        cookie: 7,
        flags: 0,
        maxmsgs: 10,
        msgsize: 512,
    };
    let mut blocking = null_mut();
    expect!(
        dpakit_soft_comm_channel_ep_create_attr(&mut attr, &mut blocking),
        DOCA_SUCCESS
    );
    expect!(
        doca_comm_channel_ep_get_recv_queue_size(blocking, &mut v),
        DOCA_SUCCESS
    );
    assert_eq!(v, 16);
    attr.flags = 2;
    expect!(
        dpakit_soft_comm_channel_ep_create_attr(&mut attr, &mut null_mut()),
        DOCA_ERROR_INVALID_VALUE
    );
    for e in [blocking, client_ep, host_ep, other, ep] {
        expect!(doca_comm_channel_ep_destroy(e), DOCA_SUCCESS);
    }
    devices.close();
}

#[test]
fn messages_statistics_and_a_one_sided_disconnect() {
    setup();
    let devices = Devices::open();
    let Devices { arm, rep, host } = devices;
    let svc = service(arm, rep, c"cc-flow");
    let (ep, to_service) = client(host, svc, c"cc-flow");
    let mut buf = [0u8; 4080];
    let mut from = null_mut();
    for i in 0u32..100 {
        let msg = i.to_le_bytes();
        expect!(
            doca_comm_channel_ep_sendto(ep, msg.as_ptr().cast(), 4, 0, to_service),
            DOCA_SUCCESS
        );
        let (len, peer) = recv(svc, &mut buf);
        assert_eq!(&buf[..len], &msg);
        from = peer;
        expect!(
            doca_comm_channel_ep_sendto(svc, buf.as_ptr().cast(), len, 0, from),
            DOCA_SUCCESS
        );
        let (len, back) = recv(ep, &mut buf);
        assert_eq!((len, back), (4, to_service));
    }
    expect!(
        doca_comm_channel_peer_addr_set_user_data(from, 42),
        DOCA_SUCCESS
    );
    let mut v = 0u64;
    expect!(
        doca_comm_channel_peer_addr_user_data_get(from, &mut v),
        DOCA_SUCCESS
    );
    assert_eq!(v, 42);
    let (mut list, mut n) = (null_mut(), 0u32);
    expect!(
        doca_comm_channel_ep_get_peer_addr_list(svc, &mut list, &mut n),
        DOCA_SUCCESS
    );
    // SAFETY: `list` holds `n` peer addresses.
    assert_eq!((n, unsafe { *list }), (1, from));
    expect!(
        doca_comm_channel_peer_addr_update_info(to_service),
        DOCA_SUCCESS
    );
    for (get, want) in [
        (
            doca_comm_channel_peer_addr_get_send_messages as unsafe extern "C" fn(_, _) -> _,
            100,
        ),
        (doca_comm_channel_peer_addr_get_send_bytes, 400),
        (doca_comm_channel_peer_addr_get_recv_messages, 100),
        (doca_comm_channel_peer_addr_get_recv_bytes, 400),
        (doca_comm_channel_peer_addr_get_send_in_flight_messages, 0),
    ] {
        expect!(get(to_service, &mut v), DOCA_SUCCESS);
        assert_eq!(v, want);
    }
    // One-sided: the service finds out at its next receive, once, and frees the connection.
    expect!(
        doca_comm_channel_ep_disconnect(ep, to_service),
        DOCA_SUCCESS
    );
    let mut len = buf.len();
    let mut peer = null_mut();
    let mut answer = DOCA_ERROR_AGAIN;
    for _ in 0..100_000 {
        // SAFETY: a live endpoint and a buffer of `len` bytes.
        answer = unsafe {
            doca_comm_channel_ep_recvfrom(svc, buf.as_mut_ptr().cast(), &mut len, 0, &mut peer)
        };
        if answer != DOCA_ERROR_AGAIN {
            break;
        }
    }
    assert_eq!((answer, peer), (DOCA_ERROR_CONNECTION_RESET, from));
    expect!(
        doca_comm_channel_ep_sendto(svc, buf.as_ptr().cast(), 1, 0, from),
        DOCA_ERROR_CONNECTION_RESET
    );
    expect!(doca_comm_channel_ep_disconnect(svc, from), DOCA_SUCCESS);
    expect!(
        doca_comm_channel_peer_addr_update_info(from),
        DOCA_ERROR_INVALID_VALUE
    );
    expect!(doca_comm_channel_ep_destroy(ep), DOCA_SUCCESS);
    expect!(doca_comm_channel_ep_destroy(svc), DOCA_SUCCESS);
    devices.close();
}
