//! `doca_sync_event.h`: sync events with CPU and DPA locations, their synchronous operations
//! and their export to DPA kernels. What the soft device does not model (remote peers, GPUs,
//! the task interface) is in `unsupported`.

use super::dev;
use super::dpa::{self, DpaObj};
use super::registry::{self, Kind, Object};
use super::types::*;
use super::{call, call_value, out};
use crate::dpa::SyncEventExport;
use crate::error::{ErrorCode, Result, bail, err};
use crate::sync_event::{SyncEventValue, WaitFor};
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard};

/// Where an event is published or subscribed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Location {
    /// The CPU, through this `struct doca_dev`.
    Cpu(*mut c_void),
    /// Kernels of this `struct doca_dpa`.
    Dpa(*mut c_void),
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
        }
    }
}

/// Configuration and, while started, the counter.
struct Inner {
    publisher: Option<Location>,
    subscriber: Option<Location>,
    /// Program memory holding the counter (`set_addr`, `set_doca_buf`).
    addr: Option<NonNull<u64>>,
    value: Option<Arc<SyncEventValue>>,
    /// DPA handles given out, by `struct doca_dpa`.
    exports: Vec<(*mut c_void, SyncEventExport)>,
}

/// A `struct doca_sync_event`. Configuration calls come from one thread, as for every DOCA
/// object; the operations on a started event may come from any thread (that is its purpose), so
/// its state is behind a lock that no wait holds.
pub(crate) struct SyncEventObj {
    inner: Mutex<Inner>,
}

impl Object for SyncEventObj {
    const KIND: Kind = Kind::SyncEvent;
}

pub(crate) fn event<'a>(ptr: *const doca_sync_event) -> Result<&'a SyncEventObj> {
    registry::get::<SyncEventObj>(ptr.cast(), "event")
}

impl SyncEventObj {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The configuration, while the event is not started.
    fn idle(&self, what: &str) -> Result<MutexGuard<'_, Inner>> {
        let inner = self.lock();
        if inner.value.is_some() {
            return Err(super::not_idle(
                what,
                "stop the event first (doca_sync_event_stop)",
            ));
        }
        Ok(inner)
    }

    /// The counter of the started event.
    fn value(&self) -> Result<Arc<SyncEventValue>> {
        self.lock().value.clone().ok_or_else(|| {
            err(
                ErrorCode::BadState,
                "the sync event is not started: configure its publisher and subscriber, then \
                 call doca_sync_event_start",
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

    /// Stops the event: DPA handles become invalid.
    fn stop(inner: &mut Inner) {
        inner.exports.clear();
        inner.value = None;
    }
}

/// `doca_sync_event_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_create(event: *mut *mut doca_sync_event) -> doca_error_t {
    call("doca_sync_event_create", || {
        super::non_null(event, "event")?;
        let handle = registry::register(Box::new(SyncEventObj {
            inner: Mutex::new(Inner {
                publisher: None,
                subscriber: None,
                addr: None,
                value: None,
                exports: Vec::new(),
            }),
        }))?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(event, "event", handle.cast()) }
    })
}

/// `doca_sync_event_destroy`: stops the event first if it is started.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_destroy(event: *mut doca_sync_event) -> doca_error_t {
    call("doca_sync_event_destroy", || {
        let e = self::event(event)?;
        {
            let mut inner = e.lock();
            SyncEventObj::stop(&mut inner);
            for location in [inner.publisher.take(), inner.subscriber.take()]
                .into_iter()
                .flatten()
            {
                location.release();
            }
        }
        registry::retire::<SyncEventObj>(event.cast());
        Ok(())
    })
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

/// Sets one end's location; the object it names must outlive the event.
fn add_location(event: *mut doca_sync_event, end: End, location: Location) -> Result<()> {
    let e = self::event(event)?;
    let mut inner = e.idle(&format!("adding a {} location", end.name()))?;
    let slot = match end {
        End::Publisher => &mut inner.publisher,
        End::Subscriber => &mut inner.subscriber,
    };
    if slot.is_some() {
        bail!(
            BadState,
            "the sync event already has a {} location: an event has one publisher and one \
             subscriber location",
            end.name()
        );
    }
    match location {
        Location::Cpu(d) => dev::dev(d.cast(), "dev")?.users.hold(),
        Location::Dpa(d) => dpa::dpa(d.cast(), "dpa")?.users.hold(),
    }
    *slot = Some(location);
    Ok(())
}

/// `doca_sync_event_add_publisher_location_cpu`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_add_publisher_location_cpu(
    event: *mut doca_sync_event,
    dev: *mut doca_dev,
) -> doca_error_t {
    call("doca_sync_event_add_publisher_location_cpu", || {
        add_location(event, End::Publisher, Location::Cpu(dev.cast()))
    })
}

