//! What the fuzz targets share: reading values off the input, memory with a guard page, and
//! a runtime directory of the process's own.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;

static RUNTIME_DIR: OnceLock<PathBuf> = OnceLock::new();

/// Points the soft device at a runtime directory of this process's own for its sockets
/// (`<tmp>/<prefix>-<pid>`), removed when the process exits. Call it first, on the only thread.
pub fn private_runtime_dir(prefix: &str) {
    let dir = RUNTIME_DIR
        .get_or_init(|| std::env::temp_dir().join(format!("{prefix}-{}", std::process::id())));
    // SAFETY: set before the soft device reads the environment, on the only thread.
    unsafe { std::env::set_var("DPAKIT_SOFT_RUNTIME_DIR", dir) };
    extern "C" fn remove_dir() {
        if let Some(dir) = RUNTIME_DIR.get() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    // SAFETY: registers a plain function.
    unsafe { libc::atexit(remove_dir) };
}

/// The directory [`private_runtime_dir`] chose.
pub fn runtime_dir() -> PathBuf {
    RUNTIME_DIR
        .get()
        .expect("private_runtime_dir was called first")
        .clone()
}

/// Reads values off the fuzz input; once it runs out, every value is zero.
pub struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Bytes(data)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Bytes left.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Up to `n` bytes (fewer at the end of the input).
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        head
    }

    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0; N];
        let got = self.take(N);
        out[..got.len()].copy_from_slice(got);
        out
    }

    pub fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.array())
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }

    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }

    pub fn bool(&mut self) -> bool {
        self.u8() & 1 != 0
    }
}

/// `n` read-write pages followed by an unmapped guard page.
pub struct GuardedPages {
    base: *mut u8,
    len: usize,
}

const PAGE: usize = 4096;

impl GuardedPages {
    pub fn new(n: usize) -> Self {
        let len = n * PAGE;
        // SAFETY: a fresh anonymous mapping; the result is checked.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len + PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED, "mmap");
        // SAFETY: the last page of the mapping made above.
        let rc =
            unsafe { libc::mprotect(base.cast::<u8>().add(len).cast(), PAGE, libc::PROT_NONE) };
        assert_eq!(rc, 0, "mprotect");
        GuardedPages {
            base: base.cast(),
            len,
        }
    }

    /// The read-write pages.
    pub fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: `len` mapped read-write bytes, alive and borrowed mutably as long as `self`.
        unsafe { std::slice::from_raw_parts_mut(self.base, self.len) }
    }
}

impl Drop for GuardedPages {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len + PAGE) };
    }
}
