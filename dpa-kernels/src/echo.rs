//! The echo kernel: every immediate that arrives goes straight back.

use dpakit_dev::abi::args::MsgqPathArgs;
use dpakit_dev::abi::handles::ComchConsumerHandle;
use dpakit_dev::comch::{Consumer, ConsumerCompletion, Producer};
use dpakit_dev::log::{LogLevel, log};
use dpakit_dev::{rpc_kernel, thread, thread_kernel};

thread_kernel! {
    /// Replies to each received immediate with the same bytes.
    ///
    /// `arg` is the device address of a [`MsgqPathArgs`]. For each message: reply with
    /// post-send-imm-only to the CPU consumer, ack the completion (the immediate is dead after
    /// that, so the reply goes first), and give the consumer its credit back. Then re-arm the
    /// notification and reschedule.
    pub ECHO: fn echo(arg: u64) {
        // SAFETY: the host passes the device address of the MsgqPathArgs it wrote for this
        // thread and keeps it alive while the thread exists.
        let args: &MsgqPathArgs = unsafe { thread::arg_ref(arg) };
        let mut completions = ConsumerCompletion::new(args.consumer_completion);
        let consumer = Consumer::new(args.consumer);
        let producer = Producer::new(args.producer);

        while let Some(msg) = completions.get() {
            let sent = producer.post_send_imm_only(args.cpu_consumer_id, msg.imm(), args.submit_flags);
            if sent.is_err() {
                // Cannot happen with a conforming device: an immediate is at most 32 bytes.
                log(LogLevel::Error, c"echo: received immediate longer than 32 bytes");
            }
            completions.ack(1);
            consumer.ack(1);
        }
        completions.request_notification();
        thread::reschedule()
    }
}

rpc_kernel! {
    /// Posts the first `count` receive credits of a DPA consumer, before any message can arrive.
    pub PREPOST_CREDITS: fn prepost_credits(consumer: u64, count: u64) -> u64 {
        Consumer::new(ComchConsumerHandle(consumer)).ack(count as u32);
        0
    }
}
