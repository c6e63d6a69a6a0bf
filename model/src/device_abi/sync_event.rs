//! Sync events on the device (`doca_dpa_dev_sync_event.h`): the counter a host sync event
//! exported to this DPA (`doca_sync_event_get_dpa_handle`).

use super::lookup;
use crate::dpa::objects;
use crate::sync_event::{SyncEventValue, WaitFor};
use dpakit_dpa_runtime::Kind;
use dpakit_dpa_runtime::current::{Current, with_current};

fn sync_event<'a>(cur: &Current<'a>, handle: u64) -> &'a SyncEventValue {
    lookup(
        cur,
        |d| &objects(d).sync_events,
        Kind::SyncEvent,
        handle,
        "sync event",
    )
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_sync_event_get(sync_event: u64, value: *mut u64) {
    const F: &str = "doca_dpa_dev_sync_event_get";
    with_current(F, |cur| {
        let v = self::sync_event(cur, sync_event).get();
        if value.is_null() {
            cur.fault(
                crate::error::ErrorCode::InvalidValue,
                format!("{F}: value is NULL: pass where to store the counter"),
            );
        }
        // SAFETY: the kernel passes a valid out-pointer (checked non-null).
        unsafe { value.write(v) };
    })
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_sync_event_update_add(sync_event: u64, value: u64) {
    with_current("doca_dpa_dev_sync_event_update_add", |cur| {
        self::sync_event(cur, sync_event).add(value);
    })
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_sync_event_update_set(sync_event: u64, value: u64) {
    with_current("doca_dpa_dev_sync_event_update_set", |cur| {
        self::sync_event(cur, sync_event).set(value);
    })
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_sync_event_wait_gt(sync_event: u64, value: u64, mask: u64) {
    with_current("doca_dpa_dev_sync_event_wait_gt", |cur| {
        // A busy wait, as on the DPA: it ends when the counter allows and at no other time.
        self::sync_event(cur, sync_event).wait(WaitFor::Greater, value, mask, false);
    })
}
