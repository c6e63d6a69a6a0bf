//! `doca_comch.h`, the part a server and a client share: capability queries, configuration,
//! send tasks and delivering what arrives on a connection to the program's callbacks.

use super::connection::{ConnObj, ConnState, connection};
use super::context::CtxCore;
use super::out;
use super::registry::{Kind, Object};
use super::task::{Task, TaskCore, TaskNames, Tasks};
use super::types::*;
use crate::error::{ErrorCode, Result, bail, err};
use crate::limits::{
    COMCH_CTRL_RING_MAX_DEPTH, COMCH_DEFAULT_RECV_QUEUE_SIZE, COMCH_MAX_MSG_SIZE,
    COMCH_MAX_NAME_LEN, COMCH_MAX_RECV_QUEUE_SIZE, COMCH_MAX_SEND_TASKS,
};
use dpakit_wire::Recv;
use dpakit_wire::fast_path::RemoteConsumer;
use dpakit_wire::proto::{self, Message};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::c_void;
use std::os::fd::OwnedFd;

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
    recv_cb: Cell<doca_comch_event_msg_recv_cb_t>,
    pub consumer_cbs: Cell<ConsumerCbs>,
    pub tasks: Tasks<ComchSendTask>,
    /// Sends written to the socket (or failed), whose callbacks run at the next progress.
    done: RefCell<VecDeque<(u32, doca_error_t)>>,
    recv_buf: RefCell<Box<[u8]>>,
    /// Progress passes since the sockets were last looked at (see [`socket_due`]).
    ///
    /// [`socket_due`]: Self::socket_due
    passes: Cell<u32>,
    /// Whether the progress engine asked to sleep since the last pass.
    slept: Cell<bool>,
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

    /// `doca_comch_*_task_send_alloc_init`.
    pub(crate) fn alloc_send(
        &self,
        peer: *mut doca_comch_connection,
        msg: *const c_void,
        len: u32,
        task: *mut *mut doca_comch_task_send,
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
        let handle = self.tasks.alloc(self.core.state(), |t| {
            t.conn.set(peer.cast());
            t.msg.set(msg.cast());
            t.len.set(len);
            t.core.handle.get()
        })?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(task, "task", handle.cast()) }
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

    /// Runs the callbacks of finished sends; returns how many.
    pub(crate) fn run_done(&self) -> usize {
        let mut n = 0;
        loop {
            let Some((index, status)) = self.done.borrow_mut().pop_front() else {
                return n;
            };
            self.complete(index, status);
            n += 1;
        }
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

    fn violation(&self, why: &str) {
        super::connection::report_violation(self.role, why);
    }

    /// The receive buffer, for a message to be delivered from it. No `RefCell` borrow is held
    /// across the callback, which may call back into the endpoint.
    fn recv_slice<'a>(&self) -> &'a mut [u8] {
        let (buf, cap) = {
            let mut b = self.recv_buf.borrow_mut();
            (b.as_mut_ptr(), b.len())
        };
        // SAFETY: the endpoint's receive buffer, not resized while it runs; one message at a
        // time is read into it and delivered from it.
        unsafe { std::slice::from_raw_parts_mut(buf, cap) }
    }

    /// Hands one control message to the receive callback (valid during the call, as DOCA
    /// documents).
    fn deliver(&self, handle: *mut c_void, conn: &ConnObj, payload: &[u8]) {
        conn.count_recv(payload.len());
        if let Some(cb) = self.recv_cb.get() {
            debug_assert!(crate::capi::registry::in_callback_frame());
            // SAFETY: the program's callback; the payload lies in our buffer.
            unsafe {
                cb(
                    self.core.handle.get().cast(),
                    payload.as_ptr() as *mut u8,
                    payload.len() as u32,
                    handle.cast(),
                )
            };
        }
    }

    /// Delivers what waits in connection `handle`'s control ring: at most `budget` messages.
    pub(crate) fn receive_ring(
        &self,
        handle: *mut c_void,
        conn: &ConnObj,
        budget: u32,
    ) -> (usize, Flow) {
        let mut n = 0;
        while n < budget as usize && conn.state.get() == ConnState::Connected {
            let slice = self.recv_slice();
            match conn.pop(slice) {
                Ok(Some(len)) => self.deliver(handle, conn, &slice[..len]),
                Ok(None) => break,
                Err(e) => {
                    self.violation(e.message());
                    return (n, Flow::Closed);
                }
            }
            n += 1;
        }
        if n > 0 {
            conn.after_pops();
        }
        (n, Flow::Open)
    }

    /// Delivers what arrived on connection `handle`'s socket, at most the receive queue size
    /// of messages per progress (its ring is read by [`receive_ring`](Self::receive_ring)). A
    /// socket message other than a wake-up is handled only after the ring is emptied, so each
    /// side's messages keep their order.
    pub(crate) fn receive(&self, handle: *mut c_void, conn: &ConnObj) -> (usize, Flow) {
        let budget = self.recv_queue_size.get();
        let mut n = 0;
        for _ in 0..budget {
            if conn.state.get() != ConnState::Connected {
                return (n, Flow::Open);
            }
            let slice = self.recv_slice();
            // The descriptors that came with this message, closed with it (on every way out:
            // a peer that is dropped must not leave any of its descriptors open here) unless
            // an announcement keeps them. Only announcements carry any.
            let mut fds: Vec<OwnedFd> = Vec::new();
            let got = conn.sock.recv(slice, &mut fds);
            let len = match got {
                Ok(Recv::Message(len)) => len,
                Ok(Recv::Empty) => return (n, Flow::Open),
                Ok(Recv::Closed) => {
                    // What the peer put in the ring before it closed is delivered, as a
                    // socket's bytes are read to its end.
                    let (m, _) = self.receive_ring(handle, conn, COMCH_CTRL_RING_MAX_DEPTH as u32);
                    return (n + m, Flow::Closed);
                }
                Err(e) => {
                    super::note(&format!("comch {}", self.role), &e);
                    return (n, Flow::Closed);
                }
            };
            let message = proto::decode(&slice[..len]);
            // Only announcements carry descriptors: a consumer's three (checked when it is
            // attached) and a control ring's one.
            let allowed = match &message {
                Ok(Message::ConsumerNew { .. }) | Err(_) => None,
                Ok(Message::CtrlRing { .. }) => Some(1),
                Ok(_) => Some(0),
            };
            if allowed.is_some_and(|k| k != fds.len()) {
                self.violation(&format!(
                    "{} descriptor(s) attached to a message that carries {}",
                    fds.len(),
                    allowed.unwrap_or(0)
                ));
                return (n, Flow::Closed);
            }
            // Ring first: what the peer put there was sent before this.
            if !matches!(message, Ok(Message::Wake)) {
                let (m, flow) = self.receive_ring(handle, conn, COMCH_CTRL_RING_MAX_DEPTH as u32);
                n += m;
                if flow == Flow::Closed {
                    return (n, flow);
                }
            }
            match message {
                Ok(Message::Data(payload)) if payload.len() > self.max_msg_size.get() as usize => {
                    self.violation(&format!(
                        "a {}-byte message, more than the {} bytes agreed",
                        payload.len(),
                        self.max_msg_size.get()
                    ));
                    return (n, Flow::Closed);
                }
                Ok(Message::Data(_)) if conn.rx_active() => {
                    self.violation(
                        "a control message on the socket after its control ring was acknowledged",
                    );
                    return (n, Flow::Closed);
                }
                Ok(Message::Data(payload)) => self.deliver(handle, conn, payload),
                Ok(Message::Wake) => {
                    let (m, flow) = self.receive_ring(handle, conn, budget);
                    n += m;
                    if flow == Flow::Closed {
                        return (n, flow);
                    }
                    continue;
                }
                Ok(Message::CtrlRing { depth, ring_len }) => {
                    let fd = fds.pop().expect("one descriptor, checked above");
                    if let Err(e) = conn.peer_ring(fd, depth, ring_len) {
                        self.violation(e.message());
                        return (n, Flow::Closed);
                    }
                    continue;
                }
                Ok(Message::CtrlRingAck) => {
                    if let Err(e) = conn.ring_acknowledged() {
                        self.violation(e.message());
                        return (n, Flow::Closed);
                    }
                    continue;
                }
                Ok(Message::ConsumerNew {
                    id,
                    depth,
                    imm_len,
                    ring_len,
                    data_len,
                }) => {
                    let added = RemoteConsumer::attach(id, depth, imm_len, ring_len, data_len, fds)
                        .and_then(|c| conn.shared.add_remote(c));
                    if let Err(e) = added {
                        self.violation(e.message());
                        return (n, Flow::Closed);
                    }
                    self.consumer_event(handle, id, true);
                }
                Ok(Message::ConsumerGone { id }) => {
                    if let Err(e) = conn.shared.remove_remote(id) {
                        self.violation(e.message());
                        return (n, Flow::Closed);
                    }
                    self.consumer_event(handle, id, false);
                }
                Ok(Message::Bye) => return (n + 1, Flow::Closed),
                Ok(other) => {
                    let e = err(
                        ErrorCode::InvalidValue,
                        format!("the peer sent {other:?} on an established connection"),
                    );
                    super::note(&format!("comch {}", self.role), &e);
                    return (n, Flow::Closed);
                }
                Err(e) => {
                    super::note(&format!("comch {}", self.role), &e);
                    return (n, Flow::Closed);
                }
            }
            n += 1;
        }
        (n, Flow::Open)
    }

    fn consumer_event(&self, conn: *mut c_void, id: u32, created: bool) {
        let cbs = self.consumer_cbs.get();
        let cb = if created { cbs.created } else { cbs.expired };
        if let Some(cb) = cb {
            debug_assert!(crate::capi::registry::in_callback_frame());
            // SAFETY: the program's callback; the connection handle is live.
            unsafe { cb(self.core.handle.get().cast(), conn.cast(), id) };
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.done.get_mut().clear();
    }
}
