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

// ---------------------------------------------------------------------------------------------
// PCI addresses
// ---------------------------------------------------------------------------------------------

/// A PCI address, `domain:bus:device.function`, printed as DOCA prints it (`0000:03:00.0`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PciAddr {
    domain: u16,
    bus: u8,
    device: u8,
    function: u8,
}

impl PciAddr {
    /// An address from its parts; `device` must be below 32 and `function` below 8, as PCI
    /// encodes them in 5 and 3 bits.
    pub fn new(domain: u16, bus: u8, device: u8, function: u8) -> Result<Self> {
        if device > 0x1f || function > 7 {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                format!(
                    "PCI device {device:#x} / function {function:#x} out of range: a device \
                     number is 0..=0x1f and a function number 0..=7"
                ),
            ));
        }
        Ok(Self::raw(domain, bus, device, function))
    }

    const fn raw(domain: u16, bus: u8, device: u8, function: u8) -> Self {
        Self {
            domain,
            bus,
            device,
            function,
        }
    }

    /// Parses either of DOCA's formats: `domain:bus:device.function` (`0000:03:00.0`) or
    /// `bus:device.function` (`03:00.0`, domain 0). Hex digits, either case.
    pub fn parse(s: &str) -> Result<Self> {
        parse_pci(s).map(|(domain, addr)| Self {
            domain: domain.unwrap_or(0),
            ..addr
        })
    }

    /// The PCI domain (segment).
    pub fn domain(&self) -> u16 {
        self.domain
    }

    /// The bus number.
    pub fn bus(&self) -> u8 {
        self.bus
    }

    /// The device number (0..=0x1f).
    pub fn device(&self) -> u8 {
        self.device
    }

    /// The function number (0..=7).
    pub fn function(&self) -> u8 {
        self.function
    }

    /// Whether `s` names this address, in either of DOCA's formats. A `bus:device.function`
    /// string matches whatever the domain is, as `doca_devinfo_is_equal_pci_addr` does.
    /// A malformed string is `INVALID_VALUE`, never a silent `false`.
    pub fn matches(&self, s: &str) -> Result<bool> {
        let (domain, addr) = parse_pci(s)?;
        let same_bdf =
            (addr.bus, addr.device, addr.function) == (self.bus, self.device, self.function);
        Ok(same_bdf && domain.is_none_or(|d| d == self.domain))
    }
}

impl fmt::Display for PciAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

impl fmt::Debug for PciAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PciAddr({self})")
    }
}

impl FromStr for PciAddr {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

fn bad_pci(s: &str) -> Error {
    Error::new(
        ErrorCode::InvalidValue,
        format!(
            "`{s}` is not a PCI address: use DOCA's `DDDD:BB:DD.F` (e.g. 0000:03:00.0) or \
             `BB:DD.F` (e.g. 03:00.0) format, hex digits, device <= 1f, function <= 7"
        ),
    )
}

/// Parses `s`; the domain is `None` in the short format.
fn parse_pci(s: &str) -> Result<(Option<u16>, PciAddr)> {
    fn hex(part: &str, digits: usize) -> Option<u32> {
        if part.len() != digits || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(part, 16).ok()
    }
    let parse = || -> Option<(Option<u16>, PciAddr)> {
        let parts: Vec<&str> = s.split(':').collect();
        let (domain, bus, devfn) = match parts.as_slice() {
            [domain, bus, devfn] => (Some(hex(domain, 4)? as u16), *bus, *devfn),
            [bus, devfn] => (None, *bus, *devfn),
            _ => return None,
        };
        let (device, function) = devfn.split_once('.')?;
        let (bus, device, function) = (hex(bus, 2)?, hex(device, 2)?, hex(function, 1)?);
        if device > 0x1f || function > 7 {
            return None;
        }
        Some((
            domain,
            PciAddr::raw(0, bus as u8, device as u8, function as u8),
        ))
    };
    parse().ok_or_else(|| bad_pci(s))
}

// ---------------------------------------------------------------------------------------------
// Topology (data only)
// ---------------------------------------------------------------------------------------------

/// Which processor a device is seen from: the host (x86) or the BlueField's Arm cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The host: Comch clients, host-side MsgQ and DPA users.
    Host,
    /// The BlueField Arm: Comch servers and representors.
    Arm,
}

/// `doca_pci_func_type`, numbered as DOCA numbers it.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PciFuncType {
    /// `DOCA_PCI_FUNC_TYPE_PF` (0): physical function.
    Pf = 0,
    /// `DOCA_PCI_FUNC_TYPE_VF` (1): virtual function.
    Vf = 1,
    /// `DOCA_PCI_FUNC_TYPE_SF` (2): sub-function.
    Sf = 2,
}

/// What a device can do. The `cap_*` queries read this; a feature that is off answers
/// `NOT_SUPPORTED`, as DOCA answers on a device that lacks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DevCaps {
    /// The device exposes a DPA (`doca_dpa_cap_is_supported`).
    pub dpa: bool,
    /// Comch MsgQ between the CPU and the DPA (needs `dpa` as well).
    pub msgq: bool,
    /// Comch control path: a client on the host side, a server on the Arm side.
    pub comch: bool,
    /// Comch fast path: producers and consumers (`doca_comch_{producer,consumer}_cap_is_supported`).
    pub comch_fast_path: bool,
    /// `doca_mmap_cap_is_export_pci_supported`.
    pub mmap_export_pci: bool,
    /// `doca_mmap_cap_is_create_from_export_pci_supported`.
    pub mmap_create_from_export_pci: bool,
}

impl DevCaps {
    /// A BlueField-3 function: everything the soft device models.
    pub const BLUEFIELD3: DevCaps = DevCaps {
        dpa: true,
        msgq: true,
        comch: true,
        comch_fast_path: true,
        mmap_export_pci: true,
        mmap_create_from_export_pci: true,
    };

