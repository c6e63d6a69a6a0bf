//! The Comch control path's behaviour at the C boundary (`doca_comch_server_*`,
//! `doca_comch_client_*`, `doca_comch_connection_*`, `doca_comch_cap_*`), called the way C calls
//! it: names and sizes out of range, the wrong side of the BlueField, calls in the wrong state
//! and connections of another context are DOCA errors, never a crash; getters, counters and
//! user data answer what was set. (NULL, destroyed and wrong-kind handles: `comch_null_args.rs`.)
//!
//! These run against the soft device (the default configuration of `dpakit-sys`). Servers of
//! this binary listen in a runtime directory of its own, each test under its own name, so
//! tests on parallel threads never meet.
#![cfg(all(feature = "soft", not(feature = "doca")))]

#[macro_use]
#[path = "support/comch.rs"]
mod support;

use dpakit_sys::*;
use std::ffi::{CStr, CString};
use std::ptr::{null, null_mut};
use support::*;

const HOST_VF: &CStr = c"b1:00.2";

/// `doca_comch_cap_get_max_name_len` (with the NUL) and `_max_msg_size` of the soft device.
const MAX_NAME_LEN: usize = 120;
const MAX_MSG_SIZE: u32 = 4080;

fn devinfo(dev: *mut doca_dev) -> *mut doca_devinfo {
    // SAFETY: a live device.
    unsafe { doca_dev_as_devinfo(dev) }
}

#[test]
fn the_getters_answer_what_a_server_or_client_was_created_on() {
    setup();
    let arm = open_dev(ARM);
    let rep = open_rep(arm);
    let host = open_dev(HOST);
    let (mut dev, mut rep_out) = (null_mut(), null_mut());

    let mut server = null_mut();
    expect!(
        doca_comch_server_create(arm, rep, c"capi-getters".as_ptr(), &mut server),
        DOCA_SUCCESS
    );
    expect!(doca_comch_server_get_device(server, &mut dev), DOCA_SUCCESS);
    assert_eq!(dev, arm);
    expect!(
        doca_comch_server_get_device_rep(server, &mut rep_out),
        DOCA_SUCCESS
    );
    assert_eq!(rep_out, rep);
    expect!(doca_comch_server_destroy(server), DOCA_SUCCESS);

    let mut client = null_mut();
    expect!(
        doca_comch_client_create(host, c"capi-getters".as_ptr(), &mut client),
        DOCA_SUCCESS
    );
    expect!(doca_comch_client_get_device(client, &mut dev), DOCA_SUCCESS);
    assert_eq!(dev, host);
    expect!(doca_comch_client_destroy(client), DOCA_SUCCESS);

    expect!(doca_dev_close(host), DOCA_SUCCESS);
    expect!(doca_dev_rep_close(rep), DOCA_SUCCESS);
    expect!(doca_dev_close(arm), DOCA_SUCCESS);
}

#[test]
fn names_have_1_to_119_bytes() {
    setup();
    let v = DOCA_ERROR_INVALID_VALUE;
    let arm = open_dev(ARM);
    let rep = open_rep(arm);
    let host = open_dev(HOST);
    let mut max = 0u32;
    expect!(
        doca_comch_cap_get_max_name_len(devinfo(arm), &mut max),
        DOCA_SUCCESS
    );
    assert_eq!(max as usize, MAX_NAME_LEN, "with the NUL");
    let longest = CString::new("n".repeat(MAX_NAME_LEN - 1)).unwrap();
    let too_long = CString::new("n".repeat(MAX_NAME_LEN)).unwrap();

    let mut server = null_mut();
    expect!(
        doca_comch_server_create(arm, rep, too_long.as_ptr(), &mut server),
        v
    );
    explained("1 to 119 bytes");
    expect!(
        doca_comch_server_create(arm, rep, c"".as_ptr(), &mut server),
        v
    );
    expect!(
        doca_comch_server_create(arm, rep, c"\xff".as_ptr(), &mut server),
        v
    );
    explained("not UTF-8");
    assert!(server.is_null(), "no server on failure");
    expect!(
        doca_comch_server_create(arm, rep, longest.as_ptr(), &mut server),
        DOCA_SUCCESS
    );
    expect!(doca_comch_server_destroy(server), DOCA_SUCCESS);

    let mut client = null_mut();
    expect!(
        doca_comch_client_create(host, too_long.as_ptr(), &mut client),
        v
    );
    expect!(doca_comch_client_create(host, c"".as_ptr(), &mut client), v);
    expect!(
        doca_comch_client_create(host, longest.as_ptr(), &mut client),
        DOCA_SUCCESS
    );
    expect!(doca_comch_client_destroy(client), DOCA_SUCCESS);

    expect!(doca_dev_close(host), DOCA_SUCCESS);
    expect!(doca_dev_rep_close(rep), DOCA_SUCCESS);
    expect!(doca_dev_close(arm), DOCA_SUCCESS);
}

