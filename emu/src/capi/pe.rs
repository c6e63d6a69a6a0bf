//! `doca_pe.h`: progress engines and the calls that work on any task.

use super::context::{CtxCore, context};
use super::registry::{self, Kind, Object};
use super::types::*;
use super::{call, call_value, out};
use crate::ctx::CtxState;
use crate::error::{Result, bail};
use crate::pe::Pe;
use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::rc::Rc;

/// A `struct doca_pe`: the model's PE and the C contexts connected to it.
pub(crate) struct PeObj {
    pub pe: Pe,
    ctxs: RefCell<Vec<*mut c_void>>,
    /// Inside `doca_pe_progress` (callbacks may not progress the same PE again).
    progressing: Cell<bool>,
    /// Connected contexts in STOPPING, which progress must finish.
    pub stopping: Rc<Cell<usize>>,
    /// Connected contexts that asked to be polled at every progress (Comch servers and clients
    /// between start and stop).
    polled: Cell<usize>,
}

impl Object for PeObj {
    const KIND: Kind = Kind::Pe;
}

pub(crate) fn pe<'a>(ptr: *const doca_pe, param: &str) -> Result<&'a PeObj> {
    registry::get::<PeObj>(ptr.cast(), param)
}

/// The PE context `core` is connected to, if any.
pub(crate) fn of<'a>(core: &CtxCore) -> Option<&'a PeObj> {
    pe(core.pe.get().cast(), "pe").ok()
}

/// The notification handle of `core`'s PE follows `fd` from now on (nothing without a PE).
pub(crate) fn watch(core: &CtxCore, fd: std::os::fd::RawFd) -> Result<()> {
    of(core).map_or(Ok(()), |p| p.pe.watch_fd(fd))
}

/// Undoes [`watch`].
pub(crate) fn unwatch(core: &CtxCore, fd: std::os::fd::RawFd) {
    if let Some(p) = of(core) {
        p.pe.unwatch_fd(fd);
    }
}

/// The PE context `core` is connected to, which a datapath on the CPU needs; BAD_STATE if there
/// is none. `ctx` names the context in the message.
pub(crate) fn connected<'a>(core: &CtxCore, ctx: &str) -> Result<&'a PeObj> {
    pe(core.pe.get().cast(), "pe").map_err(|_| {
        crate::error::err(
            crate::error::ErrorCode::BadState,
            format!("connect the {ctx} to a progress engine first (doca_pe_connect_ctx)"),
        )
    })
}

impl PeObj {
    /// A destroyed context leaves the PE.
    pub(crate) fn disconnect(&self, ctx: *mut c_void) {
        self.ctxs.borrow_mut().retain(|&c| c != ctx);
    }

    /// A context starts (`true`) or stops (`false`) needing [`Context::poll`] at each
    /// progress.
    ///
    /// [`Context::poll`]: super::ctx::Context::poll
    pub(crate) fn polling(&self, on: bool) {
        let n = self.polled.get();
        self.polled
            .set(if on { n + 1 } else { n.saturating_sub(1) });
    }

    /// Whether a polled or stopping context has callbacks to run now (a stopping context's
    /// tasks submitted while it stops complete at the next progress).
    fn polled_pending(&self) -> bool {
        (self.polled.get() > 0 || self.stopping.get() > 0)
            && self
                .ctxs
                .borrow()
                .iter()
                // Every context is asked (no short cut): asking arms a fast-path consumer.
                .map(|&h| context(h.cast(), "ctx").is_ok_and(|c| c.has_pending()))
                .fold(false, |any, pending| any | pending)
    }

    fn progress(&self) -> usize {
        let mut n = self.pe.progress();
        if self.stopping.get() == 0 && self.polled.get() == 0 {
            return n;
        }
        // Contexts the C layer finishes itself (stops, tasks submitted while stopping). Index
        // loop: a callback may connect or destroy contexts.
        let mut i = 0;
        loop {
            let Some(handle) = self.ctxs.borrow().get(i).copied() else {
                break;
            };
            if let Ok(ctx) = context(handle.cast(), "ctx") {
                n += ctx.poll();
                if ctx.core().state() == CtxState::Stopping {
                    n += ctx.after_progress();
                }
            }
            i += 1;
        }
        n
    }
}

