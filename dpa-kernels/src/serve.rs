//! The receive loop every message-serving kernel shares.

use dpakit_dev::SubmitFlags;
use dpakit_dev::abi::args::{MsgqPathArgs, ServeState};
use dpakit_dev::comch::{Consumer, ConsumerCompletion, Producer, ReceivedMessage};
use dpakit_dev::completion::Completion;
use dpakit_dev::thread;

/// Serves every message waiting on `path`, then re-arms and reschedules.
///
/// For each message `reply` answers through the producer with the flags it is given (exactly
/// one message to `path.cpu_consumer_id`); then the completion is acked (the immediate is dead
/// after that, so the reply goes first) and the consumer gets its credit back.
///
/// Send reports: with a [`ServeState`] in the thread's local storage, only one reply in
/// `report_every` reports a completion (the rest carry OPTIMIZE_REPORTS); without one, every
/// reply reports. Reports are released right after each reporting reply, so a long burst never
/// overflows their queue.
#[inline(always)]
pub(crate) fn serve(
    path: &MsgqPathArgs,
    mut reply: impl FnMut(&ReceivedMessage<'_>, &Producer, SubmitFlags),
) -> ! {
    let mut completions = ConsumerCompletion::new(path.consumer_completion);
    let consumer = Consumer::new(path.consumer);
    let producer = Producer::new(path.producer);
    let mut reports = Completion::new(path.producer_completion);
    // SAFETY: a non-zero local storage of these kernels is the device address of a ServeState
    // the host allocated for this thread alone.
    let mut state = unsafe { thread::local_storage_mut::<ServeState>() };

    loop {
        // A reply needs a receive posted on the CPU consumer. With none, the message stays
        // queued: re-arming with a message waiting triggers this thread again at once, so it is
        // answered on a later activation, and the CPU side is never sent more than it can take.
        if producer.is_consumer_empty(path.cpu_consumer_id) {
            break;
        }
        let Some(msg) = completions.get() else { break };
        let reports_this_one = match state.as_deref_mut() {
            Some(s) => {
                s.sends = s.sends.wrapping_add(1);
                s.report_every <= 1 || s.sends % s.report_every == 0
            }
            None => true,
        };
        // A reporting send must report even when the path asked for OPTIMIZE_REPORTS: without
        // one in every queue's worth, the producer's send queue overflows.
        let flags = if reports_this_one {
            path.submit_flags.without(SubmitFlags::OPTIMIZE_REPORTS)
        } else {
            path.submit_flags | SubmitFlags::OPTIMIZE_REPORTS
        };
        reply(&msg, &producer, flags);
        completions.ack(1);
        consumer.ack(1);
        if reports_this_one {
            drain(&mut reports);
        }
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
