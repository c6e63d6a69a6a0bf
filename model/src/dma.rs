//! `doca_dma`: the DMA engine of a device, copying between buffers of mmaps (memcpy tasks).
//!
//! [`Dma`] is a DMA context while it runs on the CPU: started on a device and a progress
//! engine with a task pool of a fixed size, it takes memcpy tasks ([`Dma::memcpy`]), copies them
//! in submission order from [`Pe::progress`] — at most [`DMA_PROGRESS_MAX_BYTES`] and
//! [`DMA_PROGRESS_MAX_TASKS`] per call, a longer copy going on in the next calls — and reports
//! each through its completion callback, in order. Nothing on this path allocates: the queues
//! are sized by the pool at start.
//!
//! What a task copies: the source buffer's data (`data`, `data_len`) to the end of the
//! destination buffer's data (`data + data_len`); on success the destination's data length grows
//! by the length copied. A destination taken with `buf_get_by_addr` (no data) so receives the
//! bytes at its start, as DOCA's samples read them. The rules, checked when the task is submitted
//! ([`check_memcpy`]):
//!
//! - `INVALID_VALUE`: no data to copy (length 0), more than [`DMA_MAX_BUF_SIZE`] bytes, more
//!   buffers than [`DMA_MAX_BUF_LIST_LEN`], a destination without room after its data for the
//!   copy, or source data and destination room that overlap;
//! - `NOT_PERMITTED`: a buffer of an mmap the device was not added to (`doca_mmap_add_dev`), or a
//!   destination whose mmap does not let local devices write (`LOCAL_READ_WRITE`; an mmap has it
//!   until `doca_mmap_set_permissions` says otherwise);
//! - `BAD_STATE`: a buffer of an mmap that is not started (the mmap refuses to stop while buffers
//!   point into it, so only a buffer returned to its inventory meets this);
//! - `NO_MEMORY`: every task of the pool in flight.
//!
//! Neither buffer may change while its copy runs (DOCA's rule): before each step the engine
//! checks both still hold the data they held at submit, and a task whose buffer was returned to
//! its inventory or changed fails with `BAD_STATE` instead of copying. A stop ([`Dma::flush`])
//! takes back every task not completed; each completes with [`FLUSHED`] (the bytes at the
//! destination are then unspecified and its data length unchanged).

use crate::buf::{Buf, BufView};
use crate::dev::{Dev, Devinfo};
use crate::error::{Error, ErrorCode, Result, bail};
use crate::limits::{
    DMA_MAX_BUF_LIST_LEN, DMA_MAX_BUF_SIZE, DMA_MAX_NUM_TASKS, DMA_PROGRESS_MAX_BYTES,
    DMA_PROGRESS_MAX_TASKS,
};
use crate::pe::{Pe, PeClient, PeWaker};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::rc::{Rc, Weak};
use std::sync::Arc;

/// The status of a task a stopping DMA context took back before it completed: the flush status
/// of every context of the soft device (`IO_FAILED`).
pub const FLUSHED: ErrorCode = crate::comch::FLUSHED;

// --- Capabilities ---------------------------------------------------------------------------

/// `doca_dma_cap_task_memcpy_is_supported`: every device of the soft device, on either side,
/// has a DMA engine.
pub fn cap_task_memcpy_is_supported(_devinfo: &Devinfo) -> Result<()> {
    Ok(())
}

/// `doca_dma_cap_task_memcpy_get_max_buf_size`: [`DMA_MAX_BUF_SIZE`].
pub fn cap_task_memcpy_get_max_buf_size(devinfo: &Devinfo) -> Result<u64> {
    cap_task_memcpy_is_supported(devinfo).map(|()| DMA_MAX_BUF_SIZE)
}

/// `doca_dma_cap_task_memcpy_get_max_buf_list_len`: [`DMA_MAX_BUF_LIST_LEN`].
pub fn cap_task_memcpy_get_max_buf_list_len(devinfo: &Devinfo) -> Result<u32> {
    cap_task_memcpy_is_supported(devinfo).map(|()| DMA_MAX_BUF_LIST_LEN)
}

/// `doca_dma_task_memcpy_set_conf`'s pool size: `INVALID_VALUE` for 0 or more than
/// [`DMA_MAX_NUM_TASKS`] (`doca_dma_cap_get_max_num_tasks`).
pub fn check_num_tasks(num_tasks: u32) -> Result<()> {
    if num_tasks == 0 || num_tasks > DMA_MAX_NUM_TASKS {
        bail!(
            InvalidValue,
            "num_memcpy_tasks {num_tasks} is outside 1..={DMA_MAX_NUM_TASKS} \
             (doca_dma_cap_get_max_num_tasks)"
        );
    }
    Ok(())
}

