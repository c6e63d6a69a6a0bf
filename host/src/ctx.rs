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

/// How long a context may take to finish stopping before teardown gives up on it.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// After a start that answered `IN_PROGRESS`: progress on `pe` until the context is RUNNING.
/// A context that falls back to IDLE failed to start (the soft device's last error says why).
pub(crate) fn progress_until_running(ctx: *mut sys::doca_ctx, pe: &Pe) -> Result<()> {
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

/// `doca_ctx_stop`, then progress on `pe` (when the stop is `IN_PROGRESS`) until the context is
/// idle. `before_progress` runs first, to free tasks the owner holds.
pub(crate) fn stop_until_idle(ctx: *mut sys::doca_ctx, pe: Option<&Pe>) -> Result<()> {
    if state(ctx)? == CtxState::Idle {
        return Ok(());
    }
    // SAFETY: a live context this crate owns.
    let rc = unsafe { sys::doca_ctx_stop(ctx) };
    match rc {
        sys::DOCA_SUCCESS => return Ok(()),
        sys::DOCA_ERROR_IN_PROGRESS => {}
        _ => return Err(crate::error::from_call("doca_ctx_stop", rc)),
    }
    let Some(pe) = pe else {
        bail!(
            BadState,
            "the context is stopping and has no progress engine to finish on"
        );
    };
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
