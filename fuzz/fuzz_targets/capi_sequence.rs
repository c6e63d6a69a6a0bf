//! `capi_sequence`: random sequences of DOCA C API calls into the soft device.
//!
//! Each input is a list of operations (one byte each, then its arguments) over devices and
//! representors, PEs, contexts, mmaps, buffer inventories and buffers, MsgQs with their CPU
//! and DPA consumers and producers, consumer and DPA completions, DPAs (app, memory, RPC,
//! threads, affinities, notifications, deterministic steps) and Comch servers, clients and
//! connections in this process. Handle arguments are NULL, live, destroyed, stray, of another
//! kind, or of another device or DPA; sizes, flags and enums are random. Callbacks may call
//! back into the API. At the end everything is stopped and destroyed: a handle the soft device
//! will not take back, or a descriptor it keeps open, is a finding, as is any panic (even one
//! the API turns into an error), crash or hang. Kernel panics are the kernel's, not findings.
#![no_main]

mod capi;
mod support;

use capi::{ADOPT, CTX, K, MEM_LEN, TASK, World};
use dpakit_sys::*;
use libfuzzer_sys::fuzz_target;
use std::cell::Cell;
use std::ffi::{CStr, c_void};
use std::ptr::null_mut;
use support::Bytes;

/// Most operations one input runs.
const MAX_OPS: usize = 96;

thread_local! {
    /// Whether task completion callbacks free their task (calling back into the API).
    static FREE_IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

fuzz_target!(
    init: init(),
    |data: &[u8]| {
        let fds = open_fds();
        let mut b = Bytes::new(data);
        let mut w = World::new();
        FREE_IN_CALLBACK.with(|f| f.set(b.bool()));
        for _ in 0..MAX_OPS {
            if b.is_empty() {
                break;
            }
            op(&mut w, &mut b);
            w.adopt();
        }
        w.teardown();
        assert_eq!(open_fds(), fds, "file descriptors leaked");
    }
);

fn init() {
    // A private runtime directory for the Comch sockets of this process, removed at exit.
    let dir = std::env::temp_dir().join(format!("dpakit-fuzz-{}", std::process::id()));
    // SAFETY: set before the soft device reads the environment, on the only thread.
    unsafe { std::env::set_var("DPAKIT_SOFT_RUNTIME_DIR", &dir) };
    extern "C" fn remove_dir() {
        let dir = std::env::temp_dir().join(format!("dpakit-fuzz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(dir);
    }
    // SAFETY: registers a plain function.
    unsafe { libc::atexit(remove_dir) };
    // libFuzzer's hook aborts on any panic. A kernel's panic (in the kit's kernels or the
    // device runtime they call) is the kernel's bug, which the soft device reports as a fatal
    // DPA error: not a finding. Every other panic is.
    let abort = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let file = info.location().map(|l| l.file()).unwrap_or("");
        if file.contains("dpa-kernels/") || file.contains("dpa-dev/") {
            return;
        }
        abort(info);
    }));
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// An out-parameter: mostly `slot`, sometimes NULL.
fn out<T>(b: &mut Bytes<'_>, slot: &mut T) -> *mut T {
    if b.u8() % 16 == 0 { null_mut() } else { slot }
}

const NAMES: [&CStr; 4] = [c"fuzz", c"fuzz-2", c"", c"a-name-longer-than-anything-the-soft-device-accepts-for-a-comch-server-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"];
const PCI: [&CStr; 4] = [c"b1:00.0", c"03:00.0", c"0000:b1:00.1", c"zz"];

/// A value for a size or count: small, a boundary, or anything.
fn size(b: &mut Bytes<'_>) -> u32 {
    match b.u8() % 8 {
        0 => 0,
        1 => b.u32(),
        2 => 1 << (b.u8() % 32),
        3 => (1 << (b.u8() % 16)) - 1,
        _ => u32::from(b.u8()),
    }
}

/// One of the app's kernels, or a function that is not one.
pub fn kernel(b: &mut Bytes<'_>) -> doca_dpa_func_t {
    extern "C" fn not_a_kernel() {}
    let addr = match b.u8() % 8 {
        0 => return None,
        1 => not_a_kernel as *mut c_void,
        2 => dpakit_dev::runtime::CONSUMER_ACK.func(),
        3 => dpakit_kernels::SINK.func(),
        4 => dpakit_kernels::PING_PONG.func(),
        5 => dpakit_kernels::DMA_OFFLOAD.func(),
        _ => dpakit_kernels::ECHO.func(),
    };
    // SAFETY: a function address, as doca_dpa_func_t holds; the soft device only calls the
    // app's kernels.
    Some(unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn()>(addr) })
}

