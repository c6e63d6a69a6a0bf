//! Declaring kernels and apps once for the DPA, the soft device and the host.
//!
//! A kernel is written once. What the macros turn it into depends on the build:
//!
//! | build | kernel | app |
//! |---|---|---|
//! | DPA (`riscv64`, no OS) | exported `extern "C"` entry, recorded in `.dpakit.kernels` | dpacc makes it |
//! | host, default | exported `extern "C-unwind"` function the soft device runs | a [`SoftApp`](dpakit_abi::kernel::SoftApp) descriptor under the app's name |
//! | host, feature `doca` | an `extern` declaration: the app library (dpacc's output, or `build-dpa`'s soft app library) defines it | an `extern` declaration |
//!
//! A kernel written in C is declared to Rust with
//! [`extern_thread_kernel!`](crate::extern_thread_kernel), which only ever declares it:
//!
//! | build | C thread kernel |
//! |---|---|
//! | DPA (`riscv64`, no OS) | `extern "C"` declaration of the C entry; the C side's `DPAKIT_THREAD_KERNEL` records it in `.dpakit.kernels` |
//! | host, default | `extern "C-unwind"` declaration of the C entry compiled for the host, which the soft device runs |
//! | host, feature `doca` | `extern "C-unwind"` declaration: the app library defines it |
//!
//! Either way the macros also define a typed reference ([`ThreadKernel`](crate::ThreadKernel),
//! [`RpcKernel`](crate::RpcKernel), [`DpaApp`](crate::DpaApp)) that host code uses to name the
//! kernel or the app.