#[test]
fn servers_run_on_the_arm_side_and_clients_on_the_host_side() {
    setup();
    let ns = DOCA_ERROR_NOT_SUPPORTED;
    let arm = open_dev(ARM);
    let rep = open_rep(arm);
    let host = open_dev(HOST);
    let vf = open_dev(HOST_VF);
    let name = c"capi-sides".as_ptr();

    expect!(
        doca_comch_cap_server_is_supported(devinfo(arm)),
        DOCA_SUCCESS
    );
    expect!(doca_comch_cap_client_is_supported(devinfo(arm)), ns);
    expect!(doca_comch_cap_server_is_supported(devinfo(host)), ns);
    expect!(
        doca_comch_cap_client_is_supported(devinfo(host)),
        DOCA_SUCCESS
    );
    expect!(
        doca_comch_cap_client_is_supported(devinfo(vf)),
        DOCA_SUCCESS
    );

    let mut server = null_mut();
    expect!(doca_comch_server_create(host, rep, name, &mut server), ns);
    explained("servers run on the BlueField Arm side");
    let mut client = null_mut();
    expect!(doca_comch_client_create(arm, name, &mut client), ns);
    explained("clients run on the host side");
    expect!(
        doca_comch_client_create(vf, name, &mut client),
        DOCA_SUCCESS
    );
    expect!(doca_comch_client_destroy(client), DOCA_SUCCESS);

    expect!(doca_dev_close(vf), DOCA_SUCCESS);
    expect!(doca_dev_close(host), DOCA_SUCCESS);
    expect!(doca_dev_rep_close(rep), DOCA_SUCCESS);
    expect!(doca_dev_close(arm), DOCA_SUCCESS);
}