fn op(w: &mut World, b: &mut Bytes<'_>) {
    let code = b.u8();
    // SAFETY: the point of this target: C calls with whatever arguments a C program might
    // pass. Memory arguments are the input's own (`w.mem`, locals) and valid for the sizes
    // given, as the C contract requires; handles may be anything.
    unsafe {
        match code % 40 {
            0 => devices(w, b),
            1 => {
                let list = w.devinfo_lists.pop().map_or(null_mut(), |l| l);
                if doca_devinfo_destroy_list(list) != DOCA_SUCCESS && !list.is_null() {
                    w.devinfo_lists.push(list);
                }
            }
            2 => {
                let mut dev = null_mut();
                let info = w.one(b, K::Devinfo);
                doca_dev_open(info, out(b, &mut dev));
                w.add(K::Dev, dev.cast());
            }
            3 => ignore(doca_dev_close(w.one(b, K::Dev))),
            4 => {
                let (mut list, mut n) = (null_mut(), 0u32);
                let dev = w.one(b, K::Dev);
                let filter = [0, 2, 4, 1, -1][usize::from(b.u8() % 5)];
                if doca_devinfo_rep_create_list(dev, filter, out(b, &mut list), &mut n)
                    == DOCA_SUCCESS
                {
                    for i in 0..n as usize {
                        w.add(K::DevinfoRep, (*list.add(i)).cast());
                    }
                    w.rep_lists.push(list);
                }
            }
            5 => {
                let list = w.rep_lists.pop().map_or(null_mut(), |l| l);
                if doca_devinfo_rep_destroy_list(list) != DOCA_SUCCESS && !list.is_null() {
                    w.rep_lists.push(list);
                }
            }
            6 => {
                let mut rep = null_mut();
                doca_dev_rep_open(w.one(b, K::DevinfoRep), out(b, &mut rep));
                w.add(K::DevRep, rep.cast());
            }
            7 => ignore(doca_dev_rep_close(w.one(b, K::DevRep))),
            8 => {
                let mut pe = null_mut();
                doca_pe_create(out(b, &mut pe));
                w.add(K::Pe, pe.cast());
            }
            9 => ignore(doca_pe_destroy(w.one(b, K::Pe))),
            10 => pe_ops(w, b),
            11 => ctx_ops(w, b),
            12 => {
                let mut m = null_mut();
                doca_mmap_create(out(b, &mut m));
                w.add(K::Mmap, m.cast());
            }
            13 => mmap_ops(w, b),
            14 => {
                let mut inv = null_mut();
                doca_buf_inventory_create(size(b) as usize, out(b, &mut inv));
                w.add(K::Inventory, inv.cast());
            }
            15 => match b.u8() % 3 {
                0 => ignore(doca_buf_inventory_destroy(w.one(b, K::Inventory))),
                _ => ignore(doca_buf_inventory_start(w.one(b, K::Inventory))),
            },
            16 => {
                let inv = w.one(b, K::Inventory);
                let mmap = w.one(b, K::Mmap);
                let (addr, len) = (w.near(b), usize::from(b.u16()));
                let (data, data_len) = (w.near(b), usize::from(b.u16()));
                let mut buf = null_mut();
                doca_buf_inventory_buf_get_by_args(
                    inv,
                    mmap,
                    addr,
                    len,
                    data,
                    data_len,
                    out(b, &mut buf),
                );
                w.add(K::Buf, buf.cast());
            }
            17 => buf_ops(w, b),
            18 => {
                let mut q = null_mut();
                doca_comch_msgq_create(w.one(b, K::Dev), out(b, &mut q));
                w.add(K::Msgq, q.cast());
            }
            19 => msgq_ops(w, b),
            20 => consumer_ops(w, b),
            21 => producer_ops(w, b),
            22 => task_ops(w, b),
            23 => cons_comp_ops(w, b),
            24 => {
                let mut dpa = null_mut();
                doca_dpa_create(w.one(b, K::Dev), out(b, &mut dpa));
                w.add(K::Dpa, dpa.cast());
                // Worker threads busy-poll: deterministic steps keep inputs fast and
                // reproducible, so most DPAs use them.
                if b.u8() % 8 != 0 {
                    dpakit_soft_dpa_set_sched_mode(dpa, DPAKIT_SOFT_SCHED_DETERMINISTIC, 1);
                }
            }
            25 => dpa_ops(w, b),
            26 => dpa_memory(w, b),
            27 => thread_ops(w, b),
            28 => dpa_comp_ops(w, b),
            29 => notif_ops(w, b),
            30 => server_ops(w, b),
            31 => client_ops(w, b),
            32 => conn_ops(w, b),
            33 => {
                // A progress burst on every PE, and deterministic DPA steps.
                for &(k, h) in w.objs.clone().iter() {
                    match k {
                        K::Pe => {
                            for _ in 0..b.u8() % 8 {
                                doca_pe_progress(h.cast());
                            }
                        }
                        K::Dpa => {
                            let mut ran = 0u8;
                            for _ in 0..b.u8() % 8 {
                                dpakit_soft_dpa_step(h.cast(), &mut ran);
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {
                // The common happy paths, so sequences reach started objects often.
                match b.u8() % 8 {
                    4 => {
                        capi::happy::open_dev(w, c"b1:00.0");
                    }
                    5 => capi::happy::buffers(w, b),
                    6 => capi::happy::echo_path(w, b, recv_done, send_done),
                    7 => capi::happy::comch_pair(w, b),
                    0 => {
                        let mut pe = null_mut();
                        doca_pe_create(&mut pe);
                        w.add(K::Pe, pe.cast());
                    }
                    1 => devices(w, b),
                    2 => {
                        let mut dpa = null_mut();
                        if doca_dpa_create(w.one(b, K::Dev), &mut dpa) == DOCA_SUCCESS {
                            w.add(K::Dpa, dpa.cast());
                            doca_dpa_set_app(dpa.cast(), dpakit_kernels::APP.raw().cast());
                            dpakit_soft_dpa_set_sched_mode(dpa, DPAKIT_SOFT_SCHED_DETERMINISTIC, 1);
                            doca_dpa_start(dpa);
                        }
                    }
                    _ => {
                        let mut dev = null_mut();
                        let info = w.one(b, K::Devinfo);
                        doca_dev_open(info, &mut dev);
                        w.add(K::Dev, dev.cast());
                    }
                }
            }
        }
    }
}

unsafe fn devices(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: as in `op`.
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

unsafe fn pe_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: as in `op`.
    unsafe {
        let pe = w.one::<doca_pe>(b, K::Pe);
        let mut handle = -1;
        match b.u8() % 5 {
            0 => ignore(doca_pe_connect_ctx(pe, w.pick(b, CTX).cast())),
            1 => {
                for _ in 0..b.u8() % 16 {
                    doca_pe_progress(pe);
                }
            }
            2 => ignore(doca_pe_get_notification_handle(pe, out(b, &mut handle))),
            3 => ignore(doca_pe_request_notification(pe)),
            _ => {
                doca_pe_get_notification_handle(pe, &mut handle);
                let h = if b.bool() { handle } else { b.u8() as i32 - 2 };
                doca_pe_clear_notification(pe, h);
            }
        }
    }
}

unsafe extern "C" fn state_changed(_: doca_data, _: *mut doca_ctx, _: u32, _: u32) {}

unsafe fn ctx_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: as in `op`.
    unsafe {
        let ctx = w.pick(b, CTX).cast::<doca_ctx>();
        let (mut state, mut n, mut ud) = (0u32, 0usize, doca_data { u64_: 0 });
        match b.u8() % 8 {
            0 | 1 => ignore(doca_ctx_start(ctx)),
            2 => ignore(doca_ctx_stop(ctx)),
            3 => ignore(doca_ctx_get_state(ctx, out(b, &mut state))),
            4 => ignore(doca_ctx_get_num_inflight_tasks(ctx, out(b, &mut n))),
            5 => {
                doca_ctx_set_user_data(ctx, doca_data { u64_: b.u64() });
                doca_ctx_get_user_data(ctx, out(b, &mut ud));
            }
            6 => ignore(doca_ctx_set_state_changed_cb(
                ctx,
                if b.bool() { Some(state_changed) } else { None },
            )),
            _ => ignore(doca_ctx_set_datapath_on_dpa(ctx, w.one(b, K::Dpa))),
        }
    }
}

unsafe fn mmap_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: as in `op`.
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

unsafe fn buf_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: as in `op`.
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

unsafe fn msgq_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: as in `op`.
    unsafe {
        let q = w.one::<doca_comch_msgq>(b, K::Msgq);
        match b.u8() % 10 {
            0 => ignore(doca_comch_msgq_destroy(q)),
            1 => ignore(doca_comch_msgq_set_max_num_consumers(q, size(b))),
            2 => ignore(doca_comch_msgq_set_max_num_producers(q, size(b))),
            3 => ignore(doca_comch_msgq_set_dpa_consumer(q, w.one(b, K::Dpa))),
            4 => ignore(doca_comch_msgq_set_dpa_producer(q, w.one(b, K::Dpa))),
            5 | 6 => ignore(doca_comch_msgq_start(q)),
            7 => ignore(doca_comch_msgq_stop(q)),
            8 => {
                let mut c = null_mut();
                doca_comch_msgq_consumer_create(q, out(b, &mut c));
                w.add(K::Consumer, c.cast());
            }
            _ => {
                let mut p = null_mut();
                doca_comch_msgq_producer_create(q, out(b, &mut p));
                w.add(K::Producer, p.cast());
            }
        }
    }
}

unsafe extern "C" fn recv_done(
    task: *mut doca_comch_consumer_task_post_recv,
    _: doca_data,
    _: doca_data,
) {
    if FREE_IN_CALLBACK.with(Cell::get) {
        // SAFETY: the completed task, handed back to the program.
        unsafe { doca_task_free(doca_comch_consumer_task_post_recv_as_task(task)) };
    }
}

unsafe extern "C" fn send_done(
    task: *mut doca_comch_producer_task_send,
    _: doca_data,
    _: doca_data,
) {
    if FREE_IN_CALLBACK.with(Cell::get) {
        // SAFETY: the completed task, handed back to the program.
        unsafe { doca_task_free(doca_comch_producer_task_send_as_task(task)) };
    }
}

unsafe fn consumer_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: as in `op`.
    unsafe {
        let c = w.one::<doca_comch_consumer>(b, K::Consumer);
        let (mut id, mut h) = (0u32, 0u64);
        match b.u8() % 10 {
            0 => ignore(doca_comch_consumer_destroy(c)),
            1 => ignore(doca_comch_consumer_get_id(c, out(b, &mut id))),
            2 => ignore(doca_comch_consumer_set_imm_data_len(c, size(b))),
            3 => {
                let cb = if b.u8() % 8 == 0 {
                    None
                } else {
                    Some(recv_done as _)
                };
                doca_comch_consumer_task_post_recv_set_conf(c, cb, cb, size(b));
            }
            4 | 5 => {
                let mut t = null_mut();
                doca_comch_consumer_task_post_recv_alloc_init(c, w.one(b, K::Buf), out(b, &mut t));
                w.add(K::RecvTask, t.cast());
            }
            6 => ignore(doca_comch_consumer_set_dev_max_num_recv(c, size(b))),
            7 => ignore(doca_comch_consumer_set_completion(
                c,
                w.one(b, K::ConsComp),
                b.u32(),
            )),
            8 => ignore(doca_comch_consumer_get_dpa_handle(c, out(b, &mut h))),
            _ => {
                let t = w.one::<doca_comch_consumer_task_post_recv>(b, K::RecvTask);
                doca_comch_consumer_task_post_recv_get_buf(t);
                doca_comch_consumer_task_post_recv_get_imm_data(t);
                doca_comch_consumer_task_post_recv_get_imm_data_len(t);
                doca_comch_consumer_task_post_recv_get_producer_id(t);
            }
        }
    }
}

unsafe fn producer_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: as in `op`.
    unsafe {
        let p = w.one::<doca_comch_producer>(b, K::Producer);
        let (mut id, mut h) = (0u32, 0u64);
        match b.u8() % 9 {
            0 => ignore(doca_comch_producer_destroy(p)),
            1 => ignore(doca_comch_producer_get_id(p, out(b, &mut id))),
            2 => {
                let cb = if b.u8() % 8 == 0 {
                    None
                } else {
                    Some(send_done as _)
                };
                doca_comch_producer_task_send_set_conf(p, cb, cb, size(b));
            }
            3..=5 => {
                let mut imm = [0u8; 64];
                let imm_len = u32::from(b.u8() % 65);
                let imm_ptr = if b.u8() % 8 == 0 {
                    null_mut()
                } else {
                    imm.as_mut_ptr()
                };
                let mut t = null_mut();
                doca_comch_producer_task_send_alloc_init(
                    p,
                    w.one(b, K::Buf),
                    imm_ptr,
                    imm_len,
                    b.u32() % 4,
                    out(b, &mut t),
                );
                w.add(K::SendTask, t.cast());
            }
            6 => ignore(doca_comch_producer_set_dev_max_num_send(p, size(b))),
            7 => ignore(doca_comch_producer_dpa_completion_attach(
                p,
                w.one(b, K::DpaComp),
            )),
            _ => {
                doca_comch_producer_get_dpa_handle(p, out(b, &mut h));
                doca_comch_producer_task_send_get_buf(w.one(b, K::SendTask));
            }
        }
    }
}

unsafe fn task_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: as in `op`.
    unsafe {
        let t = w.pick(b, TASK).cast::<doca_task>();
        match b.u8() % 6 {
            0 | 1 => ignore(doca_task_submit(t)),
            2 => ignore(doca_task_submit_ex(t, b.u32() % 8)),
            3 => doca_task_free(t),
            4 => ignore(doca_task_get_status(t)),
            _ => {
                doca_task_set_user_data(t, doca_data { u64_: b.u64() });
                doca_task_get_user_data(t);
            }
        }
    }
}

