//! Aggregate messages per second through 1, 2, 4 and 8 DPA threads, each serving its own
//! CPU → DPA → CPU path, beside as many echo threads behind channel pairs.
//!
//! Figures `1`, `2`, `4`, `8` (criterion ids `threads/<figure>/<subject>`), subjects:
//! - `dpakit`: N `MsgqPath`s (depth 32) into the ranked-echo kernel, one DPA thread each, all
//!   multiplexed on one busy-polling DPA worker pinned to the second core, the way DPA
//!   threads share a DPA core (a sleeping worker measured 10–40% slower on a 2-core VM: every
//!   idle moment costs it a wake-up);
//! - `crossbeam`: N echo threads, all pinned to the second core, each behind a pair of
//!   `crossbeam_channel::bounded(32)` channels.
//!
//! Both are driven the same way: 16 messages in flight on every path, replies taken round-robin
//! and each one answered with the path's next message. Time per iteration is one message (one
//! reply taken, one message sent), so the throughput is the aggregate over the N paths.
//! `cargo bench --bench threads`

#[path = "support/mod.rs"]
mod support;

use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use dpakit::abi::args::RankedPathArgs;
use dpakit::abi::{Echo, ImmMessage};
use dpakit::pe::Pe;
use dpakit::soft::{SchedMode, pin_current_thread};
use dpakit::{MsgqPath, kernels};
use std::thread::JoinHandle;
use std::time::Instant;
use support::{TIMEOUT, cores};

type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// Messages in flight on each path.
const IN_FLIGHT: u64 = 16;
/// Queue depth of each path (room for the window each way).
const DEPTH: u32 = 32;
/// How the DPA worker waits for work.
const MODE: SchedMode = SchedMode::BusyPoll;

/// N independent echo lanes, each answering `token` with `token` and its rank.
trait Lanes {
    fn lanes(&self) -> usize;
    fn send(&mut self, lane: usize, token: u64);
    /// The next reply on `lane`: its token and the rank that answered.
    fn recv(&mut self, lane: usize) -> (u64, u64);
}

/// Keeps `IN_FLIGHT` messages on every lane; each step takes one reply and sends one message.
struct Pipeline<L: Lanes> {
    lanes: L,
    sent: Vec<u64>,
    received: Vec<u64>,
    cursor: usize,
}

impl<L: Lanes> Pipeline<L> {
    fn start(mut lanes: L) -> Self {
        let n = lanes.lanes();
        for lane in 0..n {
            for token in 0..IN_FLIGHT {
                lanes.send(lane, token);
            }
        }
        let mut p = Self {
            lanes,
            sent: vec![IN_FLIGHT; n],
            received: vec![0; n],
            cursor: 0,
        };
        // Every lane's queues cycled many times before Criterion's own warm-up.
        for _ in 0..20_000 {
            p.step();
        }
        p
    }

    #[inline]
    fn step(&mut self) {
        let lane = self.cursor;
        let (token, rank) = self.lanes.recv(lane);
        assert!(
            token == self.received[lane] && rank == lane as u64,
            "lane {lane}: token {token} from rank {rank}, expected token {}",
            self.received[lane]
        );
        self.received[lane] += 1;
        self.lanes.send(lane, self.sent[lane]);
        self.sent[lane] += 1;
        self.cursor = if lane + 1 == self.sent.len() {
            0
        } else {
            lane + 1
        };
    }
}

impl<L: Lanes> Drop for Pipeline<L> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        for lane in 0..self.sent.len() {
            while self.received[lane] < self.sent[lane] {
                self.lanes.recv(lane);
                self.received[lane] += 1;
            }
        }
    }
}

/// dpakit: one ranked-echo path (and DPA thread) per lane, one PE for all.
struct DpakitLanes {
    paths: Vec<MsgqPath>,
}

