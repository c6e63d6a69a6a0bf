//! Comch consumers and producers created from a MsgQ: CPU producer and DPA consumer on a CPU→DPA
//! queue, DPA producer and CPU consumer on a DPA→CPU queue.
//!
//! Credits and posted receives are monotonic counters split by writer: the side that grants
//! (DPA `consumer_ack`, CPU `post_recv`) bumps its own cache line, and the side that spends
//! keeps its own count plus a cached copy of the grants, re-reading the granter's line only when
//! that copy runs out. Steady traffic therefore moves one cache line per message each way — the
//! message — instead of bouncing counters between cores.

mod callback;
mod cpu_consumer;
mod cpu_producer;
mod credits;
mod dpa_endpoints;
mod fifo;

pub use cpu_consumer::{CpuConsumer, CpuConsumerBuilder, RecvCallback, RecvCompletion, RecvFace};
pub use cpu_producer::{CpuProducer, CpuProducerBuilder, SendCallback, SendCompletion, SendFace};
pub use dpa_endpoints::{DpaConsumer, DpaConsumerBuilder, DpaProducer, DpaProducerBuilder};

use crate::pe::PeWaker;
use crate::ring::CompletionRing;
use crate::sync::CachePadded;
use crate::sync::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use crate::table::Table;
use credits::{Credits, Waiting};
use dpakit_dpa_runtime::completion::{ConsumerCompletionShared, DpaCompletionShared, PolledCount};
use std::sync::{Arc, Weak};

/// Producer ids travel in the low 24 bits of a consumer completion entry; the high 8 bits say
/// which of the completion context's consumers the message is for.
pub(crate) const PRODUCER_ID_BITS: u32 = 24;

/// The status of a task flushed because its context stopped (`doca_task_get_status` in the
/// task's error callback).
pub const FLUSHED: crate::error::ErrorCode = crate::error::ErrorCode::IoFailed;

/// Checks a CPU endpoint's task pool size (`what`: "send", "post-receive") against the soft
/// device's limit.
fn check_task_pool(what: &str, num_tasks: u32) -> crate::error::Result<()> {
    if num_tasks == 0 || num_tasks as usize > crate::limits::CPU_MAX_NUM_TASKS {
        crate::error::bail!(
            InvalidValue,
            "{what} task pool of {num_tasks} is outside 1..={}",
            crate::limits::CPU_MAX_NUM_TASKS
        );
    }
    Ok(())
}

/// A CPU producer as the DPA side sees it: whether sends of it wait for credits, and how to
/// wake its PE when credits appear.
#[derive(Debug)]
pub(crate) struct CreditWaiter {
    waiting: AtomicBool,
    /// Weak: the table keeps entries until the queue drops, and the PE's eventfd should close
    /// with the PE.
    waker: Weak<PeWaker>,
}

/// The CPU producers of one CPU→DPA MsgQ. A DPA consumer that posts receives wakes the sleeping
/// PEs of producers with sends waiting; `waiting` keeps that to one load of a quiet cache line
/// while nobody waits.
#[derive(Debug)]
pub(crate) struct CreditWaiters {
    waiting: Waiting,
    producers: Table<CreditWaiter>,
}

impl CreditWaiters {
    pub(crate) fn new(max_producers: usize) -> Self {
        Self {
            waiting: Waiting::default(),
            producers: Table::new(max_producers),
        }
    }

    /// Registers a producer whose PE `waker` wakes; returns its slot and entry.
    pub(crate) fn register(&self, waker: &Arc<PeWaker>) -> Option<(usize, Arc<CreditWaiter>)> {
        self.producers.insert_with(|_| {
            Arc::new(CreditWaiter {
                waiting: AtomicBool::new(false),
                waker: Arc::downgrade(waker),
            })
        })
    }

    /// Producer side: its sends start or stop waiting for credits. Set before the producer's PE
    /// can arm its notification, so the handshake in `credits_posted` covers it.
    pub(crate) fn set_waiting(&self, entry: &CreditWaiter, waiting: bool) {
        self.waiting.set(&entry.waiting, waiting);
    }

    /// Producer side, on drop.
    pub(crate) fn unregister(&self, slot: usize, entry: &CreditWaiter) {
        self.set_waiting(entry, false);
        self.producers.remove(slot);
    }

    /// DPA side, after posting receives: wakes the armed PEs of producers whose sends wait.
    #[inline]
    pub(crate) fn credits_posted(&self) {
        crate::pe::light_barrier();
        if !self.waiting.anyone() {
            return;
        }
        for slot in 0..self.producers.capacity() {
            if let Some(p) = self.producers.get(slot) {
                if p.waiting.load(Ordering::Relaxed) {
                    if let Some(waker) = p.waker.upgrade() {
                        waker.wake_after_barrier();
                    }
                }
            }
        }
    }
}

