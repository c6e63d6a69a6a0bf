//! `doca_dpa.h`: DPA contexts, their app, device memory, RPCs and EU affinity. Threads and
//! completions are in `dpa_thread` and `dpa_completion`.

use super::dev::{self, DevObj};
use super::registry::{self, Kind, Object};
use super::soft_config::SoftConfig;
use super::types::*;
use super::{call, not_idle, out};
use crate::dpa::{App, Dpa, KernelKind};
use crate::error::{ErrorCode, Result, bail, err};
use std::cell::{Cell, Ref, RefCell};
use std::ffi::c_void;

/// A `struct doca_dpa`.
pub(crate) struct DpaObj {
    dev: *mut c_void,
    app: RefCell<Option<App>>,
    /// How the soft device runs its kernels (`dpakit_soft_dpa_set_*`, `DPAKIT_SOFT_*`).
    pub soft: RefCell<SoftConfig>,
    model: RefCell<Option<Dpa>>,
    /// Objects created on the context that still exist.
    pub(crate) users: super::Users,
}

impl Object for DpaObj {
    const KIND: Kind = Kind::Dpa;
}

pub(crate) fn dpa<'a>(ptr: *const doca_dpa, param: &str) -> Result<&'a DpaObj> {
    registry::get::<DpaObj>(ptr.cast(), param)
}

impl DpaObj {
    /// The started context.
    pub(crate) fn model(&self) -> Result<Ref<'_, Dpa>> {
        Ref::filter_map(self.model.borrow(), Option::as_ref).map_err(|_| {
            err(
                ErrorCode::BadState,
                "the DPA context is not started: call doca_dpa_start first",
            )
        })
    }

    pub(crate) fn is_started(&self) -> bool {
        self.model.borrow().is_some()
    }

    pub(crate) fn require_idle(&self, what: &str) -> Result<()> {
        if self.is_started() {
            return Err(not_idle(what, "stop the DPA first (doca_dpa_stop)"));
        }
        Ok(())
    }

    fn require_unused(&self, what: &str) -> Result<()> {
        if self.users.count() > 0 {
            bail!(
                InUse,
                "cannot {what} the DPA context: {} object(s) created on it (threads, \
                 completions, MsgQs, affinities, sync events) still exist; destroy them first",
                self.users.count()
            );
        }
        Ok(())
    }

    fn dev(&self) -> Result<&DevObj> {
        dev::dev(self.dev.cast(), "the DPA's device")
    }
}

/// `doca_dpa_cap_is_supported`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_cap_is_supported(devinfo: *const doca_devinfo) -> doca_error_t {
    call("doca_dpa_cap_is_supported", || {
        dev::devinfo(devinfo, "devinfo")?.dpa_cap_is_supported()
    })
}

/// `doca_dpa_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_create(
    dev: *mut doca_dev,
    dpa: *mut *mut doca_dpa,
) -> doca_error_t {
    call("doca_dpa_create", || {
        let d = dev::dev(dev, "dev")?;
        super::non_null(dpa, "dpa")?;
        d.dev.as_devinfo().dpa_cap_is_supported()?;
        let handle = registry::register(Box::new(DpaObj {
            dev: dev.cast(),
            app: RefCell::new(None),
            soft: RefCell::new(SoftConfig::from_env()),
            model: RefCell::new(None),
            users: super::Users::default(),
        }))?;
        d.users.hold();
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(dpa, "dpa", handle.cast()) }
    })
}

/// `doca_dpa_destroy`: `IN_USE` while objects created on the context exist.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_destroy(dpa: *mut doca_dpa) -> doca_error_t {
    call("doca_dpa_destroy", || {
        let d = self::dpa(dpa, "dpa")?;
        d.require_unused("destroy")?;
        drop(d.model.borrow_mut().take());
        d.dev()?.users.release();
        registry::retire::<DpaObj>(dpa.cast());
        Ok(())
    })
}

/// `doca_dpa_set_app`: on the soft device the app is a descriptor made by `dpa_app!`,
/// `DPAKIT_SOFT_APP` or `cargo xtask build-dpa`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_set_app(
    dpa: *mut doca_dpa,
    app: *mut doca_dpa_app,
) -> doca_error_t {
    call("doca_dpa_set_app", || {
        let d = self::dpa(dpa, "dpa")?;
        super::non_null(app, "app")?;
        d.require_idle("setting the app")?;
        *d.app.borrow_mut() = Some(App::from_symbol(app.cast())?);
        Ok(())
    })
}

/// `doca_dpa_start`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_start(dpa: *mut doca_dpa) -> doca_error_t {
    call("doca_dpa_start", || {
        let d = self::dpa(dpa, "dpa")?;
        if d.is_started() {
            bail!(BadState, "the DPA context is already started");
        }
        let Some(app) = d.app.borrow().clone() else {
            bail!(
                BadState,
                "a DPA context needs an app before start: call doca_dpa_set_app"
            );
        };
        let soft = d.soft.borrow().clone();
        let mut builder = Dpa::builder(&d.dev()?.dev)
            .app(app)
            .sched_mode(soft.mode)
            .pin_workers(soft.pin)
            .exec_mode(soft.exec)
            .isa_budget(soft.isa.budget);
        if let Some(image) = soft.isa.image {
            builder = builder.isa_image(image);
        }
        if let Some(n) = soft.workers {
            builder = builder.workers(n);
        }
        *d.model.borrow_mut() = Some(builder.start()?);
        Ok(())
    })
}

