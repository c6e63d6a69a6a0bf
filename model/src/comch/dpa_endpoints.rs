//! The DPA consumer of a CPU→DPA MsgQ and the DPA producer of a DPA→CPU MsgQ. Their datapath
//! runs in kernels through the device functions; here they are created, configured and named.

use super::{DpaConsumerShared, DpaProducerShared};
use crate::dpa::objects;
use crate::error::{Result, bail};
use crate::limits;
use crate::msgq::{Direction, Msgq, MsgqShared};
use crate::sync::AtomicU32;
use dpakit_abi::handles::{ComchConsumerHandle, ComchProducerHandle};
use dpakit_dpa_runtime::Kind;
use dpakit_dpa_runtime::completion::{ConsumerCompletion, DpaCompletion};
use std::sync::Arc;

/// Configuration of a [`DpaConsumer`].
#[derive(Debug)]
pub struct DpaConsumerBuilder<'a> {
    msgq: &'a Msgq,
    completion: &'a ConsumerCompletion,
    dev_num_recv: u32,
    user_data: u32,
    id: Option<u32>,
}

/// `doca_comch_consumer` whose datapath runs on the DPA.
#[derive(Debug)]
pub struct DpaConsumer {
    shared: Arc<DpaConsumerShared>,
    user_data: u32,
    msgq: Arc<MsgqShared>,
    msgq_index: usize,
    handle: u64,
    handle_index: usize,
}

impl<'a> DpaConsumerBuilder<'a> {
    /// `doca_comch_consumer_set_dev_num_recv`: receives the kernel may post at once (default 64).
    pub fn dev_num_recv(mut self, n: u32) -> Self {
        self.dev_num_recv = n;
        self
    }

    /// The user data of `doca_comch_consumer_set_completion`, which identifies this consumer
    /// among those sharing a completion context (default 0).
    pub fn user_data(mut self, user_data: u32) -> Self {
        self.user_data = user_data;
        self
    }

    /// The consumer id (`doca_comch_consumer_get_id`) instead of the first free one; id `i` takes
    /// slot `(i - 1) % max_num_consumers` (ids from 1; the slot must be free).
    pub fn id(mut self, id: u32) -> Self {
        self.id = Some(id);
        self
    }

    /// `doca_comch_msgq_consumer_create` + `doca_comch_consumer_set_completion` + start.
    pub fn start(self) -> Result<DpaConsumer> {
        let msgq = &self.msgq.shared;
        msgq.check_endpoint("DPA consumer", Direction::ToDpa)?;
        let dpa = &msgq.dpa.shared;
        if !Arc::ptr_eq(dpa, &self.completion.dpa.shared) {
            bail!(
                InvalidValue,
                "the consumer completion belongs to another DPA than the MsgQ"
            );
        }
        if self.dev_num_recv == 0 || self.dev_num_recv as usize > limits::CONSUMER_MAX_NUM_RECV {
            bail!(
                InvalidValue,
                "dev_num_recv {} is outside 1..={}",
                self.dev_num_recv,
                limits::CONSUMER_MAX_NUM_RECV
            );
        }
        let cc = &self.completion.shared;
        let Some(tag) = cc.reserve_consumer() else {
            bail!(
                NoMemory,
                "the consumer completion already serves its maximum of {} consumers",
                cc.max_num_consumers
            );
        };
        let make = |index: usize| {
            Arc::new(DpaConsumerShared::new(
                self.id.unwrap_or_else(|| msgq.dpa_consumers.id_for(index)),
                tag,
                self.dev_num_recv,
                cc.clone(),
                msgq.credit_waiters.clone(),
            ))
        };
        let made = match self.id {
            None => msgq.dpa_consumers.insert_with(make),
            Some(0) => None,
            Some(id) => {
                let index = msgq.dpa_consumers.index_of_id(id);
                msgq.dpa_consumers
                    .insert_at(index, make)
                    .map(|c| (index, c))
            }
        };
        let Some((msgq_index, shared)) = made else {
            cc.release_consumer(tag);
            return Err(match self.id {
                Some(id) => crate::error::err(
                    crate::error::ErrorCode::AlreadyExist,
                    format!(
                        "consumer id {id}'s slot is taken, or the id is 0, on this MsgQ of {} consumers",
                        msgq.max_num_consumers
                    ),
                ),
                None => msgq.consumer_capacity_error(),
            });
        };
        // The DPA's table keeps the consumer alive as long as the DPA, which is what lets the
        // completion context (and the workers polling it) hold a plain pointer to it.
        let Some(handle_index) = objects(dpa).dpa_consumers.insert(shared.clone()) else {
            msgq.dpa_consumers.remove(msgq_index);
            cc.release_consumer(tag);
            bail!(NoMemory, "too many DPA consumers on this DPA");
        };
        cc.attach_consumer(tag, &shared.polled);
        Ok(DpaConsumer {
            user_data: self.user_data,
            handle: dpa.handle(Kind::DpaConsumer, handle_index),
            shared,
            msgq: msgq.clone(),
            msgq_index,
            handle_index,
        })
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
            id: None,
        }
    }

    /// `doca_comch_consumer_get_id`: what CPU producers address.
    pub fn id(&self) -> u32 {
        self.shared.id
    }

    /// `doca_comch_consumer_get_dpa_handle`.
    pub fn dpa_handle(&self) -> ComchConsumerHandle {
        ComchConsumerHandle(self.handle)
    }

    /// The user data given with its completion context.
    pub fn user_data(&self) -> u32 {
        self.user_data
    }

    /// Receives the kernel has posted and no message has filled yet.
    pub fn credits(&self) -> u64 {
        self.shared.credits()
    }
}

