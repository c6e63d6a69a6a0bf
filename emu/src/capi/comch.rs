//! `doca_comch.h`, the part a server and a client share in the C API: the context, the
//! program's callbacks, the send task pool, and the [`Face`] through which the model's server
//! and client report to them. Every rule of the control path is the model's
//! (`dpakit_model::comch_ctrl`).

use super::connection::{self, Connection, connection};
use super::context::CtxCore;
use super::registry::{Kind, Object};
use super::task::{Task, TaskCore, TaskNames, Tasks};
use super::types::*;
use super::{non_null, out};
use crate::comch_ctrl::Endpoint;
use crate::error::{ErrorCode, Result, bail};
use std::cell::Cell;
use std::ffi::c_void;
use std::os::fd::RawFd;
use std::rc::Rc;

/// Send-task callbacks (`doca_comch_{server,client}_task_send_set_conf`).
#[derive(Clone, Copy)]
struct SendCbs {
    on_success: doca_comch_task_send_completion_cb_t,
    on_error: doca_comch_task_send_completion_cb_t,
}

/// Consumer-event callbacks (`doca_comch_{server,client}_event_consumer_register`).
#[derive(Clone, Copy, Default)]
struct ConsumerCbs {
    created: doca_comch_event_consumer_cb_t,
    expired: doca_comch_event_consumer_cb_t,
}

/// What the C API keeps of a server or a client: the context, the device, the callbacks and
/// the send task pool.
pub(crate) struct CtrlCore {
    pub core: CtxCore,
    /// The `struct doca_dev *` it was created on.
    pub dev: *mut c_void,
    send_cbs: Cell<Option<SendCbs>>,
    recv_cb: Cell<doca_comch_event_msg_recv_cb_t>,
    consumer_cbs: Cell<ConsumerCbs>,
    pub tasks: Tasks<ComchSendTask>,
}

/// A `struct doca_comch_task_send`.
/// `#[repr(C)]`, core first: see [`Task`].
#[repr(C)]
pub(crate) struct ComchSendTask {
    core: TaskCore,
    /// The server's or client's C part and its model endpoint (both in the same registered
    /// object, which outlives its tasks).
    owner: *const CtrlCore,
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
        // SAFETY: a task lives in its owner's pool, destroyed with the owner.
        unsafe { &*self.owner }.tasks.free(self)
    }
}

impl ComchSendTask {
    fn submit(&self) -> Result<()> {
        // SAFETY: a task lives in its owner's pool, destroyed with the owner.
        let (owner, ep) = unsafe { (&*self.owner, &*self.ep) };
        owner.tasks.submit(owner.core.state(), self, || {
            let conn =
                connection(self.conn.get().cast(), "the task's connection").map_err(|_| {
                    crate::error::err(ErrorCode::NotConnected, "the task's connection is closed")
                })?;
            let msg = if self.len.get() == 0 {
                &[][..]
            } else {
                // SAFETY: checked non-null at alloc; the program keeps the message valid and
                // unchanged until the task completes (DOCA's rule for send tasks).
                unsafe { std::slice::from_raw_parts(self.msg.get(), self.len.get() as usize) }
            };
            // SAFETY: the same rule keeps `msg` valid until the completion is reported.
            unsafe { ep.send(conn, self.core.index, msg) }
        })
    }
}

impl CtrlCore {
    pub(crate) fn new(role: &'static str, dev: *mut c_void) -> Self {
        Self {
            core: CtxCore::new(),
            dev,
            send_cbs: Cell::new(None),
            recv_cb: Cell::new(None),
            consumer_cbs: Cell::new(ConsumerCbs::default()),
            tasks: Tasks::new(TaskNames {
                ctx: role,
                tasks: "send",
            }),
        }
    }

    /// `doca_comch_*_task_send_set_conf`.
    pub(crate) fn set_send_conf(
        &self,
        ep: &Endpoint,
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
        ep.set_send_tasks(num_tasks)?;
        self.send_cbs.set(Some(SendCbs {
            on_success,
            on_error,
        }));
        Ok(())
    }

    /// `doca_comch_*_event_msg_recv_register`.
    pub(crate) fn set_recv_cb(&self, cb: doca_comch_event_msg_recv_cb_t) -> Result<()> {
        self.core.require_idle("register the receive callback")?;
        if cb.is_none() {
            bail!(InvalidValue, "recv_event_cb is NULL");
        }
        self.recv_cb.set(cb);
        Ok(())
    }

    /// `doca_comch_*_event_consumer_register`.
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

    /// What a start needs of the C side: callbacks, and the task pool laid out.
    pub(crate) fn prepare_start(&self, role: &str, ep: &Endpoint) -> Result<()> {
        if self.send_cbs.get().is_none() {
            bail!(
                BadState,
                "configure send tasks before start (doca_comch_{role}_task_send_set_conf)"
            );
        }
        if self.recv_cb.get().is_none() {
            bail!(
                BadState,
                "register a receive callback before start (doca_comch_{role}_event_msg_recv_register)"
            );
        }
        crate::capi::pe::connected(&self.core, role)?;
        let owner: *const CtrlCore = self;
        let ep_ptr: *const Endpoint = ep;
        // Set with the callbacks, so never 0 here.
        let num_tasks = ep.send_tasks();
        self.tasks.ensure(num_tasks, |index| ComchSendTask {
            core: TaskCore::new(index),
            owner,
            ep: ep_ptr,
            conn: Cell::new(std::ptr::null_mut()),
            msg: Cell::new(std::ptr::null()),
            len: Cell::new(0),
        })
    }

