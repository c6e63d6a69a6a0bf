//! `doca_error.h`: names and descriptions of error codes.

use super::types::doca_error_t;
use crate::error::ErrorCode;
use std::ffi::{CString, c_char};
use std::sync::OnceLock;

/// `(name, description)` of every code, as C strings that live as long as the process.
fn strings() -> &'static [(CString, CString)] {
    static STRINGS: OnceLock<Vec<(CString, CString)>> = OnceLock::new();
    STRINGS.get_or_init(|| {
        ErrorCode::ALL
            .iter()
            .map(|code| {
                // Names and descriptions are literals without NUL bytes.
                (
                    CString::new(code.name()).unwrap_or_default(),
                    CString::new(code.description()).unwrap_or_default(),
                )
            })
            .collect()
    })
}

fn lookup(error: doca_error_t) -> Option<&'static (CString, CString)> {
    let code = ErrorCode::from_raw(i32::try_from(error).ok()?)?;
    strings().get(code.raw() as usize)
}

/// `doca_error_get_name`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_error_get_name(error: doca_error_t) -> *const c_char {
    match lookup(error) {
        Some((name, _)) => name.as_ptr(),
        None => c"DOCA_ERROR_UNRECOGNIZED".as_ptr(),
    }
}

/// `doca_error_get_descr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_error_get_descr(error: doca_error_t) -> *const c_char {
    match lookup(error) {
        Some((_, descr)) => descr.as_ptr(),
        None => c"unrecognized doca_error_t value".as_ptr(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn every_code_has_its_name() {
        for code in ErrorCode::ALL {
            // SAFETY: the functions return static NUL-terminated strings.
            let name = unsafe { CStr::from_ptr(doca_error_get_name(code.raw() as u32)) };
            assert_eq!(name.to_str().unwrap(), code.name());
        }
        // SAFETY: as above.
        let descr = unsafe { CStr::from_ptr(doca_error_get_descr(6)) };
        assert_eq!(descr.to_str().unwrap(), "invalid input");
        // SAFETY: as above.
        let unknown = unsafe { CStr::from_ptr(doca_error_get_name(999)) };
        assert_eq!(unknown.to_str().unwrap(), "DOCA_ERROR_UNRECOGNIZED");
    }
}
