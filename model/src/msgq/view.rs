//! A MsgQ as the live view shows it ([`QueueView`]): messages sent into it and taken from it,
//! and credits (receives posted that no message filled yet). Read from the counters the
//! endpoints keep anyway; what a destroyed consumer counted is folded into its queue, and a
//! destroyed queue's last view stays with its DPA context
//! ([`ENDED_QUEUES_PER_CONTEXT`](dpakit_dpa_runtime::view::ENDED_QUEUES_PER_CONTEXT)). Control
//! path only.

use super::{Direction, MsgqShared};
use crate::comch::{CpuConsumerShared, DpaConsumerShared};
use crate::sync::{AtomicU64, Ordering};
use dpakit_dpa_runtime::view::{QueueSource, QueueView};

/// What a queue's destroyed consumers counted.
#[derive(Debug, Default)]
pub(crate) struct Retired {
    sent: AtomicU64,
    taken: AtomicU64,
}

/// `(sent, taken, credits)` of one consumer.
type Counts = (u64, u64, u64);

impl CpuConsumerShared {
    fn counts(&self) -> Counts {
        let (pushed, polled) = self.ring.counts();
        (pushed, polled, self.credits())
    }
}

impl DpaConsumerShared {
    fn counts(&self) -> Counts {
        (
            self.credits_spent(),
            self.polled.load(Ordering::Relaxed),
            self.credits(),
        )
    }
}

impl QueueSource for MsgqShared {
    fn view(&self) -> QueueView {
        self.counted(false)
    }
}

impl MsgqShared {
    fn counted(&self, destroyed: bool) -> QueueView {
        let mut sent = self.retired.sent.load(Ordering::Relaxed);
        let mut taken = self.retired.taken.load(Ordering::Relaxed);
        let mut credits = 0;
        let mut add = |(s, t, c): Counts| {
            sent += s;
            taken += t;
            credits += c;
        };
        // Removed consumers live on until the table drops: no grace period to keep.
        self.dpa_consumers.iter().for_each(|c| add(c.counts()));
        self.cpu_consumers.iter().for_each(|c| add(c.counts()));
        QueueView {
            id: self.id,
            to_dpa: self.direction == Direction::ToDpa,
            consumers: self.consumers() as u32,
            producers: self.producers.load(Ordering::Relaxed),
            sent,
            taken,
            credits,
            destroyed,
        }
    }

    /// Folds what a consumer being destroyed counted into the queue.
    fn retire(&self, (sent, taken, _): Counts) {
        self.retired.sent.fetch_add(sent, Ordering::Relaxed);
        self.retired.taken.fetch_add(taken, Ordering::Relaxed);
    }

    pub(crate) fn retire_cpu_consumer(&self, consumer: &CpuConsumerShared) {
        self.retire(consumer.counts());
    }

    pub(crate) fn retire_dpa_consumer(&self, consumer: &DpaConsumerShared) {
        self.retire(consumer.counts());
    }
}

impl Drop for MsgqShared {
    fn drop(&mut self) {
        self.dpa.shared.queue_ended(self.counted(true));
    }
}
