//! DOCA DMA (`doca_dma`): memcpy tasks, the device's DMA engine copying between buffers of
//! mmaps.
//!
//! ```
//! # fn main() -> dpakit_host::Result<()> {
//! use dpakit_host::buf::BufInventory;
//! use dpakit_host::dev::Dev;
//! use dpakit_host::dma::Dma;
//! use dpakit_host::mmap::Mmap;
//! use dpakit_host::pe::Pe;
//! use std::cell::Cell;
//! use std::rc::Rc;
//! use std::time::Duration;
//!
//! let dev = Dev::open_first(|d| d.dma_cap_task_memcpy_is_supported().is_ok())?;
//! let pe = Pe::new()?;
//! let (mut src, mut dst) = (Mmap::alloc(4096)?, Mmap::alloc(4096)?);
//! src.as_mut_slice()?.fill(7);
//! for m in [&mut src, &mut dst] {
//!     m.add_dev(&dev)?;
//!     m.start()?;
//! }
//! let inventory = BufInventory::new(2)?;
//! let from = inventory.buf_get_by_data(&src, src.range().0, 4096)?;
//! let to = inventory.buf_get_by_addr(&dst, dst.range().0, 4096)?;
//! let done = Rc::new(Cell::new(false));
//! let d = done.clone();
//! let dma = Dma::builder(&dev, &pe)
//!     .on_complete(move |c| d.set(c.status == dpakit_host::ErrorCode::Success))
//!     .start()?;
//! dma.memcpy(&from, &to, 0)?;
//! pe.progress_until(Duration::from_secs(1), || done.get())?;
//! assert_eq!(to.data_len()?, 4096);
//! # Ok(())
//! # }
//! ```
//!
//! A task copies the source buffer's data to the end of the destination buffer's data, whose
//! data length grows by the copy: a destination taken with
//! [`buf_get_by_addr`](crate::buf::BufInventory::buf_get_by_addr) receives the bytes at its start.
//! Read them with [`Mmap::read_at`](crate::mmap::Mmap::read_at) after the completion. While a
//! task is in flight it holds a reference to each of its buffers (`doca_buf_inc_refcount`), so
//! dropping a [`Buf`] or its [`Mmap`](crate::mmap::Mmap) early never frees memory the device
//! still copies to.

use crate::UserData;
use crate::buf::Buf;
use crate::comch::{HasStateCallback, start_on_pe};
use crate::ctx::{self, CtxState, StateChangedCb};
use crate::dev::Dev;
use crate::error::{Result, bail, doca};
use crate::pe::Pe;
use crate::pulled::Pulled;
use dpakit_abi::ErrorCode;
use dpakit_sys as sys;
use std::cell::RefCell;
use std::fmt;
use std::mem::ManuallyDrop;

/// A finished memcpy task, as its callback sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemcpyCompletion {
    /// The user data given to [`Dma::memcpy`].
    pub user_data: UserData,
    /// `Success` once the bytes are in the destination, or the task's error: `IoFailed` for a
    /// task a stop took back, `BadState` on the soft device for a buffer changed while it was
    /// copied.
    pub status: ErrorCode,
}

type CompleteCb = Box<dyn FnMut(MemcpyCompletion)>;

/// Configuration of a [`Dma`].
pub struct DmaBuilder<'a> {
    dev: &'a Dev,
    pe: &'a Pe,
    num_tasks: u32,
    on_complete: Option<CompleteCb>,
    pull: bool,
    on_state_changed: Option<StateChangedCb>,
}

impl fmt::Debug for DmaBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DmaBuilder")
            .field("num_tasks", &self.num_tasks)
            .finish()
    }
}

