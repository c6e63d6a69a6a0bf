//! `doca_buf.h` and `doca_buf_inventory.h`: buffer inventories and buffers.

use super::mmap;
use super::registry::{self, Kind, Object};
use super::types::*;
use super::{call, out};
use crate::buf::{Buf, BufInventory};
use crate::error::{Result, bail};
use std::ffi::c_void;

/// A `struct doca_buf_inventory`.
pub(crate) struct BufInventoryObj {
    inv: BufInventory,
}

impl Object for BufInventoryObj {
    const KIND: Kind = Kind::BufInventory;
}

/// A `struct doca_buf`: one model handle, released when DOCA's reference count reaches zero.
pub(crate) struct BufObj {
    pub buf: Buf,
}

impl Object for BufObj {
    const KIND: Kind = Kind::Buf;
}

fn inventory<'a>(ptr: *const doca_buf_inventory) -> Result<&'a BufInventoryObj> {
    registry::get::<BufInventoryObj>(ptr.cast(), "inventory")
}

pub(crate) fn buf<'a>(ptr: *const doca_buf) -> Result<&'a BufObj> {
    registry::get::<BufObj>(ptr.cast(), "buf")
}

/// `doca_buf_inventory_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_inventory_create(
    num_elements: usize,
    inventory: *mut *mut doca_buf_inventory,
) -> doca_error_t {
    call("doca_buf_inventory_create", || {
        super::non_null(inventory, "inventory")?;
        let handle = registry::register(Box::new(BufInventoryObj {
            inv: BufInventory::create(num_elements)?,
        }))?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(inventory, "inventory", handle.cast()) }
    })
}

/// `doca_buf_inventory_destroy`: `IN_USE` while its buffers are referenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_inventory_destroy(
    inventory: *mut doca_buf_inventory,
) -> doca_error_t {
    call("doca_buf_inventory_destroy", || {
        let inv = &self::inventory(inventory)?.inv;
        inv.check_all_returned("doca_buf_inventory_destroy", "inventory")?;
        registry::retire::<BufInventoryObj>(inventory.cast());
        Ok(())
    })
}

/// `doca_buf_inventory_start`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_inventory_start(
    inventory: *mut doca_buf_inventory,
) -> doca_error_t {
    call("doca_buf_inventory_start", || {
        self::inventory(inventory)?.inv.start()
    })
}

/// `doca_buf_inventory_stop`: `IN_USE` while its buffers are referenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_inventory_stop(
    inventory: *mut doca_buf_inventory,
) -> doca_error_t {
    call("doca_buf_inventory_stop", || {
        let inv = &self::inventory(inventory)?.inv;
        inv.check_all_returned("doca_buf_inventory_stop", "inventory")?;
        inv.stop()
    })
}

/// `doca_buf_inventory_get_num_elements`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_inventory_get_num_elements(
    inventory: *const doca_buf_inventory,
    num_of_elements: *mut u32,
) -> doca_error_t {
    call("doca_buf_inventory_get_num_elements", || {
        let n = self::inventory(inventory)?.inv.get_num_elements();
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(num_of_elements, "num_of_elements", n) }
    })
}

/// `doca_buf_inventory_get_num_free_elements`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_inventory_get_num_free_elements(
    inventory: *const doca_buf_inventory,
    num_of_free_elements: *mut u32,
) -> doca_error_t {
    call("doca_buf_inventory_get_num_free_elements", || {
        let n = self::inventory(inventory)?.inv.get_num_free_elements();
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(num_of_free_elements, "num_of_free_elements", n) }
    })
}

/// `doca_buf_inventory_buf_get_by_args`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_inventory_buf_get_by_args(
    inventory: *mut doca_buf_inventory,
    mmap: *mut doca_mmap,
    addr: *mut c_void,
    len: usize,
    data: *mut c_void,
    data_len: usize,
    buf: *mut *mut doca_buf,
) -> doca_error_t {
    call("doca_buf_inventory_buf_get_by_args", || {
        let inv = &self::inventory(inventory)?.inv;
        let m = mmap::mmap(mmap, "mmap")?;
        super::non_null(buf, "buf")?;
        let b = inv.buf_get_by_args(&m.mmap, addr.cast(), len, data.cast(), data_len)?;
        let handle = registry::register(Box::new(BufObj { buf: b }))?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(buf, "buf", handle.cast()) }
    })
}

/// `doca_buf_inc_refcount`: `refcount` gets the count before the call (it may be NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_inc_refcount(
    buf: *mut doca_buf,
    refcount: *mut u16,
) -> doca_error_t {
    call("doca_buf_inc_refcount", || {
        let before = self::buf(buf)?.buf.inc_refcount()?;
        if !refcount.is_null() {
            // SAFETY: non-null and writable by the C contract.
            unsafe { refcount.write(before) };
        }
        Ok(())
    })
}

