//! Sync events from the DPA: waiting on a host sync event and advancing it, setting it.

use dpakit_dev::abi::handles::SyncEventHandle;
use dpakit_dev::rpc_kernel;
use dpakit_dev::sync_event::SyncEvent;

rpc_kernel! {
    /// Waits until the counter of sync event `event` exceeds `after`, adds `step` to it and
    /// returns the counter as the kernel then reads it. The host exports the event to this DPA
    /// (`doca_sync_event_get_dpa_handle`) with the DPA as a subscriber and a publisher.
    pub SYNC_STEP: fn sync_step(event: u64, after: u64, step: u64) -> u64 {
        let event = SyncEvent::new(SyncEventHandle(event));
        event.wait_gt(after, u64::MAX);
        event.add(step);
        event.get()
    }
}

rpc_kernel! {
    /// Sets the counter of sync event `event` to `value` and returns it as the kernel then reads
    /// it.
    pub SYNC_SET: fn sync_set(event: u64, value: u64) -> u64 {
        let event = SyncEvent::new(SyncEventHandle(event));
        event.set(value);
        event.get()
    }
}
