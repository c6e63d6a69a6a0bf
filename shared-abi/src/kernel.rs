//! How host code names DPA kernels and apps.
//!
//! A kernel is a symbol: on hardware, the host stub dpacc generates under the kernel's name; on
//! the soft device, the kernel compiled for the host, exported under the same name. Host code
//! passes its address where DOCA takes a `doca_dpa_func_t *`. An app (`struct doca_dpa_app *`)
//! is a symbol too: the one dpacc defines, or on the soft device the [`SoftApp`] descriptor that
//! `dpakit_dev::dpa_app!` defines. This module holds the typed references to both
//! ([`ThreadKernel`], [`RpcKernel`], [`DpaApp`]) and the soft device's descriptor layout.

use core::ffi::{CStr, c_char, c_void};
use core::marker::PhantomData;

// Kernel entries are `extern "C"` on the DPA, which never unwinds, and `extern "C-unwind"` on the
// host, where a panicking kernel unwinds into the soft device, which turns it into a fatal error
// on the DPA context. A "C-unwind" entry on the device would drag in a personality routine.

/// The entry of a DPA thread kernel: one `u64` argument (usually the device address of an
/// argument block).
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
pub type ThreadEntry = extern "C" fn(u64);
/// The entry of a DPA thread kernel: one `u64` argument (usually the device address of an
/// argument block).
#[cfg(not(all(target_arch = "riscv64", target_os = "none")))]
pub type ThreadEntry = extern "C-unwind" fn(u64);

/// What a thread kernel declared `fn name(arg: u64)` takes: its `u64` as the host gives it, with
/// no type behind it. Never constructed.
#[derive(Clone, Copy, Debug)]
pub enum RawArg {}

/// A typed reference to a thread kernel, made by `dpakit_dev::thread_kernel!`. Host code passes
/// it where DOCA takes a `doca_dpa_func_t *` (`doca_dpa_thread_set_func_arg`).
///
/// `A` is what the kernel takes: for a kernel declared `fn name(args: &A)`, its `u64` argument
/// is the device address of an `A`, and the host's typed builders only start it with one; for
/// one declared `fn name(arg: u64)` it is [`RawArg`].
pub struct ThreadKernel<A: 'static = RawArg> {
    name: &'static CStr,
    entry: ThreadEntry,
    args: PhantomData<fn(&A)>,
}

impl<A> Clone for ThreadKernel<A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A> Copy for ThreadKernel<A> {}

impl<A> core::fmt::Debug for ThreadKernel<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ThreadKernel")
            .field("name", &self.name)
            .field("args", &core::any::type_name::<A>())
            .finish()
    }
}

impl<A> ThreadKernel<A> {
    /// A reference to `entry`, exported as `name`, taking an `A`.
    pub const fn new(name: &'static CStr, entry: ThreadEntry) -> Self {
        Self {
            name,
            entry,
            args: PhantomData,
        }
    }

    /// The same kernel, started with a raw `u64`: nothing then says the argument is the device
    /// address of an `A`. For code that manages the argument block itself, and for tests of how
    /// a kernel treats a bad one (the soft device checks every address a kernel uses).
    pub const fn untyped(&self) -> ThreadKernel<RawArg> {
        ThreadKernel {
            name: self.name,
            entry: self.entry,
            args: PhantomData,
        }
    }

    /// The kernel's symbol name.
    pub fn name(&self) -> &'static str {
        self.name.to_str().unwrap_or("?")
    }

    /// The kernel's symbol name as a C string.
    pub const fn c_name(&self) -> &'static CStr {
        self.name
    }

    /// The kernel function.
    pub const fn entry(&self) -> ThreadEntry {
        self.entry
    }

    /// The address DOCA takes as `doca_dpa_func_t *`.
    pub fn func(&self) -> *mut c_void {
        self.entry as *mut c_void
    }

    /// The kernel's entry in a soft app descriptor.
    pub const fn soft_kernel(&self) -> SoftKernel {
        SoftKernel {
            name: self.name.as_ptr(),
            entry: self.entry as *const c_void,
            kind: SoftKernel::THREAD,
            num_args: 1,
            narrow_args: 0,
        }
    }
}