unsafe fn cons_comp_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: as in `op`.
    unsafe {
        let c = w.one::<doca_comch_consumer_completion>(b, K::ConsComp);
        let mut h = 0u64;
        match b.u8() % 9 {
            0 => {
                let mut n = null_mut();
                doca_comch_consumer_completion_create(out(b, &mut n));
                w.add(K::ConsComp, n.cast());
            }
            1 => ignore(doca_comch_consumer_completion_destroy(c)),
            2 => ignore(doca_comch_consumer_completion_set_max_num_consumers(
                c,
                size(b),
            )),
            3 => ignore(doca_comch_consumer_completion_set_max_num_recv(c, size(b))),
            4 => ignore(doca_comch_consumer_completion_set_imm_data_len(c, size(b))),
            5 => ignore(doca_comch_consumer_completion_set_dpa_thread(
                c,
                w.one(b, K::Thread),
            )),
            6 => ignore(doca_comch_consumer_completion_start(c)),
            7 => ignore(doca_comch_consumer_completion_stop(c)),
            _ => ignore(doca_comch_consumer_completion_get_dpa_handle(
                c,
                out(b, &mut h),
            )),
        }
    }
}

unsafe fn dpa_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: as in `op`.
    unsafe {
        let d = w.one::<doca_dpa>(b, K::Dpa);
        let (mut h, mut eus) = (0u64, 0u32);
        match b.u8() % 14 {
            0 => ignore(doca_dpa_destroy(d)),
            1 | 2 => {
                let app = match b.u8() % 4 {
                    0 => w.near(b),
                    1 => null_mut(),
                    _ => dpakit_kernels::APP.raw(),
                };
                doca_dpa_set_app(d, app.cast());
            }
            3 | 4 => ignore(doca_dpa_start(d)),
            5 => ignore(doca_dpa_stop(d)),
            6 => {
                doca_dpa_get_dpa_handle(d, out(b, &mut h));
                doca_dpa_get_total_num_eus_available(d, out(b, &mut eus));
            }
            7 => {
                // Deterministic mostly: no worker threads, reproducible runs.
                let mode = if b.u8() % 8 == 0 {
                    b.u32() % 4
                } else {
                    DPAKIT_SOFT_SCHED_DETERMINISTIC
                };
                dpakit_soft_dpa_set_sched_mode(d, mode, b.u64());
            }
            8 => {
                // A few workers at most: each busy-polls a core of this 2-core budget.
                let n = [0, 1, 2, 3, 257, u32::MAX][usize::from(b.u8() % 6)];
                dpakit_soft_dpa_set_num_workers(d, n);
            }
            9 => {
                let cpus = [0u32, 1, 4096];
                dpakit_soft_dpa_set_worker_cpus(d, cpus.as_ptr(), u32::from(b.u8() % 4));
            }
            10 => {
                let mut ran = 0u8;
                for _ in 0..b.u8() % 16 {
                    dpakit_soft_dpa_step(d, out(b, &mut ran));
                }
            }
            11 => {
                let mut events = [dpakit_soft_trace_event::default(); 8];
                let (mut n, mut stats) = (0usize, dpakit_soft_dpa_stats::default());
                dpakit_soft_dpa_get_trace(
                    d,
                    events.as_mut_ptr(),
                    usize::from(b.u8() % 9),
                    out(b, &mut n),
                );
                dpakit_soft_dpa_get_stats(d, out(b, &mut stats));
                let mut msg = [0 as std::ffi::c_char; 64];
                dpakit_soft_dpa_get_error(d, msg.as_mut_ptr(), usize::from(b.u8() % 65));
            }
            12 => {
                let mut ret = 0u64;
                let (a0, a1) = (w.dev_ptr(b), u64::from(b.u8()));
                doca_dpa_rpc(d, kernel(b), out(b, &mut ret), a0, a1);
            }
            _ => {
                let mut aff = null_mut();
                match b.u8() % 3 {
                    0 => {
                        doca_dpa_eu_affinity_create(d, out(b, &mut aff));
                        w.add(K::Affinity, aff.cast());
                    }
                    1 => ignore(doca_dpa_eu_affinity_set(
                        w.one(b, K::Affinity),
                        b.u32() % 300,
                    )),
                    _ => ignore(doca_dpa_eu_affinity_destroy(w.one(b, K::Affinity))),
                }
            }
        }
    }
}

