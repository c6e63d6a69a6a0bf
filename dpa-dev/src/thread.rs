//! The running DPA thread: ending the activation, notifying other threads, local storage.

use crate::sys;
use dpakit_abi::Pod;
use dpakit_abi::handles::{DevPtr, NotificationCompletionHandle};

/// Ends this activation. The next completion on a context attached to the thread (or a
/// [`notify`]) runs the kernel again from its entry.
#[inline]
pub fn reschedule() -> ! {
    // SAFETY: no arguments; control does not come back.
    unsafe { sys::doca_dpa_dev_thread_reschedule() }
}

/// Ends this activation and the thread: nothing triggers it again.
#[inline]
pub fn finish() -> ! {
    // SAFETY: no arguments; control does not come back.
    unsafe { sys::doca_dpa_dev_thread_finish() }
}

/// Triggers the thread attached to a notification completion.
#[inline]
pub fn notify(target: NotificationCompletionHandle) {
    // SAFETY: plain value argument.
    unsafe { sys::doca_dpa_dev_thread_notify(target.raw()) }
}

/// The local storage address the host set with `doca_dpa_thread_set_local_storage`.
#[inline]
pub fn local_storage() -> DevPtr {
    // SAFETY: no arguments.
    DevPtr(unsafe { sys::doca_dpa_dev_thread_get_local_storage() })
}

/// Reads the `T` at device address `addr` (a thread argument or local storage).
///
/// # Safety
/// `addr` must be the device address of an initialised, suitably aligned `T` that stays alive
/// and unchanged for `'a` — for a kernel argument block, that is until the thread is destroyed.
#[inline]
pub unsafe fn arg_ref<'a, T: Pod>(addr: u64) -> &'a T {
    // SAFETY: upheld by the caller.
    unsafe { &*(addr as usize as *const T) }
}
