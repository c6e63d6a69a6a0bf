//! The sink kernel: consumes messages without answering, for one-way throughput.

use dpakit_dev::abi::args::{MsgqPathArgs, ServeState};
use dpakit_dev::comch::{Consumer, ConsumerCompletion};
use dpakit_dev::{thread, thread_kernel};

thread_kernel! {
    /// Takes every waiting message, acks the completions and gives the credits back in one batch
    /// each, and counts the messages in the [`ServeState`] at the thread's local storage
    /// (`sends` counts messages consumed). Only the consumer half of the [`MsgqPathArgs`] is used.
    pub SINK: fn sink(args: &MsgqPathArgs) {
        let mut completions = ConsumerCompletion::new(args.consumer_completion);
        let mut taken = 0u32;
        while completions.get().is_some() {
            taken += 1;
        }
        if taken > 0 {
            completions.ack(u64::from(taken));
            Consumer::new(args.consumer).ack(taken);
            // SAFETY: a non-zero local storage is this thread's own ServeState.
            if let Some(state) = unsafe { thread::local_storage_mut::<ServeState>() } {
                state.sends = state.sends.wrapping_add(taken);
            }
        }
        completions.request_notification();
        thread::reschedule()
    }
}
