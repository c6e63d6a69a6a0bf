//! The Comch control path (`doca_comch.h`): a server on the Arm side that listens under a name,
//! clients on the host that connect to it, the connections between them, and the control
//! messages they exchange — over the transport's sockets first, then through a ring in shared
//! memory each way (`dpakit_wire::ctrl_ring`).
//!
//! The model owns every rule of the path: names, sizes, handshakes, per-peer caps, the order of
//! messages, the stall and protocol checks. The layer above (DOCA's C API) keeps only what is
//! its own — handles, the task pool, the program's callbacks — and hears of everything that
//! happens through its [`Face`], called directly (no queue, no closure) during progress.
//!
//! Producers and consumers on a connection (the fast path) are here too: [`FastSender`] and
//! [`FastReceiver`], reporting through [`FastFace`] and [`RecvFace`].

mod client;
mod connection;
mod fast_consumer;
mod fast_producer;
mod link;
mod receive;
mod server;

pub use client::Client;
pub use connection::{ConnState, Connection};
pub use fast_consumer::{Announced, FastReceiver, RecvFace};
pub use fast_producer::{FastFace, FastSend, FastSender};
pub use link::Link;
pub use server::Server;

use crate::ctx::CtxState;
use crate::error::{ErrorCode, Result, bail};
use crate::limits::{
    COMCH_DEFAULT_RECV_QUEUE_SIZE, COMCH_MAX_MSG_SIZE, COMCH_MAX_NAME_LEN,
    COMCH_MAX_RECV_QUEUE_SIZE, COMCH_MAX_SEND_TASKS,
};
use dpakit_wire::fast_path::PeerFds;
use dpakit_wire::proto;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::c_void;
use std::os::fd::RawFd;
use std::rc::Rc;
use std::sync::Arc;

/// Sends finished (task index, status) whose completions are reported at the next progress.
pub(crate) type Done = VecDeque<(u32, ErrorCode)>;

/// What a server or client needs from the layer above and tells it. Every call comes from a
/// progress pass, a start or a stop on the endpoint's own thread; the layer may call back into
/// the endpoint from any of them (a callback may stop or destroy it).
pub trait Face {
    /// The context's state (DOCA's state machine is the context's, kept by the layer above).
    fn state(&self) -> CtxState;
    /// Moves the context to `next` (the program's state callback runs).
    fn transition(&self, next: CtxState);
    /// The progress engine's notification handle follows `fd` from now on.
    fn watch(&self, fd: RawFd) -> Result<()>;
    /// Undoes [`watch`](Self::watch).
    fn unwatch(&self, fd: RawFd);
    /// The endpoint needs (`true`) or no longer needs a pass at every progress.
    fn polling(&self, on: bool);
    /// A connection is up (`ok`), or a client that reached the server was refused (`!ok`, the
    /// connection ends after the call): the layer gives it a handle and tells the program. An
    /// error refuses an `ok` connection (no handle to give it).
    fn connected(&self, conn: &Rc<Connection>, ok: bool) -> Result<()>;
    /// A connection ended: the program hears of it, and its handle goes after the call.
    fn disconnected(&self, conn: &Rc<Connection>);
    /// A control message arrived (valid during the call).
    fn received(&self, conn: &Connection, msg: &[u8]);
    /// The peer created (`true`) or destroyed a consumer on the connection.
    fn consumer(&self, conn: &Connection, id: u32, created: bool);
    /// Send task `index` finished with `status`.
    fn send_done(&self, index: u32, status: ErrorCode);
}

/// What draining a connection found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Still connected.
    Open,
    /// The peer disconnected, died or broke the protocol.
    Closed,
}

/// `INVALID_VALUE` unless `name` fits Comch's name rule.
pub fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() >= COMCH_MAX_NAME_LEN {
        bail!(
            InvalidValue,
            "a Comch server name has 1 to {} bytes (doca_comch_cap_get_max_name_len counts {} with \
             the NUL); `{name}` has {}",
            COMCH_MAX_NAME_LEN - 1,
            COMCH_MAX_NAME_LEN,
            name.len()
        );
    }
    Ok(())
}

/// How often the socket of a connection whose control messages go through rings is looked at
/// by a busy progress engine: once every this many passes (and at the first pass after it
/// slept). The socket then carries only wake-ups, disconnections and fast-path
/// announcements, which can wait a few passes; a system call per pass would cost more than the
/// round trip.
const SOCKET_EVERY: u32 = 16;