    /// `doca_comch_*_task_send_alloc_init`, once the model accepted the send (`check`).
    pub(crate) fn alloc_send(
        &self,
        peer: *mut doca_comch_connection,
        msg: *const c_void,
        len: u32,
        task: *mut *mut doca_comch_task_send,
        check: impl FnOnce(&Connection) -> Result<()>,
    ) -> Result<()> {
        let conn = connection(peer, "peer")?;
        check(conn)?;
        if msg.is_null() && len > 0 {
            bail!(InvalidValue, "msg is NULL");
        }
        non_null(task, "task")?;
        let handle = self.tasks.alloc(self.core.state(), |t| {
            t.conn.set(peer.cast());
            t.msg.set(msg.cast());
            t.len.set(len);
            t.core.handle.get()
        })?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(task, "task", handle.cast()) }
    }

    // What both faces do alike.

    pub(crate) fn watch(&self, fd: RawFd) -> Result<()> {
        super::pe::watch(&self.core, fd)
    }

    pub(crate) fn unwatch(&self, fd: RawFd) {
        super::pe::unwatch(&self.core, fd)
    }

    pub(crate) fn polling(&self, on: bool) {
        if let Some(pe) = super::pe::of(&self.core) {
            pe.polling(on);
        }
    }

    /// Gives `conn` a handle.
    pub(crate) fn adopt(&self, conn: &Rc<Connection>) -> Result<*mut c_void> {
        connection::register(conn)
    }

    pub(crate) fn received(&self, conn: &Connection, msg: &[u8]) {
        if let Some(cb) = self.recv_cb.get() {
            debug_assert!(crate::capi::registry::in_callback_frame());
            // SAFETY: the program's callback; the payload lies in the model's receive buffer
            // for the duration of the call, the connection's handle is live.
            unsafe {
                cb(
                    self.core.handle.get().cast(),
                    msg.as_ptr().cast_mut(),
                    msg.len() as u32,
                    conn.handle.get().cast(),
                )
            };
        }
    }

    pub(crate) fn consumer(&self, conn: &Connection, id: u32, created: bool) {
        let cbs = self.consumer_cbs.get();
        let cb = if created { cbs.created } else { cbs.expired };
        if let Some(cb) = cb {
            debug_assert!(crate::capi::registry::in_callback_frame());
            // SAFETY: the program's callback; the connection's handle is live.
            unsafe { cb(self.core.handle.get().cast(), conn.handle.get().cast(), id) };
        }
    }

    /// Task `index` finished with `status`: its callback runs.
    pub(crate) fn send_done(&self, index: u32, status: ErrorCode) {
        self.complete(index, status.raw() as doca_error_t);
    }

    fn complete(&self, index: u32, status: doca_error_t) {
        let Some(cbs) = self.send_cbs.get() else {
            return;
        };
        let Some((handle, data)) = self.tasks.complete(index, status, |_| {}) else {
            return;
        };
        let cb = if status == 0 {
            cbs.on_success
        } else {
            cbs.on_error
        };
        if let Some(cb) = cb {
            debug_assert!(crate::capi::registry::in_callback_frame());
            // SAFETY: the program's callback with the declared signature; the task is live.
            unsafe { cb(handle.cast(), data, self.core.user_data.get()) };
        }
    }

    /// After a progress pass: a STOPPING context's tasks submitted while it stopped complete
    /// with the flush status, and once every task is back `finish` may make it IDLE.
    pub(crate) fn after_progress(&self, finish: impl FnOnce()) -> usize {
        self.tasks.after_progress(
            &self.core,
            |index, status| self.complete(index, status),
            finish,
        )
    }
}

/// The [`Face`] calls a server and a client answer alike, from their [`CtrlCore`].
macro_rules! common_face {
    () => {
        fn state(&self) -> crate::ctx::CtxState {
            self.c.core.state()
        }
        fn transition(&self, next: crate::ctx::CtxState) {
            self.c.core.transition(next)
        }
        fn watch(&self, fd: std::os::fd::RawFd) -> crate::error::Result<()> {
            self.c.watch(fd)
        }
        fn unwatch(&self, fd: std::os::fd::RawFd) {
            self.c.unwatch(fd)
        }
        fn polling(&self, on: bool) {
            self.c.polling(on)
        }
        fn received(&self, conn: &crate::comch_ctrl::Connection, msg: &[u8]) {
            self.c.received(conn, msg)
        }
        fn consumer(&self, conn: &crate::comch_ctrl::Connection, id: u32, created: bool) {
            self.c.consumer(conn, id, created)
        }
        fn send_done(&self, index: u32, status: crate::error::ErrorCode) {
            self.c.send_done(index, status)
        }
    };
}
pub(crate) use common_face;
