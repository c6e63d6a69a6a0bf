//! Sync events (`doca_sync_event`): a 64-bit counter the CPU, DPA kernels and the remote PCI
//! side update, read and wait on. Kernels reach it through [`SyncEvent::dpa_handle`]; the other
//! side of the PCI link through [`SyncEvent::export_to_remote_pci`] and
//! [`SyncEvent::create_from_export`]. [`SyncEventContext`] is the event as a DOCA context, with
//! its tasks.

mod context;

pub use context::{SyncEventContext, SyncEventContextBuilder, TaskCompletion, TaskKind};

use crate::dev::Dev;
use crate::dpa::Dpa;
use crate::error::{Result, bail, doca};
use dpakit_abi::handles::SyncEventHandle;
use dpakit_sys as sys;

/// Where a sync event is published or subscribed from.
#[derive(Clone, Copy, Debug)]
enum Location<'a> {
    Cpu(&'a Dev),
    Dpa(&'a Dpa),
    RemotePci,
}

/// Configuration of a [`SyncEvent`]: one publisher and one subscriber location.
#[derive(Debug, Default)]
pub struct SyncEventBuilder<'a> {
    publisher: Option<Location<'a>>,
    subscriber: Option<Location<'a>>,
}

impl<'a> SyncEventBuilder<'a> {
    /// `doca_sync_event_add_publisher_location_cpu`: the CPU updates the event.
    #[doc(alias = "doca_sync_event_add_publisher_location_cpu")]
    pub fn publisher_cpu(mut self, dev: &'a Dev) -> Self {
        self.publisher = Some(Location::Cpu(dev));
        self
    }

    /// `doca_sync_event_add_publisher_location_dpa`: kernels of `dpa` update the event.
    #[doc(alias = "doca_sync_event_add_publisher_location_dpa")]
    pub fn publisher_dpa(mut self, dpa: &'a Dpa) -> Self {
        self.publisher = Some(Location::Dpa(dpa));
        self
    }

    /// `doca_sync_event_add_subscriber_location_cpu`: the CPU waits on the event.
    #[doc(alias = "doca_sync_event_add_subscriber_location_cpu")]
    pub fn subscriber_cpu(mut self, dev: &'a Dev) -> Self {
        self.subscriber = Some(Location::Cpu(dev));
        self
    }

    /// `doca_sync_event_add_subscriber_location_dpa`: kernels of `dpa` wait on the event.
    #[doc(alias = "doca_sync_event_add_subscriber_location_dpa")]
    pub fn subscriber_dpa(mut self, dpa: &'a Dpa) -> Self {
        self.subscriber = Some(Location::Dpa(dpa));
        self
    }

    /// `doca_sync_event_add_publisher_location_remote_pci`: the other side of the PCI link
    /// updates the event (through [`SyncEvent::create_from_export`]).
    #[doc(alias = "doca_sync_event_add_publisher_location_remote_pci")]
    pub fn publisher_remote_pci(mut self) -> Self {
        self.publisher = Some(Location::RemotePci);
        self
    }

    /// `doca_sync_event_add_subscriber_location_remote_pci`: the other side of the PCI link
    /// waits on the event.
    #[doc(alias = "doca_sync_event_add_subscriber_location_remote_pci")]
    pub fn subscriber_remote_pci(mut self) -> Self {
        self.subscriber = Some(Location::RemotePci);
        self
    }

