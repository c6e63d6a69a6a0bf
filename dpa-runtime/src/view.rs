//! What the DPA contexts of the process are doing, as values: per context its threads (kernel,
//! state, activations, what the interpreter counted) and the queues the layer above reports.
//! The live view (`cargo xtask dpa-top`) and the at-exit dump (`DPAKIT_SOFT_STATS`) read it.
//!
//! It reads what the runtime keeps anyway: counters relaxed, the thread tables as the host
//! reads them. What ended is kept too, within caps, so a dump at exit still shows the threads
//! and contexts a program destroyed first: a destroyed thread's last view stays with its
//! context ([`ENDED_THREADS_PER_CONTEXT`]), a destroyed context's with the process
//! ([`ENDED_CONTEXTS`]). Control path only: nothing here runs per message.

mod render;

use crate::isa_mode::Profile;
use crate::sync::Ordering;
use crate::thread_shared::ThreadShared;
use crate::{DpaShared, ExecMode, SchedMode, live_contexts};
use dpakit_abi::CtxState;
use std::collections::VecDeque;
use std::sync::Mutex;

/// Destroyed contexts whose last view the process keeps (the oldest is forgotten first).
pub const ENDED_CONTEXTS: usize = 32;

/// Destroyed queues whose last view a context keeps (the oldest is forgotten first).
pub const ENDED_QUEUES_PER_CONTEXT: usize = 64;

/// Destroyed threads whose last view a context keeps (the oldest is forgotten first): as many as
/// it may have at once.
pub const ENDED_THREADS_PER_CONTEXT: usize = crate::limits::DPA_MAX_THREADS;

/// What a DPA thread is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadStatus {
    /// Created, `doca_dpa_thread_run` not called yet.
    NotRun,
    /// Waiting for a notification (a completion, or `doca_dpa_thread_notify`).
    Waiting,
    /// Notified, waiting for a worker.
    Ready,
    /// An activation is executing (or parked in the debugger).
    Running,
    /// Finished (`doca_dpa_dev_thread_finish`) or stopped.
    Finished,
    /// Its kernel faulted: the context's error says why.
    Failed,
}

impl ThreadStatus {
    /// The name the views print.
    pub fn name(self) -> &'static str {
        match self {
            ThreadStatus::NotRun => "not run",
            ThreadStatus::Waiting => "waiting",
            ThreadStatus::Ready => "ready",
            ThreadStatus::Running => "running",
            ThreadStatus::Finished => "finished",
            ThreadStatus::Failed => "failed",
        }
    }

    fn of(flags: u32) -> Self {
        use crate::thread_state::flags::*;
        if flags & FAULTED != 0 {
            ThreadStatus::Failed
        } else if flags & FINISHED != 0 {
            ThreadStatus::Finished
        } else if flags & ACTIVE != 0 {
            ThreadStatus::Running
        } else if flags & RUN == 0 {
            ThreadStatus::NotRun
        } else if flags & (QUEUED | PENDING) != 0 {
            ThreadStatus::Ready
        } else {
            ThreadStatus::Waiting
        }
    }
}

/// One DPA thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadView {
    /// Its index in the context (`doca_dpa_thread` number).
    pub index: usize,
    /// Its kernel's name, demangled.
    pub kernel: String,
    pub status: ThreadStatus,
    /// Activations that ended.
    pub activations: u64,
    /// ISA mode: what the interpreter counted (`None` in native mode).
    pub isa: Option<Profile>,
    /// The thread was destroyed: this is its last view.
    pub destroyed: bool,
}

/// One queue the layer above reports for a context (a Comch MsgQ).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueView {
    /// The layer above's number for it, unique in the process.
    pub id: u32,
    /// Messages flow to the DPA (CPU producers, DPA consumers), else from it.
    pub to_dpa: bool,
    pub consumers: u32,
    pub producers: u32,
    /// Messages producers put in the queue.
    pub sent: u64,
    /// Messages consumers took from it.
    pub taken: u64,
    /// Receives consumers posted that no message filled yet.
    pub credits: u64,
    /// The queue was destroyed: this is its last view.
    pub destroyed: bool,
}

