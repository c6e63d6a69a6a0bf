//! The sync event's task interface (`doca_sync_event_as_ctx`): what each task does with the
//! counter, the wait mask rule, and the queue of submitted tasks a progress pass runs.
//!
//! A get or notify task runs at the first progress pass after its submission; a wait task is
//! looked at once per pass (one load of the counter) and completes at the first pass that finds
//! its condition true. Nothing here waits: a progress pass does a bounded amount of work, and a
//! wait whose condition never holds stays submitted until its context stops, which flushes it.

use super::SyncEventValue;
use crate::error::{Result, bail};
use std::collections::VecDeque;

/// The task kinds of a sync event context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskKind {
    /// `doca_sync_event_task_get`: reads the counter.
    Get,
    /// `doca_sync_event_task_notify_set`: sets it.
    NotifySet,
    /// `doca_sync_event_task_notify_add`: adds to it, atomically.
    NotifyAdd,
    /// `doca_sync_event_task_wait_eq`: completes once `(counter & mask) == value`.
    WaitEq,
    /// `doca_sync_event_task_wait_neq`: completes once `(counter & mask) != value`.
    WaitNeq,
}

impl TaskKind {
    /// Every kind, in the order of DOCA's header.
    pub const ALL: [TaskKind; 5] = [
        TaskKind::Get,
        TaskKind::NotifySet,
        TaskKind::NotifyAdd,
        TaskKind::WaitEq,
        TaskKind::WaitNeq,
    ];

    /// The kind's part of DOCA's names (`doca_sync_event_task_<name>_*`).
    pub fn name(self) -> &'static str {
        match self {
            TaskKind::Get => "get",
            TaskKind::NotifySet => "notify_set",
            TaskKind::NotifyAdd => "notify_add",
            TaskKind::WaitEq => "wait_eq",
            TaskKind::WaitNeq => "wait_neq",
        }
    }

    /// Its position in [`ALL`](Self::ALL).
    pub fn index(self) -> usize {
        self as usize
    }
}

/// What a submitted task does, as it was when submitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskOp {
    /// Read the counter.
    Get,
    /// Set the counter to this value.
    NotifySet(u64),
    /// Add this value to the counter (wrapping).
    NotifyAdd(u64),
    /// Complete once `(counter & mask) == value`.
    WaitEq {
        /// The value to wait for.
        value: u64,
        /// The mask applied to the counter ([`check_wait_mask`]).
        mask: u64,
    },
    /// Complete once `(counter & mask) != value`.
    WaitNeq {
        /// The value to wait for the counter to leave.
        value: u64,
        /// The mask applied to the counter ([`check_wait_mask`]).
        mask: u64,
    },
}

impl TaskOp {
    /// The kind of task that does this.
    pub fn kind(self) -> TaskKind {
        match self {
            TaskOp::Get => TaskKind::Get,
            TaskOp::NotifySet(_) => TaskKind::NotifySet,
            TaskOp::NotifyAdd(_) => TaskKind::NotifyAdd,
            TaskOp::WaitEq { .. } => TaskKind::WaitEq,
            TaskOp::WaitNeq { .. } => TaskKind::WaitNeq,
        }
    }

    /// `INVALID_VALUE` for a wait whose mask breaks the rule ([`check_wait_mask`]).
    pub fn check(self) -> Result<()> {
        match self {
            TaskOp::WaitEq { mask, .. } | TaskOp::WaitNeq { mask, .. } => check_wait_mask(mask),
            _ => Ok(()),
        }
    }

    /// Runs the task once on `counter`: `Some` with its result when it is done — the value read
    /// (get), the value set (notify_set), the value before the addition (notify_add), the value
    /// that satisfied the wait — or `None` for a wait whose condition does not hold yet. Never
    /// waits.
    pub fn run(self, counter: &SyncEventValue) -> Option<u64> {
        match self {
            TaskOp::Get => Some(counter.get()),
            TaskOp::NotifySet(v) => {
                counter.set(v);
                Some(v)
            }
            TaskOp::NotifyAdd(v) => Some(counter.add(v)),
            TaskOp::WaitEq { value, mask } => {
                let now = counter.get();
                (now & mask == value).then_some(now)
            }
            TaskOp::WaitNeq { value, mask } => {
                let now = counter.get();
                (now & mask != value).then_some(now)
            }
        }
    }

    /// Whether [`run`](Self::run) would finish the task now (a get or notify always would).
    pub fn ready(self, counter: &SyncEventValue) -> bool {
        match self {
            TaskOp::WaitEq { value, mask } => counter.get() & mask == value,
            TaskOp::WaitNeq { value, mask } => counter.get() & mask != value,
            _ => true,
        }
    }
}

