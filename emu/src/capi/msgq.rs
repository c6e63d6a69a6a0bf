//! `doca_comch_msgq.h`: queues between the CPU and the DPA, and creating their endpoints.

use super::dev::{self, DevObj};
use super::dpa::{self, DpaObj};
use super::registry::{self, Kind, Object};
use super::types::*;
use super::{call, not_idle, out};
use crate::error::{Result, bail};
use crate::limits;
use crate::msgq::{Direction, Msgq};
use std::cell::{Cell, Ref, RefCell};
use std::ffi::c_void;

/// A `struct doca_comch_msgq`.
pub(crate) struct MsgqObj {
    dev: *mut c_void,
    max_num_consumers: Cell<u32>,
    max_num_producers: Cell<u32>,
    /// The direction and the DPA handle, once set.
    target: Cell<Option<(Direction, *mut c_void)>>,
    model: RefCell<Option<Msgq>>,
    /// Per consumer slot: whether a consumer that exists holds it, and how often it was
    /// released (ids are `slot + 1 + slots * releases`, so an id is never handed out twice).
    consumer_ids: RefCell<Vec<(bool, u32)>>,
    next_producer_id: Cell<u32>,
    producers: Cell<u32>,
}

impl Object for MsgqObj {
    const KIND: Kind = Kind::Msgq;
}

pub(crate) fn msgq<'a>(ptr: *const doca_comch_msgq, param: &str) -> Result<&'a MsgqObj> {
    registry::get::<MsgqObj>(ptr.cast(), param)
}

impl MsgqObj {
    fn dev(&self) -> Result<&DevObj> {
        dev::dev(self.dev.cast(), "the MsgQ's device")
    }

    /// The started queue.
    pub(crate) fn model(&self) -> Result<Ref<'_, Msgq>> {
        Ref::filter_map(self.model.borrow(), Option::as_ref).map_err(|_| {
            crate::error::err(
                crate::error::ErrorCode::BadState,
                "the MsgQ is not started: call doca_comch_msgq_start first",
            )
        })
    }

    /// Which way messages flow, and the DPA (once configured).
    pub(crate) fn target(&self) -> Option<(Direction, *mut c_void)> {
        self.target.get()
    }

    fn consumers(&self) -> usize {
        self.consumer_ids.borrow().iter().filter(|s| s.0).count()
    }

    /// Reserves a fresh id on the lowest free consumer slot.
    pub(crate) fn reserve_consumer_id(&self) -> Result<u32> {
        let mut ids = self.consumer_ids.borrow_mut();
        let slots = ids.len() as u64;
        let Some(index) = ids.iter().position(|s| !s.0) else {
            bail!(
                NoMemory,
                "the MsgQ already has its maximum of {} consumers \
                 (doca_comch_msgq_set_max_num_consumers)",
                ids.len()
            );
        };
        ids[index].0 = true;
        let generation = u64::from(ids[index].1) % (u64::from(u32::MAX) / slots);
        Ok((index as u64 + 1 + slots * generation) as u32)
    }

    /// A consumer with `id` was destroyed.
    pub(crate) fn release_consumer_id(&self, id: u32) {
        let mut ids = self.consumer_ids.borrow_mut();
        let slots = ids.len().max(1);
        if let Some(slot) = ids.get_mut((id as usize).wrapping_sub(1) % slots) {
            slot.0 = false;
            slot.1 = slot.1.wrapping_add(1);
        }
    }

    pub(crate) fn reserve_producer(&self) -> Result<u32> {
        if self.producers.get() >= self.max_num_producers.get() {
            bail!(
                NoMemory,
                "the MsgQ already has its maximum of {} producers \
                 (doca_comch_msgq_set_max_num_producers)",
                self.max_num_producers.get()
            );
        }
        self.producers.set(self.producers.get() + 1);
        let id = self.next_producer_id.get();
        self.next_producer_id.set(id + 1);
        Ok(id)
    }

    /// A producer was destroyed.
    pub(crate) fn release_producer(&self) {
        self.producers.set(self.producers.get().saturating_sub(1));
    }

    fn require_idle(&self, what: &str) -> Result<()> {
        if self.model.borrow().is_some() {
            return Err(not_idle(what, "stop the MsgQ first (doca_comch_msgq_stop)"));
        }
        Ok(())
    }
}

/// `doca_comch_msgq_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_msgq_create(
    dev: *mut doca_dev,
    msgq: *mut *mut doca_comch_msgq,
) -> doca_error_t {
    call("doca_comch_msgq_create", || {
        let d = dev::dev(dev, "dev")?;
        super::non_null(msgq, "msgq")?;
        d.dev.as_devinfo().comch_msgq_cap_is_supported()?;
        let handle = registry::register(Box::new(MsgqObj {
            dev: dev.cast(),
            max_num_consumers: Cell::new(1),
            max_num_producers: Cell::new(1),
            target: Cell::new(None),
            model: RefCell::new(None),
            consumer_ids: RefCell::new(vec![(false, 0)]),
            next_producer_id: Cell::new(1),
            producers: Cell::new(0),
        }))?;
        d.users.hold();
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(msgq, "msgq", handle.cast()) }
    })
}

