//! Comch control path: servers, clients, their send tasks and connections (and the consumers
//! and producers made on a connection), with the event callbacks the program registers (codes
//! 30 to 32).

use crate::capi::{ADOPT, K, World};
use crate::support::Bytes;
use crate::{FREE_IN_CALLBACK, ignore, out, reenter, size};
use dpakit_sys::*;
use std::cell::Cell;
use std::ffi::{CStr, c_void};
use std::ptr::null_mut;

const NAMES: [&CStr; 4] = [c"fuzz", c"fuzz-2", c"", c"a-name-longer-than-anything-the-soft-device-accepts-for-a-comch-server-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"];

/// The server or client context of a connection's callback.
///
/// # Safety
/// A connection handle the soft device passed to a callback.
unsafe fn ctx_of(conn: *mut doca_comch_connection) -> *mut doca_ctx {
    // SAFETY: the caller's contract; each call checks the handle.
    unsafe {
        let server = doca_comch_server_get_server_ctx(conn);
        if server.is_null() {
            doca_comch_client_as_ctx(doca_comch_client_get_client_ctx(conn))
        } else {
            doca_comch_server_as_ctx(server)
        }
    }
}

unsafe extern "C" fn conn_event(
    _: *mut doca_comch_event_connection_status_changed,
    conn: *mut doca_comch_connection,
    _: u8,
) {
    ADOPT.with(|a| a.borrow_mut().push((K::Conn, conn.cast())));
    // SAFETY: the connection the soft device passed.
    unsafe { reenter::act(ctx_of(conn), null_mut(), conn) };
}

unsafe extern "C" fn msg_recv(
    _: *mut doca_comch_event_msg_recv,
    _: *mut u8,
    _: u32,
    conn: *mut doca_comch_connection,
) {
    // SAFETY: the connection the soft device passed.
    unsafe { reenter::act(ctx_of(conn), null_mut(), conn) };
}

unsafe extern "C" fn consumer_event(
    _: *mut doca_comch_event_consumer,
    conn: *mut doca_comch_connection,
    _: u32,
) {
    // SAFETY: the connection the soft device passed.
    unsafe { reenter::act(ctx_of(conn), null_mut(), conn) };
}

unsafe extern "C" fn comch_send_done(task: *mut doca_comch_task_send, _: doca_data, _: doca_data) {
    // SAFETY: the completed task, handed back to the program.
    let task = unsafe { doca_comch_task_send_as_task(task) };
    // SAFETY: as above.
    unsafe { reenter::act(null_mut(), task, null_mut()) };
    if FREE_IN_CALLBACK.with(Cell::get) {
        // SAFETY: as above (refused if the call above freed it already).
        unsafe { doca_task_free(task) };
    }
}

pub fn server_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any server, device, representor and connection handles; names are
    // NUL-terminated; out-parameters are locals; the callbacks are this module's.
    unsafe {
        let s = w.one::<doca_comch_server>(b, K::Server);
        let (mut v, mut dev, mut rep) = (0u32, null_mut(), null_mut());
        match b.u8() % 10 {
            0 | 1 => {
                let mut n = null_mut();
                let name = NAMES[usize::from(b.u8() % 4)];
                doca_comch_server_create(
                    w.one(b, K::Dev),
                    w.one(b, K::DevRep),
                    name.as_ptr(),
                    out(b, &mut n),
                );
                w.add(K::Server, n.cast());
            }
            2 => ignore(doca_comch_server_destroy(s)),
            3 => {
                doca_comch_server_set_max_msg_size(s, size(b));
                doca_comch_server_set_recv_queue_size(s, size(b));
                doca_comch_server_get_max_msg_size(s, out(b, &mut v));
                doca_comch_server_get_recv_queue_size(s, &mut v);
            }
            4 => ignore(doca_comch_server_task_send_set_conf(
                s,
                Some(comch_send_done),
                Some(comch_send_done),
                size(b),
            )),
            5 => {
                let cb = if b.u8().is_multiple_of(8) {
                    None
                } else {
                    Some(conn_event as _)
                };
                doca_comch_server_event_connection_status_changed_register(s, cb, cb);
                doca_comch_server_event_msg_recv_register(s, Some(msg_recv));
                doca_comch_server_event_consumer_register(
                    s,
                    Some(consumer_event),
                    Some(consumer_event),
                );
            }
            6 => ignore(doca_comch_server_disconnect(s, w.one(b, K::Conn))),
            7 => {
                doca_comch_server_get_device(s, out(b, &mut dev));
                doca_comch_server_get_device_rep(s, out(b, &mut rep));
            }
            8 => send_task(w, b, s.cast()),
            _ => ignore(doca_ctx_start(doca_comch_server_as_ctx(s))),
        }
    }
}

