//! Round-trip partners: each sends an `N`-byte message to a responder on the other core and
//! waits for it to come back, one message at a time.

use super::sync::StopFlag;
use super::{PingPong, TIMEOUT, dpa};
use dpakit::pe::Pe;
use dpakit::soft::{SchedMode, pin_current_thread};
use dpakit::{MsgqPath, kernels};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::thread::JoinHandle;

/// One round trip of an `N`-byte message: what a latency measurement times.
pub trait Echo<const N: usize> {
    /// Sends `msg` to the responder and returns what came back.
    fn echo(&mut self, msg: &[u8; N]) -> [u8; N];
}

/// Round trips before measuring: first-touch faults, wake-up paths, branch predictors. Panics
/// if an echo comes back wrong.
pub fn warm_up<const N: usize>(e: &mut (impl Echo<N> + ?Sized), round_trips: usize) {
    let msg = super::payload::<N>();
    for _ in 0..round_trips {
        assert_eq!(e.echo(&msg), msg, "the echo came back changed");
    }
}

/// Spawns a responder thread pinned to `core`.
fn responder(core: usize, body: impl FnOnce() + Send + 'static) -> Option<JoinHandle<()>> {
    Some(std::thread::spawn(move || {
        pin_current_thread(core).expect("pin to a core this machine has");
        body();
    }))
}

fn join(thread: &mut Option<JoinHandle<()>>) {
    if let Some(t) = thread.take() {
        t.join().expect("the responder thread panicked");
    }
}

/// dpakit: CPU producer → MsgQ → DPA consumer → echo kernel → DPA producer → MsgQ → CPU
/// consumer, on a DPA with one worker pinned to the responder core. The host sends with
/// [`MsgqPath::send`] and waits in [`MsgqPath::recv`] (progress, then the PE's notification
/// handle after 50 µs).
pub struct DpakitEcho {
    // Dropped first: the path before the DPA that runs its thread.
    path: MsgqPath,
}

impl DpakitEcho {
    /// A DPA in `mode` with its worker on `core`, an echo path of depth 64.
    pub fn start(mode: SchedMode, core: usize) -> Self {
        Self::on(dpa(mode, core))
    }

    /// As [`start`](Self::start), the kernel running from the DPA image in the soft device's
    /// interpreter (ISA mode).
    #[allow(dead_code)] // not every bench and example compares ISA mode
    pub fn start_isa(mode: SchedMode, core: usize) -> Self {
        Self::on(super::dpa_isa(mode, core))
    }

    fn on(dpa: dpakit::dpa::Dpa) -> Self {
        let pe = Pe::new().expect("PE");
        let path = MsgqPath::builder(&dpa, &pe, &kernels::ECHO)
            .depth(64)
            .start()
            .expect("echo path");
        Self { path }
    }
}

impl<const N: usize> Echo<N> for DpakitEcho {
    #[inline]
    fn echo(&mut self, msg: &[u8; N]) -> [u8; N] {
        self.path.send(msg).expect("send");
        let reply = self.path.recv(TIMEOUT).expect("echo reply");
        debug_assert_eq!(reply.len as usize, N);
        let mut out = [0; N];
        out.copy_from_slice(&reply.msg.as_bytes()[..N]);
        out
    }
}

impl Drop for DpakitEcho {
    fn drop(&mut self) {
        self.path.dpa().check().expect("the DPA stayed healthy");
    }
}

impl<const N: usize> Echo<N> for PingPong {
    #[inline]
    fn echo(&mut self, msg: &[u8; N]) -> [u8; N] {
        let mut out = [0; N];
        self.round_trip_payload(msg, &mut out);
        out
    }
}

/// Two `crossbeam_channel::bounded(1)` channels; both sides block in `send`/`recv` (crossbeam
/// spins briefly, then parks).
pub struct CrossbeamEcho<const N: usize> {
    tx: Option<crossbeam_channel::Sender<[u8; N]>>,
    rx: crossbeam_channel::Receiver<[u8; N]>,
    thread: Option<JoinHandle<()>>,
}

