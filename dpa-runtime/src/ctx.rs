//! The DOCA Core context state machine: IDLE → STARTING → RUNNING → STOPPING → IDLE.

use crate::error::{Result, bail};
use crate::sync::{AtomicU8, Ordering};
use std::fmt;
use std::sync::Mutex;

pub use dpakit_abi::CtxState;

/// The state stored as `v` (always one this module stored).
fn state_of(v: u8) -> CtxState {
    CtxState::from_raw(u32::from(v)).unwrap_or(CtxState::Stopping)
}

/// `doca_ctx_state_changed_callback_t`: (previous state, next state).
pub type StateChangedCb = Box<dyn Fn(CtxState, CtxState) + Send + Sync>;

/// One context's state, readable without a lock from any thread, with the callback DOCA calls on
/// every transition.
pub struct StateMachine {
    name: &'static str,
    state: AtomicU8,
    callback: Mutex<Option<StateChangedCb>>,
}

impl fmt::Debug for StateMachine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateMachine")
            .field("name", &self.name)
            .field("state", &self.get())
            .finish()
    }
}

impl StateMachine {
    /// A context named `name` (used in error messages), starting IDLE.
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            state: AtomicU8::new(CtxState::Idle as u8),
            callback: Mutex::new(None),
        }
    }

    /// The current state.
    #[inline]
    pub fn get(&self) -> CtxState {
        state_of(self.state.load(Ordering::Acquire))
    }

    /// `doca_ctx_set_state_changed_cb`: only while IDLE.
    pub fn set_state_changed_cb(&self, cb: StateChangedCb) -> Result<()> {
        self.require_idle("set the state-changed callback")?;
        *self.callback.lock().unwrap_or_else(|p| p.into_inner()) = Some(cb);
        Ok(())
    }

    /// Moves to `next`, calling the callback. The caller has checked the transition is legal.
    pub fn transition(&self, next: CtxState) {
        let prev = state_of(self.state.swap(next as u8, Ordering::AcqRel));
        if prev != next {
            if let Some(cb) = self
                .callback
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
            {
                cb(prev, next);
            }
        }
    }

    /// Fails with BAD_STATE unless IDLE: configuration happens before start.
    pub fn require_idle(&self, what: &str) -> Result<()> {
        match self.get() {
            CtxState::Idle => Ok(()),
            s => bail!(
                BadState,
                "cannot {what}: {} is {s}; configure it while IDLE (before start)",
                self.name
            ),
        }
    }

    /// Fails with BAD_STATE unless RUNNING.
    #[inline]
    pub fn require_running(&self, what: &str) -> Result<()> {
        match self.get() {
            CtxState::Running => Ok(()),
            s => self.not_running(what, s),
        }
    }

    /// [`require_running`](Self::require_running)'s refusal, out of line: the check stays a
    /// load and a compare where it is inlined (the device functions of the layer above).
    #[cold]
    #[inline(never)]
    fn not_running(&self, what: &str, s: CtxState) -> Result<()> {
        bail!(
            BadState,
            "cannot {what}: {} is {s}, not RUNNING (start it first)",
            self.name
        )
    }

    /// IDLE → RUNNING for contexts whose start completes at once (the soft device has nothing
    /// asynchronous to wait for), passing through STARTING so the callback sees every step.
    pub fn start(&self) -> Result<()> {
        self.require_idle("start")?;
        self.transition(CtxState::Starting);
        self.transition(CtxState::Running);
        Ok(())
    }

    /// RUNNING → STOPPING → IDLE.
    pub fn stop(&self) -> Result<()> {
        match self.get() {
            CtxState::Running | CtxState::Stopping => {
                self.transition(CtxState::Stopping);
                self.transition(CtxState::Idle);
                Ok(())
            }
            s => bail!(
                BadState,
                "cannot stop {}: it is {s}, not RUNNING",
                self.name
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpakit_abi::ErrorCode;
    use std::sync::Arc;

    #[test]
    fn start_and_stop_walk_every_state_in_order() {
        let sm = StateMachine::new("test ctx");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        sm.set_state_changed_cb(Box::new(move |a, b| log.lock().unwrap().push((a, b))))
            .unwrap();
        sm.start().unwrap();
        sm.stop().unwrap();
        use CtxState::*;
        assert_eq!(
            *seen.lock().unwrap(),
            [
                (Idle, Starting),
                (Starting, Running),
                (Running, Stopping),
                (Stopping, Idle)
            ]
        );
    }

    #[test]
    fn illegal_transitions_are_bad_state() {
        let sm = StateMachine::new("test ctx");
        assert_eq!(sm.stop().unwrap_err().code(), ErrorCode::BadState);
        sm.start().unwrap();
        assert_eq!(sm.start().unwrap_err().code(), ErrorCode::BadState);
        let e = sm.set_state_changed_cb(Box::new(|_, _| {})).unwrap_err();
        assert_eq!(e.code(), ErrorCode::BadState);
        assert!(e.message().contains("while IDLE"), "{e}");
    }
}
