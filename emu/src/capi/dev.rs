//! `doca_dev.h`: device and representor lists, opening devices, device queries.

use super::registry::{self, Kind, Object};
use super::types::*;
use super::{c_str, call, call_value, copy_c_string, out};
use crate::dev::{self as model, RepFilter, Side};
use crate::error::{ErrorCode, Result, bail, err};
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void};
use std::sync::{Mutex, OnceLock};

/// A `struct doca_devinfo`.
pub(crate) struct DevinfoObj {
    pub info: model::Devinfo,
}
impl Object for DevinfoObj {
    const KIND: Kind = Kind::Devinfo;
}

/// A `struct doca_devinfo_rep`.
pub(crate) struct DevinfoRepObj {
    pub rep: model::DevinfoRep,
}
impl Object for DevinfoRepObj {
    const KIND: Kind = Kind::DevinfoRep;
}

/// A `struct doca_dev`: an open device, with the devinfo `doca_dev_as_devinfo` returns and a
/// count of the objects created on it (it cannot close while they exist).
pub(crate) struct DevObj {
    pub dev: model::Dev,
    devinfo: *mut c_void,
    pub(crate) users: super::Users,
}
impl Object for DevObj {
    const KIND: Kind = Kind::Dev;
}

/// A `struct doca_dev_rep`.
pub(crate) struct DevRepObj {
    /// What Comch servers are created on.
    #[allow(dead_code)]
    pub rep: model::DevRep,
    pub(crate) users: super::Users,
}
impl Object for DevRepObj {
    const KIND: Kind = Kind::DevRep;
}

/// The device behind a `const struct doca_devinfo *` parameter.
pub(crate) fn devinfo<'a>(ptr: *const doca_devinfo, param: &str) -> Result<&'a model::Devinfo> {
    Ok(&registry::get::<DevinfoObj>(ptr.cast(), param)?.info)
}

/// The open device behind a `struct doca_dev *` parameter.
pub(crate) fn dev<'a>(ptr: *const doca_dev, param: &str) -> Result<&'a DevObj> {
    registry::get::<DevObj>(ptr.cast(), param)
}

/// Which kind of list an array handed to C is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ListKind {
    Devinfo,
    Rep,
}

/// The arrays `*_create_list` handed out (address → kind and entries), so `*_destroy_list`
/// recognises them. A B-tree rather than a hash map: it frees its nodes once empty, so a program
/// that destroyed its lists leaves nothing behind for a leak checker to flag.
fn lists() -> &'static Mutex<BTreeMap<usize, (ListKind, HandleArray)>> {
    static LISTS: OnceLock<Mutex<BTreeMap<usize, (ListKind, HandleArray)>>> = OnceLock::new();
    LISTS.get_or_init(|| Mutex::new(BTreeMap::new()))
}

/// An array of registry handles handed to C.
struct HandleArray(Box<[*mut c_void]>);

// SAFETY: the pointers are registry handles, plain addresses to this code; the array is only
// touched under the list mutex.
unsafe impl Send for HandleArray {}

fn hand_out_list(kind: ListKind, handles: Vec<*mut c_void>) -> *mut *mut c_void {
    // One NULL past the end, for callers that walk the array.
    let mut array = handles;
    array.push(std::ptr::null_mut());
    let mut array = array.into_boxed_slice();
    let ptr = array.as_mut_ptr();
    lists()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(ptr as usize, (kind, HandleArray(array)));
    ptr
}

fn take_list(ptr: *mut *mut c_void, kind: ListKind, api: &str) -> Result<Box<[*mut c_void]>> {
    if ptr.is_null() {
        bail!(InvalidValue, "the list is NULL: pass what {api} returned");
    }
    let mut lists = lists().lock().unwrap_or_else(|p| p.into_inner());
    match lists.get(&(ptr as usize)) {
        Some((k, _)) if *k == kind => {}
        Some(_) => bail!(
            InvalidValue,
            "{ptr:p} is a list of the other kind (device vs representor list)"
        ),
        None => bail!(
            InvalidValue,
            "{ptr:p} is not a list from {api}, or it was destroyed already"
        ),
    }
    Ok(lists
        .remove(&(ptr as usize))
        .map(|(_, array)| array.0)
        .unwrap_or_default())
}

