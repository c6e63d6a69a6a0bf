//! The machine the soft device pretends to be (plain data): sides, PCI functions, capabilities,
//! representors, and the builder that validates a custom one.

use super::*;

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

    pub(super) fn new(pci_addr: &str, func_type: PciFuncType) -> Self {
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

    pub(super) fn new(side: Side, pci_addr: &str) -> Self {
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
pub(super) struct RepData {
    pub(super) pci_addr: PciAddr,
    pub(super) func_type: PciFuncType,
    pub(super) iface_name: String,
    pub(super) represents: Option<PciAddr>,
}

#[derive(Debug)]
pub(super) struct DeviceData {
    pub(super) side: Side,
    pub(super) pci_addr: PciAddr,
    pub(super) func_type: PciFuncType,
    pub(super) iface_name: String,
    pub(super) ibdev_name: String,
    pub(super) card: u32,
    pub(super) caps: DevCaps,
    pub(super) reps: Vec<RepData>,
}

#[derive(Debug)]
pub(super) struct TopologyInner {
    pub(super) id: u64,
    pub(super) devices: Vec<DeviceData>,
}

static NEXT_TOPOLOGY_ID: AtomicU64 = AtomicU64::new(1);

/// The machine the soft device pretends to be. Cheap to clone; every clone is the same machine.
#[derive(Clone)]
pub struct Topology {
    pub(super) inner: Arc<TopologyInner>,
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
