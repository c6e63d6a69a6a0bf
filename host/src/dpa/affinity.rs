//! EU affinity (`doca_dpa_eu_affinity`): which execution unit a DPA thread runs on.

use super::Dpa;
use crate::error::{Result, doca};
use dpakit_sys as sys;

/// `doca_dpa_eu_affinity`: names one EU of a DPA context; pass it to
/// [`DpaThreadBuilder::affinity`](super::DpaThreadBuilder::affinity).
#[doc(alias = "doca_dpa_eu_affinity")]
#[derive(Debug)]
pub struct EuAffinity {
    raw: *mut sys::doca_dpa_eu_affinity,
    eu: u32,
    _dpa: Dpa,
}

impl EuAffinity {
    /// `doca_dpa_eu_affinity_create` + `doca_dpa_eu_affinity_set`: EU `eu_id`, below
    /// [`Dpa::total_num_eus_available`].
    #[doc(alias = "doca_dpa_eu_affinity_create")]
    #[doc(alias = "doca_dpa_eu_affinity_set")]
    pub fn new(dpa: &Dpa, eu_id: u32) -> Result<EuAffinity> {
        let mut raw = std::ptr::null_mut();
        doca!(doca_dpa_eu_affinity_create(dpa.raw(), &mut raw))?;
        let affinity = EuAffinity {
            raw,
            eu: eu_id,
            _dpa: dpa.clone(),
        };
        doca!(doca_dpa_eu_affinity_set(raw, eu_id))?;
        Ok(affinity)
    }

    /// The EU it names.
    pub fn eu(&self) -> u32 {
        self.eu
    }

    pub(crate) fn raw(&self) -> *const sys::doca_dpa_eu_affinity {
        self.raw
    }
}

impl Drop for EuAffinity {
    #[doc(alias = "doca_dpa_eu_affinity_destroy")]
    fn drop(&mut self) {
        let _ = doca!(doca_dpa_eu_affinity_destroy(self.raw));
    }
}
