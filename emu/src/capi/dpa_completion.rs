//! `doca_dpa.h`, completions: DPA completions (where DPA producers report sends) and
//! notification completions (how kernels trigger a thread).

use super::dpa::{self, DpaObj};
use super::dpa_thread::{self, DpaThreadObj};
use super::registry::{self, Kind, Object};
use super::types::*;
use super::{call, out};
use crate::dpa::{DpaCompletion, NotificationCompletion};
use crate::error::{ErrorCode, Result, bail, err};
use crate::limits::DPA_COMPLETION_MAX_QUEUE_SIZE;
use std::cell::{Cell, Ref, RefCell};
use std::ffi::c_void;

/// A `struct doca_dpa_completion`.
pub(crate) struct DpaCompletionObj {
    dpa: *mut c_void,
    queue_size: u32,
    thread: Cell<*mut c_void>,
    model: RefCell<Option<DpaCompletion>>,
    /// Producers attached to it that still exist.
    pub(crate) users: super::Users,
}

impl Object for DpaCompletionObj {
    const KIND: Kind = Kind::DpaCompletion;
}

impl DpaCompletionObj {
    /// The started completion.
    pub(crate) fn model(&self) -> Result<Ref<'_, DpaCompletion>> {
        Ref::filter_map(self.model.borrow(), Option::as_ref).map_err(|_| {
            err(
                ErrorCode::BadState,
                "the DPA completion is not started: call doca_dpa_completion_start first",
            )
        })
    }

    fn dpa(&self) -> Result<&DpaObj> {
        dpa::dpa(self.dpa.cast(), "the completion's DPA")
    }
}

fn completion<'a>(ptr: *const doca_dpa_completion) -> Result<&'a DpaCompletionObj> {
    registry::get::<DpaCompletionObj>(ptr.cast(), "dpa_comp")
}

/// Attaches `thread` (a handle) to a not-yet-started completion of DPA `dpa`.
fn attach_thread(
    slot: &Cell<*mut c_void>,
    dpa: *mut c_void,
    thread: *mut doca_dpa_thread,
) -> Result<()> {
    let t = dpa_thread::thread(thread, "dpa_thread")?;
    if t.dpa != dpa {
        bail!(
            InvalidValue,
            "the DPA thread belongs to another DPA context than the completion"
        );
    }
    if let Ok(old) = dpa_thread::thread(slot.get().cast(), "old") {
        old.users.release();
    }
    t.users.hold();
    slot.set(thread.cast());
    Ok(())
}

/// `doca_dpa_completion_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_completion_create(
    dpa: *mut doca_dpa,
    queue_size: core::ffi::c_uint,
    dpa_comp: *mut *mut doca_dpa_completion,
) -> doca_error_t {
    call("doca_dpa_completion_create", || {
        let d = dpa::dpa(dpa, "dpa")?;
        super::non_null(dpa_comp, "dpa_comp")?;
        if queue_size == 0 || queue_size as usize > DPA_COMPLETION_MAX_QUEUE_SIZE {
            bail!(
                InvalidValue,
                "queue_size {queue_size} is outside 1..={DPA_COMPLETION_MAX_QUEUE_SIZE}"
            );
        }
        let handle = registry::register(Box::new(DpaCompletionObj {
            dpa: dpa.cast(),
            queue_size,
            thread: Cell::new(std::ptr::null_mut()),
            model: RefCell::new(None),
            users: super::Users::default(),
        }))?;
        d.users.hold();
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(dpa_comp, "dpa_comp", handle.cast()) }
    })
}

/// `doca_dpa_completion_destroy`: `IN_USE` while producers attached to it exist.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_completion_destroy(
    dpa_comp: *mut doca_dpa_completion,
) -> doca_error_t {
    call("doca_dpa_completion_destroy", || {
        let c = completion(dpa_comp)?;
        c.users
            .require_none("producer(s) attached to this DPA completion")?;
        drop(c.model.borrow_mut().take());
        if let Ok(t) = dpa_thread::thread(c.thread.get().cast(), "thread") {
            t.users.release();
        }
        c.dpa()?.users.release();
        registry::retire::<DpaCompletionObj>(dpa_comp.cast());
        Ok(())
    })
}

/// `doca_dpa_completion_set_thread`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_completion_set_thread(
    dpa_comp: *mut doca_dpa_completion,
    dpa_thread: *mut doca_dpa_thread,
) -> doca_error_t {
    call("doca_dpa_completion_set_thread", || {
        let c = completion(dpa_comp)?;
        if c.model.borrow().is_some() {
            bail!(
                BadState,
                "the DPA completion is started: set its thread before"
            );
        }
        attach_thread(&c.thread, c.dpa, dpa_thread)
    })
}

