//! Calls made from inside callbacks. A callback may call any DOCA function on any object: stop or
//! destroy the context whose callback runs or another, free or resubmit its task, progress or
//! destroy a PE, disconnect. Each callback of the target takes one byte of the input's tail
//! (read backwards, so the operations the input encodes from its head are read as before) and
//! makes the call that byte picks, on the objects the world held when the operation began.

use crate::capi::{CTX, K, World, destroy};
use dpakit_sys::*;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::ffi::c_void;

/// Calls the callbacks of one input make at most.
const MAX_CALLS: usize = 64;

thread_local! {
    /// The bytes callbacks still take, the input's last byte first.
    static SCRIPT: RefCell<VecDeque<u8>> = const { RefCell::new(VecDeque::new()) };
    /// The world's handles as of the operation that runs the callbacks.
    static HANDLES: RefCell<Vec<(K, *mut c_void)>> = const { RefCell::new(Vec::new()) };
}

/// A new input: its tail is the callbacks' script.
pub fn start(data: &[u8]) {
    SCRIPT.with(|s| *s.borrow_mut() = data.iter().rev().take(MAX_CALLS).copied().collect());
}

/// Before an operation: the handles a callback may pick from.
pub fn snapshot(w: &World) {
    HANDLES.with(|h| {
        let mut h = h.borrow_mut();
        h.clear();
        h.extend_from_slice(&w.objs);
    });
}

fn next() -> Option<u8> {
    SCRIPT.with(|s| s.borrow_mut().pop_front())
}

/// A handle of one of `kinds` the world held, picked by `sel`.
fn pick(sel: u8, kinds: &[K]) -> Option<(K, *mut c_void)> {
    HANDLES.with(|h| {
        let h = h.borrow();
        let of_kind: Vec<_> = h
            .iter()
            .filter(|(k, _)| kinds.contains(k))
            .copied()
            .collect();
        (!of_kind.is_empty()).then(|| of_kind[usize::from(sel) % of_kind.len()])
    })
}

/// The kind of context `ctx` is (on the soft device a context's handle is its object's).
fn kind_of(ctx: *mut doca_ctx) -> Option<K> {
    HANDLES.with(|h| {
        h.borrow()
            .iter()
            .find(|(k, o)| CTX.contains(k) && *o == ctx.cast())
            .map(|(k, _)| *k)
    })
}

/// One call from inside a callback. `ctx` is the context whose callback runs (NULL when the
/// callback does not say), `task` its task, `conn` its connection (each NULL if none).
///
/// # Safety
/// Called from a callback of the soft device with the handles it passed.
pub unsafe fn act(ctx: *mut doca_ctx, task: *mut doca_task, conn: *mut doca_comch_connection) {
    let Some(byte) = next() else { return };
    let sel = next().unwrap_or(0);
    if crate::TRACE.with(|t| *t) {
        eprintln!(
            "  in a callback: call {} ({sel}) on ctx {ctx:p} task {task:p} conn {conn:p}",
            byte % 12
        );
    }
    // SAFETY: handles the soft device gave out or passed to the callback (live or not: every
    // call checks them).
    unsafe {
        match byte % 12 {
            4 if !ctx.is_null() => {
                doca_ctx_stop(ctx);
            }
            5 if !ctx.is_null() => {
                if let Some(k) = kind_of(ctx) {
                    destroy(k, ctx.cast());
                }
            }
            6 => {
                if let Some((_, pe)) = pick(sel, &[K::Pe]) {
                    doca_pe_progress(pe.cast());
                }
            }
            7 => {
                if let Some((_, pe)) = pick(sel, &[K::Pe]) {
                    doca_pe_destroy(pe.cast());
                }
            }
            8 if !task.is_null() => doca_task_free(task),
            9 if !task.is_null() => {
                doca_task_submit(task);
            }
            10 => {
                if let Some((k, other)) = pick(sel, CTX) {
                    if sel % 2 == 0 {
                        doca_ctx_stop(other.cast());
                    } else {
                        destroy(k, other);
                    }
                }
            }
            11 if !conn.is_null() => {
                if let Some((_, server)) = pick(sel, &[K::Server]) {
                    doca_comch_server_disconnect(server.cast(), conn);
                }
            }
            _ => {}
        }
    }
}
