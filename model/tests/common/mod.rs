//! A CPU → DPA → CPU path for tests: CPU producer → DPA consumer → kernel → DPA producer → CPU
//! consumer, built from the soft device's objects directly.
#![allow(dead_code)]

use dpakit_abi::SubmitFlags;
use dpakit_abi::args::MsgqPathArgs;
use dpakit_dev::ThreadKernel;
use dpakit_dev::runtime::CONSUMER_ACK;
use dpakit_kernels::ECHO;
use dpakit_model::comch::{CpuConsumer, CpuProducer, DpaConsumer, DpaProducer, RecvCompletion};
use dpakit_model::dev::{Dev, Side, Topology};
use dpakit_model::dpa::{
    App, ConsumerCompletion, DevPtr, Dpa, DpaCompletion, DpaDev, DpaThread, SchedMode,
};
use dpakit_model::msgq::Msgq;
use dpakit_model::pe::Pe;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

pub const DEPTH: u32 = 64;

/// One received message: bytes, length, producer id.
pub type Received = ([u8; 32], usize, u32);

/// The host-side device of the default topology (a BlueField-3 PF with a DPA).
pub fn default_dev() -> Dev {
    Dev::open(&Topology::global().devinfo_list_for(Side::Host)[0]).unwrap()
}

/// The file of the kit's DPA image, which the kernels' build script built with them.
pub fn kit_image() -> std::path::PathBuf {
    image_file(dpakit_kernels::IMAGE)
}

/// The file of a DPA image a kernel crate's build script built (its `IMAGE`; the faulty
/// fixture's is named by the tests that link the fixture, whose kernel symbols would clash with
/// other tests' own).
pub fn image_file(built: Option<&str>) -> std::path::PathBuf {
    let path = std::path::PathBuf::from(
        built.expect("the kernel crate's build script built no DPA image: see its warning"),
    );
    assert!(path.is_file(), "{} is missing", path.display());
    path
}

pub fn echo_app() -> App {
    App::new("dpakit_kernels")
        .thread_kernel(&ECHO)
        .rpc_kernel(&CONSUMER_ACK)
}

pub fn start_dpa(app: App, mode: SchedMode) -> Dpa {
    Dpa::builder(&default_dev())
        .app(app)
        .sched_mode(mode)
        .workers(1)
        .start()
        .unwrap()
}

/// Runs after each message the CPU consumer receives.
type OnReceived = Rc<RefCell<Box<dyn FnMut()>>>;

pub struct Path {
    pub received: Rc<RefCell<VecDeque<Received>>>,
    on_received: OnReceived,
    pub cpu_producer: CpuProducer,
    pub cpu_consumer: CpuConsumer,
    pub dpa_consumer: DpaConsumer,
    pub dpa_producer: DpaProducer,
    pub consumer_completion: ConsumerCompletion,
    pub producer_completion: DpaCompletion,
    pub thread: DpaThread,
    pub to_dpa: Msgq,
    pub from_dpa: Msgq,
    pub args: DevPtr,
    pub pe: Pe,
    pub dpa: Dpa,
}

pub struct PathOptions {
    pub depth: u32,
    /// Credits the DPA consumer starts with (posted by RPC).
    pub credits: u32,
    /// Receives the CPU consumer starts with.
    pub receives: u32,
    /// Producers the CPU→DPA queue allows.
    pub producers: u32,
}

impl Default for PathOptions {
    fn default() -> Self {
        Self {
            depth: DEPTH,
            credits: DEPTH,
            receives: DEPTH,
            producers: 1,
        }
    }
}