/// Most arguments an RPC kernel takes.
pub const RPC_MAX_ARGS: usize = 4;

/// Most parameters a thread kernel takes on the soft device: what a kernel launch
/// (`doca_dpa_kernel_launch_update_set`) passes after the function. DOCA documents no limit; the
/// widest kernel of DOCA's applications takes 13.
pub const KERNEL_MAX_ARGS: usize = 16;

/// The signature of an RPC kernel: up to [`RPC_MAX_ARGS`] `u64` arguments, a `u64` result.
pub trait RpcSignature: Copy + core::fmt::Debug + 'static {
    /// The arguments as a tuple.
    type Args: Copy + core::fmt::Debug;
    /// How many arguments the kernel takes.
    const NUM_ARGS: usize;
    /// Calls the kernel.
    fn invoke(self, args: Self::Args) -> u64;
    /// The arguments as an array; entries past `NUM_ARGS` are zero.
    fn to_array(args: Self::Args) -> [u64; RPC_MAX_ARGS];
}

macro_rules! rpc_signatures {
    ($abi:literal: $( $n:literal ($($a:ident),*) ),*) => { $(
        impl RpcSignature for extern $abi fn($(rpc_signatures!(@u64 $a)),*) -> u64 {
            type Args = ($(rpc_signatures!(@u64 $a),)*);
            const NUM_ARGS: usize = $n;
            #[allow(non_snake_case)]
            fn invoke(self, ($($a,)*): Self::Args) -> u64 {
                self($($a),*)
            }
            #[allow(non_snake_case, unused_mut)]
            fn to_array(($($a,)*): Self::Args) -> [u64; RPC_MAX_ARGS] {
                let mut out = [0u64; RPC_MAX_ARGS];
                let values: &[u64] = &[$($a),*];
                out[..values.len()].copy_from_slice(values);
                out
            }
        }
    )* };
    (@u64 $a:ident) => { u64 };
}
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
rpc_signatures!("C": 0 (), 1 (A), 2 (A, B), 3 (A, B, C), 4 (A, B, C, D));
#[cfg(not(all(target_arch = "riscv64", target_os = "none")))]
rpc_signatures!("C-unwind": 0 (), 1 (A), 2 (A, B), 3 (A, B, C), 4 (A, B, C, D));

/// A typed reference to an RPC kernel, made by `dpakit_dev::rpc_kernel!`. Host code passes it to
/// `doca_dpa_rpc`, which runs it once on the DPA. `F` is the entry's signature as DOCA calls it
/// (every parameter and the result a `u64`); `Args` and `Ret` are the types the kernel declared
/// ([`Word`](crate::Word)s: handles, integers, small `Pod`s), which the host passes and gets back.
#[derive(Debug)]
pub struct RpcKernel<F: RpcSignature, Args = <F as RpcSignature>::Args, Ret = u64> {
    name: &'static CStr,
    entry: F,
    /// `entry` as an address (a generic const fn cannot cast `F`).
    addr: *const c_void,
    typed: PhantomData<fn(Args) -> Ret>,
}

impl<F: RpcSignature, A, R> Clone for RpcKernel<F, A, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F: RpcSignature, A, R> Copy for RpcKernel<F, A, R> {}

// SAFETY: `addr` is the address of a function, which every thread may read and call.
unsafe impl<F: RpcSignature, A, R> Send for RpcKernel<F, A, R> {}
// SAFETY: as above; the reference is immutable.
unsafe impl<F: RpcSignature, A, R> Sync for RpcKernel<F, A, R> {}

impl<F: RpcSignature, A, R> RpcKernel<F, A, R> {
    /// A reference to `entry` (whose address is `addr`), exported as `name`.
    pub const fn new(name: &'static CStr, entry: F, addr: *const c_void) -> Self {
        Self {
            name,
            entry,
            addr,
            typed: PhantomData,
        }
    }

