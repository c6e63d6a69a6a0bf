//! What a Comch [`Server`](super::Server) and [`Client`](super::Client) share: connections,
//! send tasks with their own message buffers, and the callbacks of the control path.

use super::SendCompletion;
use super::message::{MessageBuf, Pool};
use crate::UserData;
use crate::ctx::StateChangedCb;
use crate::error::{Result, bail, doca};
use crate::pe::Pe;
use dpakit_abi::ErrorCode;
use dpakit_sys as sys;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

/// `doca_comch_connection`: one client ↔ server connection, as the callbacks and
/// [`Channel`] name it. A plain handle: one that has disconnected is refused with
/// `NOT_CONNECTED` rather than used.
#[doc(alias = "doca_comch_connection")]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Connection {
    raw: *mut sys::doca_comch_connection,
    serial: u64,
}

impl Connection {
    /// The `struct doca_comch_connection *`, for calls through `dpakit-sys` (e.g. the fast
    /// path's `doca_comch_producer_create` / `doca_comch_consumer_create`). It stays valid while
    /// the connection is live: until its disconnection callback (server) or the client stops.
    pub fn as_raw(&self) -> *mut sys::doca_comch_connection {
        self.raw
    }
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Connection#{}", self.serial)
    }
}

/// `doca_comch_connection_get_counter` after `doca_comch_connection_update_info`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// `DOCA_COMCH_COUNTER_SENT_MESSAGES`.
    pub sent_messages: u64,
    /// `DOCA_COMCH_COUNTER_SENT_BYTES`.
    pub sent_bytes: u64,
    /// `DOCA_COMCH_COUNTER_RECV_MESSAGES`.
    pub recv_messages: u64,
    /// `DOCA_COMCH_COUNTER_RECV_BYTES`.
    pub recv_bytes: u64,
}

/// What a Comch [`Server`](super::Server) or [`Client`](super::Client) reports, as a value.
///
/// An endpoint built without event callbacks (`on_message`, `on_connect`, `on_disconnect`,
/// `on_consumer`, `on_send_complete`) keeps its events in a queue for
/// [`Server::next_event`](super::Server::next_event) / `try_event`, in the order the progress
/// engine delivered them; one built with callbacks reports through them and queues nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A client connected (servers only: a client waits for its connection with
    /// [`Client::connect`](super::Client::connect)).
    #[doc(alias = "doca_comch_event_connection_status_changed")]
    Connected {
        /// The connection.
        conn: Connection,
    },
    /// A connection attempt failed (the two sides' max message sizes differ, for one).
    ConnectFailed {
        /// The connection that was refused.
        conn: Connection,
    },
    /// The peer left: it stopped, was disconnected or died.
    Disconnected {
        /// The connection, no longer usable.
        conn: Connection,
    },
    /// A message arrived.
    #[doc(alias = "doca_comch_event_msg_recv")]
    Message {
        /// The connection it came on.
        conn: Connection,
        /// Its bytes, in a buffer the endpoint reuses once this is dropped.
        msg: MessageBuf,
    },
    /// The peer created a consumer on the connection (fast path).
    #[doc(alias = "doca_comch_event_consumer")]
    ConsumerNew {
        /// The connection.
        conn: Connection,
        /// The consumer's id, for a producer to address.
        id: u32,
    },
    /// The peer destroyed a consumer on the connection.
    ConsumerExpired {
        /// The connection.
        conn: Connection,
        /// The consumer's id.
        id: u32,
    },
    /// A send finished (its status says whether it was delivered).
    SendDone(SendCompletion),
    /// The queue was full ([`EVENT_QUEUE_CAP`] events not taken): `dropped` events after it
    /// were lost. Take events as they come, or handle the busy kinds with callbacks.
    Lagged {
        /// How many events were lost.
        dropped: u64,
    },
}

