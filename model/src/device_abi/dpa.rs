//! The device functions of the DPA itself: memory, DPA completions and threads (the Comch ones
//! are in the parent module).

use super::*;

// ---- Memory ----

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_mmap_get_external_ptr(mmap: u32, addr: u64) -> u64 {
    with_current("doca_dpa_dev_mmap_get_external_ptr", |cur| {
        let checked = with_mmaps(cur.dpa, [mmap], |[view]| match view {
            None => Err(format!(
                "doca_dpa_dev_mmap_get_external_ptr: invalid mmap handle {mmap:#x}"
            )),
            Some(view) if !view.contains(addr, 1) => Err(format!(
                "doca_dpa_dev_mmap_get_external_ptr: address {addr:#x} is outside the mmap \
                 [{:#x}, {:#x})",
                view.base,
                view.base + view.len
            )),
            Some(_) => Ok(()),
        });
        if let Err(message) = checked {
            cur.fault(ErrorCode::InvalidValue, message);
        }
        // The soft DPA shares the host's address space: the external pointer is the address.
        addr
    })
}

// ---- DPA completions ----

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_get_completion(
    dpa_comp: u64,
    comp_element: *mut u64,
) -> c_int {
    with_current("doca_dpa_dev_get_completion", |cur| {
        let c = dpa_completion(cur, dpa_comp);
        require_owner(cur, &c.notifier, "doca_dpa_dev_get_completion");
        // SAFETY: only the attached thread polls (checked above), one activation at a time.
        match unsafe { c.ring.poll() } {
            Some(polled) => {
                let slot = cur.dpa.index_of(dpa_comp, Kind::Completion);
                let e = element::encode(
                    ElementKind::Dpa,
                    cur.dpa.id,
                    slot.unwrap_or_default(),
                    polled.pos(),
                );
                // SAFETY: the kernel passes a valid out-pointer.
                unsafe { comp_element.write(e) };
                1
            }
            None => 0,
        }
    })
}

