//! The C functions of `doca_comch.h` that are not a server's or a client's own: the
//! capability queries, the send task's generic view, and the functions both sides have
//! ([`endpoint_functions!`]).

use super::comch::ComchSendTask;
use super::registry;
use super::types::*;
use super::{call, call_value, out};
use crate::error::Result;
use crate::limits::{
    COMCH_MAX_CLIENTS, COMCH_MAX_MSG_SIZE, COMCH_MAX_NAME_LEN, COMCH_MAX_RECV_QUEUE_SIZE,
    COMCH_MAX_SEND_TASKS,
};

/// The task behind a `struct doca_comch_task_send *`.
pub(crate) fn send_task<'a>(
    ptr: *const doca_comch_task_send,
    param: &str,
) -> Result<&'a ComchSendTask> {
    registry::get::<ComchSendTask>(ptr.cast(), param)
}

/// `doca_comch_task_send_as_task`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_task_send_as_task(
    task: *mut doca_comch_task_send,
) -> *mut doca_task {
    call_value("doca_comch_task_send_as_task", std::ptr::null_mut(), || {
        send_task(task, "task")?;
        Ok(task.cast())
    })
}

/// A capability of the control path: `value` if the device hosts a server or a client.
fn control_cap(
    devinfo: *const doca_devinfo,
    value: usize,
    dst: *mut u32,
    param: &str,
) -> Result<()> {
    let info = super::dev::devinfo(devinfo, "devinfo")?;
    if !info.caps().comch {
        info.comch_cap_server_is_supported()?;
    }
    // SAFETY: writable by the C contract (checked non-null).
    unsafe { out(dst, param, value as u32) }
}

/// `doca_comch_cap_server_is_supported`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_cap_server_is_supported(
    devinfo: *const doca_devinfo,
) -> doca_error_t {
    call("doca_comch_cap_server_is_supported", || {
        super::dev::devinfo(devinfo, "devinfo")?.comch_cap_server_is_supported()
    })
}

/// `doca_comch_cap_client_is_supported`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_cap_client_is_supported(
    devinfo: *const doca_devinfo,
) -> doca_error_t {
    call("doca_comch_cap_client_is_supported", || {
        super::dev::devinfo(devinfo, "devinfo")?.comch_cap_client_is_supported()
    })
}

/// `doca_comch_cap_get_max_name_len` (with the NUL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_cap_get_max_name_len(
    devinfo: *const doca_devinfo,
    max_name_len: *mut u32,
) -> doca_error_t {
    call("doca_comch_cap_get_max_name_len", || {
        control_cap(devinfo, COMCH_MAX_NAME_LEN, max_name_len, "max_name_len")
    })
}

/// `doca_comch_cap_get_max_msg_size`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_cap_get_max_msg_size(
    devinfo: *const doca_devinfo,
    size: *mut u32,
) -> doca_error_t {
    call("doca_comch_cap_get_max_msg_size", || {
        control_cap(devinfo, COMCH_MAX_MSG_SIZE, size, "size")
    })
}

/// `doca_comch_cap_get_max_recv_queue_size`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_cap_get_max_recv_queue_size(
    devinfo: *const doca_devinfo,
    size: *mut u32,
) -> doca_error_t {
    call("doca_comch_cap_get_max_recv_queue_size", || {
        control_cap(devinfo, COMCH_MAX_RECV_QUEUE_SIZE, size, "size")
    })
}

/// `doca_comch_cap_get_max_clients`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_cap_get_max_clients(
    devinfo: *const doca_devinfo,
    num_clients: *mut u32,
) -> doca_error_t {
    call("doca_comch_cap_get_max_clients", || {
        control_cap(devinfo, COMCH_MAX_CLIENTS, num_clients, "num_clients")
    })
}

/// `doca_comch_cap_get_max_send_tasks`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_cap_get_max_send_tasks(
    devinfo: *const doca_devinfo,
    max_send_tasks: *mut u32,
) -> doca_error_t {
    call("doca_comch_cap_get_max_send_tasks", || {
        control_cap(
            devinfo,
            COMCH_MAX_SEND_TASKS,
            max_send_tasks,
            "max_send_tasks",
        )
    })
}