impl Drop for DpaConsumer {
    fn drop(&mut self) {
        self.msgq.dpa_consumers.remove(self.msgq_index);
        self.msgq.retire_dpa_consumer(&self.shared);
        self.shared.completion.release_consumer(self.shared.tag);
        let dpa = &self.msgq.dpa.shared;
        objects(dpa)
            .dpa_consumers
            .retire(self.handle_index, &dpa.sched.grace);
    }
}

/// Configuration of a [`DpaProducer`].
#[derive(Debug)]
pub struct DpaProducerBuilder<'a> {
    msgq: &'a Msgq,
    completion: &'a DpaCompletion,
    dev_num_send: u32,
    user_data: u32,
    id: Option<u32>,
}

/// `doca_comch_producer` whose datapath runs on the DPA.
#[derive(Debug)]
pub struct DpaProducer {
    shared: Arc<DpaProducerShared>,
    msgq: Arc<MsgqShared>,
    handle: u64,
    handle_index: usize,
}

impl<'a> DpaProducerBuilder<'a> {
    /// `doca_comch_producer_set_dev_num_send`: sends in flight without a reported completion
    /// (default 64).
    pub fn dev_num_send(mut self, n: u32) -> Self {
        self.dev_num_send = n;
        self
    }

    /// `doca_ctx_set_user_data`: returned in this producer's DPA completions.
    pub fn user_data(mut self, user_data: u32) -> Self {
        self.user_data = user_data;
        self
    }

    /// The producer id (`doca_comch_producer_get_id`) instead of the next one.
    pub fn id(mut self, id: u32) -> Self {
        self.id = Some(id);
        self
    }

    /// `doca_comch_msgq_producer_create` + `doca_comch_producer_dpa_completion_attach` + start.
    pub fn start(self) -> Result<DpaProducer> {
        let msgq = &self.msgq.shared;
        msgq.check_endpoint("DPA producer", Direction::FromDpa)?;
        let dpa = &msgq.dpa.shared;
        if !Arc::ptr_eq(dpa, &self.completion.dpa.shared) {
            bail!(
                InvalidValue,
                "the DPA completion belongs to another DPA than the MsgQ"
            );
        }
        if self.dev_num_send == 0 || self.dev_num_send as usize > limits::PRODUCER_MAX_NUM_SEND {
            bail!(
                InvalidValue,
                "dev_num_send {} is outside 1..={}",
                self.dev_num_send,
                limits::PRODUCER_MAX_NUM_SEND
            );
        }
        let id = msgq.add_producer(self.id)?;
        let shared = Arc::new(DpaProducerShared {
            id,
            dev_num_send: self.dev_num_send,
            unreported: AtomicU32::new(0),
            completion: self.completion.shared.clone(),
            user_data: self.user_data,
            cpu_consumers: msgq.cpu_consumers.clone(),
        });
        let Some(handle_index) = objects(dpa).dpa_producers.insert(shared.clone()) else {
            msgq.remove_producer();
            bail!(NoMemory, "too many DPA producers on this DPA");
        };
        Ok(DpaProducer {
            handle: dpa.handle(Kind::DpaProducer, handle_index),
            shared,
            msgq: msgq.clone(),
            handle_index,
        })
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
            id: None,
        }
    }

    /// `doca_comch_producer_get_id`: what CPU consumers see as the producer id.
    pub fn id(&self) -> u32 {
        self.shared.id
    }

    /// `doca_comch_producer_get_dpa_handle`.
    pub fn dpa_handle(&self) -> ComchProducerHandle {
        ComchProducerHandle(self.handle)
    }
}

impl Drop for DpaProducer {
    fn drop(&mut self) {
        let dpa = &self.msgq.dpa.shared;
        objects(dpa)
            .dpa_producers
            .retire(self.handle_index, &dpa.sched.grace);
        self.msgq.remove_producer();
    }
}