/// `doca_dpa_completion_start`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_completion_start(
    dpa_comp: *mut doca_dpa_completion,
) -> doca_error_t {
    call("doca_dpa_completion_start", || {
        let c = completion(dpa_comp)?;
        if c.model.borrow().is_some() {
            bail!(BadState, "the DPA completion is already started");
        }
        let dpa = c.dpa()?.model()?;
        let thread_obj: Option<&DpaThreadObj> = if c.thread.get().is_null() {
            None
        } else {
            Some(dpa_thread::thread(
                c.thread.get().cast(),
                "the completion's thread",
            )?)
        };
        let thread = thread_obj.map(DpaThreadObj::model).transpose()?;
        let started = DpaCompletion::start(&dpa, c.queue_size, thread.as_deref())?;
        *c.model.borrow_mut() = Some(started);
        Ok(())
    })
}

/// `doca_dpa_completion_stop`: `IN_USE` while producers attached to it exist.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_completion_stop(
    dpa_comp: *mut doca_dpa_completion,
) -> doca_error_t {
    call("doca_dpa_completion_stop", || {
        let c = completion(dpa_comp)?;
        c.model()?;
        c.users
            .require_none("producer(s) attached to this DPA completion")?;
        drop(c.model.borrow_mut().take());
        Ok(())
    })
}

/// `doca_dpa_completion_get_dpa_handle`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_completion_get_dpa_handle(
    dpa_comp: *mut doca_dpa_completion,
    handle: *mut doca_dpa_dev_completion_t,
) -> doca_error_t {
    call("doca_dpa_completion_get_dpa_handle", || {
        let h = completion(dpa_comp)?.model()?.dpa_handle().raw();
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(handle, "handle", h) }
    })
}

/// A `struct doca_dpa_notification_completion`.
pub(crate) struct NotificationObj {
    dpa: *mut c_void,
    thread: *mut c_void,
    model: RefCell<Option<NotificationCompletion>>,
}

impl Object for NotificationObj {
    const KIND: Kind = Kind::Notification;
}

fn notification<'a>(ptr: *const doca_dpa_notification_completion) -> Result<&'a NotificationObj> {
    registry::get::<NotificationObj>(ptr.cast(), "notify_comp")
}

/// `doca_dpa_notification_completion_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_notification_completion_create(
    dpa: *mut doca_dpa,
    dpa_thread: *mut doca_dpa_thread,
    notify_comp: *mut *mut doca_dpa_notification_completion,
) -> doca_error_t {
    call("doca_dpa_notification_completion_create", || {
        let d = dpa::dpa(dpa, "dpa")?;
        let t = dpa_thread::thread(dpa_thread, "dpa_thread")?;
        super::non_null(notify_comp, "notify_comp")?;
        if t.dpa != dpa.cast() {
            bail!(
                InvalidValue,
                "the DPA thread belongs to another DPA context than `dpa`"
            );
        }
        let handle = registry::register(Box::new(NotificationObj {
            dpa: dpa.cast(),
            thread: dpa_thread.cast(),
            model: RefCell::new(None),
        }))?;
        d.users.hold();
        t.users.hold();
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(notify_comp, "notify_comp", handle.cast()) }
    })
}

/// `doca_dpa_notification_completion_destroy`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_notification_completion_destroy(
    notify_comp: *mut doca_dpa_notification_completion,
) -> doca_error_t {
    call("doca_dpa_notification_completion_destroy", || {
        let n = notification(notify_comp)?;
        drop(n.model.borrow_mut().take());
        if let Ok(t) = dpa_thread::thread(n.thread.cast(), "thread") {
            t.users.release();
        }
        if let Ok(d) = dpa::dpa(n.dpa.cast(), "dpa") {
            d.users.release();
        }
        registry::retire::<NotificationObj>(notify_comp.cast());
        Ok(())
    })
}

/// `doca_dpa_notification_completion_start`: the thread must be started.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_notification_completion_start(
    notify_comp: *mut doca_dpa_notification_completion,
) -> doca_error_t {
    call("doca_dpa_notification_completion_start", || {
        let n = notification(notify_comp)?;
        if n.model.borrow().is_some() {
            bail!(BadState, "the notification completion is already started");
        }
        let dpa = dpa::dpa(n.dpa.cast(), "the completion's DPA")?.model()?;
        let thread = dpa_thread::thread(n.thread.cast(), "the completion's thread")?;
        let started = NotificationCompletion::start(&dpa, &*thread.model()?)?;
        *n.model.borrow_mut() = Some(started);
        Ok(())
    })
}

/// `doca_dpa_notification_completion_stop`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_notification_completion_stop(
    notify_comp: *mut doca_dpa_notification_completion,
) -> doca_error_t {
    call("doca_dpa_notification_completion_stop", || {
        let n = notification(notify_comp)?;
        if n.model.borrow_mut().take().is_none() {
            bail!(BadState, "the notification completion is not started");
        }
        Ok(())
    })
}

/// `doca_dpa_notification_completion_get_dpa_handle`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_dpa_notification_completion_get_dpa_handle(
    notify_comp: *mut doca_dpa_notification_completion,
    handle: *mut doca_dpa_dev_notification_completion_t,
) -> doca_error_t {
    call("doca_dpa_notification_completion_get_dpa_handle", || {
        let n = notification(notify_comp)?;
        let h = match n.model.borrow().as_ref() {
            Some(m) => m.dpa_handle().raw(),
            None => bail!(BadState, "start the notification completion first"),
        };
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(handle, "handle", h) }
    })
}