/// The events a server or client keeps for the program at most: a peer cannot grow the queue
/// past it however fast it sends; what comes beyond is counted and reported as
/// [`Event::Lagged`].
pub const EVENT_QUEUE_CAP: usize = 4096;

/// The events of a [`Server`](super::Server).
pub type ServerEvent = Event;
/// The events of a [`Client`](super::Client).
pub type ClientEvent = Event;

pub(super) type MessageCb = Box<dyn FnMut(&Channel<'_>, Connection, &[u8])>;
pub(super) type ConnectionCb = Box<dyn FnMut(&Channel<'_>, Connection, bool)>;
pub(super) type ConsumerCb = Box<dyn FnMut(&Channel<'_>, Connection, u32)>;
pub(super) type SendCb = Box<dyn FnMut(&Channel<'_>, SendCompletion)>;

/// The callbacks of a server or client.
#[derive(Default)]
pub(super) struct Callbacks {
    pub message: Option<MessageCb>,
    pub connected: Option<ConnectionCb>,
    pub disconnected: Option<ConnectionCb>,
    pub consumer_created: Option<ConsumerCb>,
    pub consumer_expired: Option<ConsumerCb>,
    pub send: Option<SendCb>,
    pub state: Option<StateChangedCb>,
}

/// Which context an endpoint is.
#[derive(Clone, Copy)]
pub(super) enum Raw {
    Server(*mut sys::doca_comch_server),
    Client(*mut sys::doca_comch_client),
}

/// A send in flight: its message (DOCA reads it until the task completes) and user data.
struct Slot {
    buf: Box<[u8]>,
    user_data: u64,
}

/// What the callbacks reach through the context's user data. Boxed by its owner, so its
/// address is stable while the context lives.
pub(super) struct Inner {
    pub raw: Raw,
    pub ctx: *mut sys::doca_ctx,
    pub pe: Pe,
    pub max_msg_size: u32,
    slots: RefCell<Vec<Slot>>,
    free: RefCell<Vec<u32>>,
    live: RefCell<Vec<Connection>>,
    next_serial: Cell<u64>,
    pub cbs: RefCell<Callbacks>,
    /// Built without event callbacks: events queue for the program to take.
    pull: bool,
    /// The events for the program to take; at most [`EVENT_QUEUE_CAP`].
    events: RefCell<VecDeque<Event>>,
    /// Events lost to a full queue since the last [`Event::Lagged`].
    dropped: Cell<u64>,
    /// Buffers of the messages queued as events, reused.
    msg_pool: Pool,
    pub state_cb: Option<StateChangedCb>,
}

impl Inner {
    pub(super) fn new(
        raw: Raw,
        ctx: *mut sys::doca_ctx,
        pe: &Pe,
        max_msg_size: u32,
        num_tasks: u32,
        mut cbs: Callbacks,
    ) -> Inner {
        let slots = (0..num_tasks)
            .map(|_| Slot {
                buf: vec![0; max_msg_size as usize].into_boxed_slice(),
                user_data: 0,
            })
            .collect();
        Inner {
            raw,
            ctx,
            pe: pe.clone(),
            max_msg_size,
            slots: RefCell::new(slots),
            free: RefCell::new((0..num_tasks).rev().collect()),
            live: RefCell::new(Vec::with_capacity(64)),
            next_serial: Cell::new(1),
            pull: cbs.message.is_none()
                && cbs.connected.is_none()
                && cbs.disconnected.is_none()
                && cbs.consumer_created.is_none()
                && cbs.consumer_expired.is_none()
                && cbs.send.is_none(),
            events: RefCell::new(VecDeque::new()),
            dropped: Cell::new(0),
            msg_pool: Pool::default(),
            state_cb: cbs.state.take(),
            cbs: RefCell::new(cbs),
        }
    }

    /// The connection as the program knows it, registering it if new.
    fn known(&self, raw: *mut sys::doca_comch_connection, register: bool) -> Option<Connection> {
        let mut live = self.live.borrow_mut();
        if let Some(c) = live.iter().find(|c| c.raw == raw) {
            return Some(*c);
        }
        if !register {
            return None;
        }
        let c = Connection {
            raw,
            serial: self.next_serial.replace(self.next_serial.get() + 1),
        };
        live.push(c);
        Some(c)
    }

    fn forget(&self, conn: Connection) {
        self.live.borrow_mut().retain(|c| *c != conn);
    }

    fn check(&self, conn: Connection) -> Result<()> {
        if !self.live.borrow().contains(&conn) {
            bail!(
                NotConnected,
                "{conn:?} is not a live connection of this context (it disconnected)"
            );
        }
        Ok(())
    }

    fn channel(&self) -> Channel<'_> {
        Channel { inner: self }
    }

    /// Queues an event for the program, on an endpoint without callbacks (`make` builds it
    /// only then, and only if it fits).
    fn queue(&self, make: impl FnOnce() -> Event) {
        if !self.pull {
            return;
        }
        let mut events = self.events.borrow_mut();
        if events.len() >= EVENT_QUEUE_CAP {
            self.dropped.set(self.dropped.get() + 1);
            return;
        }
        events.push_back(make());
    }

    /// The oldest event, a [`Event::Lagged`] first if events were lost.
    pub(super) fn try_event(&self) -> Option<Event> {
        let dropped = self.dropped.replace(0);
        if dropped > 0 {
            return Some(Event::Lagged { dropped });
        }
        self.events.borrow_mut().pop_front()
    }

    /// The next event, progressing (and sleeping on the PE's notification handle) until one
    /// comes; None after `timeout`. `SHUTDOWN` on Ctrl-C (see [`crate::interrupt`]).
    pub(super) fn next_event(&self, timeout: Duration, what: &str) -> Result<Option<Event>> {
        if let Some(e) = self.try_event() {
            return Ok(Some(e));
        }
        self.pe.require_outside_callback(what)?;
        self.pe.progress_within(timeout, || {
            self.dropped.get() > 0 || !self.events.borrow().is_empty()
        })?;
        Ok(self.try_event())
    }

    /// Whether events are queued for the program (an endpoint without event callbacks).
    #[cfg(feature = "tokio")]
    pub(super) fn pulls(&self) -> bool {
        self.pull
    }

    /// The PE the endpoint runs on.
    #[cfg(feature = "tokio")]
    pub(super) fn pe(&self) -> &Pe {
        &self.pe
    }

    /// The next event, waiting in tokio's reactor while nothing is ready (feature `tokio`).
    #[cfg(feature = "tokio")]
    pub(super) async fn next_event_async(&self) -> Result<Event> {
        loop {
            if let Some(e) = self.try_event() {
                return Ok(e);
            }
            self.pe.progressed().await?;
        }
    }
}

impl super::HasStateCallback for Inner {
    fn state_callback(&self) -> Option<&StateChangedCb> {
        self.state_cb.as_ref()
    }
}

/// The control path of a server or client, as its callbacks (and its owner) use it: send on a
/// connection, disconnect one, read its counters.
pub struct Channel<'a> {
    inner: &'a Inner,
}

impl fmt::Debug for Channel<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Channel")
            .field("connections", &self.inner.live.borrow().len())
            .finish()
    }
}

