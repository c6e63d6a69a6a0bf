//! `doca_mmap.h`: memory maps, and their handles for DPA kernels.

use super::dev::{self, DevObj};
use super::dpa;
use super::registry::{self, Kind, Object};
use super::types::*;
use super::{call, out};
use crate::dpa::memory::unregister_mmap;
use crate::dpa::register_mmap;
use crate::error::{Result, bail};
use crate::mmap::{AccessFlags, Mmap};
use dpakit_abi::handles::MmapHandle;
use std::cell::RefCell;
use std::ffi::c_void;

/// A `struct doca_mmap`: the model's mmap, the devices added to it and the DPA handles taken.
pub(crate) struct MmapObj {
    pub mmap: Mmap,
    devs: RefCell<Vec<*mut c_void>>,
    /// `doca_mmap_set_max_num_devices`.
    max_devs: std::cell::Cell<Option<u32>>,
    handles: RefCell<Vec<(*mut c_void, MmapHandle)>>,
}

impl Object for MmapObj {
    const KIND: Kind = Kind::Mmap;
}

pub(crate) fn mmap<'a>(ptr: *const doca_mmap, param: &str) -> Result<&'a MmapObj> {
    registry::get::<MmapObj>(ptr.cast(), param)
}

/// `doca_mmap_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_mmap_create(mmap: *mut *mut doca_mmap) -> doca_error_t {
    call("doca_mmap_create", || {
        super::non_null(mmap, "mmap")?;
        let handle = registry::register(Box::new(MmapObj {
            mmap: Mmap::create()?,
            devs: RefCell::new(Vec::new()),
            max_devs: std::cell::Cell::new(None),
            handles: RefCell::new(Vec::new()),
        }))?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(mmap, "mmap", handle.cast()) }
    })
}

/// `doca_mmap_destroy`: `IN_USE` while buffers point into it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_mmap_destroy(mmap: *mut doca_mmap) -> doca_error_t {
    call("doca_mmap_destroy", || {
        let m = self::mmap(mmap, "mmap")?;
        let bufs = m.mmap.get_num_bufs();
        if bufs > 0 {
            bail!(
                InUse,
                "{bufs} buffer(s) still point into the mmap: return them to their inventory first"
            );
        }
        for (_, handle) in m.handles.borrow_mut().drain(..) {
            unregister_mmap(handle);
        }
        for dev in m.devs.borrow_mut().drain(..) {
            if let Ok(d) = dev::dev(dev.cast(), "dev") {
                d.users.release();
            }
        }
        registry::retire::<MmapObj>(mmap.cast());
        Ok(())
    })
}

/// `doca_mmap_set_memrange`: the memory stays the caller's; it must outlive the mmap.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_mmap_set_memrange(
    mmap: *mut doca_mmap,
    addr: *mut c_void,
    len: usize,
) -> doca_error_t {
    call("doca_mmap_set_memrange", || {
        let m = self::mmap(mmap, "mmap")?;
        // SAFETY: by DOCA's contract the caller registers memory it owns and keeps it alive and
        // in place until the mmap is destroyed.
        unsafe { m.mmap.set_memrange(addr.cast(), len) }
    })
}

/// `doca_mmap_set_dpa_memrange`: DPA memory from `doca_dpa_mem_alloc`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_mmap_set_dpa_memrange(
    mmap: *mut doca_mmap,
    dpa: *mut doca_dpa,
    dpa_addr: u64,
    len: usize,
) -> doca_error_t {
    call("doca_mmap_set_dpa_memrange", || {
        let m = self::mmap(mmap, "mmap")?;
        let d = dpa::dpa(dpa, "dpa")?;
        let at = d.model()?.device_range(crate::dpa::DevPtr(dpa_addr), len)?;
        // SAFETY: the range lies inside a live DPA allocation, which DOCA's contract keeps alive
        // while the mmap covers it.
        unsafe { m.mmap.set_memrange(at, len) }
    })
}

/// `doca_mmap_set_permissions`: `doca_access_flag` bits.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_mmap_set_permissions(
    mmap: *mut doca_mmap,
    access_mask: u32,
) -> doca_error_t {
    call("doca_mmap_set_permissions", || {
        let m = self::mmap(mmap, "mmap")?;
        m.mmap.set_permissions(AccessFlags::from_bits(access_mask)?)
    })
}

