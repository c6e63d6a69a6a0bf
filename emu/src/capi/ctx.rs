//! `doca_ctx.h`: the state machine every context follows, and the calls that work on any
//! context (`struct doca_ctx *` is the handle of a consumer or producer).

use super::context::context;
use super::registry::CallbackFrame;
use super::types::*;
use super::{call, out};
use crate::ctx::CtxState;
use crate::error::bail;

/// `doca_ctx_start`: `DOCA_ERROR_IN_PROGRESS` for a context that finishes starting through
/// progress (a Comch client: the state callback reports RUNNING once it is connected).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_ctx_start(ctx: *mut doca_ctx) -> doca_error_t {
    let mut running = true;
    let rc = call("doca_ctx_start", || {
        let _frame = CallbackFrame::enter();
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
        let _frame = CallbackFrame::enter();
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
