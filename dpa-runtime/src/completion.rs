//! Completion contexts on the DPA: consumer completions (`doca_comch_consumer_completion`),
//! DPA completions (`doca_dpa_completion`) and notification completions
//! (`doca_dpa_notification_completion`).
//!
//! Each one can be attached to a DPA thread. Publishing into an armed context disarms it and
//! triggers the thread; `request_notification` re-arms it and, if something is already waiting,
//! triggers at once, so no wake-up is lost between draining and re-arming.

use super::thread::DpaThread;
use super::thread_shared::ThreadShared;
use super::trigger::Trigger;
use super::{Dpa, DpaShared, Kind};
use crate::error::{Result, bail};
use crate::limits;
use crate::ring::CompletionRing;
use crate::sync::{AtomicPtr, AtomicU32, CachePadded, Ordering, fence};
use dpakit_abi::handles::{
    CompletionHandle, ConsumerCompletionHandle, NotificationCompletionHandle,
};
use std::fmt;
use std::ptr::NonNull;
use std::sync::{Arc, Weak};

/// Arming and triggering the attached thread.
///
/// The trigger sits on its own pair of cache lines: the DPA re-arms it on every activation, and
/// the CPU side reads the fields beside it on every send (`scanned` here, `imm_data_len` and
/// the ring's geometry next to the notifier), which would otherwise miss in the sender's cache
/// each time.
pub struct Notifier {
    trigger: CachePadded<Trigger>,
    thread: Option<Arc<ThreadShared>>,
    dpa: Weak<DpaShared>,
    /// The one thread index allowed to read the context (+1; 0 = nobody yet).
    reader: Reader,
    /// Busy-poll workers scan the armed contexts of their threads themselves, so publishing
    /// needs no handshake with them: no fence, no shared flag, no run queue.
    scanned: bool,
}

impl fmt::Debug for Notifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notifier")
            .field("trigger", &self.trigger)
            .finish()
    }
}

/// `INVALID_VALUE` unless `thread` runs on `dpa`: a context triggers threads of its own DPA.
fn same_dpa(dpa: &Dpa, thread: Option<&DpaThread>, what: &str) -> Result<()> {
    match thread {
        Some(t) if !Arc::ptr_eq(&t.dpa.shared, &dpa.shared) => bail!(
            InvalidValue,
            "the DPA thread `{}` belongs to DPA context {}, not to the {what}'s context {}",
            t.shared.name,
            t.dpa.shared.id,
            dpa.shared.id
        ),
        _ => Ok(()),
    }
}

impl Notifier {
    fn new(dpa: &Dpa, thread: Option<&DpaThread>) -> Self {
        Self {
            trigger: CachePadded(Trigger::new()),
            reader: Reader::new(thread.map(|t| t.shared().index)),
            thread: thread.map(|t| t.shared().clone()),
            dpa: Arc::downgrade(&dpa.shared),
            scanned: dpa.shared.sched.mode() == super::SchedMode::BusyPoll,
        }
    }

    /// Attaches the context to its thread (which busy-poll workers scan). Call once the
    /// context is owned by the DPA's handle table, which keeps it alive for the scan.
    fn attach_scan(&self, ring: Option<&CompletionRing>) -> Result<()> {
        match (&self.thread, ring) {
            (Some(thread), Some(ring)) => thread.add_source(&self.trigger, ring),
            _ => Ok(()),
        }
    }

    /// The context is being destroyed: it triggers nothing, and its thread's scan stops
    /// looking at it (the memory itself goes after a grace period).
    fn retire(&self) {
        self.trigger.retire();
        if let Some(thread) = &self.thread {
            thread.remove_source(&self.trigger);
        }
    }

    /// Whether the caller (`None`: an RPC) may read the context: the attached thread, or the
    /// first reader of an unattached context. RPCs never read: they run beside the threads.
    #[inline]
    pub fn claim_reader(&self, thread: Option<usize>) -> bool {
        thread.is_some_and(|index| self.reader.claim(index))
    }

    /// Call after publishing a completion.
    #[inline]
    pub fn published(&self) {
        if self.scanned {
            return;
        }
        fence(Ordering::SeqCst);
        if self.trigger.armed.take_after_barrier() {
            self.fire();
        }
    }