fn free_handles<T: Object>(array: &[*mut c_void]) {
    for &handle in array.iter().filter(|h| !h.is_null()) {
        registry::retire::<T>(handle);
    }
}

/// Registers each object of a list to hand out; if one cannot be, the ones before it go again.
fn register_all<T: Object>(objects: impl IntoIterator<Item = T>) -> Result<Vec<*mut c_void>> {
    let mut handles = Vec::new();
    for object in objects {
        match registry::register(Box::new(object)) {
            Ok(handle) => handles.push(handle),
            Err(e) => {
                free_handles::<T>(&handles);
                return Err(e);
            }
        }
    }
    Ok(handles)
}

/// Which sides `doca_devinfo_create_list` lists (`DPAKIT_SOFT_SIDE`).
pub(crate) fn listed_sides() -> &'static [Side] {
    static SIDES: OnceLock<Vec<Side>> = OnceLock::new();
    SIDES.get_or_init(|| match std::env::var("DPAKIT_SOFT_SIDE").as_deref() {
        Ok("host") => vec![Side::Host],
        Ok("arm") => vec![Side::Arm],
        Ok(other) if !other.is_empty() => {
            eprintln!(
                "dpakit soft device: DPAKIT_SOFT_SIDE={other} is not `host` or `arm`; listing both sides"
            );
            vec![Side::Host, Side::Arm]
        }
        _ => vec![Side::Host, Side::Arm],
    })
}

/// `doca_devinfo_create_list`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_devinfo_create_list(
    dev_list: *mut *mut *mut doca_devinfo,
    nb_devs: *mut u32,
) -> doca_error_t {
    call("doca_devinfo_create_list", || {
        super::non_null(dev_list, "dev_list")?;
        super::non_null(nb_devs, "nb_devs")?;
        let sides = listed_sides();
        let handles = register_all(
            model::Topology::global()
                .devinfo_list()
                .into_iter()
                .filter(|info| sides.contains(&info.side()))
                .map(|info| DevinfoObj { info }),
        )?;
        let n = handles.len() as u32;
        let array = hand_out_list(ListKind::Devinfo, handles);
        // SAFETY: both checked non-null; writable by the C contract.
        unsafe {
            out(dev_list, "dev_list", array.cast())?;
            out(nb_devs, "nb_devs", n)
        }
    })
}

/// `doca_devinfo_destroy_list`: opened devices stay valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_devinfo_destroy_list(
    dev_list: *mut *mut doca_devinfo,
) -> doca_error_t {
    call("doca_devinfo_destroy_list", || {
        let array = take_list(
            dev_list.cast(),
            ListKind::Devinfo,
            "doca_devinfo_create_list",
        )?;
        free_handles::<DevinfoObj>(&array);
        Ok(())
    })
}

/// `doca_devinfo_rep_create_list`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_devinfo_rep_create_list(
    dev: *mut doca_dev,
    filter: c_int,
    dev_list_rep: *mut *mut *mut doca_devinfo_rep,
    nb_devs_rep: *mut u32,
) -> doca_error_t {
    call("doca_devinfo_rep_create_list", || {
        let dev = self::dev(dev, "dev")?;
        super::non_null(dev_list_rep, "dev_list_rep")?;
        super::non_null(nb_devs_rep, "nb_devs_rep")?;
        let filter = RepFilter::from_bits(u32::try_from(filter).map_err(|_| {
            err(
                ErrorCode::InvalidValue,
                format!("representor filter {filter} is negative"),
            )
        })?)?;
        let handles = register_all(
            dev.dev
                .devinfo_rep_list(filter)?
                .into_iter()
                .map(|rep| DevinfoRepObj { rep }),
        )?;
        let n = handles.len() as u32;
        let array = hand_out_list(ListKind::Rep, handles);
        // SAFETY: both checked non-null; writable by the C contract.
        unsafe {
            out(dev_list_rep, "dev_list_rep", array.cast())?;
            out(nb_devs_rep, "nb_devs_rep", n)
        }
    })
}

