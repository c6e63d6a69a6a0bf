//! `enum doca_access_flag` as a bit set, with DOCA's values and names.

use super::Result;
use crate::error::{Error, ErrorCode};
use std::fmt;

/// `enum doca_access_flag`: who may read and write an mmap's memory, a bit set with DOCA's
/// values. The local device can always read; the other bits grant more.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct AccessFlags(u32);

impl AccessFlags {
    /// `DOCA_ACCESS_FLAG_LOCAL_READ_ONLY` (0): local devices read, nobody writes.
    pub const LOCAL_READ_ONLY: AccessFlags = AccessFlags(0);
    /// `DOCA_ACCESS_FLAG_LOCAL_READ_WRITE` (1 << 0): local devices read and write.
    pub const LOCAL_READ_WRITE: AccessFlags = AccessFlags(1 << 0);
    /// `DOCA_ACCESS_FLAG_RDMA_READ` (1 << 1): remote devices read over RDMA.
    pub const RDMA_READ: AccessFlags = AccessFlags(1 << 1);
    /// `DOCA_ACCESS_FLAG_RDMA_WRITE` (1 << 2): remote devices write over RDMA.
    pub const RDMA_WRITE: AccessFlags = AccessFlags(1 << 2);
    /// `DOCA_ACCESS_FLAG_RDMA_ATOMIC` (1 << 3): remote devices run RDMA atomics.
    pub const RDMA_ATOMIC: AccessFlags = AccessFlags(1 << 3);
    /// `DOCA_ACCESS_FLAG_PCI_READ_ONLY` (1 << 4): a device on the same PCI (the other side of the
    /// BlueField) reads, after `doca_mmap_export_pci`. Excludes `PCI_READ_WRITE`.
    pub const PCI_READ_ONLY: AccessFlags = AccessFlags(1 << 4);
    /// `DOCA_ACCESS_FLAG_PCI_READ_WRITE` (1 << 5): a device on the same PCI reads and writes.
    /// Excludes `PCI_READ_ONLY`. Comch fast-path consumers need it on their buffers.
    pub const PCI_READ_WRITE: AccessFlags = AccessFlags(1 << 5);
    /// `DOCA_ACCESS_FLAG_PCI_RELAXED_ORDERING` (1 << 6): PCI accesses may be reordered.
    pub const PCI_RELAXED_ORDERING: AccessFlags = AccessFlags(1 << 6);

    const KNOWN: u32 = (1 << 7) - 1;

    const NAMES: [(AccessFlags, &'static str); 7] = [
        (Self::LOCAL_READ_WRITE, "LOCAL_READ_WRITE"),
        (Self::RDMA_READ, "RDMA_READ"),
        (Self::RDMA_WRITE, "RDMA_WRITE"),
        (Self::RDMA_ATOMIC, "RDMA_ATOMIC"),
        (Self::PCI_READ_ONLY, "PCI_READ_ONLY"),
        (Self::PCI_READ_WRITE, "PCI_READ_WRITE"),
        (Self::PCI_RELAXED_ORDERING, "PCI_RELAXED_ORDERING"),
    ];

    /// Flags from a raw `access_mask`; `INVALID_VALUE` for bits DOCA does not define.
    pub fn from_bits(bits: u32) -> Result<Self> {
        if bits & !Self::KNOWN != 0 {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                format!(
                    "access mask {bits:#x} sets bits {:#x} that doca_access_flag does not define \
                     (known: 0x1..=0x40)",
                    bits & !Self::KNOWN
                ),
            ));
        }
        Ok(Self(bits))
    }

    /// The raw `access_mask`.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Whether every bit of `other` is set (`LOCAL_READ_ONLY`, having no bits, is always set).
    pub const fn contains(self, other: AccessFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Both sets of flags.
    pub const fn union(self, other: AccessFlags) -> AccessFlags {
        AccessFlags(self.0 | other.0)
    }

    /// `INVALID_VALUE` for a combination DOCA rejects (PCI read-only together with PCI read-write).
    pub(super) fn validate(self) -> Result<()> {
        if self.contains(Self::PCI_READ_ONLY) && self.contains(Self::PCI_READ_WRITE) {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                "mmap permissions PCI_READ_ONLY and PCI_READ_WRITE are mutually exclusive: \
                 keep one of them",
            ));
        }
        Ok(())
    }
}

impl std::ops::BitOr for AccessFlags {
    type Output = AccessFlags;

    fn bitor(self, rhs: AccessFlags) -> AccessFlags {
        self.union(rhs)
    }
}

impl std::ops::BitOrAssign for AccessFlags {
    fn bitor_assign(&mut self, rhs: AccessFlags) {
        *self = self.union(rhs);
    }
}

impl fmt::Debug for AccessFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("LOCAL_READ_ONLY");
        }
        let mut first = true;
        for (flag, name) in Self::NAMES {
            if self.contains(flag) {
                if !first {
                    f.write_str(" | ")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        Ok(())
    }
}
