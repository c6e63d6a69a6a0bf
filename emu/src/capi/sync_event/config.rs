//! Configuring a sync event (its locations and the counter's memory) and the stand-alone
//! route: `doca_sync_event_start`, `_stop`, and `doca_sync_event_as_ctx`, the other route.

use super::super::types::*;
use super::super::{call, call_value, dev, dpa};
use super::{End, Location, Route, SyncEventObj, event};
use crate::error::{Result, bail};
use std::ptr::NonNull;

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
        Location::RemotePci => {}
    }
    *slot = Some(location);
    Ok(())
}

macro_rules! locations {
    ($($name:ident($($arg:ident: $ty:ty)?) => $end:ident, $location:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(event: *mut doca_sync_event $(, $arg: $ty)?) -> doca_error_t {
            call(stringify!($name), || add_location(event, End::$end, $location))
        }
    )*};
}

locations! {
    doca_sync_event_add_publisher_location_cpu(dev: *mut doca_dev)
        => Publisher, Location::Cpu(dev.cast());
    doca_sync_event_add_publisher_location_dpa(dpa: *mut doca_dpa)
        => Publisher, Location::Dpa(dpa.cast());
    doca_sync_event_add_publisher_location_remote_pci() => Publisher, Location::RemotePci;
    doca_sync_event_add_subscriber_location_cpu(dev: *mut doca_dev)
        => Subscriber, Location::Cpu(dev.cast());
    doca_sync_event_add_subscriber_location_dpa(dpa: *mut doca_dpa)
        => Subscriber, Location::Dpa(dpa.cast());
    doca_sync_event_add_subscriber_location_remote_pci() => Subscriber, Location::RemotePci;
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
    if inner.shared.is_some() {
        bail!(
            NotSupported,
            "the event was exported to the remote PCI side already: its counter lives in memory \
             it shares with the other side's process, not in the program's"
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
        let b = &super::super::buf::buf(buf)?.buf;
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

/// `NOT_PERMITTED` for a stand-alone call on an event that took the context route.
fn require_stand_alone(route: Route, what: &str) -> Result<()> {
    if route == Route::Ctx {
        bail!(
            NotPermitted,
            "{what}: the event is used as a DOCA context (doca_sync_event_as_ctx or a task's \
             set_conf): start and stop it with doca_ctx_start and doca_ctx_stop"
        );
    }
    Ok(())
}

/// `doca_sync_event_start`: needs a publisher and a subscriber location. The event can no
/// longer become a context. An imported event's counter is reachable before (this only
/// chooses the route).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_start(event: *mut doca_sync_event) -> doca_error_t {
    call("doca_sync_event_start", || {
        let e = self::event(event)?;
        let mut inner = e.lock();
        require_stand_alone(inner.route, "doca_sync_event_start")?;
        if inner.started {
            bail!(BadState, "the sync event is already started");
        }
        if !inner.imported() {
            SyncEventObj::start_counter(&mut inner)?;
        }
        inner.route = Route::StandAlone;
        inner.started = true;
        Ok(())
    })
}

/// `doca_sync_event_stop`: DPA handles of the event become invalid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_stop(event: *mut doca_sync_event) -> doca_error_t {
    call("doca_sync_event_stop", || {
        let e = self::event(event)?;
        let mut inner = e.lock();
        require_stand_alone(inner.route, "doca_sync_event_stop")?;
        if !inner.started {
            bail!(BadState, "the sync event is not started");
        }
        inner.started = false;
        SyncEventObj::stop_counter(&mut inner);
        Ok(())
    })
}

/// Commits the event to the context route; `NOT_PERMITTED` if it was started stand-alone.
pub(super) fn take_ctx_route(e: &SyncEventObj, what: &str) -> Result<()> {
    let mut inner = e.lock();
    if inner.route == Route::StandAlone {
        bail!(
            NotPermitted,
            "{what}: the event was started with doca_sync_event_start, so it can no longer \
             become a DOCA context or run tasks (use the synchronous get/update/wait calls, or \
             a new event)"
        );
    }
    inner.route = Route::Ctx;
    Ok(())
}

/// `doca_sync_event_as_ctx`: the task route (task `set_conf`, `doca_pe_connect_ctx`,
/// `doca_ctx_start`). NULL for an event started stand-alone.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_as_ctx(event: *mut doca_sync_event) -> *mut doca_ctx {
    call_value("doca_sync_event_as_ctx", std::ptr::null_mut(), || {
        take_ctx_route(self::event(event)?, "doca_sync_event_as_ctx")?;
        Ok(event.cast())
    })
}
