//! The DPA: a context running one app (`doca_dpa`), its threads, completion contexts, device
//! memory and RPCs.

mod affinity;
mod completion;
mod launch;
mod soft_settings;
mod thread;

pub use affinity::EuAffinity;
pub use completion::{
    ConsumerCompletion, ConsumerCompletionBuilder, DpaCompletion, NotificationCompletion,
};
pub use dpakit_abi::handles::DevPtr;
pub use launch::KernelLaunch;
pub(crate) use soft_settings::soft_only;
pub use thread::{ArgsBlock, DpaThread, DpaThreadBuilder};

/// A DPA app (`struct doca_dpa_app *`): made by `dpa_app!` beside the kernels.
pub type App = dpakit_abi::DpaApp;

use crate::dev::Dev;
use crate::error::{Error, Result, bail, check, doca};
use crate::mmap::Mmap;
use dpakit_abi::handles::MmapHandle;
use dpakit_abi::kernel::RPC_MAX_ARGS;
use dpakit_abi::{Pod, RpcKernel, RpcSignature, Word, WordTuple};
use dpakit_sys as sys;
use std::fmt;
use std::rc::Rc;

/// Configuration of a [`Dpa`] (`doca_dpa_create` … `doca_dpa_start`). The soft device's own
/// scheduling settings are in [`soft`](crate::soft).
#[derive(Debug)]
pub struct DpaBuilder {
    dev: Dev,
    app: Option<&'static App>,
    pub(crate) soft: soft_settings::DpaSettings,
}

struct DpaInner {
    raw: *mut sys::doca_dpa,
    app: &'static App,
    dev: Dev,
}

impl Drop for DpaInner {
    #[doc(alias = "doca_dpa_destroy")]
    fn drop(&mut self) {
        // Everything created on the context keeps a clone of it, so none is left.
        if let Err(e) = doca!(doca_dpa_destroy(self.raw)) {
            eprintln!("dpakit: Dpa dropped: {e}");
        }
    }
}

/// `doca_dpa`: a DPA context running one app. Clones share the context; it is destroyed when
/// the last clone and everything created on it are gone.
///
/// ```
/// use dpakit::dpa::Dpa;
///
/// # fn main() -> dpakit::Result<()> {
/// // The first DPA-capable device, and a context running the kit's kernels.
/// let dev = dpakit::open_dpa_dev()?;
/// let dpa = Dpa::builder(&dev).app(dpakit::kit_app()).start()?;
/// assert!(dpa.total_num_eus_available()? > 0);
/// # Ok(())
/// # }
/// ```
#[doc(alias = "doca_dpa")]
#[derive(Clone)]
pub struct Dpa {
    inner: Rc<DpaInner>,
}

impl fmt::Debug for Dpa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dpa")
            .field("app", &self.inner.app.name())
            .finish()
    }
}

impl DpaBuilder {
    /// `doca_dpa_set_app`.
    #[doc(alias = "doca_dpa_set_app")]
    pub fn app(mut self, app: &'static App) -> Self {
        self.app = Some(app);
        self
    }

    /// `doca_dpa_create` + `doca_dpa_set_app` + `doca_dpa_start`.
    #[doc(alias = "doca_dpa_start")]
    pub fn start(self) -> Result<Dpa> {
        let Some(app) = self.app else {
            bail!(
                BadState,
                "a DPA needs an app before start (doca_dpa_set_app): call DpaBuilder::app"
            );
        };
        let mut raw = std::ptr::null_mut();
        doca!(doca_dpa_create(self.dev.raw(), &mut raw))?;
        let dpa = Dpa {
            inner: Rc::new(DpaInner {
                raw,
                app,
                dev: self.dev,
            }),
        };
        doca!(doca_dpa_set_app(raw, app.raw().cast()))?;
        self.soft.apply(raw)?;
        doca!(doca_dpa_start(raw))?;
        Ok(dpa)
    }
}

impl Dpa {
    /// `doca_dpa_create`: a DPA context on `dev`.
    #[doc(alias = "doca_dpa_create")]
    pub fn builder(dev: &Dev) -> DpaBuilder {
        DpaBuilder {
            dev: dev.clone(),
            app: None,
            soft: Default::default(),
        }
    }

    pub(crate) fn raw(&self) -> *mut sys::doca_dpa {
        self.inner.raw
    }

    /// The device the context runs on.
    pub fn dev(&self) -> &Dev {
        &self.inner.dev
    }

