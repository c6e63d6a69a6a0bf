//! Host functions named by their address, for diagnostics: a `doca_dpa_func_t *` that is no
//! kernel of the app is reported as the function it is, not as a number.

use std::ffi::{CStr, c_void};

/// `name` with Rust's manglings (legacy and v0) undone and the hash left out; other names (C
/// kernels, `extern "C"` Rust kernels) as they are.
pub(crate) fn demangle(name: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(name))
}

/// The host function at `addr`, demangled, as `name` when it starts there and `name+0x…`
/// inside it; `None` when no symbol covers the address. Looks in the dynamic symbols first
/// (`dladdr`), then in the symbol table of the file that holds the address: functions of a
/// program are rarely exported. Reads that file, so for error paths only.
pub(crate) fn host_function(addr: usize) -> Option<String> {
    // SAFETY: Dl_info is plain data, valid zeroed.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address as a number and fills `info`.
    if unsafe { libc::dladdr(addr as *const c_void, &mut info) } == 0 {
        return None;
    }
    // Only an exact match: past its start, the nearest exported symbol may be another function
    // than the unexported one there.
    if !info.dli_sname.is_null() && info.dli_saddr as usize == addr {
        // SAFETY: dladdr points dli_sname at a NUL-terminated name in the loaded object.
        let name = unsafe { CStr::from_ptr(info.dli_sname) }.to_string_lossy();
        return Some(demangle(&name));
    }
    let file = if info.dli_fname.is_null() {
        None
    } else {
        // SAFETY: as above, a NUL-terminated path.
        Some(
            unsafe { CStr::from_ptr(info.dli_fname) }
                .to_string_lossy()
                .into_owned(),
        )
    };
    // The main program may be named as it was started (a relative path, or argv[0]).
    let bytes = file
        .and_then(|f| std::fs::read(f).ok())
        .or_else(|| std::fs::read("/proc/self/exe").ok())?;
    in_symbol_table(&bytes, info.dli_fbase as usize, addr)
}

/// The function of the ELF file `bytes`, loaded at `base`, that covers `addr`.
fn in_symbol_table(bytes: &[u8], base: usize, addr: usize) -> Option<String> {
    use object::{Object, ObjectKind, ObjectSymbol, SymbolKind};
    let file = object::File::parse(bytes).ok()?;
    // Symbols of a position-independent file are offsets from where it was loaded.
    let offset = match file.kind() {
        ObjectKind::Executable => 0,
        _ => base as u64,
    };
    let at = (addr as u64).checked_sub(offset)?;
    let symbol = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.address() <= at)
        .filter(|s| at < s.address() + s.size().max(1))
        .min_by_key(|s| at - s.address())?;
    Some(with_offset(
        &demangle(symbol.name().ok()?),
        (at - symbol.address()) as usize,
    ))
}

fn with_offset(name: &str, offset: usize) -> String {
    if offset == 0 {
        name.to_string()
    } else {
        format!("{name}+{offset:#x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    extern "C" fn a_function_of_this_test(x: u64) -> u64 {
        std::hint::black_box(x).wrapping_mul(31).rotate_left(7)
    }

    #[test]
    #[cfg_attr(miri, ignore = "dladdr and reading the program's own file")]
    fn a_function_is_named_by_its_address() {
        let at = a_function_of_this_test as *const () as usize;
        let name = host_function(at).unwrap();
        assert!(name.ends_with("a_function_of_this_test"), "{name}");
        assert!(!name.contains("17h"), "the hash is left out: {name}");
        assert!(
            host_function(at + 1)
                .unwrap()
                .ends_with("a_function_of_this_test+0x1")
        );
        assert_eq!(demangle("echo"), "echo");
    }
}
