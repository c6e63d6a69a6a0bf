//! The kit's `echo` kernel behind two MsgQs, wired by hand the way a DOCA program wires it:
//! for tests that drive the CPU producer and consumer themselves (from their callbacks).

use dpakit::abi::SubmitFlags;
use dpakit::abi::args::{MsgqPathArgs, ServeState};
use dpakit::comch::{DpaConsumer, DpaProducer};
use dpakit::dpa::{ArgsBlock, ConsumerCompletion, Dpa, DpaCompletion, DpaThread};
use dpakit::kernels;
use dpakit::msgq::Msgq;
use dpakit::pe::Pe;

/// The DPA half of the path and the PE for the CPU half (fields dropped in DOCA's order: the
/// CPU endpoints a test makes on `to_dpa` and `from_dpa` go before it).
pub struct EchoPath {
    pub pe: Pe,
    pub dpa_producer: DpaProducer,
    pub producer_completion: DpaCompletion,
    pub dpa_consumer: DpaConsumer,
    pub consumer_completion: ConsumerCompletion,
    pub thread: DpaThread,
    args: ArgsBlock<MsgqPathArgs>,
    pub to_dpa: Msgq,
    pub from_dpa: Msgq,
    pub dpa: Dpa,
}

impl EchoPath {
    /// The queues, the DPA's endpoints and its `echo` thread (not running yet) on `dpa`.
    pub fn new(dpa: Dpa) -> EchoPath {
        let pe = Pe::new().unwrap();
        let to_dpa = Msgq::builder(dpa.dev()).dpa_consumer(&dpa).start().unwrap();
        let from_dpa = Msgq::builder(dpa.dev()).dpa_producer(&dpa).start().unwrap();
        let state = dpa
            .mem_alloc_init(&ServeState {
                report_every: 1,
                sends: 0,
            })
            .unwrap();
        let (thread, args) = DpaThread::builder(&dpa, &kernels::ECHO)
            .local_storage(state)
            .start_deferred()
            .unwrap();
        let consumer_completion = ConsumerCompletion::builder(&dpa)
            .dpa_thread(&thread)
            .start()
            .unwrap();
        let dpa_consumer = DpaConsumer::builder(&to_dpa, &consumer_completion)
            .start()
            .unwrap();
        let producer_completion = DpaCompletion::start(&dpa, 64, None).unwrap();
        let dpa_producer = DpaProducer::builder(&from_dpa, &producer_completion)
            .start()
            .unwrap();
        EchoPath {
            pe,
            dpa_producer,
            producer_completion,
            dpa_consumer,
            consumer_completion,
            thread,
            args,
            to_dpa,
            from_dpa,
            dpa,
        }
    }

    /// Runs the kernel, answering CPU consumer `consumer_id`, with one credit posted.
    pub fn run(&self, consumer_id: u32) {
        self.args
            .write(&MsgqPathArgs {
                consumer_completion: self.consumer_completion.dpa_handle(),
                consumer: self.dpa_consumer.dpa_handle(),
                producer: self.dpa_producer.dpa_handle(),
                producer_completion: self.producer_completion.dpa_handle(),
                cpu_consumer_id: consumer_id,
                submit_flags: SubmitFlags::FLUSH,
            })
            .unwrap();
        self.thread.run().unwrap();
        self.dpa
            .rpc(
                self.dpa.app().consumer_ack(),
                (self.dpa_consumer.dpa_handle(), 1),
            )
            .unwrap();
    }
}
