//! Sync events from the DPA (`doca_dpa_dev_sync_event_*`): a 64-bit counter the host created and
//! exported to this DPA, which kernels read, update and wait on.

use crate::sys;
use dpakit_abi::handles::SyncEventHandle;

/// A sync event a kernel was given (`doca_dpa_dev_sync_event_t`).
#[doc(alias = "doca_dpa_dev_sync_event_t")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncEvent(SyncEventHandle);

impl SyncEvent {
    /// The event behind `handle`, as the host's `doca_sync_event_get_dpa_handle` gave it.
    pub const fn new(handle: SyncEventHandle) -> Self {
        Self(handle)
    }

    /// The counter's value.
    #[doc(alias = "doca_dpa_dev_sync_event_get")]
    #[inline]
    pub fn get(self) -> u64 {
        let mut value = 0;
        // SAFETY: `value` is a live u64 the call writes; the device validates the handle.
        unsafe { sys::doca_dpa_dev_sync_event_get(self.0.raw(), &mut value) };
        value
    }

    /// Adds `value` to the counter, atomically.
    #[doc(alias = "doca_dpa_dev_sync_event_update_add")]
    #[inline]
    pub fn add(self, value: u64) {
        // SAFETY: plain value arguments; the device validates the handle.
        unsafe { sys::doca_dpa_dev_sync_event_update_add(self.0.raw(), value) }
    }

    /// Sets the counter to `value`.
    #[doc(alias = "doca_dpa_dev_sync_event_update_set")]
    #[inline]
    pub fn set(self, value: u64) {
        // SAFETY: plain value arguments; the device validates the handle.
        unsafe { sys::doca_dpa_dev_sync_event_update_set(self.0.raw(), value) }
    }

    /// Waits, busily as the DPA does, until `counter & mask > value`.
    #[doc(alias = "doca_dpa_dev_sync_event_wait_gt")]
    #[inline]
    pub fn wait_gt(self, value: u64, mask: u64) {
        // SAFETY: plain value arguments; the device validates the handle.
        unsafe { sys::doca_dpa_dev_sync_event_wait_gt(self.0.raw(), value, mask) }
    }
}
