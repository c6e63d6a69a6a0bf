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
