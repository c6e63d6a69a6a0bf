//! `doca_comch_client`: the host side of the control path.

use super::ctrl::{self, Channel, Config, Connection, Inner, Raw, ctrl_builder_methods};
use super::{ClientEvent, start_on_pe};
use crate::ctx::{self, CtxState};
use crate::dev::Dev;
use crate::error::{Error, Result, bail, doca};
use crate::pe::Pe;
use dpakit_sys as sys;
use std::ffi::CString;
use std::fmt;
use std::mem::ManuallyDrop;
use std::time::Duration;

/// Configuration of a [`Client`].
pub struct ClientBuilder<'a> {
    dev: &'a Dev,
    name: &'a str,
    pe: &'a Pe,
    config: Config,
}

impl fmt::Debug for ClientBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("name", &self.name)
            .finish()
    }
}

/// `doca_comch_client`: connects to the server of a name on its PCI function. Starting
/// returns at once (STARTING); progress connects, and [`state`](Self::state) turns RUNNING.
///
/// A round trip with the echo server of [`Server`](super::Server)'s example:
///
/// ```no_run
/// use dpakit::comch::{Client, ClientEvent};
/// use dpakit::dev::Dev;
/// use dpakit::pe::Pe;
/// use std::time::Duration;
///
/// # fn main() -> dpakit::Result<()> {
/// let wait = Duration::from_secs(5);
/// let pe = Pe::new()?;
/// let client = Client::builder(&Dev::open_by_pci("b1:00.0")?, "echo", &pe).start()?;
/// let conn = client.connect(wait)?;
/// client.channel().send(conn, b"ping", 0)?;
/// while let Some(event) = client.next_event(wait)? {
///     if let ClientEvent::Message { msg, .. } = event {
///         assert_eq!(&*msg, b"ping");
///         break;
///     }
/// }
/// client.stop()?;
/// # Ok(())
/// # }
/// ```
#[doc(alias = "doca_comch_client")]
pub struct Client {
    /// Taken only by `Drop`, which hands it to the teardown.
    inner: ManuallyDrop<Box<Inner>>,
    raw: *mut sys::doca_comch_client,
    _dev: Dev,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("state", &self.state().ok())
            .finish()
    }
}

impl<'a> ClientBuilder<'a> {
    ctrl_builder_methods!();

    /// `doca_comch_client_create` + configuration + `doca_pe_connect_ctx` + `doca_ctx_start`
    /// (which answers `IN_PROGRESS`: the client keeps trying to reach its server while it is
    /// STARTING; see [`Client::connect`]).
    pub fn start(self) -> Result<Client> {
        let name = CString::new(self.name).map_err(|_| {
            Error::new(
                crate::ErrorCode::InvalidValue,
                "a server name with a NUL byte",
            )
        })?;
        let mut raw = std::ptr::null_mut();
        doca!(doca_comch_client_create(
            self.dev.raw(),
            name.as_ptr(),
            &mut raw
        ))?;
        // SAFETY: a client we just created.
        let ctx = unsafe { sys::doca_comch_client_as_ctx(raw) };
        let mut client = Client {
            inner: ManuallyDrop::new(Box::new(Inner::new(
                Raw::Client(raw),
                ctx,
                self.pe,
                0,
                0,
                Default::default(),
            ))),
            raw,
            _dev: self.dev.clone(),
        };
        let c = &self.config;
        if let Some(size) = c.max_msg_size {
            doca!(doca_comch_client_set_max_msg_size(raw, size))?;
        }
        if let Some(size) = c.recv_queue_size {
            doca!(doca_comch_client_set_recv_queue_size(raw, size))?;
        }
        let mut max = 0;
        doca!(doca_comch_client_get_max_msg_size(raw, &mut max))?;
        doca!(doca_comch_client_task_send_set_conf(
            raw,
            Some(ctrl::on_send_done),
            Some(ctrl::on_send_failed),
            c.num_send_tasks
        ))?;
        doca!(doca_comch_client_event_msg_recv_register(
            raw,
            Some(ctrl::on_message)
        ))?;
        doca!(doca_comch_client_event_consumer_register(
            raw,
            Some(ctrl::on_consumer_created),
            Some(ctrl::on_consumer_expired)
        ))?;
        **client.inner = Inner::new(
            Raw::Client(raw),
            ctx,
            self.pe,
            max,
            self.config.num_send_tasks,
            self.config.cbs,
        );
        match start_on_pe(ctx, &**client.inner, self.pe) {
            Ok(()) => {}
            Err(e) if e.code() == crate::ErrorCode::InProgress => {}
            Err(e) => return Err(e),
        }
        Ok(client)
    }
}

