//! PCI addresses as DOCA prints and parses them (`0000:03:00.0`, or `03:00.0`).

use super::*;

/// A PCI address, `domain:bus:device.function`, printed as DOCA prints it (`0000:03:00.0`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PciAddr {
    domain: u16,
    pub(super) bus: u8,
    pub(super) device: u8,
    pub(super) function: u8,
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

pub(super) fn bad_pci(s: &str) -> Error {
    Error::new(
        ErrorCode::InvalidValue,
        format!(
            "`{s}` is not a PCI address: use DOCA's `DDDD:BB:DD.F` (e.g. 0000:03:00.0) or \
             `BB:DD.F` (e.g. 03:00.0) format, hex digits, device <= 1f, function <= 7"
        ),
    )
}

/// Parses `s`; the domain is `None` in the short format.
pub(super) fn parse_pci(s: &str) -> Result<(Option<u16>, PciAddr)> {
    pub(super) fn hex(part: &str, digits: usize) -> Option<u32> {
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
