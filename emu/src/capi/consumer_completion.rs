//! `doca_comch_consumer.h`, consumer completions: where DPA consumers report received
//! messages, and which DPA thread they trigger.

use super::dpa;
use super::dpa_thread::{self, DpaThreadObj};
use super::registry::{self, Kind, Object};
use super::types::*;
use super::{call, out};
use crate::dpa::ConsumerCompletion;
use crate::error::{ErrorCode, Result, bail, err};
use crate::limits::{CONSUMER_MAX_NUM_RECV, MAX_IMM_DATA_LEN, MSGQ_MAX_NUM_CONSUMERS};
use std::cell::{Cell, Ref, RefCell};
use std::ffi::c_void;

/// A `struct doca_comch_consumer_completion`.
pub(crate) struct ConsumerCompletionObj {
    max_num_consumers: Cell<u32>,
    max_num_recv: Cell<u32>,
    imm_data_len: Cell<u32>,
    thread: Cell<*mut c_void>,
    model: RefCell<Option<ConsumerCompletion>>,
    /// Consumers attached to it that still exist.
    pub(crate) users: super::Users,
}

impl Object for ConsumerCompletionObj {
    const KIND: Kind = Kind::ConsumerCompletion;
}

impl ConsumerCompletionObj {
    /// The started completion.
    pub(crate) fn model(&self) -> Result<Ref<'_, ConsumerCompletion>> {
        Ref::filter_map(self.model.borrow(), Option::as_ref).map_err(|_| {
            err(
                ErrorCode::BadState,
                "the consumer completion is not started: call \
                 doca_comch_consumer_completion_start first",
            )
        })
    }

    fn require_idle(&self, what: &str) -> Result<()> {
        if self.model.borrow().is_some() {
            return Err(super::not_idle(
                what,
                "stop the consumer completion first (doca_comch_consumer_completion_stop)",
            ));
        }
        Ok(())
    }
}

fn completion<'a>(ptr: *const doca_comch_consumer_completion) -> Result<&'a ConsumerCompletionObj> {
    registry::get::<ConsumerCompletionObj>(ptr.cast(), "consumer_comp")
}

/// `doca_comch_consumer_completion_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_completion_create(
    consumer_comp: *mut *mut doca_comch_consumer_completion,
) -> doca_error_t {
    call("doca_comch_consumer_completion_create", || {
        super::non_null(consumer_comp, "consumer_comp")?;
        let handle = registry::register(Box::new(ConsumerCompletionObj {
            max_num_consumers: Cell::new(1),
            max_num_recv: Cell::new(0),
            imm_data_len: Cell::new(MAX_IMM_DATA_LEN as u32),
            thread: Cell::new(std::ptr::null_mut()),
            model: RefCell::new(None),
            users: super::Users::default(),
        }))?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(consumer_comp, "consumer_comp", handle.cast()) }
    })
}

/// `doca_comch_consumer_completion_destroy`: `IN_USE` while consumers attached to it exist.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_completion_destroy(
    consumer_comp: *mut doca_comch_consumer_completion,
) -> doca_error_t {
    call("doca_comch_consumer_completion_destroy", || {
        let c = completion(consumer_comp)?;
        c.users.require_none("consumer(s) set to this completion")?;
        drop(c.model.borrow_mut().take());
        if let Ok(t) = dpa_thread::thread(c.thread.get().cast(), "thread") {
            t.users.release();
            if let Ok(d) = t.dpa() {
                d.users.release();
            }
        }
        registry::retire::<ConsumerCompletionObj>(consumer_comp.cast());
        Ok(())
    })
}

fn set_value(
    api: &'static str,
    consumer_comp: *mut doca_comch_consumer_completion,
    value: u32,
    range: std::ops::RangeInclusive<u32>,
    set: impl FnOnce(&ConsumerCompletionObj, u32),
) -> doca_error_t {
    call(api, || {
        let c = completion(consumer_comp)?;
        c.require_idle("configuring it")?;
        if !range.contains(&value) {
            bail!(
                InvalidValue,
                "{value} is outside the soft device's {}..={}",
                range.start(),
                range.end()
            );
        }
        set(c, value);
        Ok(())
    })
}