    /// The kernel's symbol name.
    pub fn name(&self) -> &'static str {
        self.name.to_str().unwrap_or("?")
    }

    /// The kernel function.
    pub const fn entry(&self) -> F {
        self.entry
    }

    /// The address DOCA takes as `doca_dpa_func_t *`.
    pub fn func(&self) -> *mut c_void {
        self.addr.cast_mut()
    }

    /// The kernel's entry in a soft app descriptor.
    pub const fn soft_kernel(&self) -> SoftKernel {
        SoftKernel {
            name: self.name.as_ptr(),
            entry: self.addr,
            kind: SoftKernel::RPC,
            num_args: F::NUM_ARGS as u16,
            narrow_args: 0,
        }
    }
}

/// The entry of [`DpaApp::consumer_ack`] as DOCA calls it: two words in, one out.
#[cfg(not(all(target_arch = "riscv64", target_os = "none")))]
pub type ConsumerAckFn = extern "C-unwind" fn(u64, u64) -> u64;
/// The entry of [`DpaApp::consumer_ack`] as DOCA calls it: two words in, one out.
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
pub type ConsumerAckFn = extern "C" fn(u64, u64) -> u64;

/// [`DpaApp::consumer_ack`]: (DPA consumer handle, count of receives to post) → nothing.
pub type ConsumerAck = RpcKernel<ConsumerAckFn, (crate::handles::ComchConsumerHandle, u32), ()>;

/// A typed reference to a DPA app: the `struct doca_dpa_app *` symbol that dpacc defines on
/// hardware and `dpakit_dev::dpa_app!` defines for the soft device. Made by `dpa_app!`.
#[derive(Clone, Copy, Debug)]
pub struct DpaApp {
    name: &'static CStr,
    raw: fn() -> *mut c_void,
    consumer_ack: ConsumerAck,
}

impl DpaApp {
    /// An app named `name` whose `struct doca_dpa_app *` `raw` reads, which carries the RPC
    /// `consumer_ack`.
    pub const fn new(
        name: &'static CStr,
        raw: fn() -> *mut c_void,
        consumer_ack: ConsumerAck,
    ) -> Self {
        Self {
            name,
            raw,
            consumer_ack,
        }
    }

    /// The RPC every dpakit app carries that posts receives (credits) on a DPA consumer:
    /// `(consumer handle, count)`. Host code uses it to post a consumer's first credits.
    pub const fn consumer_ack(&self) -> &ConsumerAck {
        &self.consumer_ack
    }

    /// The app's symbol name.
    pub fn name(&self) -> &'static str {
        self.name.to_str().unwrap_or("?")
    }

    /// The value of the app symbol: what `doca_dpa_set_app` takes.
    pub fn raw(&self) -> *mut c_void {
        (self.raw)()
    }
}

/// One kernel of a [`SoftApp`] (`struct dpakit_soft_kernel` in `dpakit_soft.h`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SoftKernel {
    /// The kernel's symbol name, NUL-terminated.
    pub name: *const c_char,
    /// The host-compiled kernel: `void (uint64_t)` for a thread kernel,
    /// `uint64_t (uint64_t × num_args)` for an RPC.
    pub entry: *const c_void,
    /// [`SoftKernel::THREAD`] or [`SoftKernel::RPC`].
    pub kind: u32,
    /// Arguments the kernel takes: a thread kernel run by `doca_dpa_thread`s takes 1, a
    /// launched one up to [`KERNEL_MAX_ARGS`], an RPC up to [`RPC_MAX_ARGS`].
    pub num_args: u16,
    /// Bit `i` set: argument `i` is a 32-bit integer, read as one from a variadic launch; the
    /// others are 64-bit. (The two halves were one `u32` count before: a count below 2^16 reads
    /// the same, with no narrow argument.)
    pub narrow_args: u16,
}

impl SoftKernel {
    /// A thread kernel (`DPAKIT_SOFT_KERNEL_THREAD`).
    pub const THREAD: u32 = 0;
    /// An RPC kernel (`DPAKIT_SOFT_KERNEL_RPC`).
    pub const RPC: u32 = 1;
}