    /// `request_notification`: re-arm; trigger now if `waiting` (checked after arming).
    #[inline]
    pub fn request(&self, waiting: impl FnOnce() -> bool) {
        if self.scanned {
            // Only the attached thread's worker reads and writes the flag in this mode.
            self.trigger.armed.set_local(true);
            return;
        }
        if self
            .trigger
            .armed
            .request(|| fence(Ordering::SeqCst), waiting)
        {
            self.fire();
        }
    }

    /// Triggers the attached thread regardless of arming (thread_notify).
    #[inline]
    pub fn fire(&self) {
        if let (Some(thread), Some(dpa)) = (&self.thread, self.dpa.upgrade()) {
            dpa.sched.notify(thread);
        }
    }
}

/// The one DPA thread that reads a completion context: the attached one, or the first to
/// read an unattached context. Two threads racing to be first: exactly one wins, for good
/// (the loom model below).
#[derive(Debug)]
pub struct Reader(AtomicU32);

impl Reader {
    /// Owned by thread `index` from the start, or by nobody yet.
    fn new(owner: Option<usize>) -> Self {
        Self(AtomicU32::new(owner.map_or(0, |i| i as u32 + 1)))
    }

    /// Whether thread `index` reads the context, taking it if nobody does yet.
    #[inline]
    pub fn claim(&self, index: usize) -> bool {
        let me = index as u32 + 1;
        // The common case — the owner reading again — needs no locked instruction.
        match self.0.load(Ordering::Acquire) {
            0 => match self
                .0
                .compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => true,
                Err(owner) => owner == me,
            },
            owner => owner == me,
        }
    }
}

#[cfg(all(test, loom))]
mod loom {
    use super::Reader;
    use ::loom::sync::Arc;
    use ::loom::thread;

    #[test]
    fn exactly_one_of_two_first_readers_wins_for_good() {
        crate::sync::model(3, || {
            let r = Arc::new(Reader::new(None));
            let other = {
                let r = r.clone();
                thread::spawn(move || (r.claim(1), r.claim(1)))
            };
            let mine = (r.claim(0), r.claim(0));
            let theirs = other.join().unwrap();
            assert!(mine.0 != theirs.0, "exactly one wins");
            assert_eq!(mine.0, mine.1, "and keeps it");
            assert_eq!(theirs.0, theirs.1);
        });
    }
}

/// A DPA consumer's count of messages taken from its completion context, shared by both.
pub type PolledCount = crate::sync::CachePadded<crate::sync::AtomicU64>;

/// The shared state of a consumer completion context.
#[derive(Debug)]
pub struct ConsumerCompletionShared {
    pub ring: CompletionRing,
    pub imm_data_len: u32,
    pub max_num_consumers: u32,
    /// For each DPA consumer reporting here, by tag (null: free), its count of messages taken
    /// from this context (what bounds the credits it may post). Each consumer lives in the DPA's
    /// handle table, which outlives every reader of these pointers.
    consumers: Box<[AtomicPtr<PolledCount>]>,
    pub notifier: Notifier,
}

