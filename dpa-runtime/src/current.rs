//! The running activation, as device functions see it: a thread-local pointer set while kernel
//! code runs. A leaf below the activation runner and the ISA interpreter, which both use it.

use super::DpaShared;
use super::thread_shared::ThreadShared;
use crate::error::{ErrorCode, err};
use corosensei::Yielder;
use dpakit_abi::soft::Ending;
use std::cell::Cell;

/// What device functions need to know about the code calling them.
pub struct Current<'a> {
    pub dpa: &'a DpaShared,
    /// `None` in an RPC and a launched kernel.
    pub thread: Option<&'a ThreadShared>,
    /// A launched kernel's thread: its rank in the launch.
    pub launch: Option<&'a Rank>,
    /// The kernel's name, for diagnostics.
    pub kernel: &'static str,
    yielder: &'a Yielder<(), Ending>,
    /// Called with a device function's fatal error before it ends the activation: set around
    /// each device call of an ISA kernel under the debugger ([`with_fatal_hook`]).
    fatal_hook: Cell<Option<FatalHook>>,
}

/// A borrowed `dyn Fn(&str)` with its lifetime erased: [`with_fatal_hook`] keeps it set only
/// while the closure lives.
#[derive(Clone, Copy)]
struct FatalHook(*const (dyn Fn(&str) + 'static));

impl std::fmt::Debug for Current<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Current")
            .field("dpa", &self.dpa.id)
            .field("kernel", &self.kernel)
            .finish_non_exhaustive()
    }
}

/// What a launched thread's device functions see: its rank among the launch's threads, and the
/// launcher's stop request (ISA mode ends the activation on it).
#[derive(Debug)]
pub struct Rank {
    pub rank: u32,
    pub num_threads: u32,
    pub stop: std::sync::Arc<crate::sync::plain::AtomicBool>,
}

thread_local! {
    static CURRENT: Cell<*const Current<'static>> = const { Cell::new(std::ptr::null()) };
}

/// A kernel's panic as its DPA context's error reports it, the same in every mode: `panicked at
/// FILE:LINE:COLUMN: MESSAGE`.
pub fn panicked(message: &str, at: Option<(&str, u32, u32)>) -> String {
    match at {
        Some((file, line, column)) => format!("panicked at {file}:{line}:{column}: {message}"),
        None => format!("panicked: {message}"),
    }
}

/// Whether kernel code of an activation is running on this thread.
pub fn in_activation() -> bool {
    !CURRENT.with(Cell::get).is_null()
}

/// Calls `f` with the running activation. Outside one — a device function called from plain
/// host code — there is nothing sensible to do: report it and abort, as the device would fault.
#[inline]
pub fn with_current<R>(function: &str, f: impl FnOnce(&Current<'_>) -> R) -> R {
    let ptr = CURRENT.with(Cell::get);
    if ptr.is_null() {
        eprintln!(
            "dpakit soft device: {function} called outside a DPA kernel activation; device \
             functions may only run inside kernels started by a DPA thread or RPC"
        );
        std::process::abort();
    }
    // SAFETY: the pointer is set only while the activation that owns the Current runs on this
    // OS thread, and cleared before that Current goes away.
    f(unsafe { &*ptr })
}

impl<'a> Current<'a> {
    pub(super) fn new(
        dpa: &'a DpaShared,
        thread: Option<&'a ThreadShared>,
        launch: Option<&'a Rank>,
        kernel: &'static str,
        yielder: &'a Yielder<(), Ending>,
    ) -> Self {
        Self {
            dpa,
            thread,
            launch,
            kernel,
            yielder,
            fatal_hook: Cell::new(None),
        }
    }

    /// Ends the activation with `ending`; never returns.
    pub fn end(&self, ending: Ending) -> ! {
        self.yielder.suspend(ending);
        // The coroutine is reset, never resumed, after an ending suspension.
        unreachable!("an ended activation was resumed")
    }

    /// Records a fatal error naming the kernel and ends the activation. The activation's stack is
    /// left without unwinding: a caller drops what it owns (strings, vectors) before calling.
    pub fn fault(&self, code: ErrorCode, message: String) -> ! {
        if let Some(hook) = self.fatal_hook.take() {
            // SAFETY: `with_fatal_hook` sets the pointer for the span of a call that borrows the
            // closure, and this runs inside that call (on the activation's own OS thread).
            unsafe { (*hook.0)(&message) };
        }
        let error = err(code, format!("kernel `{}`: {message}", self.kernel));
        // The activation ends by switching stacks, not by unwinding: what this frame owns must
        // be dropped before, or it leaks.
        drop(message);
        self.dpa.set_fatal(error);
        self.end(Ending::Fault)
    }
}

/// Runs `call` with `hook` to be called first should a device function inside it end the
/// running activation with a fatal error ([`Current::fault`]). Outside an activation `call` just
/// runs.
pub fn with_fatal_hook<R>(hook: &dyn Fn(&str), call: impl FnOnce() -> R) -> R {
    let ptr = CURRENT.with(Cell::get);
    if ptr.is_null() {
        return call();
    }
    // SAFETY: as in `with_current`: the running activation's Current outlives this call.
    let current = unsafe { &*ptr };
    let hook: *const (dyn Fn(&str) + '_) = hook;
    // SAFETY: only the lifetime changes. The pointer is taken back below, before `hook`'s borrow
    // ends; if `call` never returns (the activation ended), the Current goes with the activation.
    let hook = unsafe {
        std::mem::transmute::<*const (dyn Fn(&str) + '_), *const (dyn Fn(&str) + 'static)>(hook)
    };
    let outer = current.fatal_hook.replace(Some(FatalHook(hook)));
    // Put back on the way out, an unwinding one too: a pointer left set would dangle.
    let _restore = Restore(&current.fatal_hook, outer);
    call()
}

/// Sets a fatal hook cell back to what it held ([`with_fatal_hook`]).
struct Restore<'c>(&'c Cell<Option<FatalHook>>, Option<FatalHook>);

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        self.0.set(self.1);
    }
}

/// Makes `current` the running activation for the lifetime of the guard.
pub(super) struct Guard;

impl Guard {
    pub(super) fn set(current: &Current<'_>) -> Self {
        CURRENT.with(|c| c.set((current as *const Current<'_>).cast()));
        Guard
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(std::ptr::null()));
    }
}

/// The pointer as it was before an activation started. An activation that ends by suspending
/// abandons its frames, its [`Guard`] included: the runner restores this afterwards, so a device
/// function called later from plain host code finds no activation instead of a dangling one.
pub(super) struct Outer(*const Current<'static>);

impl Outer {
    pub(super) fn save() -> Self {
        Self(CURRENT.with(Cell::get))
    }

    pub(super) fn restore(self) {
        CURRENT.with(|c| c.set(self.0));
    }
}
