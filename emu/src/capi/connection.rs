//! `struct doca_comch_connection` in the C API: the handle of a model connection
//! (`dpakit_model::comch_ctrl::Connection`, shared with its server or client), its user data
//! and counters.

use super::registry::{self, Kind, Object};
use super::types::*;
use super::{call, call_value, out};
pub(crate) use crate::comch_ctrl::Connection;
use crate::error::Result;
use std::ffi::c_void;
use std::rc::Rc;

impl Object for Connection {
    const KIND: Kind = Kind::ComchConnection;
    const SHARED: bool = true;
}

/// The connection behind a `struct doca_comch_connection *`.
pub(crate) fn connection<'a>(
    ptr: *const doca_comch_connection,
    param: &str,
) -> Result<&'a Connection> {
    registry::get::<Connection>(ptr.cast(), param)
}

/// `doca_comch_connection_set_user_data`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_connection_set_user_data(
    connection: *mut doca_comch_connection,
    user_data: doca_data,
) -> doca_error_t {
    call("doca_comch_connection_set_user_data", || {
        // SAFETY: both fields of the union are 8 plain bytes.
        let bytes = unsafe { user_data.u64_ };
        self::connection(connection, "connection")?
            .user_data
            .set(bytes);
        Ok(())
    })
}

/// `doca_comch_connection_get_user_data`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_connection_get_user_data(
    connection: *const doca_comch_connection,
) -> doca_data {
    call_value(
        "doca_comch_connection_get_user_data",
        doca_data::default(),
        || {
            let bytes = self::connection(connection, "connection")?.user_data.get();
            Ok(doca_data { u64_: bytes })
        },
    )
}

/// `doca_comch_server_get_server_ctx`: NULL for a client's connection.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_server_get_server_ctx(
    connection: *const doca_comch_connection,
) -> *mut doca_comch_server {
    call_value(
        "doca_comch_server_get_server_ctx",
        std::ptr::null_mut(),
        || {
            let c = self::connection(connection, "connection")?;
            Ok(if c.is_server {
                c.owner.cast()
            } else {
                std::ptr::null_mut()
            })
        },
    )
}

/// `doca_comch_client_get_client_ctx`: NULL for a server's connection.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_client_get_client_ctx(
    connection: *const doca_comch_connection,
) -> *mut doca_comch_client {
    call_value(
        "doca_comch_client_get_client_ctx",
        std::ptr::null_mut(),
        || {
            let c = self::connection(connection, "connection")?;
            Ok(if c.is_server {
                std::ptr::null_mut()
            } else {
                c.owner.cast()
            })
        },
    )
}

/// `doca_comch_connection_update_info`: takes a snapshot of the counters;
/// `CONNECTION_ABORTED` once the connection is closed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_connection_update_info(
    comch_connection: *mut doca_comch_connection,
) -> doca_error_t {
    call("doca_comch_connection_update_info", || {
        self::connection(comch_connection, "comch_connection")?.update_info()
    })
}

/// `doca_comch_connection_get_counter`: the value as of the last update.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_connection_get_counter(
    comch_connection: *const doca_comch_connection,
    counter_type: doca_comch_counter,
    counter_value: *mut u64,
) -> doca_error_t {
    call("doca_comch_connection_get_counter", || {
        let value =
            self::connection(comch_connection, "comch_connection")?.counter(counter_type)?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(counter_value, "counter_value", value) }
    })
}

/// Gives `conn` a handle; the registry holds it until [`unregister`].
pub(crate) fn register(conn: &Rc<Connection>) -> Result<*mut c_void> {
    let handle = registry::register_shared(conn.clone())?;
    conn.handle.set(handle);
    Ok(handle)
}

/// Takes `conn`'s handle away (the model may hold the connection a little longer).
pub(crate) fn unregister(conn: &Connection) {
    registry::retire_shared::<Connection>(conn.handle.get());
}