impl DpakitLanes {
    fn start(core: usize, n: u32) -> Self {
        let dpa = support::dpa(MODE, core);
        let pe = Pe::new().expect("PE");
        let paths = (0..n)
            .map(|rank| {
                MsgqPath::builder(&dpa, &pe, &kernels::RANKED_ECHO)
                    .depth(DEPTH)
                    .args(move |path| RankedPathArgs {
                        path,
                        rank,
                        reserved: 0,
                    })
                    .start()
                    .expect("ranked echo path")
            })
            .collect();
        Self { paths }
    }
}

impl Lanes for DpakitLanes {
    fn lanes(&self) -> usize {
        self.paths.len()
    }

    #[inline]
    fn send(&mut self, lane: usize, token: u64) {
        let echo = Echo {
            token,
            timestamp_ns: 0,
            tag: 0,
        };
        self.paths[lane]
            .send_msg(&ImmMessage::new(token as u32, &echo))
            .expect("send");
    }

    #[inline]
    fn recv(&mut self, lane: usize) -> (u64, u64) {
        let reply = self.paths[lane].recv(TIMEOUT).expect("reply");
        let echo: Echo = reply.msg.view().expect("an Echo");
        (echo.token, echo.tag)
    }
}

impl Drop for DpakitLanes {
    fn drop(&mut self) {
        if let Some(p) = self.paths.first() {
            p.dpa().check().expect("the DPA stayed healthy");
        }
    }
}

/// A 32-byte message: token, two spare words, rank.
type Msg = [u64; 4];

/// One echo thread per lane behind a pair of bounded channels.
struct CrossbeamLanes {
    tx: Vec<crossbeam_channel::Sender<Msg>>,
    rx: Vec<crossbeam_channel::Receiver<Msg>>,
    threads: Vec<JoinHandle<()>>,
}

impl CrossbeamLanes {
    fn start(core: usize, n: u32) -> Self {
        let mut lanes = Self {
            tx: Vec::new(),
            rx: Vec::new(),
            threads: Vec::new(),
        };
        for rank in 0..n {
            let (tx, their_rx) = crossbeam_channel::bounded::<Msg>(DEPTH as usize);
            let (their_tx, rx) = crossbeam_channel::bounded(DEPTH as usize);
            lanes.threads.push(std::thread::spawn(move || {
                pin_current_thread(core).expect("pin to a core this machine has");
                for mut m in their_rx {
                    m[3] = u64::from(rank);
                    if their_tx.send(m).is_err() {
                        break;
                    }
                }
            }));
            lanes.tx.push(tx);
            lanes.rx.push(rx);
        }
        lanes
    }
}

impl Lanes for CrossbeamLanes {
    fn lanes(&self) -> usize {
        self.tx.len()
    }

    #[inline]
    fn send(&mut self, lane: usize, token: u64) {
        self.tx[lane].send([token, 0, 0, 0]).expect("send");
    }

    #[inline]
    fn recv(&mut self, lane: usize) -> (u64, u64) {
        let m = self.rx[lane].recv().expect("recv");
        (m[0], m[3])
    }
}

impl Drop for CrossbeamLanes {
    fn drop(&mut self) {
        self.tx.clear();
        for t in self.threads.drain(..) {
            t.join().expect("an echo thread panicked");
        }
    }
}

fn subject<L: Lanes>(group: &mut Group<'_>, name: &str, start: impl FnOnce() -> L) {
    support::bench_subject(
        group,
        name,
        || Pipeline::start(start()),
        |p, iters| {
            let start = Instant::now();
            for _ in 0..iters {
                p.step();
            }
            start.elapsed()
        },
    );
}

fn figure<const N: u32>(c: &mut Criterion) {
    let (host, responder) = cores();
    pin_current_thread(host).expect("pin to a core this machine has");
    let mut g = c.benchmark_group(format!("threads/{N}"));
    g.throughput(Throughput::Elements(1));
    subject(&mut g, "dpakit", || DpakitLanes::start(responder, N));
    subject(&mut g, "crossbeam", || CrossbeamLanes::start(responder, N));
    g.finish();
}

criterion_group! {
    name = threads;
    config = support::config();
    targets = figure::<1>, figure::<2>, figure::<4>, figure::<8>
}
criterion_main!(threads);
