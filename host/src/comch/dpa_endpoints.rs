//! The DPA consumer of a CPU → DPA MsgQ and the DPA producer of a DPA → CPU MsgQ. Their
//! datapath runs in kernels; here they are created, configured and named.

use super::{ctx_of_consumer, ctx_of_producer};
use crate::ctx;
use crate::dpa::{ConsumerCompletion, DpaCompletion};
use crate::error::{Result, bail, doca};
use crate::msgq::{Direction, Msgq};
use dpakit_abi::handles::{ComchConsumerHandle, ComchProducerHandle};
use dpakit_sys as sys;

/// Configuration of a [`DpaConsumer`].
#[derive(Debug)]
pub struct DpaConsumerBuilder<'a> {
    msgq: &'a Msgq,
    completion: &'a ConsumerCompletion,
    dev_num_recv: u32,
    user_data: u32,
}

/// `doca_comch_consumer` whose datapath runs on the DPA.
#[derive(Debug)]
pub struct DpaConsumer {
    raw: *mut sys::doca_comch_consumer,
    id: u32,
    handle: ComchConsumerHandle,
    _completion: ConsumerCompletion,
    _msgq: Msgq,
}

impl<'a> DpaConsumerBuilder<'a> {
    /// `doca_comch_consumer_set_dev_max_num_recv`: receives the kernel may post at once
    /// (default 64).
    #[doc(alias = "doca_comch_consumer_set_dev_max_num_recv")]
    pub fn dev_num_recv(mut self, n: u32) -> Self {
        self.dev_num_recv = n;
        self
    }

    /// The user data of `doca_comch_consumer_set_completion`, which tells this consumer apart
    /// among those sharing a completion context (default 0).
    pub fn user_data(mut self, user_data: u32) -> Self {
        self.user_data = user_data;
        self
    }

    /// `doca_comch_msgq_consumer_create` + `doca_ctx_set_datapath_on_dpa` +
    /// `doca_comch_consumer_set_completion` + `doca_ctx_start`.
    pub fn start(self) -> Result<DpaConsumer> {
        if self.msgq.direction() != Direction::ToDpa {
            bail!(
                NotSupported,
                "DPA consumers belong to CPU -> DPA queues (dpa_consumer); this one flows DPA -> CPU"
            );
        }
        let mut raw = std::ptr::null_mut();
        doca!(doca_comch_msgq_consumer_create(self.msgq.raw(), &mut raw))?;
        let mut consumer = DpaConsumer {
            raw,
            id: 0,
            handle: ComchConsumerHandle(0),
            _completion: self.completion.clone(),
            _msgq: self.msgq.clone(),
        };
        let ctx = ctx_of_consumer(raw);
        doca!(doca_comch_consumer_get_id(raw, &mut consumer.id))?;
        doca!(doca_ctx_set_datapath_on_dpa(ctx, self.msgq.dpa().raw()))?;
        doca!(doca_comch_consumer_set_completion(
            raw,
            self.completion.raw(),
            self.user_data
        ))?;
        doca!(doca_comch_consumer_set_dev_max_num_recv(
            raw,
            self.dev_num_recv
        ))?;
        doca!(doca_ctx_start(ctx))?;
        doca!(doca_comch_consumer_get_dpa_handle(
            raw,
            &mut consumer.handle.0
        ))?;
        Ok(consumer)
    }
}

impl DpaConsumer {
    /// A DPA consumer on `msgq` reporting to `completion`.
    pub fn builder<'a>(
        msgq: &'a Msgq,
        completion: &'a ConsumerCompletion,
    ) -> DpaConsumerBuilder<'a> {
        DpaConsumerBuilder {
            msgq,
            completion,
            dev_num_recv: 64,
            user_data: 0,
        }
    }

    /// `doca_comch_consumer_get_id`: what CPU producers address.
    #[doc(alias = "doca_comch_consumer_get_id")]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// `doca_comch_consumer_get_dpa_handle`.
    #[doc(alias = "doca_comch_consumer_get_dpa_handle")]
    pub fn dpa_handle(&self) -> ComchConsumerHandle {
        self.handle
    }
}

