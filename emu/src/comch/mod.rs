//! Comch consumers and producers created from a MsgQ: CPU producer and DPA consumer on a CPU→DPA
//! queue, DPA producer and CPU consumer on a DPA→CPU queue.

mod cpu_consumer;
mod cpu_producer;
mod dpa_endpoints;

pub use cpu_consumer::{CpuConsumer, CpuConsumerBuilder, RecvCompletion};
pub use cpu_producer::{CpuProducer, CpuProducerBuilder, SendCompletion};
pub use dpa_endpoints::{DpaConsumer, DpaConsumerBuilder, DpaProducer, DpaProducerBuilder};

use crate::dpa::completion::{ConsumerCompletionShared, DpaCompletionShared};
use crate::pe::PeWaker;
use crate::ring::CompletionRing;
use crate::table::Table;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// A DPA consumer as both sides see it.
#[derive(Debug)]
pub(crate) struct DpaConsumerShared {
    pub id: u32,
    /// `doca_comch_consumer_set_dev_num_recv`: receives the DPA may have posted at once.
    pub max_recv: u32,
    /// Receives posted by `consumer_ack` and not yet filled.
    pub credits: AtomicU32,
    pub completion: Arc<ConsumerCompletionShared>,
}

impl DpaConsumerShared {
    /// Delivers one message if the consumer has a receive posted and its completion context has
    /// room; otherwise leaves everything as it was and returns false (the sender retries later).
    #[inline]
    pub(crate) fn try_deliver(&self, imm: &[u8], producer_id: u32) -> bool {
        let claimed = self
            .credits
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| c.checked_sub(1))
            .is_ok();
        if !claimed {
            return false;
        }
        if self.completion.ring.try_push(imm, producer_id).is_err() {
            self.credits.fetch_add(1, Ordering::AcqRel);
            return false;
        }
        self.completion.notifier.published();
        true
    }

    /// Whether a send could be delivered right now.
    pub(crate) fn can_deliver(&self) -> bool {
        self.credits.load(Ordering::Acquire) > 0
    }
}

/// A DPA producer as the device functions see it.
#[derive(Debug)]
pub(crate) struct DpaProducerShared {
    pub id: u32,
    /// `doca_comch_producer_set_dev_num_send`: sends in flight without a reported completion.
    pub dev_num_send: u32,
    /// Sends since the last one that reported a completion (OPTIMIZE_REPORTS).
    pub unreported: AtomicU32,
    pub completion: Arc<DpaCompletionShared>,
    /// `doca_ctx_set_user_data` of the producer, returned in its DPA completions.
    pub user_data: u32,
    /// The CPU consumers of the producer's MsgQ (not the queue itself: the DPA's handle table
    /// owns this object, and the queue owns the DPA).
    pub cpu_consumers: Arc<Table<CpuConsumerShared>>,
}

/// A CPU consumer as the DPA producers see it.
#[derive(Debug)]
pub(crate) struct CpuConsumerShared {
    pub id: u32,
    pub ring: CompletionRing,
    /// Receive tasks posted and not yet filled.
    pub posted: AtomicU32,
    pub imm_data_len: u32,
    pub waker: Arc<PeWaker>,
}
