//! `doca_comch_msgq`: a one-direction message queue between CPU and DPA.
//!
//! `set_dpa_consumer` makes a CPU→DPA queue (CPU producers, DPA consumers); `set_dpa_producer` a
//! DPA→CPU queue (DPA producers, CPU consumers). Endpoints are created from a started queue, carry
//! immediate data only (no `doca_buf`), and the queue cannot stop while endpoints exist.

mod view;

use crate::comch::{CpuConsumerShared, CreditWaiters, DpaConsumerShared};
use crate::ctx::{CtxState, StateMachine};
use crate::dpa::{Dpa, DpaDev};
use crate::error::{Result, bail};
use crate::limits;
use crate::sync::{AtomicU32, Ordering};
use crate::table::Table;
use std::fmt;
use std::sync::Arc;

/// Which way messages flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// CPU producers → DPA consumers (`doca_comch_msgq_set_dpa_consumer`).
    ToDpa,
    /// DPA producers → CPU consumers (`doca_comch_msgq_set_dpa_producer`).
    FromDpa,
}

pub(crate) struct MsgqShared {
    /// Its number in the process, for the live view.
    pub id: u32,
    pub state: StateMachine,
    pub direction: Direction,
    pub dpa: Dpa,
    pub max_num_consumers: u32,
    pub max_num_producers: u32,
    pub dpa_consumers: Table<DpaConsumerShared>,
    /// Shared with DPA producers, which must not keep the queue (and so the DPA) alive.
    pub cpu_consumers: Arc<Table<CpuConsumerShared>>,
    pub producers: AtomicU32,
    /// CPU producers (CPU→DPA queues), for DPA consumers to wake when they post receives.
    pub credit_waiters: Arc<CreditWaiters>,
    next_producer_id: AtomicU32,
    /// What its destroyed consumers counted, for the live view.
    retired: view::Retired,
}

impl fmt::Debug for MsgqShared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Msgq")
            .field("direction", &self.direction)
            .field("state", &self.state.get())
            .field("consumers", &self.consumers())
            .field("producers", &self.producers.load(Ordering::Relaxed))
            .finish()
    }
}

impl MsgqShared {
    pub(crate) fn consumers(&self) -> usize {
        self.dpa_consumers.len() + self.cpu_consumers.len()
    }

    /// Checks an endpoint of `kind` may be created now.
    pub(crate) fn check_endpoint(&self, kind: &str, needs: Direction) -> Result<()> {
        if self.state.get() != CtxState::Running {
            bail!(
                BadState,
                "cannot create a {kind}: the MsgQ is not started (doca_comch_msgq_start first)"
            );
        }
        if self.direction != needs {
            let (q, fix) = match self.direction {
                Direction::ToDpa => (
                    "CPU→DPA (set_dpa_consumer)",
                    "a DPA consumer or a CPU producer",
                ),
                Direction::FromDpa => (
                    "DPA→CPU (set_dpa_producer)",
                    "a DPA producer or a CPU consumer",
                ),
            };
            bail!(
                NotSupported,
                "cannot create a {kind} on a {q} MsgQ: it takes {fix}"
            );
        }
        Ok(())
    }

    /// Reserves a producer slot; returns its id (`id` if given, else the next one).
    pub(crate) fn add_producer(&self, id: Option<u32>) -> Result<u32> {
        if id == Some(0) {
            bail!(InvalidValue, "producer id 0 is not valid: ids start at 1");
        }
        let n = self.producers.fetch_add(1, Ordering::AcqRel);
        if n >= self.max_num_producers {
            self.producers.fetch_sub(1, Ordering::AcqRel);
            return Err(self.producer_capacity_error());
        }
        Ok(id.unwrap_or_else(|| self.next_producer_id.fetch_add(1, Ordering::Relaxed)))
    }

    /// The error for a producer beyond `max_num_producers`.
    pub(crate) fn producer_capacity_error(&self) -> crate::error::Error {
        crate::error::err(
            crate::error::ErrorCode::NoMemory,
            format!(
                "the MsgQ already has its maximum of {} producers (doca_comch_msgq_set_max_num_producers)",
                self.max_num_producers
            ),
        )
    }

    pub(crate) fn remove_producer(&self) {
        self.producers.fetch_sub(1, Ordering::AcqRel);
    }

    pub(crate) fn consumer_capacity_error(&self) -> crate::error::Error {
        crate::error::err(
            crate::error::ErrorCode::NoMemory,
            format!(
                "the MsgQ already has its maximum of {} consumers (doca_comch_msgq_set_max_num_consumers)",
                self.max_num_consumers
            ),
        )
    }
}

/// Configuration of a [`Msgq`].
#[derive(Debug)]
pub struct MsgqBuilder {
    dev: crate::dev::Dev,
    max_num_consumers: u32,
    max_num_producers: u32,
    target: Option<(Dpa, Direction)>,
}

