//! `doca_version.h`: the version the soft device reports at run time.

use std::ffi::c_char;

/// The version string of `doca_version.h` (`DOCA_VERSION_STRING`), NUL-terminated.
pub const VERSION_STRING: &str = "3.0.0000\0";

/// `doca_version_runtime`: the version of the library the program runs with, as
/// `doca_version()` gives the one it was compiled against.
#[unsafe(no_mangle)]
pub extern "C" fn doca_version_runtime() -> *const c_char {
    VERSION_STRING.as_ptr().cast()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_runtime_version_is_the_headers_version() {
        let header = include_str!(concat!(env!("DPAKIT_DOCA_INCLUDE"), "/doca_version.h"));
        let quoted = format!("\"{}\"", super::VERSION_STRING.trim_end_matches('\0'));
        assert!(
            header.contains(&format!("#define DOCA_VERSION_STRING {quoted}")),
            "doca_version.h and doca_version_runtime disagree"
        );
        // SAFETY: a static NUL-terminated string.
        let runtime = unsafe { std::ffi::CStr::from_ptr(super::doca_version_runtime()) };
        assert_eq!(runtime.to_str().unwrap(), "3.0.0000");
    }
}