    /// Nothing at all (a plain NIC function), for tests of capability checks.
    pub const NONE: DevCaps = DevCaps {
        dpa: false,
        msgq: false,
        comch: false,
        comch_fast_path: false,
        mmap_export_pci: false,
        mmap_create_from_export_pci: false,
    };
}

impl Default for DevCaps {
    fn default() -> Self {
        Self::BLUEFIELD3
    }
}

/// One representor in a [`DeviceSpec`]: a function on the host side seen from the Arm side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepSpec {
    pci_addr: String,
    func_type: PciFuncType,
    iface_name: Option<String>,
    represents: Option<String>,
}

impl RepSpec {
    /// A representor of a physical function at `pci_addr`.
    pub fn pf(pci_addr: &str) -> Self {
        Self::new(pci_addr, PciFuncType::Pf)
    }

    /// A representor of a virtual function at `pci_addr`.
    pub fn vf(pci_addr: &str) -> Self {
        Self::new(pci_addr, PciFuncType::Vf)
    }

    /// A representor of a sub-function at `pci_addr`.
    pub fn sf(pci_addr: &str) -> Self {
        Self::new(pci_addr, PciFuncType::Sf)
    }

    fn new(pci_addr: &str, func_type: PciFuncType) -> Self {
        Self {
            pci_addr: pci_addr.to_owned(),
            func_type,
            iface_name: None,
            represents: None,
        }
    }

    /// The representor's net interface name on the Arm side (default `pf<card>hpf` / `pf<card>vf<n>`).
    pub fn iface_name(mut self, name: &str) -> Self {
        self.iface_name = Some(name.to_owned());
        self
    }

    /// The host-side device (in the same topology and card) this representor stands for. Comch
    /// servers on this representor reach clients on that device and no other.
    pub fn represents(mut self, host_pci_addr: &str) -> Self {
        self.represents = Some(host_pci_addr.to_owned());
        self
    }
}

/// One device in a [`Topology`]: a PCI function seen from one [`Side`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceSpec {
    side: Side,
    pci_addr: String,
    func_type: PciFuncType,
    iface_name: Option<String>,
    ibdev_name: Option<String>,
    card: u32,
    caps: DevCaps,
    representors: Vec<RepSpec>,
}

impl DeviceSpec {
    /// A host-side physical function of BlueField-3 capabilities.
    pub fn host(pci_addr: &str) -> Self {
        Self::new(Side::Host, pci_addr)
    }

    /// The Arm-side device of a BlueField (manages representors, runs Comch servers).
    pub fn arm(pci_addr: &str) -> Self {
        Self::new(Side::Arm, pci_addr)
    }

    fn new(side: Side, pci_addr: &str) -> Self {
        Self {
            side,
            pci_addr: pci_addr.to_owned(),
            func_type: PciFuncType::Pf,
            iface_name: None,
            ibdev_name: None,
            card: 0,
            caps: DevCaps::BLUEFIELD3,
            representors: Vec::new(),
        }
    }

    /// The PCI function type (default PF).
    pub fn func_type(mut self, func_type: PciFuncType) -> Self {
        self.func_type = func_type;
        self
    }

    /// The net interface name (default derived from the PCI address).
    pub fn iface_name(mut self, name: &str) -> Self {
        self.iface_name = Some(name.to_owned());
        self
    }

    /// The IB device name (default `mlx5_<n>`, counted per side).
    pub fn ibdev_name(mut self, name: &str) -> Self {
        self.ibdev_name = Some(name.to_owned());
        self
    }

    /// Which BlueField the function belongs to (default 0). Host and Arm talk only within a card.
    pub fn card(mut self, card: u32) -> Self {
        self.card = card;
        self
    }

    /// The full capability set.
    pub fn caps(mut self, caps: DevCaps) -> Self {
        self.caps = caps;
        self
    }

    /// No DPA on this device (and therefore no MsgQ).
    pub fn without_dpa(mut self) -> Self {
        self.caps.dpa = false;
        self.caps.msgq = false;
        self
    }

    /// Adds a representor (Arm-side devices only; checked by [`TopologyBuilder::build`]).
    pub fn representor(mut self, rep: RepSpec) -> Self {
        self.representors.push(rep);
        self
    }
}

/// Builds a custom [`Topology`]; [`build`](Self::build) validates it.
#[derive(Clone, Debug, Default)]
pub struct TopologyBuilder {
    devices: Vec<DeviceSpec>,
}

impl TopologyBuilder {
    /// Adds a device.
    pub fn device(mut self, device: DeviceSpec) -> Self {
        self.devices.push(device);
        self
    }

