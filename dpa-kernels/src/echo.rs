//! The echo kernel: every immediate that arrives goes straight back.

use crate::serve::serve;
use dpakit_dev::abi::args::MsgqPathArgs;
use dpakit_dev::log::{LogLevel, log};
use dpakit_dev::{thread, thread_kernel};

thread_kernel! {
    /// Replies to each received immediate with the same bytes.
    ///
    /// `arg` is the device address of a [`MsgqPathArgs`]: the kernel takes each consumer
    /// completion, reads the immediate, replies with post-send-imm-only to the CPU consumer, acks
    /// the completion, re-acks one consumer credit, re-arms the notification and reschedules.
    pub ECHO: fn echo(arg: u64) {
        // SAFETY: the host passes the device address of the MsgqPathArgs it wrote for this
        // thread and keeps it alive while the thread exists.
        let args: &MsgqPathArgs = unsafe { thread::arg_ref(arg) };
        serve(args, |msg, producer, flags| {
            if producer.post_send_imm_only(args.cpu_consumer_id, msg.imm(), flags).is_err() {
                // Cannot happen with a conforming device: an immediate is at most 32 bytes.
                log(LogLevel::Error, c"echo: received immediate longer than 32 bytes");
            }
        })
    }
}