/// `doca_devinfo_rep_destroy_list`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_devinfo_rep_destroy_list(
    dev_list_rep: *mut *mut doca_devinfo_rep,
) -> doca_error_t {
    call("doca_devinfo_rep_destroy_list", || {
        let array = take_list(
            dev_list_rep.cast(),
            ListKind::Rep,
            "doca_devinfo_rep_create_list",
        )?;
        free_handles::<DevinfoRepObj>(&array);
        Ok(())
    })
}

/// `doca_dev_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dev_open(
    devinfo: *mut doca_devinfo,
    dev: *mut *mut doca_dev,
) -> doca_error_t {
    call("doca_dev_open", || {
        let info = self::devinfo(devinfo, "devinfo")?;
        super::non_null(dev, "dev")?;
        let opened = model::Dev::open(info)?;
        let own_info = registry::register(Box::new(DevinfoObj { info: info.clone() }))?;
        let handle = registry::register(Box::new(DevObj {
            dev: opened,
            devinfo: own_info,
            users: super::Users::default(),
        }))
        .inspect_err(|_| {
            registry::retire::<DevinfoObj>(own_info);
        })?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(dev, "dev", handle.cast()) }
    })
}

/// `doca_dev_close`: `IN_USE` while objects created on the device still exist.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dev_close(dev: *mut doca_dev) -> doca_error_t {
    call("doca_dev_close", || {
        let d = self::dev(dev, "dev")?;
        d.users
            .require_none("object(s) created on this device (DPA contexts, MsgQs, mmaps)")?;
        let devinfo = d.devinfo;
        registry::retire::<DevObj>(dev.cast());
        registry::retire::<DevinfoObj>(devinfo);
        Ok(())
    })
}

/// `doca_dev_rep_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dev_rep_open(
    devinfo: *mut doca_devinfo_rep,
    dev_rep: *mut *mut doca_dev_rep,
) -> doca_error_t {
    call("doca_dev_rep_open", || {
        let info = registry::get::<DevinfoRepObj>(devinfo.cast(), "devinfo")?;
        super::non_null(dev_rep, "dev_rep")?;
        let rep = model::DevRep::open(&info.rep)?;
        let handle = registry::register(Box::new(DevRepObj {
            rep,
            users: super::Users::default(),
        }))?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(dev_rep, "dev_rep", handle.cast()) }
    })
}

/// `doca_dev_rep_close`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dev_rep_close(dev: *mut doca_dev_rep) -> doca_error_t {
    call("doca_dev_rep_close", || {
        let rep = registry::get::<DevRepObj>(dev.cast(), "dev")?;
        rep.users
            .require_none("object(s) created on this representor")?;
        registry::retire::<DevRepObj>(dev.cast());
        Ok(())
    })
}

/// `doca_dev_as_devinfo`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dev_as_devinfo(dev: *const doca_dev) -> *mut doca_devinfo {
    call_value("doca_dev_as_devinfo", std::ptr::null_mut(), || {
        Ok(self::dev(dev, "dev")?.devinfo.cast())
    })
}

/// `doca_devinfo_is_equal_pci_addr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_devinfo_is_equal_pci_addr(
    devinfo: *const doca_devinfo,
    pci_addr_str: *const c_char,
    is_equal: *mut u8,
) -> doca_error_t {
    call("doca_devinfo_is_equal_pci_addr", || {
        let info = self::devinfo(devinfo, "devinfo")?;
        // SAFETY: a C string by the C contract.
        let addr = unsafe { c_str(pci_addr_str, "pci_addr_str") }?;
        let equal = info.pci_addr_is(addr)?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(is_equal, "is_equal", u8::from(equal)) }
    })
}