impl<'a> Channel<'a> {
    pub(super) fn new(inner: &'a Inner) -> Self {
        Channel { inner }
    }

    /// `doca_comch_{server,client}_task_send_alloc_init` + `doca_task_submit`: copies `msg`
    /// (at most the max message size) into a send task of its own; the completion callback
    /// gets `user_data`. `NO_MEMORY` while every send task is in flight.
    #[doc(alias = "doca_comch_server_task_send_alloc_init")]
    #[doc(alias = "doca_comch_client_task_send_alloc_init")]
    pub fn send(&self, conn: Connection, msg: &[u8], user_data: impl Into<UserData>) -> Result<()> {
        let inner = self.inner;
        inner.check(conn)?;
        if msg.len() > inner.max_msg_size as usize {
            bail!(
                InvalidValue,
                "a {}-byte message is larger than the max message size ({} bytes)",
                msg.len(),
                inner.max_msg_size
            );
        }
        let Some(slot) = inner.free.borrow_mut().pop() else {
            bail!(
                NoMemory,
                "every send task is in flight: progress to complete some, or configure more"
            );
        };
        let ptr = {
            let mut slots = inner.slots.borrow_mut();
            let s = &mut slots[slot as usize];
            s.buf[..msg.len()].copy_from_slice(msg);
            s.user_data = user_data.into().raw();
            s.buf.as_ptr()
        };
        let mut task = std::ptr::null_mut();
        let allocated = match inner.raw {
            Raw::Server(s) => doca!(doca_comch_server_task_send_alloc_init(
                s,
                conn.raw,
                ptr.cast(),
                msg.len() as u32,
                &mut task
            )),
            Raw::Client(c) => doca!(doca_comch_client_task_send_alloc_init(
                c,
                conn.raw,
                ptr.cast(),
                msg.len() as u32,
                &mut task
            )),
        };
        if let Err(e) = allocated {
            inner.free.borrow_mut().push(slot);
            return Err(e);
        }
        // SAFETY: a task we just allocated.
        let task = unsafe { sys::doca_comch_task_send_as_task(task) };
        // SAFETY: as above.
        unsafe {
            sys::doca_task_set_user_data(
                task,
                sys::doca_data {
                    u64_: u64::from(slot),
                },
            )
        };
        if let Err(e) = doca!(doca_task_submit(task)) {
            // SAFETY: the submit failed, so the task is still ours.
            unsafe { sys::doca_task_free(task) };
            inner.free.borrow_mut().push(slot);
            return Err(e);
        }
        Ok(())
    }

