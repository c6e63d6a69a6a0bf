//! The DPA's failures as C sees them: `doca_dpa_peek_at_last_error` reports a failed context
//! without clearing it, and the explanation names the kernel and what it did.
//!
//! These run against the soft device (the default configuration of `dpakit-sys`).
#![cfg(all(feature = "soft", not(feature = "doca")))]

#[macro_use]
#[path = "support/comch.rs"]
mod support;

use dpakit_fixture_faulty_kernels as faulty;
use dpakit_sys::*;
use std::ptr::null_mut;
use support::*;

/// A started DPA context running `app`, with its kernels on the caller's thread (deterministic
/// scheduling).
fn started_dpa(dev: *mut doca_dev, app: *mut doca_dpa_app) -> *mut doca_dpa {
    let mut dpa = null_mut();
    expect!(doca_dpa_create(dev, &mut dpa), DOCA_SUCCESS);
    expect!(doca_dpa_set_app(dpa, app), DOCA_SUCCESS);
    expect!(
        dpakit_soft_dpa_set_sched_mode(dpa, dpakit_sys::soft::SCHED_DETERMINISTIC, 7),
        DOCA_SUCCESS
    );
    expect!(doca_dpa_start(dpa), DOCA_SUCCESS);
    dpa
}

/// `func` as `doca_dpa_rpc` takes it.
fn func(address: *const ()) -> doca_dpa_func_t {
    // SAFETY: a function address, as doca_dpa_func_t holds.
    Some(unsafe { std::mem::transmute::<*const (), unsafe extern "C" fn()>(address) })
}

#[test]
fn a_failed_context_is_reported_until_it_is_destroyed() {
    setup();
    let dev = open_dev(HOST);
    let dpa = started_dpa(dev, dpakit_kernels::APP.raw().cast());
    expect!(doca_dpa_peek_at_last_error(dpa), DOCA_SUCCESS);
    // The credits RPC with a consumer handle that names nothing: fatal for the context.
    let ack = func(dpakit_kernels::APP.consumer_ack().func() as *const ());
    let mut ret = 0u64;
    expect!(
        doca_dpa_rpc(dpa, ack, &mut ret, 0u64, 1u64),
        DOCA_ERROR_INVALID_VALUE
    );
    for _ in 0..2 {
        expect!(doca_dpa_peek_at_last_error(dpa), DOCA_ERROR_BAD_STATE);
        explained("doca_dpa_peek_at_last_error: the DPA context has failed");
        explained("kernel `dpakit_consumer_ack`");
    }
    expect!(
        doca_dpa_peek_at_last_error(null_mut()),
        DOCA_ERROR_INVALID_VALUE
    );
    expect!(doca_dpa_destroy(dpa), DOCA_SUCCESS);
    expect!(doca_dev_close(dev), DOCA_SUCCESS);
}

#[test]
fn a_kernel_panic_is_the_error_c_peeks_at_with_its_message_and_location() {
    setup();
    let dev = open_dev(HOST);
    let panics = func(faulty::PANICS_RPC.func() as *const ());
    for isa in [false, true] {
        let mut dpa = null_mut();
        expect!(doca_dpa_create(dev, &mut dpa), DOCA_SUCCESS);
        expect!(
            doca_dpa_set_app(dpa, faulty::APP.raw().cast()),
            DOCA_SUCCESS
        );
        if isa {
            // The image the fixture's app embeds.
            expect!(
                dpakit_soft_dpa_set_exec_mode(dpa, dpakit_sys::soft::EXEC_ISA),
                DOCA_SUCCESS
            );
        }
        expect!(doca_dpa_start(dpa), DOCA_SUCCESS);
        let mut ret = 0u64;
        expect!(doca_dpa_rpc(dpa, panics, &mut ret, 7u64), DOCA_SUCCESS);
        assert_eq!(ret, 7);
        expect!(doca_dpa_peek_at_last_error(dpa), DOCA_SUCCESS);
        expect!(
            doca_dpa_rpc(dpa, panics, &mut ret, 5u64),
            DOCA_ERROR_UNEXPECTED
        );
        expect!(doca_dpa_peek_at_last_error(dpa), DOCA_ERROR_BAD_STATE);
        explained("kernel `panics_rpc`: panicked at xtask/fixtures/faulty-kernels/src/lib.rs:");
        explained(": an RPC bug on purpose (5)); it stays failed");
        expect!(doca_dpa_destroy(dpa), DOCA_SUCCESS);
    }
    expect!(doca_dev_close(dev), DOCA_SUCCESS);
}

/// `dpakit_soft_set_gdb` checks the address it is given and takes NULL to go back to
/// `DPAKIT_SOFT_GDB` (tests/gdb.rs drives gdb itself).
#[test]
fn the_gdb_address_is_checked_and_null_clears_it() {
    expect!(
        dpakit_soft_set_gdb(c"no address at all".as_ptr()),
        DOCA_ERROR_INVALID_VALUE
    );
    expect!(dpakit_soft_set_gdb(std::ptr::null()), DOCA_SUCCESS);
}