/// `doca_devinfo_rep_is_equal_pci_addr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_devinfo_rep_is_equal_pci_addr(
    devinfo_rep: *const doca_devinfo_rep,
    pci_addr_str: *const c_char,
    is_equal: *mut u8,
) -> doca_error_t {
    call("doca_devinfo_rep_is_equal_pci_addr", || {
        let rep = registry::get::<DevinfoRepObj>(devinfo_rep.cast(), "devinfo_rep")?;
        // SAFETY: a C string by the C contract.
        let addr = unsafe { c_str(pci_addr_str, "pci_addr_str") }?;
        let equal = rep.rep.pci_addr_is(addr)?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(is_equal, "is_equal", u8::from(equal)) }
    })
}

/// `doca_devinfo_get_ibdev_name`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_devinfo_get_ibdev_name(
    devinfo: *const doca_devinfo,
    ibdev_name: *mut c_char,
    size: u32,
) -> doca_error_t {
    call("doca_devinfo_get_ibdev_name", || {
        let info = self::devinfo(devinfo, "devinfo")?;
        // SAFETY: `size` writable bytes by the C contract.
        unsafe {
            copy_c_string(
                ibdev_name,
                size as usize,
                info.get_ibdev_name(),
                "ibdev_name",
            )
        }
    })
}

/// `doca_devinfo_get_iface_name`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_devinfo_get_iface_name(
    devinfo: *const doca_devinfo,
    iface_name: *mut c_char,
    size: u32,
) -> doca_error_t {
    call("doca_devinfo_get_iface_name", || {
        let info = self::devinfo(devinfo, "devinfo")?;
        // SAFETY: `size` writable bytes by the C contract.
        unsafe {
            copy_c_string(
                iface_name,
                size as usize,
                info.get_iface_name(),
                "iface_name",
            )
        }
    })
}

/// `doca_devinfo_rep_get_vuid`: a stable name of the representor (card and interface).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_devinfo_rep_get_vuid(
    devinfo_rep: *const doca_devinfo_rep,
    rep_vuid: *mut c_char,
    size: u32,
) -> doca_error_t {
    call("doca_devinfo_rep_get_vuid", || {
        let rep = &registry::get::<DevinfoRepObj>(devinfo_rep.cast(), "devinfo_rep")?.rep;
        let vuid = format!("DPAKITSOFT{:04}{}", rep.dev().card(), rep.get_iface_name());
        // SAFETY: `size` writable bytes by the C contract.
        unsafe { copy_c_string(rep_vuid, size as usize, &vuid, "rep_vuid") }
    })
}

/// `doca_devinfo_rep_cap_is_filter_net_supported`: the Arm-side device lists representors.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_devinfo_rep_cap_is_filter_net_supported(
    devinfo: *const doca_devinfo,
    filter_net_supported: *mut u8,
) -> doca_error_t {
    call("doca_devinfo_rep_cap_is_filter_net_supported", || {
        let info = self::devinfo(devinfo, "devinfo")?;
        let supported = u8::from(info.side() == Side::Arm);
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(filter_net_supported, "filter_net_supported", supported) }
    })
}

/// `doca_devinfo_get_pci_func_type`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_devinfo_get_pci_func_type(
    devinfo: *const doca_devinfo,
    pci_func_type: *mut doca_pci_func_type,
) -> doca_error_t {
    call("doca_devinfo_get_pci_func_type", || {
        let info = self::devinfo(devinfo, "devinfo")?;
        let kind = info.get_pci_func_type() as doca_pci_func_type;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(pci_func_type, "pci_func_type", kind) }
    })
}

/// `doca_devinfo_get_sf_index`: `NOT_SUPPORTED` unless the device is a sub-function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_devinfo_get_sf_index(
    devinfo: *const doca_devinfo,
    sf_index: *mut u32,
) -> doca_error_t {
    call("doca_devinfo_get_sf_index", || {
        let info = self::devinfo(devinfo, "devinfo")?;
        if info.get_pci_func_type() != model::PciFuncType::Sf {
            bail!(
                NotSupported,
                "device {} is a {:?}, not a sub-function: it has no SF index",
                info.pci_addr(),
                info.get_pci_func_type()
            );
        }
        let index = u32::from(info.pci_addr().function());
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(sf_index, "sf_index", index) }
    })
}