    /// The live connections (a server's clients, or a running client's one).
    pub fn connections(&self) -> Vec<Connection> {
        self.inner.live.borrow().clone()
    }

    /// Send tasks in flight.
    pub fn in_flight(&self) -> usize {
        self.inner.slots.borrow().len() - self.inner.free.borrow().len()
    }

    /// `doca_comch_server_disconnect`: the client is told and the disconnection callback runs
    /// at the next progress. `IN_USE` while producers or consumers live on the connection;
    /// `NOT_SUPPORTED` on a client (stop it instead).
    #[doc(alias = "doca_comch_server_disconnect")]
    pub fn disconnect(&self, conn: Connection) -> Result<()> {
        self.inner.check(conn)?;
        match self.inner.raw {
            Raw::Server(s) => doca!(doca_comch_server_disconnect(s, conn.raw)),
            Raw::Client(_) => bail!(
                NotSupported,
                "a client disconnects by stopping (doca_ctx_stop)"
            ),
        }
    }

    /// `doca_comch_connection_update_info` + `doca_comch_connection_get_counter`.
    #[doc(alias = "doca_comch_connection_get_counter")]
    pub fn counters(&self, conn: Connection) -> Result<Counters> {
        self.inner.check(conn)?;
        doca!(doca_comch_connection_update_info(conn.raw))?;
        let get = |which| {
            let mut v = 0;
            doca!(doca_comch_connection_get_counter(conn.raw, which, &mut v)).map(|()| v)
        };
        Ok(Counters {
            sent_messages: get(sys::DOCA_COMCH_COUNTER_SENT_MESSAGES)?,
            sent_bytes: get(sys::DOCA_COMCH_COUNTER_SENT_BYTES)?,
            recv_messages: get(sys::DOCA_COMCH_COUNTER_RECV_MESSAGES)?,
            recv_bytes: get(sys::DOCA_COMCH_COUNTER_RECV_BYTES)?,
        })
    }

