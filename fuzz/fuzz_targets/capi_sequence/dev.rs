//! Devices and representors: devinfo lists and what they tell, opening and closing devices,
//! representor lists, opening and closing representors (codes 0 to 7).

use crate::capi::{K, World};
use crate::support::Bytes;
use crate::{ignore, out};
use dpakit_sys::*;
use std::ffi::CStr;
use std::ptr::null_mut;

const PCI: [&CStr; 4] = [c"b1:00.0", c"03:00.0", c"0000:b1:00.1", c"zz"];

/// A devinfo list (its devinfos join the world), then a query of a devinfo, device or
/// representor.
pub fn devices(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any devinfo, representor and device handles; out-parameters and the name
    // buffer are locals (`len` is at most its 80 bytes); PCI addresses are NUL-terminated.
    unsafe {
        let (mut list, mut n) = (null_mut(), 0u32);
        if doca_devinfo_create_list(out(b, &mut list), &mut n) == DOCA_SUCCESS {
            for i in 0..n as usize {
                w.add(K::Devinfo, (*list.add(i)).cast());
            }
            w.devinfo_lists.push(list);
        }
        let info: *mut doca_devinfo = w.one(b, K::Devinfo);
        let mut name = [0 as std::ffi::c_char; 80];
        let len = u32::from(b.u8() % 81);
        let (mut v32, mut v8) = (0u32, 0u8);
        match b.u8() % 14 {
            0 => ignore(doca_devinfo_is_equal_pci_addr(
                info,
                PCI[usize::from(b.u8() % 4)].as_ptr(),
                &mut v8,
            )),
            1 => ignore(doca_devinfo_get_ibdev_name(info, name.as_mut_ptr(), len)),
            2 => ignore(doca_devinfo_get_iface_name(info, name.as_mut_ptr(), len)),
            3 => ignore(doca_devinfo_get_pci_func_type(info, &mut v32)),
            4 => ignore(doca_devinfo_get_sf_index(info, &mut v32)),
            5 => ignore(doca_devinfo_rep_cap_is_filter_net_supported(info, &mut v8)),
            6 => ignore(doca_comch_cap_get_max_msg_size(info, &mut v32)),
            7 => ignore(doca_comch_cap_server_is_supported(info)),
            8 => ignore(doca_dpa_cap_is_supported(info)),
            9 => ignore(doca_comch_consumer_cap_get_max_buf_size(info, &mut v32)),
            10 => ignore(doca_comch_producer_cap_get_max_num_tasks(info, &mut v32)),
            11 => ignore(doca_dev_as_devinfo(w.one(b, K::Dev))),
            12 => {
                let rep = w.one(b, K::DevinfoRep);
                doca_devinfo_rep_get_vuid(rep, name.as_mut_ptr(), len);
                doca_devinfo_rep_is_equal_pci_addr(
                    rep,
                    PCI[usize::from(b.u8() % 4)].as_ptr(),
                    &mut v8,
                );
            }
            _ => ignore(doca_comch_cap_get_max_clients(info, &mut v32)),
        }
    }
}

/// Destroys the newest devinfo list, or NULL if there is none; kept if the call fails.
pub fn destroy_list(w: &mut World) {
    let list = w.devinfo_lists.pop().map_or(null_mut(), |l| l);
    // SAFETY: a list the soft device made and has not destroyed, or NULL.
    let rc = unsafe { doca_devinfo_destroy_list(list) };
    if rc != DOCA_SUCCESS && !list.is_null() {
        w.devinfo_lists.push(list);
    }
}

pub fn open(w: &mut World, b: &mut Bytes<'_>) {
    let mut dev = null_mut();
    let info = w.one(b, K::Devinfo);
    // SAFETY: any devinfo handle; the out-parameter is a local or NULL.
    unsafe { doca_dev_open(info, out(b, &mut dev)) };
    w.add(K::Dev, dev.cast());
}

/// Opens a device of any devinfo, into a valid out-parameter (a happy path).
pub fn open_valid(w: &mut World, b: &mut Bytes<'_>) {
    let mut dev = null_mut();
    let info = w.one(b, K::Devinfo);
    // SAFETY: any devinfo handle; the out-parameter is a local.
    unsafe { doca_dev_open(info, &mut dev) };
    w.add(K::Dev, dev.cast());
}

pub fn close(w: &mut World, b: &mut Bytes<'_>) {
    let dev = w.one(b, K::Dev);
    // SAFETY: any device handle.
    ignore(unsafe { doca_dev_close(dev) });
}

/// A device's representor list, with any filter; its representors join the world.
pub fn rep_list(w: &mut World, b: &mut Bytes<'_>) {
    let (mut list, mut n) = (null_mut(), 0u32);
    let dev = w.one(b, K::Dev);
    let filter = [0, 2, 4, 1, -1][usize::from(b.u8() % 5)];
    // SAFETY: any device handle; out-parameters are locals; a list made holds `n` entries.
    unsafe {
        if doca_devinfo_rep_create_list(dev, filter, out(b, &mut list), &mut n) == DOCA_SUCCESS {
            for i in 0..n as usize {
                w.add(K::DevinfoRep, (*list.add(i)).cast());
            }
            w.rep_lists.push(list);
        }
    }
}

/// Destroys the newest representor list, or NULL if there is none; kept if the call fails.
pub fn destroy_rep_list(w: &mut World) {
    let list = w.rep_lists.pop().map_or(null_mut(), |l| l);
    // SAFETY: a list the soft device made and has not destroyed, or NULL.
    let rc = unsafe { doca_devinfo_rep_destroy_list(list) };
    if rc != DOCA_SUCCESS && !list.is_null() {
        w.rep_lists.push(list);
    }
}

pub fn open_rep(w: &mut World, b: &mut Bytes<'_>) {
    let mut rep = null_mut();
    // SAFETY: any representor handle; the out-parameter is a local or NULL.
    unsafe { doca_dev_rep_open(w.one(b, K::DevinfoRep), out(b, &mut rep)) };
    w.add(K::DevRep, rep.cast());
}

pub fn close_rep(w: &mut World, b: &mut Bytes<'_>) {
    let rep = w.one(b, K::DevRep);
    // SAFETY: any representor handle.
    ignore(unsafe { doca_dev_rep_close(rep) });
}
