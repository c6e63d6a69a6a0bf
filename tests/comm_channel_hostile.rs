//! Hostile peers on the same machine against a legacy Comm Channel service in another process:
//! none may pin it (a spinning service), stall it (a service waiting on one peer) or end it (a
//! service that exits on one bad peer), nor delay a well-behaved client by more than a few
//! milliseconds (see docs/comm-channel.md, "A local peer is untrusted").
//!
//! The service runs in a child process: the C example `examples/c/comm_channel_server.c` built
//! against the soft SDK when `DPAKIT_CC_HOSTILE_SERVER` names its binary (`cargo xtask test`
//! does), else this binary in the `service` role, which serves the same way through the safe
//! API. The attackers speak the Comm Channel protocol by hand over raw sockets; the witness is
//! a well-behaved client (the safe API) that measures round trips. After each attack the
//! service must still run and serve the witness within `SERVICE_BOUND`, be idle when nobody
//! talks to it (CPU time over a second), be back to its descriptors and near its memory from
//! before, and exit promptly on SIGTERM. Each attack prints its figures.

#[path = "support/interrupt.rs"]
mod interrupt;
#[path = "support/procs.rs"]
mod procs;

use dpakit::ErrorCode;
use dpakit::abi::soft::limits::COMM_CHANNEL_PEER_STALL_TIMEOUT_MS;
use dpakit::comm_channel::{Endpoint, Event, PeerAddr};
use dpakit::dev::{Dev, DevRep};
use procs::{Proc, cpu_seconds, ev, open_fds, rss_kib, shared_runtime_dir, var};
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{TryRecvError, channel};
use std::time::{Duration, Instant};

const ARM: &str = "0000:03:00.0";
const HOST: &str = "0000:b1:00.0";
const T: Duration = Duration::from_secs(30);
/// How long a well-behaved client's round trip may take after an attack.
const SERVICE_BOUND: Duration = Duration::from_millis(10);
/// Rounds of 200 round trips a check may take to see one within the bound: the scheduler of a
/// loaded 2-vCPU machine can park the service or the witness for a period in any round, while
/// what an attack does to the service shows in every round that follows it.
const CHECK_ROUNDS: usize = 3;
/// The most CPU the service may use over an idle second after an attack, in cores: it sleeps
/// on its event channel (a spinning service uses a whole one).
const IDLE_CPU: f64 = 0.2;
/// How much the service's resident memory may grow over an attack, in KiB: allocator caches,
/// not memory held for the peers that are gone.
const RSS_SLACK_KIB: u64 = 16 << 10;
/// Answers the service keeps per client whose queue is full (`CC_BACKLOG` of the C example).
const BACKLOG: usize = 8;

// ---------------------------------------------------------------------------------------------
// The service in Rust (when no C binary is given): the C example's loop over the safe API
// ---------------------------------------------------------------------------------------------

#[test]
fn role() {
    if var("DPAKIT_ROLE") == "service" {
        service_role();
    }
}