unsafe fn dpa_memory(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: as in `op`.
    unsafe {
        let d = w.one::<doca_dpa>(b, K::Dpa);
        match b.u8() % 4 {
            0 => {
                let mut p = 0u64;
                let len = if b.bool() {
                    size(b) as usize
                } else {
                    b.u64() as usize
                };
                if doca_dpa_mem_alloc(d, len, out(b, &mut p)) == DOCA_SUCCESS {
                    w.dev_ptrs.push(p);
                }
            }
            1 => ignore(doca_dpa_mem_free(d, w.dev_ptr(b))),
            2 => {
                let (src, len) = w.range(b);
                doca_dpa_h2d_memcpy(d, w.dev_ptr(b), src.cast(), len);
            }
            _ => {
                let (dst, len) = w.range(b);
                doca_dpa_d2h_memcpy(d, dst.cast(), w.dev_ptr(b), len);
            }
        }
    }
}

unsafe fn thread_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: as in `op`.
    unsafe {
        let t = w.one::<doca_dpa_thread>(b, K::Thread);
        match b.u8() % 9 {
            0 | 1 => {
                let mut n = null_mut();
                doca_dpa_thread_create(w.one(b, K::Dpa), out(b, &mut n));
                w.add(K::Thread, n.cast());
            }
            2 => ignore(doca_dpa_thread_destroy(t)),
            3 => ignore(doca_dpa_thread_set_func_arg(t, kernel(b), w.dev_ptr(b))),
            4 => ignore(doca_dpa_thread_set_local_storage(t, w.dev_ptr(b))),
            5 => ignore(doca_dpa_thread_set_affinity(t, w.one(b, K::Affinity))),
            6 => ignore(doca_dpa_thread_start(t)),
            7 => ignore(doca_dpa_thread_run(t)),
            _ => ignore(doca_dpa_thread_stop(t)),
        }
    }
}