/// `doca_dpa_stop`: `IN_USE` while objects created on the context exist.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_stop(dpa: *mut doca_dpa) -> doca_error_t {
    call("doca_dpa_stop", || {
        let d = self::dpa(dpa, "dpa")?;
        if !d.is_started() {
            bail!(BadState, "the DPA context is not started");
        }
        d.require_unused("stop")?;
        drop(d.model.borrow_mut().take());
        Ok(())
    })
}

/// `doca_dpa_get_dpa_handle`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_get_dpa_handle(
    dpa: *mut doca_dpa,
    handle: *mut doca_dpa_dev_t,
) -> doca_error_t {
    call("doca_dpa_get_dpa_handle", || {
        let h = self::dpa(dpa, "dpa")?.model()?.dpa_handle();
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(handle, "handle", h) }
    })
}

/// `doca_dpa_peek_at_last_error`: `SUCCESS` while the context is healthy (or not started),
/// `BAD_STATE` once it failed, with the fatal error as the explanation; nothing is cleared, as a
/// failed context stays failed until it is destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_peek_at_last_error(dpa: *const doca_dpa) -> doca_error_t {
    call("doca_dpa_peek_at_last_error", || {
        let d = self::dpa(dpa, "dpa")?;
        let Some(fatal) = d.model().ok().and_then(|model| model.error()) else {
            return Ok(());
        };
        bail!(
            BadState,
            "the DPA context has failed ({}: {}); it stays failed: destroy it and create another",
            fatal.code().name(),
            fatal.message()
        )
    })
}

/// `doca_dpa_set_log_level`: the most verbose level of kernels' messages printed (the soft
/// device keeps one level for every context).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_set_log_level(
    dpa: *mut doca_dpa,
    log_level: doca_dpa_dev_log_level_t,
) -> doca_error_t {
    call("doca_dpa_set_log_level", || {
        self::dpa(dpa, "dpa")?;
        if !matches!(log_level, 10 | 20 | 30 | 40 | 50 | 60) {
            bail!(
                InvalidValue,
                "log_level {log_level} is not a doca_dpa_dev_log_level_t (DISABLE 10, CRIT 20,                  ERROR 30, WARNING 40, INFO 50, DEBUG 60)"
            );
        }
        crate::set_log_level(log_level);
        Ok(())
    })
}

/// `doca_dpa_get_total_num_eus_available`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_get_total_num_eus_available(
    dpa: *mut doca_dpa,
    total_num_eus: *mut core::ffi::c_uint,
) -> doca_error_t {
    call("doca_dpa_get_total_num_eus_available", || {
        let d = self::dpa(dpa, "dpa")?;
        let n = d
            .dev()?
            .dev
            .as_devinfo()
            .dpa_get_total_num_eus_available()?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(total_num_eus, "total_num_eus", n) }
    })
}

/// `doca_dpa_mem_alloc`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_mem_alloc(
    dpa: *mut doca_dpa,
    size: usize,
    dev_ptr: *mut doca_dpa_dev_uintptr_t,
) -> doca_error_t {
    call("doca_dpa_mem_alloc", || {
        let d = self::dpa(dpa, "dpa")?;
        super::non_null(dev_ptr, "dev_ptr")?;
        let p = d.model()?.mem_alloc(size)?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(dev_ptr, "dev_ptr", p.raw()) }
    })
}

/// `doca_dpa_mem_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_mem_free(
    dpa: *mut doca_dpa,
    dev_ptr: doca_dpa_dev_uintptr_t,
) -> doca_error_t {
    call("doca_dpa_mem_free", || {
        self::dpa(dpa, "dpa")?
            .model()?
            .mem_free(crate::dpa::DevPtr(dev_ptr))
    })
}

/// `doca_dpa_h2d_memcpy`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_h2d_memcpy(
    dpa: *mut doca_dpa,
    dst_ptr: doca_dpa_dev_uintptr_t,
    src_ptr: *mut c_void,
    size: usize,
) -> doca_error_t {
    call("doca_dpa_h2d_memcpy", || {
        let d = self::dpa(dpa, "dpa")?;
        if size > 0 {
            super::non_null(src_ptr, "src_ptr")?;
        }
        let src: &[u8] = if size == 0 {
            &[]
        } else {
            // SAFETY: `size` readable bytes at `src_ptr` by the C contract.
            unsafe { std::slice::from_raw_parts(src_ptr.cast::<u8>(), size) }
        };
        d.model()?.h2d_memcpy(crate::dpa::DevPtr(dst_ptr), src)
    })
}