/// Word `word` (0: type, 1: user data) of the DPA completion an element names, checked like a
/// consumer completion element.
fn completion_word(e: u64, word: usize, function: &str) -> u32 {
    with_current(function, |cur| {
        let slot = element::slot_of(cur, e, ElementKind::Dpa, function);
        let c = dpa_completion(cur, cur.dpa.handle(Kind::Completion, slot));
        require_owner(cur, &c.notifier, function);
        let polled = element::held(cur, &c.ring, e, ElementKind::Dpa, function);
        let mut w = [0u8; 4];
        if let Some(src) = polled.imm().get(word * 4..word * 4 + 4) {
            w.copy_from_slice(src);
        }
        u32::from_ne_bytes(w)
    })
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_get_completion_type(comp_element: u64) -> u32 {
    completion_word(comp_element, 0, "doca_dpa_dev_get_completion_type")
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_get_completion_user_data(comp_element: u64) -> u32 {
    completion_word(comp_element, 1, "doca_dpa_dev_get_completion_user_data")
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_completion_ack(dpa_comp: u64, num_comp: u64) {
    with_current("doca_dpa_dev_completion_ack", |cur| {
        let c = dpa_completion(cur, dpa_comp);
        require_owner(cur, &c.notifier, "doca_dpa_dev_completion_ack");
        // SAFETY: only the attached thread acks (checked above), one activation at a time.
        if let Err(e) = unsafe { c.ring.release(num_comp) } {
            cur.fault(
                ErrorCode::InvalidValue,
                format!("doca_dpa_dev_completion_ack({num_comp}): {e}"),
            );
        }
    })
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_completion_request_notification(dpa_comp: u64) {
    with_current("doca_dpa_dev_completion_request_notification", |cur| {
        let c = dpa_completion(cur, dpa_comp);
        require_owner(
            cur,
            &c.notifier,
            "doca_dpa_dev_completion_request_notification",
        );
        c.notifier
            .request(|| crate::sync_hint::has_unpolled(&c.ring));
    })
}

// ---- DPA threads ----

fn require_thread(cur: &Current<'_>, function: &str) {
    if cur.thread.is_none() {
        cur.fault(
            ErrorCode::NotPermitted,
            format!("{function} is for DPA threads; it was called from an RPC"),
        );
    }
}

#[unsafe(no_mangle)]
pub(crate) extern "C-unwind" fn doca_dpa_dev_thread_reschedule() -> ! {
    with_current("doca_dpa_dev_thread_reschedule", |cur| {
        require_thread(cur, "doca_dpa_dev_thread_reschedule");
        cur.end(Ending::Reschedule)
    })
}

#[unsafe(no_mangle)]
pub(crate) extern "C-unwind" fn doca_dpa_dev_thread_finish() -> ! {
    with_current("doca_dpa_dev_thread_finish", |cur| {
        require_thread(cur, "doca_dpa_dev_thread_finish");
        cur.end(Ending::Finish)
    })
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_thread_notify(notify_comp: u64) {
    with_current("doca_dpa_dev_thread_notify", |cur| {
        let n = lookup(
            cur,
            |d| &d.handles.notifications,
            Kind::Notification,
            notify_comp,
            "notification completion",
        );
        n.notifier.fire();
    })
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_thread_get_local_storage() -> u64 {
    with_current("doca_dpa_dev_thread_get_local_storage", |cur| {
        match cur.thread {
            Some(t) => t.local_storage.load(Ordering::Relaxed),
            None => cur.fault(
                ErrorCode::NotPermitted,
                "thread local storage read from an RPC".into(),
            ),
        }
    })
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_thread_rank() -> u32 {
    with_current("doca_dpa_dev_thread_rank", |cur| {
        cur.launch.map_or(0, |l| l.rank)
    })
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_num_threads() -> u32 {
    with_current("doca_dpa_dev_num_threads", |cur| {
        cur.launch.map_or(1, |l| l.num_threads)
    })
}

// ---- The counters of dpaintrin.h, from the soft device's clocks ----

/// Nanoseconds of the DPA timer's clock (`CLOCK_MONOTONIC`, `DOCA_CLOCK_NIC_DPA_TIMER`).
pub(crate) fn dpa_timer_nanos() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn dpakit_soft_thread_cycles() -> u64 {
    with_current("__dpa_thread_cycles", |_| dpa_timer_nanos())
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn dpakit_soft_thread_inst_ret() -> u64 {
    // Natively nothing counts instructions; ISA mode answers with the hart's count instead.
    with_current("__dpa_thread_inst_ret", |_| dpa_timer_nanos())
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn dpakit_soft_thread_time() -> u64 {
    with_current("__dpa_thread_time", |_| dpa_timer_nanos() / 1000)
}

// ---- Panics of kernels built without std (a soft app library): dpakit_dev::panic::report ----

/// `dpakit_soft_kernel_panic` (no DOCA function): the panic handler of a kernel compiled for the
/// host without std reports here. The context fails with the message and location; the
/// activation ends.
#[unsafe(no_mangle)]
pub(crate) extern "C-unwind" fn dpakit_soft_kernel_panic(
    message: *const u8,
    message_len: usize,
    file: *const u8,
    file_len: usize,
    line: u32,
    column: u32,
) -> ! {
    with_current("dpakit_soft_kernel_panic", |cur| {
        let text = |ptr: *const u8, len: usize| {
            if ptr.is_null() {
                return String::new();
            }
            // SAFETY: the kernel's panic handler passes its message and the location's file
            // name with their lengths (bounded here); a wild pointer faults inside the
            // activation, which the trap turns into a fatal error.
            let bytes = unsafe { std::slice::from_raw_parts(ptr, len.min(4096)) };
            String::from_utf8_lossy(bytes).into_owned()
        };
        let (message, file) = (text(message, message_len), text(file, file_len));
        let at = (!file.is_empty()).then_some((&file[..], line, column));
        let report = dpakit_dpa_runtime::current::panicked(&message, at);
        // The activation ends without unwinding: nothing owned may be left on this frame.
        drop((message, file));
        cur.fault(ErrorCode::Unexpected, report)
    })
}

// ---- Logging: doca_dpa_dev_log is variadic, so C (csrc/dev_log.c) formats and calls this. ----

#[unsafe(no_mangle)]
pub(crate) extern "C" fn dpakit_emu_dev_log(level: u32, message: *const c_char, len: usize) {
    // SAFETY: the C shim passes a buffer of `len` formatted bytes.
    let bytes = unsafe { std::slice::from_raw_parts(message.cast::<u8>(), len) };
    let text = String::from_utf8_lossy(bytes);
    let level_name = match level {
        20 => "CRIT",
        30 => "ERROR",
        40 => "WARNING",
        50 => "INFO",
        60 => "DEBUG",
        _ => "LOG",
    };
    if level <= crate::log_level() {
        eprint!("[dpa {level_name}] {text}");
        if !text.ends_with('\n') {
            eprintln!();
        }
    }
}