    /// `doca_comch_connection_set_user_data`.
    #[doc(alias = "doca_comch_connection_set_user_data")]
    pub fn set_user_data(&self, conn: Connection, data: impl Into<UserData>) -> Result<()> {
        self.inner.check(conn)?;
        doca!(doca_comch_connection_set_user_data(
            conn.raw,
            sys::doca_data {
                u64_: data.into().raw()
            }
        ))
    }

    /// `doca_comch_connection_get_user_data`.
    #[doc(alias = "doca_comch_connection_get_user_data")]
    pub fn user_data(&self, conn: Connection) -> Result<UserData> {
        self.inner.check(conn)?;
        // SAFETY: a live connection of this context.
        Ok(UserData::from_raw(crate::data_bits(unsafe {
            sys::doca_comch_connection_get_user_data(conn.raw)
        })))
    }
}

/// The endpoint a connection belongs to, through its context's user data.
///
/// # Safety
/// `conn` is a live connection of a context this crate configured (user data = its `Inner`).
unsafe fn owner<'a>(conn: *mut sys::doca_comch_connection) -> Option<&'a Inner> {
    // SAFETY: per the contract, a live connection.
    let server = unsafe { sys::doca_comch_server_get_server_ctx(conn) };
    let ctx = if server.is_null() {
        // SAFETY: as above.
        let client = unsafe { sys::doca_comch_client_get_client_ctx(conn) };
        // SAFETY: a live client.
        unsafe { sys::doca_comch_client_as_ctx(client) }
    } else {
        // SAFETY: a live server.
        unsafe { sys::doca_comch_server_as_ctx(server) }
    };
    let mut data = sys::doca_data { u64_: 0 };
    // SAFETY: a live context.
    if unsafe { sys::doca_ctx_get_user_data(ctx, &mut data) } != sys::DOCA_SUCCESS {
        return None;
    }
    // SAFETY: the context's user data is its boxed Inner, alive while the context is.
    unsafe { data.ptr.cast::<Inner>().as_ref() }
}

pub(super) unsafe extern "C" fn on_message(
    _event: *mut sys::doca_comch_event_msg_recv,
    buf: *mut u8,
    len: u32,
    conn: *mut sys::doca_comch_connection,
) {
    // SAFETY: called by DOCA with a live connection of ours.
    let Some(inner) = (unsafe { owner(conn) }) else {
        return;
    };
    let Some(c) = inner.known(conn, true) else {
        return;
    };
    let msg = if len == 0 {
        &[][..]
    } else {
        // SAFETY: DOCA's buffer of `len` bytes, valid during the callback.
        unsafe { std::slice::from_raw_parts(buf, len as usize) }
    };
    inner
        .pe
        .catch(|| match inner.cbs.borrow_mut().message.as_mut() {
            Some(cb) => cb(&inner.channel(), c, msg),
            None => inner.queue(|| Event::Message {
                conn: c,
                msg: inner.msg_pool.take(msg, inner.max_msg_size as usize),
            }),
        });
}

pub(super) unsafe extern "C" fn on_connect(
    _event: *mut sys::doca_comch_event_connection_status_changed,
    conn: *mut sys::doca_comch_connection,
    ok: u8,
) {
    // SAFETY: called by DOCA with a live connection of ours.
    let Some(inner) = (unsafe { owner(conn) }) else {
        return;
    };
    let Some(c) = inner.known(conn, true) else {
        return;
    };
    if ok == 0 {
        inner.forget(c);
    }
    inner
        .pe
        .catch(|| match inner.cbs.borrow_mut().connected.as_mut() {
            Some(cb) => cb(&inner.channel(), c, ok != 0),
            None if ok != 0 => inner.queue(|| Event::Connected { conn: c }),
            None => inner.queue(|| Event::ConnectFailed { conn: c }),
        });
}

