//! `doca_comch_client` in the C API: the model's client (`dpakit_model::comch_ctrl::Client`)
//! and the C context around it. `doca_ctx_start` answers `IN_PROGRESS`; progress keeps trying
//! until the server is there and the handshake is done, and the state callback reports
//! RUNNING.

use super::comch::{CtrlCore, common_face};
use super::connection::{self, Connection};
use super::context::{Context, CtxCore};
use super::registry::{self, Kind, Object};
use super::types::*;
use super::{c_str, call, call_value, out};
use crate::comch_ctrl::{Client, Face};
use crate::error::{Result, bail};
use std::ffi::{c_char, c_void};
use std::rc::Rc;

/// A `struct doca_comch_client`.
pub(crate) struct ClientObj {
    pub c: CtrlCore,
    pub model: Client,
}

impl Object for ClientObj {
    const KIND: Kind = Kind::ComchClient;
}

pub(crate) fn client<'a>(ptr: *const doca_comch_client, param: &str) -> Result<&'a ClientObj> {
    registry::get::<ClientObj>(ptr.cast(), param)
}

/// A client's connection has no callbacks of its own: it gets a handle when it is up and
/// loses it when the client stops.
impl Face for ClientObj {
    common_face!();

    fn connected(&self, conn: &Rc<Connection>, _ok: bool) -> Result<()> {
        self.c.adopt(conn).map(drop)
    }

    fn disconnected(&self, conn: &Rc<Connection>) {
        connection::unregister(conn);
    }
}

impl Context for ClientObj {
    fn core(&self) -> &CtxCore {
        &self.c.core
    }

    fn start(&self) -> Result<bool> {
        self.c.prepare_start("client", &self.model.ep)?;
        self.model.start(self)?;
        Ok(false)
    }

    fn stop(&self) -> Result<bool> {
        self.model.stop(self, self.c.tasks.outstanding())
    }

    fn inflight(&self) -> usize {
        self.c.tasks.inflight()
    }

    fn poll(&self) -> usize {
        self.model.poll(self)
    }

    fn has_pending(&self) -> bool {
        self.model.has_pending()
    }

    fn after_progress(&self) -> usize {
        self.c.after_progress(|| self.model.try_finish_stop(self))
    }
}

/// `doca_comch_client_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_client_create(
    dev: *mut doca_dev,
    name: *const c_char,
    comch_client: *mut *mut doca_comch_client,
) -> doca_error_t {
    call("doca_comch_client_create", || {
        let d = super::dev::dev(dev, "dev")?;
        // SAFETY: a NUL-terminated string by the C contract (checked non-null).
        let name = unsafe { c_str(name, "name") }?;
        super::non_null(comch_client, "comch_client")?;
        d.dev.as_devinfo().comch_cap_client_is_supported()?;
        let function = d.dev.as_devinfo().get_pci_addr_str();
        let model = Client::new(name, function)?;
        crate::capi::context::register_view::<ClientObj>(registry::Kind::ComchClient);
        let handle = registry::register(Box::new(ClientObj {
            c: CtrlCore::new("client", dev.cast()),
            model,
        }))?;
        let c = client(handle.cast(), "client")?;
        c.c.core.handle.set(handle);
        c.model.ep.token.set(handle);
        d.users.hold();
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(comch_client, "comch_client", handle.cast()) }
    })
}

/// `doca_comch_client_destroy`: the context must be IDLE.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_client_destroy(
    comch_client: *mut doca_comch_client,
) -> doca_error_t {
    call("doca_comch_client_destroy", || {
        let c = client(comch_client, "comch_client")?;
        c.c.core.require_idle("destroy the client")?;
        if let Some(pe) = super::pe::of(&c.c.core) {
            pe.disconnect(c.c.core.handle.get());
        }
        if let Ok(d) = super::dev::dev(c.c.dev.cast(), "dev") {
            d.users.release();
        }
        c.c.tasks.release();
        registry::retire::<ClientObj>(comch_client.cast());
        Ok(())
    })
}

/// `doca_comch_client_as_ctx`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_client_as_ctx(
    comch_client: *mut doca_comch_client,
) -> *mut doca_ctx {
    call_value("doca_comch_client_as_ctx", std::ptr::null_mut(), || {
        client(comch_client, "comch_client")?;
        Ok(comch_client.cast())
    })
}

/// `doca_comch_client_get_connection`: `BAD_STATE` until the client runs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_client_get_connection(
    comch_client: *const doca_comch_client,
    connection: *mut *mut doca_comch_connection,
) -> doca_error_t {
    call("doca_comch_client_get_connection", || {
        let c = client(comch_client, "comch_client")?;
        let Some(conn) = c.model.connection() else {
            bail!(
                BadState,
                "the client is {}: it has a connection once RUNNING",
                c.c.core.state()
            );
        };
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(connection, "connection", conn.handle.get().cast()) }
    })
}

super::comch_api::endpoint_functions! {
    object: doca_comch_client, param: comch_client, get: client,
    set_max_msg_size: doca_comch_client_set_max_msg_size,
    set_recv_queue_size: doca_comch_client_set_recv_queue_size,
    get_max_msg_size: doca_comch_client_get_max_msg_size,
    get_recv_queue_size: doca_comch_client_get_recv_queue_size,
    get_device: doca_comch_client_get_device,
    task_send_set_conf: doca_comch_client_task_send_set_conf,
    task_send_alloc_init: doca_comch_client_task_send_alloc_init,
    event_msg_recv_register: doca_comch_client_event_msg_recv_register,
    event_consumer_register: doca_comch_client_event_consumer_register,
}