/// `doca_sync_event_add_publisher_location_dpa`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_add_publisher_location_dpa(
    event: *mut doca_sync_event,
    dpa: *mut doca_dpa,
) -> doca_error_t {
    call("doca_sync_event_add_publisher_location_dpa", || {
        add_location(event, End::Publisher, Location::Dpa(dpa.cast()))
    })
}

/// `doca_sync_event_add_subscriber_location_cpu`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_add_subscriber_location_cpu(
    event: *mut doca_sync_event,
    dev: *mut doca_dev,
) -> doca_error_t {
    call("doca_sync_event_add_subscriber_location_cpu", || {
        add_location(event, End::Subscriber, Location::Cpu(dev.cast()))
    })
}

/// `doca_sync_event_add_subscriber_location_dpa`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_add_subscriber_location_dpa(
    event: *mut doca_sync_event,
    dpa: *mut doca_dpa,
) -> doca_error_t {
    call("doca_sync_event_add_subscriber_location_dpa", || {
        add_location(event, End::Subscriber, Location::Dpa(dpa.cast()))
    })
}

/// Keeps the counter at `addr` (8 bytes, aligned); the value found there is the initial one.
fn set_counter_memory(event: *mut doca_sync_event, addr: *mut u64, what: &str) -> Result<()> {
    let e = self::event(event)?;
    let mut inner = e.idle("setting the counter's memory")?;
    let Some(addr) = NonNull::new(addr) else {
        bail!(InvalidValue, "{what} is NULL: pass 8 bytes for the counter");
    };
    if !addr.as_ptr().is_aligned() {
        bail!(
            InvalidValue,
            "{what} ({:p}) is not 8-byte aligned: the counter is updated atomically",
            addr.as_ptr()
        );
    }
    inner.addr = Some(addr);
    Ok(())
}

/// `doca_sync_event_set_addr`: the memory must stay valid until the event is destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_set_addr(
    event: *mut doca_sync_event,
    addr: *mut u64,
) -> doca_error_t {
    call("doca_sync_event_set_addr", || {
        set_counter_memory(event, addr, "addr")
    })
}

/// `doca_sync_event_set_doca_buf`: the buffer's data (exactly 8 bytes) holds the counter; the
/// buffer must stay referenced until the event is destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_set_doca_buf(
    event: *mut doca_sync_event,
    buf: *mut doca_buf,
) -> doca_error_t {
    call("doca_sync_event_set_doca_buf", || {
        let b = &super::buf::buf(buf)?.buf;
        let len = b.get_data_len()?;
        if len != 8 {
            bail!(
                NotPermitted,
                "the buffer's data is {len} bytes: a sync event's buffer holds exactly the \
                 8-byte counter (doca_buf_set_data)"
            );
        }
        set_counter_memory(event, b.get_data()?.cast(), "the buffer's data")
    })
}

/// `doca_sync_event_start`: needs a publisher and a subscriber location.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_start(event: *mut doca_sync_event) -> doca_error_t {
    call("doca_sync_event_start", || {
        let e = self::event(event)?;
        let mut inner = e.lock();
        if inner.value.is_some() {
            bail!(BadState, "the sync event is already started");
        }
        for (end, location) in [
            (End::Publisher, inner.publisher),
            (End::Subscriber, inner.subscriber),
        ] {
            if location.is_none() {
                bail!(
                    BadState,
                    "the sync event has no {0} location: add one before start \
                     (doca_sync_event_add_{0}_location_cpu or _dpa)",
                    end.name()
                );
            }
        }
        let value = match inner.addr {
            // SAFETY: aligned and non-null (checked by set_addr); valid until destroy by the
            // caller's contract.
            Some(addr) => unsafe { SyncEventValue::at(addr) },
            None => SyncEventValue::new(),
        };
        inner.value = Some(Arc::new(value));
        Ok(())
    })
}

/// `doca_sync_event_stop`: DPA handles of the event become invalid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_stop(event: *mut doca_sync_event) -> doca_error_t {
    call("doca_sync_event_stop", || {
        let e = self::event(event)?;
        let mut inner = e.lock();
        if inner.value.is_none() {
            bail!(BadState, "the sync event is not started");
        }
        SyncEventObj::stop(&mut inner);
        Ok(())
    })
}