// --- The rules of one copy ------------------------------------------------------------------

/// What a memcpy task copies, decided when it is submitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The source's data.
    pub from: *const u8,
    /// Where the bytes land: after the destination's data.
    pub to: *mut u8,
    /// Bytes to copy: the source's data length.
    pub len: usize,
}

/// Checks a memcpy from `src` to `dst` (buffers of lists `src_list_len` and `dst_list_len` long)
/// on `dev`, and says what it copies. The rules and their codes are the module's.
pub fn check_memcpy(
    dev: &Dev,
    src: &BufView,
    dst: &BufView,
    src_list_len: u32,
    dst_list_len: u32,
) -> Result<Plan> {
    let buffers = src_list_len.saturating_add(dst_list_len);
    if buffers > DMA_MAX_BUF_LIST_LEN {
        bail!(
            InvalidValue,
            "the task takes {buffers} buffers ({src_list_len} source, {dst_list_len} destination), \
             more than the {DMA_MAX_BUF_LIST_LEN} a memcpy task takes \
             (doca_dma_cap_task_memcpy_get_max_buf_list_len)"
        );
    }
    let len = src.data_len;
    if len == 0 {
        bail!(
            InvalidValue,
            "the source buffer holds no data (data length 0): a memcpy copies the source's data \
             (set it with doca_buf_set_data, or take the buffer with buf_get_by_data)"
        );
    }
    if len as u64 > DMA_MAX_BUF_SIZE {
        bail!(
            InvalidValue,
            "a memcpy of {len} bytes exceeds the {DMA_MAX_BUF_SIZE} bytes a task copies \
             (doca_dma_cap_task_memcpy_get_max_buf_size): split it over several tasks"
        );
    }
    for (which, view) in [("source", src), ("destination", dst)] {
        if !view.mmap.is_started() {
            bail!(
                BadState,
                "the {which} buffer's mmap is not started: start it before submitting tasks on \
                 its buffers"
            );
        }
        if !view.mmap.has_dev(dev) {
            bail!(
                NotPermitted,
                "the {which} buffer's mmap was not given the DMA context's device {}: call \
                 doca_mmap_add_dev before doca_mmap_start",
                dev.as_devinfo().pci_addr()
            );
        }
    }
    if !dst.mmap.allows_local_write() {
        bail!(
            NotPermitted,
            "the destination buffer's mmap does not let local devices write it (permissions {:?}): \
             give it DOCA_ACCESS_FLAG_LOCAL_READ_WRITE",
            dst.mmap.get_permissions()
        );
    }
    // The bytes land after the destination's data: the room left is up to its end.
    let tail = dst.data.addr() + dst.data_len;
    let room = dst.head.addr() + dst.len - tail;
    if room < len {
        bail!(
            InvalidValue,
            "the destination buffer has room for {room} bytes after its data, and the source \
             holds {len}: take a larger destination, or reset its data length \
             (doca_buf_reset_data_len) to copy to its data's start"
        );
    }
    let from = src.data.addr();
    if from < tail + len && tail < from + len {
        bail!(
            InvalidValue,
            "the source data {:#x}+{len:#x} and the destination room {tail:#x}+{len:#x} overlap: \
             a memcpy needs disjoint ranges",
            from
        );
    }
    Ok(Plan {
        from: src.data,
        // Within the destination buffer (room >= len), so within its mmap.
        to: dst.data.wrapping_add(dst.data_len),
        len,
    })
}

// --- The engine -----------------------------------------------------------------------------

/// A finished memcpy task, as its completion callback sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemcpyCompletion {
    /// The user data given to [`Dma::memcpy`].
    pub user_data: u64,
    /// `SUCCESS`, `BAD_STATE` for a buffer that changed or went back to its inventory while the
    /// copy ran, or [`FLUSHED`] for a task a stop took back.
    pub status: ErrorCode,
}

type CompleteCb = Box<dyn FnMut(MemcpyCompletion)>;

/// Configuration of a [`Dma`].
pub struct DmaBuilder<'a> {
    dev: &'a Dev,
    pe: &'a Pe,
    num_tasks: u32,
    on_complete: Option<CompleteCb>,
}

impl fmt::Debug for DmaBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DmaBuilder")
            .field("num_tasks", &self.num_tasks)
            .finish()
    }
}

