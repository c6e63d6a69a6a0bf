//! DPA threads (`doca_dpa_thread`): a kernel, its argument and local storage.
//!
//! A kernel declared `fn name(args: &A)` is a [`ThreadKernel<A>`]: its thread is started with an
//! `A`, which the thread keeps in DPA memory of its own and hands the kernel by device address.
//! A kernel declared `fn name(arg: u64)` ([`RawArg`]) is given its `u64` as it is.

use super::{DevPtr, Dpa};
use crate::error::{Result, bail, doca};
use dpakit_abi::{Pod, RawArg, ThreadKernel};
use dpakit_sys as sys;
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::rc::Rc;

/// Configuration of a [`DpaThread`] running a kernel that takes an `A`.
#[derive(Debug)]
pub struct DpaThreadBuilder<'a, A: 'static = RawArg> {
    dpa: &'a Dpa,
    kernel: ThreadKernel<A>,
    arg: u64,
    local_storage: u64,
    affinity: Option<&'a super::EuAffinity>,
}

struct Inner {
    raw: *mut sys::doca_dpa_thread,
    kernel: &'static str,
    dpa: Dpa,
    /// The thread's argument block, freed after the thread.
    args: Cell<Option<DevPtr>>,
}

impl Drop for Inner {
    #[doc(alias = "doca_dpa_thread_destroy")]
    fn drop(&mut self) {
        // Completion contexts keep a clone of their thread, so none is attached any more. A
        // kernel that never ends its activation is reported (the thread is destroyed anyway).
        if let Err(e) = doca!(doca_dpa_thread_destroy(self.raw)) {
            eprintln!("dpakit: DpaThread dropped: {e}");
        }
        if let Some(block) = self.args.take() {
            let _ = self.dpa.mem_free(block);
        }
    }
}

/// The argument block of a thread started with [`DpaThreadBuilder::start_deferred`]: DPA memory
/// holding the kernel's `A`, zeroed until written. Write it before [`DpaThread::run`]; it lives
/// as long as the thread.
#[derive(Debug)]
pub struct ArgsBlock<A> {
    thread: DpaThread,
    ptr: DevPtr,
    args: PhantomData<fn(&A)>,
}

impl<A: Pod> ArgsBlock<A> {
    /// Copies `args` into the block (`doca_dpa_h2d_memcpy`).
    #[doc(alias = "doca_dpa_h2d_memcpy")]
    pub fn write(&self, args: &A) -> Result<()> {
        self.thread
            .dpa()
            .h2d_memcpy(self.ptr, dpakit_abi::bytes_of(args))
    }

    /// The block's device address: what the kernel is handed.
    pub fn dev_ptr(&self) -> DevPtr {
        self.ptr
    }
}

/// `doca_dpa_thread`. Clones share the thread; completion contexts attached to it keep a clone.
#[doc(alias = "doca_dpa_thread")]
#[derive(Clone)]
pub struct DpaThread {
    inner: Rc<Inner>,
}

impl fmt::Debug for DpaThread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpaThread")
            .field("kernel", &self.inner.kernel)
            .finish()
    }
}

impl<'a, A> DpaThreadBuilder<'a, A> {
    /// `doca_dpa_thread_set_local_storage`.
    #[doc(alias = "doca_dpa_thread_set_local_storage")]
    pub fn local_storage(mut self, ptr: DevPtr) -> Self {
        self.local_storage = ptr.raw();
        self
    }

    /// `doca_dpa_thread_set_affinity`: the thread runs on the affinity's EU.
    #[doc(alias = "doca_dpa_thread_set_affinity")]
    pub fn affinity(mut self, affinity: &'a super::EuAffinity) -> Self {
        self.affinity = Some(affinity);
        self
    }