/// What the callbacks reach through the context's user data. Boxed, so its address is stable.
struct Inner {
    raw: *mut sys::doca_dma,
    ctx: *mut sys::doca_ctx,
    pe: Pe,
    num_tasks: u32,
    on_complete: RefCell<Option<CompleteCb>>,
    /// With `pull_completions`: completions not taken yet, at most `num_tasks` (a memcpy is
    /// refused while the tasks in flight and these fill the pool).
    pulled: Option<Pulled<MemcpyCompletion>>,
    on_state_changed: Option<StateChangedCb>,
    /// The device the context was created on: closed after it.
    _dev: Dev,
}

impl HasStateCallback for Inner {
    fn state_callback(&self) -> Option<&StateChangedCb> {
        self.on_state_changed.as_ref()
    }
}

/// `doca_dma`: a DMA context on the CPU, its memcpy tasks completed by [`Pe::progress`].
#[doc(alias = "doca_dma")]
pub struct Dma {
    /// Taken only by `Drop`, which hands it to the teardown.
    inner: ManuallyDrop<Box<Inner>>,
}

impl fmt::Debug for Dma {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dma")
            .field("num_tasks", &self.inner.num_tasks)
            .field("in_flight", &self.in_flight())
            .finish()
    }
}

/// The success callback of memcpy tasks.
unsafe extern "C" fn copied(
    task: *mut sys::doca_dma_task_memcpy,
    task_user_data: sys::doca_data,
    ctx_user_data: sys::doca_data,
) {
    // SAFETY: the context's user data is its boxed Inner, alive while the context runs.
    let inner = unsafe { &*ctx_user_data.ptr.cast::<Inner>() };
    // SAFETY: a completed task of ours.
    unsafe { finish(inner, task, task_user_data, ErrorCode::Success) };
}

/// The error callback of memcpy tasks.
unsafe extern "C" fn failed(
    task: *mut sys::doca_dma_task_memcpy,
    task_user_data: sys::doca_data,
    ctx_user_data: sys::doca_data,
) {
    // SAFETY: as in `copied`.
    let inner = unsafe { &*ctx_user_data.ptr.cast::<Inner>() };
    // SAFETY: a completed task of ours.
    let raw = unsafe { sys::doca_task_get_status(sys::doca_dma_task_memcpy_as_task(task)) };
    let status = ErrorCode::from_raw(raw as i32).unwrap_or(ErrorCode::Unknown);
    // SAFETY: a completed task of ours.
    unsafe { finish(inner, task, task_user_data, status) };
}

/// Frees a completed task, lets go of the references it held on its buffers, and runs the
/// program's callback.
///
/// # Safety
/// `task` is a completed memcpy task of `inner`'s context, submitted by [`Dma::memcpy`].
unsafe fn finish(
    inner: &Inner,
    task: *mut sys::doca_dma_task_memcpy,
    user_data: sys::doca_data,
    status: ErrorCode,
) {
    // SAFETY: the task is ours again after its completion; its buffers are the ones `memcpy`
    // gave it, each holding the reference `memcpy` took for the flight.
    unsafe {
        let src = sys::doca_dma_task_memcpy_get_src(task).cast_mut();
        let dst = sys::doca_dma_task_memcpy_get_dst(task);
        sys::doca_task_free(sys::doca_dma_task_memcpy_as_task(task));
        sys::doca_buf_dec_refcount(src, std::ptr::null_mut());
        sys::doca_buf_dec_refcount(dst, std::ptr::null_mut());
    }
    let user_data = UserData::from_raw(crate::data_bits(user_data));
    if let Some(pulled) = &inner.pulled {
        pulled.push(MemcpyCompletion { user_data, status });
        return;
    }
    inner.pe.catch(|| {
        if let Some(cb) = inner.on_complete.borrow_mut().as_mut() {
            cb(MemcpyCompletion { user_data, status });
        }
    });
}

impl<'a> DmaBuilder<'a> {
    /// `doca_dma_task_memcpy_set_conf`: the size of the task pool (default 64).
    #[doc(alias = "doca_dma_task_memcpy_set_conf")]
    pub fn num_tasks(mut self, n: u32) -> Self {
        self.num_tasks = n;
        self
    }

