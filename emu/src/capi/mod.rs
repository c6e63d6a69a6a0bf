//! DOCA's C API, exported by the soft device: one module per header of `dpakit-doca-headers`
//! (the DOCA 2.5 `doca_cc*.h` names are C wrappers in `emu/csrc/cc.c` over the Comch functions).
//!
//! Every function here is an `extern "C"` symbol under DOCA's name and signature (`dpakit-sys`
//! checks the signatures against the headers at compile time). Each one validates what a C
//! caller can get wrong — NULL, a handle destroyed or of another kind (through the
//! `registry`), values out of range, calls in the wrong state — and answers with DOCA's error
//! code; the reason is kept for [`dpakit_soft_last_error`] and,
//! with `DPAKIT_SOFT_LOG=1`, printed. No panic crosses the boundary: one becomes
//! `DOCA_ERROR_UNEXPECTED`.
//!
//! The objects wrap the Rust model of the rest of this crate. C objects are not thread safe,
//! as in DOCA: a progress engine and its contexts belong to one thread at a time, and no object
//! may be destroyed while another call uses it.

#![allow(non_snake_case, clippy::missing_safety_doc)]

mod buf;
mod buf_pool;
mod client;
mod clock;
mod comch;
mod comch_api;
mod comm_channel;
mod connection;
mod consumer;
mod consumer_completion;
mod context;
mod ctx;
mod dev;
mod dev_query;
mod dma;
mod dpa;
mod dpa_completion;
mod dpa_launch;
mod dpa_thread;
mod error;
mod mmap;
mod msgq;
mod pe;
mod producer;
pub(crate) mod registry;
mod server;
mod soft;
mod soft_config;
mod soft_isa;
mod sync_event;
mod task;
pub mod types;
mod unsupported;
mod version;

pub use buf::*;
pub use buf_pool::*;
pub use client::*;
pub use comch_api::*;
pub use comm_channel::*;
pub use connection::*;
pub use consumer::*;
pub use consumer_completion::*;
pub use ctx::*;
pub use dev::*;
pub use dev_query::*;
pub use dma::*;
pub use dpa::*;
pub use dpa_completion::*;
pub use dpa_launch::*;
pub use dpa_thread::*;
pub use error::*;
pub use mmap::*;
pub use msgq::*;
pub use pe::*;
pub use producer::*;
pub use server::*;
pub use soft::*;
pub use soft_isa::*;
pub use sync_event::*;
pub use task::{
    doca_task_free, doca_task_get_status, doca_task_get_user_data, doca_task_set_user_data,
    doca_task_submit, doca_task_submit_ex,
};
pub use unsupported::*;
pub use version::*;

use crate::error::{Error, ErrorCode, Result, err};
use std::panic::{AssertUnwindSafe, catch_unwind};
use types::doca_error_t;

pub(crate) use crate::error::{last_error, record, report};

#[cold]
#[inline(never)]
fn panic_error(api: &str, payload: Box<dyn std::any::Any + Send>) -> Error {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into());
    err(
        ErrorCode::Unexpected,
        format!("internal error in the soft device while serving {api}: {what}"),
    )
}

/// Runs the body of API function `api`: `DOCA_SUCCESS`, or the error's code (recorded).
#[inline]
pub(crate) fn call(api: &'static str, body: impl FnOnce() -> Result<()>) -> doca_error_t {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => failed(api, e),
        Err(payload) => failed(api, panic_error(api, payload)),
    }
}

/// Runs the body of an API function that returns a value instead of an error code: on failure
/// the reason is recorded and `fallback` returned (NULL, 0, nothing).
#[inline]
pub(crate) fn call_value<T>(api: &'static str, fallback: T, body: impl FnOnce() -> Result<T>) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => value,
        Ok(Err(e)) => {
            failed(api, e);
            fallback
        }
        Err(payload) => {
            failed(api, panic_error(api, payload));
            fallback
        }
    }
}

/// Records a failure of `api`; returns its code. Out of line: the success path of every API
/// function stays short.
#[cold]
#[inline(never)]
fn failed(api: &str, e: Error) -> doca_error_t {
    record(api, &e);
    e.code().raw() as doca_error_t
}

/// Writes `value` through the out-parameter `ptr` named `param`; `INVALID_VALUE` if it is NULL.
///
/// # Safety
/// A non-null `ptr` must be valid for a write of `T`, as the C contract of every out-parameter
/// says.
#[inline]
pub(crate) unsafe fn out<T>(ptr: *mut T, param: &str, value: T) -> Result<()> {
    if ptr.is_null() {
        return Err(err(
            ErrorCode::InvalidValue,
            format!("{param} is NULL: pass where to store the result"),
        ));
    }
    // SAFETY: non-null and writable by the caller's contract.
    unsafe { ptr.write(value) };
    Ok(())
}

/// `INVALID_VALUE` naming `param` if `ptr` is NULL.
#[inline]
pub(crate) fn non_null<T>(ptr: *const T, param: &str) -> Result<()> {
    if ptr.is_null() {
        return Err(err(ErrorCode::InvalidValue, format!("{param} is NULL")));
    }
    Ok(())
}

/// The C string at `ptr` (NUL-terminated, UTF-8), for name and address parameters.
///
/// # Safety
/// A non-null `ptr` must point at a NUL-terminated string.
pub(crate) unsafe fn c_str<'a>(ptr: *const std::ffi::c_char, param: &str) -> Result<&'a str> {
    non_null(ptr, param)?;
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    unsafe { std::ffi::CStr::from_ptr(ptr) }
        .to_str()
        .map_err(|_| err(ErrorCode::InvalidValue, format!("{param} is not UTF-8")))
}

/// Copies `text` into the C buffer `buf` of `size` bytes, NUL-terminated. `INVALID_VALUE` for
/// a NULL buffer or one too small.
///
/// # Safety
/// A non-null `buf` must be valid for `size` bytes of writes.
pub(crate) unsafe fn copy_c_string(
    buf: *mut std::ffi::c_char,
    size: usize,
    text: &str,
    param: &str,
) -> Result<()> {
    non_null(buf, param)?;
    if text.len() >= size {
        return Err(err(
            ErrorCode::InvalidValue,
            format!(
                "{param} holds {size} bytes, and the value needs {} with its NUL",
                text.len() + 1
            ),
        ));
    }
    // SAFETY: `text.len() + 1 <= size` bytes, writable by the caller's contract.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), text.len());
        *buf.add(text.len()) = 0;
    }
    Ok(())
}

/// How many objects depend on an object: DOCA refuses to destroy (or stop) it while any do.
#[derive(Default)]
pub(crate) struct Users(std::cell::Cell<u32>);

impl Users {
    /// One more object depends on it.
    pub(crate) fn hold(&self) {
        self.0.set(self.0.get() + 1);
    }

    /// An object that depended on it is gone.
    pub(crate) fn release(&self) {
        self.0.set(self.0.get().saturating_sub(1));
    }

    pub(crate) fn count(&self) -> u32 {
        self.0.get()
    }

    /// `IN_USE` while any dependent exists; `which` names them ("producer(s) attached to this
    /// DPA completion").
    pub(crate) fn require_none(&self, which: &str) -> Result<()> {
        match self.count() {
            0 => Ok(()),
            n => Err(err(
                ErrorCode::InUse,
                format!("{n} {which} still exist: destroy them first"),
            )),
        }
    }
}

/// `BAD_STATE` for configuring an object that is no longer idle.
pub(crate) fn not_idle(what: &str, fix: &str) -> Error {
    err(
        ErrorCode::BadState,
        format!("{what} is only possible while idle (before start); {fix}"),
    )
}