/// A queue of the layer above (a Comch MsgQ) that a context lists in its view: registered
/// with [`DpaShared::add_queue`], its last view handed over with [`DpaShared::queue_ended`].
pub trait QueueSource: Send + Sync {
    /// What it counts now.
    fn view(&self) -> QueueView;
}

/// A context's queues: the live ones, and the last views of those destroyed.
pub(crate) struct Queues {
    live: Vec<std::sync::Weak<dyn QueueSource>>,
    ended: Ended<QueueView>,
}

impl std::fmt::Debug for Queues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queues")
            .field("live", &self.live.len())
            .field("ended", &self.ended.kept.len())
            .finish()
    }
}

impl Queues {
    pub(crate) const fn new() -> Self {
        Self {
            live: Vec::new(),
            ended: Ended::new(ENDED_QUEUES_PER_CONTEXT),
        }
    }
}

/// One DPA context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContextView {
    /// `doca_dpa_get_dpa_handle`: its number in the process.
    pub id: u16,
    pub app: &'static str,
    pub state: CtxState,
    pub exec: ExecMode,
    pub sched: SchedMode,
    /// ISA mode: the image it runs.
    pub image: Option<String>,
    /// The fatal error that stopped it, if any.
    pub error: Option<String>,
    /// Its threads by index, live and destroyed.
    pub threads: Vec<ThreadView>,
    /// Destroyed threads past [`ENDED_THREADS_PER_CONTEXT`], no longer listed.
    pub threads_forgotten: u64,
    /// ISA mode: what the interpreter counted for its RPCs and kernel launches.
    pub rpcs: Option<Profile>,
    pub launches: Option<Profile>,
    pub queues: Vec<QueueView>,
    /// The context was destroyed: this is its last view.
    pub destroyed: bool,
}

/// Every DPA context of the process, live then destroyed, oldest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub pid: u32,
    pub contexts: Vec<ContextView>,
    /// Destroyed contexts past [`ENDED_CONTEXTS`], no longer listed.
    pub contexts_forgotten: u64,
}

/// The most recent `cap` values of something that ended, and how many older ones were dropped.
#[derive(Debug)]
pub struct Ended<T> {
    kept: VecDeque<T>,
    forgotten: u64,
    cap: usize,
}

impl<T: Clone> Ended<T> {
    pub const fn new(cap: usize) -> Self {
        Self {
            kept: VecDeque::new(),
            forgotten: 0,
            cap,
        }
    }

    pub fn push(&mut self, value: T) {
        if self.kept.len() == self.cap {
            self.kept.pop_front();
            self.forgotten += 1;
        }
        self.kept.push_back(value);
    }

    pub fn list(&self) -> (Vec<T>, u64) {
        (self.kept.iter().cloned().collect(), self.forgotten)
    }
}

/// A lock of the view's own records: poisoning only means a panic elsewhere, the records stay
/// whole (each change is one push).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

static ENDED: Mutex<Ended<ContextView>> = Mutex::new(Ended::new(ENDED_CONTEXTS));

/// What every DPA context of the process is doing now, and the last view of those destroyed.
pub fn snapshot() -> Snapshot {
    let mut contexts: Vec<ContextView> = live_contexts().iter().map(|d| d.view(false)).collect();
    contexts.sort_by_key(|c| c.id);
    let (ended, contexts_forgotten) = lock(&ENDED).list();
    // A context whose last handle is dropping may be in both for a moment: the ended record
    // is the newer.
    contexts.retain(|c| !ended.iter().any(|e| e.id == c.id));
    contexts.extend(ended);
    Snapshot {
        pid: std::process::id(),
        contexts,
        contexts_forgotten,
    }
}

/// Keeps the last view of a context whose last handle dropped.
pub(crate) fn context_ended(dpa: &DpaShared) {
    let view = dpa.view(true);
    lock(&ENDED).push(view);
}

