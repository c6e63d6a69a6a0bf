//! The seam to the layer above: the device a DPA context is created on, and the part of each
//! context that layer keeps (the model: its device and the handle tables of its Comch endpoints
//! and sync events, which its device functions reach from the running activation).
//!
//! The runtime needs little of a device: whether it has a DPA, and an identity, since an mmap's
//! DPA handle names memory for the DPAs of one device only. Everything else the layer above
//! hangs on a context stays its own type; the runtime only keeps it and counts what it retired.

use crate::error::Result;
use crate::grace::Grace;
use std::any::Any;
use std::fmt;

/// Which device a DPA context or an mmap handle belongs to: equal for two handles of one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceId(u64, u64);

impl DeviceId {
    /// The device numbered `index` in the machine numbered `machine`.
    pub const fn new(machine: u64, index: u64) -> Self {
        Self(machine, index)
    }
}

/// A device a DPA context may be created on (`doca_dpa_create` takes a `doca_dev`).
pub trait Device {
    /// Its identity.
    fn id(&self) -> DeviceId;

    /// `Ok` when the device has a DPA (`doca_dpa_cap_is_supported`), checked at start.
    fn require_dpa(&self) -> Result<()>;

    /// The layer above's part of a new context on this device.
    fn context_part(&self) -> Box<dyn ContextPart>;
}

/// What the layer above keeps per DPA context. Its device functions find it through
/// [`DpaShared::part`](crate::DpaShared::part) and downcast it to their own type.
pub trait ContextPart: Any + Send + Sync + fmt::Debug {
    /// Entries its handle tables removed that wait for a grace period of `grace`, the context's
    /// ([`Dpa::pending_frees`](crate::Dpa::pending_frees)).
    fn pending_frees(&self, grace: &Grace) -> usize;

    /// Itself, for the downcast.
    fn as_any(&self) -> &dyn Any;
}

/// The layer above's part of a context ([`ContextPart`]), with its type recorded when it was
/// stored: the device functions find their own type on every handle lookup, and a compare of
/// two ids is cheaper than the two dynamic calls of a downcast through `Any`.
pub struct Part {
    part: Box<dyn ContextPart>,
    type_id: std::any::TypeId,
}

impl fmt::Debug for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.part.fmt(f)
    }
}

impl Part {
    pub(crate) fn new(part: Box<dyn ContextPart>) -> Self {
        let type_id = Any::type_id(part.as_any());
        Self { part, type_id }
    }

    /// The part as the runtime sees it.
    pub fn get(&self) -> &dyn ContextPart {
        &*self.part
    }

    /// The part as its own type `T`, if it is one.
    #[inline]
    pub fn downcast<T: ContextPart>(&self) -> Option<&T> {
        if self.type_id != std::any::TypeId::of::<T>() {
            return None;
        }
        // SAFETY: the box holds a `T`: its type id, taken from the value itself when it was
        // stored, is `T`'s. A `dyn` pointer's data half is the value's address.
        Some(unsafe { &*(&*self.part as *const dyn ContextPart).cast::<T>() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Mine(u32);
    #[derive(Debug)]
    struct Theirs;

    impl ContextPart for Mine {
        fn pending_frees(&self, _: &Grace) -> usize {
            0
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    impl ContextPart for Theirs {
        fn pending_frees(&self, _: &Grace) -> usize {
            0
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    #[test]
    fn a_part_is_found_as_its_own_type_only() {
        let part = Part::new(Box::new(Mine(7)));
        assert_eq!(part.downcast::<Mine>().map(|m| m.0), Some(7));
        assert!(part.downcast::<Theirs>().is_none());
        let other = Part::new(Box::new(Theirs));
        assert!(other.downcast::<Mine>().is_none());
    }
}