impl MsgqBuilder {
    /// `doca_comch_msgq_set_max_num_consumers` (default 1).
    pub fn max_num_consumers(mut self, n: u32) -> Self {
        self.max_num_consumers = n;
        self
    }

    /// `doca_comch_msgq_set_max_num_producers` (default 1).
    pub fn max_num_producers(mut self, n: u32) -> Self {
        self.max_num_producers = n;
        self
    }

    /// `doca_comch_msgq_set_dpa_consumer`: messages flow CPU → DPA.
    pub fn dpa_consumer(mut self, dpa: &Dpa) -> Self {
        self.target = Some((dpa.clone(), Direction::ToDpa));
        self
    }

    /// `doca_comch_msgq_set_dpa_producer`: messages flow DPA → CPU.
    pub fn dpa_producer(mut self, dpa: &Dpa) -> Self {
        self.target = Some((dpa.clone(), Direction::FromDpa));
        self
    }

    /// `doca_comch_msgq_start`.
    pub fn start(self) -> Result<Msgq> {
        let Some((dpa, direction)) = self.target else {
            bail!(
                BadState,
                "a MsgQ needs a direction before start: call dpa_consumer(&dpa) (CPU→DPA) or \
                 dpa_producer(&dpa) (DPA→CPU)"
            );
        };
        for (what, n, max) in [
            (
                "max_num_consumers",
                self.max_num_consumers,
                limits::MSGQ_MAX_NUM_CONSUMERS,
            ),
            (
                "max_num_producers",
                self.max_num_producers,
                limits::MSGQ_MAX_NUM_PRODUCERS,
            ),
        ] {
            if n == 0 || n as usize > max {
                bail!(InvalidValue, "MsgQ {what} {n} is outside 1..={max}");
            }
        }
        self.dev.as_devinfo().comch_msgq_cap_is_supported()?;
        if dpa.dev() != &self.dev {
            bail!(
                InvalidValue,
                "the MsgQ's device {} is not the DPA's device {}: create both on the same doca_dev",
                self.dev.as_devinfo().get_pci_addr_str(),
                dpa.dev().as_devinfo().get_pci_addr_str()
            );
        }
        dpa.shared.require_running("create a MsgQ on it")?;
        static NEXT_ID: crate::sync::plain::AtomicU32 = crate::sync::plain::AtomicU32::new(1);
        let shared = Arc::new(MsgqShared {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            state: StateMachine::new("the MsgQ"),
            direction,
            dpa,
            max_num_consumers: self.max_num_consumers,
            max_num_producers: self.max_num_producers,
            dpa_consumers: Table::new(self.max_num_consumers as usize),
            cpu_consumers: Arc::new(Table::new(self.max_num_consumers as usize)),
            producers: AtomicU32::new(0),
            credit_waiters: Arc::new(CreditWaiters::new(self.max_num_producers as usize)),
            next_producer_id: AtomicU32::new(1),
            retired: view::Retired::default(),
        });
        shared.state.start()?;
        let source: std::sync::Weak<dyn dpakit_dpa_runtime::view::QueueSource> =
            Arc::downgrade(&shared) as _;
        shared.dpa.shared.add_queue(source);
        Ok(Msgq { shared })
    }
}

/// `doca_comch_msgq`.
#[derive(Debug)]
pub struct Msgq {
    pub(crate) shared: Arc<MsgqShared>,
}

impl Msgq {
    /// `doca_comch_msgq_create` on `dev`.
    pub fn builder(dev: &crate::dev::Dev) -> MsgqBuilder {
        MsgqBuilder {
            dev: dev.clone(),
            max_num_consumers: 1,
            max_num_producers: 1,
            target: None,
        }
    }

    /// Which way messages flow.
    pub fn direction(&self) -> Direction {
        self.shared.direction
    }

    /// The queue's state.
    pub fn state(&self) -> CtxState {
        self.shared.state.get()
    }

    /// `doca_comch_msgq_stop`: fails with IN_USE while consumers or producers exist.
    pub fn stop(&self) -> Result<()> {
        let consumers = self.shared.consumers();
        let producers = self.shared.producers.load(Ordering::Acquire);
        if consumers + producers as usize > 0 {
            bail!(
                InUse,
                "cannot stop the MsgQ: {consumers} consumer(s) and {producers} producer(s) still \
                 exist; stop and destroy them first"
            );
        }
        self.shared.state.stop()
    }

    /// `doca_comch_msgq_start` after a stop.
    pub fn start(&self) -> Result<()> {
        self.shared.state.start()
    }
}

impl Drop for Msgq {
    fn drop(&mut self) {
        // Endpoints keep the shared queue alive; the handle just stops it when it can.
        let _ = self.stop();
    }
}