#[test]
fn sizes_are_checked_against_the_capabilities() {
    setup();
    let v = DOCA_ERROR_INVALID_VALUE;
    let arm = open_dev(ARM);
    let rep = open_rep(arm);
    let host = open_dev(HOST);
    let (mut max_msg, mut max_queue, mut max_tasks) = (0u32, 0u32, 0u32);
    expect!(
        doca_comch_cap_get_max_msg_size(devinfo(arm), &mut max_msg),
        DOCA_SUCCESS
    );
    assert_eq!(max_msg, MAX_MSG_SIZE);
    expect!(
        doca_comch_cap_get_max_recv_queue_size(devinfo(arm), &mut max_queue),
        DOCA_SUCCESS
    );
    expect!(
        doca_comch_cap_get_max_send_tasks(devinfo(arm), &mut max_tasks),
        DOCA_SUCCESS
    );

    let mut server = null_mut();
    expect!(
        doca_comch_server_create(arm, rep, c"capi-sizes".as_ptr(), &mut server),
        DOCA_SUCCESS
    );
    let mut got = 0u32;
    expect!(
        doca_comch_server_get_max_msg_size(server, &mut got),
        DOCA_SUCCESS
    );
    assert_eq!(got, max_msg, "the default is the device's maximum");
    expect!(doca_comch_server_set_max_msg_size(server, 0), v);
    expect!(doca_comch_server_set_max_msg_size(server, max_msg + 1), v);
    explained("doca_comch_cap_get_max_msg_size");
    expect!(doca_comch_server_set_max_msg_size(server, 64), DOCA_SUCCESS);
    expect!(
        doca_comch_server_get_max_msg_size(server, &mut got),
        DOCA_SUCCESS
    );
    assert_eq!(got, 64);
    expect!(doca_comch_server_set_recv_queue_size(server, 0), v);
    expect!(
        doca_comch_server_set_recv_queue_size(server, max_queue + 1),
        v
    );
    expect!(
        doca_comch_server_task_send_set_conf(server, Some(sent), Some(sent), 0),
        v
    );
    expect!(
        doca_comch_server_task_send_set_conf(server, Some(sent), Some(sent), max_tasks + 1),
        v
    );
    expect!(doca_comch_server_destroy(server), DOCA_SUCCESS);

    let mut client = null_mut();
    expect!(
        doca_comch_client_create(host, c"capi-sizes".as_ptr(), &mut client),
        DOCA_SUCCESS
    );
    expect!(doca_comch_client_set_max_msg_size(client, 0), v);
    expect!(doca_comch_client_set_max_msg_size(client, max_msg + 1), v);
    expect!(
        doca_comch_client_set_max_msg_size(client, max_msg),
        DOCA_SUCCESS
    );
    expect!(doca_comch_client_set_recv_queue_size(client, 0), v);
    expect!(
        doca_comch_client_set_recv_queue_size(client, max_queue + 1),
        v
    );
    expect!(
        doca_comch_client_task_send_set_conf(client, Some(sent), Some(sent), 0),
        v
    );
    expect!(doca_comch_client_destroy(client), DOCA_SUCCESS);

    expect!(doca_dev_close(host), DOCA_SUCCESS);
    expect!(doca_dev_rep_close(rep), DOCA_SUCCESS);
    expect!(doca_dev_close(arm), DOCA_SUCCESS);
}

#[test]
fn a_start_needs_send_tasks_callbacks_and_a_pe() {
    setup();
    let bad = DOCA_ERROR_BAD_STATE;
    let arm = open_dev(ARM);
    let rep = open_rep(arm);
    let host = open_dev(HOST);
    let pe = new_pe();

    let mut server = null_mut();
    expect!(
        doca_comch_server_create(arm, rep, c"capi-start".as_ptr(), &mut server),
        DOCA_SUCCESS
    );
    let ctx = server_ctx(server);
    expect!(doca_ctx_start(ctx), bad);
    explained("doca_comch_server_event_connection_status_changed_register");
    expect!(
        doca_comch_server_event_connection_status_changed_register(
            server,
            Some(connected),
            Some(disconnected)
        ),
        DOCA_SUCCESS
    );
    expect!(doca_ctx_start(ctx), bad);
    explained("doca_comch_server_task_send_set_conf");
    expect!(
        doca_comch_server_task_send_set_conf(server, Some(sent), Some(sent), 8),
        DOCA_SUCCESS
    );
    expect!(doca_ctx_start(ctx), bad);
    explained("doca_comch_server_event_msg_recv_register");
    expect!(
        doca_comch_server_event_msg_recv_register(server, Some(received)),
        DOCA_SUCCESS
    );
    expect!(doca_ctx_start(ctx), bad);
    assert_eq!(state(ctx), DOCA_CTX_STATE_IDLE, "no PE yet");
    expect!(doca_pe_connect_ctx(pe, ctx), DOCA_SUCCESS);
    expect!(doca_ctx_start(ctx), DOCA_SUCCESS);
    assert_eq!(state(ctx), DOCA_CTX_STATE_RUNNING);
    stop_and_destroy_server(server, pe);

    let mut client = null_mut();
    expect!(
        doca_comch_client_create(host, c"capi-start".as_ptr(), &mut client),
        DOCA_SUCCESS
    );
    let ctx = client_ctx(client);
    expect!(doca_pe_connect_ctx(pe, ctx), DOCA_SUCCESS);
    expect!(doca_ctx_start(ctx), bad);
    explained("doca_comch_client_task_send_set_conf");
    expect!(
        doca_comch_client_task_send_set_conf(client, Some(sent), Some(sent), 8),
        DOCA_SUCCESS
    );
    expect!(doca_ctx_start(ctx), bad);
    explained("doca_comch_client_event_msg_recv_register");
    expect!(doca_comch_client_destroy(client), DOCA_SUCCESS);

    expect!(doca_pe_destroy(pe), DOCA_SUCCESS);
    expect!(doca_dev_close(host), DOCA_SUCCESS);
    expect!(doca_dev_rep_close(rep), DOCA_SUCCESS);
    expect!(doca_dev_close(arm), DOCA_SUCCESS);
}