/// What `struct doca_dpa_app *` points to on the soft device: the app's name and kernels, the
/// same information dpacc bakes into its app on hardware.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SoftApp {
    /// [`SoftApp::MAGIC`]: tells a soft app from a stray pointer.
    pub magic: u64,
    /// [`SoftApp::VERSION`] of this layout.
    pub version: u32,
    /// Entries in `kernels`.
    pub num_kernels: u32,
    /// The app's symbol name, NUL-terminated.
    pub name: *const c_char,
    /// The kernels.
    pub kernels: *const SoftKernel,
    /// Path of the app's DPA image (the riscv64 executable `cargo xtask build-dpa` links), which
    /// the soft device's ISA mode runs; NUL-terminated, or null when the app names none.
    /// Version 2 and later.
    pub image: *const c_char,
    /// The build id of the kernel sources these host-compiled kernels come from (the kernel
    /// crate's build script computes it, `dpakit_build::build_id`); the DPA image built from the
    /// same sources carries the same id, and ISA mode refuses an image whose id differs. 0: none
    /// (nothing is checked). Version 3 and later.
    pub build_id: u64,
    /// The app's DPA image itself, embedded in the program (the kernel crate's build script
    /// builds it, `dpakit_build::kernel_crate`): what ISA mode runs before `image` is looked
    /// at. Null when not embedded. Version 4 and later.
    pub image_data: *const u8,
    /// Bytes at `image_data`. Version 4 and later.
    pub image_size: u64,
}

// SAFETY: the descriptor is immutable and points only to immutable statics (names, functions).
unsafe impl Sync for SoftApp {}
// SAFETY: as above.
unsafe impl Sync for SoftKernel {}

impl SoftApp {
    /// `DPAKIT_SOFT_APP_MAGIC`: "dpakitap" in ASCII.
    pub const MAGIC: u64 = u64::from_be_bytes(*b"dpakitap");
    /// `DPAKIT_SOFT_APP_VERSION`.
    pub const VERSION: u32 = 4;
    /// The first version, without `image` and `build_id`: still read.
    pub const VERSION_1: u32 = 1;
    /// The second version, without `build_id`: still read.
    pub const VERSION_2: u32 = 2;
    /// The third version, without the embedded image: still read.
    pub const VERSION_3: u32 = 3;

    /// The descriptor of app `name` holding `kernels`.
    pub const fn new(name: &'static CStr, kernels: &'static [SoftKernel]) -> Self {
        Self {
            magic: Self::MAGIC,
            version: Self::VERSION,
            num_kernels: kernels.len() as u32,
            name: name.as_ptr(),
            kernels: kernels.as_ptr(),
            image: core::ptr::null(),
            build_id: 0,
            image_data: core::ptr::null(),
            image_size: 0,
        }
    }

    /// The descriptor carrying the app's DPA image, `data` (empty: none embedded).
    pub const fn with_image_data(mut self, data: &'static [u8]) -> Self {
        if !data.is_empty() {
            self.image_data = data.as_ptr();
            self.image_size = data.len() as u64;
        }
        self
    }

    /// The descriptor naming `image` (a NUL-terminated path) as the app's DPA image; an empty
    /// string names none.
    pub const fn with_image(mut self, image: &'static [u8]) -> Self {
        if image.len() > 1 {
            self.image = image.as_ptr().cast();
        }
        self
    }

    /// The descriptor carrying build id `id` (0: none).
    pub const fn with_build_id(mut self, id: u64) -> Self {
        self.build_id = id;
        self
    }
}

/// The section of a DPA image (and of the device objects it is linked from) where `dpa_app!`
/// records each app's build id, the id [`SoftApp::build_id`] carries on the host: one record per
/// app, [`BUILD_ID_MAGIC`], the id (little-endian `u64`), then the app's symbol name,
/// NUL-terminated. Not loaded: the soft device reads it from the file.
pub const BUILD_ID_SECTION: &str = ".dpakit.build_id";

/// The first bytes of each record of [`BUILD_ID_SECTION`].
pub const BUILD_ID_MAGIC: [u8; 8] = *b"dpakitid";

/// The records in the bytes of a [`BUILD_ID_SECTION`]: each app's symbol name and build id. Zero
/// bytes between records (alignment) are skipped; a malformed record ends the iteration with an
/// error saying what is wrong.
pub fn build_id_records(bytes: &[u8]) -> BuildIdRecords<'_> {
    BuildIdRecords { rest: bytes }
}