/// `doca_mmap_add_dev`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_mmap_add_dev(
    mmap: *mut doca_mmap,
    dev: *mut doca_dev,
) -> doca_error_t {
    call("doca_mmap_add_dev", || {
        let m = self::mmap(mmap, "mmap")?;
        let d: &DevObj = dev::dev(dev, "dev")?;
        if let Some(max) = m.max_devs.get() {
            let added = m.devs.borrow().len();
            if added >= max as usize {
                bail!(
                    InvalidValue,
                    "the mmap already has {added} device(s), the maximum set with                      doca_mmap_set_max_num_devices ({max})"
                );
            }
        }
        m.mmap.add_dev(&d.dev)?;
        d.users.hold();
        m.devs.borrow_mut().push(dev.cast());
        Ok(())
    })
}

/// `doca_mmap_set_max_num_devices`: before start, and not below the devices already added.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_mmap_set_max_num_devices(
    mmap: *mut doca_mmap,
    max_num_devices: u32,
) -> doca_error_t {
    call("doca_mmap_set_max_num_devices", || {
        let m = self::mmap(mmap, "mmap")?;
        if m.mmap.is_started() {
            return Err(super::not_idle(
                "setting the maximum number of devices",
                "set it before doca_mmap_start",
            ));
        }
        let added = m.devs.borrow().len();
        if max_num_devices == 0 || (max_num_devices as usize) < added {
            bail!(
                InvalidValue,
                "max_num_devices {max_num_devices} is below the {} device(s) an mmap needs                  ({added} added already)",
                added.max(1)
            );
        }
        m.max_devs.set(Some(max_num_devices));
        Ok(())
    })
}

/// `doca_mmap_start`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_mmap_start(mmap: *mut doca_mmap) -> doca_error_t {
    call("doca_mmap_start", || self::mmap(mmap, "mmap")?.mmap.start())
}

/// `doca_mmap_stop`: the mmap may be configured again (permissions, devices) and started anew.
/// `NOT_PERMITTED` while buffers point into it, `BAD_STATE` if it is not started. The DPA handles
/// taken from it end here, as DOCA's exports end with a stop: kernels need new ones after the
/// next start.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_mmap_stop(mmap: *mut doca_mmap) -> doca_error_t {
    call("doca_mmap_stop", || {
        let m = self::mmap(mmap, "mmap")?;
        m.mmap.stop()?;
        for (_, handle) in m.handles.borrow_mut().drain(..) {
            unregister_mmap(handle);
        }
        Ok(())
    })
}

/// `doca_mmap_get_memrange`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_mmap_get_memrange(
    mmap: *const doca_mmap,
    addr: *mut *mut c_void,
    len: *mut usize,
) -> doca_error_t {
    call("doca_mmap_get_memrange", || {
        let m = self::mmap(mmap, "mmap")?;
        super::non_null(addr, "addr")?;
        super::non_null(len, "len")?;
        let (a, l) = m.mmap.get_memrange()?;
        // SAFETY: both checked non-null; writable by the C contract.
        unsafe {
            out(addr, "addr", a.cast())?;
            out(len, "len", l)
        }
    })
}

/// `doca_mmap_dev_get_dpa_handle`: `NOT_PERMITTED` before start, `NOT_FOUND` for a device not
/// added to the mmap. Asking again for the same device returns the same handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_mmap_dev_get_dpa_handle(
    mmap: *mut doca_mmap,
    dev: *const doca_dev,
    dpa_mmap_handle: *mut doca_dpa_dev_mmap_t,
) -> doca_error_t {
    call("doca_mmap_dev_get_dpa_handle", || {
        let m = self::mmap(mmap, "mmap")?;
        let d = dev::dev(dev, "dev")?;
        super::non_null(dpa_mmap_handle, "dpa_mmap_handle")?;
        if !m.mmap.is_started() {
            bail!(
                NotPermitted,
                "the mmap is not started: call doca_mmap_start before taking DPA handles"
            );
        }
        if !m.mmap.has_dev(&d.dev) {
            bail!(
                NotFound,
                "device {} was not added to the mmap: call doca_mmap_add_dev before start",
                d.dev.as_devinfo().get_pci_addr_str()
            );
        }
        let known = m
            .handles
            .borrow()
            .iter()
            .find(|(dev_handle, _)| *dev_handle == dev.cast_mut().cast())
            .map(|&(_, h)| h);
        let handle = match known {
            Some(h) => h,
            None => {
                let h = register_mmap(&d.dev, &m.mmap)?;
                m.handles.borrow_mut().push((dev.cast_mut().cast(), h));
                h
            }
        };
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(dpa_mmap_handle, "dpa_mmap_handle", handle.raw()) }
    })
}