    /// Checks the description and freezes it. `INVALID_VALUE` for a malformed PCI address or a
    /// representor on a host-side device, `ALREADY_EXIST` for two devices (or two representors
    /// of one device) at one address, `NOT_FOUND` when a representor names a host device that
    /// is not in the topology.
    pub fn build(self) -> Result<Topology> {
        let mut devices: Vec<DeviceData> = Vec::with_capacity(self.devices.len());
        let mut per_side = [0usize; 2];
        for spec in &self.devices {
            let pci = PciAddr::parse(&spec.pci_addr)?;
            let clash = devices.iter().find(|d| {
                d.side == spec.side
                    && d.pci_addr == pci
                    && (d.side == Side::Host || d.card == spec.card)
            });
            if let Some(other) = clash {
                return Err(Error::new(
                    ErrorCode::AlreadyExist,
                    format!(
                        "two {:?}-side devices at PCI address {pci} (card {} and card {}): one \
                         OS sees each address once; give the second device another address",
                        spec.side, other.card, spec.card
                    ),
                ));
            }
            if spec.side == Side::Host && !spec.representors.is_empty() {
                return Err(Error::new(
                    ErrorCode::InvalidValue,
                    format!(
                        "host-side device {pci} lists representors, but representors are managed \
                         by the BlueField's Arm-side device: add them to a DeviceSpec::arm"
                    ),
                ));
            }
            let n = &mut per_side[spec.side as usize];
            let ordinal = *n;
            *n += 1;
            let mut reps: Vec<RepData> = Vec::with_capacity(spec.representors.len());
            let (mut n_pf, mut n_vf) = (0usize, 0usize);
            for rep in &spec.representors {
                let rep_pci = PciAddr::parse(&rep.pci_addr)?;
                if reps.iter().any(|r| r.pci_addr == rep_pci) {
                    return Err(Error::new(
                        ErrorCode::AlreadyExist,
                        format!("device {pci} lists two representors at {rep_pci}"),
                    ));
                }
                let represents = rep.represents.as_deref().map(PciAddr::parse).transpose()?;
                let default_name = match rep.func_type {
                    PciFuncType::Pf => {
                        n_pf += 1;
                        format!("pf{}hpf", n_pf - 1)
                    }
                    PciFuncType::Vf | PciFuncType::Sf => {
                        n_vf += 1;
                        format!(
                            "pf0{}{}",
                            if rep.func_type == PciFuncType::Vf {
                                "vf"
                            } else {
                                "sf"
                            },
                            n_vf - 1
                        )
                    }
                };
                reps.push(RepData {
                    pci_addr: rep_pci,
                    func_type: rep.func_type,
                    iface_name: rep.iface_name.clone().unwrap_or(default_name),
                    represents,
                });
            }
            devices.push(DeviceData {
                side: spec.side,
                pci_addr: pci,
                func_type: spec.func_type,
                iface_name: spec.iface_name.clone().unwrap_or_else(|| match spec.side {
                    Side::Host => format!(
                        "enp{}s{}f{}np{}",
                        pci.bus, pci.device, pci.function, pci.function
                    ),
                    Side::Arm => format!("p{ordinal}"),
                }),
                ibdev_name: spec
                    .ibdev_name
                    .clone()
                    .unwrap_or_else(|| format!("mlx5_{ordinal}")),
                card: spec.card,
                caps: spec.caps,
                reps,
            });
        }
        // Representors must name host devices that exist, on their own card.
        for dev in &devices {
            for rep in &dev.reps {
                if let Some(host) = rep.represents {
                    let found = devices
                        .iter()
                        .any(|d| d.side == Side::Host && d.pci_addr == host && d.card == dev.card);
                    if !found {
                        return Err(Error::new(
                            ErrorCode::NotFound,
                            format!(
                                "representor {} of Arm device {} represents host device {host}, \
                                 which is not in the topology on card {}: add \
                                 DeviceSpec::host(\"{host}\") or drop .represents()",
                                rep.pci_addr, dev.pci_addr, dev.card
                            ),
                        ));
                    }
                }
            }
        }
        Ok(Topology {
            inner: Arc::new(TopologyInner {
                id: NEXT_TOPOLOGY_ID.fetch_add(1, Ordering::Relaxed),
                devices,
            }),
        })
    }
}

#[derive(Debug)]
struct RepData {
    pci_addr: PciAddr,
    func_type: PciFuncType,
    iface_name: String,
    represents: Option<PciAddr>,
}

#[derive(Debug)]
struct DeviceData {
    side: Side,
    pci_addr: PciAddr,
    func_type: PciFuncType,
    iface_name: String,
    ibdev_name: String,
    card: u32,
    caps: DevCaps,
    reps: Vec<RepData>,
}

#[derive(Debug)]
struct TopologyInner {
    id: u64,
    devices: Vec<DeviceData>,
}

static NEXT_TOPOLOGY_ID: AtomicU64 = AtomicU64::new(1);

/// The machine the soft device pretends to be. Cheap to clone; every clone is the same machine.
#[derive(Clone)]
pub struct Topology {
    inner: Arc<TopologyInner>,
}

impl fmt::Debug for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_list();
        for d in &self.inner.devices {
            list.entry(&format_args!(
                "{:?} {} {:?} {} card {} reps {:?}",
                d.side,
                d.pci_addr,
                d.func_type,
                d.iface_name,
                d.card,
                d.reps.iter().map(|r| r.pci_addr).collect::<Vec<_>>()
            ));
        }
        list.finish()
    }
}

impl PartialEq for Topology {
    fn eq(&self, other: &Self) -> bool {
        self.inner.id == other.inner.id
    }
}

impl Eq for Topology {}

impl Topology {
    /// Starts a custom topology.
    pub fn builder() -> TopologyBuilder {
        TopologyBuilder::default()
    }

    /// A fresh copy of the default machine, at the PCI addresses DOCA's documentation and samples
    /// use: one BlueField-3 whose host-side PF `0000:b1:00.0` has a DPA and MsgQ, and whose
    /// Arm-side device `0000:03:00.0` manages representors for that PF (`pf0hpf`, carrying the
    /// host PF's address `0000:b1:00.0`) and for a host VF at `0000:b1:00.2`, which the host sees
    /// too (a second function, for Comch isolation by representor). Devices of two copies are
    /// different devices; [`Topology::global`] is the shared one.
    pub fn bluefield3() -> Topology {
        let built = Topology::builder()
            .device(
                DeviceSpec::host("0000:b1:00.0")
                    .iface_name("ens1f0np0")
                    .ibdev_name("mlx5_0"),
            )
            .device(
                DeviceSpec::arm("0000:03:00.0")
                    .iface_name("p0")
                    .ibdev_name("mlx5_0")
                    .representor(
                        RepSpec::pf("0000:b1:00.0")
                            .iface_name("pf0hpf")
                            .represents("0000:b1:00.0"),
                    )
                    .representor(
                        RepSpec::vf("0000:b1:00.2")
                            .iface_name("pf0vf0")
                            .represents("0000:b1:00.2"),
                    ),
            )
            .device(
                DeviceSpec::host("0000:b1:00.2")
                    .func_type(PciFuncType::Vf)
                    .iface_name("ens1f0v0")
                    .ibdev_name("mlx5_2"),
            )
            .build();
        match built {
            Ok(topology) => topology,
            // The description above is a constant that `default_topology_is_valid` checks; an
            // empty machine is the least surprising fallback and cannot be reached.
            Err(_) => Topology {
                inner: Arc::new(TopologyInner {
                    id: NEXT_TOPOLOGY_ID.fetch_add(1, Ordering::Relaxed),
                    devices: Vec::new(),
                }),
            },
        }
    }