impl<const N: usize> CrossbeamEcho<N> {
    /// Starts the echo thread on `core`.
    pub fn start(core: usize) -> Self {
        let (tx, their_rx) = crossbeam_channel::bounded::<[u8; N]>(1);
        let (their_tx, rx) = crossbeam_channel::bounded(1);
        let thread = responder(core, move || {
            for m in their_rx {
                if their_tx.send(m).is_err() {
                    break;
                }
            }
        });
        Self {
            tx: Some(tx),
            rx,
            thread,
        }
    }
}

impl<const N: usize> Echo<N> for CrossbeamEcho<N> {
    #[inline]
    fn echo(&mut self, msg: &[u8; N]) -> [u8; N] {
        self.tx.as_ref().expect("open").send(*msg).expect("send");
        self.rx.recv().expect("recv")
    }
}

impl<const N: usize> Drop for CrossbeamEcho<N> {
    fn drop(&mut self) {
        self.tx = None;
        join(&mut self.thread);
    }
}

/// Two `rtrb` single-producer single-consumer rings of one slot; both sides spin on push/pop.
pub struct RtrbEcho<const N: usize> {
    tx: rtrb::Producer<[u8; N]>,
    rx: rtrb::Consumer<[u8; N]>,
    stop: Arc<StopFlag>,
    thread: Option<JoinHandle<()>>,
}

/// Pushes `v`, spinning while the ring is full.
#[inline]
pub fn rtrb_push<T>(tx: &mut rtrb::Producer<T>, mut v: T) {
    while let Err(rtrb::PushError::Full(back)) = tx.push(v) {
        v = back;
        std::hint::spin_loop();
    }
}

impl<const N: usize> RtrbEcho<N> {
    /// Starts the echo thread on `core`.
    pub fn start(core: usize) -> Self {
        let (tx, mut their_rx) = rtrb::RingBuffer::<[u8; N]>::new(1);
        let (mut their_tx, rx) = rtrb::RingBuffer::new(1);
        let stop = Arc::new(StopFlag::default());
        let thread = {
            let stop = stop.clone();
            responder(core, move || {
                while !stop.is_stopped() {
                    match their_rx.pop() {
                        Ok(m) => rtrb_push(&mut their_tx, m),
                        Err(_) => std::hint::spin_loop(),
                    }
                }
            })
        };
        Self {
            tx,
            rx,
            stop,
            thread,
        }
    }
}

impl<const N: usize> Echo<N> for RtrbEcho<N> {
    #[inline]
    fn echo(&mut self, msg: &[u8; N]) -> [u8; N] {
        rtrb_push(&mut self.tx, *msg);
        loop {
            if let Ok(m) = self.rx.pop() {
                return m;
            }
            std::hint::spin_loop();
        }
    }
}

impl<const N: usize> Drop for RtrbEcho<N> {
    fn drop(&mut self) {
        self.stop.stop();
        join(&mut self.thread);
    }
}

/// Two `std::sync::mpsc::sync_channel(1)` channels; both sides block.
pub struct MpscEcho<const N: usize> {
    tx: Option<mpsc::SyncSender<[u8; N]>>,
    rx: mpsc::Receiver<[u8; N]>,
    thread: Option<JoinHandle<()>>,
}

impl<const N: usize> MpscEcho<N> {
    /// Starts the echo thread on `core`.
    pub fn start(core: usize) -> Self {
        let (tx, their_rx) = mpsc::sync_channel::<[u8; N]>(1);
        let (their_tx, rx) = mpsc::sync_channel(1);
        let thread = responder(core, move || {
            for m in their_rx {
                if their_tx.send(m).is_err() {
                    break;
                }
            }
        });
        Self {
            tx: Some(tx),
            rx,
            thread,
        }
    }
}

impl<const N: usize> Echo<N> for MpscEcho<N> {
    #[inline]
    fn echo(&mut self, msg: &[u8; N]) -> [u8; N] {
        self.tx.as_ref().expect("open").send(*msg).expect("send");
        self.rx.recv().expect("recv")
    }
}

impl<const N: usize> Drop for MpscEcho<N> {
    fn drop(&mut self) {
        self.tx = None;
        join(&mut self.thread);
    }
}

