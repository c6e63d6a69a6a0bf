//! Running kernel code: one activation on the thread's own stack.
//!
//! A DPA thread runs its kernel from the entry until the kernel returns, calls
//! `thread_reschedule` or `thread_finish`, or faults. On the soft device the activation runs as a
//! coroutine on the thread's stack; ending it switches back to the worker and abandons the
//! kernel's frames, as the device abandons them when it releases the EU. That costs a few tens of
//! nanoseconds and allocates nothing, where unwinding would cost microseconds and allocate.
//! Destructors of the kernel's locals do not run, exactly as on the device.
//!
//! Device functions find the running activation through [`current`](super::current).

use super::DpaShared;
use super::current::{self, Current, Rank};
use super::thread_shared::ThreadShared;
use crate::error::{Error, ErrorCode, Result, err};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

pub use dpakit_abi::soft::Ending;

fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string panic payload)".into())
}

thread_local! {
    /// Where the last panic inside an activation on this thread was raised: the hook below
    /// records it, the activation's end reads it (the unwinding payload has no location).
    static PANIC_AT: std::cell::RefCell<Option<(String, u32, u32)>> =
        const { std::cell::RefCell::new(None) };
}

/// Installs, once, a panic hook that records where a kernel compiled for the host panicked
/// inside an activation, instead of printing it (the context's fatal error says it). Panics
/// anywhere else go to the hook that was there before.
pub(crate) fn install_panic_hook() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !current::in_activation() {
                return previous(info);
            }
            let at = info
                .location()
                .map(|l| (l.file().to_string(), l.line(), l.column()));
            PANIC_AT.with(|p| *p.borrow_mut() = at);
        }));
    });
}

/// Runs `body` as an activation on `stack`; returns how it ended, its value if it returned, and
/// the stack.
pub(super) fn run_on_stack<R: 'static>(
    dpa: &DpaShared,
    thread: Option<&ThreadShared>,
    launch: Option<&Rank>,
    kernel: &'static str,
    stack: DefaultStack,
    body: impl FnOnce() -> R + 'static,
) -> (Ending, Option<R>, DefaultStack) {
    let mut result: Option<R> = None;
    // The coroutine API wants a 'static closure; these pointers outlive it because the coroutine
    // has completed or been reset before this function returns.
    let dpa_ptr: *const DpaShared = dpa;
    let thread_ptr: Option<*const ThreadShared> = thread.map(|t| t as *const ThreadShared);
    let launch_ptr: Option<*const Rank> = launch.map(|r| r as *const Rank);
    let result_ptr: *mut Option<R> = &mut result;
    let mut coroutine = Coroutine::with_stack(stack, move |yielder: &Yielder<(), Ending>, ()| {
        // SAFETY: see above; the referents live on the caller's frame or in Arcs it holds.
        let (dpa, thread, launch) =
            unsafe { (&*dpa_ptr, thread_ptr.map(|t| &*t), launch_ptr.map(|r| &*r)) };
        let current = Current::new(dpa, thread, launch, kernel, yielder);
        let _guard = current::Guard::set(&current);
        let value = body();
        // SAFETY: `result` outlives the coroutine and nothing else touches it meanwhile.
        unsafe { *result_ptr = Some(value) };
        Ending::Return
    });
    // Restored afterwards: an activation that ends by suspending abandons its guard.
    let outer = current::Outer::save();
    let armed = super::trap::ArmGuard::arm(super::trap::Armed {
        handler: coroutine.trap_handler(),
        dpa: dpa_ptr,
        kernel,
    });
    let resumed = catch_unwind(AssertUnwindSafe(|| coroutine.resume(())));
    drop(armed);
    outer.restore();
    let ending = match resumed {
        Ok(CoroutineResult::Return(ending)) => ending,
        Ok(CoroutineResult::Yield(ending)) => {
            // SAFETY: the kernel's frames are abandoned without running destructors, as the
            // device abandons them; nothing on that stack is referenced from outside it.
            unsafe { coroutine.force_reset() };
            ending
        }
        Err(payload) => {
            let at = PANIC_AT.with(|p| p.borrow_mut().take());
            let at = at
                .as_ref()
                .map(|(file, line, column)| (&file[..], *line, *column));
            dpa.set_fatal(Error::new(
                ErrorCode::Unexpected,
                format!(
                    "kernel `{kernel}`: {}",
                    current::panicked(&panic_message(&*payload), at)
                ),
            ));
            Ending::Fault
        }
    };
    let stack = coroutine.into_stack();
    (ending, result, stack)
}

/// One activation of a DPA thread. The caller holds the thread's ACTIVE bit.
pub(crate) fn run_thread(dpa: &Arc<DpaShared>, thread: &ThreadShared) -> Ending {
    // SAFETY: the scheduler set ACTIVE for this thread before calling.
    let Some(stack) = (unsafe { thread.take_stack() }) else {
        dpa.set_fatal(err(
            ErrorCode::Unexpected,
            format!("DPA thread `{}` lost its stack", thread.name),
        ));
        return Ending::Fault;
    };
    let arg = thread.arg;
    let (ending, stack) = if dpa.isa.is_some() && thread.isa_entry != 0 {
        let (isa_entry, dpa_ptr, thread_ptr) = (
            thread.isa_entry,
            Arc::as_ptr(dpa),
            thread as *const ThreadShared,
        );
        let body = move || {
            // SAFETY: the DPA and the thread outlive the activation (the caller holds both).
            let (dpa, thread) = unsafe { (&*dpa_ptr, &*thread_ptr) };
            if let Some(program) = &dpa.isa {
                super::isa_mode::run(program, &thread.isa_counters, isa_entry, &[arg]);
            }
        };
        let (ending, _, stack) = run_on_stack(dpa, Some(thread), None, thread.name, stack, body);
        (ending, stack)
    } else {
        let entry = thread.entry;
        let (ending, _, stack) =
            run_on_stack(dpa, Some(thread), None, thread.name, stack, move || {
                entry(arg)
            });
        (ending, stack)
    };
    // SAFETY: still ACTIVE.
    unsafe { thread.put_stack(stack) };
    ending
}

/// Runs an RPC kernel synchronously on the calling thread.
pub(crate) fn run_rpc(
    dpa: &Arc<DpaShared>,
    kernel: &'static str,
    body: impl FnOnce() -> u64 + 'static,
) -> Result<u64> {
    // The calling host thread reads the DPA's tables while the kernel runs.
    let _reading = dpa.sched.grace.host();
    let stack = DefaultStack::new(256 * 1024)
        .map_err(|e| err(ErrorCode::NoMemory, format!("RPC stack: {e}")))?;
    let (ending, value, _stack) = run_on_stack(dpa, None, None, kernel, stack, body);
    match (ending, value) {
        (Ending::Return, Some(v)) => Ok(v),
        _ => Err(dpa.fatal().unwrap_or_else(|| {
            err(
                ErrorCode::BadState,
                format!("RPC kernel `{kernel}` ended without returning a value"),
            )
        })),
    }
}