/// What a server and a client share: name, sizes, the send pool's size, the sends finished and
/// the receive buffer.
pub struct Endpoint {
    /// "server" or "client", for messages.
    pub role: &'static str,
    /// What the layer above calls this endpoint (the C API: its handle); its connections
    /// carry it as their owner.
    pub token: Cell<*mut c_void>,
    name: String,
    max_msg_size: Cell<u32>,
    recv_queue_size: Cell<u32>,
    /// `num_send_tasks` once send tasks are configured (0: not yet).
    send_tasks: Cell<u32>,
    /// Sends written to the socket (or failed), whose completions are reported at the next
    /// progress.
    done: RefCell<Done>,
    recv_buf: RefCell<Box<[u8]>>,
    /// Progress passes since the sockets were last looked at (see [`socket_due`]).
    ///
    /// [`socket_due`]: Self::socket_due
    passes: Cell<u32>,
    /// Whether the progress engine asked to sleep since the last pass.
    slept: Cell<bool>,
    /// The descriptors its peers' consumers hold open in this process, and their cap.
    peer_fds: Arc<PeerFds>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("role", &self.role)
            .field("name", &self.name)
            .finish()
    }
}

impl Endpoint {
    fn new(role: &'static str, name: &str) -> Result<Self> {
        check_name(name)?;
        Ok(Self {
            role,
            token: Cell::new(std::ptr::null_mut()),
            name: name.to_owned(),
            max_msg_size: Cell::new(COMCH_MAX_MSG_SIZE as u32),
            recv_queue_size: Cell::new(COMCH_DEFAULT_RECV_QUEUE_SIZE as u32),
            send_tasks: Cell::new(0),
            done: RefCell::new(VecDeque::new()),
            recv_buf: RefCell::new(Box::new([])),
            passes: Cell::new(0),
            slept: Cell::new(false),
            peer_fds: PeerFds::for_process(),
        })
    }

    /// The server's name (a client's: the name of the server it connects to).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `doca_comch_*_get_max_msg_size`.
    pub fn max_msg_size(&self) -> u32 {
        self.max_msg_size.get()
    }

    /// `doca_comch_*_get_recv_queue_size`.
    pub fn recv_queue_size(&self) -> u32 {
        self.recv_queue_size.get()
    }

    /// The send task pool's size (0 until configured).
    pub fn send_tasks(&self) -> u32 {
        self.send_tasks.get()
    }

    /// `doca_comch_*_task_send_set_conf`'s pool size (checked; the caller checked the state).
    pub fn set_send_tasks(&self, num_tasks: u32) -> Result<()> {
        if num_tasks == 0 || num_tasks as usize > COMCH_MAX_SEND_TASKS {
            bail!(
                InvalidValue,
                "num_send_tasks {num_tasks} is outside 1..={COMCH_MAX_SEND_TASKS} \
                 (doca_comch_cap_get_max_send_tasks)"
            );
        }
        self.send_tasks.set(num_tasks);
        Ok(())
    }

    /// `doca_comch_*_set_max_msg_size` (the caller checked the state).
    pub fn set_max_msg_size(&self, size: u32) -> Result<()> {
        if size == 0 || size as usize > COMCH_MAX_MSG_SIZE {
            bail!(
                InvalidValue,
                "max message size {size} is outside 1..={COMCH_MAX_MSG_SIZE} \
                 (doca_comch_cap_get_max_msg_size)"
            );
        }
        self.max_msg_size.set(size);
        Ok(())
    }

    /// `doca_comch_*_set_recv_queue_size` (the caller checked the state).
    pub fn set_recv_queue_size(&self, size: u32) -> Result<()> {
        if size == 0 || size as usize > COMCH_MAX_RECV_QUEUE_SIZE {
            bail!(
                InvalidValue,
                "receive queue size {size} is outside 1..={COMCH_MAX_RECV_QUEUE_SIZE} \
                 (doca_comch_cap_get_max_recv_queue_size)"
            );
        }
        self.recv_queue_size.set(size);
        Ok(())
    }

    /// Checks what a start needs of the configuration and lays out the buffers.
    fn prepare_start(&self) -> Result<()> {
        let role = self.role;
        let tasks = self.send_tasks.get();
        if tasks == 0 {
            bail!(
                BadState,
                "configure send tasks before start (doca_comch_{role}_task_send_set_conf)"
            );
        }
        let mut done = self.done.borrow_mut();
        done.clear();
        done.reserve(tasks as usize);
        *self.recv_buf.borrow_mut() =
            vec![0; self.max_msg_size.get() as usize + proto::OVERHEAD].into_boxed_slice();
        Ok(())
    }

