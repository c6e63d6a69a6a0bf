//! `capi_sequence`: random sequences of DOCA C API calls into the soft device.
//!
//! Each input is a list of operations (one byte each, then its arguments) over devices and
//! representors, PEs, contexts, mmaps, buffer inventories and buffers, MsgQs with their CPU
//! and DPA consumers and producers, consumer and DPA completions, DPAs (app, memory, RPC,
//! threads, affinities, notifications, deterministic steps) and Comch servers, clients and
//! connections in this process. Handle arguments are NULL, live, destroyed, stray, of another
//! kind, or of another device or DPA; sizes, flags and enums are random. Callbacks call back
//! into the API as the input's tail says (`reenter`): stop or destroy their own context or
//! another, free or resubmit their task, progress or destroy a PE, disconnect. At the end
//! everything is stopped and destroyed: a handle the soft device will not take back, or a descriptor it keeps open, is a finding, as is any panic (even one
//! the API turns into an error), crash or hang. Kernel panics are the kernel's, not findings.
//!
//! This file reads the input: one byte picks an operation (`op`), which reads its own
//! arguments. The operations live in `capi_sequence/`, one module per object family. Each
//! makes C calls as a C program might: handles may be anything (the soft device checks every
//! one); memory arguments are locals or the world's memory, valid for the sizes given, as
//! the C contract requires.
#![no_main]

mod capi;
mod support;

// A bin target's `mod x;` would look for `fuzz_targets/x.rs`: the families sit in a folder
// named after the target.
#[path = "capi_sequence/comch.rs"]
mod comch;
#[path = "capi_sequence/dev.rs"]
mod dev;
#[path = "capi_sequence/dpa.rs"]
mod dpa;
#[path = "capi_sequence/mem.rs"]
mod mem;
#[path = "capi_sequence/msgq.rs"]
mod msgq;
#[path = "capi_sequence/pe.rs"]
mod pe;
#[path = "capi_sequence/reenter.rs"]
mod reenter;

use capi::{MEM_LEN, World};
use dpakit_sys::*;
use libfuzzer_sys::fuzz_target;
use std::cell::Cell;
use std::ffi::c_void;
use std::ptr::null_mut;
use support::Bytes;

/// Most operations one input runs.
const MAX_OPS: usize = 96;

thread_local! {
    /// `DPAKIT_FUZZ_TRACE` set: each operation's code, and each call a callback makes, goes to
    /// stderr: a crashing input's story (`cargo xtask fuzz` says so when a target fails).
    pub static TRACE: bool = std::env::var_os("DPAKIT_FUZZ_TRACE").is_some();
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
        reenter::start(data);
        for _ in 0..MAX_OPS {
            if b.is_empty() {
                break;
            }
            reenter::snapshot(&w);
            op(&mut w, &mut b);
            w.adopt();
        }
        w.teardown();
        assert_eq!(open_fds(), fds, "file descriptors leaked");
    }
);

fn init() {
    // A private runtime directory for the Comch sockets of this process, removed at exit.
    support::private_runtime_dir("dpakit-fuzz");
    start_process_resources();
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

/// Starts and destroys one DPA context, so what the soft device keeps for the life of the
/// process once one has started (the live view's socket and thread) exists before the first
/// input: an input's leak check then counts only what the input made.
fn start_process_resources() {
    let mut w = World::new();
    // SAFETY: the API's calls on objects the world records and tears down.
    unsafe {
        let dev = capi::happy::open_dev(&mut w, c"b1:00.0");
        let mut dpa = null_mut();
        assert_eq!(doca_dpa_create(dev, &mut dpa), DOCA_SUCCESS);
        w.add(capi::K::Dpa, dpa.cast());
        doca_dpa_set_app(dpa, dpakit_kernels::APP.raw().cast());
        assert_eq!(doca_dpa_start(dpa), DOCA_SUCCESS);
    }
    w.teardown();
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// An out-parameter: mostly `slot`, sometimes NULL.
fn out<T>(b: &mut Bytes<'_>, slot: &mut T) -> *mut T {
    if b.u8().is_multiple_of(16) {
        null_mut()
    } else {
        slot
    }
}

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

/// One operation: its code picks the family function, which reads its arguments. The codes
/// (and every choice after them) are the corpus's format: keep them as they are.
fn op(w: &mut World, b: &mut Bytes<'_>) {
    let code = b.u8() % 40;
    if TRACE.with(|t| *t) {
        // Which operations an input runs (with the family's choices, the input's story).
        eprintln!("op {code} ({} bytes left)", b.len());
    }
    match code {
        0 => dev::devices(w, b),
        1 => dev::destroy_list(w),
        2 => dev::open(w, b),
        3 => dev::close(w, b),
        4 => dev::rep_list(w, b),
        5 => dev::destroy_rep_list(w),
        6 => dev::open_rep(w, b),
        7 => dev::close_rep(w, b),
        8 => pe::create(w, b),
        9 => pe::destroy(w, b),
        10 => pe::pe_ops(w, b),
        11 => pe::ctx_ops(w, b),
        12 => mem::create_mmap(w, b),
        13 => mem::mmap_ops(w, b),
        14 => mem::create_inventory(w, b),
        15 => mem::inventory_ops(w, b),
        16 => mem::get_buf(w, b),
        17 => mem::buf_ops(w, b),
        18 => msgq::create(w, b),
        19 => msgq::msgq_ops(w, b),
        20 => msgq::consumer_ops(w, b),
        21 => msgq::producer_ops(w, b),
        22 => pe::task_ops(w, b),
        23 => msgq::cons_comp_ops(w, b),
        24 => dpa::create(w, b),
        25 => dpa::dpa_ops(w, b),
        26 => dpa::dpa_memory(w, b),
        27 => dpa::thread_ops(w, b),
        28 => dpa::dpa_comp_ops(w, b),
        29 => dpa::notif_ops(w, b),
        30 => comch::server_ops(w, b),
        31 => comch::client_ops(w, b),
        32 => comch::conn_ops(w, b),
        33 => pe::progress_all(w, b),
        _ => happy(w, b),
    }
}

/// The common happy paths, so sequences reach started objects often.
fn happy(w: &mut World, b: &mut Bytes<'_>) {
    match b.u8() % 8 {
        0 => pe::create_valid(w),
        1 => dev::devices(w, b),
        2 => dpa::create_started(w, b),
        4 => {
            // SAFETY: a NUL-terminated PCI address; the builder's calls take valid arguments.
            unsafe { capi::happy::open_dev(w, c"b1:00.0") };
        }
        // SAFETY: the builder's calls take valid arguments.
        5 => unsafe { capi::happy::buffers(w, b) },
        // SAFETY: as above; the completion callbacks are the MsgQ family's.
        6 => unsafe { capi::happy::echo_path(w, b, msgq::recv_done, msgq::send_done) },
        // SAFETY: as above.
        7 => unsafe { capi::happy::comch_pair(w, b) },
        _ => dev::open_valid(w, b),
    }
}

const _: () = assert!(MEM_LEN >= 4096);

/// Ignores a call's result: errors are expected, only crashes and leaks are findings.
fn ignore<T>(_: T) {}