/// The wait mask rule: 0, 1, 2, 4 or 8 consecutive `0xFF` bytes, every other byte 0.
pub fn check_wait_mask(mask: u64) -> Result<()> {
    let bytes = mask.to_le_bytes();
    let ones = bytes.iter().filter(|&&b| b == 0xff).count();
    let only_whole_bytes = bytes.iter().all(|&b| b == 0 || b == 0xff);
    let first = bytes.iter().position(|&b| b == 0xff).unwrap_or(0);
    let consecutive = bytes[first..first + ones].iter().all(|&b| b == 0xff);
    if !only_whole_bytes || !matches!(ones, 0 | 1 | 2 | 4 | 8) || !consecutive {
        bail!(
            InvalidValue,
            "wait mask {mask:#018x} breaks the rule of sync event wait tasks: a mask is 0, 1, 2, \
             4 or 8 consecutive 0xFF bytes, every other byte 0 (for example 0xff, \
             0xffff0000 or UINT64_MAX)"
        );
    }
    Ok(())
}

/// The tasks submitted to a sync event context and not completed yet, in submission order;
/// `T` names a task for the layer above (its kind and pool index).
#[derive(Debug)]
pub struct Submitted<T> {
    queue: VecDeque<(T, TaskOp)>,
    waits: usize,
}

impl<T: Copy> Submitted<T> {
    /// Room for `capacity` tasks (the pools' sizes): no allocation on the datapath after.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            queue: VecDeque::with_capacity(capacity),
            waits: 0,
        }
    }

    /// A task was submitted.
    pub fn push(&mut self, task: T, op: TaskOp) {
        if matches!(op.kind(), TaskKind::WaitEq | TaskKind::WaitNeq) {
            self.waits += 1;
        }
        self.queue.push_back((task, op));
    }

    /// One progress pass: runs each task submitted before the pass once, in order, and hands
    /// those done to `done` with their result; waits whose condition does not hold stay, in
    /// order. Tasks submitted while the pass runs wait for the next one.
    pub fn pass(&mut self, counter: &SyncEventValue, done: &mut VecDeque<(T, u64)>) {
        for _ in 0..self.queue.len() {
            let Some((task, op)) = self.queue.pop_front() else {
                return;
            };
            match op.run(counter) {
                Some(result) => {
                    if matches!(op.kind(), TaskKind::WaitEq | TaskKind::WaitNeq) {
                        self.waits -= 1;
                    }
                    done.push_back((task, result));
                }
                None => self.queue.push_back((task, op)),
            }
        }
    }

    /// Whether a pass would finish a task now.
    pub fn any_ready(&self, counter: &SyncEventValue) -> bool {
        self.queue.iter().any(|(_, op)| op.ready(counter))
    }

    /// Wait tasks submitted (the only ones that can stay across passes).
    pub fn waits(&self) -> usize {
        self.waits
    }

    /// Whether nothing is submitted.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// A stop takes every task back, in order, to be completed with an error.
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.waits = 0;
        self.queue.drain(..).map(|(t, _)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn the_mask_rule_takes_whole_consecutive_bytes_of_1_2_4_or_8() {
        for ok in [
            0,
            0xff,
            0xff00,
            0xff << 56,
            0xffff,
            0x00ff_ff00,
            0xffff_ffff,
            0xffff_ffff << 32,
            0x00ff_ffff_ff00,
            u64::MAX,
        ] {
            assert!(check_wait_mask(ok).is_ok(), "{ok:#x}");
        }
        for bad in [
            1,
            0x0f,
            0x00ff_ffff,
            0x00ff_00ff,
            0x00ff_ffff_ffff,
            0x7fff_ffff_ffff_ffff,
            0xff00_0000_0000_00ff,
            u64::MAX - 1,
        ] {
            let e = check_wait_mask(bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidValue, "{bad:#x}");
            assert!(e.message().contains("consecutive 0xFF bytes"), "{e}");
        }
    }

    #[test]
    fn a_pass_runs_what_was_submitted_and_keeps_waits_that_do_not_hold() {
        let counter = SyncEventValue::new();
        let mut q = Submitted::with_capacity(8);
        q.push(
            1,
            TaskOp::WaitEq {
                value: 5,
                mask: u64::MAX,
            },
        );
        q.push(2, TaskOp::NotifyAdd(3));
        q.push(
            3,
            TaskOp::WaitNeq {
                value: 0,
                mask: 0xff,
            },
        );
        q.push(4, TaskOp::Get);
        assert_eq!(q.waits(), 2);
        let mut done = VecDeque::new();
        q.pass(&counter, &mut done);
        assert_eq!(done.drain(..).collect::<Vec<_>>(), [(2, 0), (3, 3), (4, 3)]);
        assert_eq!(q.waits(), 1);
        assert!(!q.any_ready(&counter));
        q.push(5, TaskOp::NotifySet(5));
        assert!(q.any_ready(&counter));
        q.pass(&counter, &mut done);
        assert_eq!(
            done.drain(..).collect::<Vec<_>>(),
            [(5, 5)],
            "the wait was looked at before the set"
        );
        q.pass(&counter, &mut done);
        assert_eq!(done.drain(..).collect::<Vec<_>>(), [(1, 5)]);
        assert!(q.is_empty() && q.waits() == 0);
        q.push(
            6,
            TaskOp::WaitEq {
                value: 9,
                mask: u64::MAX,
            },
        );
        assert_eq!(q.drain().collect::<Vec<_>>(), [6]);
        assert_eq!(q.waits(), 0);
    }
}
