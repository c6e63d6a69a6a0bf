//! The receive loop of a kernel that answers messages, written once: a kernel serving a
//! [`MsgqPathArgs`] says what to reply and nothing else.
//!
//! ```
//! use dpakit::abi::args::MsgqPathArgs;
//!
//! dpakit::thread_kernel! {
//!     /// Replies to each message with the same bytes.
//!     pub MY_ECHO: fn doc_serve_echo(args: &MsgqPathArgs) {
//!         dpakit_dev::serve::echo(args)
//!     }
//! }
//! dpakit::dpa_app! {
//!     /// The example's app.
//!     pub APP = doc_serve_app [MY_ECHO]
//! }
//!
//! # fn main() -> dpakit::Result<()> {
//! let dpa = dpakit::dpa::Dpa::builder(&dpakit::open_dpa_dev()?).app(&APP).start()?;
//! let pe = dpakit::pe::Pe::new()?;
//! let path = dpakit::MsgqPath::builder(&dpa, &pe, &MY_ECHO).start()?;
//! path.send(b"ping")?;
//! assert_eq!(path.recv(std::time::Duration::from_secs(5))?.bytes(), b"ping");
//! # Ok(())
//! # }
//! ```
//!
//! [`serve`] is the loop with a reply of the kernel's own (the example of
//! [`thread_kernel!`](crate::thread_kernel) reverses the bytes).
//!
//! The loop keeps the rules a kernel must keep on the device: it answers only while the CPU
//! consumer has a receive posted (`is_consumer_empty`), gives each consumed message's credit
//! back, requests a notification before it reschedules, and paces its send reports so the
//! producer's completion queue never overflows.

use crate::SubmitFlags;
use crate::comch::{Consumer, ConsumerCompletion, Producer, ReceivedMessage};
use crate::completion::Completion;
use crate::thread;
use dpakit_abi::args::{MsgqPathArgs, ServeState};

/// Messages one activation of [`serve`] answers at most before it re-arms and reschedules: the
/// other threads of its EU get their turn, and no activation runs without end while messages
/// keep coming (a message still waiting triggers the thread again at once).
pub const BATCH: u32 = 64;

/// Serves the messages waiting on `path`, at most [`BATCH`] of them, then re-arms and
/// reschedules.
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
pub fn serve(
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

    for _ in 0..BATCH {
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

/// Replies to the messages waiting on `path` with the same immediate bytes, then re-arms and
/// reschedules: an echo kernel in one call ([`serve`] with a reply that sends the message back).
#[inline(always)]
pub fn echo(path: &MsgqPathArgs) -> ! {
    serve(path, |msg, producer, flags| {
        // Cannot fail on a conforming device: an immediate is at most 32 bytes.
        let _ = producer.post_send_imm_only(path.cpu_consumer_id, msg.imm(), flags);
    })
}

/// Consumes every message waiting on `path` without answering (a one-way sink), then re-arms
/// and reschedules: the completions are acked and the credits given back in one batch each,
/// and the messages counted in the [`ServeState`] at the thread's local storage (`sends`), if
/// the host set one. Only the consumer half of `path` is used.
#[inline(always)]
pub fn sink(path: &MsgqPathArgs) -> ! {
    let mut completions = ConsumerCompletion::new(path.consumer_completion);
    let mut taken = 0u32;
    while completions.get().is_some() {
        taken += 1;
    }
    if taken > 0 {
        completions.ack(u64::from(taken));
        Consumer::new(path.consumer).ack(taken);
        // SAFETY: as in `serve`, a non-zero local storage of these kernels is the device
        // address of a ServeState the host allocated for this thread alone.
        if let Some(state) = unsafe { thread::local_storage_mut::<ServeState>() } {
            state.sends = state.sends.wrapping_add(taken);
        }
    }
    completions.request_notification();
    thread::reschedule()
}

/// Acks every completion waiting on a DPA completion context.
#[inline(always)]
pub fn drain(completion: &mut Completion) {
    let mut n = 0;
    while completion.get().is_some() {
        n += 1;
    }
    if n > 0 {
        completion.ack(n);
    }
}
