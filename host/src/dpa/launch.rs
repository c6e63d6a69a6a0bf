//! Kernel launches (`doca_dpa_kernel_launch_update_set` / `_add`): a thread kernel run once on N
//! threads, started when a sync event reaches a threshold, reporting its end on another.

use super::Dpa;
use crate::error::{Result, bail, check};
use crate::sync_event::SyncEvent;
use dpakit_abi::ThreadKernel;
use dpakit_sys as sys;

/// How a finished launch reports on its completion event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Update {
    Set,
    Add,
}

/// One kernel launch, built then started with [`KernelLaunch::start`]: `threads` threads of
/// the kernel, optionally gated by a sync event the DPA subscribes to and reported on one it
/// publishes.
///
/// ```no_run
/// # use dpakit_host::{dpa::{Dpa, KernelLaunch}, sync_event::SyncEvent, Result};
/// # use dpakit_abi::{RawArg, ThreadKernel};
/// # fn f(dpa: &Dpa, mark: &ThreadKernel<RawArg>, go: &SyncEvent, done: &SyncEvent, event: u64)
/// # -> Result<()> {
/// // Four threads of `mark` once `go` reaches 1; `done` becomes 1 when all returned.
/// KernelLaunch::new(dpa, mark, event)
///     .threads(4)
///     .wait_for(go, 1)
///     .then_set(done, 1)
///     .start()?;
/// done.wait_gt(0, u64::MAX)?;
/// # Ok(()) }
/// ```
#[doc(alias = "doca_dpa_kernel_launch_update_set")]
#[doc(alias = "doca_dpa_kernel_launch_update_add")]
#[must_use = "a launch does nothing until started"]
#[derive(Debug)]
pub struct KernelLaunch<'a> {
    dpa: &'a Dpa,
    func: *mut std::ffi::c_void,
    name: &'static str,
    arg: u64,
    threads: u32,
    wait: Option<(&'a SyncEvent, u64)>,
    completion: Option<(&'a SyncEvent, u64, Update)>,
}

impl<'a> KernelLaunch<'a> {
    /// A launch of `kernel` with its `u64` argument (for a typed kernel, the device address of
    /// its argument block), on one thread, with no events.
    pub fn new<A>(dpa: &'a Dpa, kernel: &ThreadKernel<A>, arg: u64) -> Self {
        Self {
            dpa,
            func: kernel.func(),
            name: kernel.name(),
            arg,
            threads: 1,
            wait: None,
            completion: None,
        }
    }

    /// Runs the kernel on `n` threads (1 to [`Dpa::max_threads_per_kernel`]); each reads its
    /// rank with `dpakit_dev::thread::rank`.
    pub fn threads(mut self, n: u32) -> Self {
        self.threads = n;
        self
    }

    /// Starts the kernel once `event` (the DPA a subscriber of it) reaches `threshold`
    /// (0 to 254).
    pub fn wait_for(mut self, event: &'a SyncEvent, threshold: u64) -> Self {
        self.wait = Some((event, threshold));
        self
    }

    /// When every thread has returned, sets `event` (the DPA a publisher of it) to `count`.
    pub fn then_set(mut self, event: &'a SyncEvent, count: u64) -> Self {
        self.completion = Some((event, count, Update::Set));
        self
    }

    /// When every thread has returned, adds `count` to `event`.
    pub fn then_add(mut self, event: &'a SyncEvent, count: u64) -> Self {
        self.completion = Some((event, count, Update::Add));
        self
    }

    /// Queues the launch; it runs once its event allows, after the launches queued before it.
    pub fn start(self) -> Result<()> {
        if self.func.is_null() {
            bail!(InvalidValue, "kernel `{}` has no address", self.name);
        }
        // SAFETY: a non-null function address, which is what doca_dpa_func_t holds.
        let func: sys::doca_dpa_func_t = Some(unsafe {
            std::mem::transmute::<*mut std::ffi::c_void, unsafe extern "C" fn()>(self.func)
        });
        let (wait, threshold) = self
            .wait
            .map_or((std::ptr::null_mut(), 0), |(e, t)| (e.raw(), t));
        let (comp, count, update) = self
            .completion
            .map_or((std::ptr::null_mut(), 0, Update::Set), |(e, c, u)| {
                (e.raw(), c, u)
            });
        let raw = self.dpa.raw();
        // SAFETY: live objects; a thread kernel takes one u64, which is what DOCA reads after
        // `func`.
        let (rc, name) = unsafe {
            match update {
                Update::Set => (
                    sys::doca_dpa_kernel_launch_update_set(
                        raw,
                        wait,
                        threshold,
                        comp,
                        count,
                        self.threads,
                        func,
                        self.arg,
                    ),
                    "doca_dpa_kernel_launch_update_set",
                ),
                Update::Add => (
                    sys::doca_dpa_kernel_launch_update_add(
                        raw,
                        wait,
                        threshold,
                        comp,
                        count,
                        self.threads,
                        func,
                        self.arg,
                    ),
                    "doca_dpa_kernel_launch_update_add",
                ),
            }
        };
        check(name, rc)
    }
}

impl Dpa {
    /// `doca_dpa_get_max_threads_per_kernel`: the most threads one [`KernelLaunch`] runs on.
    #[doc(alias = "doca_dpa_get_max_threads_per_kernel")]
    pub fn max_threads_per_kernel(&self) -> Result<u32> {
        let mut n = 0;
        crate::error::doca!(doca_dpa_get_max_threads_per_kernel(self.raw(), &mut n))?;
        Ok(n)
    }

    /// `doca_dpa_get_kernel_max_run_time`: how long a launched kernel may run before the
    /// context fails.
    #[doc(alias = "doca_dpa_get_kernel_max_run_time")]
    pub fn kernel_max_run_time(&self) -> Result<std::time::Duration> {
        let mut secs = 0;
        crate::error::doca!(doca_dpa_get_kernel_max_run_time(self.raw(), &mut secs))?;
        Ok(std::time::Duration::from_secs(secs))
    }
}