    /// The process-wide default machine ([`Topology::bluefield3`]), used by [`devinfo_list`].
    pub fn global() -> &'static Topology {
        static GLOBAL: OnceLock<Topology> = OnceLock::new();
        GLOBAL.get_or_init(Topology::bluefield3)
    }

    /// A number that identifies this machine among the topologies of the process.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Every device of the machine, both sides (each [`Devinfo`] knows its [`Side`]).
    pub fn devinfo_list(&self) -> Vec<Devinfo> {
        (0..self.inner.devices.len())
            .map(|index| Devinfo {
                topo: self.inner.clone(),
                index,
            })
            .collect()
    }

    /// The devices a process on `side` sees: what `doca_devinfo_create_list` returns there.
    pub fn devinfo_list_for(&self, side: Side) -> Vec<Devinfo> {
        self.devinfo_list()
            .into_iter()
            .filter(|d| d.side() == side)
            .collect()
    }
}

impl Default for Topology {
    fn default() -> Self {
        Topology::global().clone()
    }
}

/// `doca_devinfo_create_list` on the default machine ([`Topology::global`]): every device of
/// both sides; filter with [`Devinfo::side`] or use [`Topology::devinfo_list_for`].
pub fn devinfo_list() -> Vec<Devinfo> {
    Topology::global().devinfo_list()
}

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

    /// The machine this device belongs to.
    pub fn topology(&self) -> Topology {
        Topology {
            inner: self.topo.clone(),
        }
    }

    // --- DPA -----------------------------------------------------------------------------------

    /// `doca_dpa_cap_is_supported`: `Ok` when the device exposes a DPA, `NOT_SUPPORTED` otherwise.
    pub fn dpa_cap_is_supported(&self) -> Result<()> {
        if self.caps().dpa {
            Ok(())
        } else {
            Err(not_supported(
                self,
                "DOCA DPA",
                "the device has no DPA; pick a device for which dpa_cap_is_supported() is Ok",
            ))
        }
    }

    /// `doca_dpa_get_core_num`, answered for the device: DPA cores.
    pub fn dpa_get_core_num(&self) -> Result<u32> {
        self.dpa_cap_is_supported()
            .map(|()| cap_u32(limits::DPA_NUM_CORES))
    }

    /// `doca_dpa_get_num_eus_per_core`, answered for the device: execution units per core.
    pub fn dpa_get_num_eus_per_core(&self) -> Result<u32> {
        self.dpa_cap_is_supported()
            .map(|()| cap_u32(limits::DPA_THREADS_PER_CORE))
    }

    /// `doca_dpa_get_total_num_eus_available`, answered for the device.
    pub fn dpa_get_total_num_eus_available(&self) -> Result<u32> {
        self.dpa_cap_is_supported()
            .map(|()| cap_u32(limits::DPA_NUM_CORES * limits::DPA_THREADS_PER_CORE))
    }

    /// Soft-device query (no DOCA equivalent): most DPA threads one DPA context may create.
    pub fn dpa_cap_get_max_threads(&self) -> Result<u32> {
        self.dpa_cap_is_supported()
            .map(|()| cap_u32(limits::DPA_MAX_THREADS))
    }

    /// Soft-device query (no DOCA equivalent): largest DPA completion queue.
    pub fn dpa_cap_get_max_completion_queue_size(&self) -> Result<u32> {
        self.dpa_cap_is_supported()
            .map(|()| cap_u32(limits::DPA_COMPLETION_MAX_QUEUE_SIZE))
    }

    /// Soft-device query (no DOCA equivalent): DPA device memory available in total, in bytes.
    pub fn dpa_cap_get_max_memory(&self) -> Result<u64> {
        self.dpa_cap_is_supported()
            .map(|()| limits::DPA_MAX_MEMORY as u64)
    }

    // --- Comch control path --------------------------------------------------------------------

    /// `doca_comch_cap_server_is_supported`: servers run on the Arm side.
    pub fn comch_cap_server_is_supported(&self) -> Result<()> {
        if !self.caps().comch {
            return Err(not_supported(
                self,
                "a Comch server",
                "the device has no Comch",
            ));
        }
        match self.side() {
            Side::Arm => Ok(()),
            Side::Host => Err(not_supported(
                self,
                "a Comch server",
                "servers run on the BlueField Arm side; create a client here instead",
            )),
        }
    }

    /// `doca_comch_cap_client_is_supported`: clients run on the host side.
    pub fn comch_cap_client_is_supported(&self) -> Result<()> {
        if !self.caps().comch {
            return Err(not_supported(
                self,
                "a Comch client",
                "the device has no Comch",
            ));
        }
        match self.side() {
            Side::Host => Ok(()),
            Side::Arm => Err(not_supported(
                self,
                "a Comch client",
                "clients run on the host side; create a server here instead",
            )),
        }
    }

    // --- Comch fast path -----------------------------------------------------------------------

    fn fast_path(&self, what: &str) -> Result<()> {
        if self.caps().comch_fast_path {
            Ok(())
        } else {
            Err(not_supported(
                self,
                what,
                "the device has no Comch fast path (producer/consumer)",
            ))
        }
    }

    /// `doca_comch_producer_cap_is_supported`.
    pub fn comch_producer_cap_is_supported(&self) -> Result<()> {
        self.fast_path("a Comch producer")
    }

    /// `doca_comch_consumer_cap_is_supported`.
    pub fn comch_consumer_cap_is_supported(&self) -> Result<()> {
        self.fast_path("a Comch consumer")
    }

    /// `doca_comch_producer_cap_get_max_num_tasks`: largest send task pool of a CPU producer.
    pub fn comch_producer_cap_get_max_num_tasks(&self) -> Result<u32> {
        self.fast_path("a Comch producer")
            .map(|()| cap_u32(limits::CPU_MAX_NUM_TASKS))
    }

    /// `doca_comch_consumer_cap_get_max_num_tasks`: largest post-receive task pool of a CPU consumer.
    pub fn comch_consumer_cap_get_max_num_tasks(&self) -> Result<u32> {
        self.fast_path("a Comch consumer")
            .map(|()| cap_u32(limits::CPU_MAX_NUM_TASKS))
    }

    /// `doca_comch_consumer_cap_get_max_imm_data_len`: bytes of immediate data per message.
    pub fn comch_consumer_cap_get_max_imm_data_len(&self) -> Result<u32> {
        self.fast_path("a Comch consumer")
            .map(|()| cap_u32(limits::MAX_IMM_DATA_LEN))
    }

    /// `doca_comch_consumer_cap_get_max_consumers`: consumers per connection (the MsgQ limit).
    pub fn comch_consumer_cap_get_max_consumers(&self) -> Result<u32> {
        self.fast_path("a Comch consumer")
            .map(|()| cap_u32(limits::MSGQ_MAX_NUM_CONSUMERS))
    }

    /// `doca_comch_producer_cap_get_max_producers`: producers per connection (the MsgQ limit).
    pub fn comch_producer_cap_get_max_producers(&self) -> Result<u32> {
        self.fast_path("a Comch producer")
            .map(|()| cap_u32(limits::MSGQ_MAX_NUM_PRODUCERS))
    }

    /// Soft-device query (no DOCA equivalent): largest `doca_comch_consumer_set_dev_num_recv`.
    pub fn comch_consumer_cap_get_max_dev_num_recv(&self) -> Result<u32> {
        self.comch_msgq_cap_is_supported()
            .map(|()| cap_u32(limits::CONSUMER_MAX_NUM_RECV))
    }

    /// Soft-device query (no DOCA equivalent): largest
    /// `doca_comch_consumer_completion_set_max_num_recv`.
    pub fn comch_consumer_completion_cap_get_max_num_recv(&self) -> Result<u32> {
        self.comch_msgq_cap_is_supported()
            .map(|()| cap_u32(limits::CONSUMER_MAX_NUM_RECV))
    }

    /// Soft-device query (no DOCA equivalent): largest `doca_comch_producer_set_dev_num_send`.
    pub fn comch_producer_cap_get_max_dev_num_send(&self) -> Result<u32> {
        self.comch_msgq_cap_is_supported()
            .map(|()| cap_u32(limits::PRODUCER_MAX_NUM_SEND))
    }

    // --- MsgQ ----------------------------------------------------------------------------------

    /// Soft-device query (DOCA's MsgQ header has no cap function): `Ok` when the device supports
    /// Comch MsgQ, which needs a DPA.
    pub fn comch_msgq_cap_is_supported(&self) -> Result<()> {
        let caps = self.caps();
        if !caps.dpa {
            return Err(not_supported(
                self,
                "Comch MsgQ",
                "a MsgQ connects the CPU with the DPA and the device has no DPA",
            ));
        }
        if !caps.msgq {
            return Err(not_supported(
                self,
                "Comch MsgQ",
                "the device has no MsgQ support",
            ));
        }
        Ok(())
    }

    /// Soft-device query: largest `doca_comch_msgq_set_max_num_consumers`.
    pub fn comch_msgq_cap_get_max_num_consumers(&self) -> Result<u32> {
        self.comch_msgq_cap_is_supported()
            .map(|()| cap_u32(limits::MSGQ_MAX_NUM_CONSUMERS))
    }

    /// Soft-device query: largest `doca_comch_msgq_set_max_num_producers`.
    pub fn comch_msgq_cap_get_max_num_producers(&self) -> Result<u32> {
        self.comch_msgq_cap_is_supported()
            .map(|()| cap_u32(limits::MSGQ_MAX_NUM_PRODUCERS))
    }

    // --- mmap ----------------------------------------------------------------------------------

    /// `doca_mmap_cap_is_export_pci_supported`.
    pub fn mmap_cap_is_export_pci_supported(&self) -> Result<bool> {
        Ok(self.caps().mmap_export_pci)
    }

    /// `doca_mmap_cap_is_create_from_export_pci_supported`.
    pub fn mmap_cap_is_create_from_export_pci_supported(&self) -> Result<bool> {
        Ok(self.caps().mmap_create_from_export_pci)
    }

    /// Soft-device query: largest `doca_mmap_set_memrange` length.
    pub fn mmap_cap_get_max_len(&self) -> Result<u64> {
        Ok(limits::MMAP_MAX_LEN as u64)
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

// ---------------------------------------------------------------------------------------------
// Representors
// ---------------------------------------------------------------------------------------------

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
    dev: Devinfo,
    rep: usize,
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
    fn data(&self) -> &RepData {
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
    info: DevinfoRep,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn code<T: fmt::Debug>(r: Result<T>) -> ErrorCode {
        r.expect_err("expected an error").code()
    }

    fn host() -> Devinfo {
        Dev::open_by_pci(Topology::global(), Side::Host, "0000:b1:00.0")
            .unwrap()
            .as_devinfo()
            .clone()
    }

    fn arm_dev() -> Dev {
        Dev::open_by_pci(Topology::global(), Side::Arm, "0000:03:00.0").unwrap()
    }

    fn no_dpa_topology() -> Topology {
        Topology::builder()
            .device(DeviceSpec::host("0000:b1:00.0"))
            .device(DeviceSpec::host("0000:b1:00.1").without_dpa())
            .device(DeviceSpec::host("0000:b1:00.2").func_type(PciFuncType::Vf))
            .device(
                DeviceSpec::arm("0000:03:00.0")
                    .representor(RepSpec::pf("0000:b1:00.0").represents("0000:b1:00.0"))
                    .representor(RepSpec::pf("0000:b1:00.1").represents("0000:b1:00.1"))
                    .representor(RepSpec::vf("0000:b1:00.2").represents("0000:b1:00.2")),
            )
            .build()
            .unwrap()
    }

    #[test]
    fn pci_addresses_parse_in_both_formats() {
        let a = PciAddr::parse("0000:03:00.0").unwrap();
        assert_eq!(
            (a.domain(), a.bus(), a.device(), a.function()),
            (0, 3, 0, 0)
        );
        assert_eq!(a.to_string(), "0000:03:00.0");
        assert_eq!(
            PciAddr::parse("b1:1F.7").unwrap().to_string(),
            "0000:b1:1f.7"
        );
        assert_eq!("0001:b1:00.2".parse::<PciAddr>().unwrap().domain(), 1);
        assert!(a.matches("03:00.0").unwrap());
        assert!(a.matches("0000:03:00.0").unwrap());
        assert!(!a.matches("0001:03:00.0").unwrap());
        assert!(!a.matches("03:00.1").unwrap());
        assert_eq!(
            PciAddr::new(0, 3, 0x1f, 7).unwrap().to_string(),
            "0000:03:1f.7"
        );
    }

    #[test]
    fn malformed_pci_address_is_invalid_value() {
        for bad in [
            "",
            "03:00",
            "3:00.0",
            "0000:03:00",
            "0000:03:00.8",
            "03:20.0",
            "x0:00.0",
            "0:03:00.0",
            "0000:03:00.0.1",
            "1:2:3:4.0",
        ] {
            assert_eq!(code(PciAddr::parse(bad)), ErrorCode::InvalidValue, "{bad}");
            assert_eq!(
                code(host().pci_addr_is(bad)),
                ErrorCode::InvalidValue,
                "{bad}"
            );
        }
        assert_eq!(code(PciAddr::new(0, 0, 0x20, 0)), ErrorCode::InvalidValue);
        assert_eq!(code(PciAddr::new(0, 0, 0, 8)), ErrorCode::InvalidValue);
    }

    #[test]
    fn default_topology_is_valid() {
        let list = devinfo_list();
        assert_eq!(list.len(), 3);
        let host = &list[0];
        assert_eq!(
            (host.side(), host.get_pci_addr_str().as_str()),
            (Side::Host, "0000:b1:00.0")
        );
        assert_eq!(host.get_iface_name(), "ens1f0np0");
        assert_eq!(host.get_pci_func_type(), PciFuncType::Pf);
        assert!(host.pci_addr_is("b1:00.0").unwrap());
        assert_eq!(host.dpa_cap_is_supported(), Ok(()));
        assert_eq!(host.comch_msgq_cap_is_supported(), Ok(()));
        let arm = &list[1];
        assert_eq!(arm.side(), Side::Arm);
        assert_eq!(
            Topology::global().devinfo_list_for(Side::Arm),
            vec![arm.clone()]
        );
        // Fresh copies are other machines; the global one is shared.
        assert_ne!(Topology::bluefield3(), *Topology::global());
        assert_eq!(Topology::default(), *Topology::global());
        assert_eq!(Topology::bluefield3().devinfo_list().len(), 3);
    }

    #[test]
    fn open_by_pci_finds_the_device_of_the_side() {
        let h = Dev::open_by_pci(Topology::global(), Side::Host, "b1:00.0").unwrap();
        let a = arm_dev();
        assert_eq!(h.as_devinfo().side(), Side::Host);
        assert_eq!(a.as_devinfo().side(), Side::Arm);
        assert_ne!(h, a);
        // Opening the same device twice yields the same device.
        assert_eq!(Dev::open(h.as_devinfo()).unwrap(), h);
    }

    #[test]
    fn open_by_pci_absent_is_not_found() {
        let e = Dev::open_by_pci(Topology::global(), Side::Host, "0000:04:00.0").unwrap_err();
        assert_eq!(e.code(), ErrorCode::NotFound);
        assert!(
            e.message().contains("0000:04:00.0") && e.message().contains("0000:b1:00.0"),
            "{e}"
        );
        let e = Dev::open_by_pci(Topology::global(), Side::Host, "nonsense").unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidValue);
    }

    #[test]
    fn open_by_pci_ambiguous_short_form_is_invalid_value() {
        let topo = Topology::builder()
            .device(DeviceSpec::host("0000:03:00.0"))
            .device(DeviceSpec::host("0001:03:00.0"))
            .build()
            .unwrap();
        assert_eq!(
            code(Dev::open_by_pci(&topo, Side::Host, "03:00.0")),
            ErrorCode::InvalidValue
        );
        assert!(Dev::open_by_pci(&topo, Side::Host, "0001:03:00.0").is_ok());
    }

    #[test]
    fn representors_are_listed_on_the_arm_side() {
        let arm = arm_dev();
        let reps = arm.devinfo_rep_list(RepFilter::ALL).unwrap();
        let addrs: Vec<String> = reps.iter().map(DevinfoRep::get_pci_addr_str).collect();
        assert_eq!(addrs, ["0000:b1:00.0", "0000:b1:00.2"]);
        assert_eq!(reps[0].get_pci_func_type(), PciFuncType::Pf);
        assert_eq!(reps[1].get_pci_func_type(), PciFuncType::Vf);
        assert_eq!(reps[0].get_iface_name(), "pf0hpf");
        assert_eq!(reps[0].host_devinfo(), Some(host()));
        let vf = reps[1]
            .host_devinfo()
            .expect("the host VF is in the topology");
        assert_eq!(vf.get_pci_addr_str(), "0000:b1:00.2");
        assert_eq!(vf.get_pci_func_type(), PciFuncType::Vf);
        assert_eq!(arm.devinfo_rep_list(RepFilter::NET).unwrap().len(), 2);
        assert_eq!(arm.devinfo_rep_list(RepFilter::EMULATED).unwrap().len(), 0);
        let rep = DevRep::open_by_pci(&arm, "b1:00.2").unwrap();
        assert_eq!(rep.as_devinfo(), &reps[1]);
        assert_eq!(DevRep::open(&reps[1]).unwrap(), rep);
    }

    #[test]
    fn representor_list_on_host_is_not_supported() {
        let host = Dev::open(&host()).unwrap();
        assert_eq!(
            code(host.devinfo_rep_list(RepFilter::ALL)),
            ErrorCode::NotSupported
        );
        assert_eq!(
            code(DevRep::open_by_pci(&host, "b1:00.0")),
            ErrorCode::NotSupported
        );
    }

    #[test]
    fn representor_absent_is_not_found() {
        assert_eq!(
            code(DevRep::open_by_pci(&arm_dev(), "b1:00.1")),
            ErrorCode::NotFound
        );
    }

    #[test]
    fn representor_filter_unknown_bits_are_invalid_value() {
        assert_eq!(code(RepFilter::from_bits(1)), ErrorCode::InvalidValue);
        assert_eq!(code(RepFilter::from_bits(1 << 3)), ErrorCode::InvalidValue);
        assert_eq!(
            RepFilter::from_bits(6).unwrap(),
            RepFilter::NET | RepFilter::EMULATED
        );
    }

    #[test]
    fn caps_answer_the_documented_limits() {
        let d = host();
        assert_eq!(d.dpa_get_core_num(), Ok(16));
        assert_eq!(d.dpa_get_num_eus_per_core(), Ok(16));
        assert_eq!(d.dpa_get_total_num_eus_available(), Ok(256));
        assert_eq!(d.dpa_cap_get_max_threads(), Ok(256));
        assert_eq!(d.dpa_cap_get_max_completion_queue_size(), Ok(65536));
        assert_eq!(d.dpa_cap_get_max_memory(), Ok(256 << 20));
        assert_eq!(d.comch_msgq_cap_get_max_num_consumers(), Ok(64));
        assert_eq!(d.comch_msgq_cap_get_max_num_producers(), Ok(64));
        assert_eq!(d.comch_consumer_cap_get_max_num_tasks(), Ok(65536));
        assert_eq!(d.comch_producer_cap_get_max_num_tasks(), Ok(65536));
        assert_eq!(d.comch_consumer_cap_get_max_imm_data_len(), Ok(32));
        assert_eq!(d.comch_consumer_cap_get_max_consumers(), Ok(64));
        assert_eq!(d.comch_producer_cap_get_max_producers(), Ok(64));
        assert_eq!(d.comch_consumer_cap_get_max_dev_num_recv(), Ok(8192));
        assert_eq!(d.comch_consumer_completion_cap_get_max_num_recv(), Ok(8192));
        assert_eq!(d.comch_producer_cap_get_max_dev_num_send(), Ok(8192));
        assert_eq!(d.comch_producer_cap_is_supported(), Ok(()));
        assert_eq!(d.comch_consumer_cap_is_supported(), Ok(()));
        assert_eq!(d.mmap_cap_is_export_pci_supported(), Ok(true));
        assert_eq!(d.mmap_cap_get_max_len(), Ok(1 << 30));
    }

    #[test]
    fn device_without_dpa_is_not_supported() {
        let topo = no_dpa_topology();
        let d = Dev::open_by_pci(&topo, Side::Host, "b1:00.1").unwrap();
        let d = d.as_devinfo();
        let e = d.dpa_cap_is_supported().unwrap_err();
        assert_eq!(e.code(), ErrorCode::NotSupported);
        assert!(e.message().contains("0000:b1:00.1"), "{e}");
        assert_eq!(code(d.dpa_get_core_num()), ErrorCode::NotSupported);
        assert_eq!(code(d.dpa_get_num_eus_per_core()), ErrorCode::NotSupported);
        assert_eq!(
            code(d.dpa_get_total_num_eus_available()),
            ErrorCode::NotSupported
        );
        assert_eq!(code(d.dpa_cap_get_max_memory()), ErrorCode::NotSupported);
        assert_eq!(
            code(d.comch_msgq_cap_is_supported()),
            ErrorCode::NotSupported
        );
        assert_eq!(
            code(d.comch_msgq_cap_get_max_num_consumers()),
            ErrorCode::NotSupported
        );
        assert_eq!(
            code(d.comch_consumer_cap_get_max_dev_num_recv()),
            ErrorCode::NotSupported
        );
        // The rest of the device still works.
        assert_eq!(d.comch_cap_client_is_supported(), Ok(()));
        assert_eq!(d.comch_consumer_cap_get_max_num_tasks(), Ok(65536));
    }

    #[test]
    fn msgq_without_msgq_cap_is_not_supported() {
        let caps = DevCaps {
            msgq: false,
            ..DevCaps::BLUEFIELD3
        };
        let topo = Topology::builder()
            .device(DeviceSpec::host("03:00.0").caps(caps))
            .build()
            .unwrap();
        let d = &topo.devinfo_list()[0];
        assert_eq!(d.dpa_cap_is_supported(), Ok(()));
        assert_eq!(
            code(d.comch_msgq_cap_is_supported()),
            ErrorCode::NotSupported
        );
    }

    #[test]
    fn fast_path_caps_without_fast_path_are_not_supported() {
        let topo = Topology::builder()
            .device(DeviceSpec::host("03:00.0").caps(DevCaps::NONE))
            .build()
            .unwrap();
        let d = &topo.devinfo_list()[0];
        assert_eq!(
            code(d.comch_producer_cap_is_supported()),
            ErrorCode::NotSupported
        );
        assert_eq!(
            code(d.comch_consumer_cap_is_supported()),
            ErrorCode::NotSupported
        );
        assert_eq!(
            code(d.comch_consumer_cap_get_max_num_tasks()),
            ErrorCode::NotSupported
        );
        assert_eq!(
            code(d.comch_producer_cap_get_max_num_tasks()),
            ErrorCode::NotSupported
        );
        assert_eq!(
            code(d.comch_consumer_cap_get_max_imm_data_len()),
            ErrorCode::NotSupported
        );
        assert_eq!(
            code(d.comch_cap_client_is_supported()),
            ErrorCode::NotSupported
        );
        assert_eq!(d.mmap_cap_is_export_pci_supported(), Ok(false));
        assert_eq!(d.mmap_cap_is_create_from_export_pci_supported(), Ok(false));
    }

    #[test]
    fn comch_server_on_arm_client_on_host() {
        let h = host();
        let a = arm_dev().as_devinfo().clone();
        assert_eq!(h.comch_cap_client_is_supported(), Ok(()));
        assert_eq!(
            code(h.comch_cap_server_is_supported()),
            ErrorCode::NotSupported
        );
        assert_eq!(a.comch_cap_server_is_supported(), Ok(()));
        assert_eq!(
            code(a.comch_cap_client_is_supported()),
            ErrorCode::NotSupported
        );
    }

    #[test]
    fn custom_topology_with_several_functions() {
        let topo = no_dpa_topology();
        assert_eq!(topo.devinfo_list_for(Side::Host).len(), 3);
        let vf = Dev::open_by_pci(&topo, Side::Host, "0000:b1:00.2").unwrap();
        assert_eq!(vf.as_devinfo().get_pci_func_type(), PciFuncType::Vf);
        assert_eq!(vf.as_devinfo().get_ibdev_name(), "mlx5_2");
        assert_eq!(vf.as_devinfo().get_iface_name(), "enp177s0f2np2");
        let arm = Dev::open_by_pci(&topo, Side::Arm, "03:00.0").unwrap();
        let reps = arm.devinfo_rep_list(RepFilter::ALL).unwrap();
        assert_eq!(reps.len(), 3);
        assert_eq!(reps[1].get_iface_name(), "pf1hpf");
        assert_eq!(reps[2].get_iface_name(), "pf0vf0");
        assert_eq!(reps[2].host_devinfo().as_ref(), Some(vf.as_devinfo()));
        // Devices of different topologies never compare equal.
        let other = Dev::open_by_pci(&Topology::bluefield3(), Side::Host, "b1:00.0").unwrap();
        let same_addr = Dev::open_by_pci(&topo, Side::Host, "b1:00.0").unwrap();
        assert_ne!(other, same_addr);
        assert_eq!(same_addr.as_devinfo().topology(), topo);
    }

    #[test]
    fn duplicate_device_is_already_exist() {
        let b = Topology::builder()
            .device(DeviceSpec::host("0000:03:00.0"))
            .device(DeviceSpec::host("03:00.0"));
        assert_eq!(code(b.build()), ErrorCode::AlreadyExist);
        // One address on both sides, or on the Arm side of two cards, is fine.
        let ok = Topology::builder()
            .device(DeviceSpec::host("03:00.0"))
            .device(DeviceSpec::host("04:00.0").card(1))
            .device(DeviceSpec::arm("03:00.0"))
            .device(DeviceSpec::arm("03:00.0").card(1))
            .build();
        assert!(ok.is_ok());
        let dup_rep = Topology::builder()
            .device(
                DeviceSpec::arm("03:00.0")
                    .representor(RepSpec::pf("b1:00.0"))
                    .representor(RepSpec::vf("b1:00.0")),
            )
            .build();
        assert_eq!(code(dup_rep), ErrorCode::AlreadyExist);
    }

    #[test]
    fn malformed_topology_is_invalid_value() {
        assert_eq!(
            code(
                Topology::builder()
                    .device(DeviceSpec::host("03:00"))
                    .build()
            ),
            ErrorCode::InvalidValue
        );
        let rep_on_host = Topology::builder()
            .device(DeviceSpec::host("03:00.0").representor(RepSpec::pf("b1:00.0")));
        assert_eq!(code(rep_on_host.build()), ErrorCode::InvalidValue);
        let bad_rep = Topology::builder()
            .device(DeviceSpec::arm("03:00.0").representor(RepSpec::pf("b1:00")));
        assert_eq!(code(bad_rep.build()), ErrorCode::InvalidValue);
    }

    #[test]
    fn representor_of_absent_host_device_is_not_found() {
        let b = Topology::builder()
            .device(DeviceSpec::host("03:00.0").card(1))
            .device(
                DeviceSpec::arm("03:00.0")
                    .representor(RepSpec::pf("b1:00.0").represents("03:00.0")),
            );
        // The host device exists, but on another card.
        assert_eq!(code(b.build()), ErrorCode::NotFound);
    }

    #[test]
    fn objects_are_send_sync_and_cheap_to_clone() {
        fn check<T: Send + Sync + Clone>() {}
        check::<Topology>();
        check::<Devinfo>();
        check::<Dev>();
        check::<DevinfoRep>();
        check::<DevRep>();
    }
}