/// `doca_comch_msgq_destroy`: the queue must be stopped, its endpoints destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_msgq_destroy(msgq: *mut doca_comch_msgq) -> doca_error_t {
    call("doca_comch_msgq_destroy", || {
        let q = self::msgq(msgq, "msgq")?;
        if q.consumers() + q.producers.get() as usize > 0 {
            bail!(
                InUse,
                "the MsgQ still has {} consumer(s) and {} producer(s): destroy them first",
                q.consumers(),
                q.producers.get()
            );
        }
        q.require_idle("destroying it")?;
        if let Some((_, dpa)) = q.target.get() {
            if let Ok(d) = dpa::dpa(dpa.cast(), "the MsgQ's DPA") {
                d.users.release();
            }
        }
        q.dev()?.users.release();
        registry::retire::<MsgqObj>(msgq.cast());
        Ok(())
    })
}

fn set_limit(
    api: &'static str,
    msgq: *mut doca_comch_msgq,
    n: u32,
    max: usize,
    set: impl FnOnce(&MsgqObj, u32),
) -> doca_error_t {
    call(api, || {
        let q = self::msgq(msgq, "msgq")?;
        q.require_idle("changing its limits")?;
        if n == 0 || n as usize > max {
            bail!(InvalidValue, "{n} is outside the soft device's 1..={max}");
        }
        set(q, n);
        Ok(())
    })
}

/// `doca_comch_msgq_set_max_num_consumers`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_msgq_set_max_num_consumers(
    msgq: *mut doca_comch_msgq,
    max_num_consumers: u32,
) -> doca_error_t {
    set_limit(
        "doca_comch_msgq_set_max_num_consumers",
        msgq,
        max_num_consumers,
        limits::MSGQ_MAX_NUM_CONSUMERS,
        |q, n| {
            q.max_num_consumers.set(n);
            q.consumer_ids.borrow_mut().resize(n as usize, (false, 0));
        },
    )
}

/// `doca_comch_msgq_set_max_num_producers`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_msgq_set_max_num_producers(
    msgq: *mut doca_comch_msgq,
    max_num_producers: u32,
) -> doca_error_t {
    set_limit(
        "doca_comch_msgq_set_max_num_producers",
        msgq,
        max_num_producers,
        limits::MSGQ_MAX_NUM_PRODUCERS,
        |q, n| q.max_num_producers.set(n),
    )
}

fn set_target(
    api: &'static str,
    msgq: *mut doca_comch_msgq,
    dpa_handle: *mut doca_dpa,
    direction: Direction,
) -> doca_error_t {
    call(api, || {
        let q = self::msgq(msgq, "msgq")?;
        let d = dpa::dpa(dpa_handle, "dpa")?;
        q.require_idle("changing its direction")?;
        if q.consumers() + q.producers.get() as usize > 0 {
            bail!(
                InUse,
                "the MsgQ has endpoints: its direction cannot change any more"
            );
        }
        if let Some((_, old)) = q.target.get() {
            if let Ok(old) = dpa::dpa(old.cast(), "the previous DPA") {
                old.users.release();
            }
        }
        d.users.hold();
        q.target.set(Some((direction, dpa_handle.cast())));
        Ok(())
    })
}

/// `doca_comch_msgq_set_dpa_consumer`: CPU → DPA.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_msgq_set_dpa_consumer(
    msgq: *mut doca_comch_msgq,
    dpa: *mut doca_dpa,
) -> doca_error_t {
    set_target(
        "doca_comch_msgq_set_dpa_consumer",
        msgq,
        dpa,
        Direction::ToDpa,
    )
}

/// `doca_comch_msgq_set_dpa_producer`: DPA → CPU.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_msgq_set_dpa_producer(
    msgq: *mut doca_comch_msgq,
    dpa: *mut doca_dpa,
) -> doca_error_t {
    set_target(
        "doca_comch_msgq_set_dpa_producer",
        msgq,
        dpa,
        Direction::FromDpa,
    )
}

/// `doca_comch_msgq_start`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_msgq_start(msgq: *mut doca_comch_msgq) -> doca_error_t {
    call("doca_comch_msgq_start", || {
        let q = self::msgq(msgq, "msgq")?;
        if q.model.borrow().is_some() {
            bail!(BadState, "the MsgQ is already started");
        }
        let Some((direction, dpa_handle)) = q.target.get() else {
            bail!(
                BadState,
                "a MsgQ needs a direction before start: call doca_comch_msgq_set_dpa_consumer \
                 (CPU -> DPA) or doca_comch_msgq_set_dpa_producer (DPA -> CPU)"
            );
        };
        let d: &DpaObj = dpa::dpa(dpa_handle.cast(), "the MsgQ's DPA")?;
        let model_dpa = d.model()?;
        let builder = Msgq::builder(&q.dev()?.dev)
            .max_num_consumers(q.max_num_consumers.get())
            .max_num_producers(q.max_num_producers.get());
        let builder = match direction {
            Direction::ToDpa => builder.dpa_consumer(&model_dpa),
            Direction::FromDpa => builder.dpa_producer(&model_dpa),
        };
        let started = builder.start()?;
        *q.model.borrow_mut() = Some(started);
        Ok(())
    })
}

/// `doca_comch_msgq_stop`: `IN_USE` while consumers or producers exist.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_msgq_stop(msgq: *mut doca_comch_msgq) -> doca_error_t {
    call("doca_comch_msgq_stop", || {
        let q = self::msgq(msgq, "msgq")?;
        if q.model.borrow().is_none() {
            bail!(BadState, "the MsgQ is not started");
        }
        if q.consumers() + q.producers.get() as usize > 0 {
            bail!(
                InUse,
                "cannot stop the MsgQ: {} consumer(s) and {} producer(s) still exist; stop and \
                 destroy them first",
                q.consumers(),
                q.producers.get()
            );
        }
        if let Some(model) = q.model.borrow_mut().take() {
            model.stop()?;
        }
        Ok(())
    })
}
