//! Builders of the common correct setups (devices, buffers, a MsgQ pipeline on a PE, a Comch
//! server and client), so that random calls often meet started objects with tasks in flight.
//! Their calls may still fail on what earlier operations left behind; that is fine.

use super::{K, MEM_LEN, World};
use crate::support::Bytes;
use dpakit_sys::*;
use std::ffi::{CStr, c_void};
use std::ptr::null_mut;

/// Opens the device whose PCI address is `pci`, recording everything it made.
///
/// # Safety
/// None beyond the API's: every argument is valid.
pub unsafe fn open_dev(w: &mut World, pci: &CStr) -> *mut doca_dev {
    // SAFETY: valid out-parameters and strings.
    unsafe {
        let (mut list, mut n) = (null_mut(), 0u32);
        if doca_devinfo_create_list(&mut list, &mut n) != DOCA_SUCCESS {
            return null_mut();
        }
        w.devinfo_lists.push(list);
        let mut dev: *mut doca_dev = null_mut();
        for i in 0..n as usize {
            let info = *list.add(i);
            w.add(K::Devinfo, info.cast());
            let mut equal = 0u8;
            doca_devinfo_is_equal_pci_addr(info, pci.as_ptr(), &mut equal);
            if equal != 0 && dev.is_null() && doca_dev_open(info, &mut dev) == DOCA_SUCCESS {
                w.add(K::Dev, dev.cast());
            }
        }
        dev
    }
}

/// The Arm device's representor of the host PF.
unsafe fn open_rep(w: &mut World, arm: *mut doca_dev) -> *mut doca_dev_rep {
    // SAFETY: valid out-parameters and strings.
    unsafe {
        let (mut list, mut n) = (null_mut(), 0u32);
        if doca_devinfo_rep_create_list(arm, DOCA_DEVINFO_REP_FILTER_NET as i32, &mut list, &mut n)
            != DOCA_SUCCESS
        {
            return null_mut();
        }
        w.rep_lists.push(list);
        let mut rep: *mut doca_dev_rep = null_mut();
        for i in 0..n as usize {
            let info = *list.add(i);
            w.add(K::DevinfoRep, info.cast());
            let mut equal = 0u8;
            doca_devinfo_rep_is_equal_pci_addr(info, c"b1:00.0".as_ptr(), &mut equal);
            if equal != 0 && rep.is_null() && doca_dev_rep_open(info, &mut rep) == DOCA_SUCCESS {
                w.add(K::DevRep, rep.cast());
            }
        }
        rep
    }
}

/// A started mmap over part of the input's memory, an inventory and a few buffers.
pub unsafe fn buffers(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: the memory range lies inside `w.mem`; out-parameters are valid.
    unsafe {
        let dev = w.one::<doca_dev>(b, K::Dev);
        let (mut mmap, mut inv) = (null_mut(), null_mut());
        if doca_mmap_create(&mut mmap) != DOCA_SUCCESS {
            return;
        }
        w.add(K::Mmap, mmap.cast());
        let half = MEM_LEN / 2;
        let base = w.mem.as_mut_ptr().add(if b.bool() { 0 } else { half });
        doca_mmap_set_memrange(mmap, base.cast(), half);
        doca_mmap_set_permissions(mmap, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE);
        doca_mmap_add_dev(mmap, dev);
        doca_mmap_start(mmap);
        if doca_buf_inventory_create(u32::from(b.u8() % 16 + 1) as usize, &mut inv) != DOCA_SUCCESS
        {
            return;
        }
        w.add(K::Inventory, inv.cast());
        doca_buf_inventory_start(inv);
        for _ in 0..b.u8() % 4 + 1 {
            let off = usize::from(b.u16()) % half;
            let len = (usize::from(b.u16()) % (half - off)).max(1);
            let data_len = usize::from(b.u8()).min(len);
            let addr = base.add(off).cast::<c_void>();
            let mut buf = null_mut();
            doca_buf_inventory_buf_get_by_args(inv, mmap, addr, len, addr, data_len, &mut buf);
            w.add(K::Buf, buf.cast());
        }
    }
}

/// A started MsgQ with a CPU producer and consumer on a PE, receives posted and a send
/// submitted.
pub unsafe fn msgq_pipeline(
    w: &mut World,
    b: &mut Bytes<'_>,
    recv: super::RecvCb,
    send: super::SendCb,
) {
    // SAFETY: valid out-parameters; handles come from the world.
    unsafe {
        let dev = w.one::<doca_dev>(b, K::Dev);
        let pe = w.one::<doca_pe>(b, K::Pe);
        let mut q = null_mut();
        if doca_comch_msgq_create(dev, &mut q) != DOCA_SUCCESS {
            return;
        }
        w.add(K::Msgq, q.cast());
        doca_comch_msgq_start(q);
        let (mut c, mut p) = (null_mut(), null_mut());
        doca_comch_msgq_consumer_create(q, &mut c);
        w.add(K::Consumer, c.cast());
        doca_comch_msgq_producer_create(q, &mut p);
        w.add(K::Producer, p.cast());
        let depth = u32::from(b.u8() % 8 + 1);
        doca_comch_consumer_task_post_recv_set_conf(c, Some(recv), Some(recv), depth);
        doca_comch_producer_task_send_set_conf(p, Some(send), Some(send), depth);
        doca_comch_consumer_set_imm_data_len(c, u32::from(b.u8() % 33));
        for ctx in [c.cast::<doca_ctx>(), p.cast()] {
            doca_pe_connect_ctx(pe, ctx);
            doca_ctx_start(ctx);
        }
        for _ in 0..b.u8() % 4 {
            let mut t = null_mut();
            doca_comch_consumer_task_post_recv_alloc_init(c, w.one(b, K::Buf), &mut t);
            w.add(K::RecvTask, t.cast());
            doca_task_submit(doca_comch_consumer_task_post_recv_as_task(t));
        }
        let mut id = 0u32;
        doca_comch_consumer_get_id(c, &mut id);
        let mut imm = [7u8; 32];
        for _ in 0..b.u8() % 4 {
            let mut t = null_mut();
            let len = u32::from(b.u8() % 33);
            doca_comch_producer_task_send_alloc_init(
                p,
                w.one(b, K::Buf),
                imm.as_mut_ptr(),
                len,
                id,
                &mut t,
            );
            w.add(K::SendTask, t.cast());
            doca_task_submit(doca_comch_producer_task_send_as_task(t));
        }
        for _ in 0..b.u8() % 8 {
            doca_pe_progress(pe);
        }
    }
}

/// The host PF, the Arm device and its representor of the PF, a Comch server on the Arm side
/// and a client on the host side.
pub unsafe fn comch_pair(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: valid out-parameters and strings.
    unsafe {
        let host = open_dev(w, c"b1:00.0");
        let arm = open_dev(w, c"03:00.0");
        let rep = open_rep(w, arm);
        let name = [c"fuzz", c"fuzz-2"][usize::from(b.u8() % 2)];
        let (mut s, mut c) = (null_mut(), null_mut());
        if doca_comch_server_create(arm, rep, name.as_ptr(), &mut s) == DOCA_SUCCESS {
            w.add(K::Server, s.cast());
        }
        if doca_comch_client_create(host, name.as_ptr(), &mut c) == DOCA_SUCCESS {
            w.add(K::Client, c.cast());
        }
    }
}
