//! `doca_sync_event.h`: sync events with CPU, DPA and remote PCI locations, their synchronous
//! operations, their export to DPA kernels and to the remote PCI side (another process of the
//! machine: `remote`), and the task interface through `doca_sync_event_as_ctx` (`ctx`,
//! `tasks`). What the soft device does not model (remote network peers, GPUs) is in
//! `unsupported`.
//!
//! An event takes one of two routes, for good: stand-alone (`doca_sync_event_start`, the
//! synchronous calls only) or as a DOCA context (`doca_sync_event_as_ctx` or a task's
//! `set_conf`, then `doca_ctx_start`; tasks, and the synchronous calls too while it runs).

use super::dev;
use super::dpa;
use super::registry::{self, Kind, Object};
use super::types::*;
use super::{call, out};
use crate::dpa::SyncEventExport;
use crate::error::{Result, bail, err};
use crate::sync_event::{BLOB_LEN, SharedCounter, SyncEventValue};
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard};

mod config;
mod ctx;
mod ops;
mod remote;
mod tasks;

pub use config::*;
pub use ctx::*;
pub use ops::*;
pub use remote::*;
pub use tasks::*;

/// Where an event is published or subscribed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Location {
    /// The CPU, through this `struct doca_dev`.
    Cpu(*mut c_void),
    /// Kernels of this `struct doca_dpa`.
    Dpa(*mut c_void),
    /// The peer across PCIe: the other side's process, through an export.
    RemotePci,
}

impl Location {
    fn release(self) {
        match self {
            Location::Cpu(d) => {
                if let Ok(d) = dev::dev(d.cast(), "the event's device") {
                    d.users.release();
                }
            }
            Location::Dpa(d) => {
                if let Ok(d) = dpa::dpa(d.cast(), "the event's DPA") {
                    d.users.release();
                }
            }
            Location::RemotePci => {}
        }
    }
}

/// Which way the event is used, once the program chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    /// Neither yet.
    Undecided,
    /// `doca_sync_event_start`: synchronous calls only.
    StandAlone,
    /// `doca_sync_event_as_ctx` or a task's `set_conf`: started with `doca_ctx_start`.
    Ctx,
}

/// Configuration and, while started, the counter.
struct Inner {
    publisher: Option<Location>,
    subscriber: Option<Location>,
    /// Program memory holding the counter (`set_addr`, `set_doca_buf`).
    addr: Option<NonNull<u64>>,
    route: Route,
    /// Started stand-alone (`doca_sync_event_start`).
    started: bool,
    /// The counter: while started (stand-alone or as a running context); an imported event's
    /// for its whole life.
    value: Option<Arc<SyncEventValue>>,
    /// The page shared with the remote PCI side: made by the first export (or at start, for an
    /// event with a remote PCI location) and kept until destroy, or the one imported.
    shared: Option<Arc<SharedCounter>>,
    /// The `struct doca_dev` an imported event was created on (held until destroy).
    import_dev: Option<*mut c_void>,
    /// Blobs handed out, per device, valid until destroy (boxed: their address is stable).
    blobs: Vec<(*mut c_void, Box<[u8; BLOB_LEN]>)>,
    /// DPA handles given out, by `struct doca_dpa`.
    exports: Vec<(*mut c_void, SyncEventExport)>,
}

impl Inner {
    /// A new event's configuration: no location, nothing started or shared.
    fn new() -> Self {
        Inner {
            publisher: None,
            subscriber: None,
            addr: None,
            route: Route::Undecided,
            started: false,
            value: None,
            shared: None,
            import_dev: None,
            blobs: Vec::new(),
            exports: Vec::new(),
        }
    }

    fn imported(&self) -> bool {
        self.import_dev.is_some()
    }
}

/// A `struct doca_sync_event`. Configuration calls come from one thread, as for every DOCA
/// object; the operations on a started event may come from any thread (that is its purpose), so
/// its counter and configuration are behind a lock that no wait holds. The task interface
/// (`tc`) belongs to the thread of the event's progress engine, like every context's.
pub(crate) struct SyncEventObj {
    inner: Mutex<Inner>,
    tc: ctx::TaskCtx,
}

impl Object for SyncEventObj {
    const KIND: Kind = Kind::SyncEvent;
}

pub(crate) fn event<'a>(ptr: *const doca_sync_event) -> Result<&'a SyncEventObj> {
    registry::get::<SyncEventObj>(ptr.cast(), "event")
}

impl SyncEventObj {
    fn register(inner: Inner) -> Result<*mut c_void> {
        super::context::register_view::<SyncEventObj>(Kind::SyncEvent);
        let handle = registry::register(Box::new(SyncEventObj {
            inner: Mutex::new(inner),
            tc: ctx::TaskCtx::new(),
        }))?;
        registry::get::<SyncEventObj>(handle, "event")?
            .tc
            .core
            .handle
            .set(handle);
        Ok(handle)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The configuration, while it may change: not imported, not started either way.
    fn idle(&self, what: &str) -> Result<MutexGuard<'_, Inner>> {
        let inner = self.lock();
        if inner.imported() {
            bail!(
                NotPermitted,
                "{what}: the event was created from an export (doca_sync_event_create_from_export) \
                 and cannot be configured; its exporter configured it"
            );
        }
        if inner.started || self.tc.core.state() != crate::ctx::CtxState::Idle {
            return Err(super::not_idle(
                what,
                "stop the event first (doca_sync_event_stop, or doca_ctx_stop for a context)",
            ));
        }
        Ok(inner)
    }

