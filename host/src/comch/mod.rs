//! DOCA Comch: the control path between the host and the BlueField Arm ([`Server`],
//! [`Client`], [`Connection`], sending on a [`Channel`]), the fast path on a connection
//! ([`Producer`], [`Consumer`]), and the MsgQ endpoints: the CPU
//! producer and DPA consumer of a CPU → DPA queue, the DPA producer and CPU consumer of a
//! DPA → CPU queue (`doca_comch_producer`, `doca_comch_consumer`).

mod client;
mod cpu_consumer;
mod cpu_producer;
mod ctrl;
mod dpa_endpoints;
#[cfg(feature = "tokio")]
mod events;
mod fast;
mod message;
mod server;

pub use client::{Client, ClientBuilder};
pub use ctrl::{Channel, ClientEvent, Connection, Counters, EVENT_QUEUE_CAP, Event, ServerEvent};
pub use fast::{Consumer, ConsumerBuilder, Loan, Producer, ProducerBuilder, ReceivedBuf, Sample};
pub use message::MessageBuf;
pub use server::{Server, ServerBuilder};

pub use cpu_consumer::{ConsumerMessage, CpuConsumer, CpuConsumerBuilder, RecvCompletion};
pub use cpu_producer::{CpuProducer, CpuProducerBuilder, SendCompletion};
pub use dpa_endpoints::{DpaConsumer, DpaConsumerBuilder, DpaProducer, DpaProducerBuilder};
#[cfg(feature = "tokio")]
pub use events::Events;

use crate::ctx::{self, StateChangedCb};
use crate::error::{Result, doca};
use crate::pe::Pe;
use dpakit_sys as sys;

/// `doca_comch_producer_as_ctx`.
fn ctx_of_producer(p: *mut sys::doca_comch_producer) -> *mut sys::doca_ctx {
    // SAFETY: a producer this crate just created.
    unsafe { sys::doca_comch_producer_as_ctx(p) }
}

/// `doca_comch_consumer_as_ctx`.
fn ctx_of_consumer(c: *mut sys::doca_comch_consumer) -> *mut sys::doca_ctx {
    // SAFETY: a consumer this crate just created.
    unsafe { sys::doca_comch_consumer_as_ctx(c) }
}

/// An endpoint whose context user data points at it, with a state-changed callback.
pub(crate) trait HasStateCallback {
    fn state_callback(&self) -> Option<&StateChangedCb>;
}

/// The last steps of starting a CPU endpoint, once its tasks are configured: the context's user
/// data points at `inner` (where the callbacks find the endpoint; boxed, so it does not move),
/// the state-changed callback is set if the endpoint has one, and the context is connected to
/// `pe` and started.
pub(crate) fn start_on_pe<T: HasStateCallback>(
    ctx: *mut sys::doca_ctx,
    inner: &T,
    pe: &Pe,
) -> Result<()> {
    let user_data = sys::doca_data {
        ptr: (inner as *const T).cast_mut().cast(),
    };
    doca!(doca_ctx_set_user_data(ctx, user_data))?;
    if inner.state_callback().is_some() {
        doca!(doca_ctx_set_state_changed_cb(ctx, Some(state_changed::<T>)))?;
    }
    doca!(doca_pe_connect_ctx(pe.raw(), ctx))?;
    doca!(doca_ctx_start(ctx))
}

/// The state-changed callback of endpoints: calls the Rust closure of the endpoint the context's
/// user data points at.
unsafe extern "C" fn state_changed<T: HasStateCallback>(
    user_data: sys::doca_data,
    _ctx: *mut sys::doca_ctx,
    prev: sys::doca_ctx_states,
    next: sys::doca_ctx_states,
) {
    // SAFETY: endpoints set their context's user data to their boxed inner state, which lives
    // until the context is destroyed.
    let owner = unsafe { &*user_data.ptr.cast::<T>() };
    if let Some(cb) = owner.state_callback() {
        // A panic must not unwind into C; the transition is reported, the panic printed.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            cb(ctx::state_from_raw(prev), ctx::state_from_raw(next))
        }));
        if outcome.is_err() {
            eprintln!(
                "dpakit: a state-changed callback panicked; the panic was stopped at the C boundary"
            );
        }
    }
}
