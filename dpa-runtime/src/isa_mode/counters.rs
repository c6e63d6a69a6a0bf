//! What the interpreter counts per thread (or per context's RPCs): the cost model. A leaf, so
//! the thread state that holds the counters needs nothing else of ISA mode.

use crate::sync::Ordering;
use crate::sync::plain::AtomicU64;
use dpakit_abi::device::DEVICE_API;

/// What the interpreter counted for a thread (or a context's RPCs): the cost model.
#[derive(Debug)]
pub(crate) struct Counters {
    pub activations: AtomicU64,
    pub instructions: AtomicU64,
    pub max_instructions: AtomicU64,
    pub calls: [AtomicU64; DEVICE_API.len()],
}

impl Default for Counters {
    fn default() -> Self {
        Self {
            activations: AtomicU64::new(0),
            instructions: AtomicU64::new(0),
            max_instructions: AtomicU64::new(0),
            calls: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// What the interpreter counted for a thread or a context's RPCs, at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// Activations (or RPC calls) run in ISA mode.
    pub activations: u64,
    /// Instructions they retired, device calls not included.
    pub instructions: u64,
    /// The most one activation retired.
    pub max_instructions: u64,
    /// Device calls by function, in `dpakit_abi::device::DEVICE_API` order.
    pub calls: Vec<u64>,
}

impl Profile {
    /// Device calls made, all functions together.
    pub fn device_calls(&self) -> u64 {
        self.calls.iter().sum()
    }
}

impl Counters {
    pub(crate) fn snapshot(&self) -> Profile {
        Profile {
            activations: self.activations.load(Ordering::Relaxed),
            instructions: self.instructions.load(Ordering::Relaxed),
            max_instructions: self.max_instructions.load(Ordering::Relaxed),
            calls: self
                .calls
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .collect(),
        }
    }

    /// Adds `n` retired instructions of the running activation, `total` so far.
    #[inline]
    pub(super) fn retired(&self, n: u64, total: u64) {
        // Read-modify-writes: a context's RPCs may run on several host threads at once.
        self.instructions.fetch_add(n, Ordering::Relaxed);
        self.max_instructions.fetch_max(total, Ordering::Relaxed);
    }
}
