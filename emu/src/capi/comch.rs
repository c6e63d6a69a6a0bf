//! `doca_comch.h`, the part a server and a client share: capability queries, configuration and
//! send tasks (with each server connection's share of them). Delivering what arrives on a
//! connection is in `comch_receive.rs`.

use super::connection::{ConnObj, ConnState, connection};
use super::context::CtxCore;
use super::out;
use super::registry::{Kind, Object};
use super::task::{Task, TaskCore, TaskNames, Tasks};
use super::types::*;
use crate::error::{ErrorCode, Result, bail, err};
use crate::limits::{
    COMCH_DEFAULT_RECV_QUEUE_SIZE, COMCH_MAX_MSG_SIZE, COMCH_MAX_NAME_LEN,
    COMCH_MAX_RECV_QUEUE_SIZE, COMCH_MAX_SEND_TASKS,
};
use dpakit_wire::fast_path::PeerFds;
use dpakit_wire::proto;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::Arc;

/// Send-task configuration (`doca_comch_{server,client}_task_send_set_conf`).
#[derive(Clone, Copy)]
struct SendConf {
    on_success: doca_comch_task_send_completion_cb_t,
    on_error: doca_comch_task_send_completion_cb_t,
    num_tasks: u32,
}

/// Consumer-event callbacks (`doca_comch_{server,client}_event_consumer_register`).
#[derive(Clone, Copy, Default)]
pub(crate) struct ConsumerCbs {
    pub created: doca_comch_event_consumer_cb_t,
    pub expired: doca_comch_event_consumer_cb_t,
}

/// What a server or client has: its context, configuration, send tasks and the completions
/// and messages waiting for the next progress.
pub(crate) struct Endpoint {
    pub core: CtxCore,
    /// "server" or "client", for messages.
    pub role: &'static str,
    /// The `struct doca_dev *` it was created on.
    pub dev: *mut c_void,
    pub name: String,
    pub max_msg_size: Cell<u32>,
    pub recv_queue_size: Cell<u32>,
    send_conf: Cell<Option<SendConf>>,
    pub(super) recv_cb: Cell<doca_comch_event_msg_recv_cb_t>,
    pub consumer_cbs: Cell<ConsumerCbs>,
    pub tasks: Tasks<ComchSendTask>,
    /// Sends written to the socket (or failed), whose callbacks run at the next progress.
    done: RefCell<VecDeque<(u32, doca_error_t)>>,
    pub(super) recv_buf: RefCell<Box<[u8]>>,
    /// Progress passes since the sockets were last looked at (see [`socket_due`]).
    ///
    /// [`socket_due`]: Self::socket_due
    passes: Cell<u32>,
    /// Whether the progress engine asked to sleep since the last pass.
    slept: Cell<bool>,
    /// The descriptors its peers' consumers hold open in this process, and their cap.
    pub(super) peer_fds: Arc<PeerFds>,
}

/// How often the socket of a connection whose control messages go through rings is looked at
/// by a busy progress engine: once every this many passes (and at the first pass after it
/// slept). The socket then carries only wake-ups, disconnections and fast-path
/// announcements, which can wait a few passes; a system call per pass would cost more than the
/// round trip.
const SOCKET_EVERY: u32 = 16;

/// A `struct doca_comch_task_send`.
/// `#[repr(C)]`, core first: see [`Task`].
#[repr(C)]
pub(crate) struct ComchSendTask {
    core: TaskCore,
    ep: *const Endpoint,
    conn: Cell<*mut c_void>,
    msg: Cell<*const u8>,
    len: Cell<u32>,
}

impl Object for ComchSendTask {
    const KIND: Kind = Kind::ComchSendTask;
}

crate::capi::task::task_core_first!(ComchSendTask);

// SAFETY: `#[repr(C)]` with `core` first, checked above.
unsafe impl Task for ComchSendTask {
    fn core(&self) -> &TaskCore {
        &self.core
    }
    fn submit_task(&self) -> Result<()> {
        ComchSendTask::submit(self)
    }
    fn free_task(&self) -> Result<()> {
        ComchSendTask::free(self)
    }
}

impl ComchSendTask {
    fn ep(&self) -> &Endpoint {
        // SAFETY: a task lives in its endpoint's pool, destroyed with the endpoint.
        unsafe { &*self.ep }
    }

    pub(crate) fn submit(&self) -> Result<()> {
        self.ep().submit(self)
    }