/// `doca_buf_dec_refcount`: at zero the buffer returns to its inventory and the handle is gone.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_dec_refcount(
    buf: *mut doca_buf,
    refcount: *mut u16,
) -> doca_error_t {
    call("doca_buf_dec_refcount", || {
        let before = self::buf(buf)?.buf.dec_refcount()?;
        if before == 1 {
            registry::retire::<BufObj>(buf.cast());
        }
        if !refcount.is_null() {
            // SAFETY: non-null and writable by the C contract.
            unsafe { refcount.write(before) };
        }
        Ok(())
    })
}

/// `doca_buf_get_refcount`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_get_refcount(
    buf: *const doca_buf,
    refcount: *mut u16,
) -> doca_error_t {
    call("doca_buf_get_refcount", || {
        let n = self::buf(buf)?.buf.get_refcount()?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(refcount, "refcount", n) }
    })
}

/// `doca_buf_get_head`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_get_head(
    buf: *const doca_buf,
    head: *mut *mut c_void,
) -> doca_error_t {
    call("doca_buf_get_head", || {
        let h = self::buf(buf)?.buf.get_head()?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(head, "head", h.cast()) }
    })
}

/// `doca_buf_get_len`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_get_len(buf: *const doca_buf, len: *mut usize) -> doca_error_t {
    call("doca_buf_get_len", || {
        let l = self::buf(buf)?.buf.get_len()?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(len, "len", l) }
    })
}

/// `doca_buf_get_data`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_get_data(
    buf: *const doca_buf,
    data: *mut *mut c_void,
) -> doca_error_t {
    call("doca_buf_get_data", || {
        let d = self::buf(buf)?.buf.get_data()?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(data, "data", d.cast()) }
    })
}

/// `doca_buf_get_data_len`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_get_data_len(
    buf: *const doca_buf,
    data_len: *mut usize,
) -> doca_error_t {
    call("doca_buf_get_data_len", || {
        let l = self::buf(buf)?.buf.get_data_len()?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(data_len, "data_len", l) }
    })
}

/// `doca_buf_set_data`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_set_data(
    buf: *mut doca_buf,
    data: *mut c_void,
    data_len: usize,
) -> doca_error_t {
    call("doca_buf_set_data", || {
        self::buf(buf)?.buf.set_data(data.cast(), data_len)
    })
}

/// `doca_buf_set_data_len`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_set_data_len(
    buf: *mut doca_buf,
    data_len: usize,
) -> doca_error_t {
    call("doca_buf_set_data_len", || {
        self::buf(buf)?.buf.set_data_len(data_len)
    })
}

/// `doca_buf_reset_data_len`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_reset_data_len(buf: *mut doca_buf) -> doca_error_t {
    call("doca_buf_reset_data_len", || {
        self::buf(buf)?.buf.reset_data_len()
    })
}

/// `doca_buf_chain_list`: `NOT_SUPPORTED`. Comch (the soft device's only user of buffer lists)
/// refuses chained buffers, so the soft device does not build them.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_chain_list(
    list1: *mut doca_buf,
    list2: *mut doca_buf,
) -> doca_error_t {
    call("doca_buf_chain_list", || {
        self::buf(list1)?;
        self::buf(list2)?;
        bail!(
            NotSupported,
            "chained buffers are not supported: DOCA Comch takes one buffer per task, and the \
             soft device builds no chains"
        )
    })
}

// ---- Buffer lists: the soft device never chains buffers, so each is a list of one. ----

/// `doca_buf_get_list_len`: 1.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_get_list_len(
    buf: *const doca_buf,
    num_elements: *mut u32,
) -> doca_error_t {
    call("doca_buf_get_list_len", || {
        self::buf(buf)?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(num_elements, "num_elements", 1) }
    })
}

/// `doca_buf_get_next_in_list`: NULL, there is no next buffer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_get_next_in_list(
    buf: *mut doca_buf,
    next_buf: *mut *mut doca_buf,
) -> doca_error_t {
    call("doca_buf_get_next_in_list", || {
        self::buf(buf)?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(next_buf, "next_buf", std::ptr::null_mut()) }
    })
}

/// `doca_buf_get_last_in_list`: the buffer itself.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_get_last_in_list(
    buf: *mut doca_buf,
    last_buf: *mut *mut doca_buf,
) -> doca_error_t {
    call("doca_buf_get_last_in_list", || {
        self::buf(buf)?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(last_buf, "last_buf", buf) }
    })
}

/// `doca_buf_is_last_in_list`: 1.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_is_last_in_list(
    buf: *const doca_buf,
    is_last: *mut u8,
) -> doca_error_t {
    call("doca_buf_is_last_in_list", || {
        self::buf(buf)?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(is_last, "is_last", 1) }
    })
}
