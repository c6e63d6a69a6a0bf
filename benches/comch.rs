//! Comch between two processes, each pinned to its own core, beside what the same exchange
//! costs by other means between the same two processes.
//!
//! The bench binary is both sides: it runs itself again as the peer process
//! (`support::peer`), which serves until the bench closes its stdin.
//!
//! Figure `comch/ctrl_rtt_64B/<subject>`: one 64-byte round trip. `dpakit`: a Comch client
//! (host side, this process) and a server echoing control messages (Arm side, the peer).
//! Baselines: `shm_ping_pong` (a value bounced through two cache lines of a shared page: the
//! limit between two processes), `seqpacket_spin` (a raw `SOCK_SEQPACKET` pair, both sides
//! busy-polling non-blocking receives: the floor of the soft device's socket transport) and
//! `unix_socket` (a blocking stream pair, what a program would write by hand) and `iceoryx2`
//! (zero-copy publish-subscribe: a ping service one way, a pong service back, both sides
//! busy-polling their subscriber).
//!
//! Figure `comch/fast_rtt_64B/<subject>`: one 64-byte round trip over the fast path. `dpakit`:
//! the server's producer (this process) sends into the client's consumer (the peer), whose
//! receive callback sends the bytes back from the client's producer into the server's consumer.
//! Baselines: `shm_ping_pong` and `iceoryx2`, as above.
//!
//! Figures `comch/fast_4KiB`, `fast_64KiB`, `fast_1MiB`: a one-way stream, throughput in bytes.
//! `dpakit`: a fast-path producer on the server's connection (this process) writing into a
//! consumer on the client's (the peer), 16 sends in flight, until the peer has received every
//! message. Baselines: `memcpy` (one copy of the same bytes on one thread: the floor, since the
//! fast path copies once, with source and destination staying in cache), `memcpy_ws` (the same
//! copies over the stream's working set: 16 sources into 16 destinations in turn, as the
//! producer's 16 loaned buffers go into the consumer's 16 posted ones; at 1 MiB that is 32 MiB,
//! past this machine's caches) and `unix_socket` (the bytes written into a stream socket pair, read
//! by the peer, at most 16 messages unread) and `iceoryx2` (a publisher writing each message
//! into a loaned sample, the peer's subscriber reading it in place, 16 samples in its buffer).
//!
//! `cargo bench --bench comch`

#[path = "support/mod.rs"]
mod support;

use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, measurement::WallTime};
use dpakit::comch::{Client, Connection, Server};
use dpakit::dev::{Dev, DevRep};
use dpakit::pe::Pe;
use dpakit::soft::pin_current_thread;
use std::cell::Cell;
use std::hint::black_box;
use std::os::fd::RawFd;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use support::peer::{self, Peer, SharedPage, socket_pair};
use support::{Echo, bench_subject, cores, payload, warm_up};

const N: usize = 64;
/// The server's name, and the host function its representor stands for.
const SERVICE: &str = "bench-comch";
const HOST_PCI: &str = "b1:00.0";
const ARM_PCI: &str = "03:00.0";
/// Sends in flight in the streams.
const IN_FLIGHT: u64 = 16;
/// The stream sizes.
const SIZES: [(&str, usize); 3] = [
    ("fast_4KiB", 4 << 10),
    ("fast_64KiB", 64 << 10),
    ("fast_1MiB", 1 << 20),
];

fn main() {
    if let Some(role) = peer::role() {
        serve(&role);
        return;
    }
    let dir = runtime_dir();
    // SAFETY: set before any thread starts; the peers inherit it.
    unsafe { std::env::set_var("DPAKIT_SOFT_RUNTIME_DIR", &dir) };
    pin_current_thread(cores().0).expect("pin the bench");
    benches();
    Criterion::default().configure_from_args().final_summary();
    let _ = std::fs::remove_dir_all(dir);
}

fn runtime_dir() -> PathBuf {
    std::env::temp_dir().join(format!("dpakit-bench-comch-{}", std::process::id()))
}