    /// Checks a send of `len` bytes on `conn` before its task is taken from the pool: the
    /// connection is this endpoint's and connected, the message fits. `sharing`: a server's
    /// connections, which share its send tasks ([`require_share`](Self::require_share)).
    fn check_send(&self, conn: &Connection, len: u32, sharing: Option<usize>) -> Result<()> {
        if conn.owner != self.token.get() {
            bail!(
                InvalidValue,
                "the connection belongs to another Comch {}: send on the context it came from",
                self.role
            );
        }
        if conn.state() != ConnState::Connected {
            bail!(NotConnected, "the connection is closed");
        }
        if len > self.max_msg_size.get() {
            bail!(
                InvalidValue,
                "a {len}-byte message is larger than the max message size, {} bytes \
                 (doca_comch_{}_set_max_msg_size)",
                self.max_msg_size.get(),
                self.role
            );
        }
        if let Some(connections) = sharing {
            self.require_share(conn, connections)?;
        }
        Ok(())
    }

    /// A server's connections share its send tasks: one may have at most the pool divided by
    /// the connections outstanding (at least one), so a peer that stops taking cannot hold the
    /// tasks every other peer's answers need; a lone client may use the whole pool.
    /// `NO_MEMORY`, as for an empty pool, past it.
    fn require_share(&self, conn: &Connection, connections: usize) -> Result<()> {
        let pool = self.send_tasks.get() as usize;
        // A stopped server has none left; its connections are closed and refused before this.
        let share = (pool / connections.max(1)).max(1);
        // What the peer took since this pass began no longer counts.
        self.reap(conn);
        let outstanding = conn.outstanding();
        if outstanding >= share {
            bail!(
                NoMemory,
                "the connection has {outstanding} sends outstanding, its share of the server's \
                 {pool} send tasks among {connections} connections: its peer has not taken them \
                 yet (docs/comch.md, per-peer limits)"
            );
        }
        Ok(())
    }

    /// Sends task `index`'s message on `conn` (submitted: the task pool accepted it).
    /// `NOT_CONNECTED` if the connection closed since the task was allocated.
    ///
    /// # Safety
    /// `msg` stays valid and unchanged until the task's completion is reported (DOCA's rule
    /// for send tasks).
    pub unsafe fn send(&self, conn: &Connection, index: u32, msg: &[u8]) -> Result<()> {
        if conn.state() != ConnState::Connected {
            bail!(NotConnected, "the task's connection is closed");
        }
        conn.send(index, msg, &mut self.done.borrow_mut());
        Ok(())
    }

    /// Reports the sends finished so far; returns how many. What a completion submits and
    /// finishes at once (a socket with room) waits for the next call, so a program that
    /// resubmits in its callback to a peer that keeps reading cannot hold the progress call.
    fn run_done(&self, face: &impl Face) -> usize {
        let ready = self.done.borrow().len();
        for n in 0..ready {
            let Some((index, status)) = self.done.borrow_mut().pop_front() else {
                return n;
            };
            face.send_done(index, status);
        }
        ready
    }

    /// Whether finished sends wait to be reported.
    pub fn has_done(&self) -> bool {
        !self.done.borrow().is_empty()
    }

    /// Writes the sends of `conn` that were waiting for room in its socket.
    fn flush(&self, conn: &Connection) {
        conn.flush(&mut self.done.borrow_mut());
    }

    /// A new connection announces its control ring, sized from this endpoint's receive queue
    /// for messages of the max size both sides agreed on.
    fn offer_ring(&self, conn: &Connection) {
        conn.offer_ring(self.recv_queue_size.get(), self.max_msg_size.get());
    }

    /// Completes the sends of `conn` its peer has taken from its ring.
    fn reap(&self, conn: &Connection) {
        conn.reap(&mut self.done.borrow_mut());
    }

    /// Ends the sends of `conn` not completed (see [`Connection::end_pending`]): reported at
    /// the next progress. `ours`: this side closed the connection in order.
    fn end_pending(&self, conn: &Connection, ours: bool) {
        conn.end_pending(ours, &mut self.done.borrow_mut());
    }

    /// Whether this pass looks at the sockets: always while any connection (or handshake)
    /// still uses its socket for control messages (`on_rings` false), else every
    /// [`SOCKET_EVERY`] passes and at the first pass after the progress engine slept (`woke`).
    fn socket_due(&self, on_rings: bool, woke: bool) -> bool {
        let n = self.passes.get().wrapping_add(1);
        self.passes.set(n);
        !on_rings || woke || n % SOCKET_EVERY == 0
    }

    /// The progress engine may sleep: `conn`'s peer wakes it from now on. Whether a message
    /// is there already (then it must not sleep).
    fn arm(&self, conn: &Connection) -> bool {
        self.slept.set(true);
        conn.sleep()
    }

    /// At the start of a pass: whether the progress engine slept since the last one (then
    /// its connections' peers need not wake it any more: [`Connection::awake`]).
    fn woke(&self) -> bool {
        self.slept.replace(false)
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.done.get_mut().clear();
    }
}