/// Declares a DPA thread kernel and a typed reference to it.
///
/// A kernel takes its argument block by reference: the body gets a `&A` (any
/// [`Pod`](crate::Pod) type), and the reference is a [`ThreadKernel<A>`](crate::ThreadKernel),
/// which the host's builders start only with an `A` (they place it in DPA memory and pass its
/// device address, the `u64` DOCA hands the kernel).
///
/// ```
/// use dpakit::abi::args::MsgqPathArgs;
/// use dpakit::{ImmMessage, MsgqPath};
/// use std::time::Duration;
///
/// dpakit::thread_kernel! {
///     /// Answers every message with its bytes reversed.
///     pub REVERSE: fn doc_reverse(args: &MsgqPathArgs) {
///         dpakit_dev::serve::serve(args, |msg, producer, flags| {
///             let mut bytes = [0u8; 32];
///             let imm = msg.imm();
///             for (i, b) in imm.iter().rev().enumerate() {
///                 bytes[i] = *b;
///             }
///             let _ = producer.post_send_imm_only(args.cpu_consumer_id, &bytes[..imm.len()], flags);
///         })
///     }
/// }
/// dpakit::dpa_app! {
///     /// The example's app.
///     pub APP = doc_thread_app [REVERSE]
/// }
///
/// # fn main() -> dpakit::Result<()> {
/// let dpa = dpakit::dpa::Dpa::builder(&dpakit::open_dpa_dev()?).app(&APP).start()?;
/// let pe = dpakit::pe::Pe::new()?;
/// let path = MsgqPath::builder(&dpa, &pe, &REVERSE).start()?;
/// path.send(b"abc")?;
/// assert_eq!(path.recv(Duration::from_secs(5))?.bytes(), b"cba");
/// # Ok(())
/// # }
/// ```
///
/// A kernel may also take the `u64` as it is (`fn name(arg: u64)`, a
/// [`ThreadKernel<RawArg>`](crate::RawArg)). `count` is exported unmangled (on the DPA and,
/// for the soft device, on the host), which is the name dpacc's host stub has on hardware.
///
/// The block is read with [`thread::arg_ref`](crate::thread::arg_ref): a null or misaligned
/// address ends the thread (a kernel started through DOCA's C API may be handed any `u64`).
#[macro_export]
macro_rules! thread_kernel {
    (
        $(#[$meta:meta])*
        $vis:vis $reference:ident : fn $name:ident($arg:ident : & $args:ty) $body:block
    ) => {
        $crate::__thread_entry!($(#[$meta])* $vis fn $name(__dpakit_arg) {
            // SAFETY: the host's typed builders start a ThreadKernel<$args> with the device
            // address of a live $args that stays unchanged while the thread exists; arg_ref
            // refuses a null or misaligned one.
            let $arg: &$args = unsafe { $crate::thread::arg_ref::<$args>(__dpakit_arg) };
            $body
        });

        #[doc = concat!("Typed reference to the thread kernel `", stringify!($name), "`.")]
        $vis const $reference: $crate::ThreadKernel<$args> = $crate::ThreadKernel::new(
            $crate::__private::cstr(concat!(stringify!($name), "\0")),
            $name,
        );

        $crate::__kernel_marker!(thread, $name);
    };
    (
        $(#[$meta:meta])*
        $vis:vis $reference:ident : fn $name:ident($arg:ident : u64) $body:block
    ) => {
        $crate::__thread_entry!($(#[$meta])* $vis fn $name($arg) $body);

        #[doc = concat!("Typed reference to the thread kernel `", stringify!($name), "`.")]
        $vis const $reference: $crate::ThreadKernel = $crate::ThreadKernel::new(
            $crate::__private::cstr(concat!(stringify!($name), "\0")),
            $name,
        );

        $crate::__kernel_marker!(thread, $name);
    };
}

/// Declares a DPA thread kernel written in C (`void name(uint64_t arg)`) and a typed reference
/// to it.
///
/// ```ignore
/// dpakit_dev::extern_thread_kernel! {
///     /// Echoes every message (c/echo.c).
///     pub ECHO_C: fn echo_c(args: &MsgqPathArgs);
/// }
/// ```
///
/// The argument is typed as for [`thread_kernel!`]: `&A` makes a `ThreadKernel<A>` (the C
/// function takes the block's device address as its `uint64_t`), `u64` a raw one. The C source
/// defines `echo_c` and marks it with `DPAKIT_THREAD_KERNEL(echo_c)` (from
/// `dpakit_kernel.h`), which records it for `cargo xtask build-dpa` on device builds; this macro
/// records nothing. The entry is declared with the ABI a [`ThreadEntry`](crate::ThreadEntry) has
/// in the build: `"C"` on the DPA, `"C-unwind"` on the host, so `ECHO_C` is a
/// [`ThreadKernel`](crate::ThreadKernel) like any other and an app lists it the same way. A C
/// function never unwinds; the soft device leaves it by switching stacks, as it leaves Rust
/// kernels.
#[macro_export]
macro_rules! extern_thread_kernel {
    (
        $(#[$meta:meta])*
        $vis:vis $reference:ident : fn $name:ident($arg:ident : & $args:ty);
    ) => {
        $crate::__extern_thread_entry!($(#[$meta])* $vis fn $name($arg));

        #[doc = concat!("Typed reference to the C thread kernel `", stringify!($name), "`.")]
        $vis const $reference: $crate::ThreadKernel<$args> = $crate::ThreadKernel::new(
            $crate::__private::cstr(concat!(stringify!($name), "\0")),
            $name,
        );
    };
    (
        $(#[$meta:meta])*
        $vis:vis $reference:ident : fn $name:ident($arg:ident : u64);
    ) => {
        $crate::__extern_thread_entry!($(#[$meta])* $vis fn $name($arg));

        #[doc = concat!("Typed reference to the C thread kernel `", stringify!($name), "`.")]
        $vis const $reference: $crate::ThreadKernel = $crate::ThreadKernel::new(
            $crate::__private::cstr(concat!(stringify!($name), "\0")),
            $name,
        );
    };
}

/// Declares a DPA RPC kernel and a typed reference to it, which `Dpa::rpc` calls with a tuple of
/// the arguments and which returns the kernel's value.
///
/// Up to four parameters, each a [`Word`](crate::abi::Word): an integer, a DOCA handle
/// ([`handles`](crate::abi::handles)), any `Pod` of at most 8 bytes; the result is one too, or
/// nothing. DOCA passes each as a `uint64_t`; the macro converts them on both sides, so neither
/// host nor kernel handles raw words.
///
/// ```
/// use dpakit::abi::handles::SyncEventHandle;
///
/// dpakit::rpc_kernel! {
///     /// Adds two numbers on the DPA.
///     pub ADD: fn doc_add(a: u64, b: u64) -> u64 { a + b }
/// }
/// dpakit::rpc_kernel! {
///     /// Typed parameters: a handle and a narrow integer; a signed result.
///     pub OFFSET: fn doc_offset(event: SyncEventHandle, by: u32) -> i64 {
///         event.raw() as i64 - i64::from(by)
///     }
/// }
/// dpakit::dpa_app! {
///     /// The example's app.
///     pub APP = doc_rpc_app [ADD, OFFSET]
/// }
///
/// # fn main() -> dpakit::Result<()> {
/// let dpa = dpakit::dpa::Dpa::builder(&dpakit::open_dpa_dev()?).app(&APP).start()?;
/// assert_eq!(dpa.rpc(&ADD, (40, 2))?, 42);
/// assert_eq!(dpa.rpc(&OFFSET, (SyncEventHandle(3), 5))?, -2);
/// # Ok(())
/// # }
/// ```
#[macro_export]
macro_rules! rpc_kernel {
    (
        $(#[$meta:meta])*
        $vis:vis $reference:ident : fn $name:ident($($arg:ident : $ty:ty),* $(,)?)
            $(-> $ret:ty)? $body:block
    ) => {
        $crate::__rpc_entry!($(#[$meta])* $vis fn $name($($arg),*) {
            // The body with the declared types; the entry converts DOCA's words on either side.
            fn typed($($arg: $ty),*) $(-> $ret)? $body
            $crate::abi::Word::into_word(typed($(<$ty as $crate::abi::Word>::from_word($arg)),*))
        });

        #[doc = concat!("Typed reference to the RPC kernel `", stringify!($name), "`.")]
        $vis const $reference: $crate::RpcKernel<
            $crate::__rpc_fn!($($arg),*),
            ($($ty,)*),
            $crate::__rpc_ret!($($ret)?),
        > = $crate::RpcKernel::new(
            $crate::__private::cstr(concat!(stringify!($name), "\0")),
            $name,
            $name as *const ::core::ffi::c_void,
        );

        $crate::__kernel_marker!(rpc, $name);
    };
}

/// An RPC kernel's declared result type: `()` when it declares none.
#[doc(hidden)]
#[macro_export]
macro_rules! __rpc_ret {
    () => {
        ()
    };
    ($ret:ty) => {
        $ret
    };
}

/// Declares a DPA app: the `struct doca_dpa_app *` symbol `$symbol` holding the listed kernels
/// and the kit's runtime kernels ([`runtime`](crate::runtime)), and a typed reference to it.
///
/// ```ignore
/// dpakit_dev::dpa_app! {
///     /// Everything this crate offers.
///     pub APP = my_app [COUNT, ADD]
/// }
/// ```
///
/// For the soft device the symbol points at a descriptor listing the kernels (the app library
/// `build-dpa` makes, and host builds, define it); on hardware dpacc makes the app from the
/// device objects and this declares nothing on the device. Host code names it through `APP`
/// ([`DpaApp`](crate::DpaApp)), which `doca_dpa_set_app` takes.
#[macro_export]
macro_rules! dpa_app {
    (
        $(#[$meta:meta])*
        $vis:vis $reference:ident = $symbol:ident [ $($kernel:expr),* $(,)? ]
    ) => {
        $crate::__dpa_app_symbol!($symbol [ $($kernel,)* $crate::runtime::CONSUMER_ACK ]);

        $(#[$meta])*
        $vis const $reference: $crate::DpaApp = $crate::DpaApp::new(
            $crate::__private::cstr(concat!(stringify!($symbol), "\0")),
            {
                fn raw() -> *mut ::core::ffi::c_void {
                    $crate::__dpa_app_raw!($symbol)
                }
                raw
            },
            $crate::runtime::CONSUMER_ACK,
        );
    };
}

// --- DPA builds -------------------------------------------------------------------------------

#[doc(hidden)]
#[macro_export]
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
macro_rules! __thread_entry {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($arg:ident) $body:block) => {
        $(#[$meta])*
        #[unsafe(no_mangle)]
        $vis extern "C" fn $name($arg: u64) $body
    };
}

#[doc(hidden)]
#[macro_export]
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
macro_rules! __rpc_entry {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident),*) $body:block) => {
        $(#[$meta])*
        #[unsafe(no_mangle)]
        $vis extern "C" fn $name($($arg: u64),*) -> u64 $body
    };
}

/// A kernel defined in C, declared with the device's entry ABI.
#[doc(hidden)]
#[macro_export]
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
macro_rules! __extern_thread_entry {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($arg:ident)) => {
        unsafe extern "C" {
            $(#[$meta])*
            $vis safe fn $name($arg: u64);
        }
    };
}

/// The function pointer type of an RPC kernel with one `u64` per argument name.
#[doc(hidden)]
#[macro_export]
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
macro_rules! __rpc_fn {
    ($($arg:ident),*) => { extern "C" fn($($crate::__u64_for!($arg)),*) -> u64 };
}

/// dpacc makes the app on the device. The device build records the app's build id (set by the
/// crate's build script, `dpakit_build::build_id`) in `.dpakit.build_id`
/// (`dpakit_abi::kernel::BUILD_ID_SECTION`): a section the linker keeps and nothing loads, where
/// the soft device's ISA mode reads it from the image and compares it with the app's.
#[doc(hidden)]
#[macro_export]
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
macro_rules! __dpa_app_symbol {
    ($symbol:ident [ $($kernel:expr),* ]) => {
        ::core::arch::global_asm!(
            ".pushsection .dpakit.build_id,\"\",@progbits",
            ".ascii \"dpakitid\"",
            ".4byte {low}",
            ".4byte {high}",
            concat!(".asciz \"", stringify!($symbol), "\""),
            ".popsection",
            low = const $crate::__private::build_id(option_env!("DPAKIT_BUILD_ID")) as u32,
            high = const ($crate::__private::build_id(option_env!("DPAKIT_BUILD_ID")) >> 32) as u32,
        );
    };
}

#[doc(hidden)]
#[macro_export]
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
macro_rules! __dpa_app_raw {
    ($symbol:ident) => {
        ::core::ptr::null_mut()
    };
}

// --- Host builds: the kernels are defined here and run on the soft device ----------------------

#[doc(hidden)]
#[macro_export]
#[cfg(not(any(all(target_arch = "riscv64", target_os = "none"), feature = "doca")))]
macro_rules! __thread_entry {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($arg:ident) $body:block) => {
        $(#[$meta])*
        #[unsafe(no_mangle)]
        $vis extern "C-unwind" fn $name($arg: u64) $body
    };
}

#[doc(hidden)]
#[macro_export]
#[cfg(not(any(all(target_arch = "riscv64", target_os = "none"), feature = "doca")))]
macro_rules! __rpc_entry {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident),*) $body:block) => {
        $(#[$meta])*
        #[unsafe(no_mangle)]
        $vis extern "C-unwind" fn $name($($arg: u64),*) -> u64 $body
    };
}

/// The app symbol and its descriptor.
#[doc(hidden)]
#[macro_export]
#[cfg(not(any(all(target_arch = "riscv64", target_os = "none"), feature = "doca")))]
macro_rules! __dpa_app_symbol {
    ($symbol:ident [ $($kernel:expr),* ]) => {
        #[doc = concat!("The app symbol `", stringify!($symbol), "` (`struct doca_dpa_app *`).")]
        #[allow(non_upper_case_globals)]
        #[unsafe(no_mangle)]
        pub static $symbol: $crate::abi::kernel::SoftAppSymbol = {
            const KERNELS: &[$crate::abi::kernel::SoftKernel] = &[$($kernel.soft_kernel()),*];
            // The file of the DPA image the build names (DPAKIT_DPA_IMAGE: `cargo xtask
            // build-dpa` sets it for the soft app library, `dpakit_build::kernel_crate` for host
            // builds), for the soft device's ISA mode.
            const IMAGE: &str = match option_env!("DPAKIT_DPA_IMAGE") {
                Some(path) => path,
                None => "",
            };
            static IMAGE_PATH: [u8; IMAGE.len() + 1] = $crate::__private::nul_terminated(IMAGE);
            // The image itself, when the crate's build script built it for this host build
            // (`dpakit_build::kernel_crate` sets the cfg beside DPAKIT_DPA_IMAGE; the soft app
            // library's build names the file without the cfg, and embeds nothing); a crate without
            // that build script embeds nothing, and is not warned about a cfg it never sets.
            #[allow(unexpected_cfgs)]
            const IMAGE_DATA: &[u8] = {
                #[cfg(dpakit_dpa_image)]
                {
                    include_bytes!(env!("DPAKIT_DPA_IMAGE"))
                }
                #[cfg(not(dpakit_dpa_image))]
                {
                    &[]
                }
            };
            // The build id of the kernel sources (the crate's build script sets it,
            // `dpakit_build::build_id`); the image built from them records the same.
            const BUILD_ID: u64 = $crate::__private::build_id(option_env!("DPAKIT_BUILD_ID"));
            static DESCRIPTOR: $crate::abi::kernel::SoftApp = $crate::abi::kernel::SoftApp::new(
                $crate::__private::cstr(concat!(stringify!($symbol), "\0")),
                KERNELS,
            )
            .with_image(&IMAGE_PATH)
            .with_image_data(IMAGE_DATA)
            .with_build_id(BUILD_ID);
            $crate::abi::kernel::SoftAppSymbol(&DESCRIPTOR)
        };
    };
}

#[doc(hidden)]
#[macro_export]
#[cfg(not(any(all(target_arch = "riscv64", target_os = "none"), feature = "doca")))]
macro_rules! __dpa_app_raw {
    ($symbol:ident) => {
        $symbol.0.cast_mut().cast()
    };
}

// --- Host builds with feature `doca`: the app library defines kernels and app -----------------

#[doc(hidden)]
#[macro_export]
#[cfg(all(
    not(all(target_arch = "riscv64", target_os = "none")),
    feature = "doca"
))]
macro_rules! __thread_entry {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($arg:ident) $body:block) => {
        unsafe extern "C-unwind" {
            $(#[$meta])*
            $vis safe fn $name($arg: u64);
        }
    };
}

#[doc(hidden)]
#[macro_export]
#[cfg(all(
    not(all(target_arch = "riscv64", target_os = "none")),
    feature = "doca"
))]
macro_rules! __rpc_entry {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident),*) $body:block) => {
        unsafe extern "C-unwind" {
            $(#[$meta])*
            $vis safe fn $name($($arg: u64),*) -> u64;
        }
    };
}

#[doc(hidden)]
#[macro_export]
#[cfg(all(
    not(all(target_arch = "riscv64", target_os = "none")),
    feature = "doca"
))]
macro_rules! __dpa_app_symbol {
    ($symbol:ident [ $($kernel:expr),* ]) => {
        unsafe extern "C" {
            #[allow(non_upper_case_globals)]
            static $symbol: *mut ::core::ffi::c_void;
        }
    };
}

