//! The ping-pong kernel: each [`PingPong`] comes back with its count advanced by one.

use dpakit_dev::abi::args::MsgqPathArgs;
use dpakit_dev::abi::{ErrorCode, ImmMessage, OffloadResult, PingPong};
use dpakit_dev::serve::serve;
use dpakit_dev::thread_kernel;

thread_kernel! {
    /// Answers each `PingPong { count, .. }` with `count + 1` (other fields unchanged, same
    /// sequence number). Anything else is answered with an `OffloadResult` carrying
    /// `DOCA_ERROR_INVALID_VALUE`.
    pub PING_PONG: fn ping_pong(args: &MsgqPathArgs) {
        serve(args, |msg, producer, flags| {
            let request = msg.message();
            let reply = match request.view::<PingPong>() {
                Ok(ping) => ImmMessage::new(request.header.seq, &PingPong { count: ping.count + 1, ..ping }),
                Err(_) => ImmMessage::new(
                    request.header.seq,
                    &OffloadResult { status: ErrorCode::InvalidValue.raw() as u32, ..OffloadResult::default() },
                ),
            };
            producer.send(args.cpu_consumer_id, &reply, flags);
        })
    }
}
