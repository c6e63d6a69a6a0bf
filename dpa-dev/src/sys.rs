//! The raw DOCA device functions, under DOCA's own names and C signatures.
//!
//! On the DPA they resolve against DOCA's device libraries; in a host build they resolve against
//! the soft device (`dpakit-emu`), which defines every symbol listed in [`DEVICE_API`]. The
//! declarations are generated from the one list of device functions,
//! [`for_each_device_function!`](crate::for_each_device_function).
//!
//! Functions that end the current activation (`thread_reschedule`, `thread_finish`) use the
//! `C-unwind` ABI on the host: the soft device leaves the kernel by unwinding through its frames,
//! which a plain `C` function would turn into an abort. On the device they are plain `C`.

pub use dpakit_abi::device::{
    DEVICE_API, doca_dpa_dev_comch_consumer_completion_element_t,
    doca_dpa_dev_completion_element_t, doca_dpa_dev_completion_type_t, doca_dpa_dev_log_level_t,
};

/// Declares every function of the list, with its class's ABI.
macro_rules! declare_device_functions {
    ($( $(#[$doc:meta])* [$class:ident $abi:literal]
        fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?; )*) => {
        $(
            declare_device_functions!(
                @one $class $abi {$(#[$doc])*} $name($($arg: $ty),*) {$(-> $ret)?}
            );
        )*
    };
    (@one variadic $abi:literal {$($doc:tt)*}
        $name:ident($($arg:ident: $ty:ty),*) {$($ret:tt)*}) => {
        unsafe extern $abi {
            $($doc)*
            pub fn $name($($arg: $ty,)* ...) $($ret)*;
        }
    };
    (@one $class:ident $abi:literal {$($doc:tt)*}
        $name:ident($($arg:ident: $ty:ty),*) {$($ret:tt)*}) => {
        unsafe extern $abi {
            $($doc)*
            pub fn $name($($arg: $ty),*) $($ret)*;
        }
    };
}

dpakit_abi::for_each_device_function!(declare_device_functions);
