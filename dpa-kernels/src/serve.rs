//! The receive loop every message-serving kernel shares.

use dpakit_dev::abi::args::MsgqPathArgs;
use dpakit_dev::comch::{Consumer, ConsumerCompletion, Producer, ReceivedMessage};
use dpakit_dev::completion::Completion;
use dpakit_dev::thread;

/// Serves every message waiting on `path`, then re-arms and reschedules.
///
/// For each message `reply` answers through the producer (it must send exactly one message to
/// `path.cpu_consumer_id`); then the completion is acked (the immediate is dead after that, so
/// the reply goes first), the consumer gets its credit back, and the producer's send reports
/// are released, so a long burst never overflows their queue.
#[inline(always)]
pub(crate) fn serve(
    path: &MsgqPathArgs,
    mut reply: impl FnMut(&ReceivedMessage<'_>, &Producer),
) -> ! {
    let mut completions = ConsumerCompletion::new(path.consumer_completion);
    let consumer = Consumer::new(path.consumer);
    let producer = Producer::new(path.producer);
    let mut reports = Completion::new(path.producer_completion);

    while let Some(msg) = completions.get() {
        reply(&msg, &producer);
        completions.ack(1);
        consumer.ack(1);
        drain(&mut reports);
    }
    completions.request_notification();
    thread::reschedule()
}

/// Acks every completion waiting on a DPA completion context.
#[inline(always)]
pub(crate) fn drain(completion: &mut Completion) {
    let mut n = 0;
    while completion.get().is_some() {
        n += 1;
    }
    if n > 0 {
        completion.ack(n);
    }
}
