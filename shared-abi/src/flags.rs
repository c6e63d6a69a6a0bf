//! The flags word of `post_send_imm_only` and `dma_copy`.

use crate::{AbiError, submit_flag};
use core::fmt;
use core::ops::{BitOr, BitOrAssign};

/// A set of DOCA submit flags (`doca_dpa_dev_submit_flag`): [`SubmitFlags::FLUSH`],
/// [`SubmitFlags::OPTIMIZE_REPORTS`], or none.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SubmitFlags(u32);

impl SubmitFlags {
    /// No flag.
    pub const NONE: Self = Self(submit_flag::NONE);
    /// Ring the doorbell now instead of batching the operation with later ones.
    pub const FLUSH: Self = Self(submit_flag::FLUSH);
    /// Do not report a completion for this operation (completion moderation).
    pub const OPTIMIZE_REPORTS: Self = Self(submit_flag::OPTIMIZE_REPORTS);

    const KNOWN: u32 = submit_flag::FLUSH | submit_flag::OPTIMIZE_REPORTS;

    /// The raw flags word passed to the device function.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Flags from a raw word; bits DOCA does not define are an error.
    pub const fn from_bits(bits: u32) -> Result<Self, AbiError> {
        if bits & !Self::KNOWN != 0 {
            Err(AbiError::UnknownFlags(bits))
        } else {
            Ok(Self(bits))
        }
    }

    /// Whether every flag of `other` is set in `self`.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// `self` with every flag of `other` cleared.
    pub const fn without(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }
}

impl BitOr for SubmitFlags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl BitOrAssign for SubmitFlags {
    fn bitor_assign(&mut self, rhs: Self) {
        self.0 |= rhs.0;
    }
}

impl fmt::Debug for SubmitFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("NONE");
        }
        let mut first = true;
        for (flag, name) in [
            (Self::FLUSH, "FLUSH"),
            (Self::OPTIMIZE_REPORTS, "OPTIMIZE_REPORTS"),
        ] {
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

// SAFETY: repr(transparent) over u32, which is Pod; any u32 is a representable word (unknown
// bits are rejected where flags are consumed, not by the type).
unsafe impl crate::Pod for SubmitFlags {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_match_doca() {
        assert_eq!(SubmitFlags::NONE.bits(), 0);
        assert_eq!(SubmitFlags::FLUSH.bits(), 1);
        assert_eq!(SubmitFlags::OPTIMIZE_REPORTS.bits(), 2);
        let both = SubmitFlags::FLUSH | SubmitFlags::OPTIMIZE_REPORTS;
        assert_eq!(both.bits(), 3);
        assert!(both.contains(SubmitFlags::FLUSH));
        assert!(!SubmitFlags::FLUSH.contains(SubmitFlags::OPTIMIZE_REPORTS));
        assert_eq!(format!("{both:?}"), "FLUSH | OPTIMIZE_REPORTS");
    }

    #[test]
    fn unknown_bits_are_rejected() {
        assert_eq!(SubmitFlags::from_bits(3), Ok(SubmitFlags(3)));
        assert_eq!(SubmitFlags::from_bits(4), Err(AbiError::UnknownFlags(4)));
    }
}
