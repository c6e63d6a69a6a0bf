//! DOCA's context states, which the host API and the soft device both speak.

use core::fmt;

/// `enum doca_ctx_states`: IDLE → STARTING → RUNNING → STOPPING → IDLE.
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
    /// Stopping: outstanding work drains (tasks complete with errors), then idle
    /// (`DOCA_CTX_STATE_STOPPING`).
    Stopping = 3,
}

impl CtxState {
    /// The state with DOCA's number `raw`, if there is one.
    pub const fn from_raw(raw: u32) -> Option<Self> {
        match raw {
            0 => Some(CtxState::Idle),
            1 => Some(CtxState::Starting),
            2 => Some(CtxState::Running),
            3 => Some(CtxState::Stopping),
            _ => None,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_docas_and_round_trip() {
        for (state, raw) in [
            (CtxState::Idle, 0),
            (CtxState::Starting, 1),
            (CtxState::Running, 2),
            (CtxState::Stopping, 3),
        ] {
            assert_eq!(state as u32, raw);
            assert_eq!(CtxState::from_raw(raw), Some(state));
        }
        assert_eq!(CtxState::from_raw(4), None);
    }
}
