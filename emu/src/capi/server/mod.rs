//! `doca_comch_server` in the C API: the model's server (`dpakit_model::comch_ctrl::Server`),
//! the C context around it and the program's connection callbacks.

use super::comch::{CtrlCore, common_face};
use super::connection::{self, Connection, connection};
use super::context::{Context, CtxCore};
use super::dev::DevRepObj;
use super::registry::{self, Kind, Object};
use super::types::*;
use super::{c_str, call, call_value, out};
use crate::comch_ctrl::{Face, Server, check_name};
use crate::ctx::CtxState;
use crate::error::{Result, bail};
use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::rc::Rc;

/// Connection-event callbacks.
#[derive(Clone, Copy, Default)]
struct ConnCbs {
    connected: doca_comch_event_connection_status_changed_cb_t,
    disconnected: doca_comch_event_connection_status_changed_cb_t,
}

/// A `struct doca_comch_server`.
pub(crate) struct ServerObj {
    pub c: CtrlCore,
    pub model: Server,
    rep: *mut c_void,
    conn_cbs: Cell<ConnCbs>,
}

impl Object for ServerObj {
    const KIND: Kind = Kind::ComchServer;
}

pub(crate) fn server<'a>(ptr: *const doca_comch_server, param: &str) -> Result<&'a ServerObj> {
    registry::get::<ServerObj>(ptr.cast(), param)
}

impl ServerObj {
    fn connection_event(&self, conn: &Connection, connected: bool, ok: bool) {
        let cbs = self.conn_cbs.get();
        let cb = if connected {
            cbs.connected
        } else {
            cbs.disconnected
        };
        if let Some(cb) = cb {
            debug_assert!(crate::capi::registry::in_callback_frame());
            // SAFETY: the program's callback; the connection's handle is live during the call.
            unsafe {
                cb(
                    self.c.core.handle.get().cast(),
                    conn.handle.get().cast(),
                    u8::from(ok),
                )
            };
        }
    }
}

impl Face for ServerObj {
    common_face!();

    fn connected(&self, conn: &Rc<Connection>, ok: bool) -> Result<()> {
        self.c.adopt(conn)?;
        self.connection_event(conn, true, ok);
        if !ok {
            connection::unregister(conn);
        }
        Ok(())
    }

    fn disconnected(&self, conn: &Rc<Connection>) {
        self.connection_event(conn, false, true);
        connection::unregister(conn);
    }
}

impl Context for ServerObj {
    fn core(&self) -> &CtxCore {
        &self.c.core
    }

    fn start(&self) -> Result<bool> {
        if self.conn_cbs.get().connected.is_none() {
            bail!(
                BadState,
                "register connection callbacks before start \
                 (doca_comch_server_event_connection_status_changed_register)"
            );
        }
        self.c.prepare_start("server", &self.model.ep)?;
        self.model.start(self)?;
        Ok(true)
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

mod api;
pub use api::*;