    /// `doca_sync_event_create` + the locations, not started yet.
    fn create(self) -> Result<SyncEvent> {
        let (Some(publisher), Some(subscriber)) = (self.publisher, self.subscriber) else {
            bail!(
                BadState,
                "a sync event needs a publisher and a subscriber location before start"
            );
        };
        let mut raw = std::ptr::null_mut();
        doca!(doca_sync_event_create(&mut raw))?;
        let mut event = SyncEvent {
            raw,
            devs: Vec::new(),
            dpas: Vec::new(),
        };
        for (location, publisher) in [(publisher, true), (subscriber, false)] {
            match (location, publisher) {
                (Location::Cpu(dev), true) => {
                    doca!(doca_sync_event_add_publisher_location_cpu(raw, dev.raw()))?;
                    event.devs.push(dev.clone());
                }
                (Location::Cpu(dev), false) => {
                    doca!(doca_sync_event_add_subscriber_location_cpu(raw, dev.raw()))?;
                    event.devs.push(dev.clone());
                }
                (Location::Dpa(dpa), true) => {
                    doca!(doca_sync_event_add_publisher_location_dpa(raw, dpa.raw()))?;
                    event.dpas.push(dpa.clone());
                }
                (Location::Dpa(dpa), false) => {
                    doca!(doca_sync_event_add_subscriber_location_dpa(raw, dpa.raw()))?;
                    event.dpas.push(dpa.clone());
                }
                (Location::RemotePci, true) => {
                    doca!(doca_sync_event_add_publisher_location_remote_pci(raw))?;
                }
                (Location::RemotePci, false) => {
                    doca!(doca_sync_event_add_subscriber_location_remote_pci(raw))?;
                }
            }
        }
        Ok(event)
    }

    /// `doca_sync_event_create` + the locations + `doca_sync_event_start`.
    #[doc(alias = "doca_sync_event_start")]
    pub fn start(self) -> Result<SyncEvent> {
        let event = self.create()?;
        doca!(doca_sync_event_start(event.raw))?;
        Ok(event)
    }
}

/// `doca_sync_event`, started. Dropping it destroys the event (kernels' handles become invalid).
#[doc(alias = "doca_sync_event")]
#[derive(Debug)]
pub struct SyncEvent {
    raw: *mut sys::doca_sync_event,
    // The locations outlive the event (declared after `raw`'s owner: dropped after it).
    devs: Vec<Dev>,
    dpas: Vec<Dpa>,
}

impl SyncEvent {
    /// `doca_sync_event_create`: configure the locations, then start.
    #[doc(alias = "doca_sync_event_create")]
    pub fn builder<'a>() -> SyncEventBuilder<'a> {
        SyncEventBuilder::default()
    }

    pub(crate) fn raw(&self) -> *mut sys::doca_sync_event {
        self.raw
    }

    /// `doca_sync_event_get`.
    #[doc(alias = "doca_sync_event_get")]
    pub fn get(&self) -> Result<u64> {
        let mut value = 0;
        doca!(doca_sync_event_get(self.raw, &mut value))?;
        Ok(value)
    }

    /// `doca_sync_event_update_set`.
    #[doc(alias = "doca_sync_event_update_set")]
    pub fn set(&self, value: u64) -> Result<()> {
        doca!(doca_sync_event_update_set(self.raw, value))
    }

    /// `doca_sync_event_update_add`: adds atomically; returns the value before.
    #[doc(alias = "doca_sync_event_update_add")]
    pub fn add(&self, value: u64) -> Result<u64> {
        let mut fetched = 0;
        doca!(doca_sync_event_update_add(self.raw, value, &mut fetched))?;
        Ok(fetched)
    }

    /// `doca_sync_event_wait_gt`: busy-waits until `value & mask` exceeds `threshold`.
    #[doc(alias = "doca_sync_event_wait_gt")]
    pub fn wait_gt(&self, threshold: u64, mask: u64) -> Result<()> {
        doca!(doca_sync_event_wait_gt(self.raw, threshold, mask))
    }

    /// `doca_sync_event_wait_gt_yield`: as [`wait_gt`](Self::wait_gt), giving the CPU away
    /// between polls.
    #[doc(alias = "doca_sync_event_wait_gt_yield")]
    pub fn wait_gt_yield(&self, threshold: u64, mask: u64) -> Result<()> {
        doca!(doca_sync_event_wait_gt_yield(self.raw, threshold, mask))
    }

    /// `doca_sync_event_wait_eq`: busy-waits until `value & mask` equals `expected`.
    #[doc(alias = "doca_sync_event_wait_eq")]
    pub fn wait_eq(&self, expected: u64, mask: u64) -> Result<()> {
        doca!(doca_sync_event_wait_eq(self.raw, expected, mask))
    }

    /// `doca_sync_event_wait_eq_yield`: as [`wait_eq`](Self::wait_eq), giving the CPU away
    /// between polls.
    #[doc(alias = "doca_sync_event_wait_eq_yield")]
    pub fn wait_eq_yield(&self, expected: u64, mask: u64) -> Result<()> {
        doca!(doca_sync_event_wait_eq_yield(self.raw, expected, mask))
    }