/// `doca_comch_consumer_completion_set_max_num_consumers`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_completion_set_max_num_consumers(
    consumer_comp: *mut doca_comch_consumer_completion,
    max_num_consumers: u32,
) -> doca_error_t {
    set_value(
        "doca_comch_consumer_completion_set_max_num_consumers",
        consumer_comp,
        max_num_consumers,
        1..=MSGQ_MAX_NUM_CONSUMERS as u32,
        |c, v| c.max_num_consumers.set(v),
    )
}

/// `doca_comch_consumer_completion_set_max_num_recv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_completion_set_max_num_recv(
    consumer_comp: *mut doca_comch_consumer_completion,
    max_num_recv: u32,
) -> doca_error_t {
    set_value(
        "doca_comch_consumer_completion_set_max_num_recv",
        consumer_comp,
        max_num_recv,
        1..=CONSUMER_MAX_NUM_RECV as u32,
        |c, v| c.max_num_recv.set(v),
    )
}

/// `doca_comch_consumer_completion_set_imm_data_len`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_completion_set_imm_data_len(
    consumer_comp: *mut doca_comch_consumer_completion,
    imm_data_len: u32,
) -> doca_error_t {
    set_value(
        "doca_comch_consumer_completion_set_imm_data_len",
        consumer_comp,
        imm_data_len,
        0..=MAX_IMM_DATA_LEN as u32,
        |c, v| c.imm_data_len.set(v),
    )
}

/// `doca_comch_consumer_completion_set_dpa_thread`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_completion_set_dpa_thread(
    consumer_comp: *mut doca_comch_consumer_completion,
    dpa_thread: *mut doca_dpa_thread,
) -> doca_error_t {
    call("doca_comch_consumer_completion_set_dpa_thread", || {
        let c = completion(consumer_comp)?;
        let t = dpa_thread::thread(dpa_thread, "dpa_thread")?;
        c.require_idle("setting its thread")?;
        if let Ok(old) = dpa_thread::thread(c.thread.get().cast(), "old") {
            old.users.release();
            if let Ok(d) = old.dpa() {
                d.users.release();
            }
        }
        t.users.hold();
        t.dpa()?.users.hold();
        c.thread.set(dpa_thread.cast());
        Ok(())
    })
}

/// `doca_comch_consumer_completion_start`: the thread must be set and started.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_completion_start(
    consumer_comp: *mut doca_comch_consumer_completion,
) -> doca_error_t {
    call("doca_comch_consumer_completion_start", || {
        let c = completion(consumer_comp)?;
        c.require_idle("starting it again")?;
        if c.max_num_recv.get() == 0 {
            bail!(
                BadState,
                "set the queue depth first (doca_comch_consumer_completion_set_max_num_recv)"
            );
        }
        let Ok(thread) = dpa_thread::thread(c.thread.get().cast(), "thread") else {
            bail!(
                BadState,
                "set a DPA thread first (doca_comch_consumer_completion_set_dpa_thread)"
            );
        };
        let thread: &DpaThreadObj = thread;
        let dpa = dpa::dpa(thread.dpa.cast(), "the thread's DPA")?.model()?;
        let model_thread = thread.model()?;
        let started = ConsumerCompletion::builder(&dpa)
            .max_num_consumers(c.max_num_consumers.get())
            .max_num_recv(c.max_num_recv.get())
            .imm_data_len(c.imm_data_len.get())
            .dpa_thread(&model_thread)
            .start()?;
        drop(model_thread);
        *c.model.borrow_mut() = Some(started);
        Ok(())
    })
}

/// `doca_comch_consumer_completion_stop`: `IN_USE` while consumers set to it exist.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_completion_stop(
    consumer_comp: *mut doca_comch_consumer_completion,
) -> doca_error_t {
    call("doca_comch_consumer_completion_stop", || {
        let c = completion(consumer_comp)?;
        c.model()?;
        c.users.require_none("consumer(s) set to this completion")?;
        drop(c.model.borrow_mut().take());
        Ok(())
    })
}

/// `doca_comch_consumer_completion_get_dpa_handle`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_completion_get_dpa_handle(
    consumer_comp: *mut doca_comch_consumer_completion,
    consumer_comp_handle: *mut doca_dpa_dev_comch_consumer_completion_t,
) -> doca_error_t {
    call("doca_comch_consumer_completion_get_dpa_handle", || {
        let h = completion(consumer_comp)?.model()?.dpa_handle().raw();
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(consumer_comp_handle, "consumer_comp_handle", h) }
    })
}
