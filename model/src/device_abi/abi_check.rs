//! Compile-time proof that the soft device implements the device ABI exactly as `dpakit-dev`
//! lists it ([`dpakit_abi::for_each_device_function!`]).
//!
//! For every listed function the parent module must define a function of that name whose item
//! coerces to the safe fn-pointer type built from the list: same ABI, same argument and return
//! types. A fn item coerces to a fn pointer only when the signatures are identical, so a missing
//! implementation, a changed argument type, return type or ABI on either side, or an `unsafe`
//! implementation (the soft device validates every argument, so none needs a precondition) fails
//! the build; the runtime's declarations of these symbols (`crate::dpa::device_symbols`) rely on
//! it. The variadic `doca_dpa_dev_log` is defined in C (`csrc/dev_log.c`, compiled against
//! dpakit-doca-headers' `doca_dpa_dev.h`); that crate's `tests/device_api_header.rs` checks the
//! header against the list.

macro_rules! check_implementations {
    ($( $(#[$doc:meta])* [$class:ident $abi:literal]
        fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?; )*) => {
        $( check_implementations!(@one $class $abi $name($($ty),*) {$(-> $ret)?}); )*
    };
    (@one variadic $abi:literal $name:ident($($ty:ty),*) {$($ret:tt)*}) => {};
    (@one $class:ident $abi:literal $name:ident($($ty:ty),*) {$($ret:tt)*}) => {
        const _: extern $abi fn($($ty),*) $($ret)* = super::$name;
    };
}

dpakit_abi::for_each_device_function!(check_implementations);

// What `doca_dpa_dev_log` (C) hands its text to, declared so in `crate::dpa::device_symbols`.
const _: extern "C" fn(u32, *const core::ffi::c_char, usize) = super::dpakit_emu_dev_log;