/// A task on its way: the buffers (kept, so their descriptors stay checkable), the copy and how
/// far it went, and the data windows both buffers had at submit.
struct Transfer {
    src: Buf,
    dst: Buf,
    plan: Plan,
    done: usize,
    src_window: (*mut u8, usize),
    dst_window: (*mut u8, usize),
    user_data: u64,
}

impl Transfer {
    /// Copies what `budget` allows; the task's status once it is finished, `None` while bytes
    /// are left (the budget ran out).
    fn step(&mut self, budget: &mut usize) -> Option<ErrorCode> {
        if self.src.data_window().ok() != Some(self.src_window)
            || self.dst.data_window().ok() != Some(self.dst_window)
        {
            return Some(ErrorCode::BadState);
        }
        let chunk = (self.plan.len - self.done).min(*budget);
        if chunk > 0 {
            // SAFETY: `check_memcpy` placed both ranges inside their buffers (the source's data,
            // the destination's room after its data), which lie inside started mmaps whose
            // memory stays registered while the buffers exist; both buffers are live and
            // unchanged (checked just above), and the ranges are disjoint (checked at submit).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.plan.from.add(self.done),
                    self.plan.to.add(self.done),
                    chunk,
                )
            };
            self.done += chunk;
            *budget -= chunk;
        }
        if self.done < self.plan.len {
            return None;
        }
        // The copied bytes are data of the destination now.
        Some(
            match self.dst.set_data_len(self.dst_window.1 + self.plan.len) {
                Ok(()) => ErrorCode::Success,
                Err(e) => e.code(),
            },
        )
    }
}

struct Inner {
    dev: Dev,
    num_tasks: u32,
    in_flight: Cell<u32>,
    /// Tasks submitted and not copied yet, in order; at most `num_tasks`.
    queue: RefCell<VecDeque<Transfer>>,
    /// Finished tasks whose callback has not run yet, in order; at most `num_tasks`.
    completed: RefCell<VecDeque<(u64, ErrorCode)>>,
    /// Taken out while it runs, so it may submit, stop or drop the engine.
    on_complete: RefCell<Option<CompleteCb>>,
    waker: Arc<PeWaker>,
    /// The [`Dma`] was dropped: nothing is copied or reported any more.
    closed: Cell<bool>,
}

/// `doca_dma` while it runs on the CPU: its memcpy tasks, copied by [`Pe::progress`].
pub struct Dma {
    inner: Rc<Inner>,
}

impl fmt::Debug for Dma {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dma")
            .field("num_tasks", &self.inner.num_tasks)
            .field("in_flight", &self.inner.in_flight.get())
            .finish()
    }
}

impl<'a> DmaBuilder<'a> {
    /// `doca_dma_task_memcpy_set_conf`: the size of the task pool (default 64).
    pub fn num_tasks(mut self, n: u32) -> Self {
        self.num_tasks = n;
        self
    }

    /// The completion callback of every task (success or error), run by [`Pe::progress`].
    pub fn on_complete(mut self, cb: impl FnMut(MemcpyCompletion) + 'static) -> Self {
        self.on_complete = Some(Box::new(cb));
        self
    }

    /// `doca_dma_create` + `doca_pe_connect_ctx` + `doca_ctx_start`.
    pub fn start(self) -> Result<Dma> {
        cap_task_memcpy_is_supported(self.dev.as_devinfo())?;
        check_num_tasks(self.num_tasks)?;
        let n = self.num_tasks as usize;
        let inner = Rc::new(Inner {
            dev: self.dev.clone(),
            num_tasks: self.num_tasks,
            in_flight: Cell::new(0),
            queue: RefCell::new(VecDeque::with_capacity(n)),
            completed: RefCell::new(VecDeque::with_capacity(n)),
            on_complete: RefCell::new(self.on_complete),
            waker: self.pe.waker(),
            closed: Cell::new(false),
        });
        let weak: Weak<dyn PeClient> = Rc::downgrade(&inner) as Weak<dyn PeClient>;
        self.pe.connect(weak);
        Ok(Dma { inner })
    }
}

impl Dma {
    /// A DMA context on `dev` driven by `pe`.
    pub fn builder<'a>(dev: &'a Dev, pe: &'a Pe) -> DmaBuilder<'a> {
        DmaBuilder {
            dev,
            pe,
            num_tasks: 64,
            on_complete: None,
        }
    }

