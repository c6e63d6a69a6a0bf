//! Device calls from the interpreter: an `ecall` in a runtime stub, served by the device
//! functions native mode runs.
//!
//! The stub's arguments are in the registers the RISC-V calling convention puts them in (a0–a7,
//! then the stack). Handles and numbers pass straight through; pointers are device addresses,
//! checked by the bus: inputs are copied in, out-parameters written back, and an immediate the
//! device API returns becomes readable for the kernel.

use super::bus::{DeviceBus, arg};
use super::printf;
use crate::device_symbols as native;
use dpakit_rv::MemFault;

use dpakit_rv::reg::A0;

/// Declares [`DeviceFn`], one variant per DOCA device function, in the list's order (the order
/// of `dpakit_abi::device::DEVICE_API`).
macro_rules! device_fn_enum {
    ($( $(#[$doc:meta])* [$class:ident $abi:literal]
        fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?; )*) => {
        /// A DOCA device function a runtime stub stands for.
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum DeviceFn {
            $($name,)*
        }

        impl DeviceFn {
            /// Every device function, in `DEVICE_API` order.
            pub(crate) const ALL: &[DeviceFn] = &[$(DeviceFn::$name),*];

            /// Its C name.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(DeviceFn::$name => stringify!($name),)*
                }
            }
        }
    };
}

dpakit_abi::for_each_device_function!(device_fn_enum);

/// Copies an immediate the kernel passes: at most 32 bytes are read; a longer length is passed
/// on for the device function to refuse by its rule.
fn immediate(
    bus: &mut DeviceBus<'_>,
    addr: u64,
    len: u32,
    buf: &mut [u8; 32],
) -> Result<*const u8, MemFault> {
    let n = (len as usize).min(buf.len());
    if n == 0 {
        return Ok(if addr == 0 {
            std::ptr::null()
        } else {
            buf.as_ptr()
        });
    }
    if addr == 0 {
        // Null with a length: the device function names the rule.
        return Ok(std::ptr::null());
    }
    bus.read_bytes(addr, &mut buf[..n])?;
    Ok(buf.as_ptr())
}