/// A `UnixStream::pair()`: blocking `write_all` and `read_exact` of the payload (one byte for an
/// empty one), the responder echoing with the same calls.
pub struct UnixEcho<const N: usize> {
    stream: Option<UnixStream>,
    thread: Option<JoinHandle<()>>,
}

impl<const N: usize> UnixEcho<N> {
    /// Bytes on the wire: the payload, at least one.
    const WIRE: usize = if N == 0 { 1 } else { N };

    /// Starts the echo thread on `core`.
    pub fn start(core: usize) -> Self {
        let (stream, mut theirs) = UnixStream::pair().expect("socket pair");
        let thread = responder(core, move || {
            let mut buf = [0u8; 64];
            let buf = &mut buf[..Self::WIRE];
            // Ends when the host side closes (read_exact fails on EOF).
            while theirs.read_exact(buf).is_ok() {
                if theirs.write_all(buf).is_err() {
                    break;
                }
            }
        });
        Self {
            stream: Some(stream),
            thread,
        }
    }
}

impl<const N: usize> Echo<N> for UnixEcho<N> {
    #[inline]
    fn echo(&mut self, msg: &[u8; N]) -> [u8; N] {
        let stream = self.stream.as_mut().expect("open");
        let mut wire = [0u8; 64];
        wire[..N].copy_from_slice(msg);
        stream.write_all(&wire[..Self::WIRE]).expect("write");
        stream.read_exact(&mut wire[..Self::WIRE]).expect("read");
        let mut out = [0; N];
        out.copy_from_slice(&wire[..N]);
        out
    }
}

impl<const N: usize> Drop for UnixEcho<N> {
    fn drop(&mut self) {
        self.stream = None;
        join(&mut self.thread);
    }
}

struct CondvarState<const N: usize> {
    ping: u64,
    pong: u64,
    msg: [u8; N],
    stop: bool,
}

struct CondvarShared<const N: usize> {
    state: Mutex<CondvarState<N>>,
    ping: Condvar,
    pong: Condvar,
}

/// A Mutex and two Condvars: the host publishes the message and waits on `pong`, the responder
/// waits on `ping` and answers. Both sides block, so every round trip is two futex wake-ups.
pub struct CondvarEcho<const N: usize> {
    shared: Arc<CondvarShared<N>>,
    thread: Option<JoinHandle<()>>,
}

impl<const N: usize> CondvarEcho<N> {
    /// Starts the echo thread on `core`.
    pub fn start(core: usize) -> Self {
        let shared = Arc::new(CondvarShared {
            state: Mutex::new(CondvarState {
                ping: 0,
                pong: 0,
                msg: [0; N],
                stop: false,
            }),
            ping: Condvar::new(),
            pong: Condvar::new(),
        });
        let thread = {
            let shared = shared.clone();
            responder(core, move || {
                let mut seen = 0;
                let mut state = shared.state.lock().expect("lock");
                loop {
                    state = shared
                        .ping
                        .wait_while(state, |s| s.ping == seen && !s.stop)
                        .expect("wait");
                    if state.stop {
                        break;
                    }
                    // The echo leaves `msg` as it is and answers.
                    seen = state.ping;
                    state.pong = seen;
                    shared.pong.notify_one();
                }
            })
        };
        Self { shared, thread }
    }
}

impl<const N: usize> Echo<N> for CondvarEcho<N> {
    #[inline]
    fn echo(&mut self, msg: &[u8; N]) -> [u8; N] {
        let shared = &*self.shared;
        let mut state = shared.state.lock().expect("lock");
        state.msg = *msg;
        state.ping += 1;
        let want = state.ping;
        shared.ping.notify_one();
        let state = shared
            .pong
            .wait_while(state, |s| s.pong != want)
            .expect("wait");
        state.msg
    }
}

impl<const N: usize> Drop for CondvarEcho<N> {
    fn drop(&mut self) {
        self.shared.state.lock().expect("lock").stop = true;
        self.shared.ping.notify_one();
        join(&mut self.thread);
    }
}