/// `doca_dpa_d2h_memcpy`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_d2h_memcpy(
    dpa: *mut doca_dpa,
    dst_ptr: *mut c_void,
    src_ptr: doca_dpa_dev_uintptr_t,
    size: usize,
) -> doca_error_t {
    call("doca_dpa_d2h_memcpy", || {
        let d = self::dpa(dpa, "dpa")?;
        if size > 0 {
            super::non_null(dst_ptr, "dst_ptr")?;
        }
        let dst: &mut [u8] = if size == 0 {
            &mut []
        } else {
            // SAFETY: `size` writable bytes at `dst_ptr` by the C contract.
            unsafe { std::slice::from_raw_parts_mut(dst_ptr.cast::<u8>(), size) }
        };
        d.model()?.d2h_memcpy(dst, crate::dpa::DevPtr(src_ptr))
    })
}

/// How many arguments the RPC kernel `func` takes (the C half of `doca_dpa_rpc` reads that many
/// from its variadic list). Validates everything `doca_dpa_rpc` is given.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_internal_rpc_num_args(
    dpa: *mut doca_dpa,
    func: doca_dpa_func_t,
    retval: *mut u64,
    num_args: *mut u32,
) -> doca_error_t {
    call("doca_dpa_rpc", || {
        let d = self::dpa(dpa, "dpa")?;
        super::non_null(retval, "retval")?;
        let Some(func) = func else {
            bail!(InvalidValue, "func is NULL: pass the RPC kernel's address");
        };
        let model = d.model()?;
        let Some(kernel) = model.app().kernel(func as usize, KernelKind::Rpc) else {
            // Let the model explain which kernels exist.
            return model.rpc_func(func as usize, &[]).map(drop);
        };
        // SAFETY: writable by the C contract (checked non-null by the C side).
        unsafe { out(num_args, "num_args", kernel.num_args) }
    })
}

/// Runs the RPC kernel `func` with `num_args` arguments (the C half of `doca_dpa_rpc`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_internal_rpc_call(
    dpa: *mut doca_dpa,
    func: doca_dpa_func_t,
    retval: *mut u64,
    args: *const u64,
    num_args: u32,
) -> doca_error_t {
    call("doca_dpa_rpc", || {
        let d = self::dpa(dpa, "dpa")?;
        let func = func.ok_or_else(|| err(ErrorCode::InvalidValue, "func is NULL"))?;
        let args: &[u64] = if num_args == 0 {
            &[]
        } else {
            super::non_null(args, "args")?;
            // SAFETY: the C side passes its array of `num_args` (<= 4) values.
            unsafe { std::slice::from_raw_parts(args, num_args.min(4) as usize) }
        };
        let value = d.model()?.rpc_func(func as usize, args)?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(retval, "retval", value) }
    })
}

/// A `struct doca_dpa_eu_affinity`.
pub(crate) struct EuAffinityObj {
    dpa: *mut c_void,
    pub eu: Cell<Option<u32>>,
}

impl Object for EuAffinityObj {
    const KIND: Kind = Kind::EuAffinity;
}

/// `doca_dpa_eu_affinity_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_eu_affinity_create(
    dpa: *mut doca_dpa,
    affinity: *mut *mut doca_dpa_eu_affinity,
) -> doca_error_t {
    call("doca_dpa_eu_affinity_create", || {
        let d = self::dpa(dpa, "dpa")?;
        super::non_null(affinity, "affinity")?;
        let handle = registry::register(Box::new(EuAffinityObj {
            dpa: dpa.cast(),
            eu: Cell::new(None),
        }))?;
        d.users.hold();
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(affinity, "affinity", handle.cast()) }
    })
}

/// `doca_dpa_eu_affinity_destroy`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_eu_affinity_destroy(
    affinity: *mut doca_dpa_eu_affinity,
) -> doca_error_t {
    call("doca_dpa_eu_affinity_destroy", || {
        let a = registry::get::<EuAffinityObj>(affinity.cast(), "affinity")?;
        if let Ok(d) = self::dpa(a.dpa.cast(), "the affinity's DPA") {
            d.users.release();
        }
        registry::retire::<EuAffinityObj>(affinity.cast());
        Ok(())
    })
}

/// `doca_dpa_eu_affinity_set`: `eu_id` below `doca_dpa_get_total_num_eus_available`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_eu_affinity_set(
    affinity: *mut doca_dpa_eu_affinity,
    eu_id: core::ffi::c_uint,
) -> doca_error_t {
    call("doca_dpa_eu_affinity_set", || {
        let a = registry::get::<EuAffinityObj>(affinity.cast(), "affinity")?;
        let d = self::dpa(a.dpa.cast(), "the affinity's DPA")?;
        let total = d
            .dev()?
            .dev
            .as_devinfo()
            .dpa_get_total_num_eus_available()?;
        if eu_id >= total {
            bail!(
                InvalidValue,
                "EU {eu_id} does not exist: the DPA has EUs 0..{total} \
                 (doca_dpa_get_total_num_eus_available)"
            );
        }
        a.eu.set(Some(eu_id));
        Ok(())
    })
}