/// `doca_pe_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_pe_create(pe: *mut *mut doca_pe) -> doca_error_t {
    call("doca_pe_create", || {
        super::non_null(pe, "pe")?;
        let handle = registry::register(Box::new(PeObj {
            pe: Pe::new()?,
            ctxs: RefCell::new(Vec::new()),
            progressing: Cell::new(false),
            stopping: Rc::new(Cell::new(0)),
            polled: Cell::new(0),
        }))?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(pe, "pe", handle.cast()) }
    })
}

/// `doca_pe_destroy`: `IN_USE` while contexts connected to it exist.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_pe_destroy(pe: *mut doca_pe) -> doca_error_t {
    call("doca_pe_destroy", || {
        let p = self::pe(pe, "pe")?;
        if p.progressing.get() {
            bail!(
                BadState,
                "a PE cannot be destroyed from inside its own progress"
            );
        }
        let n = p.ctxs.borrow().len();
        if n > 0 {
            bail!(
                InUse,
                "{n} context(s) connected to this PE still exist: destroy them first"
            );
        }
        registry::retire::<PeObj>(pe.cast());
        Ok(())
    })
}

/// `doca_pe_connect_ctx`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_pe_connect_ctx(pe: *mut doca_pe, ctx: *mut doca_ctx) -> doca_error_t {
    call("doca_pe_connect_ctx", || {
        let p = self::pe(pe, "pe")?;
        let c = context(ctx, "ctx")?;
        c.core().require_idle("connect the context to a PE")?;
        if !c.core().dpa.get().is_null() {
            bail!(
                BadState,
                "the context's datapath is on the DPA (doca_ctx_set_datapath_on_dpa): it has no \
                 tasks or events for a PE"
            );
        }
        let current = c.core().pe.get();
        if !current.is_null() {
            if current == pe.cast() {
                return Ok(());
            }
            bail!(
                AlreadyExist,
                "the context is connected to another PE already: a context has one PE"
            );
        }
        c.core().pe.set(pe.cast());
        *c.core().pe_stopping.borrow_mut() = Some(p.stopping.clone());
        p.ctxs.borrow_mut().push(ctx.cast());
        Ok(())
    })
}

/// `doca_pe_progress`: 1 if any callback ran.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_pe_progress(pe: *mut doca_pe) -> u8 {
    call_value("doca_pe_progress", 0, || {
        let p = self::pe(pe, "pe")?;
        if p.progressing.replace(true) {
            bail!(
                BadState,
                "doca_pe_progress was called from a callback of the same PE: return from the \
                 callback and progress again"
            );
        }
        // Cleared on the way out, even if a callback panics.
        struct Done<'a>(&'a Cell<bool>);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.set(false);
            }
        }
        let _done = Done(&p.progressing);
        let _frame = registry::CallbackFrame::enter();
        Ok(u8::from(p.progress() > 0))
    })
}

/// `doca_pe_get_notification_handle`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_pe_get_notification_handle(
    pe: *const doca_pe,
    handle: *mut doca_notification_handle_t,
) -> doca_error_t {
    call("doca_pe_get_notification_handle", || {
        let fd = self::pe(pe, "pe")?.pe.notification_handle()?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(handle, "handle", fd) }
    })
}

/// `doca_pe_request_notification`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_pe_request_notification(pe: *mut doca_pe) -> doca_error_t {
    call("doca_pe_request_notification", || {
        let p = self::pe(pe, "pe")?;
        p.pe.request_notification();
        if p.polled_pending() {
            p.pe.signal_if_armed();
        }
        Ok(())
    })
}

/// `doca_pe_clear_notification`. The handle is not used on Linux, as in DOCA (whose pe_event
/// sample passes 0): the PE's own handle is cleared whatever the value.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_pe_clear_notification(
    pe: *mut doca_pe,
    handle: doca_notification_handle_t,
) -> doca_error_t {
    let _ = handle;
    call("doca_pe_clear_notification", || {
        let p = self::pe(pe, "pe")?;
        p.pe.clear_notification();
        Ok(())
    })
}
