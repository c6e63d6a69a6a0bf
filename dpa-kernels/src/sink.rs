//! The sink kernel: consumes messages without answering, for one-way throughput.

use dpakit_dev::abi::args::MsgqPathArgs;
use dpakit_dev::{serve, thread_kernel};

thread_kernel! {
    /// Takes every waiting message, acks the completions and gives the credits back in one batch
    /// each, and counts the messages in the `ServeState` at the thread's local storage (`sends`
    /// counts messages consumed): [`serve::sink`]. Only the consumer half of the
    /// [`MsgqPathArgs`] is used.
    pub SINK: fn sink(args: &MsgqPathArgs) {
        serve::sink(args)
    }
}
