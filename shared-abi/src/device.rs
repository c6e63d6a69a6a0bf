//! The list of DOCA device functions: the one place their names and C signatures are written.
//!
//! [`for_each_device_function!`](crate::for_each_device_function) hands the whole list to a
//! macro of the caller's, which generates what it needs from it: `dpakit-dev`'s `sys` its
//! `extern` declarations, [`DEVICE_API`] here (the imports a device build may have), the soft
//! device a compile-time check that it implements each function with exactly this signature, and
//! the soft device's C header test a `_Static_assert` per function.

#![allow(non_camel_case_types)]

/// `doca_dpa_dev_comch_consumer_completion_element_t`: one received message, valid until
/// `doca_dpa_dev_comch_consumer_completion_ack`.
pub type doca_dpa_dev_comch_consumer_completion_element_t = u64;
/// `doca_dpa_dev_completion_element_t`: one DPA completion.
pub type doca_dpa_dev_completion_element_t = u64;
/// `doca_dpa_dev_completion_type_t`.
pub type doca_dpa_dev_completion_type_t = u32;
/// `doca_dpa_dev_log_level_t`.
pub type doca_dpa_dev_log_level_t = u32;

macro_rules! names {
    ($( $(#[$doc:meta])* [$class:ident $abi:literal]
        fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?; )*) => {
        /// Every DOCA device function, by name: the imports a device object may have.
        pub const DEVICE_API: &[&str] = &[$(stringify!($name)),*];
    };
}
crate::for_each_device_function!(names);

/// Calls macro `$callback` once with every DOCA device function kernels may call.
///
/// Each entry is `$(#[doc])* [class "abi"] fn name(arg: Type, ...) $(-> Ret)?;`, types written
/// as paths that resolve anywhere. `class` says how the function is declared and defined:
///
/// - `call`: a plain C function.
/// - `ender`: ends the current activation and never returns. Its ABI is `"C"` on the DPA and
///   `"C-unwind"` on the host, where the soft device may leave the kernel by unwinding.
/// - `variadic`: a C variadic function; the fixed arguments are listed and `...` follows them.
///   Stable Rust cannot define one, so the soft device defines it in C.
///
/// ```
/// macro_rules! names {
///     ($( $(#[$doc:meta])* [$class:ident $abi:literal]
///         fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?; )*) => {
///         [$(stringify!($name)),*]
///     };
/// }
/// let names = dpakit_abi::for_each_device_function!(names);
/// assert!(names.contains(&"doca_dpa_dev_thread_reschedule"));
/// ```
#[macro_export]
macro_rules! for_each_device_function {
    ($callback:ident) => {
        $crate::__device_function_list_for_target! { $callback }
    };
}

// The device never unwinds: a plain C ABI keeps abort-on-unwind landing pads (and their
// personality routine) out of device code.
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __device_function_list_for_target {
    ($callback:ident) => {
        $crate::__device_function_list! { $callback "C" }
    };
}

// On the host a plain C function that unwinds aborts, and the soft device may unwind.
#[cfg(not(all(target_arch = "riscv64", target_os = "none")))]
#[doc(hidden)]
#[macro_export]
macro_rules! __device_function_list_for_target {
    ($callback:ident) => {
        $crate::__device_function_list! { $callback "C-unwind" }
    };
}

/// The list itself; `$ender_abi` is the target's ABI of the functions that end an activation.
#[doc(hidden)]
#[macro_export]
macro_rules! __device_function_list {
    ($callback:ident $ender_abi:literal) => {
        $callback! {
            // Comch MsgQ, DPA consumer side.
            /// Posts `num_msgs` more immediate-only receives (credits) on a DPA consumer.
            [call "C"] fn doca_dpa_dev_comch_consumer_ack(consumer: u64, num_msgs: u32);
            /// Takes the next received message; returns 1 and fills `comp_element`, or 0 when none.
            [call "C"] fn doca_dpa_dev_comch_consumer_get_completion(
                consumer_comp: u64,
                comp_element: *mut $crate::device::doca_dpa_dev_comch_consumer_completion_element_t
            ) -> ::core::ffi::c_int;
            /// The immediate of a received message and, through `imm_length`, its length.
            [call "C"] fn doca_dpa_dev_comch_consumer_get_completion_imm(
                comp_element: $crate::device::doca_dpa_dev_comch_consumer_completion_element_t,
                imm_length: *mut u32
            ) -> *const u8;
            /// The id of the CPU producer that sent a received message.
            [call "C"] fn doca_dpa_dev_comch_consumer_get_completion_producer_id(
                comp_element: $crate::device::doca_dpa_dev_comch_consumer_completion_element_t
            ) -> u32;
            /// Releases `num_comp` read completions; their immediate pointers become invalid.
            [call "C"] fn doca_dpa_dev_comch_consumer_completion_ack(
                consumer_comp: u64,
                num_comp: u64
            );
            /// Re-arms the consumer completion context so the next message triggers the thread.
            [call "C"] fn doca_dpa_dev_comch_consumer_completion_request_notification(
                consumer_comp: u64
            );

            // Comch MsgQ, DPA producer side.
            /// Returns non-zero when the CPU consumer `consumer_id` has no receive posted.
            [call "C"] fn doca_dpa_dev_comch_producer_is_consumer_empty(
                producer: u64,
                consumer_id: u32
            ) -> ::core::ffi::c_int;
            /// Sends `imm_length` (≤ 32) bytes of immediate data to a CPU consumer.
            [call "C"] fn doca_dpa_dev_comch_producer_post_send_imm_only(
                producer: u64,
                consumer_id: u32,
                imm: *const u8,
                imm_length: u32,
                flags: u32
            );
            /// Copies `length` bytes between two mmaps, then sends an immediate to a CPU consumer.
            [call "C"] fn doca_dpa_dev_comch_producer_dma_copy(
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
            [call "C"] fn doca_dpa_dev_mmap_get_external_ptr(mmap: u32, addr: u64) -> u64;

            // DPA completions.
            /// Takes the next DPA completion; returns 1 and fills `comp_element`, or 0 when none.
            [call "C"] fn doca_dpa_dev_get_completion(
                dpa_comp: u64,
                comp_element: *mut $crate::device::doca_dpa_dev_completion_element_t
            ) -> ::core::ffi::c_int;
            /// The type of a DPA completion.
            [call "C"] fn doca_dpa_dev_get_completion_type(
                comp_element: $crate::device::doca_dpa_dev_completion_element_t
            ) -> $crate::device::doca_dpa_dev_completion_type_t;
            /// The user data of the context that produced a DPA completion.
            [call "C"] fn doca_dpa_dev_get_completion_user_data(
                comp_element: $crate::device::doca_dpa_dev_completion_element_t
            ) -> u32;
            /// Releases `num_comp` read DPA completions.
            [call "C"] fn doca_dpa_dev_completion_ack(dpa_comp: u64, num_comp: u64);
            /// Re-arms a DPA completion context.
            [call "C"] fn doca_dpa_dev_completion_request_notification(dpa_comp: u64);

            // DPA threads.
            /// Triggers the thread attached to a notification completion.
            [call "C"] fn doca_dpa_dev_thread_notify(notify_comp: u64);
            /// The thread's local storage set by the host (`doca_dpa_thread_set_local_storage`).
            [call "C"] fn doca_dpa_dev_thread_get_local_storage() -> u64;
            /// Ends the activation; the next completion on an attached context runs the kernel
            /// again from its entry.
            [ender $ender_abi] fn doca_dpa_dev_thread_reschedule() -> !;
            /// Ends the activation and the thread: it is never triggered again.
            [ender $ender_abi] fn doca_dpa_dev_thread_finish() -> !;
            /// This thread's index among the threads of its kernel launch (0 in a DPA thread or
            /// an RPC).
            [call "C"] fn doca_dpa_dev_thread_rank() -> u32;
            /// How many threads the current kernel launch runs (1 in a DPA thread or an RPC).
            [call "C"] fn doca_dpa_dev_num_threads() -> u32;

            // The soft device's clocks, behind `dpaintrin.h`'s counters.
            /// `__dpa_thread_cycles()`: cycles of a nominal 1 GHz clock (nanoseconds of the DPA
            /// timer's clock).
            [call "C"] fn dpakit_soft_thread_cycles() -> u64;
            /// `__dpa_thread_inst_ret()`: instructions retired by the activation in ISA mode;
            /// natively, where none are counted, the cycle count.
            [call "C"] fn dpakit_soft_thread_inst_ret() -> u64;
            /// `__dpa_thread_time()`: the DPA timer in microseconds (`DOCA_CLOCK_NIC_DPA_TIMER`).
            [call "C"] fn dpakit_soft_thread_time() -> u64;

            // Logging.
            /// Logs a printf-style message to the host at `log_level`.
            [variadic "C"] fn doca_dpa_dev_log(
                log_level: $crate::device::doca_dpa_dev_log_level_t,
                format: *const ::core::ffi::c_char
            );

            // Sync events (`doca_sync_event_get_dpa_handle` gives kernels the handle).
            /// Reads the counter of a sync event into `value`.
            [call "C"] fn doca_dpa_dev_sync_event_get(sync_event: u64, value: *mut u64);
            /// Adds `value` to the counter of a sync event, atomically.
            [call "C"] fn doca_dpa_dev_sync_event_update_add(sync_event: u64, value: u64);
            /// Sets the counter of a sync event to `value`.
            [call "C"] fn doca_dpa_dev_sync_event_update_set(sync_event: u64, value: u64);
            /// Waits until `counter & mask` is greater than `value`.
            [call "C"] fn doca_dpa_dev_sync_event_wait_gt(sync_event: u64, value: u64, mask: u64);
        }
    };
}
