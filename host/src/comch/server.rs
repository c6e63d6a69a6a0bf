//! `doca_comch_server`: the Arm side of the control path.

use super::ctrl::{self, Channel, Config, Inner, Raw, ctrl_builder_methods};
use super::{ServerEvent, start_on_pe};
use crate::ctx::{self, CtxState};
use crate::dev::{Dev, DevRep};
use crate::error::{Result, doca};
use crate::pe::Pe;
use dpakit_sys as sys;
use std::ffi::CString;
use std::fmt;
use std::mem::ManuallyDrop;

/// Configuration of a [`Server`].
pub struct ServerBuilder<'a> {
    dev: &'a Dev,
    rep: &'a DevRep,
    name: &'a str,
    pe: &'a Pe,
    config: Config,
}

impl fmt::Debug for ServerBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("name", &self.name)
            .finish()
    }
}

/// `doca_comch_server`: listens under a name for the clients on the host function its
/// representor stands for. Built without event callbacks it hands its events out as values
/// ([`next_event`](Self::next_event)); with them, they run in [`Pe::progress`] and get a
/// [`Channel`] to answer on.
///
/// An echo, with the client in the same program (on hardware it runs on the host):
///
/// ```
/// use dpakit::comch::{Client, Server, ServerEvent};
/// use dpakit::dev::{Dev, DevRep};
/// use dpakit::pe::Pe;
/// use std::time::Duration;
///
/// # fn main() -> dpakit::Result<()> {
/// let wait = Duration::from_secs(5);
/// // The Arm side: the BlueField's device and the representor of the clients' host function.
/// let arm = Dev::open_by_pci("03:00.0")?;
/// let rep = DevRep::open_by_pci(&arm, "b1:00.0")?;
/// let pe = Pe::new()?;
/// let server = Server::builder(&arm, &rep, "doc-echo-server", &pe).start()?;
///
/// // The host side.
/// let host = Dev::open_by_pci("b1:00.0")?;
/// let client = Client::builder(&host, "doc-echo-server", &pe).start()?;
/// let conn = client.connect(wait)?;
/// client.channel().send(conn, b"ping", 0)?;
///
/// loop {
///     match server.next_event(wait)? {
///         Some(ServerEvent::Message { conn, msg }) => {
///             server.channel().send(conn, &msg, 0)?;
///             break;
///         }
///         Some(_) => {} // the connection, …
///         None => panic!("no message within {wait:?}"),
///     }
/// }
/// # Ok(())
/// # }
/// ```
#[doc(alias = "doca_comch_server")]
pub struct Server {
    /// Taken only by `Drop`, which hands it to the teardown.
    inner: ManuallyDrop<Box<Inner>>,
    raw: *mut sys::doca_comch_server,
    _dev: Dev,
    _rep: DevRep,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("state", &self.state().ok())
            .finish()
    }
}

impl<'a> ServerBuilder<'a> {
    ctrl_builder_methods!();

    /// `doca_comch_server_event_connection_status_changed_register`: a client connected
    /// (`true`: established; `false`: it was refused, e.g. for another max message size).
    #[doc(alias = "doca_comch_server_event_connection_status_changed_register")]
    pub fn on_connect(
        mut self,
        cb: impl FnMut(&Channel<'_>, super::Connection, bool) + 'static,
    ) -> Self {
        self.config.cbs.connected = Some(Box::new(cb));
        self
    }

    /// The disconnection event: a client left (it stopped, was disconnected or died).
    pub fn on_disconnect(
        mut self,
        cb: impl FnMut(&Channel<'_>, super::Connection, bool) + 'static,
    ) -> Self {
        self.config.cbs.disconnected = Some(Box::new(cb));
        self
    }

    /// `doca_comch_server_create` + configuration + `doca_pe_connect_ctx` + `doca_ctx_start`.
    /// `ALREADY_EXIST` if a server of that name runs on the representor already.
    pub fn start(self) -> Result<Server> {
        let name = CString::new(self.name).map_err(|_| {
            crate::Error::new(
                crate::ErrorCode::InvalidValue,
                "a server name with a NUL byte",
            )
        })?;
        let mut raw = std::ptr::null_mut();
        doca!(doca_comch_server_create(
            self.dev.raw(),
            self.rep.raw(),
            name.as_ptr(),
            &mut raw
        ))?;
        // From here on, Drop destroys the server on every error path.
        let mut server = Server {
            inner: ManuallyDrop::new(Box::new(Inner::new(
                Raw::Server(raw),
                // SAFETY: a server we just created.
                unsafe { sys::doca_comch_server_as_ctx(raw) },
                self.pe,
                0,
                0,
                Default::default(),
            ))),
            raw,
            _dev: self.dev.clone(),
            _rep: self.rep.clone(),
        };
        let c = &self.config;
        if let Some(size) = c.max_msg_size {
            doca!(doca_comch_server_set_max_msg_size(raw, size))?;
        }
        if let Some(size) = c.recv_queue_size {
            doca!(doca_comch_server_set_recv_queue_size(raw, size))?;
        }
        let mut max = 0;
        doca!(doca_comch_server_get_max_msg_size(raw, &mut max))?;
        doca!(doca_comch_server_task_send_set_conf(
            raw,
            Some(ctrl::on_send_done),
            Some(ctrl::on_send_failed),
            c.num_send_tasks
        ))?;
        doca!(doca_comch_server_event_msg_recv_register(
            raw,
            Some(ctrl::on_message)
        ))?;
        doca!(doca_comch_server_event_connection_status_changed_register(
            raw,
            Some(ctrl::on_connect),
            Some(ctrl::on_disconnect)
        ))?;
        doca!(doca_comch_server_event_consumer_register(
            raw,
            Some(ctrl::on_consumer_created),
            Some(ctrl::on_consumer_expired)
        ))?;
        let ctx = server.inner.ctx;
        **server.inner = Inner::new(
            Raw::Server(raw),
            ctx,
            self.pe,
            max,
            self.config.num_send_tasks,
            self.config.cbs,
        );
        start_on_pe(ctx, &**server.inner, self.pe)?;
        Ok(server)
    }
}

impl Server {
    /// A server named `name` on `dev` (the Arm side) and `rep`, driven by `pe`.
    pub fn builder<'a>(
        dev: &'a Dev,
        rep: &'a DevRep,
        name: &'a str,
        pe: &'a Pe,
    ) -> ServerBuilder<'a> {
        ServerBuilder {
            dev,
            rep,
            name,
            pe,
            config: Config::default(),
        }
    }

