//! The synchronous operations on a started sync event (from any thread), and its handles for
//! DPA kernels.

use super::super::dpa::{self, DpaObj};
use super::super::types::*;
use super::super::{call, dev, out};
use super::{Location, event};
use crate::dpa::SyncEventExport;
use crate::error::{Result, bail};
use crate::sync_event::WaitFor;

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
        super::super::non_null(dpa_dev_se_handle, "dpa_dev_se_handle")?;
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
                let export = SyncEventExport::new(&*d.model()?, value)?;
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
