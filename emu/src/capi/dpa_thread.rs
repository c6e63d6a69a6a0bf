//! `doca_dpa.h`, threads: create, set the kernel, start, run, stop.

use super::dpa::{self, DpaObj, EuAffinityObj};
use super::registry::{self, Kind, Object};
use super::types::*;
use super::{call, out};
use crate::dpa::DpaThread;
use crate::error::{ErrorCode, Result, bail, err};
use std::cell::{Cell, Ref, RefCell};
use std::ffi::c_void;

/// A `struct doca_dpa_thread`.
pub(crate) struct DpaThreadObj {
    pub dpa: *mut c_void,
    /// The kernel's address and argument (`doca_dpa_thread_set_func_arg`).
    func: Cell<Option<(usize, u64)>>,
    local_storage: Cell<u64>,
    affinity: Cell<Option<u32>>,
    model: RefCell<Option<DpaThread>>,
    running: Cell<bool>,
    /// Completion contexts attached to it that still exist.
    pub(crate) users: super::Users,
}

impl Object for DpaThreadObj {
    const KIND: Kind = Kind::DpaThread;
}

pub(crate) fn thread<'a>(ptr: *const doca_dpa_thread, param: &str) -> Result<&'a DpaThreadObj> {
    registry::get::<DpaThreadObj>(ptr.cast(), param)
}

impl DpaThreadObj {
    pub(crate) fn dpa(&self) -> Result<&DpaObj> {
        dpa::dpa(self.dpa.cast(), "the thread's DPA")
    }

    /// The started thread.
    pub(crate) fn model(&self) -> Result<Ref<'_, DpaThread>> {
        Ref::filter_map(self.model.borrow(), Option::as_ref).map_err(|_| {
            err(
                ErrorCode::BadState,
                "the DPA thread is not started: call doca_dpa_thread_start first",
            )
        })
    }

    fn require_idle(&self, what: &str) -> Result<()> {
        if self.model.borrow().is_some() {
            return Err(super::not_idle(
                what,
                "stop and destroy the thread, then create another",
            ));
        }
        Ok(())
    }
}

/// `doca_dpa_thread_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_thread_create(
    dpa: *mut doca_dpa,
    dpa_thread: *mut *mut doca_dpa_thread,
) -> doca_error_t {
    call("doca_dpa_thread_create", || {
        let d = dpa::dpa(dpa, "dpa")?;
        super::non_null(dpa_thread, "dpa_thread")?;
        let handle = registry::register(Box::new(DpaThreadObj {
            dpa: dpa.cast(),
            func: Cell::new(None),
            local_storage: Cell::new(0),
            affinity: Cell::new(None),
            model: RefCell::new(None),
            running: Cell::new(false),
            users: super::Users::default(),
        }))?;
        d.users.hold();
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(dpa_thread, "dpa_thread", handle.cast()) }
    })
}

/// `doca_dpa_thread_destroy`: stops the thread first if it is started; `IN_USE` while
/// completions attached to it exist. A thread whose kernel never ends its activation is
/// destroyed all the same, its worker abandoned (see `DpaThread::stop`): `TIME_OUT` naming the
/// kernel if this call is where the stop timed out, success if an earlier stop reported it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_thread_destroy(dpa_thread: *mut doca_dpa_thread) -> doca_error_t {
    call("doca_dpa_thread_destroy", || {
        let t = self::thread(dpa_thread, "dpa_thread")?;
        t.users
            .require_none("completion context(s) attached to this thread")?;
        let stopped = match t.model.borrow_mut().take() {
            Some(model) => {
                let reported = model.is_abandoned();
                let stopped = model.stop();
                drop(model);
                if reported { Ok(()) } else { stopped }
            }
            None => Ok(()),
        };
        t.dpa()?.users.release();
        registry::retire::<DpaThreadObj>(dpa_thread.cast());
        stopped.map_err(|e| {
            err(
                e.code(),
                format!("the thread is destroyed all the same. {}", e.message()),
            )
        })
    })
}

/// `doca_dpa_thread_set_func_arg`: `func` must be a thread kernel of the DPA's app.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_thread_set_func_arg(
    dpa_thread: *mut doca_dpa_thread,
    func: doca_dpa_func_t,
    arg: u64,
) -> doca_error_t {
    call("doca_dpa_thread_set_func_arg", || {
        let t = self::thread(dpa_thread, "dpa_thread")?;
        t.require_idle("setting the kernel")?;
        let Some(func) = func else {
            bail!(
                InvalidValue,
                "func is NULL: pass the thread kernel's address"
            );
        };
        // Checked now when the app is known, else at start.
        if let Ok(model) = t.dpa()?.model() {
            DpaThread::builder_for_func(&model, func as usize, arg)?;
        }
        t.func.set(Some((func as usize, arg)));
        Ok(())
    })
}

/// `doca_dpa_thread_set_local_storage`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_thread_set_local_storage(
    dpa_thread: *mut doca_dpa_thread,
    dev_ptr: doca_dpa_dev_uintptr_t,
) -> doca_error_t {
    call("doca_dpa_thread_set_local_storage", || {
        let t = self::thread(dpa_thread, "dpa_thread")?;
        t.require_idle("setting the local storage")?;
        t.local_storage.set(dev_ptr);
        Ok(())
    })
}

/// `doca_dpa_thread_set_affinity`: the soft device records the EU (its workers serve every
/// EU).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_thread_set_affinity(
    dpa_thread: *mut doca_dpa_thread,
    affinity: *const doca_dpa_eu_affinity,
) -> doca_error_t {
    call("doca_dpa_thread_set_affinity", || {
        let t = self::thread(dpa_thread, "dpa_thread")?;
        let a = registry::get::<EuAffinityObj>(affinity.cast(), "affinity")?;
        t.require_idle("setting the affinity")?;
        let Some(eu) = a.eu.get() else {
            bail!(
                InvalidValue,
                "the affinity names no EU yet: call doca_dpa_eu_affinity_set first"
            );
        };
        t.affinity.set(Some(eu));
        Ok(())
    })
}

/// `doca_dpa_thread_start`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_thread_start(dpa_thread: *mut doca_dpa_thread) -> doca_error_t {
    call("doca_dpa_thread_start", || {
        let t = self::thread(dpa_thread, "dpa_thread")?;
        t.require_idle("starting it again")?;
        let Some((func, arg)) = t.func.get() else {
            bail!(
                BadState,
                "set the kernel first (doca_dpa_thread_set_func_arg)"
            );
        };
        let dpa = t.dpa()?.model()?;
        let started = DpaThread::builder_for_func(&dpa, func, arg)?
            .local_storage(crate::dpa::DevPtr(t.local_storage.get()))
            .start()?;
        *t.model.borrow_mut() = Some(started);
        Ok(())
    })
}

/// `doca_dpa_thread_run`: attached completions trigger the kernel from now on.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_thread_run(dpa_thread: *mut doca_dpa_thread) -> doca_error_t {
    call("doca_dpa_thread_run", || {
        let t = self::thread(dpa_thread, "dpa_thread")?;
        t.model()?.run()?;
        t.running.set(true);
        Ok(())
    })
}

/// `doca_dpa_thread_stop`: no further activations; a running one ends first.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_thread_stop(dpa_thread: *mut doca_dpa_thread) -> doca_error_t {
    call("doca_dpa_thread_stop", || {
        let t = self::thread(dpa_thread, "dpa_thread")?;
        t.model()?.stop()?;
        t.running.set(false);
        Ok(())
    })
}
