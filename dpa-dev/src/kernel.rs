//! Declaring kernels once for both the DPA and the host.

// Kernel entries are `extern "C"` on the DPA, which never unwinds, and `extern "C-unwind"` on the
// host, where the soft device ends an activation (reschedule, finish, a panic) by unwinding out of
// the kernel. A "C-unwind" entry on the device would drag in a personality routine.

/// The entry of a DPA thread kernel: one `u64` argument (usually the device address of an
/// argument block).
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
pub type ThreadEntry = extern "C" fn(u64);
/// The entry of a DPA thread kernel: one `u64` argument (usually the device address of an
/// argument block).
#[cfg(not(all(target_arch = "riscv64", target_os = "none")))]
pub type ThreadEntry = extern "C-unwind" fn(u64);

/// A typed reference to a thread kernel, made by [`thread_kernel!`](crate::thread_kernel). Host
/// code passes it where DOCA takes a `doca_dpa_func_t` (`doca_dpa_thread_set_func_arg`).
#[derive(Clone, Copy, Debug)]
pub struct ThreadKernel {
    name: &'static str,
    entry: ThreadEntry,
}

impl ThreadKernel {
    /// A reference to `entry`, exported on the device as `name`.
    pub const fn new(name: &'static str, entry: ThreadEntry) -> Self {
        Self { name, entry }
    }

    /// The kernel's symbol name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The kernel function (host builds call it on the soft device).
    pub const fn entry(&self) -> ThreadEntry {
        self.entry
    }
}

/// The signature of an RPC kernel: up to four `u64` arguments, a `u64` result.
pub trait RpcSignature: Copy + core::fmt::Debug + 'static {
    /// The arguments as a tuple.
    type Args: Copy + core::fmt::Debug;
    /// Calls the kernel.
    fn invoke(self, args: Self::Args) -> u64;
}

macro_rules! rpc_signatures {
    ($abi:literal: $( ($($a:ident),*) ),*) => { $(
        impl RpcSignature for extern $abi fn($(rpc_signatures!(@u64 $a)),*) -> u64 {
            type Args = ($(rpc_signatures!(@u64 $a),)*);
            #[allow(non_snake_case)]
            fn invoke(self, ($($a,)*): Self::Args) -> u64 {
                self($($a),*)
            }
        }
    )* };
    (@u64 $a:ident) => { u64 };
}
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
rpc_signatures!("C": (), (A), (A, B), (A, B, C), (A, B, C, D));
#[cfg(not(all(target_arch = "riscv64", target_os = "none")))]
rpc_signatures!("C-unwind": (), (A), (A, B), (A, B, C), (A, B, C, D));

/// A typed reference to an RPC kernel, made by [`rpc_kernel!`](crate::rpc_kernel). Host code
/// passes it to `doca_dpa_rpc`, which runs it once on the DPA and returns its `u64`.
#[derive(Clone, Copy, Debug)]
pub struct RpcKernel<F: RpcSignature> {
    name: &'static str,
    entry: F,
}

impl<F: RpcSignature> RpcKernel<F> {
    /// A reference to `entry`, exported on the device as `name`.
    pub const fn new(name: &'static str, entry: F) -> Self {
        Self { name, entry }
    }

    /// The kernel's symbol name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The kernel function (host builds call it on the soft device).
    pub const fn entry(&self) -> F {
        self.entry
    }
}

/// Declares a DPA thread kernel and a typed reference to it.
///
/// ```ignore
/// dpakit_dev::thread_kernel! {
///     /// Counts activations.
///     pub COUNT: fn count(arg: u64) {
///         dpakit_dev::thread::reschedule()
///     }
/// }
/// ```
///
/// On the DPA (`riscv64`, no OS) the function is exported unmangled as `count` and recorded in
/// the `.dpakit.kernels` section, which `cargo xtask build-dpa` reads; on the host it is an
/// ordinary function that the soft device runs. `COUNT` is a [`ThreadKernel`] either way.
#[macro_export]
macro_rules! thread_kernel {
    (
        $(#[$meta:meta])*
        $vis:vis $reference:ident : fn $name:ident($arg:ident : u64) $body:block
    ) => {
        $(#[$meta])*
        #[cfg(all(target_arch = "riscv64", target_os = "none"))]
        #[unsafe(no_mangle)]
        $vis extern "C" fn $name($arg: u64) $body

        $(#[$meta])*
        #[cfg(not(all(target_arch = "riscv64", target_os = "none")))]
        $vis extern "C-unwind" fn $name($arg: u64) $body

        #[doc = concat!("Typed reference to the thread kernel [`", stringify!($name), "`].")]
        $vis const $reference: $crate::ThreadKernel =
            $crate::ThreadKernel::new(stringify!($name), $name);

        $crate::__kernel_marker!(thread, $name);
    };
}

/// Declares a DPA RPC kernel (up to four `u64` arguments, returns `u64`) and a typed reference
/// to it.
///
/// ```ignore
/// dpakit_dev::rpc_kernel! {
///     /// Adds two numbers on the DPA.
///     pub ADD: fn add(a: u64, b: u64) -> u64 { a + b }
/// }
/// ```
#[macro_export]
macro_rules! rpc_kernel {
    (
        $(#[$meta:meta])*
        $vis:vis $reference:ident : fn $name:ident($($arg:ident : u64),* $(,)?) -> u64 $body:block
    ) => {
        $(#[$meta])*
        #[cfg(all(target_arch = "riscv64", target_os = "none"))]
        #[unsafe(no_mangle)]
        $vis extern "C" fn $name($($arg: u64),*) -> u64 $body

        $(#[$meta])*
        #[cfg(not(all(target_arch = "riscv64", target_os = "none")))]
        $vis extern "C-unwind" fn $name($($arg: u64),*) -> u64 $body

        #[doc = concat!("Typed reference to the RPC kernel [`", stringify!($name), "`].")]
        $vis const $reference: $crate::RpcKernel<$crate::__rpc_fn!($($arg),*)> =
            $crate::RpcKernel::new(stringify!($name), $name);

        $crate::__kernel_marker!(rpc, $name);
    };
}

/// The function pointer type of an RPC kernel with one `u64` per argument name.
#[doc(hidden)]
#[macro_export]
#[cfg(all(target_arch = "riscv64", target_os = "none"))]
macro_rules! __rpc_fn {
    ($($arg:ident),*) => { extern "C" fn($($crate::__u64_for!($arg)),*) -> u64 };
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

#[cfg(test)]
mod tests {
    crate::rpc_kernel! {
        /// Adds on the "device".
        pub ADD: fn add(a: u64, b: u64) -> u64 { a + b }
    }
    crate::rpc_kernel! {
        pub ANSWER: fn answer() -> u64 { 42 }
    }
    crate::thread_kernel! {
        pub NOTHING: fn nothing(_arg: u64) {}
    }

    use super::RpcSignature;

    #[test]
    fn references_name_and_call_the_kernel() {
        assert_eq!(ADD.name(), "add");
        assert_eq!(ADD.entry().invoke((40, 2)), 42);
        assert_eq!(ANSWER.entry().invoke(()), 42);
        assert_eq!(NOTHING.name(), "nothing");
        (NOTHING.entry())(0);
    }
}
