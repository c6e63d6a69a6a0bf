//! Kernels every dpakit app carries, whatever else it holds ([`dpa_app!`](crate::dpa_app) adds
//! them to each app it declares).

// With feature `doca` the kernel bodies are not compiled, which leaves these unused.
#[allow(unused_imports)]
use crate::comch::Consumer;
#[allow(unused_imports)]
use dpakit_abi::handles::ComchConsumerHandle;

crate::rpc_kernel! {
    /// Posts `count` receives (credits) on a DPA consumer. A CPU producer can send only once the
    /// DPA posted receives, and a kernel runs only once a message arrived, so the host posts the
    /// first ones with this RPC (`MsgqPath` does).
    pub CONSUMER_ACK: fn dpakit_consumer_ack(consumer: ComchConsumerHandle, count: u32) {
        Consumer::new(consumer).ack(count);
    }
}
