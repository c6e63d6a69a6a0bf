//! `doca_dev.h`, more device and representor queries: PCI addresses and representor
//! capabilities.

use super::dev::{self, DevinfoRepObj};
use super::registry;
use super::types::*;
use super::{call, copy_c_string, out};
use crate::dev::Side;
use std::ffi::c_char;

/// `DOCA_DEVINFO_PCI_ADDR_SIZE` (and `DOCA_DEVINFO_REP_PCI_ADDR_SIZE`): "DDDD:BB:DD.F" and its
/// NUL. DOCA's PCI address queries take no size: the buffer holds at least this.
const PCI_ADDR_SIZE: usize = 13;

/// `doca_devinfo_get_pci_addr_str`: "DDDD:BB:DD.F" into a buffer of
/// `DOCA_DEVINFO_PCI_ADDR_SIZE` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_devinfo_get_pci_addr_str(
    devinfo: *const doca_devinfo,
    pci_addr_str: *mut c_char,
) -> doca_error_t {
    call("doca_devinfo_get_pci_addr_str", || {
        let info = dev::devinfo(devinfo, "devinfo")?;
        // SAFETY: DOCA_DEVINFO_PCI_ADDR_SIZE writable bytes by the C contract.
        unsafe {
            copy_c_string(
                pci_addr_str,
                PCI_ADDR_SIZE,
                &info.get_pci_addr_str(),
                "pci_addr_str",
            )
        }
    })
}

fn rep<'a>(ptr: *const doca_devinfo_rep) -> crate::error::Result<&'a crate::dev::DevinfoRep> {
    Ok(&registry::get::<DevinfoRepObj>(ptr.cast(), "devinfo_rep")?.rep)
}

/// `doca_devinfo_rep_get_pci_addr_str`: into a buffer of `DOCA_DEVINFO_REP_PCI_ADDR_SIZE` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_devinfo_rep_get_pci_addr_str(
    devinfo_rep: *const doca_devinfo_rep,
    pci_addr_str: *mut c_char,
) -> doca_error_t {
    call("doca_devinfo_rep_get_pci_addr_str", || {
        let rep = rep(devinfo_rep)?;
        // SAFETY: DOCA_DEVINFO_REP_PCI_ADDR_SIZE writable bytes by the C contract.
        unsafe {
            copy_c_string(
                pci_addr_str,
                PCI_ADDR_SIZE,
                &rep.get_pci_addr_str(),
                "pci_addr_str",
            )
        }
    })
}

/// `doca_devinfo_rep_get_pci_func_type`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_devinfo_rep_get_pci_func_type(
    devinfo_rep: *const doca_devinfo_rep,
    pci_func_type: *mut doca_pci_func_type,
) -> doca_error_t {
    call("doca_devinfo_rep_get_pci_func_type", || {
        let kind = rep(devinfo_rep)?.get_pci_func_type() as doca_pci_func_type;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(pci_func_type, "pci_func_type", kind) }
    })
}

/// `doca_devinfo_rep_cap_is_filter_all_supported`: the Arm-side device lists representors.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_devinfo_rep_cap_is_filter_all_supported(
    devinfo: *const doca_devinfo,
    filter_all_supported: *mut u8,
) -> doca_error_t {
    call("doca_devinfo_rep_cap_is_filter_all_supported", || {
        let supported = u8::from(dev::devinfo(devinfo, "devinfo")?.side() == Side::Arm);
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(filter_all_supported, "filter_all_supported", supported) }
    })
}

/// `doca_devinfo_rep_cap_is_filter_emulated_supported`: 0, the soft topology has no emulated
/// functions.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_devinfo_rep_cap_is_filter_emulated_supported(
    devinfo: *const doca_devinfo,
    filter_emulated_supported: *mut u8,
) -> doca_error_t {
    call("doca_devinfo_rep_cap_is_filter_emulated_supported", || {
        dev::devinfo(devinfo, "devinfo")?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(filter_emulated_supported, "filter_emulated_supported", 0) }
    })
}