    /// `doca_dma_task_memcpy_alloc_init` + `doca_task_submit`: copies `src`'s data after `dst`'s
    /// data. Fails as [`check_memcpy`] says, or with `NO_MEMORY` when every task is in flight;
    /// the completion (callback in [`Pe::progress`]) carries `user_data`.
    #[inline]
    pub fn memcpy(&self, src: &Buf, dst: &Buf, user_data: u64) -> Result<()> {
        let inner = &*self.inner;
        if inner.in_flight.get() >= inner.num_tasks {
            bail!(
                NoMemory,
                "all {} memcpy tasks are in flight: progress the PE to complete them, or \
                 configure more (doca_dma_task_memcpy_set_conf)",
                inner.num_tasks
            );
        }
        let (s, d) = (src.view()?, dst.view()?);
        // Buffers are never chained on the soft device: each is a list of one.
        let plan = check_memcpy(&inner.dev, &s, &d, 1, 1)?;
        inner.in_flight.set(inner.in_flight.get() + 1);
        inner.queue.borrow_mut().push_back(Transfer {
            src: src.clone(),
            dst: dst.clone(),
            plan,
            done: 0,
            src_window: (s.data, s.data_len),
            dst_window: (d.data, d.data_len),
            user_data,
        });
        // A PE asleep on its notification handle (armed before this submit) wakes to copy.
        inner.waker.wake();
        Ok(())
    }

    /// Takes back every task not copied yet (a stop): each completes with [`FLUSHED`] at the
    /// next [`Pe::progress`], after those already finished. Returns how many it took back.
    pub fn flush(&self) -> usize {
        let mut queue = self.inner.queue.borrow_mut();
        let n = queue.len();
        let mut completed = self.inner.completed.borrow_mut();
        completed.extend(queue.drain(..).map(|c| (c.user_data, FLUSHED)));
        n
    }

    /// Tasks submitted whose completion has not been reported yet.
    pub fn in_flight(&self) -> u32 {
        self.inner.in_flight.get()
    }

    /// The size of the task pool.
    pub fn num_tasks(&self) -> u32 {
        self.inner.num_tasks
    }
}

impl Drop for Dma {
    fn drop(&mut self) {
        // The PE may still hold the engine for the progress call this drop happens in (from a
        // completion callback): it stops at once, and its buffers are let go now.
        self.inner.closed.set(true);
        self.inner.queue.borrow_mut().clear();
        self.inner.completed.borrow_mut().clear();
    }
}

impl Inner {
    /// Copies from the front of the queue until the progress call's budget is spent.
    fn copy_some(&self) {
        let mut budget = DMA_PROGRESS_MAX_BYTES;
        let mut queue = self.queue.borrow_mut();
        for _ in 0..DMA_PROGRESS_MAX_TASKS {
            let Some(front) = queue.front_mut() else {
                return;
            };
            let Some(status) = front.step(&mut budget) else {
                return;
            };
            if let Some(done) = queue.pop_front() {
                // Never past `num_tasks`, the capacity: at most that many are in flight.
                self.completed
                    .borrow_mut()
                    .push_back((done.user_data, status));
            }
        }
    }
}

impl PeClient for Inner {
    fn progress(&self) -> usize {
        if self.closed.get() {
            return 0;
        }
        self.copy_some();
        // Only the tasks finished before the callbacks: what they submit is copied at the next
        // call, so a program that resubmits from its callback cannot hold the progress call.
        let ready = self.completed.borrow().len();
        let mut n = 0;
        for _ in 0..ready {
            if self.closed.get() {
                break;
            }
            let Some((user_data, status)) = self.completed.borrow_mut().pop_front() else {
                break;
            };
            self.in_flight.set(self.in_flight.get().saturating_sub(1));
            n += 1;
            let cb = self.on_complete.borrow_mut().take();
            if let Some(mut cb) = cb {
                cb(MemcpyCompletion { user_data, status });
                self.on_complete.borrow_mut().get_or_insert(cb);
            }
        }
        n
    }

    fn has_pending(&self) -> bool {
        !self.closed.get()
            && (!self.completed.borrow().is_empty() || !self.queue.borrow().is_empty())
    }
}

/// `INVALID_VALUE` naming a missing buffer of a task (`which`: "source", "destination").
pub fn missing_buffer(which: &str, setter: &str) -> Error {
    Error::new(
        ErrorCode::InvalidValue,
        format!("the memcpy task has no {which} buffer: give one to alloc_init or {setter}"),
    )
}

#[cfg(test)]
mod tests;
