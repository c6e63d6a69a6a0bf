//! `doca_comch_msgq`: a one-direction message queue between the CPU and the DPA.
//!
//! [`MsgqBuilder::dpa_consumer`] makes a CPU → DPA queue (CPU producers, DPA consumers),
//! [`MsgqBuilder::dpa_producer`] a DPA → CPU queue (DPA producers, CPU consumers). Endpoints are
//! created from a started queue and carry immediate data only; each keeps the queue alive, so
//! the queue stops and is destroyed after its last endpoint.

use crate::dev::Dev;
use crate::dpa::Dpa;
use crate::error::{Result, bail, doca};
use dpakit_sys as sys;
use std::fmt;
use std::rc::Rc;

/// Which way messages flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// CPU producers → DPA consumers (`doca_comch_msgq_set_dpa_consumer`).
    ToDpa,
    /// DPA producers → CPU consumers (`doca_comch_msgq_set_dpa_producer`).
    FromDpa,
}

/// Configuration of a [`Msgq`].
#[derive(Debug)]
pub struct MsgqBuilder {
    dev: Dev,
    max_num_consumers: u32,
    max_num_producers: u32,
    target: Option<(Dpa, Direction)>,
}

struct MsgqInner {
    raw: *mut sys::doca_comch_msgq,
    direction: Direction,
    dpa: Dpa,
    _dev: Dev,
}

impl Drop for MsgqInner {
    fn drop(&mut self) {
        // Endpoints keep the queue alive, so none is left.
        let _ = doca!(doca_comch_msgq_stop(self.raw));
        let _ = doca!(doca_comch_msgq_destroy(self.raw));
    }
}

/// `doca_comch_msgq`. Clones share the queue.
#[doc(alias = "doca_comch_msgq")]
#[derive(Clone)]
pub struct Msgq {
    inner: Rc<MsgqInner>,
}

impl fmt::Debug for Msgq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Msgq")
            .field("direction", &self.inner.direction)
            .finish()
    }
}

impl MsgqBuilder {
    /// `doca_comch_msgq_set_max_num_consumers` (default 1).
    #[doc(alias = "doca_comch_msgq_set_max_num_consumers")]
    pub fn max_num_consumers(mut self, n: u32) -> Self {
        self.max_num_consumers = n;
        self
    }

    /// `doca_comch_msgq_set_max_num_producers` (default 1).
    #[doc(alias = "doca_comch_msgq_set_max_num_producers")]
    pub fn max_num_producers(mut self, n: u32) -> Self {
        self.max_num_producers = n;
        self
    }

    /// `doca_comch_msgq_set_dpa_consumer`: messages flow CPU → DPA.
    #[doc(alias = "doca_comch_msgq_set_dpa_consumer")]
    pub fn dpa_consumer(mut self, dpa: &Dpa) -> Self {
        self.target = Some((dpa.clone(), Direction::ToDpa));
        self
    }

    /// `doca_comch_msgq_set_dpa_producer`: messages flow DPA → CPU.
    #[doc(alias = "doca_comch_msgq_set_dpa_producer")]
    pub fn dpa_producer(mut self, dpa: &Dpa) -> Self {
        self.target = Some((dpa.clone(), Direction::FromDpa));
        self
    }

    /// `doca_comch_msgq_create` + the settings + `doca_comch_msgq_start`.
    #[doc(alias = "doca_comch_msgq_start")]
    pub fn start(self) -> Result<Msgq> {
        let Some((dpa, direction)) = self.target else {
            bail!(
                BadState,
                "a MsgQ needs a direction before start: call dpa_consumer(&dpa) (CPU -> DPA) or \
                 dpa_producer(&dpa) (DPA -> CPU)"
            );
        };
        let mut raw = std::ptr::null_mut();
        doca!(doca_comch_msgq_create(self.dev.raw(), &mut raw))?;
        // From here the queue is destroyed by Drop if a step fails.
        let msgq = Msgq {
            inner: Rc::new(MsgqInner {
                raw,
                direction,
                dpa: dpa.clone(),
                _dev: self.dev,
            }),
        };
        doca!(doca_comch_msgq_set_max_num_consumers(
            raw,
            self.max_num_consumers
        ))?;
        doca!(doca_comch_msgq_set_max_num_producers(
            raw,
            self.max_num_producers
        ))?;
        match direction {
            Direction::ToDpa => doca!(doca_comch_msgq_set_dpa_consumer(raw, dpa.raw()))?,
            Direction::FromDpa => doca!(doca_comch_msgq_set_dpa_producer(raw, dpa.raw()))?,
        }
        doca!(doca_comch_msgq_start(raw))?;
        Ok(msgq)
    }
}

impl Msgq {
    /// `doca_comch_msgq_create` on `dev`.
    #[doc(alias = "doca_comch_msgq_create")]
    pub fn builder(dev: &Dev) -> MsgqBuilder {
        MsgqBuilder {
            dev: dev.clone(),
            max_num_consumers: 1,
            max_num_producers: 1,
            target: None,
        }
    }

    /// Which way messages flow.
    pub fn direction(&self) -> Direction {
        self.inner.direction
    }

    /// The DPA at the other end.
    pub fn dpa(&self) -> &Dpa {
        &self.inner.dpa
    }

    pub(crate) fn raw(&self) -> *mut sys::doca_comch_msgq {
        self.inner.raw
    }
}
