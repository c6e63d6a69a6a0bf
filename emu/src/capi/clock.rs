//! `doca_clock.h`: a device's clocks and the host's, read alone or two at once.
//!
//! The soft device has no clock of its own: its NIC free-running clock is the host's
//! `CLOCK_MONOTONIC_RAW`, its real-time clock `CLOCK_REALTIME`, and its DPA timer
//! `CLOCK_MONOTONIC`, the clock its DPA kernels read. A cross-timestamp reads the two clocks
//! one after the other, bracketed by the second one read again: the margin is how long the
//! bracket took.

use super::registry::{self, Kind, Object};
use super::types::*;
use super::{call, out};
use crate::error::{Result, bail};

/// The clock types (`DOCA_CLOCK_*`).
const NIC_FREE_RUNNING: u64 = 0x1;
const NIC_REAL_TIME: u64 = 0x2;
const NIC_DPA_TIMER: u64 = 0x100;
const HOST_COUNTER_CYCLES: u64 = 0x10000;
const HOST_REAL_TIME: u64 = 0x20000;
const HOST_MONOTONIC: u64 = 0x40000;
const HOST_MONOTONIC_RAW: u64 = 0x80000;

/// A `struct doca_clock`: a reader of one open device's clocks.
pub(crate) struct ClockObj {
    dev: *mut std::ffi::c_void,
}

impl Object for ClockObj {
    const KIND: Kind = Kind::Clock;
}

/// The host clock behind a clock type (`None`: the cycle counter), or `INVALID_VALUE`.
fn source(clock_type: u64) -> Result<Option<libc::clockid_t>> {
    Ok(Some(match clock_type {
        NIC_FREE_RUNNING | HOST_MONOTONIC_RAW => libc::CLOCK_MONOTONIC_RAW,
        NIC_REAL_TIME | HOST_REAL_TIME => libc::CLOCK_REALTIME,
        NIC_DPA_TIMER | HOST_MONOTONIC => libc::CLOCK_MONOTONIC,
        HOST_COUNTER_CYCLES => return Ok(None),
        other => bail!(
            InvalidValue,
            "clock_type {other:#x} is not one DOCA_CLOCK_* clock (NIC_FREE_RUNNING 0x1, \
             NIC_REAL_TIME 0x2, NIC_DPA_TIMER 0x100, HOST_COUNTER_CYCLES 0x10000, HOST_REAL_TIME \
             0x20000, HOST_MONOTONIC 0x40000, HOST_MONOTONIC_RAW 0x80000)"
        ),
    }))
}

/// The host's cycle counter: the TSC on x86, the virtual counter on Arm.
fn cycles() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no preconditions.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(target_arch = "aarch64")]
    {
        let v: u64;
        // SAFETY: reads CNTVCT_EL0, which user space may read on Linux.
        unsafe { core::arch::asm!("mrs {}, cntvct_el0", out(reg) v) };
        v
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        nanos(now(libc::CLOCK_MONOTONIC_RAW)) as u64
    }
}

fn now(clock: libc::clockid_t) -> libc::timespec {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: fills a live timespec; the clocks used here always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts
}

/// One reading of clock `clock_type` (checked).
fn read(clock_type: u64) -> Result<doca_clock_timespec_t> {
    Ok(match source(clock_type)? {
        Some(clock) => doca_clock_timespec_t { ts: now(clock) },
        None => doca_clock_timespec_t { counter: cycles() },
    })
}

fn nanos(ts: libc::timespec) -> i128 {
    i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
}

fn clock<'a>(ptr: *const doca_clock) -> Result<&'a ClockObj> {
    registry::get::<ClockObj>(ptr.cast(), "clock")
}

/// The three `doca_clock_cap_nic_*_is_supported`: the soft device has every clock.
fn supported(api: &'static str, devinfo: *const doca_devinfo) -> doca_error_t {
    call(api, || super::dev::devinfo(devinfo, "devinfo").map(drop))
}

/// `doca_clock_cap_nic_free_running_is_supported`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_clock_cap_nic_free_running_is_supported(
    devinfo: *const doca_devinfo,
) -> doca_error_t {
    supported("doca_clock_cap_nic_free_running_is_supported", devinfo)
}

/// `doca_clock_cap_nic_real_time_is_supported`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_clock_cap_nic_real_time_is_supported(
    devinfo: *const doca_devinfo,
) -> doca_error_t {
    supported("doca_clock_cap_nic_real_time_is_supported", devinfo)
}

