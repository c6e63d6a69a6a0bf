//! Memory: mmaps, buffer inventories and the buffers they hand out (codes 12 to 17).

use crate::capi::{K, World};
use crate::support::Bytes;
use crate::{ignore, out, size};
use dpakit_sys::*;
use std::ptr::null_mut;

pub fn create_mmap(w: &mut World, b: &mut Bytes<'_>) {
    let mut m = null_mut();
    // SAFETY: the out-parameter is a local or NULL.
    unsafe { doca_mmap_create(out(b, &mut m)) };
    w.add(K::Mmap, m.cast());
}

pub fn mmap_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any mmap, DPA and device handles and device addresses (checked); the range
    // lies in the world's memory; out-parameters are locals.
    unsafe {
        let m = w.one::<doca_mmap>(b, K::Mmap);
        match b.u8() % 8 {
            0 => ignore(doca_mmap_destroy(m)),
            1 | 2 => {
                let (addr, len) = w.range(b);
                doca_mmap_set_memrange(m, addr.cast(), len);
            }
            3 => ignore(doca_mmap_set_dpa_memrange(
                m,
                w.one(b, K::Dpa),
                w.dev_ptr(b),
                size(b) as usize,
            )),
            4 => ignore(doca_mmap_set_permissions(m, b.u32() % 128)),
            5 => ignore(doca_mmap_add_dev(m, w.one(b, K::Dev))),
            6 => ignore(doca_mmap_start(m)),
            _ => {
                let (mut addr, mut len, mut h) = (null_mut(), 0usize, 0u32);
                doca_mmap_get_memrange(m, out(b, &mut addr), &mut len);
                doca_mmap_dev_get_dpa_handle(m, w.one(b, K::Dev), out(b, &mut h));
            }
        }
    }
}

pub fn create_inventory(w: &mut World, b: &mut Bytes<'_>) {
    let mut inv = null_mut();
    // SAFETY: the out-parameter is a local or NULL.
    unsafe { doca_buf_inventory_create(size(b) as usize, out(b, &mut inv)) };
    w.add(K::Inventory, inv.cast());
}

/// Destroys or starts an inventory (starts more often).
pub fn inventory_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any inventory handle.
    unsafe {
        match b.u8() % 3 {
            0 => ignore(doca_buf_inventory_destroy(w.one(b, K::Inventory))),
            _ => ignore(doca_buf_inventory_start(w.one(b, K::Inventory))),
        }
    }
}

/// A buffer of any inventory over any mmap, at addresses in or near the world's memory.
pub fn get_buf(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any inventory and mmap handles; `w.near` addresses are checked against the
    // mmap, never used unchecked; the out-parameter is a local or NULL.
    unsafe {
        let inv = w.one(b, K::Inventory);
        let mmap = w.one(b, K::Mmap);
        let (addr, len) = (w.near(b), usize::from(b.u16()));
        let (data, data_len) = (w.near(b), usize::from(b.u16()));
        let mut buf = null_mut();
        doca_buf_inventory_buf_get_by_args(inv, mmap, addr, len, data, data_len, out(b, &mut buf));
        w.add(K::Buf, buf.cast());
    }
}

pub fn buf_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: any buffer handles; out-parameters are locals; `w.near` addresses are checked
    // against the buffer's mmap, never used unchecked.
    unsafe {
        let buf = w.one::<doca_buf>(b, K::Buf);
        let (mut rc, mut p, mut n) = (0u16, null_mut(), 0usize);
        match b.u8() % 10 {
            0 => ignore(doca_buf_inc_refcount(buf, out(b, &mut rc))),
            1 | 2 => ignore(doca_buf_dec_refcount(buf, out(b, &mut rc))),
            3 => ignore(doca_buf_get_refcount(buf, out(b, &mut rc))),
            4 => {
                doca_buf_get_head(buf, out(b, &mut p));
                doca_buf_get_data(buf, &mut p);
                doca_buf_get_len(buf, out(b, &mut n));
                doca_buf_get_data_len(buf, &mut n);
            }
            5 => ignore(doca_buf_set_data(buf, w.near(b), usize::from(b.u16()))),
            6 => ignore(doca_buf_set_data_len(buf, size(b) as usize)),
            7 => ignore(doca_buf_reset_data_len(buf)),
            _ => ignore(doca_buf_chain_list(buf, w.one(b, K::Buf))),
        }
    }
}
