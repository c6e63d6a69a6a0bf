//! The Comch control path's C API (`doca_comch_cap_*`, `doca_comch_server_*`,
//! `doca_comch_client_*`, `doca_comch_connection_*`) refuses what is not a live object of the
//! right kind: every function answers a NULL parameter, a destroyed server or client and a
//! handle of another kind with `DOCA_ERROR_INVALID_VALUE` (NULL, for the functions that answer
//! a pointer), never a crash. One table per subject, a row per call.
//!
//! These run against the soft device (the default configuration of `dpakit-sys`).
#![cfg(all(feature = "soft", not(feature = "doca")))]

#[macro_use]
#[path = "support/comch.rs"]
mod support;

use dpakit_sys::*;
use std::ptr::{null, null_mut};
use support::*;

#[test]
fn capabilities_refuse_null() {
    setup();
    let arm = open_dev(ARM);
    // SAFETY: a live device.
    let info = unsafe { doca_dev_as_devinfo(arm) };
    expect_refused(
        DOCA_ERROR_INVALID_VALUE,
        [
            row!(doca_comch_cap_server_is_supported(null())),
            row!(doca_comch_cap_client_is_supported(null())),
            row!(doca_comch_cap_get_max_name_len(null(), &mut 0)),
            row!(doca_comch_cap_get_max_name_len(info, null_mut())),
            row!(doca_comch_cap_get_max_msg_size(null(), &mut 0)),
            row!(doca_comch_cap_get_max_msg_size(info, null_mut())),
            row!(doca_comch_cap_get_max_recv_queue_size(null(), &mut 0)),
            row!(doca_comch_cap_get_max_recv_queue_size(info, null_mut())),
            row!(doca_comch_cap_get_max_clients(null(), &mut 0)),
            row!(doca_comch_cap_get_max_clients(info, null_mut())),
            row!(doca_comch_cap_get_max_send_tasks(null(), &mut 0)),
            row!(doca_comch_cap_get_max_send_tasks(info, null_mut())),
        ],
    );
    expect!(doca_dev_close(arm), DOCA_SUCCESS);
}

#[test]
fn server_functions_refuse_null() {
    setup();
    let arm = open_dev(ARM);
    let rep = open_rep(arm);
    let name = c"capi-null".as_ptr();
    let mut server = null_mut();
    expect!(
        doca_comch_server_create(arm, rep, name, &mut server),
        DOCA_SUCCESS
    );
    expect_refused(
        DOCA_ERROR_INVALID_VALUE,
        [
            // NULL handles and names.
            row!(doca_comch_server_create(
                null_mut(),
                rep,
                name,
                &mut null_mut()
            )),
            row!(doca_comch_server_create(
                arm,
                null_mut(),
                name,
                &mut null_mut()
            )),
            row!(doca_comch_server_create(arm, rep, null(), &mut null_mut())),
            row!(doca_comch_server_create(arm, rep, name, null_mut())),
            row!(doca_comch_server_destroy(null_mut())),
            row!(doca_comch_server_as_ctx(null_mut())),
            row!(doca_comch_server_set_max_msg_size(null_mut(), 64)),
            row!(doca_comch_server_get_max_msg_size(null(), &mut 0)),
            row!(doca_comch_server_set_recv_queue_size(null_mut(), 64)),
            row!(doca_comch_server_get_recv_queue_size(null(), &mut 0)),
            row!(doca_comch_server_get_device(null(), &mut null_mut())),
            row!(doca_comch_server_get_device_rep(null(), &mut null_mut())),
            row!(doca_comch_server_task_send_set_conf(
                null_mut(),
                Some(sent),
                Some(sent),
                8
            )),
            row!(doca_comch_server_task_send_alloc_init(
                null_mut(),
                null_mut(),
                null(),
                0,
                null_mut()
            )),
            row!(doca_comch_server_event_msg_recv_register(
                null_mut(),
                Some(received)
            )),
            row!(doca_comch_server_event_connection_status_changed_register(
                null_mut(),
                Some(connected),
                Some(disconnected)
            )),
            row!(doca_comch_server_event_consumer_register(
                null_mut(),
                Some(consumer_event),
                Some(consumer_event)
            )),
            row!(doca_comch_server_disconnect(null_mut(), null_mut())),
            // NULL out-parameters, peers and callbacks of a live server.
            row!(doca_comch_server_get_max_msg_size(server, null_mut())),
            row!(doca_comch_server_get_recv_queue_size(server, null_mut())),
            row!(doca_comch_server_get_device(server, null_mut())),
            row!(doca_comch_server_get_device_rep(server, null_mut())),
            row!(doca_comch_server_task_send_set_conf(
                server,
                None,
                Some(sent),
                8
            )),
            row!(doca_comch_server_task_send_set_conf(
                server,
                Some(sent),
                None,
                8
            )),
            row!(
                doca_comch_server_task_send_alloc_init(server, null_mut(), null(), 0, null_mut()),
                "peer is NULL"
            ),
            row!(doca_comch_server_event_msg_recv_register(server, None)),
            row!(doca_comch_server_event_connection_status_changed_register(
                server,
                None,
                Some(disconnected)
            )),
            row!(doca_comch_server_event_connection_status_changed_register(
                server,
                Some(connected),
                None
            )),
            row!(doca_comch_server_event_consumer_register(
                server,
                None,
                Some(consumer_event)
            )),
            row!(doca_comch_server_event_consumer_register(
                server,
                Some(consumer_event),
                None
            )),
        ],
    );
    expect!(doca_comch_server_destroy(server), DOCA_SUCCESS);
    expect!(doca_dev_rep_close(rep), DOCA_SUCCESS);
    expect!(doca_dev_close(arm), DOCA_SUCCESS);
}