unsafe fn dpa_comp_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: as in `op`.
    unsafe {
        let c = w.one::<doca_dpa_completion>(b, K::DpaComp);
        let mut h = 0u64;
        match b.u8() % 6 {
            0 => {
                let mut n = null_mut();
                doca_dpa_completion_create(w.one(b, K::Dpa), size(b), out(b, &mut n));
                w.add(K::DpaComp, n.cast());
            }
            1 => ignore(doca_dpa_completion_destroy(c)),
            2 => ignore(doca_dpa_completion_set_thread(c, w.one(b, K::Thread))),
            3 => ignore(doca_dpa_completion_start(c)),
            4 => ignore(doca_dpa_completion_stop(c)),
            _ => ignore(doca_dpa_completion_get_dpa_handle(c, out(b, &mut h))),
        }
    }
}

unsafe fn notif_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: as in `op`.
    unsafe {
        let c = w.one::<doca_dpa_notification_completion>(b, K::Notif);
        let mut h = 0u64;
        match b.u8() % 5 {
            0 => {
                let mut n = null_mut();
                doca_dpa_notification_completion_create(
                    w.one(b, K::Dpa),
                    w.one(b, K::Thread),
                    out(b, &mut n),
                );
                w.add(K::Notif, n.cast());
            }
            1 => ignore(doca_dpa_notification_completion_destroy(c)),
            2 => ignore(doca_dpa_notification_completion_start(c)),
            3 => ignore(doca_dpa_notification_completion_stop(c)),
            _ => ignore(doca_dpa_notification_completion_get_dpa_handle(
                c,
                out(b, &mut h),
            )),
        }
    }
}