    /// `doca_dpa_thread_create` + `doca_dpa_thread_set_func_arg` + local storage +
    /// `doca_dpa_thread_start`, with `args` (`None`: an argument block of `block` bytes,
    /// zeroed, owned by the thread).
    fn start_inner(self, arg: Option<u64>, block: usize) -> Result<(DpaThread, DevPtr)> {
        let func = self.kernel.func();
        if func.is_null() {
            bail!(
                InvalidValue,
                "thread kernel `{}` has no address",
                self.kernel.name()
            );
        }
        let mut raw = std::ptr::null_mut();
        doca!(doca_dpa_thread_create(self.dpa.raw(), &mut raw))?;
        let thread = DpaThread {
            inner: Rc::new(Inner {
                raw,
                kernel: self.kernel.name(),
                dpa: self.dpa.clone(),
                args: Cell::new(None),
            }),
        };
        let arg = match arg {
            Some(arg) => arg,
            None => {
                let ptr = self.dpa.mem_alloc(block)?;
                thread.inner.args.set(Some(ptr));
                self.dpa.h2d_memcpy(ptr, &vec![0; block])?;
                ptr.raw()
            }
        };
        // SAFETY: a non-null function address, which is what doca_dpa_func_t holds.
        let func =
            unsafe { std::mem::transmute::<*mut std::ffi::c_void, unsafe extern "C" fn()>(func) };
        doca!(doca_dpa_thread_set_func_arg(raw, Some(func), arg))?;
        doca!(doca_dpa_thread_set_local_storage(raw, self.local_storage))?;
        if let Some(affinity) = self.affinity {
            doca!(doca_dpa_thread_set_affinity(raw, affinity.raw()))?;
        }
        doca!(doca_dpa_thread_start(raw))?;
        Ok((thread, DevPtr(arg)))
    }
}

impl DpaThreadBuilder<'_, RawArg> {
    /// The `u64` the kernel is given (default 0).
    pub fn arg(mut self, arg: u64) -> Self {
        self.arg = arg;
        self
    }

    /// Creates and starts the thread. It is not triggered until [`DpaThread::run`].
    #[doc(alias = "doca_dpa_thread_start")]
    pub fn start(self) -> Result<DpaThread> {
        let arg = self.arg;
        Ok(self.start_inner(Some(arg), 0)?.0)
    }
}

impl<A: Pod> DpaThreadBuilder<'_, A> {
    /// Creates and starts the thread with `args`, copied into DPA memory the thread owns. It is
    /// not triggered until [`DpaThread::run`].
    #[doc(alias = "doca_dpa_thread_start")]
    pub fn start_with(self, args: &A) -> Result<DpaThread> {
        let (thread, block) = self.start_deferred()?;
        block.write(args)?;
        Ok(thread)
    }

    /// Creates and starts the thread with a zeroed argument block, for arguments that name
    /// objects made after the thread (completion contexts attached to it): write the block,
    /// then [`DpaThread::run`].
    pub fn start_deferred(self) -> Result<(DpaThread, ArgsBlock<A>)> {
        let (thread, ptr) = self.start_inner(None, size_of::<A>().max(1))?;
        Ok((
            thread.clone(),
            ArgsBlock {
                thread,
                ptr,
                args: PhantomData,
            },
        ))
    }
}

impl DpaThread {
    /// `doca_dpa_thread_create` + `doca_dpa_thread_set_func_arg`: a thread running `kernel`,
    /// which takes an `A` ([`DpaThreadBuilder::start_with`]) or, for [`RawArg`], a `u64`
    /// ([`DpaThreadBuilder::arg`]).
    #[doc(alias = "doca_dpa_thread_create")]
    pub fn builder<'a, A>(dpa: &'a Dpa, kernel: &ThreadKernel<A>) -> DpaThreadBuilder<'a, A> {
        DpaThreadBuilder {
            dpa,
            kernel: *kernel,
            arg: 0,
            local_storage: 0,
            affinity: None,
        }
    }

    /// The DPA context the thread runs on.
    pub fn dpa(&self) -> &Dpa {
        &self.inner.dpa
    }

    pub(crate) fn raw(&self) -> *mut sys::doca_dpa_thread {
        self.inner.raw
    }

    /// The kernel's name.
    pub fn kernel(&self) -> &'static str {
        self.inner.kernel
    }

    /// `doca_dpa_thread_run`: from now on completions attached to the thread trigger its
    /// kernel.
    #[doc(alias = "doca_dpa_thread_run")]
    pub fn run(&self) -> Result<()> {
        doca!(doca_dpa_thread_run(self.inner.raw))
    }

    /// `doca_dpa_thread_stop`: no further activations; a running one ends first. On the soft
    /// device a kernel that does not end its activation within 5 s is given up on: `TIME_OUT`
    /// naming it, and its DPA context fails.
    #[doc(alias = "doca_dpa_thread_stop")]
    pub fn stop(&self) -> Result<()> {
        doca!(doca_dpa_thread_stop(self.inner.raw))
    }
}
