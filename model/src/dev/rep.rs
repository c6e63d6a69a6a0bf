//! Representors: `doca_devinfo_rep`, `doca_dev_rep` and the filter that lists them.

use super::*;

/// `doca_devinfo_rep_filter`: which representors [`Dev::devinfo_rep_list`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RepFilter(u32);

impl RepFilter {
    /// `DOCA_DEVINFO_REP_FILTER_ALL` (0): every representor.
    pub const ALL: RepFilter = RepFilter(0);
    /// `DOCA_DEVINFO_REP_FILTER_NET` (1 << 1): representors of network functions.
    pub const NET: RepFilter = RepFilter(1 << 1);
    /// `DOCA_DEVINFO_REP_FILTER_EMULATED` (1 << 2): representors of emulated functions.
    pub const EMULATED: RepFilter = RepFilter(1 << 2);

    /// A filter from DOCA's raw bits; `INVALID_VALUE` for bits DOCA does not define.
    pub fn from_bits(bits: u32) -> Result<Self> {
        let known = Self::NET.0 | Self::EMULATED.0;
        if bits & !known != 0 {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                format!(
                    "representor filter {bits:#x} has bits outside ALL (0) / NET (0x2) / EMULATED (0x4)"
                ),
            ));
        }
        Ok(Self(bits))
    }

    /// The raw bits.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: RepFilter) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for RepFilter {
    type Output = RepFilter;

    fn bitor(self, rhs: RepFilter) -> RepFilter {
        RepFilter(self.0 | rhs.0)
    }
}

/// `doca_devinfo_rep`: a representor as listed by its managing device. Cheap to clone.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct DevinfoRep {
    pub(super) dev: Devinfo,
    pub(super) rep: usize,
}

impl fmt::Debug for DevinfoRep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.data();
        f.debug_struct("DevinfoRep")
            .field("pci_addr", &format_args!("{}", r.pci_addr))
            .field("func_type", &r.func_type)
            .field("iface_name", &r.iface_name)
            .field("dev", &format_args!("{}", self.dev.pci_addr()))
            .finish()
    }
}

impl DevinfoRep {
    pub(super) fn data(&self) -> &RepData {
        &self.dev.data().reps[self.rep]
    }

    /// `doca_devinfo_rep_get_pci_addr_str`.
    pub fn get_pci_addr_str(&self) -> String {
        self.data().pci_addr.to_string()
    }

    /// The PCI address.
    pub fn pci_addr(&self) -> PciAddr {
        self.data().pci_addr
    }

    /// `doca_devinfo_rep_is_equal_pci_addr`; `INVALID_VALUE` for a malformed address.
    pub fn pci_addr_is(&self, pci_addr: &str) -> Result<bool> {
        self.data().pci_addr.matches(pci_addr)
    }

    /// `doca_devinfo_rep_get_pci_func_type`.
    pub fn get_pci_func_type(&self) -> PciFuncType {
        self.data().func_type
    }

    /// The representor's net interface name on the Arm side.
    pub fn get_iface_name(&self) -> &str {
        &self.data().iface_name
    }

    /// The Arm-side device that manages this representor.
    pub fn dev(&self) -> &Devinfo {
        &self.dev
    }

    /// The host-side device this representor stands for, when it is in the topology. Comch
    /// isolation: a server on this representor serves clients on that device only.
    pub fn host_devinfo(&self) -> Option<Devinfo> {
        let host = self.data().represents?;
        let card = self.dev.card();
        self.dev
            .topology()
            .devinfo_list_for(Side::Host)
            .into_iter()
            .find(|d| d.pci_addr() == host && d.card() == card)
    }
}

/// `doca_dev_rep`: an open representor.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct DevRep {
    pub(super) info: DevinfoRep,
}

impl fmt::Debug for DevRep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DevRep").field(&self.info).finish()
    }
}

impl DevRep {
    /// `doca_dev_rep_open`.
    pub fn open(devinfo: &DevinfoRep) -> Result<DevRep> {
        Ok(DevRep {
            info: devinfo.clone(),
        })
    }

    /// Opens the representor of `dev` at `pci_addr` (either DOCA format): `NOT_SUPPORTED` on a
    /// host-side device, `INVALID_VALUE` for a malformed address, `NOT_FOUND` when `dev` manages
    /// no representor there.
    pub fn open_by_pci(dev: &Dev, pci_addr: &str) -> Result<DevRep> {
        let reps = dev.devinfo_rep_list(RepFilter::ALL)?;
        for rep in &reps {
            if rep.pci_addr_is(pci_addr)? {
                return DevRep::open(rep);
            }
        }
        let present: Vec<String> = reps.iter().map(DevinfoRep::get_pci_addr_str).collect();
        Err(Error::new(
            ErrorCode::NotFound,
            format!(
                "device {} manages no representor at PCI address `{pci_addr}`; its representors \
                 are at [{}]",
                dev.as_devinfo().pci_addr(),
                present.join(", ")
            ),
        ))
    }

    /// `doca_dev_rep_as_devinfo`.
    pub fn as_devinfo(&self) -> &DevinfoRep {
        &self.info
    }
}