unsafe extern "C" fn conn_event(
    _: *mut doca_comch_event_connection_status_changed,
    conn: *mut doca_comch_connection,
    _: u8,
) {
    ADOPT.with(|a| a.borrow_mut().push((K::Conn, conn.cast())));
}

unsafe extern "C" fn msg_recv(
    _: *mut doca_comch_event_msg_recv,
    _: *mut u8,
    _: u32,
    _: *mut doca_comch_connection,
) {
}

unsafe extern "C" fn consumer_event(
    _: *mut doca_comch_event_consumer,
    _: *mut doca_comch_connection,
    _: u32,
) {
}

unsafe extern "C" fn comch_send_done(task: *mut doca_comch_task_send, _: doca_data, _: doca_data) {
    if FREE_IN_CALLBACK.with(Cell::get) {
        // SAFETY: the completed task, handed back to the program.
        unsafe { doca_task_free(doca_comch_task_send_as_task(task)) };
    }
}

unsafe fn server_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: as in `op`.
    unsafe {
        let s = w.one::<doca_comch_server>(b, K::Server);
        let (mut v, mut dev, mut rep) = (0u32, null_mut(), null_mut());
        match b.u8() % 10 {
            0 | 1 => {
                let mut n = null_mut();
                let name = NAMES[usize::from(b.u8() % 4)];
                doca_comch_server_create(
                    w.one(b, K::Dev),
                    w.one(b, K::DevRep),
                    name.as_ptr(),
                    out(b, &mut n),
                );
                w.add(K::Server, n.cast());
            }
            2 => ignore(doca_comch_server_destroy(s)),
            3 => {
                doca_comch_server_set_max_msg_size(s, size(b));
                doca_comch_server_set_recv_queue_size(s, size(b));
                doca_comch_server_get_max_msg_size(s, out(b, &mut v));
                doca_comch_server_get_recv_queue_size(s, &mut v);
            }
            4 => ignore(doca_comch_server_task_send_set_conf(
                s,
                Some(comch_send_done),
                Some(comch_send_done),
                size(b),
            )),
            5 => {
                let cb = if b.u8() % 8 == 0 {
                    None
                } else {
                    Some(conn_event as _)
                };
                doca_comch_server_event_connection_status_changed_register(s, cb, cb);
                doca_comch_server_event_msg_recv_register(s, Some(msg_recv));
                doca_comch_server_event_consumer_register(
                    s,
                    Some(consumer_event),
                    Some(consumer_event),
                );
            }
            6 => ignore(doca_comch_server_disconnect(s, w.one(b, K::Conn))),
            7 => {
                doca_comch_server_get_device(s, out(b, &mut dev));
                doca_comch_server_get_device_rep(s, out(b, &mut rep));
            }
            8 => send_task(w, b, s.cast()),
            _ => ignore(doca_ctx_start(doca_comch_server_as_ctx(s))),
        }
    }
}