impl Client {
    /// A client of the server `name`, through `dev` (host side), driven by `pe`.
    pub fn builder<'a>(dev: &'a Dev, name: &'a str, pe: &'a Pe) -> ClientBuilder<'a> {
        ClientBuilder {
            dev,
            name,
            pe,
            config: Config::default(),
        }
    }

    /// Progresses until the client is RUNNING; `TIME_OUT` naming the server if it is not there
    /// within `timeout`, or the reason the server refused the connection. `BAD_STATE` inside a
    /// callback of the client's PE.
    pub fn connect(&self, timeout: Duration) -> Result<Connection> {
        self.inner.pe.require_outside_callback("Client::connect")?;
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(conn) = self.connected()? {
                return Ok(conn);
            }
            if std::time::Instant::now() > deadline {
                bail!(
                    TimeOut,
                    "no Comch server answered within {timeout:?}: is the server running, on the \
                     representor of this client's PCI function, under the same name?"
                );
            }
            if !self.inner.pe.progress() {
                // Only a signal ends the connect early (SHUTDOWN); the rest is looked at again.
                match self.inner.pe.wait(Duration::from_millis(5)) {
                    Err(e) if e.code() == crate::ErrorCode::Shutdown => return Err(e),
                    _ => {}
                }
            }
        }
    }

    /// [`connect`](Self::connect) as a future (feature `tokio`): progresses in tokio's reactor
    /// until the client is RUNNING; bound it with `tokio::time::timeout`.
    #[cfg(feature = "tokio")]
    pub async fn connect_async(&self) -> Result<Connection> {
        loop {
            if let Some(conn) = self.connected()? {
                return Ok(conn);
            }
            self.inner.pe.progressed().await?;
        }
    }

    /// The connection once RUNNING, `None` while connecting, `CONNECTION_ABORTED` if the client
    /// went back to IDLE (the server refused it).
    fn connected(&self) -> Result<Option<Connection>> {
        match self.state()? {
            CtxState::Running => self.connection().map(Some),
            CtxState::Idle => bail!(
                ConnectionAborted,
                "the client stopped before connecting (the server refused the connection; its \
                 reason is on stderr)"
            ),
            _ => Ok(None),
        }
    }

    /// `doca_comch_client_get_connection`: the connection once RUNNING.
    #[doc(alias = "doca_comch_client_get_connection")]
    pub fn connection(&self) -> Result<Connection> {
        let mut raw = std::ptr::null_mut();
        doca!(doca_comch_client_get_connection(self.raw, &mut raw))?;
        ctrl::register_connection(&self.inner, raw)
    }

    /// The oldest event no callback took ([`ClientEvent`]), without progressing; `None` if there
    /// is none yet.
    pub fn try_event(&self) -> Option<ClientEvent> {
        self.inner.try_event()
    }

    /// The next event no callback takes: progresses the PE (sleeping on its notification
    /// handle when idle) until one comes; `None` after `timeout`. `SHUTDOWN` on Ctrl-C (see
    /// [`interrupt`](crate::interrupt)); `BAD_STATE` inside a callback of the PE.
    pub fn next_event(&self, timeout: std::time::Duration) -> Result<Option<ClientEvent>> {
        self.inner.next_event(timeout, "Client::next_event")
    }

    /// [`next_event`](Self::next_event) as a future (feature `tokio`): the PE's notification
    /// handle sleeps in tokio's reactor while nothing is ready, so an idle task costs nothing.
    /// On a current-thread runtime or a `LocalSet` (a PE stays on its thread); the runtime's
    /// own signal handling (`tokio::signal`) ends it with a `select!`.
    #[cfg(feature = "tokio")]
    pub async fn next_event_async(&self) -> Result<ClientEvent> {
        self.inner.next_event_async().await
    }

    /// The events of [`next_event`](Self::next_event) as a [`Stream`](futures_core::Stream)
    /// (feature `tokio`), for stream combinators and `select!` over several sources.
    #[cfg(feature = "tokio")]
    pub fn events(&self) -> super::Events<'_> {
        super::Events::new(&self.inner)
    }

    /// Sends and counters, outside the callbacks.
    pub fn channel(&self) -> Channel<'_> {
        Channel::new(&self.inner)
    }

    /// The max message size in effect (`doca_comch_client_get_max_msg_size`).
    #[doc(alias = "doca_comch_client_get_max_msg_size")]
    pub fn max_msg_size(&self) -> u32 {
        self.inner.max_msg_size
    }

    /// `doca_ctx_get_state`.
    #[doc(alias = "doca_ctx_get_state")]
    pub fn state(&self) -> Result<CtxState> {
        ctx::state(self.inner.ctx)
    }

    /// `doca_ctx_stop`, progressing until idle: the server is told. `IN_USE` while producers
    /// or consumers live on the connection. Inside a callback of its PE it returns once the
    /// stop is requested, and the client becomes idle through later progress.
    #[doc(alias = "doca_ctx_stop")]
    pub fn stop(&self) -> Result<()> {
        let r = ctx::stop(self.inner.ctx, Some(&self.inner.pe));
        if r.is_ok() {
            ctrl::forget_all(&self.inner);
        }
        r
    }
}

impl Drop for Client {
    #[doc(alias = "doca_comch_client_destroy")]
    fn drop(&mut self) {
        // SAFETY: taken once, here; `self.inner` is not used again.
        let inner = unsafe { ManuallyDrop::take(&mut self.inner) };
        let (raw, ctx, pe) = (self.raw, inner.ctx, inner.pe.clone());
        // The device outlives the client, which holds it.
        let keep = (inner, self._dev.clone());
        ctx::teardown(
            ctx,
            &pe,
            "Comch client",
            move || doca!(doca_comch_client_destroy(raw)),
            keep,
        );
    }
}
