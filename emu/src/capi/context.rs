//! What every context is (`struct doca_ctx *` is the handle of a consumer, producer, server or
//! client): DOCA's state machine and its callback ([`CtxCore`]), the [`Context`] calls, and the
//! lookup of a context handle through the view its type registered. A leaf of the C API: the
//! generic `doca_ctx_*` calls (ctx.rs), the PE and the task pools use it without naming a
//! context type.

use super::registry::{self, Kind};
use super::types::*;
use crate::ctx::CtxState;
use crate::error::{ErrorCode, Result, bail, err};
use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::rc::Rc;
use std::sync::OnceLock;

/// What every context has: DOCA's state machine, its user data and callback, its PE and where
/// its datapath runs.
pub(crate) struct CtxCore {
    /// The context's own C handle, passed to its callbacks.
    pub handle: Cell<*mut c_void>,
    state: Cell<CtxState>,
    pub user_data: Cell<doca_data>,
    pub state_cb: Cell<doca_ctx_state_changed_callback_t>,
    /// The connected PE's handle (null: none).
    pub pe: Cell<*mut c_void>,
    /// The connected PE's count of contexts in STOPPING (which progress must finish), shared
    /// with the PE.
    pub pe_stopping: RefCell<Option<Rc<Cell<usize>>>>,
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
            pe_stopping: RefCell::new(None),
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
            if let Some(stopping) = self.pe_stopping.borrow().as_ref() {
                let n = stopping.get();
                stopping.set(if next == CtxState::Stopping {
                    n + 1
                } else {
                    n.saturating_sub(1)
                });
            }
        }
        if prev != next {
            if let Some(cb) = self.state_cb.get() {
                debug_assert!(crate::capi::registry::in_callback_frame());
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

/// What the generic context calls need from a consumer, producer, server or client.
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

/// How a registered context of each kind is seen as a [`Context`]: the generic calls dispatch
/// through it, so this module names no context type. Each context type registers its view when
/// it makes its first object ([`register_view`]).
type ContextView = fn(*const c_void) -> *const dyn Context;

/// The context kinds, in the order of [`VIEWS`].
const KINDS: [Kind; 6] = [
    Kind::Consumer,
    Kind::Producer,
    Kind::ComchServer,
    Kind::ComchClient,
    Kind::SyncEvent,
    Kind::Dma,
];

static VIEWS: [OnceLock<ContextView>; 6] = [const { OnceLock::new() }; 6];

fn view_of<T: Context + 'static>(obj: *const c_void) -> *const dyn Context {
    obj.cast::<T>() as *const dyn Context
}

/// Makes contexts of type `T`, registered under `kind`, reachable by the generic calls.
pub(crate) fn register_view<T: Context + 'static>(kind: Kind) {
    if let Some(i) = KINDS.iter().position(|&k| k == kind) {
        VIEWS[i].get_or_init(|| view_of::<T>);
    }
}

/// The context behind a `struct doca_ctx *`.
pub(crate) fn context<'a>(ptr: *const doca_ctx, param: &str) -> Result<&'a dyn Context> {
    let (kind, obj) = registry::resolve(ptr.cast(), param, &KINDS)?;
    let i = KINDS
        .iter()
        .position(|&k| k == kind)
        .expect("resolved to a context kind");
    let view = VIEWS[i]
        .get()
        .ok_or_else(|| err(ErrorCode::Driver, "a context kind without its view"))?;
    // SAFETY: the registry resolved a live object of this kind, and the kind's view casts to
    // the type registered under it.
    Ok(unsafe { &*view(obj) })
}
