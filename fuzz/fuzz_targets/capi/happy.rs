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

/// The echo path of `examples/c/msgq_echo.c` on a DPA in deterministic mode: a DPA thread
/// running a kernel of the app, its consumer completion, a DPA completion, MsgQs to and from
/// the DPA with their DPA and CPU endpoints on a PE, the argument block (correct or the input's
/// bytes), credits, receives and sends; then progress and DPA steps. Sizes come from the input.
pub unsafe fn echo_path(
    w: &mut World,
    b: &mut Bytes<'_>,
    recv: super::RecvCb,
    send: super::SendCb,
) {
    // SAFETY: valid out-parameters and memory; handles come from the world.
    unsafe {
        let dev = w.one::<doca_dev>(b, K::Dev);
        let pe = w.one::<doca_pe>(b, K::Pe);
        let mut dpa = null_mut();
        if doca_dpa_create(dev, &mut dpa) != DOCA_SUCCESS {
            return;
        }
        w.add(K::Dpa, dpa.cast());
        doca_dpa_set_app(dpa, dpakit_kernels::APP.raw().cast());
        dpakit_soft_dpa_set_sched_mode(dpa, DPAKIT_SOFT_SCHED_DETERMINISTIC, b.u64());
        doca_dpa_start(dpa);
        let depth = [1u32, 2, 4, 8, 3, 0][usize::from(b.u8() % 6)];
        let mut args = 0u64;
        doca_dpa_mem_alloc(dpa, 256, &mut args);
        w.dev_ptrs.push(args);
        let mut thread = null_mut();
        doca_dpa_thread_create(dpa, &mut thread);
        w.add(K::Thread, thread.cast());
        doca_dpa_thread_set_func_arg(thread, crate::kernel(b), args);
        doca_dpa_thread_start(thread);
        let mut cc = null_mut();
        doca_comch_consumer_completion_create(&mut cc);
        w.add(K::ConsComp, cc.cast());
        doca_comch_consumer_completion_set_max_num_recv(cc, depth);
        doca_comch_consumer_completion_set_imm_data_len(cc, u32::from(b.u8() % 33));
        doca_comch_consumer_completion_set_dpa_thread(cc, thread);
        doca_comch_consumer_completion_start(cc);
        let mut pc = null_mut();
        doca_dpa_completion_create(dpa, 2 * depth, &mut pc);
        w.add(K::DpaComp, pc.cast());
        doca_dpa_completion_start(pc);
        let (mut to_dpa, mut from_dpa) = (null_mut(), null_mut());
        doca_comch_msgq_create(dev, &mut to_dpa);
        w.add(K::Msgq, to_dpa.cast());
        doca_comch_msgq_set_dpa_consumer(to_dpa, dpa);
        doca_comch_msgq_start(to_dpa);
        doca_comch_msgq_create(dev, &mut from_dpa);
        w.add(K::Msgq, from_dpa.cast());
        doca_comch_msgq_set_dpa_producer(from_dpa, dpa);
        doca_comch_msgq_start(from_dpa);
        let (mut dc, mut dp, mut cc_cpu, mut cp) = (null_mut(), null_mut(), null_mut(), null_mut());
        doca_comch_msgq_consumer_create(to_dpa, &mut dc);
        w.add(K::Consumer, dc.cast());
        doca_ctx_set_datapath_on_dpa(dc.cast(), dpa);
        doca_comch_consumer_set_completion(dc, cc, 0);
        doca_comch_consumer_set_dev_max_num_recv(dc, depth);
        doca_ctx_start(dc.cast());
        doca_comch_msgq_producer_create(from_dpa, &mut dp);
        w.add(K::Producer, dp.cast());
        doca_ctx_set_datapath_on_dpa(dp.cast(), dpa);
        doca_comch_producer_set_dev_max_num_send(dp, depth);
        doca_comch_producer_dpa_completion_attach(dp, pc);
        doca_ctx_start(dp.cast());
        doca_comch_msgq_consumer_create(from_dpa, &mut cc_cpu);
        w.add(K::Consumer, cc_cpu.cast());
        doca_comch_consumer_task_post_recv_set_conf(cc_cpu, Some(recv), Some(recv), depth);
        doca_pe_connect_ctx(pe, cc_cpu.cast());
        doca_ctx_start(cc_cpu.cast());
        doca_comch_msgq_producer_create(to_dpa, &mut cp);
        w.add(K::Producer, cp.cast());
        doca_comch_producer_task_send_set_conf(cp, Some(send), Some(send), depth);
        doca_pe_connect_ctx(pe, cp.cast());
        doca_ctx_start(cp.cast());
        // The argument block: the path's handles, or the input's bytes.
        // (MsgqPathArgs: four 64-bit handles, the CPU consumer's id, the submit flags.)
        let mut h = [0u64; 4];
        let mut cpu_id = 0u32;
        doca_comch_consumer_completion_get_dpa_handle(cc, &mut h[0]);
        doca_comch_consumer_get_dpa_handle(dc, &mut h[1]);
        doca_comch_producer_get_dpa_handle(dp, &mut h[2]);
        doca_dpa_completion_get_dpa_handle(pc, &mut h[3]);
        doca_comch_consumer_get_id(cc_cpu, &mut cpu_id);
        let mut bytes: Vec<u8> = h.iter().flat_map(|v| v.to_le_bytes()).collect();
        bytes.extend_from_slice(&cpu_id.to_le_bytes());
        bytes.extend_from_slice(&dpakit_abi::SubmitFlags::FLUSH.bits().to_le_bytes());
        if b.u8().is_multiple_of(4) {
            let at = usize::from(b.u8()) % bytes.len();
            bytes[at] = b.u8();
        }
        doca_dpa_h2d_memcpy(dpa, args, bytes.as_mut_ptr().cast(), bytes.len());
        doca_dpa_thread_run(thread);
        let ack: unsafe extern "C" fn() =
            std::mem::transmute(dpakit_dev::runtime::CONSUMER_ACK.func());
        let mut ret = 0u64;
        doca_dpa_rpc(dpa, Some(ack), &mut ret, h[1], u64::from(b.u8() % 9));
        let mut dst = null_mut();
        let mut dpa_consumer_id = 0u32;
        doca_comch_consumer_get_id(dc, &mut dpa_consumer_id);
        for _ in 0..b.u8() % 4 {
            doca_comch_consumer_task_post_recv_alloc_init(cc_cpu, null_mut(), &mut dst);
            w.add(K::RecvTask, dst.cast());
            doca_task_submit(doca_comch_consumer_task_post_recv_as_task(dst));
        }
        let mut imm = [7u8; 32];
        for _ in 0..b.u8() % 4 {
            let mut t = null_mut();
            let len = u32::from(b.u8() % 33);
            doca_comch_producer_task_send_alloc_init(
                cp,
                null_mut(),
                imm.as_mut_ptr(),
                len,
                dpa_consumer_id,
                &mut t,
            );
            w.add(K::SendTask, t.cast());
            doca_task_submit_ex(doca_comch_producer_task_send_as_task(t), b.u32() % 4);
        }
        for _ in 0..b.u8() % 16 {
            doca_pe_progress(pe);
            let mut ran = 0u8;
            dpakit_soft_dpa_step(dpa, &mut ran);
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