    /// The completion callback of every task (success or error), run by [`Pe::progress`]. It
    /// may submit more tasks, stop the context or drop it.
    pub fn on_complete(mut self, cb: impl FnMut(MemcpyCompletion) + 'static) -> Self {
        self.on_complete = Some(Box::new(cb));
        self
    }

    /// Hands completions out as values instead of to a callback: [`Dma::try_completion`] and
    /// [`Dma::next_completion`] take them. A completion not taken yet holds its task's place in
    /// the pool, so nothing is dropped: a memcpy is `NO_MEMORY` while the tasks in flight and the
    /// completions not taken fill it. (Without either, completions are not reported.)
    pub fn pull_completions(mut self) -> Self {
        self.pull = true;
        self
    }

    /// `doca_ctx_set_state_changed_cb`.
    #[doc(alias = "doca_ctx_set_state_changed_cb")]
    pub fn on_state_changed(mut self, cb: impl Fn(CtxState, CtxState) + 'static) -> Self {
        self.on_state_changed = Some(Box::new(cb));
        self
    }

    /// `doca_dma_create` + `doca_dma_task_memcpy_set_conf` + `doca_pe_connect_ctx` +
    /// `doca_ctx_start`.
    #[doc(alias = "doca_dma_create")]
    pub fn start(self) -> Result<Dma> {
        if self.pull && self.on_complete.is_some() {
            bail!(
                InvalidValue,
                "a DMA context reports completions to its callback or as values, not both: \
                 drop on_complete or pull_completions"
            );
        }
        let mut raw = std::ptr::null_mut();
        doca!(doca_dma_create(self.dev.raw(), &mut raw))?;
        // SAFETY: a DMA context we just created.
        let ctx = unsafe { sys::doca_dma_as_ctx(raw) };
        let dma = Dma {
            inner: ManuallyDrop::new(Box::new(Inner {
                raw,
                ctx,
                pe: self.pe.clone(),
                num_tasks: self.num_tasks,
                on_complete: RefCell::new(self.on_complete),
                pulled: self.pull.then(|| Pulled::new(self.num_tasks)),
                on_state_changed: self.on_state_changed,
                _dev: self.dev.clone(),
            })),
        };
        doca!(doca_dma_task_memcpy_set_conf(
            raw,
            Some(copied),
            Some(failed),
            self.num_tasks
        ))?;
        start_on_pe(ctx, &**dma.inner, self.pe)?;
        Ok(dma)
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
            pull: false,
            on_state_changed: None,
        }
    }

    /// `doca_dma_task_memcpy_alloc_init` + `doca_task_submit`: copies `src`'s data after
    /// `dst`'s data; the completion carries `user_data`. The task holds a reference to each
    /// buffer until it completes. Errors are DOCA's: `INVALID_VALUE` for no data, a destination
    /// without room or overlapping ranges, `NOT_PERMITTED` for an mmap the device may not
    /// reach or write, `NO_MEMORY` when every task is in flight.
    #[doc(alias = "doca_dma_task_memcpy_alloc_init")]
    #[doc(alias = "doca_task_submit")]
    pub fn memcpy(
        &self,
        src: &Buf<'_>,
        dst: &Buf<'_>,
        user_data: impl Into<UserData>,
    ) -> Result<()> {
        let inner = &**self.inner;
        if let Some(pulled) = &inner.pulled
            && ctx::num_inflight(inner.ctx) as usize + pulled.len() >= inner.num_tasks as usize
        {
            bail!(
                NoMemory,
                "{} memcpy tasks are in flight or have completions not taken yet (the pool's \
                 size): take completions with try_completion or next_completion first",
                inner.num_tasks
            );
        }
        let mut task = std::ptr::null_mut();
        doca!(doca_dma_task_memcpy_alloc_init(
            inner.raw,
            src.as_raw(),
            dst.as_raw(),
            sys::doca_data {
                u64_: user_data.into().raw()
            },
            &mut task
        ))?;
        // SAFETY: a task we just allocated.
        let task = unsafe { sys::doca_dma_task_memcpy_as_task(task) };
        let held =
            doca!(doca_buf_inc_refcount(src.as_raw(), std::ptr::null_mut())).and_then(|()| {
                doca!(doca_buf_inc_refcount(dst.as_raw(), std::ptr::null_mut())).inspect_err(|_| {
                    let _ = doca!(doca_buf_dec_refcount(src.as_raw(), std::ptr::null_mut()));
                })
            });
        if let Err(e) = held {
            // SAFETY: not submitted, so the task is still ours.
            unsafe { sys::doca_task_free(task) };
            return Err(e);
        }
        if let Err(e) = doca!(doca_task_submit(task)) {
            // SAFETY: the submit failed, so the task and the references taken are still ours.
            unsafe {
                sys::doca_task_free(task);
                sys::doca_buf_dec_refcount(src.as_raw(), std::ptr::null_mut());
                sys::doca_buf_dec_refcount(dst.as_raw(), std::ptr::null_mut());
            }
            return Err(e);
        }
        Ok(())
    }

    /// `doca_ctx_get_num_inflight_tasks`: tasks submitted whose completion has not run yet.
    #[doc(alias = "doca_ctx_get_num_inflight_tasks")]
    pub fn in_flight(&self) -> u32 {
        ctx::num_inflight(self.inner.ctx)
    }

    /// The size of the task pool.
    pub fn num_tasks(&self) -> u32 {
        self.inner.num_tasks
    }

    /// The oldest completion not taken yet, without progressing, for a context built with
    /// [`pull_completions`](DmaBuilder::pull_completions); `None` if there is none.
    pub fn try_completion(&self) -> Option<MemcpyCompletion> {
        self.inner.pulled.as_ref()?.pop()
    }

    /// The next completion: progresses the PE (asleep on its notification handle when idle)
    /// until one is there; `None` after `timeout`. `SHUTDOWN` on Ctrl-C; `BAD_STATE` for a
    /// context not built with [`pull_completions`](DmaBuilder::pull_completions).
    pub fn next_completion(
        &self,
        timeout: std::time::Duration,
    ) -> Result<Option<MemcpyCompletion>> {
        crate::pulled::next_of(
            self.inner.pulled.as_ref(),
            &self.inner.pe,
            "Dma::next_completion",
            "this DMA context was not built with pull_completions: its completions go to \
             its callback, or are not reported",
            timeout,
        )
    }

    /// `doca_dma_cap_get_max_num_tasks`: the largest task pool a context may configure.
    #[doc(alias = "doca_dma_cap_get_max_num_tasks")]
    pub fn max_num_tasks(&self) -> Result<u32> {
        let mut n = 0;
        doca!(doca_dma_cap_get_max_num_tasks(self.inner.raw, &mut n))?;
        Ok(n)
    }

    /// `doca_ctx_get_state`.
    #[doc(alias = "doca_ctx_get_state")]
    pub fn state(&self) -> Result<CtxState> {
        ctx::state(self.inner.ctx)
    }

    /// `doca_ctx_stop`, progressing until the context is idle: tasks in flight complete with
    /// an error (`IoFailed`). Inside a callback of its PE it returns once the stop is
    /// requested, and the context becomes idle through later progress.
    #[doc(alias = "doca_ctx_stop")]
    pub fn stop(&self) -> Result<()> {
        ctx::stop(self.inner.ctx, Some(&self.inner.pe))
    }
}

impl Drop for Dma {
    #[doc(alias = "doca_dma_destroy")]
    fn drop(&mut self) {
        // SAFETY: taken once, here; `self.inner` is not used again.
        let inner = unsafe { ManuallyDrop::take(&mut self.inner) };
        let (raw, ctx, pe) = (inner.raw, inner.ctx, inner.pe.clone());
        ctx::teardown(
            ctx,
            &pe,
            "DMA context",
            move || doca!(doca_dma_destroy(raw)),
            inner,
        );
    }
}
