//! The echo kernel: every immediate that arrives goes straight back.

use dpakit_dev::abi::args::MsgqPathArgs;
use dpakit_dev::thread_kernel;

thread_kernel! {
    /// Replies to each received immediate with the same bytes.
    ///
    /// For each consumer completion of the [`MsgqPathArgs`] it is given, the kernel reads the
    /// immediate, replies with post-send-imm-only to the CPU consumer, acks the completion,
    /// re-acks one consumer credit, re-arms the notification and reschedules
    /// ([`dpakit_dev::serve::echo`]).
    pub ECHO: fn echo(args: &MsgqPathArgs) {
        dpakit_dev::serve::echo(args)
    }
}