    /// The counter of the started event.
    fn value(&self) -> Result<Arc<SyncEventValue>> {
        self.lock().value.clone().ok_or_else(|| {
            err(
                crate::error::ErrorCode::BadState,
                "the sync event is not started: configure its publisher and subscriber, then \
                 call doca_sync_event_start (or doca_ctx_start on doca_sync_event_as_ctx)",
            )
        })
    }

    /// The counter of the started event for a kernel launch on DPA context `dpa`: the DPA must
    /// be the event's subscriber (`param` is the event a launch waits on) or its publisher (the
    /// event a launch completes).
    pub(crate) fn launch_value(
        &self,
        dpa: *mut c_void,
        param: &str,
        publisher: bool,
    ) -> Result<Arc<SyncEventValue>> {
        let (end, location) = {
            let inner = self.lock();
            if publisher {
                ("publisher", inner.publisher)
            } else {
                ("subscriber", inner.subscriber)
            }
        };
        if location != Some(Location::Dpa(dpa)) {
            let call = if publisher {
                "doca_sync_event_add_publisher_location_dpa"
            } else {
                "doca_sync_event_add_subscriber_location_dpa"
            };
            bail!(
                InvalidValue,
                "{param}'s {end} is not this DPA context: a launch {} an event whose {end} is \
                 the DPA it runs on ({call})",
                if publisher { "completes" } else { "waits for" }
            );
        }
        self.value()
            .map_err(|e| err(e.code(), format!("{param}: {}", e.message())))
    }

    /// The counter a start makes: in the page shared with the remote PCI side if the event
    /// has one or a remote PCI location, in the program's memory (`set_addr`), or in the event.
    fn start_counter(inner: &mut Inner) -> Result<()> {
        for (end, location) in [
            (End::Publisher, inner.publisher),
            (End::Subscriber, inner.subscriber),
        ] {
            if location.is_none() {
                bail!(
                    BadState,
                    "the sync event has no {0} location: add one before start \
                     (doca_sync_event_add_{0}_location_cpu, _dpa or _remote_pci)",
                    end.name()
                );
            }
        }
        let remote = [inner.publisher, inner.subscriber].contains(&Some(Location::RemotePci));
        if remote && inner.shared.is_none() {
            if inner.addr.is_some() {
                bail!(
                    NotSupported,
                    "the event has a remote PCI location and its counter in the program's memory \
                     (doca_sync_event_set_addr or _set_doca_buf): the soft device shares a \
                     counter with the other side's process only in memory of its own; drop the \
                     set_addr call"
                );
            }
            inner.shared = Some(Arc::new(SharedCounter::create(0)?));
        }
        let value = match (&inner.shared, inner.addr) {
            (Some(shared), _) => SyncEventValue::shared(shared.clone()),
            // SAFETY: aligned and non-null (checked by set_addr); valid until destroy by the
            // caller's contract.
            (None, Some(addr)) => unsafe { SyncEventValue::at(addr) },
            (None, None) => SyncEventValue::new(),
        };
        inner.value = Some(Arc::new(value));
        Ok(())
    }

    /// The event stops (either route): DPA handles become invalid, and the counter goes — but
    /// an imported event keeps the one it shares with its exporter.
    fn stop_counter(inner: &mut Inner) {
        inner.exports.clear();
        if !inner.imported() {
            inner.value = None;
        }
    }
}

/// Which end of the event a location call configures.
#[derive(Clone, Copy)]
enum End {
    Publisher,
    Subscriber,
}

impl End {
    fn name(self) -> &'static str {
        match self {
            End::Publisher => "publisher",
            End::Subscriber => "subscriber",
        }
    }
}

/// `doca_sync_event_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_create(event: *mut *mut doca_sync_event) -> doca_error_t {
    call("doca_sync_event_create", || {
        super::non_null(event, "event")?;
        let handle = SyncEventObj::register(Inner::new())?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(event, "event", handle.cast()) }
    })
}

/// `doca_sync_event_destroy`: stops an event started stand-alone first; an event used as a
/// context must be IDLE. Its export blobs are invalid from now on.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_destroy(event: *mut doca_sync_event) -> doca_error_t {
    call("doca_sync_event_destroy", || {
        let e = self::event(event)?;
        e.tc.core.require_idle("destroy the sync event")?;
        e.tc.leave_pe();
        {
            let mut inner = e.lock();
            inner.started = false;
            SyncEventObj::stop_counter(&mut inner);
            inner.value = None;
            for location in [inner.publisher.take(), inner.subscriber.take()]
                .into_iter()
                .flatten()
            {
                location.release();
            }
            if let Some(d) = inner.import_dev.take() {
                if let Ok(d) = dev::dev(d.cast(), "the event's device") {
                    d.users.release();
                }
            }
        }
        e.tc.release();
        registry::retire::<SyncEventObj>(event.cast());
        Ok(())
    })
}