unsafe fn client_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: as in `op`.
    unsafe {
        let c = w.one::<doca_comch_client>(b, K::Client);
        let (mut v, mut dev, mut conn) = (0u32, null_mut(), null_mut());
        match b.u8() % 9 {
            0 | 1 => {
                let mut n = null_mut();
                let name = NAMES[usize::from(b.u8() % 4)];
                doca_comch_client_create(w.one(b, K::Dev), name.as_ptr(), out(b, &mut n));
                w.add(K::Client, n.cast());
            }
            2 => ignore(doca_comch_client_destroy(c)),
            3 => {
                doca_comch_client_set_max_msg_size(c, size(b));
                doca_comch_client_set_recv_queue_size(c, size(b));
                doca_comch_client_get_max_msg_size(c, out(b, &mut v));
                doca_comch_client_get_recv_queue_size(c, &mut v);
                doca_comch_client_get_device(c, out(b, &mut dev));
            }
            4 => ignore(doca_comch_client_task_send_set_conf(
                c,
                Some(comch_send_done),
                Some(comch_send_done),
                size(b),
            )),
            5 => {
                doca_comch_client_event_msg_recv_register(c, Some(msg_recv));
                doca_comch_client_event_consumer_register(
                    c,
                    Some(consumer_event),
                    Some(consumer_event),
                );
            }
            6 => {
                doca_comch_client_get_connection(c, out(b, &mut conn));
                w.add(K::Conn, conn.cast());
            }
            7 => send_task(w, b, c.cast()),
            _ => ignore(doca_ctx_start(doca_comch_client_as_ctx(c))),
        }
    }
}

