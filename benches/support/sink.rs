//! One-way channels into a consumer on the other core that takes and counts messages.

use super::echo::rtrb_push;
use super::sync::{Published, StopFlag};
use super::{TIMEOUT, dpa};
use dpakit::abi::{ImmMessage, PingPong as PingPongMsg};
use dpakit::pe::Pe;
use dpakit::soft::{SchedMode, pin_current_thread};
use dpakit::{MsgqPath, kernels};
use std::hint::black_box;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// The message every sink is sent: a 32-byte immediate.
pub type Msg = [u8; 32];

/// The message: a typed immediate, as the sink kernel is sent.
pub fn message() -> Msg {
    *ImmMessage::new(7, &PingPongMsg::default()).as_bytes()
}

/// A one-way channel with `capacity` messages in flight.
pub trait OneWay {
    /// Sends one message, waiting while `capacity` are in flight.
    fn send(&mut self, msg: &Msg);
    /// Messages the consumer has taken so far (progressing the host side if it needs to).
    fn consumed(&mut self) -> u64;
}

/// Waits (spinning) until the consumer has taken `target` messages.
pub fn wait_consumed(s: &mut impl OneWay, target: u64) {
    let deadline = Instant::now() + TIMEOUT;
    let mut polls = 0u32;
    while s.consumed() < target {
        polls = polls.wrapping_add(1);
        assert!(
            polls % 4096 != 0 || Instant::now() < deadline,
            "the consumer stalled"
        );
        std::hint::spin_loop();
    }
}

/// Sends `n` messages and waits until all are consumed.
pub fn send_all(s: &mut impl OneWay, msg: &Msg, n: u64) {
    let target = s.consumed() + n;
    for _ in 0..n {
        s.send(msg);
    }
    wait_consumed(s, target);
}

/// dpakit: CPU producer → MsgQ → DPA consumer → sink kernel, with `capacity` credits (the
/// path's depth). The kernel takes every waiting message and gives the credits back in one
/// batch; its count is read back from device memory.
pub struct DpakitSink {
    path: MsgqPath,
    last: u32,
    total: u64,
}

impl DpakitSink {
    /// A DPA in `mode` with its worker on `core`, a sink path of depth `capacity`.
    pub fn start(mode: SchedMode, core: usize, capacity: usize) -> Self {
        let dpa = dpa(mode, core);
        let pe = Pe::new().expect("PE");
        let path = MsgqPath::builder(&dpa, &pe, &kernels::SINK)
            .depth(capacity as u32)
            .start()
            .expect("sink path");
        Self {
            path,
            last: 0,
            total: 0,
        }
    }
}

impl OneWay for DpakitSink {
    #[inline]
    fn send(&mut self, msg: &Msg) {
        self.path.send(msg).expect("send");
    }

    #[inline]
    fn consumed(&mut self) -> u64 {
        self.path.pe().progress();
        let sends = self.path.kernel_state().expect("kernel state").sends;
        self.total += u64::from(sends.wrapping_sub(self.last));
        self.last = sends;
        self.total
    }
}

impl Drop for DpakitSink {
    fn drop(&mut self) {
        self.path.dpa().check().expect("the DPA stayed healthy");
    }
}

/// The consumer's count, on its own cache line: written by the consumer after each message,
/// read by the producer only when it waits.
#[repr(align(64))]
#[derive(Default)]
struct Count(Published);

/// An `rtrb` ring of `capacity` slots; the producer spins while it is full, the consumer spins
/// on pop.
pub struct RtrbSink {
    tx: rtrb::Producer<Msg>,
    count: Arc<Count>,
    stop: Arc<StopFlag>,
    thread: Option<JoinHandle<()>>,
}

impl RtrbSink {
    /// Starts the consumer on `core`.
    pub fn start(core: usize, capacity: usize) -> Self {
        let (tx, mut rx) = rtrb::RingBuffer::<Msg>::new(capacity);
        let count = Arc::new(Count::default());
        let stop = Arc::new(StopFlag::default());
        let thread = {
            let (count, stop) = (count.clone(), stop.clone());
            std::thread::spawn(move || {
                pin_current_thread(core).expect("pin to a core this machine has");
                let mut n = 0;
                while !stop.is_stopped() {
                    match rx.pop() {
                        Ok(m) => {
                            black_box(m);
                            n += 1;
                            count.0.set(n);
                        }
                        Err(_) => std::hint::spin_loop(),
                    }
                }
            })
        };
        Self {
            tx,
            count,
            stop,
            thread: Some(thread),
        }
    }
}

impl OneWay for RtrbSink {
    #[inline]
    fn send(&mut self, msg: &Msg) {
        rtrb_push(&mut self.tx, *msg);
    }

    #[inline]
    fn consumed(&mut self) -> u64 {
        self.count.0.get()
    }
}

impl Drop for RtrbSink {
    fn drop(&mut self) {
        self.stop.stop();
        if let Some(t) = self.thread.take() {
            t.join().expect("the consumer panicked");
        }
    }
}

/// A `crossbeam_channel::bounded(capacity)` channel; both sides block when they must wait.
pub struct CrossbeamSink {
    tx: Option<crossbeam_channel::Sender<Msg>>,
    count: Arc<Count>,
    thread: Option<JoinHandle<()>>,
}

impl CrossbeamSink {
    /// Starts the consumer on `core`.
    pub fn start(core: usize, capacity: usize) -> Self {
        let (tx, rx) = crossbeam_channel::bounded::<Msg>(capacity);
        let count = Arc::new(Count::default());
        let thread = {
            let count = count.clone();
            std::thread::spawn(move || {
                pin_current_thread(core).expect("pin to a core this machine has");
                let mut n = 0;
                for m in rx {
                    black_box(m);
                    n += 1;
                    count.0.set(n);
                }
            })
        };
        Self {
            tx: Some(tx),
            count,
            thread: Some(thread),
        }
    }
}

impl OneWay for CrossbeamSink {
    #[inline]
    fn send(&mut self, msg: &Msg) {
        self.tx.as_ref().expect("open").send(*msg).expect("send");
    }

    #[inline]
    fn consumed(&mut self) -> u64 {
        self.count.0.get()
    }
}

impl Drop for CrossbeamSink {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            t.join().expect("the consumer panicked");
        }
    }
}
