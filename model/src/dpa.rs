//! The DPA as the model offers it: the runtime (`dpakit-dpa-runtime`: contexts, apps, threads,
//! completions, the scheduler, ISA mode), re-exported, and the model's part of each DPA context.
//!
//! That part (`Objects`) holds what the runtime does not know: the device the context runs
//! on, and the handle tables of the model's device objects that kernels name (DPA consumers and
//! producers, sync events). The device functions (`crate::device_abi`) find it from the running
//! activation with `objects`.

mod sync_event;

pub use dpakit_dpa_runtime::*;
pub use sync_event::SyncEventExport;

use crate::comch::{DpaConsumerShared, DpaProducerShared};
use crate::dev::Dev;
use crate::error::{Result, bail};
use crate::limits;
use crate::mmap::Mmap;
use crate::sync_event::SyncEventValue;
use crate::table::Table;
use dpakit_abi::handles::MmapHandle;
use dpakit_dpa_runtime::grace::Grace;
use dpakit_dpa_runtime::memory::{MmapView, register_mmap_view};
use std::any::Any;

/// The model's part of a DPA context.
#[derive(Debug)]
pub(crate) struct Objects {
    pub dev: Dev,
    pub dpa_consumers: Table<DpaConsumerShared>,
    pub dpa_producers: Table<DpaProducerShared>,
    pub sync_events: Table<SyncEventValue>,
}

impl ContextPart for Objects {
    fn pending_frees(&self, grace: &Grace) -> usize {
        self.dpa_consumers.retained(grace)
            + self.dpa_producers.retained(grace)
            + self.sync_events.retained(grace)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Device for Dev {
    fn id(&self) -> DeviceId {
        let (machine, index) = self.as_devinfo().identity();
        DeviceId::new(machine, index)
    }

    fn require_dpa(&self) -> Result<()> {
        self.as_devinfo().dpa_cap_is_supported()
    }

    fn context_part(&self) -> Box<dyn ContextPart> {
        crate::stats::context_made();
        Box::new(Objects {
            dev: self.clone(),
            dpa_consumers: Table::new(limits::MSGQ_MAX_NUM_CONSUMERS * 16),
            dpa_producers: Table::new(limits::MSGQ_MAX_NUM_PRODUCERS * 16),
            sync_events: Table::new(limits::DPA_MAX_SYNC_EVENTS),
        })
    }
}

/// The model's part of `dpa`.
#[inline]
pub(crate) fn objects(dpa: &DpaShared) -> &Objects {
    match dpa.part.downcast() {
        Some(objects) => objects,
        None => unreachable!("every DPA context is made on a model device (Dpa::builder(&Dev))"),
    }
}

/// What the model adds to a DPA context's face: its device.
pub trait DpaDev {
    /// The device the context runs on.
    fn dev(&self) -> &Dev;

    /// `doca_mmap_dev_get_dpa_handle` for the context's device: the handle kernels use to name
    /// `mmap` in DMA copies.
    fn mmap_handle(&self, mmap: &Mmap) -> Result<MmapHandle>;
}

impl DpaDev for Dpa {
    fn dev(&self) -> &Dev {
        &objects(&self.shared).dev
    }

    fn mmap_handle(&self, mmap: &Mmap) -> Result<MmapHandle> {
        register_mmap(self.dev(), mmap)
    }
}

/// Registers a started `mmap` for the DPAs of `dev`; returns the handle kernels use.
pub fn register_mmap(dev: &Dev, mmap: &Mmap) -> Result<MmapHandle> {
    if !mmap.is_started() {
        bail!(
            NotPermitted,
            "doca_mmap_dev_get_dpa_handle: the mmap is not started (call doca_mmap_start first)"
        );
    }
    let (ptr, len) = mmap.range();
    register_mmap_view(MmapView {
        base: ptr as u64,
        len: len as u64,
        readable: mmap.allows_local_read(),
        writable: mmap.allows_local_write(),
        device: dev.id(),
        keep: Box::new(mmap.clone()),
    })
}
