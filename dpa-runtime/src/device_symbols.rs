//! The device C ABI as the runtime reaches it: by symbol, as a kernel does.
//!
//! The device functions are defined by the layer above (`crate::device_abi`), which needs the
//! runtime (activations, tables, completions). The runtime needs them too: ISA mode serves a
//! kernel's device calls with them, and a DPA's start makes sure every one is linked. Naming
//! them by their C symbols keeps the runtime below that layer: the linker, not an import,
//! connects the two.
//!
//! Each function here is a safe wrapper of the same name and signature.

use std::ffi::c_char;

/// The symbols, as `extern` declarations.
mod sys {
    macro_rules! declare {
        ($( $(#[$doc:meta])* [$class:ident $abi:literal]
            fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?; )*) => {
            $( declare!(@one $class $abi $name($($arg: $ty),*) {$(-> $ret)?}); )*
        };
        (@one variadic $abi:literal $name:ident($($arg:ident: $ty:ty),*) {$($ret:tt)*}) => {
            unsafe extern "C" {
                pub(super) fn $name($($arg: $ty,)* ...) $($ret)*;
            }
        };
        (@one $class:ident $abi:literal $name:ident($($arg:ident: $ty:ty),*) {$($ret:tt)*}) => {
            unsafe extern $abi {
                pub(super) fn $name($($arg: $ty),*) $($ret)*;
            }
        };
    }
    dpakit_abi::for_each_device_function!(declare);

    unsafe extern "C" {
        /// What `doca_dpa_dev_log` (C, variadic) hands its formatted text to.
        pub(super) fn dpakit_emu_dev_log(level: u32, message: *const super::c_char, len: usize);
    }
}

/// A safe wrapper per device function that is not variadic.
macro_rules! wrap {
    ($( $(#[$doc:meta])* [$class:ident $abi:literal]
        fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?; )*) => {
        $( wrap!(@one $class $name($($arg: $ty),*) {$(-> $ret)?}); )*

        /// Takes the address of every device function. A DPA's start calls it, so any program
        /// that runs kernels links all of them whatever order the linker sees the objects in.
        pub(crate) fn keep_linked() {
            let table = [
                $( sys::$name as *const (), )*
                sys::dpakit_emu_dev_log as *const (),
            ];
            std::hint::black_box(&table);
        }
    };
    (@one variadic $name:ident($($arg:ident: $ty:ty),*) {$($ret:tt)*}) => {};
    (@one $class:ident $name:ident($($arg:ident: $ty:ty),*) {$($ret:tt)*}) => {
        #[allow(dead_code, reason = "ISA mode serves some itself (the instructions retired)")]
        #[allow(clippy::too_many_arguments, reason = "the device function's C signature")]
        pub(crate) fn $name($($arg: $ty),*) $($ret)* {
            // SAFETY: the device ABI defines this symbol as a safe function of exactly this
            // signature (`device_abi::abi_check` proves it at compile time), which validates
            // every argument itself.
            unsafe { sys::$name($($arg),*) }
        }
    };
}
dpakit_abi::for_each_device_function!(wrap);

/// Hands a formatted `doca_dpa_dev_log` message of `len` bytes at `message` to the soft device.
pub(crate) fn dpakit_emu_dev_log(level: u32, message: *const c_char, len: usize) {
    // SAFETY: defined by the device ABI as a safe function of this signature
    // (`device_abi::abi_check`); its callers pass `len` readable bytes, as the C shim does.
    unsafe { sys::dpakit_emu_dev_log(level, message, len) }
}