/// The iterator [`build_id_records`] returns.
#[derive(Clone, Debug)]
pub struct BuildIdRecords<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for BuildIdRecords<'a> {
    type Item = Result<(&'a str, u64), &'static str>;

    fn next(&mut self) -> Option<Self::Item> {
        while let [0, rest @ ..] = self.rest {
            self.rest = rest;
        }
        if self.rest.is_empty() {
            return None;
        }
        let record = (|| {
            let rest = self
                .rest
                .strip_prefix(&BUILD_ID_MAGIC)
                .ok_or("a record without its magic")?;
            let (id, rest) = rest.split_first_chunk::<8>().ok_or("a record cut short")?;
            let end = rest
                .iter()
                .position(|&b| b == 0)
                .ok_or("an app name without its NUL")?;
            let name =
                core::str::from_utf8(&rest[..end]).map_err(|_| "an app name that is not UTF-8")?;
            Ok((name, u64::from_le_bytes(*id), &rest[end + 1..]))
        })();
        match record {
            Ok((name, id, rest)) => {
                self.rest = rest;
                Some(Ok((name, id)))
            }
            Err(why) => {
                self.rest = &[];
                Some(Err(why))
            }
        }
    }
}

/// The app symbol itself: a `struct doca_dpa_app *` pointing at a [`SoftApp`].
#[repr(transparent)]
#[derive(Debug)]
pub struct SoftAppSymbol(pub *const SoftApp);

// SAFETY: points to an immutable static descriptor.
unsafe impl Sync for SoftAppSymbol {}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C-unwind" fn add(a: u64, b: u64) -> u64 {
        a + b
    }
    extern "C-unwind" fn nothing(_arg: u64) {}

    #[test]
    fn references_name_and_describe_the_kernel() {
        // One cast per function: two casts of one function need not give one address (miri
        // gives different ones).
        let add: extern "C-unwind" fn(u64, u64) -> u64 = add;
        let nothing: extern "C-unwind" fn(u64) = nothing;
        let rpc: RpcKernel<extern "C-unwind" fn(u64, u64) -> u64> =
            RpcKernel::new(c"add", add, add as *const c_void);
        assert_eq!(rpc.name(), "add");
        assert_eq!(rpc.entry().invoke((40, 2)), 42);
        let d = rpc.soft_kernel();
        assert_eq!((d.kind, d.num_args), (SoftKernel::RPC, 2));
        assert_eq!(d.entry, add as *const c_void);
        let thread: ThreadKernel = ThreadKernel::new(c"nothing", nothing);
        assert_eq!(thread.soft_kernel().kind, SoftKernel::THREAD);
        assert_eq!(thread.func(), nothing as *mut c_void);
        assert_eq!(
            <extern "C-unwind" fn(u64, u64) -> u64 as RpcSignature>::to_array((1, 2)),
            [1, 2, 0, 0]
        );
    }

    #[test]
    fn build_id_records_name_their_app_and_id() {
        fn record(app: &str, id: u64) -> std::vec::Vec<u8> {
            let mut r = BUILD_ID_MAGIC.to_vec();
            r.extend_from_slice(&id.to_le_bytes());
            r.extend_from_slice(app.as_bytes());
            r.push(0);
            r
        }
        let mut bytes = record("my_app", 0x0123_4567_89ab_cdef);
        bytes.extend([0, 0, 0]);
        bytes.extend(record("other", 7));
        let records: std::vec::Vec<_> = build_id_records(&bytes).collect();
        assert_eq!(
            records,
            [Ok(("my_app", 0x0123_4567_89ab_cdef)), Ok(("other", 7))]
        );
        assert_eq!(build_id_records(&[]).count(), 0);
        for (bad, why) in [
            (
                &b"dpakitix\0\0\0\0\0\0\0\0a\0"[..],
                "a record without its magic",
            ),
            (&record("a", 1)[..12], "a record cut short"),
            (&record("a", 1)[..17], "an app name without its NUL"),
        ] {
            let mut records = build_id_records(bad);
            assert_eq!(records.next(), Some(Err(why)));
            assert_eq!(records.next(), None);
        }
    }

    #[test]
    fn magic_spells_the_kit() {
        assert_eq!(&SoftApp::MAGIC.to_be_bytes(), b"dpakitap");
    }
}