/// What the interpreter does with a device function's fatal error before the activation ends:
/// show it to the debugger, with the bus to read the kernel's memory through.
pub(crate) type OnFatal = dyn Fn(&mut DeviceBus<'_>, &str);

/// Serves device call `f` with the arguments in the hart's registers `x` (`instret`: its
/// retired count) and sets its return value; true when the kernel made progress by it (took a
/// message or a completion, posted a send or a copy), which starts its instruction budget
/// afresh. Functions that end the activation do not return; under the debugger `on_fatal` is
/// called first, with the bus and the error (a bad handle, say).
pub(crate) fn serve(
    f: DeviceFn,
    x: &mut [u64; 32],
    instret: u64,
    bus: &mut DeviceBus<'_>,
    on_fatal: Option<&OnFatal>,
) -> Result<bool, MemFault> {
    let Some(on_fatal) = on_fatal else {
        // SAFETY: an exclusive borrow, alive for the call.
        return unsafe { serve_call(f, x, instret, bus) };
    };
    // Both the call and the hook reach the bus through this one pointer: the hook runs inside
    // the call, which never goes on using the bus after a fatal error (it does not return).
    let bus: *mut DeviceBus<'_> = bus;
    // SAFETY: `bus` is the caller's exclusive borrow, alive for this whole call; `serve_call`
    // holds no borrow of it across a device function, where the hook runs.
    let hook = |what: &str| on_fatal(unsafe { &mut *bus }, what);
    // SAFETY: as above; the hook is the only other user, inside a device function.
    crate::current::with_fatal_hook(&hook, || unsafe { serve_call(f, x, instret, bus) })
}

/// [`serve`]'s work, given the bus as a pointer so that no borrow of it spans a device function.
///
/// # Safety
/// `bus` is valid for the call, and used by nobody else but a fatal hook run inside a device
/// function.
unsafe fn serve_call(
    f: DeviceFn,
    x: &mut [u64; 32],
    instret: u64,
    bus: *mut DeviceBus<'_>,
) -> Result<bool, MemFault> {
    use DeviceFn as D;
    // A fresh borrow per use, each ending within its statement.
    macro_rules! bus {
        () => {
            // SAFETY: `bus` is valid for this call and no other borrow of it is live here
            // (the function's contract).
            unsafe { &mut *bus }
        };
    }
    let a = |n: usize| x[A0 + n];
    let progress = matches!(
        f,
        D::doca_dpa_dev_comch_producer_post_send_imm_only | D::doca_dpa_dev_comch_producer_dma_copy
    );
    let ret: u64 = match f {
        D::doca_dpa_dev_comch_consumer_ack => {
            native::doca_dpa_dev_comch_consumer_ack(a(0), a(1) as u32);
            0
        }
        D::doca_dpa_dev_comch_consumer_get_completion => {
            let mut element = 0u64;
            let got = native::doca_dpa_dev_comch_consumer_get_completion(a(0), &mut element);
            if got != 0 {
                bus!().write_out(a(1), 8, element)?;
            }
            got as i64 as u64
        }
        D::doca_dpa_dev_comch_consumer_get_completion_imm => {
            let mut len = 0u32;
            let imm = native::doca_dpa_dev_comch_consumer_get_completion_imm(a(0), &mut len);
            bus!().grant_immediate(imm as u64, u64::from(len));
            if a(1) != 0 {
                bus!().write_out(a(1), 4, u64::from(len))?;
            }
            imm as u64
        }
        D::doca_dpa_dev_comch_consumer_get_completion_producer_id => {
            u64::from(native::doca_dpa_dev_comch_consumer_get_completion_producer_id(a(0)))
        }
        D::doca_dpa_dev_comch_consumer_completion_ack => {
            native::doca_dpa_dev_comch_consumer_completion_ack(a(0), a(1));
            0
        }
        D::doca_dpa_dev_comch_consumer_completion_request_notification => {
            native::doca_dpa_dev_comch_consumer_completion_request_notification(a(0));
            0
        }
        D::doca_dpa_dev_comch_producer_is_consumer_empty => {
            native::doca_dpa_dev_comch_producer_is_consumer_empty(a(0), a(1) as u32) as i64 as u64
        }
        D::doca_dpa_dev_comch_producer_post_send_imm_only => {
            let mut buf = [0u8; 32];
            let imm = immediate(bus!(), a(2), a(3) as u32, &mut buf)?;
            native::doca_dpa_dev_comch_producer_post_send_imm_only(
                a(0),
                a(1) as u32,
                imm,
                a(3) as u32,
                a(4) as u32,
            );
            0
        }
        D::doca_dpa_dev_comch_producer_dma_copy => {
            let (imm_len, flags) = (arg(x, bus!(), 8)? as u32, arg(x, bus!(), 9)? as u32);
            let mut buf = [0u8; 32];
            let imm = immediate(bus!(), a(7), imm_len, &mut buf)?;
            native::doca_dpa_dev_comch_producer_dma_copy(
                a(0),
                a(1) as u32,
                a(2) as u32,
                a(3),
                a(4) as u32,
                a(5),
                a(6) as usize,
                imm,
                imm_len,
                flags,
            );
            0
        }
        D::doca_dpa_dev_mmap_get_external_ptr => {
            let ptr = native::doca_dpa_dev_mmap_get_external_ptr(a(0) as u32, a(1));
            bus!().grant_mmap(a(0) as u32);
            ptr
        }
        D::doca_dpa_dev_get_completion => {
            let mut element = 0u64;
            let got = native::doca_dpa_dev_get_completion(a(0), &mut element);
            if got != 0 {
                bus!().write_out(a(1), 8, element)?;
            }
            got as i64 as u64
        }
        D::doca_dpa_dev_get_completion_type => {
            u64::from(native::doca_dpa_dev_get_completion_type(a(0)))
        }
        D::doca_dpa_dev_get_completion_user_data => {
            u64::from(native::doca_dpa_dev_get_completion_user_data(a(0)))
        }
        D::doca_dpa_dev_completion_ack => {
            native::doca_dpa_dev_completion_ack(a(0), a(1));
            0
        }
        D::doca_dpa_dev_completion_request_notification => {
            native::doca_dpa_dev_completion_request_notification(a(0));
            0
        }
        D::doca_dpa_dev_thread_notify => {
            native::doca_dpa_dev_thread_notify(a(0));
            0
        }
        D::doca_dpa_dev_thread_get_local_storage => native::doca_dpa_dev_thread_get_local_storage(),
        D::doca_dpa_dev_thread_reschedule => native::doca_dpa_dev_thread_reschedule(),
        D::doca_dpa_dev_thread_finish => native::doca_dpa_dev_thread_finish(),
        D::doca_dpa_dev_thread_rank => native::doca_dpa_dev_thread_rank().into(),
        D::doca_dpa_dev_num_threads => native::doca_dpa_dev_num_threads().into(),
        D::dpakit_soft_thread_cycles => native::dpakit_soft_thread_cycles(),
        D::dpakit_soft_thread_inst_ret => instret,
        D::dpakit_soft_thread_time => native::dpakit_soft_thread_time(),
        D::doca_dpa_dev_log => {
            let mut text = [0u8; printf::MAX_MESSAGE];
            let len = printf::format(x, bus!(), &mut text)?;
            native::dpakit_emu_dev_log(a(0) as u32, text.as_ptr().cast(), len);
            0
        }
        D::doca_dpa_dev_sync_event_get => {
            let mut value = 0u64;
            native::doca_dpa_dev_sync_event_get(a(0), &mut value);
            bus!().write_out(a(1), 8, value)?;
            0
        }
        D::doca_dpa_dev_sync_event_update_add => {
            native::doca_dpa_dev_sync_event_update_add(a(0), a(1));
            0
        }
        D::doca_dpa_dev_sync_event_update_set => {
            native::doca_dpa_dev_sync_event_update_set(a(0), a(1));
            0
        }
        D::doca_dpa_dev_sync_event_wait_gt => {
            native::doca_dpa_dev_sync_event_wait_gt(a(0), a(1), a(2));
            0
        }
    };
    x[A0] = ret;
    // A completion taken: the get functions answer 1.
    let took = matches!(
        f,
        D::doca_dpa_dev_comch_consumer_get_completion | D::doca_dpa_dev_get_completion
    ) && ret != 0;
    Ok(progress || took)
}

#[cfg(test)]
mod tests {
    use super::DeviceFn;

    #[test]
    fn the_enum_follows_the_device_api_list() {
        let names: Vec<&str> = DeviceFn::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(names, dpakit_abi::device::DEVICE_API);
    }
}