/// The functions a server and a client both have, each a call on its C part or its model
/// endpoint: `object` is
/// the C type, `param` the parameter's name, `get` the function that resolves it.
macro_rules! endpoint_functions {
    (
        object: $ty:ident, param: $param:ident, get: $get:ident,
        set_max_msg_size: $set_max:ident,
        set_recv_queue_size: $set_queue:ident,
        get_max_msg_size: $get_max:ident,
        get_recv_queue_size: $get_queue:ident,
        get_device: $get_device:ident,
        task_send_set_conf: $set_conf:ident,
        task_send_alloc_init: $alloc:ident,
        event_msg_recv_register: $recv_register:ident,
        event_consumer_register: $consumer_register:ident,
    ) => {
        #[doc = concat!("`", stringify!($set_max), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $set_max($param: *mut $ty, size: u32) -> doca_error_t {
            call(stringify!($set_max), || {
                let o = $get($param, stringify!($param))?;
                o.c.core.require_idle("set the max message size")?;
                o.model.ep.set_max_msg_size(size)
            })
        }

        #[doc = concat!("`", stringify!($set_queue), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $set_queue($param: *mut $ty, size: u32) -> doca_error_t {
            call(stringify!($set_queue), || {
                let o = $get($param, stringify!($param))?;
                o.c.core.require_idle("set the receive queue size")?;
                o.model.ep.set_recv_queue_size(size)
            })
        }

        #[doc = concat!("`", stringify!($get_max), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $get_max($param: *const $ty, size: *mut u32) -> doca_error_t {
            call(stringify!($get_max), || {
                let v = $get($param, stringify!($param))?.model.ep.max_msg_size();
                // SAFETY: writable by the C contract (checked non-null).
                unsafe { out(size, "size", v) }
            })
        }

        #[doc = concat!("`", stringify!($get_queue), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $get_queue($param: *const $ty, size: *mut u32) -> doca_error_t {
            call(stringify!($get_queue), || {
                let v = $get($param, stringify!($param))?.model.ep.recv_queue_size();
                // SAFETY: writable by the C contract (checked non-null).
                unsafe { out(size, "size", v) }
            })
        }

        #[doc = concat!("`", stringify!($get_device), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $get_device(
            $param: *const $ty,
            dev: *mut *mut doca_dev,
        ) -> doca_error_t {
            call(stringify!($get_device), || {
                let d = $get($param, stringify!($param))?.c.dev;
                // SAFETY: writable by the C contract (checked non-null).
                unsafe { out(dev, "dev", d.cast()) }
            })
        }

        #[doc = concat!("`", stringify!($set_conf), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $set_conf(
            $param: *mut $ty,
            task_completion_cb: doca_comch_task_send_completion_cb_t,
            task_error_cb: doca_comch_task_send_completion_cb_t,
            num_send_tasks: u32,
        ) -> doca_error_t {
            call(stringify!($set_conf), || {
                let o = $get($param, stringify!($param))?;
                o.c.set_send_conf(
                    &o.model.ep,
                    task_completion_cb,
                    task_error_cb,
                    num_send_tasks,
                )
            })
        }

        #[doc = concat!("`", stringify!($alloc), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $alloc(
            $param: *mut $ty,
            peer: *mut doca_comch_connection,
            msg: *const c_void,
            len: u32,
            task: *mut *mut doca_comch_task_send,
        ) -> doca_error_t {
            call(stringify!($alloc), || {
                let o = $get($param, stringify!($param))?;
                o.c.alloc_send(peer, msg, len, task, |conn| o.model.check_send(conn, len))
            })
        }

        #[doc = concat!("`", stringify!($recv_register), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $recv_register(
            $param: *mut $ty,
            recv_event_cb: doca_comch_event_msg_recv_cb_t,
        ) -> doca_error_t {
            call(stringify!($recv_register), || {
                $get($param, stringify!($param))?
                    .c
                    .set_recv_cb(recv_event_cb)
            })
        }

        #[doc = concat!("`", stringify!($consumer_register), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $consumer_register(
            $param: *mut $ty,
            new_consumer_event_cb: doca_comch_event_consumer_cb_t,
            expired_consumer_event_cb: doca_comch_event_consumer_cb_t,
        ) -> doca_error_t {
            call(stringify!($consumer_register), || {
                $get($param, stringify!($param))?
                    .c
                    .set_consumer_cbs(new_consumer_event_cb, expired_consumer_event_cb)
            })
        }
    };
}
pub(crate) use endpoint_functions;
