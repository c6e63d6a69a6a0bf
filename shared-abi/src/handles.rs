//! Handles that name DOCA objects on the device.
//!
//! The host obtains them (`doca_comch_consumer_get_dpa_handle`, `doca_dpa_completion_get_dpa_handle`,
//! `doca_mmap_dev_get_dpa_handle`, …) and passes them to kernels inside argument blocks; kernels
//! hand them to the device functions of `dpakit-dev`. They are opaque numbers with DOCA's widths.

macro_rules! handles {
    ($( $(#[$doc:meta])* $name:ident($repr:ty) = $c_name:literal; )*) => { $(
        $(#[$doc])*
        #[doc = concat!("\n\nDOCA type: `", $c_name, "`.")]
        #[repr(transparent)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
        pub struct $name(pub $repr);

        impl $name {
            /// The raw handle value.
            pub const fn raw(self) -> $repr {
                self.0
            }
        }

        // SAFETY: repr(transparent) over an integer.
        unsafe impl crate::Pod for $name {}
    )* };
}

handles! {
    /// A MsgQ consumer that receives on the DPA.
    ComchConsumerHandle(u64) = "doca_dpa_dev_comch_consumer_t";
    /// A MsgQ producer that sends from the DPA.
    ComchProducerHandle(u64) = "doca_dpa_dev_comch_producer_t";
    /// The completion context on which a DPA consumer reports received messages.
    ConsumerCompletionHandle(u64) = "doca_dpa_dev_comch_consumer_completion_t";
    /// A DPA completion context (producer send completions and other DPA work).
    CompletionHandle(u64) = "doca_dpa_dev_completion_t";
    /// A notification completion: `thread_notify` on it triggers the attached thread.
    NotificationCompletionHandle(u64) = "doca_dpa_dev_notification_completion_t";
    /// A memory map as seen from the DPA (DOCA uses 32 bits for this one).
    MmapHandle(u32) = "doca_dpa_dev_mmap_t";
    /// An address in DPA memory.
    DevPtr(u64) = "doca_dpa_dev_uintptr_t";
    /// A sync event exported to a DPA (`doca_sync_event_get_dpa_handle`).
    SyncEventHandle(u64) = "doca_dpa_dev_sync_event_t";
}

crate::pod_struct! {
    /// A range of memory registered in an mmap, as the host hands it to a kernel: the mmap's DPA
    /// handle and the range's start address and length. A kernel reaches it through
    /// `dpakit_dev::mmap::HostMem`, whose reads and copies stay inside it.
    #[derive(Debug, PartialEq, Eq, Default, Hash)]
    pub struct MemRange {
        /// Start address of the range (host virtual address, as DOCA's DPA mmap calls take it).
        pub base: u64,
        /// Length of the range in bytes.
        pub len: u64,
        /// The mmap's DPA handle (`doca_mmap_dev_get_dpa_handle`).
        pub mmap: MmapHandle,
        /// Zero.
        pub reserved: u32,
    }
}
