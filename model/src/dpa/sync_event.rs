//! Sync events exported to a DPA context (`doca_sync_event_get_dpa_handle`): a slot in the
//! context's handle table that kernels name by handle; and the counter as kernel launches wait
//! for it and report to it.

use super::{Dpa, Kind, LaunchEvent, objects};
use crate::error::{Result, bail};
use crate::sync_event::SyncEventValue;
use std::sync::Arc;

/// A sync event's counter reachable from the kernels of one DPA context; the handle stays valid
/// until this is dropped.
#[derive(Debug)]
pub struct SyncEventExport {
    dpa: Dpa,
    index: usize,
}

impl SyncEventExport {
    /// Makes `value` reachable from the kernels of `dpa`.
    pub fn new(dpa: &Dpa, value: Arc<SyncEventValue>) -> Result<SyncEventExport> {
        dpa.shared.require_running("export a sync event")?;
        let Some(index) = objects(&dpa.shared).sync_events.insert(value) else {
            bail!(
                NoMemory,
                "this DPA context holds handles of {} sync events, its maximum: destroy some \
                 first",
                crate::limits::DPA_MAX_SYNC_EVENTS
            );
        };
        Ok(SyncEventExport {
            dpa: dpa.clone(),
            index,
        })
    }

    /// The `doca_dpa_dev_sync_event_t` kernels use.
    pub fn dpa_handle(&self) -> u64 {
        self.dpa.shared.handle(Kind::SyncEvent, self.index)
    }

    /// The context it was exported to.
    pub fn dpa(&self) -> &Dpa {
        &self.dpa
    }
}

impl Drop for SyncEventExport {
    fn drop(&mut self) {
        let dpa = &self.dpa.shared;
        objects(dpa)
            .sync_events
            .retire(self.index, &dpa.sched.grace);
    }
}

impl LaunchEvent for SyncEventValue {
    fn get(&self) -> u64 {
        SyncEventValue::get(self)
    }

    fn set(&self, value: u64) {
        SyncEventValue::set(self, value);
    }

    fn add(&self, value: u64) -> u64 {
        SyncEventValue::add(self, value)
    }
}
