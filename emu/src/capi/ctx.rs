//! `doca_ctx.h`: the state machine every context follows, and the calls that work on any
//! context (`struct doca_ctx *` is the handle of a consumer or producer).

use super::client::ClientObj;
use super::consumer::ConsumerObj;
use super::producer::ProducerObj;
use super::registry::{self, Kind};
use super::server::ServerObj;
use super::types::*;
use super::{call, out};
use crate::ctx::CtxState;
use crate::error::{Result, bail};
use std::cell::Cell;
use std::ffi::c_void;

/// What every context has: DOCA's state machine, its user data and callback, its PE and where
/// its datapath runs.
pub(crate) struct CtxCore {
    /// The context's own C handle, passed to its callbacks.
    pub handle: Cell<*mut c_void>,
    state: Cell<CtxState>,
    pub user_data: Cell<doca_data>,
    state_cb: Cell<doca_ctx_state_changed_callback_t>,
    /// The connected PE's handle (null: none).
    pub pe: Cell<*mut c_void>,
    /// `doca_ctx_set_datapath_on_dpa`: the DPA's handle (null: the CPU).
    pub dpa: Cell<*mut c_void>,
}

impl CtxCore {
    pub(crate) fn new() -> Self {
        Self {
            handle: Cell::new(std::ptr::null_mut()),
            state: Cell::new(CtxState::Idle),
            user_data: Cell::new(doca_data::default()),
            state_cb: Cell::new(None),
            pe: Cell::new(std::ptr::null_mut()),
            dpa: Cell::new(std::ptr::null_mut()),
        }
    }

    pub(crate) fn state(&self) -> CtxState {
        self.state.get()
    }

    /// Moves to `next` and tells the state-changed callback. Nothing of the context may be
    /// borrowed across this call: the callback may call back into it.
    pub(crate) fn transition(&self, next: CtxState) {
        let prev = self.state.replace(next);
        if prev != next && (prev == CtxState::Stopping || next == CtxState::Stopping) {
            // The PE finishes stopping contexts; it only looks while some are.
            if let Ok(pe) = super::pe::pe(self.pe.get().cast(), "pe") {
                let n = pe.stopping.get();
                pe.stopping.set(if next == CtxState::Stopping {
                    n + 1
                } else {
                    n.saturating_sub(1)
                });
            }
        }
        if prev != next {
            if let Some(cb) = self.state_cb.get() {
                // SAFETY: a callback the program registered with this signature; the handle is
                // this context's, live for the duration of the call.
                unsafe {
                    cb(
                        self.user_data.get(),
                        self.handle.get().cast(),
                        prev as doca_ctx_states,
                        next as doca_ctx_states,
                    )
                }
            }
        }
    }

    /// The PE the context is connected to, which a datapath on the CPU needs; BAD_STATE if
    /// there is none. `ctx` names the context in the message.
    pub(crate) fn connected_pe<'a>(&self, ctx: &str) -> Result<&'a super::pe::PeObj> {
        super::pe::pe(self.pe.get().cast(), "pe").map_err(|_| {
            crate::error::err(
                crate::error::ErrorCode::BadState,
                format!("connect the {ctx} to a progress engine first (doca_pe_connect_ctx)"),
            )
        })
    }

    /// `BAD_STATE` unless idle.
    pub(crate) fn require_idle(&self, what: &str) -> Result<()> {
        match self.state() {
            CtxState::Idle => Ok(()),
            s => bail!(
                BadState,
                "cannot {what}: the context is {s}; configure it while IDLE (before doca_ctx_start, \
                 or after it stopped)"
            ),
        }
    }
}

/// What the generic context calls need from a consumer or producer.
pub(crate) trait Context {
    fn core(&self) -> &CtxCore;
    /// Starts from IDLE: `true` if the context is RUNNING now, `false` if it is STARTING and
    /// finishes through progress (a Comch client connecting).
    fn start(&self) -> Result<bool>;
    /// Stops a RUNNING context: `true` if it is IDLE now, `false` if it went to STOPPING and
    /// finishes through progress.
    fn stop(&self) -> Result<bool>;
    /// Tasks submitted and not completed.
    fn inflight(&self) -> usize;
    /// Each progress of its PE while the context asked for polling ([`PeObj::polling`]):
    /// sockets, timers, deferred completions. Returns how many callbacks it ran.
    ///
    /// [`PeObj::polling`]: super::pe::PeObj::polling
    fn poll(&self) -> usize {
        0
    }
    /// Whether `poll` has callbacks to run right now (for the PE's notification handle).
    fn has_pending(&self) -> bool {
        false
    }
    /// After each progress pass of its PE: delivers completions the C layer queued itself and
    /// finishes a stop once nothing is outstanding. Returns how many callbacks it ran.
    fn after_progress(&self) -> usize;
}