impl Path {
    /// A path whose kernel gets the bytes `args` makes from the path's handles.
    pub fn new<A>(
        dpa: &Dpa,
        kernel: &ThreadKernel<A>,
        opts: PathOptions,
        args: impl FnOnce(MsgqPathArgs) -> Vec<u8>,
    ) -> Path {
        let dev = dpa.dev().clone();
        let pe = Pe::new().unwrap();
        let to_dpa = Msgq::builder(&dev)
            .max_num_producers(opts.producers)
            .dpa_consumer(dpa)
            .start()
            .unwrap();
        let from_dpa = Msgq::builder(&dev).dpa_producer(dpa).start().unwrap();
        let block = dpa.mem_alloc(256).unwrap();
        let thread = DpaThread::builder(dpa, kernel, block.raw())
            .start()
            .unwrap();
        let consumer_completion = ConsumerCompletion::builder(dpa)
            .max_num_recv(opts.depth)
            .dpa_thread(&thread)
            .start()
            .unwrap();
        let dpa_consumer = DpaConsumer::builder(&to_dpa, &consumer_completion)
            .dev_num_recv(opts.depth)
            .start()
            .unwrap();
        let producer_completion = DpaCompletion::start(dpa, 2 * opts.depth, None).unwrap();
        let dpa_producer = DpaProducer::builder(&from_dpa, &producer_completion)
            .dev_num_send(opts.depth)
            .start()
            .unwrap();
        let received = Rc::new(RefCell::new(VecDeque::new()));
        let sink = received.clone();
        let on_received: OnReceived = Rc::new(RefCell::new(Box::new(|| {})));
        let hook = on_received.clone();
        let cpu_consumer = CpuConsumer::builder(&from_dpa, &pe)
            .num_recv_tasks(opts.depth)
            .on_recv(move |c: &RecvCompletion<'_>| {
                let mut bytes = [0u8; 32];
                bytes[..c.imm.len()].copy_from_slice(c.imm);
                sink.borrow_mut()
                    .push_back((bytes, c.imm.len(), c.producer_id));
                (hook.borrow_mut())();
            })
            .start()
            .unwrap();
        let cpu_producer = CpuProducer::builder(&to_dpa, &pe)
            .num_send_tasks(opts.depth)
            .start()
            .unwrap();
        let path_args = MsgqPathArgs {
            consumer_completion: consumer_completion.dpa_handle(),
            consumer: dpa_consumer.dpa_handle(),
            producer: dpa_producer.dpa_handle(),
            producer_completion: producer_completion.dpa_handle(),
            cpu_consumer_id: cpu_consumer.id(),
            submit_flags: SubmitFlags::FLUSH,
        };
        dpa.h2d_memcpy(block, &args(path_args)).unwrap();
        thread.run().unwrap();
        if opts.credits > 0 {
            dpa.rpc(
                &CONSUMER_ACK,
                (dpa_consumer.dpa_handle().raw(), u64::from(opts.credits)),
            )
            .unwrap();
        }
        for i in 0..u64::from(opts.receives) {
            cpu_consumer.post_recv(i).unwrap();
        }
        Path {
            received,
            on_received,
            cpu_producer,
            cpu_consumer,
            dpa_consumer,
            dpa_producer,
            consumer_completion,
            producer_completion,
            thread,
            to_dpa,
            from_dpa,
            args: block,
            pe,
            dpa: dpa.clone(),
        }
    }

    /// Runs `f` after each message the CPU consumer receives (from inside progress).
    pub fn set_on_received(&self, f: impl FnMut() + 'static) {
        *self.on_received.borrow_mut() = Box::new(f);
    }

    /// The echo kernel's path.
    pub fn echo(dpa: &Dpa) -> Path {
        Path::new(dpa, &ECHO, PathOptions::default(), |a| {
            dpakit_abi::bytes_of(&a).to_vec()
        })
    }

    /// Progresses until `n` messages are queued or the DPA faults; panics after 10 s.
    pub fn wait_received(&self, n: usize) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.received.borrow().len() < n {
            self.pe.progress();
            if self.dpa.error().is_some() {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "only {} of {n} messages arrived",
                self.received.borrow().len()
            );
            std::thread::yield_now();
        }
    }

    /// Progresses until the DPA reports a fatal error; panics after 10 s.
    pub fn wait_fault(&self) -> dpakit_model::Error {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            self.pe.progress();
            if let Some(e) = self.dpa.error() {
                return e;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the DPA did not fault"
            );
            std::thread::yield_now();
        }
    }
}
