//! Argument blocks the host writes into DPA memory for the kit's kernels.
//!
//! A thread kernel receives one `u64`: the device address of its block. The blocks are [`Pod`]
//! so the host can copy them byte for byte (`memcpy` host→device) and the kernel can read them in
//! place.
//!
//! [`Pod`]: crate::Pod

use crate::SubmitFlags;
use crate::handles::{ComchConsumerHandle, ComchProducerHandle, ConsumerCompletionHandle};
use core::mem::size_of;
use static_assertions::const_assert_eq;

crate::pod_struct! {
    /// Handles of one CPU→DPA→CPU path: the DPA consumer and its completion context, the DPA
    /// producer, and the id of the CPU consumer that replies go to.
    #[derive(Debug, PartialEq, Eq, Default)]
    pub struct MsgqPathArgs {
        /// Completion context of the DPA consumer (where received messages appear).
        pub consumer_completion: ConsumerCompletionHandle,
        /// The DPA consumer (to ack credits).
        pub consumer: ComchConsumerHandle,
        /// The DPA producer (to send replies).
        pub producer: ComchProducerHandle,
        /// `doca_comch_consumer_get_id` of the CPU consumer that receives replies.
        pub cpu_consumer_id: u32,
        /// Flags for every reply.
        pub submit_flags: SubmitFlags,
    }
}

const_assert_eq!(size_of::<MsgqPathArgs>(), 32);