/// The context behind a `struct doca_ctx *`.
pub(crate) fn context<'a>(ptr: *const doca_ctx, param: &str) -> Result<&'a dyn Context> {
    let (kind, obj) = registry::resolve(
        ptr.cast(),
        param,
        &[
            Kind::Consumer,
            Kind::Producer,
            Kind::ComchServer,
            Kind::ComchClient,
        ],
    )?;
    // SAFETY: registry slots of these kinds point at live objects of these types.
    Ok(unsafe {
        match kind {
            Kind::Consumer => &*obj.cast::<ConsumerObj>() as &dyn Context,
            Kind::Producer => &*obj.cast::<ProducerObj>() as &dyn Context,
            Kind::ComchServer => &*obj.cast::<ServerObj>() as &dyn Context,
            _ => &*obj.cast::<ClientObj>() as &dyn Context,
        }
    })
}

/// `doca_ctx_start`: `DOCA_ERROR_IN_PROGRESS` for a context that finishes starting through
/// progress (a Comch client: the state callback reports RUNNING once it is connected).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_ctx_start(ctx: *mut doca_ctx) -> doca_error_t {
    let mut running = true;
    let rc = call("doca_ctx_start", || {
        let c = context(ctx, "ctx")?;
        match c.core().state() {
            CtxState::Idle => {
                running = c.start()?;
                Ok(())
            }
            s => bail!(
                BadState,
                "the context is {s}: doca_ctx_start needs an IDLE context (stop it first)"
            ),
        }
    });
    if rc == 0 && !running {
        return crate::error::ErrorCode::InProgress.raw() as doca_error_t;
    }
    rc
}

/// `doca_ctx_stop`: `DOCA_ERROR_IN_PROGRESS` when tasks are outstanding (the context is
/// STOPPING and reaches IDLE in `doca_pe_progress`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_ctx_stop(ctx: *mut doca_ctx) -> doca_error_t {
    call("doca_ctx_stop", || {
        let c = context(ctx, "ctx")?;
        match c.core().state() {
            CtxState::Running | CtxState::Starting => {
                if c.stop()? {
                    Ok(())
                } else {
                    bail!(
                        InProgress,
                        "the context is STOPPING: outstanding tasks complete through their error \
                         callbacks; keep calling doca_pe_progress and free them, and it becomes \
                         IDLE"
                    )
                }
            }
            CtxState::Stopping => bail!(
                InProgress,
                "the context is already STOPPING: call doca_pe_progress until it is IDLE"
            ),
            s => bail!(
                BadState,
                "the context is {s}: only a RUNNING or STARTING context stops"
            ),
        }
    })
}

/// `doca_ctx_get_state`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_ctx_get_state(
    ctx: *const doca_ctx,
    state: *mut doca_ctx_states,
) -> doca_error_t {
    call("doca_ctx_get_state", || {
        let s = context(ctx, "ctx")?.core().state();
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(state, "state", s as doca_ctx_states) }
    })
}

/// `doca_ctx_set_user_data`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_ctx_set_user_data(
    ctx: *mut doca_ctx,
    user_data: doca_data,
) -> doca_error_t {
    call("doca_ctx_set_user_data", || {
        context(ctx, "ctx")?.core().user_data.set(user_data);
        Ok(())
    })
}

/// `doca_ctx_get_user_data`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_ctx_get_user_data(
    ctx: *const doca_ctx,
    user_data: *mut doca_data,
) -> doca_error_t {
    call("doca_ctx_get_user_data", || {
        let data = context(ctx, "ctx")?.core().user_data.get();
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(user_data, "user_data", data) }
    })
}

/// `doca_ctx_set_state_changed_cb`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_ctx_set_state_changed_cb(
    ctx: *mut doca_ctx,
    cb: doca_ctx_state_changed_callback_t,
) -> doca_error_t {
    call("doca_ctx_set_state_changed_cb", || {
        let c = context(ctx, "ctx")?;
        c.core().require_idle("set the state-changed callback")?;
        c.core().state_cb.set(cb);
        Ok(())
    })
}

/// `doca_ctx_set_datapath_on_dpa`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_ctx_set_datapath_on_dpa(
    ctx: *mut doca_ctx,
    dpa_dev: *mut doca_dpa,
) -> doca_error_t {
    call("doca_ctx_set_datapath_on_dpa", || {
        let c = context(ctx, "ctx")?;
        super::dpa::dpa(dpa_dev, "dpa_dev")?;
        c.core().require_idle("move the datapath to the DPA")?;
        if !c.core().pe.get().is_null() {
            bail!(
                BadState,
                "the context is connected to a progress engine, whose datapath is the CPU's: a \
                 context runs on the CPU (PE, tasks) or on the DPA, not both"
            );
        }
        c.core().dpa.set(dpa_dev.cast());
        Ok(())
    })
}

/// `doca_ctx_get_num_inflight_tasks`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_ctx_get_num_inflight_tasks(
    ctx: *const doca_ctx,
    num_inflight_tasks: *mut usize,
) -> doca_error_t {
    call("doca_ctx_get_num_inflight_tasks", || {
        let n = context(ctx, "ctx")?.inflight();
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(num_inflight_tasks, "num_inflight_tasks", n) }
    })
}