impl ConsumerCompletionShared {
    /// Reserves a tag for a new consumer.
    pub fn reserve_consumer(&self) -> Option<u32> {
        let reserved = NonNull::<PolledCount>::dangling().as_ptr();
        self.consumers
            .iter()
            .position(|slot| {
                slot.compare_exchange(
                    std::ptr::null_mut(),
                    reserved,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
            })
            .map(|i| i as u32)
    }

    /// Points a reserved tag at its consumer's count of messages taken.
    pub fn attach_consumer(&self, tag: u32, polled: &Arc<PolledCount>) {
        self.consumers[tag as usize].store(Arc::as_ptr(polled).cast_mut(), Ordering::Release);
    }

    /// Frees a tag.
    pub fn release_consumer(&self, tag: u32) {
        self.consumers[tag as usize].store(std::ptr::null_mut(), Ordering::Release);
    }

    /// Counts one message of the consumer with `tag` as taken from this context.
    #[inline]
    pub fn count_polled(&self, tag: u32) {
        let Some(slot) = self.consumers.get(tag as usize) else {
            return;
        };
        let ptr = slot.load(Ordering::Acquire);
        let reserved = NonNull::<PolledCount>::dangling().as_ptr();
        if !ptr.is_null() && ptr != reserved {
            // SAFETY: attached consumers live in the DPA's handle table until the DPA drops,
            // and this context (an entry of the same DPA) is borrowed for the call.
            let count = unsafe { &*ptr };
            // Only the context's one reader counts (device functions check it), so a plain
            // increment does: no locked instruction on the message's path.
            count.store(count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
    }
}

/// The shared state of a DPA completion context.
#[derive(Debug)]
pub struct DpaCompletionShared {
    pub ring: CompletionRing,
    pub notifier: Notifier,
}

/// The shared state of a notification completion.
#[derive(Debug)]
pub struct NotificationShared {
    pub notifier: Notifier,
}

/// Bytes of a DPA completion element in its ring: type, then user data.
pub fn encode_completion(kind: u32, user_data: u32) -> [u8; 8] {
    let mut e = [0u8; 8];
    e[..4].copy_from_slice(&kind.to_ne_bytes());
    e[4..].copy_from_slice(&user_data.to_ne_bytes());
    e
}

/// `doca_comch_consumer_completion`: where a DPA consumer's received messages appear.
#[derive(Debug)]
pub struct ConsumerCompletion {
    pub dpa: Dpa,
    pub shared: Arc<ConsumerCompletionShared>,
    index: usize,
}

/// Configuration of a [`ConsumerCompletion`].
#[derive(Debug)]
pub struct ConsumerCompletionBuilder<'a> {
    dpa: &'a Dpa,
    max_num_consumers: u32,
    max_num_recv: u32,
    imm_data_len: u32,
    thread: Option<&'a DpaThread>,
}

impl<'a> ConsumerCompletionBuilder<'a> {
    /// `doca_comch_consumer_completion_set_max_num_consumers` (default 1).
    pub fn max_num_consumers(mut self, n: u32) -> Self {
        self.max_num_consumers = n;
        self
    }

    /// `doca_comch_consumer_completion_set_max_num_recv`: completions the context holds before the
    /// kernel acks them (default 64).
    pub fn max_num_recv(mut self, n: u32) -> Self {
        self.max_num_recv = n;
        self
    }

    /// `doca_comch_consumer_completion_set_imm_data_len`: the largest immediate accepted (≤ 32;
    /// default 32).
    pub fn imm_data_len(mut self, len: u32) -> Self {
        self.imm_data_len = len;
        self
    }

    /// `doca_comch_consumer_completion_set_dpa_thread`: the thread triggered by new messages.
    pub fn dpa_thread(mut self, thread: &'a DpaThread) -> Self {
        self.thread = Some(thread);
        self
    }

    /// `doca_comch_consumer_completion_start`.
    pub fn start(self) -> Result<ConsumerCompletion> {
        self.dpa
            .shared
            .require_running("start a consumer completion")?;
        if self.max_num_recv == 0 || self.max_num_recv as usize > limits::CONSUMER_MAX_NUM_RECV {
            bail!(
                InvalidValue,
                "consumer completion max_num_recv {} is outside 1..={}",
                self.max_num_recv,
                limits::CONSUMER_MAX_NUM_RECV
            );
        }
        if self.imm_data_len as usize > limits::MAX_IMM_DATA_LEN {
            bail!(
                InvalidValue,
                "consumer completion imm_data_len {} exceeds the MsgQ limit of {} bytes",
                self.imm_data_len,
                limits::MAX_IMM_DATA_LEN
            );
        }
        if self.max_num_consumers == 0
            || self.max_num_consumers as usize > limits::MSGQ_MAX_NUM_CONSUMERS
        {
            bail!(
                InvalidValue,
                "consumer completion max_num_consumers {} is outside 1..={}",
                self.max_num_consumers,
                limits::MSGQ_MAX_NUM_CONSUMERS
            );
        }
        same_dpa(self.dpa, self.thread, "consumer completion")?;
        let shared = Arc::new(ConsumerCompletionShared {
            ring: CompletionRing::new(self.max_num_recv as usize),
            imm_data_len: self.imm_data_len,
            max_num_consumers: self.max_num_consumers,
            consumers: (0..self.max_num_consumers)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            notifier: Notifier::new(self.dpa, self.thread),
        });
        let Some(index) = self
            .dpa
            .shared
            .handles
            .consumer_completions
            .insert(shared.clone())
        else {
            bail!(
                NoMemory,
                "too many consumer completion contexts on this DPA"
            );
        };
        if let Err(e) = shared.notifier.attach_scan(Some(&shared.ring)) {
            let dpa = &self.dpa.shared;
            dpa.handles
                .consumer_completions
                .retire(index, &dpa.sched.grace);
            return Err(e);
        }
        Ok(ConsumerCompletion {
            dpa: self.dpa.clone(),
            shared,
            index,
        })
    }
}

impl ConsumerCompletion {
    /// `doca_comch_consumer_completion_create`.
    pub fn builder(dpa: &Dpa) -> ConsumerCompletionBuilder<'_> {
        ConsumerCompletionBuilder {
            dpa,
            max_num_consumers: 1,
            max_num_recv: 64,
            imm_data_len: limits::MAX_IMM_DATA_LEN as u32,
            thread: None,
        }
    }

    /// `doca_comch_consumer_completion_get_dpa_handle`.
    pub fn dpa_handle(&self) -> ConsumerCompletionHandle {
        ConsumerCompletionHandle(self.dpa.shared.handle(Kind::ConsumerCompletion, self.index))
    }
}

impl Drop for ConsumerCompletion {
    fn drop(&mut self) {
        self.shared.notifier.retire();
        let dpa = &self.dpa.shared;
        dpa.handles
            .consumer_completions
            .retire(self.index, &dpa.sched.grace);
    }
}

/// `doca_dpa_completion`: where DPA producers report finished sends and copies.
#[derive(Debug)]
pub struct DpaCompletion {
    pub dpa: Dpa,
    pub shared: Arc<DpaCompletionShared>,
    index: usize,
}

impl DpaCompletion {
    /// `doca_dpa_completion_create` + optional `doca_dpa_completion_set_thread` +
    /// `doca_dpa_completion_start`.
    pub fn start(dpa: &Dpa, queue_size: u32, thread: Option<&DpaThread>) -> Result<DpaCompletion> {
        dpa.shared.require_running("start a DPA completion")?;
        if queue_size == 0 || queue_size as usize > limits::DPA_COMPLETION_MAX_QUEUE_SIZE {
            bail!(
                InvalidValue,
                "DPA completion queue size {queue_size} is outside 1..={}",
                limits::DPA_COMPLETION_MAX_QUEUE_SIZE
            );
        }
        same_dpa(dpa, thread, "DPA completion")?;
        let shared = Arc::new(DpaCompletionShared {
            ring: CompletionRing::new(queue_size as usize),
            notifier: Notifier::new(dpa, thread),
        });
        let Some(index) = dpa.shared.handles.completions.insert(shared.clone()) else {
            bail!(NoMemory, "too many DPA completion contexts on this DPA");
        };
        if let Err(e) = shared.notifier.attach_scan(Some(&shared.ring)) {
            dpa.shared
                .handles
                .completions
                .retire(index, &dpa.shared.sched.grace);
            return Err(e);
        }
        Ok(DpaCompletion {
            dpa: dpa.clone(),
            shared,
            index,
        })
    }