#[test]
fn a_running_server_takes_no_configuration_and_no_destroy() {
    setup();
    let bad = DOCA_ERROR_BAD_STATE;
    let arm = open_dev(ARM);
    let rep = open_rep(arm);
    let pe = new_pe();
    let server = started_server(arm, rep, c"capi-running", pe);

    expect!(doca_comch_server_set_max_msg_size(server, 64), bad);
    expect!(doca_comch_server_set_recv_queue_size(server, 64), bad);
    expect!(
        doca_comch_server_task_send_set_conf(server, Some(sent), Some(sent), 8),
        bad
    );
    expect!(
        doca_comch_server_event_msg_recv_register(server, Some(received)),
        bad
    );
    expect!(
        doca_comch_server_event_connection_status_changed_register(
            server,
            Some(connected),
            Some(disconnected)
        ),
        bad
    );
    expect!(
        doca_comch_server_event_consumer_register(
            server,
            Some(consumer_event),
            Some(consumer_event)
        ),
        bad
    );
    expect!(doca_ctx_start(server_ctx(server)), bad);
    expect!(doca_comch_server_destroy(server), bad);
    explained("destroy the server");
    // What it was created on stays open while it lives.
    expect!(doca_pe_destroy(pe), DOCA_ERROR_IN_USE);
    expect!(doca_dev_rep_close(rep), DOCA_ERROR_IN_USE);
    expect!(doca_dev_close(arm), DOCA_ERROR_IN_USE);
    // Getters still answer.
    let mut size = 0;
    expect!(
        doca_comch_server_get_max_msg_size(server, &mut size),
        DOCA_SUCCESS
    );
    stop_and_destroy_server(server, pe);

    expect!(doca_pe_destroy(pe), DOCA_SUCCESS);
    expect!(doca_dev_rep_close(rep), DOCA_SUCCESS);
    expect!(doca_dev_close(arm), DOCA_SUCCESS);
}

#[test]
fn a_client_starts_in_progress_and_a_stop_returns_it_to_idle() {
    setup();
    let bad = DOCA_ERROR_BAD_STATE;
    let host = open_dev(HOST);
    let pe = new_pe();
    // No server of this name: the client keeps trying while STARTING.
    let client = configured_client(host, c"capi-nobody-listens");
    let ctx = client_ctx(client);
    let mut conn = null_mut();
    expect!(doca_comch_client_get_connection(client, &mut conn), bad);
    explained("once RUNNING");
    expect!(doca_pe_connect_ctx(pe, ctx), DOCA_SUCCESS);
    expect!(doca_ctx_start(ctx), DOCA_ERROR_IN_PROGRESS);
    assert_eq!(state(ctx), DOCA_CTX_STATE_STARTING);
    for _ in 0..100 {
        // SAFETY: a live PE.
        unsafe { doca_pe_progress(pe) };
    }
    assert_eq!(state(ctx), DOCA_CTX_STATE_STARTING);
    expect!(doca_comch_client_get_connection(client, &mut conn), bad);
    assert!(conn.is_null());
    // Starting is not IDLE: no configuration, no second start, no destroy.
    expect!(doca_comch_client_set_max_msg_size(client, 64), bad);
    expect!(
        doca_comch_client_task_send_set_conf(client, Some(sent), Some(sent), 8),
        bad
    );
    expect!(
        doca_comch_client_event_msg_recv_register(client, Some(received)),
        bad
    );
    expect!(doca_ctx_start(ctx), bad);
    expect!(doca_comch_client_destroy(client), bad);

    expect!(doca_ctx_stop(ctx), DOCA_SUCCESS);
    assert_eq!(state(ctx), DOCA_CTX_STATE_IDLE);
    expect!(doca_ctx_stop(ctx), bad);
    // IDLE again: it can be started again, or destroyed.
    expect!(doca_ctx_start(ctx), DOCA_ERROR_IN_PROGRESS);
    expect!(doca_ctx_stop(ctx), DOCA_SUCCESS);
    expect!(doca_comch_client_destroy(client), DOCA_SUCCESS);

    expect!(doca_pe_destroy(pe), DOCA_SUCCESS);
    expect!(doca_dev_close(host), DOCA_SUCCESS);
}