/// The peer process's side of each subject.
fn serve(role: &str) {
    let fds = peer::enter();
    let (name, arg) = role.split_once(':').unwrap_or((role, ""));
    let size: usize = arg.parse().unwrap_or(0);
    match name {
        "ctrl-server" => ctrl_server(),
        "shm-pong" => shm_pong(&SharedPage::map(fds[0])),
        "seqpacket-echo" => seqpacket_echo(fds[0]),
        "stream-echo" => stream_echo(fds[0]),
        // The peer serves until it exits: its page may live as long.
        "fast-client" => fast_client(size, Box::leak(Box::new(SharedPage::map(fds[0])))),
        "stream-sink" => stream_sink(size, fds[0]),
        // Lives until the peer exits, like its callbacks.
        "fast-echo" => fast_echo(Box::leak(Box::new(SharedPage::map(fds[0])))),
        "ice-pong" => ice::pong(arg),
        "ice-sink" => {
            let (size, tag) = arg.split_once('/').expect("size/tag");
            let page = SharedPage::map(fds[0]);
            ice::sink(size.parse().expect("size"), tag, &page);
        }
        other => panic!("unknown peer role `{other}`"),
    }
}

// ---- control path ----------------------------------------------------------------------------

fn ctrl_server() {
    let arm = Dev::open_by_pci(ARM_PCI).unwrap();
    let rep = DevRep::open_by_pci(&arm, HOST_PCI).unwrap();
    let pe = Pe::new().unwrap();
    let _server = Server::builder(&arm, &rep, SERVICE, &pe)
        .on_connect(|_, _, _| {})
        .on_message(|ch, conn, msg| ch.send(conn, msg, 0).unwrap())
        .start()
        .unwrap();
    peer::ready();
    loop {
        pe.progress();
    }
}

/// A Comch client whose server echoes in the peer process.
struct CtrlEcho {
    client: Option<Client>,
    pe: Pe,
    conn: Connection,
    got: Rc<Cell<Option<[u8; N]>>>,
    _peer: Peer,
}

impl CtrlEcho {
    fn start(peer_core: usize) -> Self {
        let peer = Peer::spawn("ctrl-server", peer_core, &[]);
        let host = Dev::open_by_pci(HOST_PCI).unwrap();
        let pe = Pe::new().unwrap();
        let got: Rc<Cell<Option<[u8; N]>>> = Rc::default();
        let g = got.clone();
        let client = Client::builder(&host, SERVICE, &pe)
            .on_message(move |_, _, msg| g.set(msg.try_into().ok()))
            .start()
            .unwrap();
        let conn = client.connect(Duration::from_secs(5)).unwrap();
        CtrlEcho {
            client: Some(client),
            pe,
            conn,
            got,
            _peer: peer,
        }
    }
}

impl Echo<N> for CtrlEcho {
    fn echo(&mut self, msg: &[u8; N]) -> [u8; N] {
        let client = self.client.as_ref().expect("running");
        client.channel().send(self.conn, msg, 0).expect("send");
        loop {
            self.pe.progress();
            if let Some(reply) = self.got.take() {
                return reply;
            }
        }
    }
}

impl Drop for CtrlEcho {
    fn drop(&mut self) {
        // The client says goodbye before the peer goes.
        self.client = None;
    }
}

/// Counter 0 carries the ping, counter 1 the pong.
fn shm_pong(page: &SharedPage) {
    peer::ready();
    let (ping, pong) = (page.counter(0), page.counter(1));
    let mut seen = 0;
    loop {
        let v = ping.load(Ordering::Acquire);
        if v != seen {
            seen = v;
            pong.store(v, Ordering::Release);
        }
        std::hint::spin_loop();
    }
}

/// A value bounced through a page shared with the peer.
struct ShmPingPong {
    page: SharedPage,
    seq: u64,
    _peer: Peer,
}

impl ShmPingPong {
    fn start(peer_core: usize) -> Self {
        let page = SharedPage::new();
        let peer = Peer::spawn("shm-pong", peer_core, &[page.fd()]);
        ShmPingPong {
            page,
            seq: 0,
            _peer: peer,
        }
    }
}

impl Echo<N> for ShmPingPong {
    fn echo(&mut self, msg: &[u8; N]) -> [u8; N] {
        self.seq += 1;
        self.page.counter(0).store(self.seq, Ordering::Release);
        while self.page.counter(1).load(Ordering::Acquire) != self.seq {
            std::hint::spin_loop();
        }
        *msg
    }
}

/// Receives one message, spinning on a non-blocking socket; false at end of file.
fn spin_recv(fd: RawFd, buf: &mut [u8]) -> bool {
    loop {
        // SAFETY: a live socket and a writable buffer of its length.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
        if n > 0 {
            return true;
        }
        if n == 0 {
            return false;
        }
    }
}