/// Answers every message on its connection without waiting on any client: an answer that finds
/// the client's queue full waits in a queue of that client's (`BACKLOG` at most, the rest is
/// dropped); a client whose connection fails is disconnected. Exits on SIGTERM.
fn service_role() {
    interrupt::install();
    let arm = Dev::open_by_pci(ARM).unwrap();
    let rep = DevRep::open_by_pci(&arm, HOST).unwrap();
    let ep = Endpoint::builder(&arm)
        .representor(&rep)
        .send_queue_size(64)
        .recv_queue_size(64)
        .listen(&var("NAME"))
        .unwrap();
    ev(format_args!("ready"));
    let mut backlogs: Vec<(PeerAddr, VecDeque<Vec<u8>>)> = Vec::new();
    let mut buf = vec![0u8; 4080];
    let drop_client = |backlogs: &mut Vec<(PeerAddr, VecDeque<Vec<u8>>)>, peer| {
        backlogs.retain(|(p, _)| *p != peer);
        ep.disconnect(peer).unwrap();
    };
    while !interrupt::interrupted() {
        let mut failed = Vec::new();
        for (peer, waiting) in backlogs.iter_mut() {
            while let Some(front) = waiting.front() {
                match ep.try_send(*peer, front) {
                    Ok(()) => drop(waiting.pop_front()),
                    Err(e) if e.code() == ErrorCode::Again => break,
                    Err(_) => {
                        failed.push(*peer);
                        break;
                    }
                }
            }
        }
        backlogs.retain(|(_, w)| !w.is_empty());
        for peer in failed {
            drop_client(&mut backlogs, peer);
        }
        match ep.try_recv(&mut buf) {
            Ok(Event::Message { len, peer }) => {
                if let Some((_, waiting)) = backlogs.iter_mut().find(|(p, _)| *p == peer) {
                    if waiting.len() < BACKLOG {
                        waiting.push_back(buf[..len].to_vec());
                    }
                    continue;
                }
                match ep.try_send(peer, &buf[..len]) {
                    Ok(()) => {}
                    Err(e) if e.code() == ErrorCode::Again => {
                        backlogs.push((peer, VecDeque::from([buf[..len].to_vec()])));
                    }
                    Err(_) => drop_client(&mut backlogs, peer),
                }
            }
            Ok(Event::Reset { peer }) => drop_client(&mut backlogs, peer),
            Err(e) if e.code() == ErrorCode::Again => {
                ep.arm_recv().unwrap();
                let wait = if backlogs.is_empty() { 100 } else { 10 };
                let mut p = libc::pollfd {
                    fd: ep.recv_channel().unwrap().as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one pollfd for the duration of the call.
                unsafe { libc::poll(&mut p, 1, wait) };
            }
            Err(e) => panic!("the service cannot receive: {e}"),
        }
    }
    ev(format_args!("stopped"));
}

// ---------------------------------------------------------------------------------------------
// The attackers: the protocol by hand
// ---------------------------------------------------------------------------------------------

const TAG_CC_HELLO: u8 = 8;
const TAG_CC_WELCOME: u8 = 9;
const TAG_DATA: u8 = 4;
const TAG_CC_ACK: u8 = 10;

/// Where service `name` listens: the function and a 64-bit FNV-1a hash of the name
/// (wire/src/runtime.rs).
fn service_socket(dir: &Path, name: &str) -> PathBuf {
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    dir.join(format!("cc-{HOST}-{hash:016x}"))
}

fn cc_hello(recv_queue: u32, name: &str) -> Vec<u8> {
    let mut m = vec![TAG_CC_HELLO];
    m.extend_from_slice(&2u32.to_le_bytes()); // protocol version
    m.extend_from_slice(&4080u32.to_le_bytes());
    m.extend_from_slice(&recv_queue.to_le_bytes());
    for s in [HOST, name] {
        m.extend_from_slice(&(s.len() as u16).to_le_bytes());
        m.extend_from_slice(s.as_bytes());
    }
    m
}

fn data(body: &[u8]) -> Vec<u8> {
    [&[TAG_DATA][..], body].concat()
}

/// A raw, non-blocking connection to the service.
struct Raw(OwnedFd);

impl Raw {
    /// Connects and completes the handshake, announcing a receive queue of `recv_queue`.
    fn handshake(path: &Path, name: &str, recv_queue: u32) -> Raw {
        // SAFETY: no pointers; the result is checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                0,
            )
        };
        assert!(fd >= 0);
        // SAFETY: a fresh descriptor.
        let raw = Raw(unsafe { OwnedFd::from_raw_fd(fd) });
        // SAFETY: sockaddr_un is plain data.
        let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        for (d, &s) in addr
            .sun_path
            .iter_mut()
            .zip(path.as_os_str().as_encoded_bytes())
        {
            *d = s as libc::c_char;
        }
        let deadline = Instant::now() + T;
        // SAFETY: a valid address of that size.
        while unsafe {
            libc::connect(
                raw.0.as_raw_fd(),
                (&addr as *const libc::sockaddr_un).cast(),
                std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
            )
        } != 0
        {
            // The backlog is full while the service accepts the ones before.
            assert!(Instant::now() < deadline, "cannot connect");
            std::thread::sleep(Duration::from_millis(1));
        }
        raw.send_all(&cc_hello(recv_queue, name));
        let mut buf = [0u8; 64];
        let n = raw.recv(&mut buf, T).expect("an answer to the hello");
        assert_eq!((n, buf[0]), (9, TAG_CC_WELCOME), "CC_WELCOME");
        raw
    }

    /// Sends one frame unless the socket is full.
    fn try_send(&self, frame: &[u8]) -> bool {
        // SAFETY: sends from a live buffer.
        let n = unsafe {
            libc::send(
                self.0.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        n >= 0
    }

    /// Sends one frame, waiting for room.
    fn send_all(&self, frame: &[u8]) {
        let deadline = Instant::now() + T;
        while !self.try_send(frame) {
            assert!(Instant::now() < deadline, "the service takes nothing");
            self.wait(libc::POLLOUT, 10);
        }
    }

    fn wait(&self, events: libc::c_short, ms: i32) {
        let mut p = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events,
            revents: 0,
        };
        // SAFETY: one pollfd for the duration of the call.
        unsafe { libc::poll(&mut p, 1, ms) };
    }

    /// One frame within `timeout`: its length, `None` at the end of the connection.
    fn recv(&self, buf: &mut [u8], timeout: Duration) -> Option<usize> {
        let deadline = Instant::now() + timeout;
        loop {
            // SAFETY: reads into a live buffer.
            let n =
                unsafe { libc::recv(self.0.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n > 0 {
                return Some(n as usize);
            }
            if n == 0 || Instant::now() >= deadline {
                return None;
            }
            self.wait(libc::POLLIN, 10);
        }
    }

    /// Whether the service ended the connection within `timeout` (what it sent is read and
    /// dropped, no credit returned).
    fn closed_within(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut buf = [0u8; 8192];
        while Instant::now() < deadline {
            // SAFETY: reads into a live buffer.
            let n = unsafe {
                libc::recv(
                    self.0.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n == 0 {
                return true;
            }
            if n < 0 {
                self.wait(libc::POLLIN, 10);
            }
        }
        false
    }
}

// ---------------------------------------------------------------------------------------------
// The witness and the figures
// ---------------------------------------------------------------------------------------------

/// A well-behaved client of the safe API that measures round trips.
struct Witness {
    ep: Endpoint,
    peer: PeerAddr,
}

impl Witness {
    fn connect(host: &Dev, name: &str) -> Witness {
        let (ep, peer) = Endpoint::builder(host).connect(name, T).unwrap();
        Witness { ep, peer }
    }

    /// The slowest of `n` round trips.
    fn worst_round_trip(&self, n: usize) -> Duration {
        let mut worst = Duration::ZERO;
        let mut buf = [0u8; 64];
        for i in 0..n as u64 {
            let start = Instant::now();
            self.ep.send(self.peer, &i.to_le_bytes()).unwrap();
            match self.ep.recv_timeout(&mut buf, Duration::from_secs(5)) {
                Ok(Event::Message { len: 8, peer }) if peer == self.peer => {
                    assert_eq!(buf[..8], i.to_le_bytes(), "an answer out of turn");
                }
                other => panic!("the service stopped serving the witness: {other:?}"),
            }
            worst = worst.max(start.elapsed());
        }
        worst
    }

    /// The best of up to `CHECK_ROUNDS` rounds' worst round trips (stopping at one within the
    /// bound), and every round's.
    fn rounds(&self) -> (Duration, Vec<Duration>) {
        let mut worsts = Vec::new();
        while worsts.len() < CHECK_ROUNDS && worsts.iter().all(|w| *w >= SERVICE_BOUND) {
            worsts.push(self.worst_round_trip(200));
        }
        (*worsts.iter().min().expect("one round"), worsts)
    }
}

/// What the service uses: CPU over an idle second (in cores), resident memory, descriptors.
#[derive(Debug, Clone, Copy)]
struct Usage {
    cpu: f64,
    rss_kib: u64,
    fds: usize,
}

/// The service's usage, its CPU measured over a second with nobody talking to it.
fn idle_usage(pid: u32) -> Usage {
    let (cpu0, t0) = (cpu_seconds(pid), Instant::now());
    std::thread::sleep(Duration::from_secs(1));
    let cpu = (cpu_seconds(pid) - cpu0) / t0.elapsed().as_secs_f64();
    Usage {
        cpu,
        rss_kib: rss_kib(pid),
        fds: open_fds(pid),
    }
}

/// The service, the witness, and the figures from before the attack.
struct Scene {
    // One scene at a time: two services and their attackers on a 2-core machine would measure
    // the scheduler.
    _one_at_a_time: std::sync::MutexGuard<'static, ()>,
    path: PathBuf,
    name: String,
    service: Proc,
    witness: Witness,
    /// The witness's worst round trip before the attack.
    baseline: Duration,
    before: Usage,
    _host: Dev,
}

impl Scene {
    fn new(test: &str) -> Scene {
        static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let guard = ONE.lock().unwrap_or_else(|p| p.into_inner());
        let dir = shared_runtime_dir();
        let name = format!("cc-hostile-{}-{test}", std::process::id());
        let service = match std::env::var_os("DPAKIT_CC_HOSTILE_SERVER") {
            Some(bin) => {
                let child = Command::new(bin)
                    .args(["-s", &name, "-c", "2000000000"])
                    .env("DPAKIT_SOFT_RUNTIME_DIR", &dir)
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("the service binary runs");
                let (_, events) = channel();
                Proc { child, events }
            }
            None => {
                let s = Proc::spawn(&dir, "service", &[("NAME", name.clone())]);
                s.expect("ready", T);
                s
            }
        };
        let host = Dev::open_by_pci(HOST).unwrap();
        let witness = Witness::connect(&host, &name);
        let baseline = witness.worst_round_trip(200);
        let before = idle_usage(service.child.id());
        Scene {
            _one_at_a_time: guard,
            path: service_socket(&dir, &name),
            name,
            service,
            witness,
            baseline,
            before,
            _host: host,
        }
    }

    fn handshake(&self, recv_queue: u32) -> Raw {
        Raw::handshake(&self.path, &self.name, recv_queue)
    }

    fn pid(&self) -> u32 {
        self.service.child.id()
    }

    /// After an attack: the service still runs, serves the witness within the bound, is idle
    /// when nobody talks to it, is back to its descriptors and near its memory from before, and
    /// exits promptly on SIGTERM. Prints the figures.
    fn check(mut self, attack: &str) {
        assert!(
            self.service.child.try_wait().unwrap().is_none(),
            "{attack}: the service exited"
        );
        let (worst, rounds) = self.witness.rounds();
        // The attackers' connections are disconnected (the witness's stays).
        let deadline = Instant::now() + T;
        while open_fds(self.pid()) > self.before.fds && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let after = idle_usage(self.pid());
        eprintln!(
            "{attack}: witness worst round trip {worst:?} (rounds {rounds:?}; before the attack \
             {:?}); service CPU over an idle second {:.3} -> {:.3} cores, RSS {} -> {} KiB, \
             descriptors {} -> {}",
            self.baseline,
            self.before.cpu,
            after.cpu,
            self.before.rss_kib,
            after.rss_kib,
            self.before.fds,
            after.fds
        );
        assert!(
            worst < SERVICE_BOUND,
            "{attack}: the witness waited {worst:?} at worst in each of {CHECK_ROUNDS} rounds \
             ({rounds:?})"
        );
        assert!(
            after.cpu < IDLE_CPU,
            "{attack}: the idle service used {:.2} cores",
            after.cpu
        );
        assert!(
            after.fds <= self.before.fds,
            "{attack}: the service holds {} descriptors, {} before",
            after.fds,
            self.before.fds
        );
        assert!(
            after.rss_kib <= self.before.rss_kib + RSS_SLACK_KIB,
            "{attack}: the service's RSS grew from {} to {} KiB",
            self.before.rss_kib,
            after.rss_kib
        );
        // SAFETY: signals our own child.
        unsafe { libc::kill(self.pid() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.service.child.try_wait().unwrap().is_none() {
            assert!(
                Instant::now() < deadline,
                "{attack}: the service ignored SIGTERM for 5 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The attacks
// ---------------------------------------------------------------------------------------------

/// 1. A hundred clients connect and leave together: their connections fail at once and must
///    neither pin the service (they used to keep its poller full for ever) nor stay.
#[test]
fn a_hundred_clients_that_leave_together_pin_nothing() {
    let s = Scene::new("leave");
    let clients: Vec<Raw> = (0..100).map(|_| s.handshake(16)).collect();
    drop(clients);
    s.check("100 clients leaving together");
}

/// 2a. A client that sends one message and closes: the service's answer meets the reset, and
///     the service drops that client alone (the example used to exit).
#[test]
fn a_client_that_sends_once_and_closes_is_dropped_alone() {
    let s = Scene::new("once");
    for _ in 0..5 {
        let c = s.handshake(16);
        c.send_all(&data(b"hello, and goodbye"));
    }
    s.check("one message, then closed");
}

/// 2b. A client that sends past its credit loses its connection, and the service goes on.
#[test]
fn a_client_past_its_credit_is_dropped_alone() {
    let s = Scene::new("credit");
    let c = s.handshake(16);
    let mut sent = 0;
    while sent < 100 && c.try_send(&data(b"x")) {
        sent += 1;
    }
    assert!(sent > 64, "{sent} frames fit");
    assert!(
        c.closed_within(T),
        "the service keeps a client past its credit"
    );
    s.check("past its credit");
}

/// 3. A client that never takes its answers (never returns credits) while the service answers
///    it: the service serves the witness meanwhile, and after the stall time the soft device
///    aborts that connection and the service drops it.
#[test]
fn a_client_that_takes_nothing_stalls_nothing() {
    let s = Scene::new("stall");
    let c = s.handshake(16);
    for i in 0..40u8 {
        c.send_all(&data(&[i; 32]));
    }
    let (worst, rounds) = s.witness.rounds();
    eprintln!("while a client takes nothing: witness worst round trip {worst:?} ({rounds:?})");
    assert!(
        worst < SERVICE_BOUND,
        "the service waits on a client that takes nothing"
    );
    let stall = Duration::from_millis(COMM_CHANNEL_PEER_STALL_TIMEOUT_MS);
    assert!(
        c.closed_within(stall + T),
        "the client that takes nothing is still connected"
    );
    s.check("never takes, never returns credits");
}

/// 4. Clients that flood the service with credits of count 0 (which the protocol allows):
///    each is read a bounded number of frames a pass and the witness is served meanwhile.
#[test]
fn a_flood_of_empty_credits_starves_nobody() {
    let s = Scene::new("flood");
    let (stop, stopped) = channel::<()>();
    let ack = [TAG_CC_ACK, 0, 0, 0, 0];
    let floods: Vec<Raw> = (0..4).map(|_| s.handshake(16)).collect();
    std::thread::scope(|scope| {
        // One thread floods them all: the witness keeps a core.
        let floods = &floods;
        scope.spawn(move || {
            while matches!(stopped.try_recv(), Err(TryRecvError::Empty)) {
                for c in floods {
                    for _ in 0..256 {
                        if !c.try_send(&ack) {
                            break;
                        }
                    }
                }
                floods[0].wait(libc::POLLOUT, 1);
            }
        });
        std::thread::sleep(Duration::from_millis(200));
        let (worst, rounds) = s.witness.rounds();
        drop(stop);
        eprintln!(
            "during a flood of empty credits: witness worst round trip {worst:?} ({rounds:?})"
        );
        assert!(
            worst < SERVICE_BOUND,
            "a flood of empty credits starves the witness"
        );
    });
    drop(floods);
    s.check("a flood of empty credits");
}
