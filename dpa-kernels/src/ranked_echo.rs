//! The multi-thread kernel: N threads, each serving its own consumer/producer pair.

use dpakit_dev::abi::args::RankedPathArgs;
use dpakit_dev::abi::{Echo, ErrorCode, ImmMessage, OffloadResult};
use dpakit_dev::serve::serve;
use dpakit_dev::thread_kernel;

thread_kernel! {
    /// Echoes each [`Echo`] with its `tag` replaced by the thread's rank, so the host can check
    /// that every thread answered on its own queue. Other messages get an `OffloadResult` with
    /// `DOCA_ERROR_INVALID_VALUE`.
    pub RANKED_ECHO: fn ranked_echo(args: &RankedPathArgs) {
        let path = &args.path;
        serve(path, |msg, producer, flags| {
            let request = msg.message();
            let reply = match request.view::<Echo>() {
                Ok(echo) => ImmMessage::new(request.header.seq, &Echo { tag: u64::from(args.rank), ..echo }),
                Err(_) => ImmMessage::new(
                    request.header.seq,
                    &OffloadResult { status: ErrorCode::InvalidValue.raw() as u32, ..OffloadResult::default() },
                ),
            };
            producer.send(path.cpu_consumer_id, &reply, flags);
        })
    }
}