/// `doca_clock_cap_nic_dpa_timer_is_supported`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_clock_cap_nic_dpa_timer_is_supported(
    devinfo: *const doca_devinfo,
) -> doca_error_t {
    supported("doca_clock_cap_nic_dpa_timer_is_supported", devinfo)
}

/// `doca_clock_create`: the device stays open while the clock exists (its close answers
/// `IN_USE`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_clock_create(
    dev: *const doca_dev,
    clock: *mut *mut doca_clock,
) -> doca_error_t {
    call("doca_clock_create", || {
        let d = super::dev::dev(dev, "dev")?;
        super::non_null(clock, "clock")?;
        let handle = registry::register(Box::new(ClockObj {
            dev: dev.cast_mut().cast(),
        }))?;
        d.users.hold();
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(clock, "clock", handle.cast()) }
    })
}

/// `doca_clock_destroy`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_clock_destroy(clock: *mut doca_clock) -> doca_error_t {
    call("doca_clock_destroy", || {
        let c = self::clock(clock)?;
        if let Ok(d) = super::dev::dev(c.dev.cast(), "dev") {
            d.users.release();
        }
        registry::retire::<ClockObj>(clock.cast());
        Ok(())
    })
}

/// `doca_clock_get_timestamp`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_clock_get_timestamp(
    clock: *const doca_clock,
    clock_type: u64,
    clock_ts: *mut doca_clock_timespec_t,
) -> doca_error_t {
    call("doca_clock_get_timestamp", || {
        self::clock(clock)?;
        super::non_null(clock_ts, "clock_ts")?;
        let reading = read(clock_type)?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(clock_ts, "clock_ts", reading) }
    })
}

/// `doca_clock_get_crosstimestamp`: the second clock must be a device (NIC_*) clock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_clock_get_crosstimestamp(
    clock: *const doca_clock,
    primary_clock_type: u64,
    nic_clock_type: u64,
    primary_clock_ts: *mut doca_clock_timespec_t,
    nic_clock_ts: *mut doca_clock_timespec_t,
    error_margin_nsecs: *mut u64,
) -> doca_error_t {
    call("doca_clock_get_crosstimestamp", || {
        self::clock(clock)?;
        super::non_null(primary_clock_ts, "primary_clock_ts")?;
        super::non_null(nic_clock_ts, "nic_clock_ts")?;
        super::non_null(error_margin_nsecs, "error_margin_nsecs")?;
        if !matches!(
            nic_clock_type,
            NIC_FREE_RUNNING | NIC_REAL_TIME | NIC_DPA_TIMER
        ) {
            bail!(
                InvalidValue,
                "nic_clock_type {nic_clock_type:#x} is not a device clock (DOCA_CLOCK_NIC_*)"
            );
        }
        let before = now(libc::CLOCK_MONOTONIC_RAW);
        let primary = read(primary_clock_type)?;
        let nic = read(nic_clock_type)?;
        let after = now(libc::CLOCK_MONOTONIC_RAW);
        let margin = u64::try_from(nanos(after) - nanos(before)).unwrap_or(0);
        // SAFETY: the three pointers were checked non-null; writable by the C contract.
        unsafe {
            out(primary_clock_ts, "primary_clock_ts", primary)?;
            out(nic_clock_ts, "nic_clock_ts", nic)?;
            out(error_margin_nsecs, "error_margin_nsecs", margin)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(
        miri,
        ignore = "clock_gettime of these clocks and the cycle counter: miri runs neither"
    )]
    fn every_documented_clock_reads_and_others_are_refused() {
        for t in [
            NIC_FREE_RUNNING,
            NIC_REAL_TIME,
            NIC_DPA_TIMER,
            HOST_REAL_TIME,
            HOST_MONOTONIC,
            HOST_MONOTONIC_RAW,
        ] {
            // SAFETY: `ts` is the member `read` wrote for these clocks.
            let ts = unsafe { read(t).unwrap().ts };
            assert!(nanos(ts) > 0, "{t:#x}");
        }
        // SAFETY: `counter` is the member written for the cycle counter.
        let (a, b) = unsafe {
            (
                read(HOST_COUNTER_CYCLES).unwrap().counter,
                read(HOST_COUNTER_CYCLES).unwrap().counter,
            )
        };
        assert!(b >= a);
        for bad in [0, 0x3, 0x4, NIC_REAL_TIME | HOST_MONOTONIC, u64::MAX] {
            let e = read(bad).expect_err("refused");
            assert!(e.message().contains("DOCA_CLOCK_"), "{e}");
        }
    }
}
