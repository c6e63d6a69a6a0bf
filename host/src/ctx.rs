//! The context state machine every DOCA context follows (`doca_ctx`).

use crate::error::{Error, Result, bail, doca};
use crate::pe::Pe;
use dpakit_sys as sys;
use std::fmt;
use std::time::{Duration, Instant};

/// `enum doca_ctx_states`.
#[doc(alias = "doca_ctx_states")]
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CtxState {
    /// Configurable; not started (`DOCA_CTX_STATE_IDLE`).
    Idle = 0,
    /// Started, finishing through progress (`DOCA_CTX_STATE_STARTING`).
    Starting = 1,
    /// Running: tasks may be allocated and submitted (`DOCA_CTX_STATE_RUNNING`).
    Running = 2,
    /// Stopping: outstanding tasks complete with errors, then idle (`DOCA_CTX_STATE_STOPPING`).
    Stopping = 3,
}

impl CtxState {
    pub(crate) fn from_raw(raw: u32) -> Self {
        match raw {
            0 => CtxState::Idle,
            1 => CtxState::Starting,
            2 => CtxState::Running,
            _ => CtxState::Stopping,
        }
    }
}

impl fmt::Display for CtxState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CtxState::Idle => "IDLE",
            CtxState::Starting => "STARTING",
            CtxState::Running => "RUNNING",
            CtxState::Stopping => "STOPPING",
        })
    }
}

/// The state-changed callback of a context: `(previous, next)`.
pub(crate) type StateChangedCb = Box<dyn Fn(CtxState, CtxState)>;

/// `doca_ctx_get_state`.
pub(crate) fn state(ctx: *mut sys::doca_ctx) -> Result<CtxState> {
    let mut raw = 0;
    doca!(doca_ctx_get_state(ctx, &mut raw))?;
    Ok(CtxState::from_raw(raw))
}

/// How long a context may take to finish stopping before teardown gives up on it.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

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
        _ => return Err(Error::from_call("doca_ctx_stop", rc)),
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