impl ThreadShared {
    pub(crate) fn view(&self, isa: bool, destroyed: bool) -> ThreadView {
        ThreadView {
            index: self.index,
            kernel: crate::symbol::demangle(self.name),
            status: ThreadStatus::of(self.state.get()),
            activations: self.activations.load(Ordering::Relaxed),
            isa: isa.then(|| self.isa_counters.snapshot()),
            destroyed,
        }
    }
}

impl DpaShared {
    /// The context's threads, as they are now (destroyed ones not included).
    pub(crate) fn thread_views(&self) -> Vec<ThreadView> {
        // The host reads the thread table.
        let _reading = self.sched.grace.host();
        self.threads
            .iter()
            .map(|t| t.view(self.isa.is_some(), false))
            .collect()
    }

    fn view(&self, destroyed: bool) -> ContextView {
        let isa = self.isa.as_ref();
        let mut threads = self.thread_views();
        // A destroyed thread's record is kept once its slot is free, so a slot is never listed
        // twice; a new thread in a slot comes before the destroyed ones that had it.
        let (ended, threads_forgotten) = lock(&self.ended_threads).list();
        threads.extend(ended);
        threads.sort_by_key(|t| (t.index, t.destroyed));
        ContextView {
            id: self.id,
            app: self.app.name(),
            state: self.state.get(),
            exec: if isa.is_some() {
                ExecMode::Isa
            } else {
                ExecMode::Native
            },
            sched: self.sched.mode(),
            image: isa.map(|p| p.path.display().to_string()),
            error: self.fatal().map(|e| e.to_string()),
            threads,
            threads_forgotten,
            rpcs: isa.map(|p| p.rpcs.snapshot()),
            launches: isa.map(|p| p.launches.snapshot()),
            queues: self.queue_views(),
            destroyed,
        }
    }

    /// Lists `queue` in the context's view while it lives.
    pub fn add_queue(&self, queue: std::sync::Weak<dyn QueueSource>) {
        let mut queues = lock(&self.queues);
        queues.live.retain(|q| q.strong_count() > 0);
        queues.live.push(queue);
    }

    /// Keeps `last`, the last view of a queue being destroyed.
    pub fn queue_ended(&self, last: QueueView) {
        lock(&self.queues).ended.push(last);
    }

    /// The live queues by number, then the destroyed ones.
    fn queue_views(&self) -> Vec<QueueView> {
        let (live, ended) = {
            let queues = lock(&self.queues);
            let live: Vec<_> = queues.live.iter().filter_map(|q| q.upgrade()).collect();
            (live, queues.ended.list().0)
        };
        // Outside the lock: a queue's view reads its own tables.
        let mut views: Vec<QueueView> = live.iter().map(|q| q.view()).collect();
        views.sort_by_key(|q| q.id);
        views.extend(ended);
        views
    }

    /// Keeps `view`, the last view of a thread whose slot was just freed.
    pub(crate) fn thread_ended(&self, view: ThreadView) {
        lock(&self.ended_threads).push(view);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thread_state::flags::*;

    #[test]
    fn a_thread_state_word_reads_as_one_status() {
        for (flags, status) in [
            (0, ThreadStatus::NotRun),
            (RUN, ThreadStatus::Waiting),
            (RUN | PENDING, ThreadStatus::Ready),
            (RUN | QUEUED, ThreadStatus::Ready),
            (RUN | ACTIVE | PENDING, ThreadStatus::Running),
            (RUN | FINISHED, ThreadStatus::Finished),
            (RUN | ACTIVE | FINISHED, ThreadStatus::Finished),
            (RUN | FINISHED | FAULTED, ThreadStatus::Failed),
        ] {
            assert_eq!(ThreadStatus::of(flags), status, "flags {flags:#b}");
        }
    }

    #[test]
    fn what_ended_keeps_the_newest_within_its_cap() {
        let mut ended = Ended::new(3);
        for i in 0..5 {
            ended.push(i);
        }
        assert_eq!(ended.list(), (vec![2, 3, 4], 2));
    }
}