pub fn client_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any client, device and connection handles; names are NUL-terminated;
    // out-parameters are locals; the callbacks are this module's.
    unsafe {
        let c = w.one::<doca_comch_client>(b, K::Client);
        let (mut v, mut dev, mut conn) = (0u32, null_mut(), null_mut());
        match b.u8() % 9 {
            0 | 1 => {
                let mut n = null_mut();
                let name = NAMES[usize::from(b.u8() % 4)];
                doca_comch_client_create(w.one(b, K::Dev), name.as_ptr(), out(b, &mut n));
                w.add(K::Client, n.cast());
            }
            2 => ignore(doca_comch_client_destroy(c)),
            3 => {
                doca_comch_client_set_max_msg_size(c, size(b));
                doca_comch_client_set_recv_queue_size(c, size(b));
                doca_comch_client_get_max_msg_size(c, out(b, &mut v));
                doca_comch_client_get_recv_queue_size(c, &mut v);
                doca_comch_client_get_device(c, out(b, &mut dev));
            }
            4 => ignore(doca_comch_client_task_send_set_conf(
                c,
                Some(comch_send_done),
                Some(comch_send_done),
                size(b),
            )),
            5 => {
                doca_comch_client_event_msg_recv_register(c, Some(msg_recv));
                doca_comch_client_event_consumer_register(
                    c,
                    Some(consumer_event),
                    Some(consumer_event),
                );
            }
            6 => {
                doca_comch_client_get_connection(c, out(b, &mut conn));
                w.add(K::Conn, conn.cast());
            }
            7 => send_task(w, b, c.cast()),
            _ => ignore(doca_ctx_start(doca_comch_client_as_ctx(c))),
        }
    }
}

/// A Comch send task on `ctx` (a server or client: any), allocated as a server's or a
/// client's.
fn send_task(w: &mut World, b: &mut Bytes<'_>, ctx: *mut c_void) {
    // SAFETY: any context and connection handles; the message lies in the world's memory
    // (`len` never exceeds its range); the out-parameter is a local.
    unsafe {
        let conn = w.one(b, K::Conn);
        let (msg, len) = w.range(b);
        let len = (len % 5000) as u32;
        let mut t = null_mut();
        if b.bool() {
            doca_comch_server_task_send_alloc_init(
                ctx.cast(),
                conn,
                msg.cast(),
                len,
                out(b, &mut t),
            );
        } else {
            doca_comch_client_task_send_alloc_init(
                ctx.cast(),
                conn,
                msg.cast(),
                len,
                out(b, &mut t),
            );
        }
        w.add(K::ComchTask, t.cast());
    }
}

pub fn conn_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any connection, mmap, PE, server and client handles; out-parameters are
    // locals; the callbacks are this module's.
    unsafe {
        let conn = w.one::<doca_comch_connection>(b, K::Conn);
        let mut v = 0u64;
        match b.u8() % 7 {
            0 => {
                doca_comch_connection_set_user_data(conn, doca_data { u64_: b.u64() });
                doca_comch_connection_get_user_data(conn);
            }
            1 => {
                doca_comch_server_get_server_ctx(conn);
                doca_comch_client_get_client_ctx(conn);
            }
            2 => ignore(doca_comch_connection_update_info(conn)),
            3 => ignore(doca_comch_connection_get_counter(
                conn,
                b.u32() % 6,
                out(b, &mut v),
            )),
            4 => {
                let mut c = null_mut();
                doca_comch_consumer_create(conn, w.one(b, K::Mmap), out(b, &mut c));
                w.add(K::Consumer, c.cast());
            }
            5 => {
                let mut p = null_mut();
                doca_comch_producer_create(conn, out(b, &mut p));
                w.add(K::Producer, p.cast());
            }
            _ => {
                // A whole connection at once: a started server and a client of it, both on
                // one PE, progressed until connected (bounded).
                let pe = w.one::<doca_pe>(b, K::Pe);
                let s = w.one::<doca_comch_server>(b, K::Server);
                let c = w.one::<doca_comch_client>(b, K::Client);
                doca_comch_server_event_connection_status_changed_register(
                    s,
                    Some(conn_event),
                    Some(conn_event),
                );
                doca_comch_server_event_msg_recv_register(s, Some(msg_recv));
                doca_comch_client_event_msg_recv_register(c, Some(msg_recv));
                doca_comch_server_task_send_set_conf(
                    s,
                    Some(comch_send_done),
                    Some(comch_send_done),
                    8,
                );
                doca_comch_client_task_send_set_conf(
                    c,
                    Some(comch_send_done),
                    Some(comch_send_done),
                    8,
                );
                doca_pe_connect_ctx(pe, s.cast());
                doca_pe_connect_ctx(pe, c.cast());
                doca_ctx_start(s.cast());
                doca_ctx_start(c.cast());
                let mut conn = null_mut();
                for _ in 0..64 {
                    doca_pe_progress(pe);
                    if doca_comch_client_get_connection(c, &mut conn) == DOCA_SUCCESS
                        && !conn.is_null()
                    {
                        w.add(K::Conn, conn.cast());
                        break;
                    }
                }
            }
        }
    }
}