#[doc(hidden)]
#[macro_export]
#[cfg(all(
    not(all(target_arch = "riscv64", target_os = "none")),
    feature = "doca"
))]
macro_rules! __dpa_app_raw {
    ($symbol:ident) => {
        // SAFETY: the app library defines the symbol as a `struct doca_dpa_app *`, set before
        // any code runs.
        unsafe { $symbol }
    };
}

/// A kernel defined in C, declared with the host's entry ABI: compiled for the host (default),
/// or defined by the app library (feature `doca`).
#[doc(hidden)]
#[macro_export]
#[cfg(not(all(target_arch = "riscv64", target_os = "none")))]
macro_rules! __extern_thread_entry {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($arg:ident)) => {
        unsafe extern "C-unwind" {
            $(#[$meta])*
            $vis safe fn $name($arg: u64);
        }
    };
}

/// The function pointer type of an RPC kernel with one `u64` per argument name.
#[doc(hidden)]
#[macro_export]
#[cfg(not(all(target_arch = "riscv64", target_os = "none")))]
macro_rules! __rpc_fn {
    ($($arg:ident),*) => { extern "C-unwind" fn($($crate::__u64_for!($arg)),*) -> u64 };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __u64_for {
    ($arg:ident) => {
        u64
    };
}

/// Records `kind:name` in the `.dpakit.kernels` section of device builds.
#[doc(hidden)]
#[macro_export]
macro_rules! __kernel_marker {
    ($kind:ident, $name:ident) => {
        #[cfg(all(target_arch = "riscv64", target_os = "none"))]
        const _: () = {
            const RECORD: &str = concat!(stringify!($kind), ":", stringify!($name), "\0");
            #[unsafe(link_section = ".dpakit.kernels")]
            #[used]
            static MARKER: [u8; RECORD.len()] = $crate::__private::str_to_array(RECORD);
        };
    };
}

#[cfg(all(test, not(feature = "doca")))]
mod tests {
    use dpakit_abi::kernel::{SoftApp, SoftKernel};

    crate::rpc_kernel! {
        /// Adds on the "device".
        pub ADD: fn dpakit_dev_test_add(a: u64, b: u64) -> u64 { a + b }
    }
    crate::rpc_kernel! {
        pub ANSWER: fn dpakit_dev_test_answer() -> u64 { 42 }
    }
    crate::thread_kernel! {
        pub NOTHING: fn dpakit_dev_test_nothing(_arg: u64) {}
    }
    crate::dpa_app! {
        pub APP = dpakit_dev_test_app [NOTHING, ADD, ANSWER]
    }

    use dpakit_abi::RpcSignature;

    /// The device function the runtime's RPC calls: these tests only describe the app, so no
    /// soft device is linked and this stand-in satisfies the linker.
    #[unsafe(no_mangle)]
    extern "C" fn doca_dpa_dev_comch_consumer_ack(_consumer: u64, _num_msgs: u32) {
        unreachable!("kernel tests never run the runtime's RPC")
    }

    #[test]
    fn references_name_and_call_the_kernel() {
        assert_eq!(ADD.name(), "dpakit_dev_test_add");
        assert_eq!(ADD.entry().invoke((40, 2)), 42);
        assert_eq!(ANSWER.entry().invoke(()), 42);
        assert_eq!(NOTHING.name(), "dpakit_dev_test_nothing");
        (NOTHING.entry())(0);
    }

    #[test]
    fn build_ids_are_read_from_hex() {
        use crate::__private::build_id;
        assert_eq!(build_id(None), 0);
        assert_eq!(build_id(Some("00000000000000ff")), 0xff);
        assert_eq!(build_id(Some("0123456789abcdef")), 0x0123_4567_89ab_cdef);
    }

    #[test]
    fn the_app_symbol_describes_every_kernel() {
        assert_eq!(APP.name(), "dpakit_dev_test_app");
        // SAFETY: the macro pointed the symbol at its static descriptor.
        let app = unsafe { &*APP.raw().cast::<SoftApp>() };
        assert_eq!(app.magic, SoftApp::MAGIC);
        assert_eq!(app.num_kernels, 4, "the three kernels and the runtime's");
        assert_eq!(app.version, SoftApp::VERSION);
        assert_eq!(app.build_id, 0, "this crate has no build id");
        // SAFETY: `kernels` points at `num_kernels` static entries.
        let kernels = unsafe { std::slice::from_raw_parts(app.kernels, 4) };
        assert_eq!(kernels[0].kind, SoftKernel::THREAD);
        assert_eq!(kernels[1].entry, ADD.func().cast_const());
        assert_eq!((kernels[2].kind, kernels[2].num_args), (SoftKernel::RPC, 0));
        assert_eq!(
            kernels[3].entry,
            crate::runtime::CONSUMER_ACK.func().cast_const()
        );
    }
}
