//! The soft device's C headers for kernels (`include/doca_dpa_dev*.h`) must declare every device
//! function of `dpakit-dev`'s list with the list's signature: this test writes one
//! `_Static_assert(__builtin_types_compatible_p(...))` per function and has clang check them
//! against the headers, once for the host and once for the DPA (riscv64imac).
//!
//! Function types are compatible in C only when their return and parameter types are (a typedef
//! is its underlying type; an enum is its underlying integer type; `const` on a pointee counts),
//! and a function the headers do not declare is an undeclared identifier.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// The C spelling of a Rust type that crosses the device ABI.
trait CType {
    fn c() -> String;
}

macro_rules! c_types {
    ($($rust:ty => $c:literal),* $(,)?) => {
        $( impl CType for $rust { fn c() -> String { $c.into() } } )*
    };
}

c_types! {
    () => "void",
    u8 => "uint8_t",
    u32 => "uint32_t",
    u64 => "uint64_t",
    usize => "size_t",
    core::ffi::c_int => "int",
    // `c_char` (an `i8` here, see below): the device API uses it only for C strings.
    core::ffi::c_char => "char",
}

// On a host where `c_char` is unsigned it is `u8`, and the table above needs another key for it.
const _: fn(core::ffi::c_char) -> i8 = |c| c;

/// `fn() -> !`'s output, so `!` can have an impl without the unstable never type.
trait FnOutput {
    type Output;
}
impl<R> FnOutput for fn() -> R {
    type Output = R;
}
type Never = <fn() -> ! as FnOutput>::Output;

// A function that never returns is `void` in C.
impl CType for Never {
    fn c() -> String {
        "void".into()
    }
}

impl<T: CType> CType for *const T {
    fn c() -> String {
        format!("const {} *", T::c())
    }
}

impl<T: CType> CType for *mut T {
    fn c() -> String {
        format!("{} *", T::c())
    }
}

/// The C return type of a function returning `F`'s output (`!` cannot be named directly).
fn c_return<F: FnOutput>() -> String
where
    F::Output: CType,
{
    F::Output::c()
}

/// One `_Static_assert` per listed function.
fn signature_checks() -> String {
    let mut c = String::from(
        "#include <doca_dpa_dev.h>\n#include <doca_dpa_dev_buf.h>\n\
         #include <doca_dpa_dev_comch_msgq.h>\n\
         #include <doca_dpa_dev_sync_event.h>\n#include <dpaintrin.h>\n\n",
    );
    let mut check = |name: &str, ret: String, args: Vec<String>, variadic: bool| {
        let mut params = args.join(", ");
        match (params.is_empty(), variadic) {
            (true, false) => params.push_str("void"),
            (false, true) => params.push_str(", ..."),
            (true, true) => unreachable!("{name}: C needs a fixed argument before `...`"),
            (false, false) => {}
        }
        writeln!(
            c,
            "_Static_assert(__builtin_types_compatible_p(__typeof__(&{name}), {ret} (*)({params})),\n\
             \t\"{name} differs from dpakit-dev's list of device functions\");"
        )
        .unwrap();
    };
    macro_rules! checks {
        ($( $(#[$doc:meta])* [$class:ident $abi:literal]
            fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?; )*) => {
            $(
                check(
                    stringify!($name),
                    c_return::<fn() $(-> $ret)?>(),
                    vec![$(<$ty as CType>::c()),*],
                    stringify!($class) == "variadic",
                );
            )*
        };
    }
    dpakit_abi::for_each_device_function!(checks);
    c
}

fn clang_check(target_args: &[&str]) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("device-api-header");
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("signature_check.c");
    std::fs::write(&source, signature_checks()).unwrap();
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let output = Command::new("clang")
        .args(target_args)
        .args(["-std=gnu11", "-Wall", "-Werror", "-fsyntax-only", "-I"])
        .arg(&include)
        .arg(&source)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run clang ({e}): `cargo xtask test` installs it, or run \
                 `apt-get install clang`"
            )
        });
    assert!(
        output.status.success(),
        "include/doca_dpa_dev*.h disagree with dpakit-dev's device functions ({target_args:?}); \
         checks in {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn headers_declare_the_listed_device_functions_on_the_host() {
    clang_check(&[]);
}

#[test]
fn headers_declare_the_listed_device_functions_on_the_dpa() {
    clang_check(&[
        "--target=riscv64-unknown-elf",
        "-march=rv64imac",
        "-mabi=lp64",
        "-ffreestanding",
    ]);
}

/// The generated checks cover every listed function, so a new one cannot be skipped silently.
#[test]
fn every_listed_function_is_checked() {
    let checks = signature_checks();
    for name in dpakit_abi::device::DEVICE_API {
        assert!(
            checks.contains(&format!("__typeof__(&{name})")),
            "{name} has no check"
        );
    }
}