#[test]
fn connections_sends_and_counters_are_checked() {
    setup();
    let v = DOCA_ERROR_INVALID_VALUE;
    let arm = open_dev(ARM);
    let rep = open_rep(arm);
    let host = open_dev(HOST);
    let (spe, cpe) = (new_pe(), new_pe());
    // Both sides agree on 64-byte messages (or the server refuses the client).
    let server = configured_server(arm, rep, c"capi-conn");
    expect!(doca_comch_server_set_max_msg_size(server, 64), DOCA_SUCCESS);
    expect!(doca_pe_connect_ctx(spe, server_ctx(server)), DOCA_SUCCESS);
    expect!(doca_ctx_start(server_ctx(server)), DOCA_SUCCESS);
    let client = configured_client(host, c"capi-conn");
    expect!(doca_comch_client_set_max_msg_size(client, 64), DOCA_SUCCESS);
    let cctx = client_ctx(client);
    expect!(doca_pe_connect_ctx(cpe, cctx), DOCA_SUCCESS);
    expect!(doca_ctx_start(cctx), DOCA_ERROR_IN_PROGRESS);
    progress_until(&[spe, cpe], || {
        state(cctx) == DOCA_CTX_STATE_RUNNING && ACCEPTED.with(|a| a.borrow().len() == 1)
    });
    let accepted = ACCEPTED.with(|a| a.borrow()[0]);
    let mut conn = null_mut();
    expect!(
        doca_comch_client_get_connection(client, &mut conn),
        DOCA_SUCCESS
    );
    expect!(doca_comch_client_get_connection(client, null_mut()), v);

    // Each connection knows its side.
    expect!(doca_comch_server_get_server_ctx(accepted), server);
    expect!(doca_comch_client_get_client_ctx(accepted), null_mut());
    expect!(doca_comch_client_get_client_ctx(conn), client);
    expect!(doca_comch_server_get_server_ctx(conn), null_mut());

    // Messages: NULL with a length, NULL out-parameter, larger than the max message size.
    let msg = [7u8; 65];
    let mut task = null_mut();
    expect!(
        doca_comch_client_task_send_alloc_init(client, conn, null(), 4, &mut task),
        v
    );
    expect!(
        doca_comch_client_task_send_alloc_init(client, conn, msg.as_ptr().cast(), 4, null_mut()),
        v
    );
    expect!(
        doca_comch_client_task_send_alloc_init(client, conn, msg.as_ptr().cast(), 65, &mut task),
        v
    );
    explained("larger than the max message size");
    expect!(
        doca_comch_server_task_send_alloc_init(
            server,
            accepted,
            msg.as_ptr().cast(),
            65,
            &mut task
        ),
        v
    );
    expect!(
        doca_comch_client_task_send_alloc_init(client, conn, msg.as_ptr().cast(), 64, &mut task),
        DOCA_SUCCESS
    );
    // SAFETY: allocated above, never submitted.
    unsafe { doca_task_free(doca_comch_task_send_as_task(task)) };

    // A connection of another context: another server's, or the client's on the server.
    let other = started_server(arm, rep, c"capi-conn-other", spe);
    expect!(
        doca_comch_server_task_send_alloc_init(other, accepted, msg.as_ptr().cast(), 4, &mut task),
        v
    );
    explained("belongs to another");
    expect!(doca_comch_server_disconnect(other, accepted), v);
    expect!(
        doca_comch_server_task_send_alloc_init(server, conn, msg.as_ptr().cast(), 4, &mut task),
        v
    );
    expect!(
        doca_comch_client_task_send_alloc_init(client, accepted, msg.as_ptr().cast(), 4, &mut task),
        v
    );
    expect!(doca_comch_server_disconnect(server, null_mut()), v);
    stop_and_destroy_server(other, spe);

    // Counters: the four DOCA defines, nothing else.
    let mut value = 0u64;
    expect!(doca_comch_connection_update_info(conn), DOCA_SUCCESS);
    for counter in [
        DOCA_COMCH_COUNTER_SENT_MESSAGES,
        DOCA_COMCH_COUNTER_SENT_BYTES,
        DOCA_COMCH_COUNTER_RECV_MESSAGES,
        DOCA_COMCH_COUNTER_RECV_BYTES,
    ] {
        expect!(
            doca_comch_connection_get_counter(conn, counter, &mut value),
            DOCA_SUCCESS
        );
        assert_eq!(value, 0, "nothing sent yet");
    }
    expect!(doca_comch_connection_get_counter(conn, 0, &mut value), v);
    expect!(doca_comch_connection_get_counter(conn, 5, &mut value), v);
    explained("not a doca_comch_counter");
    expect!(
        doca_comch_connection_get_counter(conn, DOCA_COMCH_COUNTER_SENT_BYTES, null_mut()),
        v
    );

    // User data stays with the connection.
    expect!(
        doca_comch_connection_set_user_data(accepted, doca_data { u64_: 0xfeed }),
        DOCA_SUCCESS
    );
    // SAFETY: a live connection; the data holds an integer.
    let data = unsafe { doca_comch_connection_get_user_data(accepted).u64_ };
    assert_eq!(data, 0xfeed);

    // The client stops (the server hears of it), then the server.
    // SAFETY: a live client.
    let rc = unsafe { doca_ctx_stop(cctx) };
    assert!(rc == DOCA_SUCCESS || rc == DOCA_ERROR_IN_PROGRESS, "{rc}");
    progress_until(&[spe, cpe], || {
        state(cctx) == DOCA_CTX_STATE_IDLE && ACCEPTED.with(|a| a.borrow().is_empty())
    });
    expect!(
        doca_comch_client_get_connection(client, &mut conn),
        DOCA_ERROR_BAD_STATE
    );
    // Both ends of the closed connection are gone for good.
    expect!(doca_comch_connection_update_info(conn), v);
    explained("was destroyed");
    expect!(
        doca_comch_server_task_send_alloc_init(server, accepted, msg.as_ptr().cast(), 4, &mut task),
        v
    );
    expect!(doca_comch_server_disconnect(server, accepted), v);
    expect!(doca_comch_client_destroy(client), DOCA_SUCCESS);
    stop_and_destroy_server(server, spe);

    expect!(doca_pe_destroy(cpe), DOCA_SUCCESS);
    expect!(doca_pe_destroy(spe), DOCA_SUCCESS);
    expect!(doca_dev_close(host), DOCA_SUCCESS);
    expect!(doca_dev_rep_close(rep), DOCA_SUCCESS);
    expect!(doca_dev_close(arm), DOCA_SUCCESS);
}

#[test]
fn the_doca_2_7_names_reach_the_same_functions() {
    setup();
    let arm = open_dev(c"03:00.0");
    let rep = open_rep(arm);
    let server = configured_server(arm, rep, c"old-names");
    let mut got = null_mut();
    expect!(
        doca_comch_server_get_device_repr(server, &mut got),
        DOCA_SUCCESS
    );
    assert_eq!(got, rep);
    expect!(
        doca_comch_server_event_connection_register(server, Some(connected), Some(disconnected)),
        DOCA_SUCCESS
    );
    expect!(
        doca_comch_server_event_connection_register(server, None, Some(disconnected)),
        DOCA_ERROR_INVALID_VALUE
    );
    expect!(doca_comch_server_destroy(server), DOCA_SUCCESS);
    expect!(doca_dev_rep_close(rep), DOCA_SUCCESS);
    expect!(doca_dev_close(arm), DOCA_SUCCESS);
}