pub(super) unsafe extern "C" fn on_disconnect(
    _event: *mut sys::doca_comch_event_connection_status_changed,
    conn: *mut sys::doca_comch_connection,
    ok: u8,
) {
    // SAFETY: called by DOCA with a live connection of ours.
    let Some(inner) = (unsafe { owner(conn) }) else {
        return;
    };
    let Some(c) = inner.known(conn, false) else {
        return;
    };
    inner.forget(c);
    inner
        .pe
        .catch(|| match inner.cbs.borrow_mut().disconnected.as_mut() {
            Some(cb) => cb(&inner.channel(), c, ok != 0),
            None => inner.queue(|| Event::Disconnected { conn: c }),
        });
}

unsafe fn consumer_event(conn: *mut sys::doca_comch_connection, id: u32, created: bool) {
    // SAFETY: called by DOCA with a live connection of ours.
    let Some(inner) = (unsafe { owner(conn) }) else {
        return;
    };
    let Some(c) = inner.known(conn, true) else {
        return;
    };
    inner.pe.catch(|| {
        let mut cbs = inner.cbs.borrow_mut();
        let cb = if created {
            cbs.consumer_created.as_mut()
        } else {
            cbs.consumer_expired.as_mut()
        };
        match cb {
            Some(cb) => cb(&inner.channel(), c, id),
            None if created => inner.queue(|| Event::ConsumerNew { conn: c, id }),
            None => inner.queue(|| Event::ConsumerExpired { conn: c, id }),
        }
    });
}

pub(super) unsafe extern "C" fn on_consumer_created(
    _event: *mut sys::doca_comch_event_consumer,
    conn: *mut sys::doca_comch_connection,
    id: u32,
) {
    // SAFETY: forwarded from DOCA.
    unsafe { consumer_event(conn, id, true) }
}

pub(super) unsafe extern "C" fn on_consumer_expired(
    _event: *mut sys::doca_comch_event_consumer,
    conn: *mut sys::doca_comch_connection,
    id: u32,
) {
    // SAFETY: forwarded from DOCA.
    unsafe { consumer_event(conn, id, false) }
}

unsafe fn send_finished(task: *mut sys::doca_comch_task_send, slot: u64, ctx_data: sys::doca_data) {
    // SAFETY: the context's user data is its boxed Inner.
    let inner = unsafe { &*ctx_data.ptr.cast::<Inner>() };
    // SAFETY: a completed task of ours.
    let t = unsafe { sys::doca_comch_task_send_as_task(task) };
    // SAFETY: as above.
    let raw = unsafe { sys::doca_task_get_status(t) };
    // SAFETY: completed, so ours to free.
    unsafe { sys::doca_task_free(t) };
    let status = ErrorCode::from_raw(raw as i32).unwrap_or(ErrorCode::Unknown);
    let user_data = inner
        .slots
        .borrow()
        .get(slot as usize)
        .map_or(0, |s| s.user_data);
    inner.free.borrow_mut().push(slot as u32);
    let done = SendCompletion {
        user_data: UserData::from_raw(user_data),
        status,
    };
    inner
        .pe
        .catch(|| match inner.cbs.borrow_mut().send.as_mut() {
            Some(cb) => cb(&inner.channel(), done),
            None => inner.queue(|| Event::SendDone(done)),
        });
}

pub(super) unsafe extern "C" fn on_send_done(
    task: *mut sys::doca_comch_task_send,
    task_data: sys::doca_data,
    ctx_data: sys::doca_data,
) {
    // SAFETY: forwarded from DOCA.
    unsafe { send_finished(task, crate::data_bits(task_data), ctx_data) }
}

pub(super) unsafe extern "C" fn on_send_failed(
    task: *mut sys::doca_comch_task_send,
    task_data: sys::doca_data,
    ctx_data: sys::doca_data,
) {
    // SAFETY: forwarded from DOCA.
    unsafe { send_finished(task, crate::data_bits(task_data), ctx_data) }
}