/// A Comch send task on a server (`server` true) or client.
unsafe fn send_task(w: &mut World, b: &mut Bytes<'_>, ctx: *mut c_void) {
    // SAFETY: as in `op`.
    unsafe {
        let conn = w.one(b, K::Conn);
        let (msg, len) = w.range(b);
        let len = (len % 5000) as u32;
        let mut t = null_mut();
        if b.bool() {
            doca_comch_server_task_send_alloc_init(
                ctx.cast(),
                conn,
                msg.cast(),
                len,
                out(b, &mut t),
            );
        } else {
            doca_comch_client_task_send_alloc_init(
                ctx.cast(),
                conn,
                msg.cast(),
                len,
                out(b, &mut t),
            );
        }
        w.add(K::ComchTask, t.cast());
    }
}

unsafe fn conn_ops(w: &mut World, b: &mut Bytes<'_>) {
    // SAFETY: as in `op`.
    unsafe {
        let conn = w.one::<doca_comch_connection>(b, K::Conn);
        let mut v = 0u64;
        match b.u8() % 7 {
            0 => {
                doca_comch_connection_set_user_data(conn, doca_data { u64_: b.u64() });
                doca_comch_connection_get_user_data(conn);
            }
            1 => {
                doca_comch_server_get_server_ctx(conn);
                doca_comch_client_get_client_ctx(conn);
            }
            2 => ignore(doca_comch_connection_update_info(conn)),
            3 => ignore(doca_comch_connection_get_counter(
                conn,
                b.u32() % 6,
                out(b, &mut v),
            )),
            4 => {
                let mut c = null_mut();
                doca_comch_consumer_create(conn, w.one(b, K::Mmap), out(b, &mut c));
                w.add(K::Consumer, c.cast());
            }
            5 => {
                let mut p = null_mut();
                doca_comch_producer_create(conn, out(b, &mut p));
                w.add(K::Producer, p.cast());
            }
            _ => {
                // A whole connection at once: a started server and a client of it, both on
                // one PE, progressed until connected (bounded).
                let pe = w.one::<doca_pe>(b, K::Pe);
                let s = w.one::<doca_comch_server>(b, K::Server);
                let c = w.one::<doca_comch_client>(b, K::Client);
                doca_comch_server_event_connection_status_changed_register(
                    s,
                    Some(conn_event),
                    Some(conn_event),
                );
                doca_comch_server_event_msg_recv_register(s, Some(msg_recv));
                doca_comch_client_event_msg_recv_register(c, Some(msg_recv));
                doca_comch_server_task_send_set_conf(
                    s,
                    Some(comch_send_done),
                    Some(comch_send_done),
                    8,
                );
                doca_comch_client_task_send_set_conf(
                    c,
                    Some(comch_send_done),
                    Some(comch_send_done),
                    8,
                );
                doca_pe_connect_ctx(pe, s.cast());
                doca_pe_connect_ctx(pe, c.cast());
                doca_ctx_start(s.cast());
                doca_ctx_start(c.cast());
                let mut conn = null_mut();
                for _ in 0..64 {
                    doca_pe_progress(pe);
                    if doca_comch_client_get_connection(c, &mut conn) == DOCA_SUCCESS
                        && !conn.is_null()
                    {
                        w.add(K::Conn, conn.cast());
                        break;
                    }
                }
            }
        }
    }
}

const _: () = assert!(MEM_LEN >= 4096);

/// Ignores a call's result: errors are expected, only crashes and leaks are findings.
fn ignore<T>(_: T) {}
