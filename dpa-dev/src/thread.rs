//! The running DPA thread: ending the activation, its rank in a launch, notifying other threads,
//! local storage.

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

/// This thread's index among the threads of its kernel launch, `0..num_threads()`
/// (`doca_dpa_dev_thread_rank`); 0 in a DPA thread or an RPC.
#[inline]
#[doc(alias = "doca_dpa_dev_thread_rank")]
pub fn rank() -> u32 {
    // SAFETY: no arguments.
    unsafe { sys::doca_dpa_dev_thread_rank() }
}

/// How many threads the current kernel launch runs (`doca_dpa_dev_num_threads`); 1 in a DPA
/// thread or an RPC.
#[inline]
#[doc(alias = "doca_dpa_dev_num_threads")]
pub fn num_threads() -> u32 {
    // SAFETY: no arguments.
    unsafe { sys::doca_dpa_dev_num_threads() }
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
/// An address that cannot hold a `T` — null or misaligned — panics (on the device the thread
/// finishes with a log line; on the soft device the context gets a fatal error naming the
/// kernel) instead of being dereferenced.
///
/// # Safety
/// `addr` must be the device address of an initialised `T` that stays alive and unchanged for
/// `'a` — for a kernel argument block, that is until the thread is destroyed.
#[inline]
pub unsafe fn arg_ref<'a, T: Pod>(addr: u64) -> &'a T {
    if !can_hold::<T>(addr) {
        panic!("thread argument is not the device address of its block (null or misaligned)");
    }
    // SAFETY: non-null and aligned (checked); the rest is upheld by the caller.
    unsafe { &*(addr as usize as *const T) }
}

/// The `T` at the thread's local storage, or `None` when the host set none (0).
///
/// A misaligned address panics, as in [`arg_ref`].
///
/// # Safety
/// A non-zero local storage must be the device address of an initialised `T` that only this
/// thread uses for `'a`.
#[inline]
pub unsafe fn local_storage_mut<'a, T: Pod>() -> Option<&'a mut T> {
    let addr = local_storage().raw();
    if addr == 0 {
        return None;
    }
    if !can_hold::<T>(addr) {
        panic!("thread local storage is not the device address of its block (misaligned)");
    }
    // SAFETY: non-null and aligned (checked); the rest is upheld by the caller.
    Some(unsafe { &mut *(addr as usize as *mut T) })
}

/// Whether `addr` is a non-null address aligned for `T`.
#[inline]
fn can_hold<T>(addr: u64) -> bool {
    addr != 0 && addr % align_of::<T>() as u64 == 0
}