/// The program's handle of a connection DOCA handed out (a client's).
pub(super) fn register_connection(
    inner: &Inner,
    raw: *mut sys::doca_comch_connection,
) -> Result<Connection> {
    match inner.known(raw, true) {
        Some(c) => Ok(c),
        None => bail!(Unexpected, "connection table"),
    }
}

/// Drops every connection (the context stopped).
pub(super) fn forget_all(inner: &Inner) {
    inner.live.borrow_mut().clear();
}

/// The configuration both builders share.
pub(super) struct Config {
    pub max_msg_size: Option<u32>,
    pub recv_queue_size: Option<u32>,
    pub num_send_tasks: u32,
    pub cbs: Callbacks,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_msg_size: None,
            recv_queue_size: None,
            num_send_tasks: 64,
            cbs: Callbacks::default(),
        }
    }
}

/// Builder methods for the callbacks and limits both sides share.
macro_rules! ctrl_builder_methods {
    () => {
        /// `doca_comch_*_set_max_msg_size` (default: the device's maximum). Server and client
        /// must agree, or the connection is refused on both sides.
        #[doc(alias = "doca_comch_server_set_max_msg_size")]
        #[doc(alias = "doca_comch_client_set_max_msg_size")]
        pub fn max_msg_size(mut self, size: u32) -> Self {
            self.config.max_msg_size = Some(size);
            self
        }

        /// `doca_comch_*_set_recv_queue_size`: most messages delivered per connection per
        /// progress.
        #[doc(alias = "doca_comch_server_set_recv_queue_size")]
        #[doc(alias = "doca_comch_client_set_recv_queue_size")]
        pub fn recv_queue_size(mut self, size: u32) -> Self {
            self.config.recv_queue_size = Some(size);
            self
        }

        /// `doca_comch_*_task_send_set_conf`: how many sends may be in flight (default 64).
        pub fn num_send_tasks(mut self, n: u32) -> Self {
            self.config.num_send_tasks = n;
            self
        }

        /// The message receive event: `(channel, connection, message)`; the message is valid
        /// during the call only.
        #[doc(alias = "doca_comch_server_event_msg_recv_register")]
        #[doc(alias = "doca_comch_client_event_msg_recv_register")]
        pub fn on_message(
            mut self,
            cb: impl FnMut(&$crate::comch::Channel<'_>, $crate::comch::Connection, &[u8]) + 'static,
        ) -> Self {
            self.config.cbs.message = Some(Box::new(cb));
            self
        }

        /// Send task completions (success or error).
        pub fn on_send_complete(
            mut self,
            cb: impl FnMut(&$crate::comch::Channel<'_>, $crate::comch::SendCompletion) + 'static,
        ) -> Self {
            self.config.cbs.send = Some(Box::new(cb));
            self
        }

        /// Consumer events: the peer created (`true`) or destroyed (`false`) a consumer with
        /// this id on the connection.
        #[doc(alias = "doca_comch_server_event_consumer_register")]
        #[doc(alias = "doca_comch_client_event_consumer_register")]
        pub fn on_consumer(
            mut self,
            cb: impl FnMut(&$crate::comch::Channel<'_>, $crate::comch::Connection, u32, bool)
                + 'static,
        ) -> Self {
            let cb = std::rc::Rc::new(std::cell::RefCell::new(cb));
            let created = cb.clone();
            self.config.cbs.consumer_created =
                Some(Box::new(move |ch, c, id| (created.borrow_mut())(ch, c, id, true)));
            self.config.cbs.consumer_expired =
                Some(Box::new(move |ch, c, id| (cb.borrow_mut())(ch, c, id, false)));
            self
        }

        /// `doca_ctx_set_state_changed_cb`.
        #[doc(alias = "doca_ctx_set_state_changed_cb")]
        pub fn on_state_changed(
            mut self,
            cb: impl Fn($crate::ctx::CtxState, $crate::ctx::CtxState) + 'static,
        ) -> Self {
            self.config.cbs.state = Some(Box::new(cb));
            self
        }
    };
}
pub(super) use ctrl_builder_methods;
