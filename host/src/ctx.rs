//! The context state machine every DOCA context follows (`doca_ctx`).

use crate::error::{Result, bail, doca};
use crate::pe::Pe;
use dpakit_sys as sys;
use std::time::{Duration, Instant};

pub use dpakit_abi::CtxState;

/// The state-changed callback of a context: `(previous, next)`.
pub(crate) type StateChangedCb = Box<dyn Fn(CtxState, CtxState)>;

/// The state DOCA reports as `raw`. A number outside the enum is taken as STOPPING, the state
/// a context only leaves through progress, so callers keep progressing rather than act on it.
pub(crate) fn state_from_raw(raw: u32) -> CtxState {
    CtxState::from_raw(raw).unwrap_or(CtxState::Stopping)
}

/// `doca_ctx_get_state`.
pub(crate) fn state(ctx: *mut sys::doca_ctx) -> Result<CtxState> {
    let mut raw = 0;
    doca!(doca_ctx_get_state(ctx, &mut raw))?;
    Ok(state_from_raw(raw))
}

/// `doca_ctx_get_num_inflight_tasks`: tasks submitted whose completion has not run yet, as the
/// context counts them (the safe types keep no count of their own).
pub(crate) fn num_inflight(ctx: *mut sys::doca_ctx) -> u32 {
    let mut n = 0;
    // A live context: the call answers.
    let _ = doca!(doca_ctx_get_num_inflight_tasks(ctx, &mut n));
    n as u32
}

/// How long a context may take to finish stopping before teardown gives up on it.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// After a start that answered `IN_PROGRESS`: progress on `pe` until the context is RUNNING.
/// A context that falls back to IDLE failed to start (the soft device's last error says why).
pub(crate) fn progress_until_running(ctx: *mut sys::doca_ctx, pe: &Pe) -> Result<()> {
    pe.require_outside_callback("starting a context that becomes RUNNING through progress")?;
    let deadline = Instant::now() + STOP_TIMEOUT;
    loop {
        match state(ctx)? {
            CtxState::Running => return Ok(()),
            CtxState::Idle => bail!(
                ConnectionAborted,
                "the context went back to IDLE while starting (its peer is gone or does not \
                 progress)"
            ),
            _ => {}
        }
        if !pe.progress() {
            if Instant::now() > deadline {
                bail!(
                    TimeOut,
                    "the context did not reach RUNNING within {STOP_TIMEOUT:?} of progress"
                );
            }
            std::thread::yield_now();
        }
    }
}

/// `doca_ctx_stop`, then progress on `pe` until the context is IDLE. Inside a callback of `pe`
/// it returns once the stop is requested: the context finishes stopping through later progress
/// (waiting here would progress the PE from its own callback). A context that is not running
/// answers as the C API does (`BAD_STATE` when it is IDLE).
pub(crate) fn stop(ctx: *mut sys::doca_ctx, pe: Option<&Pe>) -> Result<()> {
    // SAFETY: a live context this crate owns.
    let rc = unsafe { sys::doca_ctx_stop(ctx) };
    match rc {
        sys::DOCA_SUCCESS => return Ok(()),
        sys::DOCA_ERROR_IN_PROGRESS => {}
        _ => return Err(crate::error::from_call("doca_ctx_stop", rc)),
    }
    match pe {
        Some(pe) if pe.in_callback() => Ok(()),
        Some(pe) => progress_until_idle(ctx, pe),
        None => bail!(
            BadState,
            "the context is stopping and has no progress engine to finish on"
        ),
    }
}

/// [`stop`], unless the context is IDLE already (a teardown's first step).
fn stop_unless_idle(ctx: *mut sys::doca_ctx, pe: Option<&Pe>) -> Result<()> {
    match state(ctx)? {
        CtxState::Idle => Ok(()),
        _ => stop(ctx, pe),
    }
}

/// Progress on `pe` until the context is IDLE, for at most [`STOP_TIMEOUT`].
fn progress_until_idle(ctx: *mut sys::doca_ctx, pe: &Pe) -> Result<()> {
    let deadline = Instant::now() + STOP_TIMEOUT;
    while state(ctx)? != CtxState::Idle {
        if !pe.progress() {
            if Instant::now() > deadline {
                bail!(
                    TimeOut,
                    "the context did not reach IDLE within {STOP_TIMEOUT:?} of progress"
                );
            }
            std::thread::yield_now();
        }
    }
    Ok(())
}

/// Ends a context on the CPU in DOCA's order: stopped (unless IDLE), progressed on `pe` until
/// IDLE, then `destroy`ed; `keep` — what its callbacks reach through the context's user data,
/// and what must outlive it — is dropped last. Called inside a callback of `pe` (a program
/// dropping an endpoint from its own callback, or another context's), the stop is requested at
/// once and the rest runs when the outermost progress call returns, after every frame that ran
/// the callback unwound: nothing a callback still uses is freed under it, and the PE is never
/// progressed from its own callback. Failures are printed (`what` names the object): a
/// destructor has no caller to tell.
pub(crate) fn teardown<K: 'static>(
    ctx: *mut sys::doca_ctx,
    pe: &Pe,
    what: &'static str,
    destroy: impl FnOnce() -> Result<()> + 'static,
    keep: K,
) {
    let report = move |step: &str, e: &crate::Error| {
        eprintln!("dpakit: {what} teardown: {step}: {e}");
    };
    if let Err(e) = stop_unless_idle(ctx, Some(pe)) {
        report("doca_ctx_stop", &e);
        if !matches!(state(ctx), Ok(CtxState::Idle)) {
            // It cannot be destroyed, and its callbacks may still run: what they reach is
            // leaked rather than freed under them.
            std::mem::forget(keep);
            return;
        }
    }
    let finish_pe = pe.clone();
    pe.defer_teardown(Box::new(move || {
        match progress_until_idle(ctx, &finish_pe) {
            Ok(()) => {
                if let Err(e) = destroy() {
                    report("destroy", &e);
                }
                drop(keep);
            }
            Err(e) => {
                // Destroying a context that is not IDLE fails, and its callbacks may still run:
                // what they reach is leaked rather than freed under them.
                report("progress until IDLE", &e);
                std::mem::forget(keep);
            }
        }
    }));
}

/// Ends a context whose datapath is on the DPA (no PE, no callbacks): stopped unless IDLE, then
/// `destroy`ed. Failures are printed, as in [`teardown`].
pub(crate) fn teardown_without_pe(
    ctx: *mut sys::doca_ctx,
    what: &str,
    destroy: impl FnOnce() -> Result<()>,
) {
    let result = stop_unless_idle(ctx, None)
        .map_err(|e| ("doca_ctx_stop", e))
        .and_then(|()| destroy().map_err(|e| ("destroy", e)));
    if let Err((step, e)) = result {
        eprintln!("dpakit: {what} teardown: {step}: {e}");
    }
}
