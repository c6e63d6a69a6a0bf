//! Devices, representors and their capabilities (`doca_devinfo`, `doca_dev`, `doca_devinfo_rep`,
//! `doca_dev_rep`, and the `*_cap_*` queries).
//!
//! A [`Topology`] is the machine the soft device pretends to be: which PCI functions the host
//! sees, which device the BlueField Arm sees and which representors it manages. It is plain data;
//! the Comch, MsgQ and DPA models read it to decide what a device may do and who may talk to whom.
//! [`Topology::global`] is the default BlueField-3 that [`devinfo_list`] lists; tests build their
//! own with [`Topology::builder`] (several PFs/VFs, representors, a device without a DPA).
//!
//! Capability queries live on [`Devinfo`] (DOCA passes a `doca_devinfo` to every `cap_*`
//! function; use [`Dev::as_devinfo`] for an open device) and answer with [`crate::limits`].
//! "Is supported" queries follow DOCA: `Ok(())` when supported, `Err` with
//! [`ErrorCode::NotSupported`] when not.

use crate::error::{Error, ErrorCode};
use crate::limits;
use crate::sync::Ordering;
use crate::sync::plain::AtomicU64;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

type Result<T, E = Error> = core::result::Result<T, E>;

mod caps;
mod pci;
mod rep;
mod topology;

pub use pci::PciAddr;
pub use rep::{DevRep, DevinfoRep, RepFilter};
pub use topology::*;

#[cfg(test)]
mod tests;

// ---------------------------------------------------------------------------------------------
// Devinfo and Dev
// ---------------------------------------------------------------------------------------------

/// `doca_devinfo`: what is known about a device before opening it. Cheap to clone.
#[derive(Clone)]
pub struct Devinfo {
    topo: Arc<TopologyInner>,
    index: usize,
}

impl fmt::Debug for Devinfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.data();
        f.debug_struct("Devinfo")
            .field("pci_addr", &format_args!("{}", d.pci_addr))
            .field("side", &d.side)
            .field("iface_name", &d.iface_name)
            .field("card", &d.card)
            .field("topology", &self.topo.id)
            .finish()
    }
}

impl PartialEq for Devinfo {
    fn eq(&self, other: &Self) -> bool {
        self.topo.id == other.topo.id && self.index == other.index
    }
}

impl Eq for Devinfo {}

impl Hash for Devinfo {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.topo.id, self.index).hash(state);
    }
}

fn not_supported(info: &Devinfo, what: &str, why: &str) -> Error {
    let d = info.data();
    Error::new(
        ErrorCode::NotSupported,
        format!(
            "{what} is not supported on {:?}-side device {} ({}): {why}",
            d.side, d.pci_addr, d.iface_name
        ),
    )
}

fn cap_u32(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

impl Devinfo {
    fn data(&self) -> &DeviceData {
        &self.topo.devices[self.index]
    }

    /// `doca_devinfo_get_pci_addr_str`: `DDDD:BB:DD.F`.
    pub fn get_pci_addr_str(&self) -> String {
        self.data().pci_addr.to_string()
    }

    /// The PCI address.
    pub fn pci_addr(&self) -> PciAddr {
        self.data().pci_addr
    }

    /// `doca_devinfo_is_equal_pci_addr`: whether `pci_addr` (either DOCA format) names this
    /// device. `INVALID_VALUE` for a malformed address.
    pub fn pci_addr_is(&self, pci_addr: &str) -> Result<bool> {
        self.data().pci_addr.matches(pci_addr)
    }

    /// `doca_devinfo_get_iface_name`.
    pub fn get_iface_name(&self) -> &str {
        &self.data().iface_name
    }

    /// `doca_devinfo_get_ibdev_name`.
    pub fn get_ibdev_name(&self) -> &str {
        &self.data().ibdev_name
    }

    /// `doca_devinfo_get_pci_func_type`.
    pub fn get_pci_func_type(&self) -> PciFuncType {
        self.data().func_type
    }

    /// Which side sees this device.
    pub fn side(&self) -> Side {
        self.data().side
    }

    /// Which BlueField the device belongs to.
    pub fn card(&self) -> u32 {
        self.data().card
    }

    /// The capability set behind the `cap_*` queries.
    pub fn caps(&self) -> DevCaps {
        self.data().caps
    }

    /// Which device this is: its machine's number and its index there.
    pub(crate) fn identity(&self) -> (u64, u64) {
        (self.topo.id, self.index as u64)
    }

    /// The machine this device belongs to.
    pub fn topology(&self) -> Topology {
        Topology {
            inner: self.topo.clone(),
        }
    }
}

/// `doca_dev`: an open device. Opening one devinfo twice yields the same device (DOCA counts
/// opens of one device), so two `Dev`s compare equal when they name the same device.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Dev {
    info: Devinfo,
}

impl fmt::Debug for Dev {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Dev").field(&self.info).finish()
    }
}

impl Dev {
    /// `doca_dev_open`.
    pub fn open(devinfo: &Devinfo) -> Result<Dev> {
        Ok(Dev {
            info: devinfo.clone(),
        })
    }

    /// Opens the `side` device at `pci_addr` (either DOCA format) in `topology`: the usual
    /// "list devices, compare PCI addresses, open" loop of DOCA samples. `INVALID_VALUE` for a
    /// malformed address or one that matches several devices, `NOT_FOUND` when none matches.
    pub fn open_by_pci(topology: &Topology, side: Side, pci_addr: &str) -> Result<Dev> {
        let mut found = None;
        for info in topology.devinfo_list_for(side) {
            if info.pci_addr_is(pci_addr)? {
                if found.is_some() {
                    return Err(Error::new(
                        ErrorCode::InvalidValue,
                        format!(
                            "PCI address `{pci_addr}` matches several {side:?}-side devices; \
                             give the full DDDD:BB:DD.F address or open the Devinfo directly"
                        ),
                    ));
                }
                found = Some(info);
            }
        }
        match found {
            Some(info) => Dev::open(&info),
            None => {
                let present: Vec<String> = topology
                    .devinfo_list_for(side)
                    .iter()
                    .map(Devinfo::get_pci_addr_str)
                    .collect();
                Err(Error::new(
                    ErrorCode::NotFound,
                    format!(
                        "no {side:?}-side device at PCI address `{pci_addr}`; this topology has \
                         {side:?}-side devices at [{}]",
                        present.join(", ")
                    ),
                ))
            }
        }
    }

    /// `doca_dev_as_devinfo`.
    pub fn as_devinfo(&self) -> &Devinfo {
        &self.info
    }

    /// `doca_devinfo_rep_create_list`: the representors this (Arm-side) device manages.
    /// `NOT_SUPPORTED` on a host-side device, which exposes none.
    pub fn devinfo_rep_list(&self, filter: RepFilter) -> Result<Vec<DevinfoRep>> {
        if self.info.side() != Side::Arm {
            return Err(not_supported(
                &self.info,
                "listing representors",
                "representors are managed by the BlueField Arm-side device; open that one",
            ));
        }
        // Every representor of the soft device represents a network function.
        let wanted = filter == RepFilter::ALL || filter.contains(RepFilter::NET);
        let n = if wanted {
            self.info.data().reps.len()
        } else {
            0
        };
        Ok((0..n)
            .map(|rep| DevinfoRep {
                dev: self.info.clone(),
                rep,
            })
            .collect())
    }
}