/// Sends all of `buf` on a blocking socket; false once the peer is gone.
fn send_all(fd: RawFd, mut buf: &[u8]) -> bool {
    while !buf.is_empty() {
        // SAFETY: a live socket and readable bytes; MSG_NOSIGNAL: no SIGPIPE.
        let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) };
        if n <= 0 {
            return false;
        }
        buf = &buf[n as usize..];
    }
    true
}

/// Fills `buf` from a blocking socket; false at end of file.
fn recv_all(fd: RawFd, mut buf: &mut [u8]) -> bool {
    while !buf.is_empty() {
        // SAFETY: a live socket and a writable buffer of its length.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n <= 0 {
            return false;
        }
        buf = &mut buf[n as usize..];
    }
    true
}

fn seqpacket_echo(fd: RawFd) {
    peer::ready();
    let mut buf = [0u8; N];
    while spin_recv(fd, &mut buf) && send_all(fd, &buf) {}
}

fn stream_echo(fd: RawFd) {
    peer::ready();
    let mut buf = [0u8; N];
    while recv_all(fd, &mut buf) && send_all(fd, &buf) {}
}

/// Our end of a socket pair whose other end the peer echoes on.
struct SocketEcho {
    fd: RawFd,
    spin: bool,
    _peer: Peer,
}

impl SocketEcho {
    fn start(peer_core: usize, spin: bool) -> Self {
        let kind = if spin {
            libc::SOCK_SEQPACKET
        } else {
            libc::SOCK_STREAM
        };
        let (ours, theirs) = socket_pair(kind);
        let role = if spin {
            "seqpacket-echo"
        } else {
            "stream-echo"
        };
        let peer = Peer::spawn(role, peer_core, &[theirs]);
        // SAFETY: the peer holds its copy; ours goes.
        unsafe { libc::close(theirs) };
        SocketEcho {
            fd: ours,
            spin,
            _peer: peer,
        }
    }
}

impl Echo<N> for SocketEcho {
    fn echo(&mut self, msg: &[u8; N]) -> [u8; N] {
        let mut out = [0u8; N];
        assert!(send_all(self.fd, msg));
        let ok = if self.spin {
            spin_recv(self.fd, &mut out)
        } else {
            recv_all(self.fd, &mut out)
        };
        assert!(ok, "the peer hung up");
        out
    }
}

impl Drop for SocketEcho {
    fn drop(&mut self) {
        // SAFETY: ours to close, once; the peer reads end of file.
        unsafe { libc::close(self.fd) };
    }
}

fn round_trips(e: &mut impl Echo<N>, iters: u64) -> Duration {
    let msg = payload::<N>();
    let start = Instant::now();
    for _ in 0..iters {
        black_box(e.echo(black_box(&msg)));
    }
    start.elapsed()
}

fn echo_subject<E: Echo<N>>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    start: impl FnOnce() -> E,
) {
    bench_subject(
        group,
        name,
        || {
            let mut e = start();
            warm_up::<N>(&mut e, 2_000);
            e
        },
        round_trips,
    );
}

fn ctrl_rtt(c: &mut Criterion) {
    let peer_core = cores().1;
    let mut group = c.benchmark_group("comch/ctrl_rtt_64B");
    echo_subject(&mut group, "dpakit", || CtrlEcho::start(peer_core));
    echo_subject(&mut group, "shm_ping_pong", || {
        ShmPingPong::start(peer_core)
    });
    echo_subject(&mut group, "seqpacket_spin", || {
        SocketEcho::start(peer_core, true)
    });
    echo_subject(&mut group, "unix_socket", || {
        SocketEcho::start(peer_core, false)
    });
    echo_subject(&mut group, "iceoryx2", || ice::Ping::start(peer_core));
    group.finish();
}

// ---- fast path -------------------------------------------------------------------------------

