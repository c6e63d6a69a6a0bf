//! The soft device's side of a DPA context: the settings a builder collects and applies, the
//! fatal error the context reports, and the error where the DOCA library underneath is not the
//! soft device. A leaf of `dpa`: the builder methods and queries live in `crate::soft`.

use crate::error::{Error, Result, bail, check};
use dpakit_abi::ErrorCode;
use dpakit_abi::soft::{ExecMode, SchedMode};
use dpakit_sys as sys;
use dpakit_sys::soft::SoftApi;

/// The soft settings a [`DpaBuilder`](super::DpaBuilder) collects (see `crate::soft`).
#[derive(Clone, Debug, Default)]
pub(crate) struct DpaSettings {
    pub(crate) mode: Option<SchedMode>,
    pub(crate) workers: Option<u32>,
    pub(crate) pin: Option<Vec<u32>>,
    pub(crate) exec: Option<ExecMode>,
    pub(crate) isa_image: Option<std::path::PathBuf>,
    pub(crate) isa_budget: Option<u64>,
}

fn api(what: &str) -> Result<&'static SoftApi> {
    sys::soft::api().ok_or_else(|| soft_only(what))
}

impl DpaSettings {
    /// Applies the settings to a DPA context not started yet. They describe how the soft device
    /// emulates the DPA; on DOCA's own libraries, where the DPA schedules its threads itself,
    /// they are ignored, so a program that sets them runs on hardware unchanged.
    pub(crate) fn apply(&self, dpa: *mut sys::doca_dpa) -> Result<()> {
        if sys::soft::api().is_none() {
            return Ok(());
        }
        if let Some(mode) = self.mode {
            let (raw, seed) = match mode {
                SchedMode::BusyPoll => (sys::soft::SCHED_BUSY_POLL, 0),
                SchedMode::Sleep => (sys::soft::SCHED_SLEEP, 0),
                SchedMode::Deterministic { seed } => (sys::soft::SCHED_DETERMINISTIC, seed),
            };
            let api = api("the scheduling mode")?;
            // SAFETY: a live DPA context.
            check("dpakit_soft_dpa_set_sched_mode", unsafe {
                (api.dpa_set_sched_mode)(dpa, raw, seed)
            })?;
        }
        if let Some(n) = self.workers {
            let api = api("the number of workers")?;
            // SAFETY: a live DPA context.
            check("dpakit_soft_dpa_set_num_workers", unsafe {
                (api.dpa_set_num_workers)(dpa, n)
            })?;
        }
        if let Some(exec) = self.exec {
            let api = api("the execution mode")?;
            let raw = match exec {
                ExecMode::Native => sys::soft::EXEC_NATIVE,
                ExecMode::Isa => sys::soft::EXEC_ISA,
            };
            // SAFETY: a live DPA context.
            check("dpakit_soft_dpa_set_exec_mode", unsafe {
                (api.dpa_set_exec_mode)(dpa, raw)
            })?;
        }
        if let Some(path) = &self.isa_image {
            let api = api("the DPA image")?;
            let Some(c_path) = path.to_str().and_then(|p| std::ffi::CString::new(p).ok()) else {
                bail!(
                    InvalidValue,
                    "the DPA image path {} is not UTF-8 without NUL bytes",
                    path.display()
                );
            };
            // SAFETY: a live DPA context and a NUL-terminated path.
            check("dpakit_soft_dpa_set_isa_image", unsafe {
                (api.dpa_set_isa_image)(dpa, c_path.as_ptr())
            })?;
        }
        if let Some(budget) = self.isa_budget {
            let api = api("the ISA instruction budget")?;
            // SAFETY: a live DPA context.
            check("dpakit_soft_dpa_set_isa_budget", unsafe {
                (api.dpa_set_isa_budget)(dpa, budget)
            })?;
        }
        if let Some(cpus) = &self.pin {
            let api = api("pinning workers")?;
            // SAFETY: a live DPA context and `cpus.len()` readable values.
            check("dpakit_soft_dpa_set_worker_cpus", unsafe {
                (api.dpa_set_worker_cpus)(dpa, cpus.as_ptr(), cpus.len() as u32)
            })?;
        }
        Ok(())
    }
}

/// The fatal error of DPA context `dpa`, if the soft device reports one.
pub(crate) fn dpa_error(dpa: *mut sys::doca_dpa) -> Option<Error> {
    let api = sys::soft::api()?;
    // The code alone first: a healthy context, the common case, needs no message buffer.
    // SAFETY: a live context; a NULL message asks for the code only.
    if unsafe { (api.dpa_get_error)(dpa, std::ptr::null_mut(), 0) } == sys::DOCA_SUCCESS {
        return None;
    }
    let mut buf = [0u8; 1024];
    // SAFETY: a live context and a writable buffer of its length.
    let code = unsafe { (api.dpa_get_error)(dpa, buf.as_mut_ptr().cast(), buf.len()) };
    let text = std::ffi::CStr::from_bytes_until_nul(&buf)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Some(Error::new(
        ErrorCode::from_raw(code as i32).unwrap_or(ErrorCode::Unknown),
        text,
    ))
}

/// The error of a soft-device control on a DOCA library that is not the soft device.
pub(crate) fn soft_only(what: &str) -> Error {
    Error::new(
        ErrorCode::NotSupported,
        format!("{what} is a control of the soft device, and the DOCA library in use is not it"),
    )
}