    /// The oldest event no callback took ([`ServerEvent`]), without progressing; `None` if there
    /// is none yet.
    pub fn try_event(&self) -> Option<ServerEvent> {
        self.inner.try_event()
    }

    /// The next event no callback takes: progresses the PE (sleeping on its notification
    /// handle when idle) until one comes; `None` after `timeout`. `SHUTDOWN` on Ctrl-C (see
    /// [`interrupt`](crate::interrupt)); `BAD_STATE` inside a callback of the PE.
    pub fn next_event(&self, timeout: std::time::Duration) -> Result<Option<ServerEvent>> {
        self.inner.next_event(timeout, "Server::next_event")
    }

    /// [`next_event`](Self::next_event) as a future (feature `tokio`): the PE's notification
    /// handle sleeps in tokio's reactor while nothing is ready, so an idle task costs nothing.
    /// On a current-thread runtime or a `LocalSet` (a PE stays on its thread); the runtime's
    /// own signal handling (`tokio::signal`) ends it with a `select!`.
    #[cfg(feature = "tokio")]
    pub async fn next_event_async(&self) -> Result<ServerEvent> {
        self.inner.next_event_async().await
    }

    /// The events of [`next_event`](Self::next_event) as a [`Stream`](futures_core::Stream)
    /// (feature `tokio`), for stream combinators and `select!` over several sources.
    #[cfg(feature = "tokio")]
    pub fn events(&self) -> super::Events<'_> {
        super::Events::new(&self.inner)
    }

    /// Sends, disconnects and counters, outside the callbacks.
    pub fn channel(&self) -> Channel<'_> {
        Channel::new(&self.inner)
    }

    /// The max message size in effect (`doca_comch_server_get_max_msg_size`).
    #[doc(alias = "doca_comch_server_get_max_msg_size")]
    pub fn max_msg_size(&self) -> u32 {
        self.inner.max_msg_size
    }

    /// `doca_ctx_get_state`.
    #[doc(alias = "doca_ctx_get_state")]
    pub fn state(&self) -> Result<CtxState> {
        ctx::state(self.inner.ctx)
    }

    /// `doca_ctx_stop`, progressing until idle: every client is told and disconnected.
    /// `IN_USE` while producers or consumers live on a connection. Inside a callback of its PE
    /// it returns once the stop is requested, and the server becomes idle through later
    /// progress.
    #[doc(alias = "doca_ctx_stop")]
    pub fn stop(&self) -> Result<()> {
        let r = ctx::stop(self.inner.ctx, Some(&self.inner.pe));
        if r.is_ok() {
            ctrl::forget_all(&self.inner);
        }
        r
    }
}

impl Drop for Server {
    #[doc(alias = "doca_comch_server_destroy")]
    fn drop(&mut self) {
        // SAFETY: taken once, here; `self.inner` is not used again.
        let inner = unsafe { ManuallyDrop::take(&mut self.inner) };
        let (raw, ctx, pe) = (self.raw, inner.ctx, inner.pe.clone());
        // The device and representor outlive the server, which holds them.
        let keep = (inner, self._dev.clone(), self._rep.clone());
        ctx::teardown(
            ctx,
            &pe,
            "Comch server",
            move || doca!(doca_comch_server_destroy(raw)),
            keep,
        );
    }
}
