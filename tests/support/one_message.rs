//! One message to a DPA thread that is not on a `MsgqPath`: for tests that start a kernel with
//! a hand-made argument and watch what it does with its first message.

use dpakit::comch::{CpuProducer, DpaConsumer};
use dpakit::dpa::{ConsumerCompletion, Dpa, DpaThread};
use dpakit::msgq::Msgq;
use dpakit::pe::Pe;

/// What must stay alive while the thread handles the message (dropped in this order).
pub struct OneMessage {
    _producer: CpuProducer,
    _consumer: DpaConsumer,
    _completion: ConsumerCompletion,
    _to_dpa: Msgq,
}

/// Attaches a consumer completion and a DPA consumer to `thread`, runs it, posts one credit
/// and sends it one 8-byte message from a CPU producer on `pe`.
pub fn send_one_message(dpa: &Dpa, pe: &Pe, thread: &DpaThread) -> OneMessage {
    let to_dpa = Msgq::builder(dpa.dev()).dpa_consumer(dpa).start().unwrap();
    let completion = ConsumerCompletion::builder(dpa)
        .dpa_thread(thread)
        .start()
        .unwrap();
    let consumer = DpaConsumer::builder(&to_dpa, &completion).start().unwrap();
    let producer = CpuProducer::builder(&to_dpa, pe).start().unwrap();
    thread.run().unwrap();
    dpa.rpc(dpa.app().consumer_ack(), (consumer.dpa_handle(), 1))
        .unwrap();
    producer.send(&[1; 8], consumer.id(), 0).unwrap();
    OneMessage {
        _producer: producer,
        _consumer: consumer,
        _completion: completion,
        _to_dpa: to_dpa,
    }
}