#[test]
fn client_functions_refuse_null() {
    setup();
    let host = open_dev(HOST);
    let name = c"capi-null".as_ptr();
    let mut client = null_mut();
    expect!(
        doca_comch_client_create(host, name, &mut client),
        DOCA_SUCCESS
    );
    expect_refused(
        DOCA_ERROR_INVALID_VALUE,
        [
            // NULL handles and names.
            row!(doca_comch_client_create(null_mut(), name, &mut null_mut())),
            row!(doca_comch_client_create(host, null(), &mut null_mut())),
            row!(doca_comch_client_create(host, name, null_mut())),
            row!(doca_comch_client_destroy(null_mut())),
            row!(doca_comch_client_as_ctx(null_mut())),
            row!(doca_comch_client_set_max_msg_size(null_mut(), 64)),
            row!(doca_comch_client_get_max_msg_size(null(), &mut 0)),
            row!(doca_comch_client_set_recv_queue_size(null_mut(), 64)),
            row!(doca_comch_client_get_recv_queue_size(null(), &mut 0)),
            row!(doca_comch_client_get_device(null(), &mut null_mut())),
            row!(doca_comch_client_get_connection(null(), &mut null_mut())),
            row!(doca_comch_client_task_send_set_conf(
                null_mut(),
                Some(sent),
                Some(sent),
                8
            )),
            row!(doca_comch_client_task_send_alloc_init(
                null_mut(),
                null_mut(),
                null(),
                0,
                null_mut()
            )),
            row!(doca_comch_client_event_msg_recv_register(
                null_mut(),
                Some(received)
            )),
            row!(doca_comch_client_event_consumer_register(
                null_mut(),
                Some(consumer_event),
                Some(consumer_event)
            )),
            // NULL out-parameters, peers and callbacks of a live client.
            row!(doca_comch_client_get_max_msg_size(client, null_mut())),
            row!(doca_comch_client_get_recv_queue_size(client, null_mut())),
            row!(doca_comch_client_get_device(client, null_mut())),
            row!(doca_comch_client_task_send_set_conf(
                client,
                None,
                Some(sent),
                8
            )),
            row!(doca_comch_client_task_send_set_conf(
                client,
                Some(sent),
                None,
                8
            )),
            row!(doca_comch_client_task_send_alloc_init(
                client,
                null_mut(),
                null(),
                0,
                null_mut()
            )),
            row!(doca_comch_client_event_msg_recv_register(client, None)),
            row!(doca_comch_client_event_consumer_register(
                client,
                None,
                Some(consumer_event)
            )),
            row!(doca_comch_client_event_consumer_register(
                client,
                Some(consumer_event),
                None
            )),
        ],
    );
    expect!(doca_comch_client_destroy(client), DOCA_SUCCESS);
    expect!(doca_dev_close(host), DOCA_SUCCESS);
}