    pub(crate) fn free(&self) -> Result<()> {
        self.ep().tasks.free(self)
    }
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
pub(crate) fn check_name(name: &str) -> Result<()> {
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

impl Endpoint {
    pub(crate) fn new(role: &'static str, dev: *mut c_void, name: String) -> Self {
        Self {
            core: CtxCore::new(),
            role,
            dev,
            name,
            max_msg_size: Cell::new(COMCH_MAX_MSG_SIZE as u32),
            recv_queue_size: Cell::new(COMCH_DEFAULT_RECV_QUEUE_SIZE as u32),
            send_conf: Cell::new(None),
            recv_cb: Cell::new(None),
            consumer_cbs: Cell::new(ConsumerCbs::default()),
            tasks: Tasks::new(TaskNames {
                ctx: role,
                tasks: "send",
            }),
            done: RefCell::new(VecDeque::new()),
            recv_buf: RefCell::new(Box::new([])),
            passes: Cell::new(0),
            slept: Cell::new(false),
            peer_fds: PeerFds::for_process(),
        }
    }

    pub(crate) fn set_send_conf(
        &self,
        on_success: doca_comch_task_send_completion_cb_t,
        on_error: doca_comch_task_send_completion_cb_t,
        num_tasks: u32,
    ) -> Result<()> {
        self.core.require_idle("configure send tasks")?;
        if on_success.is_none() || on_error.is_none() {
            bail!(
                InvalidValue,
                "a send task needs both a completion and an error callback"
            );
        }
        if num_tasks == 0 || num_tasks as usize > COMCH_MAX_SEND_TASKS {
            bail!(
                InvalidValue,
                "num_send_tasks {num_tasks} is outside 1..={COMCH_MAX_SEND_TASKS} \
                 (doca_comch_cap_get_max_send_tasks)"
            );
        }
        self.send_conf.set(Some(SendConf {
            on_success,
            on_error,
            num_tasks,
        }));
        Ok(())
    }

    pub(crate) fn set_recv_cb(&self, cb: doca_comch_event_msg_recv_cb_t) -> Result<()> {
        self.core.require_idle("register the receive callback")?;
        if cb.is_none() {
            bail!(InvalidValue, "recv_event_cb is NULL");
        }
        self.recv_cb.set(cb);
        Ok(())
    }

    pub(crate) fn set_consumer_cbs(
        &self,
        created: doca_comch_event_consumer_cb_t,
        expired: doca_comch_event_consumer_cb_t,
    ) -> Result<()> {
        self.core.require_idle("register consumer callbacks")?;
        if created.is_none() || expired.is_none() {
            bail!(
                InvalidValue,
                "both consumer callbacks are needed (new and expired)"
            );
        }
        self.consumer_cbs.set(ConsumerCbs { created, expired });
        Ok(())
    }

    pub(crate) fn set_max_msg_size(&self, size: u32) -> Result<()> {
        self.core.require_idle("set the max message size")?;
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

    pub(crate) fn set_recv_queue_size(&self, size: u32) -> Result<()> {
        self.core.require_idle("set the receive queue size")?;
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

    /// Checks the configuration a start needs and makes the task pool and buffers; returns the
    /// PE the endpoint runs on.
    pub(crate) fn prepare_start<'a>(&self) -> Result<&'a super::pe::PeObj> {
        let role = self.role;
        let Some(conf) = self.send_conf.get() else {
            bail!(
                BadState,
                "configure send tasks before start (doca_comch_{role}_task_send_set_conf)"
            );
        };
        if self.recv_cb.get().is_none() {
            bail!(
                BadState,
                "register a receive callback before start (doca_comch_{role}_event_msg_recv_register)"
            );
        }
        let pe = crate::capi::pe::connected(&self.core, role)?;
        let me: *const Endpoint = self;
        self.tasks.ensure(conf.num_tasks, |index| ComchSendTask {
            core: TaskCore::new(index),
            ep: me,
            conn: Cell::new(std::ptr::null_mut()),
            msg: Cell::new(std::ptr::null()),
            len: Cell::new(0),
        })?;
        let mut done = self.done.borrow_mut();
        done.clear();
        done.reserve(conf.num_tasks as usize);
        *self.recv_buf.borrow_mut() =
            vec![0; self.max_msg_size.get() as usize + proto::OVERHEAD].into_boxed_slice();
        Ok(pe)
    }

    /// `doca_comch_*_task_send_alloc_init`. `sharing`: a server's connections, which share its
    /// send tasks ([`require_share`](Self::require_share)); `None` for a client.
    pub(crate) fn alloc_send(
        &self,
        peer: *mut doca_comch_connection,
        msg: *const c_void,
        len: u32,
        task: *mut *mut doca_comch_task_send,
        sharing: Option<usize>,
    ) -> Result<()> {
        let conn = connection(peer, "peer")?;
        if conn.owner != self.core.handle.get() {
            bail!(
                InvalidValue,
                "the connection belongs to another Comch {}: send on the context it came from",
                self.role
            );
        }
        if conn.state.get() != ConnState::Connected {
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
        if msg.is_null() && len > 0 {
            bail!(InvalidValue, "msg is NULL");
        }
        super::non_null(task, "task")?;
        if let Some(connections) = sharing {
            self.require_share(conn, connections)?;
        }
        let handle = self.tasks.alloc(self.core.state(), |t| {
            t.conn.set(peer.cast());
            t.msg.set(msg.cast());
            t.len.set(len);
            t.core.handle.get()
        })?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(task, "task", handle.cast()) }
    }

    /// A server's connections share its send tasks: one may have at most the pool divided by
    /// the connections outstanding (at least one), so a peer that stops taking cannot hold the
    /// tasks every other peer's answers need; a lone client may use the whole pool.
    /// `NO_MEMORY`, as for an empty pool, past it.
    fn require_share(&self, conn: &ConnObj, connections: usize) -> Result<()> {
        let pool = self.tasks.len();
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

    fn submit(&self, task: &ComchSendTask) -> Result<()> {
        self.tasks.submit(self.core.state(), task, || {
            let conn = connection(task.conn.get().cast(), "the task's connection")
                .map_err(|_| err(ErrorCode::NotConnected, "the task's connection is closed"))?;
            if conn.state.get() != ConnState::Connected {
                bail!(NotConnected, "the task's connection is closed");
            }
            let msg = if task.len.get() == 0 {
                &[][..]
            } else {
                // SAFETY: the program keeps the message valid and unchanged until the task
                // completes (DOCA's rule for send tasks); checked non-null at alloc.
                unsafe { std::slice::from_raw_parts(task.msg.get(), task.len.get() as usize) }
            };
            conn.send(task.core.index, msg, &mut self.done.borrow_mut());
            Ok(())
        })
    }

    /// Runs the callbacks of the sends finished so far; returns how many. What a callback
    /// submits and finishes at once (a socket with room) waits for the next call, so a program
    /// that resubmits in its callback to a peer that keeps reading cannot hold the progress
    /// call.
    pub(crate) fn run_done(&self) -> usize {
        let ready = self.done.borrow().len();
        for n in 0..ready {
            let Some((index, status)) = self.done.borrow_mut().pop_front() else {
                return n;
            };
            self.complete(index, status);
        }
        ready
    }

    pub(crate) fn has_done(&self) -> bool {
        !self.done.borrow().is_empty()
    }

    /// Task `index` finished with `status`: its callback runs.
    pub(crate) fn complete(&self, index: u32, status: doca_error_t) {
        let Some(conf) = self.send_conf.get() else {
            return;
        };
        let Some((handle, data)) = self.tasks.complete(index, status, |_| {}) else {
            return;
        };
        let cb = if status == 0 {
            conf.on_success
        } else {
            conf.on_error
        };
        if let Some(cb) = cb {
            debug_assert!(crate::capi::registry::in_callback_frame());
            // SAFETY: the program's callback with the declared signature; the task is live.
            unsafe { cb(handle.cast(), data, self.core.user_data.get()) };
        }
    }

    /// Writes the sends of `conn` that were waiting for room in its socket.
    pub(crate) fn flush(&self, conn: &ConnObj) {
        conn.flush(&mut self.done.borrow_mut());
    }

    /// A new connection announces its control ring, sized from this endpoint's receive queue
    /// for messages of the max size both sides agreed on.
    pub(crate) fn offer_ring(&self, conn: &ConnObj) {
        conn.offer_ring(self.recv_queue_size.get(), self.max_msg_size.get());
    }

    /// Completes the sends of `conn` its peer has taken from its ring.
    pub(crate) fn reap(&self, conn: &ConnObj) {
        conn.reap(&mut self.done.borrow_mut());
    }

    /// Ends the sends of `conn` not completed (see [`ConnObj::end_pending`]): their callbacks
    /// run at the next progress. `ours`: this side closed the connection in order.
    pub(crate) fn end_pending(&self, conn: &ConnObj, ours: bool) {
        conn.end_pending(ours, &mut self.done.borrow_mut());
    }

    /// Whether this pass looks at the sockets: always while any connection (or handshake)
    /// still uses its socket for control messages (`on_rings` false), else every
    /// [`SOCKET_EVERY`] passes and at the first pass after the progress engine slept (`woke`).
    pub(crate) fn socket_due(&self, on_rings: bool, woke: bool) -> bool {
        let n = self.passes.get().wrapping_add(1);
        self.passes.set(n);
        !on_rings || woke || n % SOCKET_EVERY == 0
    }

    /// The progress engine may sleep: `conn`'s peer wakes it from now on. Whether a message
    /// is there already (then it must not sleep).
    pub(crate) fn arm(&self, conn: &ConnObj) -> bool {
        self.slept.set(true);
        conn.sleep()
    }

    /// At the start of a pass: whether the progress engine slept since the last one (then
    /// its connections' peers need not wake it any more: [`ConnObj::awake`]).
    pub(crate) fn woke(&self) -> bool {
        self.slept.replace(false)
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.done.get_mut().clear();
    }
}