    /// `doca_sync_event_wait_neq`: busy-waits until `value & mask` differs from `from`.
    #[doc(alias = "doca_sync_event_wait_neq")]
    pub fn wait_neq(&self, from: u64, mask: u64) -> Result<()> {
        doca!(doca_sync_event_wait_neq(self.raw, from, mask))
    }

    /// `doca_sync_event_wait_neq_yield`: as [`wait_neq`](Self::wait_neq), giving the CPU away
    /// between polls.
    #[doc(alias = "doca_sync_event_wait_neq_yield")]
    pub fn wait_neq_yield(&self, from: u64, mask: u64) -> Result<()> {
        doca!(doca_sync_event_wait_neq_yield(self.raw, from, mask))
    }

    /// `doca_sync_event_export_to_remote_pci`: the bytes the other side of `dev`'s PCI link
    /// passes to [`create_from_export`](Self::create_from_export) (send them over Comch, say).
    /// The event's publisher and subscriber are each the CPU or the remote PCI side. The bytes
    /// are the event's, valid while it lives.
    #[doc(alias = "doca_sync_event_export_to_remote_pci")]
    pub fn export_to_remote_pci(&self, dev: &Dev) -> Result<&[u8]> {
        export(self.raw, dev)
    }

    /// `doca_sync_event_create_from_export`: the event the other side of `dev`'s PCI link
    /// exported ([`export_to_remote_pci`](Self::export_to_remote_pci)), ready to use: its
    /// counter is the exporter's. It cannot be configured.
    #[doc(alias = "doca_sync_event_create_from_export")]
    pub fn create_from_export(dev: &Dev, data: &[u8]) -> Result<SyncEvent> {
        let raw = import(dev, data)?;
        Ok(SyncEvent {
            raw,
            devs: vec![dev.clone()],
            dpas: Vec::new(),
        })
    }

    /// `doca_sync_event_get_dpa_handle`: the handle kernels of `dpa` (a location of the event)
    /// pass to `doca_dpa_dev_sync_event_*`.
    #[doc(alias = "doca_sync_event_get_dpa_handle")]
    pub fn dpa_handle(&self, dpa: &Dpa) -> Result<SyncEventHandle> {
        let mut handle = 0;
        doca!(doca_sync_event_get_dpa_handle(
            self.raw,
            dpa.raw(),
            &mut handle
        ))?;
        Ok(SyncEventHandle(handle))
    }
}

/// `doca_sync_event_export_to_remote_pci` of `raw`: bytes the event owns.
fn export<'a>(raw: *mut sys::doca_sync_event, dev: &Dev) -> Result<&'a [u8]> {
    let mut data = std::ptr::null();
    let mut sz = 0;
    doca!(doca_sync_event_export_to_remote_pci(
        raw,
        dev.raw(),
        &mut data,
        &mut sz
    ))?;
    if data.is_null() {
        bail!(Unexpected, "the export gave no bytes");
    }
    // SAFETY: `sz` bytes at `data`, owned by the event until it is destroyed; the caller ties
    // the slice to the event's borrow.
    Ok(unsafe { std::slice::from_raw_parts(data, sz) })
}

/// `doca_sync_event_create_from_export`.
fn import(dev: &Dev, data: &[u8]) -> Result<*mut sys::doca_sync_event> {
    let mut raw = std::ptr::null_mut();
    doca!(doca_sync_event_create_from_export(
        dev.raw(),
        data.as_ptr(),
        data.len(),
        &mut raw
    ))?;
    Ok(raw)
}

impl Drop for SyncEvent {
    #[doc(alias = "doca_sync_event_destroy")]
    fn drop(&mut self) {
        let _ = doca!(doca_sync_event_destroy(self.raw));
        self.devs.clear();
        self.dpas.clear();
    }
}

// A started event is shared between threads: that is what it is for. Its operations are
// atomic on the counter; configuration happened in the builder.
// SAFETY: get/set/add/wait may run concurrently on a started event; the location clones are
// only touched by drop, which needs ownership (the event is not Send: they are `Rc`s).
unsafe impl Sync for SyncEvent {}