#[test]
fn send_tasks_and_connections_refuse_null() {
    setup();
    expect_refused(
        DOCA_ERROR_INVALID_VALUE,
        [
            row!(doca_comch_task_send_as_task(null_mut())),
            row!(doca_comch_connection_set_user_data(
                null_mut(),
                doca_data { u64_: 1 }
            )),
            // Zeroed user data.
            row!(
                doca_comch_connection_get_user_data(null()),
                "connection is NULL"
            ),
            row!(doca_comch_server_get_server_ctx(null())),
            row!(doca_comch_client_get_client_ctx(null())),
            row!(doca_comch_connection_update_info(null_mut())),
            row!(doca_comch_connection_get_counter(
                null(),
                DOCA_COMCH_COUNTER_SENT_MESSAGES,
                &mut 0
            )),
        ],
    );
}

#[test]
fn destroyed_servers_and_clients_are_refused() {
    setup();
    let arm = open_dev(ARM);
    let rep = open_rep(arm);
    let host = open_dev(HOST);

    let server = configured_server(arm, rep, c"capi-destroyed");
    expect!(doca_comch_server_destroy(server), DOCA_SUCCESS);
    expect_refused(
        DOCA_ERROR_INVALID_VALUE,
        [
            row!(
                doca_comch_server_set_max_msg_size(server, 64),
                "was destroyed"
            ),
            row!(doca_comch_server_get_max_msg_size(server, &mut 0)),
            row!(doca_comch_server_as_ctx(server)),
            row!(doca_ctx_start(server.cast())),
            row!(doca_comch_server_destroy(server), "was destroyed"),
        ],
    );

    let client = configured_client(host, c"capi-destroyed");
    expect!(doca_comch_client_destroy(client), DOCA_SUCCESS);
    expect_refused(
        DOCA_ERROR_INVALID_VALUE,
        [
            row!(
                doca_comch_client_set_recv_queue_size(client, 64),
                "was destroyed"
            ),
            row!(doca_comch_client_get_connection(client, &mut null_mut())),
            row!(doca_comch_client_as_ctx(client)),
            row!(doca_comch_client_destroy(client), "was destroyed"),
        ],
    );

    // The devices were released by the destroys: they close.
    expect!(doca_dev_close(host), DOCA_SUCCESS);
    expect!(doca_dev_rep_close(rep), DOCA_SUCCESS);
    expect!(doca_dev_close(arm), DOCA_SUCCESS);
}

#[test]
fn handles_of_another_kind_are_refused() {
    setup();
    let arm = open_dev(ARM);
    let rep = open_rep(arm);
    let host = open_dev(HOST);
    let server = configured_server(arm, rep, c"capi-kinds");
    let client = configured_client(host, c"capi-kinds");
    let name = c"capi-kinds-2".as_ptr();

    expect_refused(
        DOCA_ERROR_INVALID_VALUE,
        [
            // A device where a server belongs.
            row!(
                doca_comch_server_destroy(arm.cast()),
                "is a struct doca_dev, not a struct doca_comch_server"
            ),
            row!(doca_comch_server_as_ctx(arm.cast())),
            row!(doca_comch_server_set_max_msg_size(arm.cast(), 64)),
            // A server and a client swapped, and each where a connection belongs.
            row!(
                doca_comch_client_get_max_msg_size(server.cast(), &mut 0),
                "is a struct doca_comch_server, not a struct doca_comch_client"
            ),
            row!(doca_comch_server_get_max_msg_size(client.cast(), &mut 0)),
            row!(doca_comch_client_destroy(server_ctx(server).cast())),
            row!(doca_comch_connection_update_info(server.cast())),
            row!(doca_comch_server_get_server_ctx(client.cast())),
            // A representor where the device belongs, a device where the representor belongs.
            row!(doca_comch_server_create(
                rep.cast(),
                rep,
                name,
                &mut null_mut()
            )),
            row!(doca_comch_server_create(
                arm,
                host.cast(),
                name,
                &mut null_mut()
            )),
            // A devinfo that is a device.
            row!(doca_comch_cap_server_is_supported(arm.cast())),
        ],
    );

    expect!(doca_comch_client_destroy(client), DOCA_SUCCESS);
    expect!(doca_comch_server_destroy(server), DOCA_SUCCESS);
    expect!(doca_dev_close(host), DOCA_SUCCESS);
    expect!(doca_dev_rep_close(rep), DOCA_SUCCESS);
    expect!(doca_dev_close(arm), DOCA_SUCCESS);
}
