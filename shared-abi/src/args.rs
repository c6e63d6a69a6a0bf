//! Argument blocks the host writes into DPA memory for the kit's kernels.
//!
//! A thread kernel receives one `u64`: the device address of its block. The blocks are [`Pod`]
//! so the host can copy them byte for byte (`memcpy` host→device) and the kernel can read them in
//! place.
//!
//! [`Pod`]: crate::Pod

use crate::SubmitFlags;
use crate::handles::{
    ComchConsumerHandle, ComchProducerHandle, CompletionHandle, ConsumerCompletionHandle,
    MmapHandle,
};
use core::mem::size_of;
use static_assertions::const_assert_eq;

crate::pod_struct! {
    /// Handles of one CPU→DPA→CPU path: the DPA consumer and its completion context, the DPA
    /// producer and its completion context, and the id of the CPU consumer that replies go to.
    #[derive(Debug, PartialEq, Eq, Default)]
    pub struct MsgqPathArgs {
        /// Completion context of the DPA consumer (where received messages appear).
        pub consumer_completion: ConsumerCompletionHandle,
        /// The DPA consumer (to ack credits).
        pub consumer: ComchConsumerHandle,
        /// The DPA producer (to send replies).
        pub producer: ComchProducerHandle,
        /// The DPA completion attached to the producer (drained by the kernel).
        pub producer_completion: CompletionHandle,
        /// `doca_comch_consumer_get_id` of the CPU consumer that receives replies.
        pub cpu_consumer_id: u32,
        /// Flags for every reply.
        pub submit_flags: SubmitFlags,
    }
}

const_assert_eq!(size_of::<MsgqPathArgs>(), 40);

crate::pod_struct! {
    /// Arguments of the DMA-offload kernel: its message path plus the source and destination
    /// memory it copies between.
    #[derive(Debug, PartialEq, Eq, Default)]
    pub struct DmaOffloadArgs {
        /// Where descriptors arrive and results go.
        pub path: MsgqPathArgs,
        /// DPA handle of the source mmap (needs local read access).
        pub src_mmap: MmapHandle,
        /// DPA handle of the destination mmap (needs local read-write access).
        pub dst_mmap: MmapHandle,
        /// Start address of the source range; descriptor offsets count from here.
        pub src_base: u64,
        /// Length of the source range.
        pub src_len: u64,
        /// Start address of the destination range.
        pub dst_base: u64,
        /// Length of the destination range.
        pub dst_len: u64,
    }
}

const_assert_eq!(size_of::<DmaOffloadArgs>(), 80);

crate::pod_struct! {
    /// Arguments of one thread of the multi-thread kernel: its own message path and its rank.
    #[derive(Debug, PartialEq, Eq, Default)]
    pub struct RankedPathArgs {
        /// This thread's consumer/producer pair.
        pub path: MsgqPathArgs,
        /// The thread's rank, stamped into every reply.
        pub rank: u32,
        /// Zero.
        pub reserved: u32,
    }
}

const_assert_eq!(size_of::<RankedPathArgs>(), 48);

crate::pod_struct! {
    /// Writable per-thread state of the kit's message-serving kernels, pointed to by the
    /// thread's local storage. With it, replies report a completion only every `report_every`
    /// sends (completion moderation with OPTIMIZE_REPORTS), so the kernel rarely has reports to
    /// drain. Without it (local storage 0) every reply reports.
    #[derive(Debug, PartialEq, Eq, Default)]
    pub struct ServeState {
        /// Report one send in this many (at most the producer's dev_num_send).
        pub report_every: u32,
        /// Sends so far.
        pub sends: u32,
    }
}

const_assert_eq!(size_of::<ServeState>(), 8);
crate::impl_immediate!(ServeState);
