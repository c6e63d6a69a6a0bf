//! Reading memory a C caller points at without trusting the pointer.
//!
//! Some C inputs are structures the soft device must read before it can tell whether they are
//! what they claim to be (a `struct doca_dpa_app *` is one). Dereferencing a stray pointer
//! would crash the process; instead the bytes are copied by the kernel through a pipe, which
//! answers `EFAULT` for memory the process cannot read. Control path only: each read is a few
//! system calls.

use crate::error::{ErrorCode, Result, err};
use std::ffi::c_void;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Longest C string [`read_c_string`] accepts, in bytes without the NUL.
pub const MAX_STRING: usize = 255;

struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
}

impl Pipe {
    fn new() -> Result<Self> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two descriptors into the array it is given.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(err(
                ErrorCode::OperatingSystem,
                format!("pipe2 failed: {}", std::io::Error::last_os_error()),
            ));
        }
        // SAFETY: both descriptors are fresh and owned by nobody else.
        unsafe {
            Ok(Self {
                read: OwnedFd::from_raw_fd(fds[0]),
                write: OwnedFd::from_raw_fd(fds[1]),
            })
        }
    }

    /// Copies `out.len()` bytes from `addr`; `false` if any of them cannot be read.
    fn copy(&self, addr: usize, out: &mut [u8]) -> bool {
        // A pipe holds at least one page, so chunks of that size never block.
        for (i, chunk) in out.chunks_mut(4096).enumerate() {
            let from = addr.wrapping_add(i * 4096);
            // SAFETY: write() only reads `chunk.len()` bytes at `from` in the kernel, which
            // reports EFAULT instead of faulting when they are not mapped.
            let n =
                unsafe { libc::write(self.write.as_raw_fd(), from as *const c_void, chunk.len()) };
            if n != chunk.len() as isize {
                self.drain();
                return false;
            }
            // SAFETY: reads back into `chunk`, which is exactly `chunk.len()` writable bytes.
            let m = unsafe {
                libc::read(
                    self.read.as_raw_fd(),
                    chunk.as_mut_ptr().cast(),
                    chunk.len(),
                )
            };
            if m != n {
                return false;
            }
        }
        true
    }

    fn drain(&self) {
        let mut sink = [0u8; 4096];
        // SAFETY: reads into a local buffer; the pipe is non-blocking.
        while unsafe { libc::read(self.read.as_raw_fd(), sink.as_mut_ptr().cast(), 4096) } > 0 {}
    }
}

/// Copies `size_of::<T>()` bytes at `addr` into a `T`.
///
/// # Safety
/// Every bit pattern of the right size must be a valid `T` (plain integers and raw pointers).
pub unsafe fn read_value<T: Copy>(addr: *const T, what: &str) -> Result<T> {
    let mut value = std::mem::MaybeUninit::<T>::uninit();
    // SAFETY: the slice covers exactly the MaybeUninit's bytes, which `copy` overwrites in full
    // before they are read.
    let bytes =
        unsafe { std::slice::from_raw_parts_mut(value.as_mut_ptr().cast::<u8>(), size_of::<T>()) };
    bytes.fill(0);
    if addr.is_null() || !Pipe::new()?.copy(addr as usize, bytes) {
        return Err(unreadable(what, addr.cast()));
    }
    // SAFETY: fully written above, and any bit pattern is a valid T (caller's contract).
    Ok(unsafe { value.assume_init() })
}

/// Copies `len` values of `T` starting at `addr`.
///
/// # Safety
/// As for [`read_value`].
pub unsafe fn read_array<T: Copy + Default>(
    addr: *const T,
    len: usize,
    what: &str,
) -> Result<Vec<T>> {
    let mut out = vec![T::default(); len];
    // SAFETY: the slice covers the vector's initialised elements; they are overwritten whole.
    let bytes = unsafe {
        std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), len * size_of::<T>())
    };
    if len > 0 && (addr.is_null() || !Pipe::new()?.copy(addr as usize, bytes)) {
        return Err(unreadable(what, addr.cast()));
    }
    Ok(out)
}

/// Reads the NUL-terminated string at `addr` (at most [`MAX_STRING`] bytes, valid UTF-8).
pub fn read_c_string(addr: *const std::ffi::c_char, what: &str) -> Result<String> {
    read_c_string_limited(addr, MAX_STRING, what)
}

/// Reads the NUL-terminated string at `addr` (at most `max` bytes, valid UTF-8).
pub fn read_c_string_limited(
    addr: *const std::ffi::c_char,
    max: usize,
    what: &str,
) -> Result<String> {
    if addr.is_null() {
        return Err(unreadable(what, addr.cast()));
    }
    let pipe = Pipe::new()?;
    let mut out = Vec::new();
    let mut at = addr as usize;
    // Read up to each page boundary at most, so a string ending just before an unmapped page
    // still reads.
    while out.len() <= max {
        let to_page_end = 4096 - (at % 4096);
        let mut chunk = vec![0u8; to_page_end.min(64)];
        if !pipe.copy(at, &mut chunk) {
            return Err(unreadable(what, addr.cast()));
        }
        if let Some(nul) = chunk.iter().position(|&b| b == 0) {
            out.extend_from_slice(&chunk[..nul]);
            return String::from_utf8(out).map_err(|_| {
                err(
                    ErrorCode::InvalidValue,
                    format!("{what} at {addr:p} is not valid UTF-8"),
                )
            });
        }
        out.extend_from_slice(&chunk);
        at += chunk.len();
    }
    Err(err(
        ErrorCode::InvalidValue,
        format!("{what} at {addr:p} is longer than {max} bytes or not NUL-terminated"),
    ))
}

fn unreadable(what: &str, addr: *const c_void) -> crate::error::Error {
    err(
        ErrorCode::InvalidValue,
        format!("{what} at {addr:p} is not readable memory"),
    )
}

/// Keeps one copy of each distinct string for the life of the process (kernel and app names,
/// which diagnostics print long after the descriptor they came from was read).
pub fn intern(s: &str) -> &'static str {
    // A B-tree: its nodes are found from the static by their start, so a leak checker sees the
    // names as reachable (a hash table's buckets are reached through an interior pointer).
    use std::collections::BTreeSet;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<BTreeSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(&known) = names.get(s) {
        return known;
    }
    let leaked: &'static str = Box::leak(s.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(
        miri,
        ignore = "hands the kernel a stray pointer on purpose (it answers EFAULT); miri calls that UB"
    )]
    fn reads_what_is_there_and_refuses_what_is_not() {
        let value = 0x1234_5678_u64;
        // SAFETY: u64 accepts any bit pattern.
        assert_eq!(unsafe { read_value(&value, "value") }.unwrap(), value);
        let bad = std::ptr::dangling::<u64>();
        // SAFETY: as above; the address is never dereferenced by this process.
        let e = unsafe { read_value(bad, "value") }.unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidValue);
        assert!(e.message().contains("not readable"), "{e}");
        assert_eq!(read_c_string(c"echo".as_ptr(), "name").unwrap(), "echo");
        assert!(read_c_string(std::ptr::null(), "name").is_err());
        let long = [b'x'; 400];
        assert!(read_c_string(long.as_ptr().cast(), "name").is_err());
        // SAFETY: u32 accepts any bit pattern.
        let arr = unsafe { read_array([1u32, 2, 3].as_ptr(), 3, "array") }.unwrap();
        assert_eq!(arr, [1, 2, 3]);
    }

    #[test]
    fn interned_strings_are_shared() {
        let a = intern(&String::from("ranked_echo"));
        let b = intern("ranked_echo");
        assert!(std::ptr::eq(a, b));
    }
}