/// The client with a consumer of `size`-byte buffers; counter 0 of the page counts what it
/// received, counter 1 says its consumer is announced.
fn fast_client(size: usize, page: &'static SharedPage) {
    let host = Dev::open_by_pci(HOST_PCI).unwrap();
    let pe = Pe::new().unwrap();
    let client = Client::builder(&host, SERVICE, &pe)
        .on_message(|_, _, _| {})
        .start()
        .unwrap();
    let conn = client.connect(Duration::from_secs(5)).unwrap();
    let received = page.counter(0);
    let _consumer = dpakit::comch::Consumer::builder(conn, &host, &pe)
        .num_recv(32)
        .buf_size(size)
        .on_recv(move |m| {
            black_box(m.data);
            received.fetch_add(1, Ordering::Release);
        })
        .start()
        .unwrap();
    peer::ready();
    loop {
        pe.progress();
    }
}

/// The server side of a fast-path subject: a Comch server in this process, the peer started
/// (it connects and announces a consumer while the server answers) and that consumer's id.
struct ServerSide {
    arm: Dev,
    pe: Pe,
    server: Server,
    page: SharedPage,
    peer: Peer,
    peer_consumer: u32,
}

impl ServerSide {
    fn start(role: &str, peer_core: usize) -> Self {
        let arm = Dev::open_by_pci(ARM_PCI).unwrap();
        let rep = DevRep::open_by_pci(&arm, HOST_PCI).unwrap();
        let pe = Pe::new().unwrap();
        let id = Rc::new(Cell::new(None));
        let id2 = id.clone();
        let server = Server::builder(&arm, &rep, SERVICE, &pe)
            .on_connect(|_, _, _| {})
            .on_message(|_, _, _| {})
            .on_consumer(move |_, _, i, created| id2.set(created.then_some(i)))
            .start()
            .unwrap();
        let page = SharedPage::new();
        let peer = Peer::spawn_progressing(role, peer_core, &[page.fd()], || {
            pe.progress();
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while id.get().is_none() {
            assert!(Instant::now() < deadline, "the peer's consumer never came");
            pe.progress();
        }
        ServerSide {
            peer_consumer: id.get().unwrap(),
            arm,
            pe,
            server,
            page,
            peer,
        }
    }
}

/// A producer in this process streaming into the peer's consumer.
struct FastStream {
    producer: Option<dpakit::comch::Producer>,
    server: Option<Server>,
    pe: Pe,
    consumer_id: u32,
    page: SharedPage,
    size: usize,
    sent: u64,
    _peer: Peer,
}

impl FastStream {
    fn start(peer_core: usize, size: usize) -> Self {
        let ServerSide {
            arm,
            pe,
            server,
            page,
            peer,
            peer_consumer,
        } = ServerSide::start(&format!("fast-client:{size}"), peer_core);
        let conn = server.channel().connections()[0];
        let producer = dpakit::comch::Producer::builder(conn, &arm, &pe)
            .num_send(IN_FLIGHT as u32)
            .buf_size(size)
            .start()
            .unwrap();
        FastStream {
            producer: Some(producer),
            server: Some(server),
            pe,
            consumer_id: peer_consumer,
            page,
            size,
            sent: 0,
            _peer: peer,
        }
    }

    fn stream(&mut self, n: u64) -> Duration {
        let producer = self.producer.as_ref().unwrap();
        let received = self.page.counter(0);
        let start = Instant::now();
        let target = self.sent + n;
        while received.load(Ordering::Acquire) < target {
            while self.sent < target {
                let Ok(mut loan) = producer.loan(self.size) else {
                    break;
                };
                loan.as_mut_slice()[0] = self.sent as u8;
                loan.send(self.consumer_id, &[], 0).unwrap();
                self.sent += 1;
            }
            self.pe.progress();
        }
        start.elapsed()
    }
}

impl Drop for FastStream {
    fn drop(&mut self) {
        self.producer = None;
        self.server = None;
    }
}

/// The client side of the fast-path echo: every message its consumer receives goes back from
/// its producer to the server's consumer. Counter 1 of the page turns 1 once it knows that
/// consumer.
fn fast_echo(page: &'static SharedPage) {
    let host = Dev::open_by_pci(HOST_PCI).unwrap();
    let pe = Pe::new().unwrap();
    let server_consumer = Rc::new(Cell::new(None));
    let sc = server_consumer.clone();
    let client = Client::builder(&host, SERVICE, &pe)
        .on_message(|_, _, _| {})
        .on_consumer(move |_, _, id, created| {
            sc.set(created.then_some(id));
            page.counter(1).store(u64::from(created), Ordering::Release);
        })
        .start()
        .unwrap();
    let conn = client.connect(Duration::from_secs(5)).unwrap();
    let producer = Rc::new(
        dpakit::comch::Producer::builder(conn, &host, &pe)
            .num_send(IN_FLIGHT as u32)
            .buf_size(N)
            .start()
            .unwrap(),
    );
    let back = producer.clone();
    let _consumer = dpakit::comch::Consumer::builder(conn, &host, &pe)
        .num_recv(32)
        .buf_size(N)
        .on_recv(move |m| {
            let to = server_consumer.get().expect("the server's consumer");
            back.send(to, m.data, &[], 0).expect("echo");
        })
        .start()
        .unwrap();
    peer::ready();
    while !peer::stopped() {
        pe.progress();
    }
}

/// The server side of the fast-path echo, in this process.
struct FastEcho {
    producer: Option<dpakit::comch::Producer>,
    consumer: Option<dpakit::comch::Consumer>,
    server: Option<Server>,
    pe: Pe,
    peer_consumer: u32,
    got: Rc<Cell<Option<[u8; N]>>>,
    _page: SharedPage,
    _peer: Peer,
}

impl FastEcho {
    fn start(peer_core: usize) -> Self {
        let ServerSide {
            arm,
            pe,
            server,
            page,
            peer,
            peer_consumer,
        } = ServerSide::start("fast-echo", peer_core);
        let deadline = Instant::now() + Duration::from_secs(10);
        let conn = server.channel().connections()[0];
        let got: Rc<Cell<Option<[u8; N]>>> = Rc::default();
        let g = got.clone();
        let consumer = dpakit::comch::Consumer::builder(conn, &arm, &pe)
            .num_recv(32)
            .buf_size(N)
            .on_recv(move |m| g.set(m.data.try_into().ok()))
            .start()
            .unwrap();
        let producer = dpakit::comch::Producer::builder(conn, &arm, &pe)
            .num_send(IN_FLIGHT as u32)
            .buf_size(N)
            .start()
            .unwrap();
        // The peer answers only once it knows this consumer.
        while page.counter(1).load(Ordering::Acquire) == 0 {
            assert!(
                Instant::now() < deadline,
                "the peer never saw this consumer"
            );
            pe.progress();
        }
        FastEcho {
            producer: Some(producer),
            consumer: Some(consumer),
            server: Some(server),
            pe,
            peer_consumer,
            got,
            _page: page,
            _peer: peer,
        }
    }
}

impl Echo<N> for FastEcho {
    fn echo(&mut self, msg: &[u8; N]) -> [u8; N] {
        let producer = self.producer.as_ref().expect("running");
        producer
            .send(self.peer_consumer, msg, &[], 0)
            .expect("send");
        loop {
            self.pe.progress();
            if let Some(reply) = self.got.take() {
                return reply;
            }
        }
    }
}

impl Drop for FastEcho {
    fn drop(&mut self) {
        self.producer = None;
        self.consumer = None;
        self.server = None;
    }
}

fn fast_rtt(c: &mut Criterion) {
    let peer_core = cores().1;
    let mut group = c.benchmark_group("comch/fast_rtt_64B");
    echo_subject(&mut group, "dpakit", || FastEcho::start(peer_core));
    echo_subject(&mut group, "shm_ping_pong", || {
        ShmPingPong::start(peer_core)
    });
    echo_subject(&mut group, "iceoryx2", || ice::Ping::start(peer_core));
    group.finish();
}

/// Reads `size`-byte messages and acknowledges each with a byte.
fn stream_sink(size: usize, fd: RawFd) {
    peer::ready();
    let mut buf = vec![0u8; size];
    while recv_all(fd, &mut buf) {
        black_box(&buf);
        if !send_all(fd, &[1]) {
            break;
        }
    }
}

/// The same bytes through a stream socket pair, read by the peer.
struct UnixStream {
    fd: RawFd,
    _peer: Peer,
}

impl UnixStream {
    fn start(peer_core: usize, size: usize) -> Self {
        let (ours, theirs) = socket_pair(libc::SOCK_STREAM);
        let peer = Peer::spawn(&format!("stream-sink:{size}"), peer_core, &[theirs]);
        // SAFETY: the peer holds its copy; ours goes.
        unsafe { libc::close(theirs) };
        UnixStream {
            fd: ours,
            _peer: peer,
        }
    }

    fn stream(&mut self, n: u64, data: &[u8]) -> Duration {
        let start = Instant::now();
        let mut acked = 0u64;
        let mut acks = [0u8; 64];
        let mut take_acks = |acked: &mut u64| {
            // SAFETY: a live socket and a writable buffer.
            let got = unsafe { libc::recv(self.fd, acks.as_mut_ptr().cast(), acks.len(), 0) };
            assert!(got > 0, "the peer hung up");
            *acked += got as u64;
        };
        for i in 0..n {
            assert!(send_all(self.fd, data), "the peer hung up");
            while i + 1 - acked > IN_FLIGHT {
                take_acks(&mut acked);
            }
        }
        while acked < n {
            take_acks(&mut acked);
        }
        start.elapsed()
    }
}

impl Drop for UnixStream {
    fn drop(&mut self) {
        // SAFETY: ours to close, once; the peer reads end of file.
        unsafe { libc::close(self.fd) };
    }
}

fn fast_stream(c: &mut Criterion) {
    let peer_core = cores().1;
    for (figure, size) in SIZES {
        let mut group = c.benchmark_group(format!("comch/{figure}"));
        group.throughput(Throughput::Bytes(size as u64));
        bench_subject(
            &mut group,
            "dpakit",
            || {
                let mut s = FastStream::start(peer_core, size);
                s.stream(64);
                s
            },
            |s, iters| s.stream(iters),
        );
        let src = vec![7u8; size];
        let mut dst = vec![0u8; size];
        group.bench_function("memcpy", |b| {
            b.iter(|| {
                dst.copy_from_slice(black_box(&src));
                black_box(&dst);
            })
        });
        let srcs = vec![vec![7u8; size]; IN_FLIGHT as usize];
        let mut dsts = vec![vec![0u8; size]; IN_FLIGHT as usize];
        let mut turn = 0;
        group.bench_function("memcpy_ws", |b| {
            b.iter(|| {
                let k = turn % IN_FLIGHT as usize;
                turn += 1;
                dsts[k].copy_from_slice(black_box(&srcs[k]));
                black_box(&dsts[k]);
            })
        });
        bench_subject(
            &mut group,
            "unix_socket",
            || UnixStream::start(peer_core, size),
            |s, iters| s.stream(iters, &src),
        );
        bench_subject(
            &mut group,
            "iceoryx2",
            || ice::Stream::start(peer_core, size),
            |s, iters| s.stream(iters, &src),
        );
        group.finish();
    }
}

/// The iceoryx2 subjects: services named after the bench process, so runs never meet.
mod ice {
    use super::*;
    use iceoryx2::port::update_connections::UpdateConnections;
    use iceoryx2::prelude::*;

    type Pub<P> = iceoryx2::port::publisher::Publisher<ipc::Service, P, ()>;
    type Sub<P> = iceoryx2::port::subscriber::Subscriber<ipc::Service, P, ()>;

    fn service_name(tag: &str, what: &str) -> ServiceName {
        format!("dpakit-bench/{tag}/{what}")
            .as_str()
            .try_into()
            .expect("a service name")
    }

    fn node() -> Node<ipc::Service> {
        NodeBuilder::new()
            .create::<ipc::Service>()
            .expect("an iceoryx2 node")
    }

    /// A publisher and subscriber of `[u8; N]` on the services `out` and `back`.
    fn ping_ports(
        node: &Node<ipc::Service>,
        tag: &str,
        out: &str,
        back: &str,
    ) -> (Pub<[u8; N]>, Sub<[u8; N]>) {
        let open = |what: &str| {
            node.service_builder(&service_name(tag, what))
                .publish_subscribe::<[u8; N]>()
                .open_or_create()
                .expect("a publish-subscribe service")
        };
        let publisher = open(out).publisher_builder().create().expect("publisher");
        let subscriber = open(back)
            .subscriber_builder()
            .create()
            .expect("subscriber");
        (publisher, subscriber)
    }

    /// The peer: answers every ping with the same bytes.
    pub fn pong(tag: &str) {
        let node = node();
        let (publisher, subscriber) = ping_ports(&node, tag, "pong", "ping");
        peer::ready();
        while !peer::stopped() {
            if let Some(sample) = subscriber.receive().expect("receive") {
                publisher.send_copy(*sample).expect("send");
            }
        }
    }

    /// Ping in this process, pong in the peer.
    pub struct Ping {
        publisher: Pub<[u8; N]>,
        subscriber: Sub<[u8; N]>,
        _peer: Peer,
        _node: Node<ipc::Service>,
    }

    impl Ping {
        pub fn start(peer_core: usize) -> Self {
            let tag = std::process::id().to_string();
            let node = node();
            let (publisher, subscriber) = ping_ports(&node, &tag, "ping", "pong");
            let peer = Peer::spawn(&format!("ice-pong:{tag}"), peer_core, &[]);
            // The peer's ports exist now; a first message could still miss a subscriber that
            // is not connected yet, so the warm-up's first echo is retried.
            Ping {
                publisher,
                subscriber,
                _peer: peer,
                _node: node,
            }
        }
    }

    impl Echo<N> for Ping {
        fn echo(&mut self, msg: &[u8; N]) -> [u8; N] {
            self.publisher.send_copy(*msg).expect("send");
            let mut resent = Instant::now();
            loop {
                if let Some(sample) = self.subscriber.receive().expect("receive") {
                    return *sample;
                }
                // Only before the peer's subscriber is connected can a ping get lost.
                if resent.elapsed() > Duration::from_millis(100) {
                    self.publisher.send_copy(*msg).expect("send");
                    resent = Instant::now();
                }
            }
        }
    }

    fn stream_service(
        node: &Node<ipc::Service>,
        tag: &str,
    ) -> iceoryx2::service::port_factory::publish_subscribe::PortFactory<ipc::Service, [u8], ()>
    {
        node.service_builder(&service_name(tag, "stream"))
            .publish_subscribe::<[u8]>()
            .subscriber_max_buffer_size(IN_FLIGHT as usize)
            .enable_safe_overflow(false)
            .open_or_create()
            .expect("a publish-subscribe service")
    }

    /// The peer: reads every sample in place, counting them in counter 0 of the page.
    pub fn sink(size: usize, tag: &str, page: &SharedPage) {
        let node = node();
        let subscriber = stream_service(&node, tag)
            .subscriber_builder()
            .create()
            .expect("subscriber");
        let received = page.counter(0);
        peer::ready();
        while !peer::stopped() {
            if let Some(sample) = subscriber.receive().expect("receive") {
                debug_assert_eq!(sample.payload().len(), size);
                black_box(sample.payload());
                received.fetch_add(1, Ordering::Release);
            }
        }
    }

    /// A publisher in this process streaming into the peer's subscriber.
    pub struct Stream {
        publisher: Pub<[u8]>,
        page: SharedPage,
        size: usize,
        sent: u64,
        _peer: Peer,
        _node: Node<ipc::Service>,
    }

    impl Stream {
        pub fn start(peer_core: usize, size: usize) -> Self {
            let tag = format!("{}-{size}", std::process::id());
            let node = node();
            let publisher = stream_service(&node, &tag)
                .publisher_builder()
                .initial_max_slice_len(size)
                .backpressure_strategy(BackpressureStrategy::RetryUntilDelivered)
                .create()
                .expect("publisher");
            let page = SharedPage::new();
            let peer = Peer::spawn(&format!("ice-sink:{size}/{tag}"), peer_core, &[page.fd()]);
            // Wait until the peer's subscriber is connected: a sample sent before is lost.
            let deadline = Instant::now() + Duration::from_secs(10);
            while publisher.update_connections().is_ok() && !has_subscriber(&node, &tag) {
                assert!(
                    Instant::now() < deadline,
                    "the peer's subscriber never came"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            Stream {
                publisher,
                page,
                size,
                sent: 0,
                _peer: peer,
                _node: node,
            }
        }

        pub fn stream(&mut self, n: u64, data: &[u8]) -> Duration {
            let received = self.page.counter(0);
            let start = Instant::now();
            for _ in 0..n {
                let sample = self.publisher.loan_slice_uninit(self.size).expect("loan");
                let sample = sample.write_from_slice(data);
                sample.send().expect("send");
                self.sent += 1;
            }
            while received.load(Ordering::Acquire) < self.sent {
                std::hint::spin_loop();
            }
            start.elapsed()
        }
    }

    fn has_subscriber(node: &Node<ipc::Service>, tag: &str) -> bool {
        stream_service(node, tag)
            .dynamic_config()
            .number_of_subscribers()
            > 0
    }
}

criterion_group! {
    name = benches;
    config = support::config();
    targets = ctrl_rtt, fast_rtt, fast_stream
}
