//! DPA threads (`doca_dpa_thread`): a kernel, its `u64` argument and local storage.

use super::{DevPtr, Dpa};
use crate::error::{Result, bail, doca};
use dpakit_abi::ThreadKernel;
use dpakit_sys as sys;
use std::fmt;
use std::rc::Rc;

/// Configuration of a [`DpaThread`].
#[derive(Debug)]
pub struct DpaThreadBuilder<'a> {
    dpa: &'a Dpa,
    kernel: ThreadKernel,
    arg: u64,
    local_storage: u64,
    affinity: Option<&'a super::EuAffinity>,
}

struct Inner {
    raw: *mut sys::doca_dpa_thread,
    kernel: &'static str,
    dpa: Dpa,
}

impl Drop for Inner {
    #[doc(alias = "doca_dpa_thread_destroy")]
    fn drop(&mut self) {
        // Completion contexts keep a clone of their thread, so none is attached any more.
        let _ = doca!(doca_dpa_thread_destroy(self.raw));
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

impl<'a> DpaThreadBuilder<'a> {
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
    /// `doca_dpa_thread_start`. The thread is not triggered until [`DpaThread::run`].
    #[doc(alias = "doca_dpa_thread_start")]
    pub fn start(self) -> Result<DpaThread> {
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
            }),
        };
        // SAFETY: a non-null function address, which is what doca_dpa_func_t holds.
        let func =
            unsafe { std::mem::transmute::<*mut std::ffi::c_void, unsafe extern "C" fn()>(func) };
        doca!(doca_dpa_thread_set_func_arg(raw, Some(func), self.arg))?;
        doca!(doca_dpa_thread_set_local_storage(raw, self.local_storage))?;
        if let Some(affinity) = self.affinity {
            doca!(doca_dpa_thread_set_affinity(raw, affinity.raw()))?;
        }
        doca!(doca_dpa_thread_start(raw))?;
        Ok(thread)
    }
}

impl DpaThread {
    /// `doca_dpa_thread_create` + `doca_dpa_thread_set_func_arg`: a thread running `kernel`
    /// with `arg`.
    #[doc(alias = "doca_dpa_thread_create")]
    pub fn builder<'a>(dpa: &'a Dpa, kernel: &ThreadKernel, arg: u64) -> DpaThreadBuilder<'a> {
        DpaThreadBuilder {
            dpa,
            kernel: *kernel,
            arg,
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

    /// `doca_dpa_thread_stop`: no further activations; a running one ends first.
    #[doc(alias = "doca_dpa_thread_stop")]
    pub fn stop(&self) -> Result<()> {
        doca!(doca_dpa_thread_stop(self.inner.raw))
    }
}