/// What a CPU producer's delivery attempt did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// In the consumer's completion context.
    Delivered,
    /// No receive posted by the DPA: try again later.
    NoCredit,
    /// A credit was spent but the completion context is full: retry the push (only).
    CreditHeld,
}

/// A DPA consumer as both sides see it.
#[derive(Debug)]
pub(crate) struct DpaConsumerShared {
    pub id: u32,
    /// This consumer's slot in its completion context (tags its completion entries).
    pub tag: u32,
    /// `doca_comch_consumer_set_dev_num_recv`: receives the DPA may have posted at once.
    pub max_recv: u32,
    pub completion: Arc<ConsumerCompletionShared>,
    /// Receives posted by `consumer_ack` (DPA side) and spent by producers (CPU side).
    credits: Credits,
    /// DPA side: this consumer's messages taken from the completion context (the context
    /// counts them, through the pointer it keeps).
    pub(crate) polled: Arc<PolledCount>,
    /// The queue's CPU producers, woken when receives are posted.
    credit_waiters: Arc<CreditWaiters>,
}

impl DpaConsumerShared {
    pub(crate) fn new(
        id: u32,
        tag: u32,
        max_recv: u32,
        completion: Arc<ConsumerCompletionShared>,
        credit_waiters: Arc<CreditWaiters>,
    ) -> Self {
        Self {
            id,
            tag,
            max_recv,
            completion,
            credits: Credits::default(),
            polled: Arc::new(CachePadded(AtomicU64::new(0))),
            credit_waiters,
        }
    }

    /// Delivers one message if the DPA posted a receive and the completion context has room.
    #[inline]
    pub(crate) fn try_deliver(&self, imm: &[u8], producer_id: u32) -> Delivery {
        if !self.credits.try_spend() {
            return Delivery::NoCredit;
        }
        self.push(imm, producer_id)
    }

    /// Pushes a message whose credit is already spent.
    #[inline]
    pub(crate) fn push(&self, imm: &[u8], producer_id: u32) -> Delivery {
        let tagged = (self.tag << PRODUCER_ID_BITS) | producer_id;
        if self.completion.ring.try_push(imm, tagged).is_err() {
            return Delivery::CreditHeld;
        }
        self.completion.notifier.published();
        Delivery::Delivered
    }

    /// Whether a send could be delivered right now.
    pub(crate) fn can_deliver(&self) -> bool {
        self.credits.available() > 0
    }

    /// Receives posted and not yet filled.
    pub(crate) fn credits(&self) -> u64 {
        self.credits.available()
    }

    /// Receives messages filled (or are being delivered to).
    pub(crate) fn credits_spent(&self) -> u64 {
        self.credits.spent()
    }

    /// `consumer_ack(n)`: posts `n` receives unless that would exceed `max_recv` outstanding.
    /// Returns the receives already outstanding on refusal.
    pub(crate) fn ack(&self, n: u32) -> Result<(), u64> {
        // Messages polled have certainly filled their receive: the cheap bound.
        self.credits
            .grant_bounded(u64::from(n), u64::from(self.max_recv), &self.polled)?;
        self.credit_waiters.credits_posted();
        Ok(())
    }
}

/// A DPA producer as the device functions see it.
///
/// On cache lines of its own: the DPA writes `unreported` on every send, and a neighbouring
/// allocation the CPU side writes per message would bounce with it.
#[derive(Debug)]
#[repr(align(128))]
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
    pub imm_data_len: u32,
    pub waker: Arc<PeWaker>,
    /// Receive tasks posted (CPU side) and filled by producers (DPA side).
    credits: Credits,
}

impl CpuConsumerShared {
    pub(crate) fn new(id: u32, capacity: usize, imm_data_len: u32, waker: Arc<PeWaker>) -> Self {
        Self {
            id,
            ring: CompletionRing::new(capacity),
            imm_data_len,
            waker,
            credits: Credits::default(),
        }
    }

    /// The CPU posted one more receive.
    #[inline]
    pub(crate) fn post(&self) {
        self.credits.grant(1);
    }

    /// A DPA producer takes a posted receive; false when none is posted.
    #[inline]
    pub(crate) fn claim_receive(&self) -> bool {
        self.credits.try_spend()
    }

    /// Receives posted that no message filled yet.
    pub(crate) fn credits(&self) -> u64 {
        self.credits.available()
    }

    /// Whether no receive is posted (`doca_dpa_dev_comch_producer_is_consumer_empty`).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.credits.exhausted()
    }

    /// Takes back every posted receive no producer has claimed yet (the consumer is stopping):
    /// the consumer claims them itself, racing producers through the same protocol, so each
    /// receive is either filled by exactly one message or returned here, never both. Returns how
    /// many it took back.
    pub(crate) fn flush(&self) -> u64 {
        let mut taken = 0;
        while self.credits.try_spend() {
            taken += 1;
        }
        taken
    }
}
