//! Sync events shared with the remote PCI side: `doca_sync_event_export_to_remote_pci` and
//! `doca_sync_event_create_from_export`. The sharing itself (the page both processes map, the
//! blob and every check of it) is the model's [`SharedCounter`].

use super::super::types::*;
use super::super::{call, dev, non_null, out};
use super::{End, Inner, Location, SyncEventObj, event};
use crate::error::{Result, bail};
use crate::limits::SYNC_EVENT_MAX_EXPORTS_PER_EVENT;
use crate::sync_event::{SharedCounter, SyncEventValue, check_blob_len};
use std::sync::Arc;

/// `NOT_SUPPORTED` unless the event is configured so the remote PCI side can share it: a
/// publisher and a subscriber, each on the CPU or the remote PCI side, and no counter in the
/// program's memory.
fn require_exportable(inner: &Inner) -> Result<()> {
    for (end, location) in [
        (End::Publisher, inner.publisher),
        (End::Subscriber, inner.subscriber),
    ] {
        match location {
            Some(Location::Cpu(_) | Location::RemotePci) => {}
            None => bail!(
                NotSupported,
                "the event has no {0} location yet: declare the publisher and the subscriber \
                 (each _cpu or _remote_pci) before exporting it to the remote PCI side",
                end.name()
            ),
            Some(Location::Dpa(_)) => bail!(
                NotSupported,
                "the event's {} is a DPA context: an event exported to the remote PCI side has \
                 its publisher and subscriber on the CPU or the remote PCI side",
                end.name()
            ),
        }
    }
    if inner.addr.is_some() {
        bail!(
            NotSupported,
            "the event keeps its counter in the program's memory (doca_sync_event_set_addr or \
             _set_doca_buf): the soft device shares a counter with the other side's process only \
             in memory of its own"
        );
    }
    Ok(())
}

/// `doca_sync_event_export_to_remote_pci`: a blob the other side of `dev`'s PCI link passes to
/// `doca_sync_event_create_from_export`. The bytes belong to the event (valid until it is
/// destroyed); exporting again through the same device gives the same blob.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_export_to_remote_pci(
    event: *mut doca_sync_event,
    dev: *mut doca_dev,
    data: *mut *const u8,
    sz: *mut usize,
) -> doca_error_t {
    call("doca_sync_event_export_to_remote_pci", || {
        let e = self::event(event)?;
        let d = dev::dev(dev, "dev")?;
        non_null(data, "data")?;
        non_null(sz, "sz")?;
        let mut inner = e.lock();
        if inner.imported() {
            bail!(
                NotSupported,
                "the event was created from an export: only its exporter exports it"
            );
        }
        require_exportable(&inner)?;
        if inner.shared.is_none() {
            if inner.value.is_some() {
                bail!(
                    NotSupported,
                    "the event started with its counter in its own memory, as it has no remote \
                     PCI location: declare the remote PCI side as publisher or subscriber \
                     (doca_sync_event_add_*_location_remote_pci), or export before start"
                );
            }
            inner.shared = Some(Arc::new(SharedCounter::create(0)?));
        }
        let found = inner.blobs.iter().position(|(p, _)| *p == dev.cast());
        let at = match found {
            Some(at) => at,
            None => {
                if inner.blobs.len() >= SYNC_EVENT_MAX_EXPORTS_PER_EVENT {
                    bail!(
                        NoMemory,
                        "the event was exported through {SYNC_EVENT_MAX_EXPORTS_PER_EVENT} \
                         devices already (SYNC_EVENT_MAX_EXPORTS_PER_EVENT)"
                    );
                }
                let shared = inner.shared.as_ref().map(Arc::clone);
                let blob = match shared {
                    Some(s) => s.blob(&d.dev)?,
                    None => bail!(Unexpected, "the exported event has no shared counter"),
                };
                inner.blobs.push((dev.cast(), Box::new(blob)));
                inner.blobs.len() - 1
            }
        };
        let blob: &[u8] = &inner.blobs[at].1[..];
        // SAFETY: both checked non-null; writable by the C contract. The bytes live in a box
        // the event keeps until it is destroyed.
        unsafe {
            out(data, "data", blob.as_ptr())?;
            out(sz, "sz", blob.len())
        }
    })
}

/// `doca_sync_event_create_from_export`: the event another process exported to this side of
/// its PCI link. Its counter is reachable at once (get, update, wait); it cannot be configured,
/// and it may be started stand-alone or used as a context for tasks.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_create_from_export(
    dev: *mut doca_dev,
    data: *const u8,
    sz: usize,
    event: *mut *mut doca_sync_event,
) -> doca_error_t {
    call("doca_sync_event_create_from_export", || {
        let d = dev::dev(dev, "dev")?;
        non_null(event, "event")?;
        check_blob_len(sz)?;
        non_null(data, "data")?;
        // SAFETY: non-null, and `sz` readable bytes by the C contract (`sz` is checked to be
        // the blob's size before anything is read).
        let bytes = unsafe { std::slice::from_raw_parts(data, sz) };
        let shared = Arc::new(SharedCounter::import(bytes, &d.dev)?);
        let handle = SyncEventObj::register(Inner {
            value: Some(Arc::new(SyncEventValue::shared(shared.clone()))),
            shared: Some(shared),
            import_dev: Some(dev.cast()),
            ..Inner::new()
        })?;
        d.users.hold();
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(event, "event", handle.cast()) }
    })
}

/// `doca_sync_event_cap_is_export_to_remote_pci_supported`: every device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_cap_is_export_to_remote_pci_supported(
    devinfo: *const doca_devinfo,
) -> doca_error_t {
    call(
        "doca_sync_event_cap_is_export_to_remote_pci_supported",
        || dev::devinfo(devinfo, "devinfo").map(|_| ()),
    )
}

/// `doca_sync_event_cap_is_create_from_export_supported`: every device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_sync_event_cap_is_create_from_export_supported(
    devinfo: *const doca_devinfo,
) -> doca_error_t {
    call(
        "doca_sync_event_cap_is_create_from_export_supported",
        || dev::devinfo(devinfo, "devinfo").map(|_| ()),
    )
}
