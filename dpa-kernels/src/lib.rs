//! dpakit's DPA kernels.
//!
//! Each kernel is written once against `dpakit-dev`. `cargo xtask build-dpa` compiles this crate
//! for `riscv64imac-unknown-none-elf` into `libdpakit_kernels.a`; host builds link it with the
//! soft device, which provides the device functions.
#![cfg_attr(not(test), no_std)]
#![warn(missing_docs)]

mod echo;

pub use echo::{ECHO, PREPOST_CREDITS, echo, prepost_credits};

/// On the device a panic is a bug in the kernel: report it and retire the thread so it is not
/// triggered again. (Host builds unwind instead; the soft device turns that into a fatal error
/// on the DPA context.)
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    dpakit_dev::log::log(
        dpakit_dev::log::LogLevel::Crit,
        c"dpakit kernel panicked; finishing the thread",
    );
    dpakit_dev::thread::finish()
}
