//! A kernel's panic: a fatal error of its DPA context that says what panicked and where.
//!
//! A panic in a kernel is a bug the thread cannot go on from, so it fails the context, as a
//! memory fault does. A kernel crate's `#[panic_handler]` (on the DPA, and in a soft app library
//! built without std) calls [`report`]:
//!
//! ```ignore
//! #[cfg(any(all(target_arch = "riscv64", target_os = "none"), feature = "soft-app"))]
//! #[panic_handler]
//! fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
//!     dpakit_dev::panic::report(info)
//! }
//! ```
//!
//! On the DPA it logs `panicked at FILE:LINE:COLUMN: MESSAGE` and executes an illegal
//! instruction, which the device treats as a fatal fault of the context; the soft device's ISA
//! mode finds the message and location in that instruction's registers and names them in the
//! context's error. In a soft app library it hands them to the soft device directly. Kernels
//! compiled for the host with std unwind instead, and the soft device reports the same error.

use core::fmt::Write;
use core::panic::PanicInfo;

/// Bytes of a panic's message kept (a longer one is cut).
const MESSAGE_LEN: usize = 160;

/// A panic message formatted without allocating, cut at [`MESSAGE_LEN`] bytes.
struct Message {
    bytes: [u8; MESSAGE_LEN],
    len: usize,
}

impl Write for Message {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let n = s.len().min(MESSAGE_LEN - self.len);
        self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// Reports the panic `info` describes as the fatal error of the running kernel's DPA context,
/// with its message and location; never returns.
#[inline]
pub fn report(info: &PanicInfo<'_>) -> ! {
    let mut message = Message {
        bytes: [0; MESSAGE_LEN],
        len: 0,
    };
    // Cannot fail: Message takes what fits.
    let _ = write!(message, "{}", info.message());
    let (file, line, column) = info
        .location()
        .map_or(("", 0, 0), |l| (l.file(), l.line(), l.column()));
    log(&message.bytes[..message.len], file, line, column);
    fail(&message.bytes[..message.len], file, line, column)
}

/// Logs the panic at CRIT level, for a device where its error is all that reaches the host.
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
#[inline]
fn log(message: &[u8], file: &str, line: u32, column: u32) {
    let mut text = Message {
        bytes: [0; MESSAGE_LEN],
        len: 0,
    };
    let message = core::str::from_utf8(message).unwrap_or("(not UTF-8)");
    let _ = write!(text, "kernel panicked at {file}:{line}:{column}: {message}");
    // NUL-terminated: the last byte is given up for it if the text filled the buffer.
    let end = text.len.min(MESSAGE_LEN - 1);
    text.bytes[end] = 0;
    if let Ok(c) = core::ffi::CStr::from_bytes_until_nul(&text.bytes) {
        crate::log::log(crate::log::LogLevel::Crit, c);
    }
}

/// The soft device reports the panic itself.
#[cfg(not(all(target_arch = "riscv64", target_os = "none")))]
#[inline]
fn log(_message: &[u8], _file: &str, _line: u32, _column: u32) {}

/// Ends the activation with the DPA context's fatal error.
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
#[inline]
fn fail(message: &[u8], file: &str, line: u32, column: u32) -> ! {
    dpakit_dev_panic_trap(
        message.as_ptr(),
        message.len(),
        file.as_ptr(),
        file.len(),
        line,
        column,
    )
}

/// The illegal instruction a panic ends in, with its report in a0–a5. The soft device's ISA
/// mode recognises a trap inside this function by its symbol.
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
#[unsafe(no_mangle)]
#[inline(never)]
extern "C" fn dpakit_dev_panic_trap(
    message: *const u8,
    message_len: usize,
    file: *const u8,
    file_len: usize,
    line: u32,
    column: u32,
) -> ! {
    // SAFETY: `unimp` traps; nothing runs after it, and it reads no memory.
    unsafe {
        core::arch::asm!(
            "unimp",
            in("a0") message,
            in("a1") message_len,
            in("a2") file,
            in("a3") file_len,
            in("a4") line,
            in("a5") column,
            options(noreturn, nostack),
        )
    }
}

#[cfg(not(all(target_arch = "riscv64", target_os = "none")))]
unsafe extern "C-unwind" {
    /// The soft device's end of a kernel's panic (not a DOCA function: soft app libraries only).
    fn dpakit_soft_kernel_panic(
        message: *const u8,
        message_len: usize,
        file: *const u8,
        file_len: usize,
        line: u32,
        column: u32,
    ) -> !;
}

/// Hands the panic to the soft device, which fails the context and ends the activation. Inline,
/// like everything here: only a crate that reports a panic refers to the soft device's symbol.
#[cfg(not(all(target_arch = "riscv64", target_os = "none")))]
#[inline]
fn fail(message: &[u8], file: &str, line: u32, column: u32) -> ! {
    // SAFETY: both pointers are valid for their lengths; the soft device only reads them.
    unsafe {
        dpakit_soft_kernel_panic(
            message.as_ptr(),
            message.len(),
            file.as_ptr(),
            file.len(),
            line,
            column,
        )
    }
}