    /// `doca_dpa_completion_get_dpa_handle`.
    pub fn dpa_handle(&self) -> CompletionHandle {
        CompletionHandle(self.dpa.shared.handle(Kind::Completion, self.index))
    }
}

impl Drop for DpaCompletion {
    fn drop(&mut self) {
        self.shared.notifier.retire();
        let dpa = &self.dpa.shared;
        dpa.handles.completions.retire(self.index, &dpa.sched.grace);
    }
}

/// `doca_dpa_notification_completion`: lets kernels (and the host) trigger a thread.
#[derive(Debug)]
pub struct NotificationCompletion {
    dpa: Dpa,
    index: usize,
}

impl NotificationCompletion {
    /// `doca_dpa_notification_completion_create` + `_start` for `thread`.
    pub fn start(dpa: &Dpa, thread: &DpaThread) -> Result<NotificationCompletion> {
        dpa.shared
            .require_running("start a notification completion")?;
        same_dpa(dpa, Some(thread), "notification completion")?;
        let shared = Arc::new(NotificationShared {
            notifier: Notifier::new(dpa, Some(thread)),
        });
        let Some(index) = dpa.shared.handles.notifications.insert(shared) else {
            bail!(NoMemory, "too many notification completions on this DPA");
        };
        Ok(NotificationCompletion {
            dpa: dpa.clone(),
            index,
        })
    }

    /// `doca_dpa_notification_completion_get_dpa_handle`.
    pub fn dpa_handle(&self) -> NotificationCompletionHandle {
        NotificationCompletionHandle(self.dpa.shared.handle(Kind::Notification, self.index))
    }
}

impl Drop for NotificationCompletion {
    fn drop(&mut self) {
        let dpa = &self.dpa.shared;
        dpa.handles
            .notifications
            .retire(self.index, &dpa.sched.grace);
    }
}
