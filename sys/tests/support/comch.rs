//! What the Comch C API tests share: the soft device's diagnostics, an assertion on return
//! codes, a runtime directory per test binary, devices, contexts and progress.
#![allow(dead_code)]

use dpakit_sys::*;
use std::ffi::CStr;
use std::ptr::null_mut;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub const ARM: &CStr = c"03:00.0";
pub const HOST: &CStr = c"b1:00.0";

/// Asserts a call returns `code`, showing the soft device's explanation otherwise.
macro_rules! expect {
    ($call:expr, $code:expr) => {{
        // SAFETY: the point of these tests: C calls with whatever arguments, which the soft
        // device must survive.
        let got = unsafe { $call };
        assert_eq!(
            got,
            $code,
            "{} returned {:?} ({})",
            stringify!($call),
            got,
            last_error()
        );
    }};
}

/// The explanation of the calling thread's last failed call.
pub fn last_error() -> String {
    let mut buf = [0u8; 512];
    // SAFETY: a writable buffer of its length.
    unsafe { dpakit_soft_last_error(buf.as_mut_ptr().cast(), buf.len()) };
    CStr::from_bytes_until_nul(&buf)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// Asserts the last failed call's explanation mentions `part`.
#[track_caller]
pub fn explained(part: &str) {
    let e = last_error();
    assert!(e.contains(part), "expected `{part}` in: {e}");
}

/// Points the soft device at a runtime directory of this process. Every test calls it first.
pub fn setup() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!(
            "dpakit-{}-{}",
            env!("CARGO_CRATE_NAME"),
            std::process::id()
        ));
        // SAFETY: every test calls this before it touches the soft device, and the OnceLock
        // holds the other tests back until the variable is set: no thread reads the
        // environment meanwhile.
        unsafe { std::env::set_var("DPAKIT_SOFT_RUNTIME_DIR", dir) };
    });
}

pub fn open_dev(pci: &CStr) -> *mut doca_dev {
    let mut list = null_mut();
    let mut n = 0;
    expect!(doca_devinfo_create_list(&mut list, &mut n), DOCA_SUCCESS);
    let mut dev = null_mut();
    for i in 0..n as usize {
        // SAFETY: `list` holds `n` devinfos.
        let info = unsafe { *list.add(i) };
        let mut equal = 0;
        expect!(
            doca_devinfo_is_equal_pci_addr(info, pci.as_ptr(), &mut equal),
            DOCA_SUCCESS
        );
        if equal != 0 {
            expect!(doca_dev_open(info, &mut dev), DOCA_SUCCESS);
        }
    }
    expect!(doca_devinfo_destroy_list(list), DOCA_SUCCESS);
    assert!(!dev.is_null(), "{pci:?} is in the default topology");
    dev
}

/// The representor of the host PF, on the Arm device.
pub fn open_rep(arm: *mut doca_dev) -> *mut doca_dev_rep {
    let mut list = null_mut();
    let mut n = 0;
    expect!(
        doca_devinfo_rep_create_list(arm, DOCA_DEVINFO_REP_FILTER_NET as i32, &mut list, &mut n),
        DOCA_SUCCESS
    );
    let mut rep = null_mut();
    for i in 0..n as usize {
        // SAFETY: `list` holds `n` representor devinfos.
        let info = unsafe { *list.add(i) };
        let mut equal = 0;
        expect!(
            doca_devinfo_rep_is_equal_pci_addr(info, HOST.as_ptr(), &mut equal),
            DOCA_SUCCESS
        );
        if equal != 0 {
            expect!(doca_dev_rep_open(info, &mut rep), DOCA_SUCCESS);
        }
    }
    expect!(doca_devinfo_rep_destroy_list(list), DOCA_SUCCESS);
    assert!(!rep.is_null(), "the Arm device represents the host PF");
    rep
}

pub fn new_pe() -> *mut doca_pe {
    let mut pe = null_mut();
    expect!(doca_pe_create(&mut pe), DOCA_SUCCESS);
    pe
}

pub fn server_ctx(server: *mut doca_comch_server) -> *mut doca_ctx {
    // SAFETY: a live server.
    unsafe { doca_comch_server_as_ctx(server) }
}

pub fn client_ctx(client: *mut doca_comch_client) -> *mut doca_ctx {
    // SAFETY: a live client.
    unsafe { doca_comch_client_as_ctx(client) }
}

#[track_caller]
pub fn state(ctx: *mut doca_ctx) -> doca_ctx_states {
    let mut s = 0;
    expect!(doca_ctx_get_state(ctx, &mut s), DOCA_SUCCESS);
    s
}

/// Progresses `pes` until `done()` holds (at most 10 s).
#[track_caller]
pub fn progress_until(pes: &[*mut doca_pe], mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        for &pe in pes {
            // SAFETY: live PEs.
            unsafe { doca_pe_progress(pe) };
        }
        assert!(Instant::now() < deadline, "timed out");
    }
}
