//! Doors for the fuzz targets (`fuzz/`) into what is private to the C API: the object
//! registry's count of live handles (how the C API targets see leaks). The transport's own
//! decoders have their doors in the wire crate's `fuzzing` module. Not part of the API: compiled only with
//! feature `fuzzing`, unstable, and nothing but the fuzz targets calls it.

/// How many objects the C API has handed out and not destroyed.
pub fn live_objects() -> usize {
    crate::capi::registry::live_count()
}

/// The C type name of the live object behind `handle`, if it is one.
pub fn live_kind(handle: *const std::ffi::c_void) -> Option<&'static str> {
    match crate::capi::registry::lookup(handle) {
        crate::capi::registry::Lookup::Live(kind) => Some(kind.c_name()),
        _ => None,
    }
}