/// `doca_sync_event_as_ctx`: NULL, the soft device runs sync events stand-alone only.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_as_ctx(event: *mut doca_sync_event) -> *mut doca_ctx {
    call_value("doca_sync_event_as_ctx", std::ptr::null_mut(), || {
        self::event(event)?;
        bail!(
            NotSupported,
            "a sync event as a DOCA context (its task interface) is not modelled by the soft \
             device: use doca_sync_event_start and the synchronous get/update/wait calls"
        )
    })
}

/// `doca_sync_event_get`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_get(
    event: *mut doca_sync_event,
    value: *mut u64,
) -> doca_error_t {
    call("doca_sync_event_get", || {
        let v = self::event(event)?.value()?.get();
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(value, "value", v) }
    })
}

/// `doca_sync_event_update_add`: `fetched` may be NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_update_add(
    event: *mut doca_sync_event,
    value: u64,
    fetched: *mut u64,
) -> doca_error_t {
    call("doca_sync_event_update_add", || {
        let before = self::event(event)?.value()?.add(value);
        if !fetched.is_null() {
            // SAFETY: non-null and writable by the C contract.
            unsafe { fetched.write(before) };
        }
        Ok(())
    })
}

/// `doca_sync_event_update_set`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_update_set(
    event: *mut doca_sync_event,
    value: u64,
) -> doca_error_t {
    call("doca_sync_event_update_set", || {
        self::event(event)?.value()?.set(value);
        Ok(())
    })
}

fn wait(
    event: *mut doca_sync_event,
    how: WaitFor,
    value: u64,
    mask: u64,
    yields: bool,
) -> Result<()> {
    // The lock is not held while waiting: other threads update the event meanwhile.
    let counter = self::event(event)?.value()?;
    counter.wait(how, value, mask, yields);
    Ok(())
}

macro_rules! waits {
    ($($name:ident => $how:ident, $yields:literal;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: returns when the masked counter allows, and only then.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            event: *mut doca_sync_event,
            value: u64,
            mask: u64,
        ) -> doca_error_t {
            call(stringify!($name), || wait(event, WaitFor::$how, value, mask, $yields))
        }
    )*};
}

waits! {
    doca_sync_event_wait_gt => Greater, false;
    doca_sync_event_wait_gt_yield => Greater, true;
    doca_sync_event_wait_eq => Equal, false;
    doca_sync_event_wait_eq_yield => Equal, true;
    doca_sync_event_wait_neq => NotEqual, false;
    doca_sync_event_wait_neq_yield => NotEqual, true;
}

/// `doca_sync_event_get_dpa_handle`: the event is started and has a location on `dpa`; asking
/// again gives the same handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_get_dpa_handle(
    event: *mut doca_sync_event,
    dpa: *mut doca_dpa,
    dpa_dev_se_handle: *mut doca_dpa_dev_sync_event_t,
) -> doca_error_t {
    call("doca_sync_event_get_dpa_handle", || {
        let e = self::event(event)?;
        let d: &DpaObj = dpa::dpa(dpa, "dpa")?;
        super::non_null(dpa_dev_se_handle, "dpa_dev_se_handle")?;
        let value = e.value()?;
        let mut inner = e.lock();
        let here = Some(Location::Dpa(dpa.cast()));
        if inner.publisher != here && inner.subscriber != here {
            bail!(
                NotPermitted,
                "the sync event has no location on this DPA context: add it as publisher or \
                 subscriber (doca_sync_event_add_publisher_location_dpa or \
                 _subscriber_location_dpa) before start"
            );
        }
        let handle = match inner.exports.iter().find(|(p, _)| *p == dpa.cast()) {
            Some((_, export)) => export.dpa_handle(),
            None => {
                let export = d.model()?.export_sync_event(value)?;
                let h = export.dpa_handle();
                inner.exports.push((dpa.cast(), export));
                h
            }
        };
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(dpa_dev_se_handle, "dpa_dev_se_handle", handle) }
    })
}

/// `doca_sync_event_cap_is_export_to_dpa_supported`: wherever the DPA is.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_cap_is_export_to_dpa_supported(
    devinfo: *const doca_devinfo,
) -> doca_error_t {
    call("doca_sync_event_cap_is_export_to_dpa_supported", || {
        dev::devinfo(devinfo, "devinfo")?.dpa_cap_is_supported()
    })
}