    /// The app the context runs.
    pub fn app(&self) -> &'static App {
        self.inner.app
    }

    /// `doca_dpa_get_dpa_handle`.
    #[doc(alias = "doca_dpa_get_dpa_handle")]
    pub fn dpa_handle(&self) -> Result<u64> {
        let mut h = 0;
        doca!(doca_dpa_get_dpa_handle(self.inner.raw, &mut h))?;
        Ok(h)
    }

    /// `doca_dpa_get_total_num_eus_available`.
    #[doc(alias = "doca_dpa_get_total_num_eus_available")]
    pub fn total_num_eus_available(&self) -> Result<u32> {
        let mut n = 0;
        doca!(doca_dpa_get_total_num_eus_available(self.inner.raw, &mut n))?;
        Ok(n)
    }

    /// The fatal error that stopped the context (a kernel fault, or device-side misuse such as
    /// acking more credits than the queue holds), if any. Reported by the soft device; DOCA on
    /// hardware has no such query, so this is `None` there.
    pub fn error(&self) -> Option<Error> {
        soft_settings::dpa_error(self.inner.raw)
    }

    /// `Err` with the fatal error if there was one.
    #[inline]
    pub fn check(&self) -> Result<()> {
        self.error().map_or(Ok(()), Err)
    }

    /// `doca_dpa_rpc`: runs an RPC kernel of the app once with `args` (a tuple of the types the
    /// kernel declares) and returns its result, typed as the kernel declares it.
    #[doc(alias = "doca_dpa_rpc")]
    pub fn rpc<F: RpcSignature, A: WordTuple, R: Word>(
        &self,
        kernel: &RpcKernel<F, A, R>,
        args: A,
    ) -> Result<R> {
        const {
            assert!(
                A::LEN == F::NUM_ARGS,
                "one argument per parameter of the kernel"
            )
        };
        let a = args.into_words();
        let func: sys::doca_dpa_func_t = {
            let addr = kernel.func();
            if addr.is_null() {
                bail!(
                    InvalidValue,
                    "RPC kernel `{}` has no address",
                    kernel.name()
                );
            }
            // SAFETY: a non-null function address, which is what doca_dpa_func_t holds.
            Some(unsafe {
                std::mem::transmute::<*mut std::ffi::c_void, unsafe extern "C" fn()>(addr)
            })
        };
        let mut ret = 0u64;
        let raw = self.inner.raw;
        const _: () = assert!(RPC_MAX_ARGS == 4);
        // SAFETY: a live context; DOCA reads exactly as many u64 arguments as the kernel takes,
        // which is F::NUM_ARGS.
        let rc = unsafe {
            match F::NUM_ARGS {
                0 => sys::doca_dpa_rpc(raw, func, &mut ret),
                1 => sys::doca_dpa_rpc(raw, func, &mut ret, a[0]),
                2 => sys::doca_dpa_rpc(raw, func, &mut ret, a[0], a[1]),
                3 => sys::doca_dpa_rpc(raw, func, &mut ret, a[0], a[1], a[2]),
                _ => sys::doca_dpa_rpc(raw, func, &mut ret, a[0], a[1], a[2], a[3]),
            }
        };
        check("doca_dpa_rpc", rc)?;
        Ok(R::from_word(ret))
    }

    /// `doca_dpa_mem_alloc`: `size` bytes of device memory.
    #[doc(alias = "doca_dpa_mem_alloc")]
    pub fn mem_alloc(&self, size: usize) -> Result<DevPtr> {
        let mut p = 0;
        doca!(doca_dpa_mem_alloc(self.inner.raw, size, &mut p))?;
        Ok(DevPtr(p))
    }

    /// `doca_dpa_mem_free`.
    #[doc(alias = "doca_dpa_mem_free")]
    pub fn mem_free(&self, ptr: DevPtr) -> Result<()> {
        doca!(doca_dpa_mem_free(self.inner.raw, ptr.raw()))
    }

    /// `doca_dpa_h2d_memcpy`: copies `src` to device memory at `dst`.
    #[doc(alias = "doca_dpa_h2d_memcpy")]
    pub fn h2d_memcpy(&self, dst: DevPtr, src: &[u8]) -> Result<()> {
        // SAFETY: `src` is readable for its length; DOCA only reads it.
        let rc = unsafe {
            sys::doca_dpa_h2d_memcpy(
                self.inner.raw,
                dst.raw(),
                src.as_ptr().cast_mut().cast(),
                src.len(),
            )
        };
        check("doca_dpa_h2d_memcpy", rc)
    }

    /// `doca_dpa_d2h_memcpy`: copies device memory at `src` into `dst`.
    #[doc(alias = "doca_dpa_d2h_memcpy")]
    pub fn d2h_memcpy(&self, dst: &mut [u8], src: DevPtr) -> Result<()> {
        // SAFETY: `dst` is writable for its length.
        let rc = unsafe {
            sys::doca_dpa_d2h_memcpy(
                self.inner.raw,
                dst.as_mut_ptr().cast(),
                src.raw(),
                dst.len(),
            )
        };
        check("doca_dpa_d2h_memcpy", rc)
    }

    /// Allocates device memory holding `value` (alloc + h2d copy), e.g. a kernel argument block.
    pub fn mem_alloc_init<T: Pod>(&self, value: &T) -> Result<DevPtr> {
        let ptr = self.mem_alloc(size_of::<T>())?;
        if let Err(e) = self.h2d_memcpy(ptr, dpakit_abi::bytes_of(value)) {
            let _ = self.mem_free(ptr);
            return Err(e);
        }
        Ok(ptr)
    }

    /// `doca_mmap_dev_get_dpa_handle` for this context's device: the handle kernels use to name
    /// `mmap` (which must have the device added and be started).
    #[doc(alias = "doca_mmap_dev_get_dpa_handle")]
    pub fn mmap_handle(&self, mmap: &Mmap) -> Result<MmapHandle> {
        mmap.dpa_handle(&self.inner.dev)
    }
}
