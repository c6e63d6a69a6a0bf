//! The raw DOCA device functions, under DOCA's own names and C signatures.
//!
//! On the DPA they resolve against DOCA's device libraries; in a host build they resolve against
//! the soft device (`dpakit-emu`), which defines every symbol listed in [`DEVICE_API`].
//!
//! Functions that end the current activation (`thread_reschedule`, `thread_finish`) use the
//! `C-unwind` ABI on the host: the soft device leaves the kernel by unwinding through its frames,
//! which a plain `C` function would turn into an abort. On the device they are plain `C`.

use core::ffi::{c_char, c_int};

/// `doca_dpa_dev_comch_consumer_completion_element_t`: one received message, valid until
/// `doca_dpa_dev_comch_consumer_completion_ack`.
pub type doca_dpa_dev_comch_consumer_completion_element_t = u64;
/// `doca_dpa_dev_completion_element_t`: one DPA completion.
pub type doca_dpa_dev_completion_element_t = u64;
/// `doca_dpa_dev_completion_type_t`.
pub type doca_dpa_dev_completion_type_t = u32;
/// `doca_dpa_dev_log_level_t`.
pub type doca_dpa_dev_log_level_t = u32;

macro_rules! device_api {
    (
        $( $(#[$doc:meta])* $abi:literal fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?; )*
        declared elsewhere: $($other:ident),*;
    ) => {
        $(
            unsafe extern $abi {
                $(#[$doc])*
                pub fn $name($($arg: $ty),*) $(-> $ret)?;
            }
        )*

        /// Every symbol this module declares: the imports a device object may have.
        pub const DEVICE_API: &[&str] = &[$(stringify!($name),)* $(stringify!($other)),*];
    };
}

device_api! {
    // Comch MsgQ, DPA consumer side.
    /// Posts `num_msgs` more immediate-only receives (credits) on a DPA consumer.
    "C" fn doca_dpa_dev_comch_consumer_ack(consumer: u64, num_msgs: u32);
    /// Takes the next received message; returns 1 and fills `comp_element`, or 0 when none.
    "C" fn doca_dpa_dev_comch_consumer_get_completion(
        consumer_comp: u64,
        comp_element: *mut doca_dpa_dev_comch_consumer_completion_element_t
    ) -> c_int;
    /// The immediate of a received message and, through `imm_length`, its length.
    "C" fn doca_dpa_dev_comch_consumer_get_completion_imm(
        comp_element: doca_dpa_dev_comch_consumer_completion_element_t,
        imm_length: *mut u32
    ) -> *const u8;
    /// The id of the CPU producer that sent a received message.
    "C" fn doca_dpa_dev_comch_consumer_get_completion_producer_id(
        comp_element: doca_dpa_dev_comch_consumer_completion_element_t
    ) -> u32;
    /// Releases `num_comp` read completions; their immediate pointers become invalid.
    "C" fn doca_dpa_dev_comch_consumer_completion_ack(consumer_comp: u64, num_comp: u64);
    /// Re-arms the consumer completion context so the next message triggers the thread.
    "C" fn doca_dpa_dev_comch_consumer_completion_request_notification(consumer_comp: u64);

    // Comch MsgQ, DPA producer side.
    /// Returns non-zero when the CPU consumer `consumer_id` has no receive posted.
    "C" fn doca_dpa_dev_comch_producer_is_consumer_empty(producer: u64, consumer_id: u32) -> c_int;
    /// Sends `imm_length` (≤ 32) bytes of immediate data to a CPU consumer.
    "C" fn doca_dpa_dev_comch_producer_post_send_imm_only(
        producer: u64,
        consumer_id: u32,
        imm: *const u8,
        imm_length: u32,
        flags: u32
    );
    /// Copies `length` bytes between two mmaps, then sends an immediate to a CPU consumer.
    "C" fn doca_dpa_dev_comch_producer_dma_copy(
        producer: u64,
        consumer_id: u32,
        dst_mmap: u32,
        dst_addr: u64,
        src_mmap: u32,
        src_addr: u64,
        length: usize,
        imm: *const u8,
        imm_length: u32,
        flags: u32
    );

    // Memory.
    /// A device pointer through which the DPA reads and writes `addr` inside an mmap (host
    /// memory registered with the DPA).
    "C" fn doca_dpa_dev_mmap_get_external_ptr(mmap: u32, addr: u64) -> u64;

    // DPA completions.
    /// Takes the next DPA completion; returns 1 and fills `comp_element`, or 0 when none.
    "C" fn doca_dpa_dev_get_completion(
        dpa_comp: u64,
        comp_element: *mut doca_dpa_dev_completion_element_t
    ) -> c_int;
    /// The type of a DPA completion.
    "C" fn doca_dpa_dev_get_completion_type(
        comp_element: doca_dpa_dev_completion_element_t
    ) -> doca_dpa_dev_completion_type_t;
    /// The user data of the context that produced a DPA completion.
    "C" fn doca_dpa_dev_get_completion_user_data(comp_element: doca_dpa_dev_completion_element_t) -> u32;
    /// Releases `num_comp` read DPA completions.
    "C" fn doca_dpa_dev_completion_ack(dpa_comp: u64, num_comp: u64);
    /// Re-arms a DPA completion context.
    "C" fn doca_dpa_dev_completion_request_notification(dpa_comp: u64);

    // DPA threads.
    /// Triggers the thread attached to a notification completion.
    "C" fn doca_dpa_dev_thread_notify(notify_comp: u64);
    /// The thread's local storage set by the host (`doca_dpa_thread_set_local_storage`).
    "C" fn doca_dpa_dev_thread_get_local_storage() -> u64;

    declared elsewhere: doca_dpa_dev_thread_reschedule, doca_dpa_dev_thread_finish, doca_dpa_dev_log;
}

/// Declares the functions that end an activation, once per ABI.
macro_rules! activation_enders {
    ($abi:literal) => {
        unsafe extern $abi {
            /// Ends the activation; the next completion on an attached context runs the kernel
            /// again from its entry.
            pub fn doca_dpa_dev_thread_reschedule() -> !;
            /// Ends the activation and the thread: it is never triggered again.
            pub fn doca_dpa_dev_thread_finish() -> !;
        }
    };
}

// The device never unwinds: a plain C declaration keeps abort-on-unwind landing pads (and their
// personality routine) out of device code.
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
activation_enders!("C");
#[cfg(not(all(target_arch = "riscv64", target_os = "none")))]
activation_enders!("C-unwind");

unsafe extern "C" {
    /// Logs a printf-style message to the host at `log_level` (variadic, so declared by hand).
    pub fn doca_dpa_dev_log(log_level: doca_dpa_dev_log_level_t, format: *const c_char, ...);
}
