//! Sync events from the DPA: waiting on a host sync event and advancing it, setting it, and
//! marking it from each thread of a kernel launch.

use dpakit_dev::abi::handles::SyncEventHandle;
use dpakit_dev::sync_event::SyncEvent;
use dpakit_dev::{rpc_kernel, thread_kernel};

rpc_kernel! {
    /// Waits until the counter of sync event `event` exceeds `after`, adds `step` to it and
    /// returns the counter as the kernel then reads it. The host exports the event to this DPA
    /// (`doca_sync_event_get_dpa_handle`) with the DPA as a subscriber and a publisher.
    pub SYNC_STEP: fn sync_step(event: SyncEventHandle, after: u64, step: u64) -> u64 {
        let event = SyncEvent::new(event);
        event.wait_gt(after, u64::MAX);
        event.add(step);
        event.get()
    }
}

rpc_kernel! {
    /// Sets the counter of sync event `event` to `value` and returns it as the kernel then reads
    /// it.
    pub SYNC_SET: fn sync_set(event: SyncEventHandle, value: u64) -> u64 {
        let event = SyncEvent::new(event);
        event.set(value);
        event.get()
    }
}

thread_kernel! {
    /// Launched on N threads (`doca_dpa_kernel_launch_update_set`): thread `r` adds `1 << r` to
    /// sync event `event`, so a launch whose threads each ran once, with ranks 0 to N - 1, adds
    /// `2^N - 1`. Ends when done.
    pub LAUNCH_MARK: fn launch_mark(event: u64) {
        let rank = dpakit_dev::thread::rank();
        if rank < 64 && rank < dpakit_dev::thread::num_threads() {
            SyncEvent::new(SyncEventHandle(event)).add(1 << rank);
        }
    }
}