impl Drop for DpaConsumer {
    #[doc(alias = "doca_comch_consumer_destroy")]
    fn drop(&mut self) {
        ctx::teardown_without_pe(ctx_of_consumer(self.raw), "DPA consumer", || {
            doca!(doca_comch_consumer_destroy(self.raw))
        });
    }
}

/// Configuration of a [`DpaProducer`].
#[derive(Debug)]
pub struct DpaProducerBuilder<'a> {
    msgq: &'a Msgq,
    completion: &'a DpaCompletion,
    dev_num_send: u32,
    user_data: u32,
}

/// `doca_comch_producer` whose datapath runs on the DPA.
#[derive(Debug)]
pub struct DpaProducer {
    raw: *mut sys::doca_comch_producer,
    id: u32,
    handle: ComchProducerHandle,
    _completion: DpaCompletion,
    _msgq: Msgq,
}

impl<'a> DpaProducerBuilder<'a> {
    /// `doca_comch_producer_set_dev_max_num_send`: sends in flight without a reported
    /// completion (default 64).
    #[doc(alias = "doca_comch_producer_set_dev_max_num_send")]
    pub fn dev_num_send(mut self, n: u32) -> Self {
        self.dev_num_send = n;
        self
    }

    /// `doca_ctx_set_user_data`: returned in this producer's DPA completions.
    #[doc(alias = "doca_ctx_set_user_data")]
    pub fn user_data(mut self, user_data: u32) -> Self {
        self.user_data = user_data;
        self
    }

    /// `doca_comch_msgq_producer_create` + `doca_ctx_set_datapath_on_dpa` +
    /// `doca_comch_producer_dpa_completion_attach` + `doca_ctx_start`.
    pub fn start(self) -> Result<DpaProducer> {
        if self.msgq.direction() != Direction::FromDpa {
            bail!(
                NotSupported,
                "DPA producers belong to DPA -> CPU queues (dpa_producer); this one flows CPU -> DPA"
            );
        }
        let mut raw = std::ptr::null_mut();
        doca!(doca_comch_msgq_producer_create(self.msgq.raw(), &mut raw))?;
        let mut producer = DpaProducer {
            raw,
            id: 0,
            handle: ComchProducerHandle(0),
            _completion: self.completion.clone(),
            _msgq: self.msgq.clone(),
        };
        let ctx = ctx_of_producer(raw);
        doca!(doca_comch_producer_get_id(raw, &mut producer.id))?;
        doca!(doca_ctx_set_datapath_on_dpa(ctx, self.msgq.dpa().raw()))?;
        doca!(doca_ctx_set_user_data(
            ctx,
            sys::doca_data {
                u64_: u64::from(self.user_data)
            }
        ))?;
        doca!(doca_comch_producer_set_dev_max_num_send(
            raw,
            self.dev_num_send
        ))?;
        doca!(doca_comch_producer_dpa_completion_attach(
            raw,
            self.completion.raw()
        ))?;
        doca!(doca_ctx_start(ctx))?;
        doca!(doca_comch_producer_get_dpa_handle(
            raw,
            &mut producer.handle.0
        ))?;
        Ok(producer)
    }
}

impl DpaProducer {
    /// A DPA producer on `msgq` reporting to `completion`.
    pub fn builder<'a>(msgq: &'a Msgq, completion: &'a DpaCompletion) -> DpaProducerBuilder<'a> {
        DpaProducerBuilder {
            msgq,
            completion,
            dev_num_send: 64,
            user_data: 0,
        }
    }

    /// `doca_comch_producer_get_id`: what CPU consumers see as the producer id.
    #[doc(alias = "doca_comch_producer_get_id")]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// `doca_comch_producer_get_dpa_handle`.
    #[doc(alias = "doca_comch_producer_get_dpa_handle")]
    pub fn dpa_handle(&self) -> ComchProducerHandle {
        self.handle
    }
}

impl Drop for DpaProducer {
    #[doc(alias = "doca_comch_producer_destroy")]
    fn drop(&mut self) {
        ctx::teardown_without_pe(ctx_of_producer(self.raw), "DPA producer", || {
            doca!(doca_comch_producer_destroy(self.raw))
        });
    }
}
