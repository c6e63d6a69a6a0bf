//! Comch control path round trip between two threads (server echoing on one core, client on
//! the other), beside a Unix socket pair doing the same round trip in the same run: the
//! control path rides on Unix sockets in the soft device, so that is its floor.
//!
//! Figure `comch/ctrl_rtt_64B/<subject>`, subjects `dpakit`, `seqpacket_spin` (a raw
//! `SOCK_SEQPACKET` pair, both sides busy-polling non-blocking receives: the floor of the
//! transport) and `unix_socket` (a blocking stream pair, what a program would write by hand).
//! Time per iteration is one round trip.
//!
//! Figure `comch/fast_64KiB/<subject>`: one-way stream of 64 KiB messages, throughput in bytes.
//! Subjects `dpakit` (a fast-path producer on the server's connection writing into a consumer
//! on the client's, which runs on the other core; 16 sends in flight), `memcpy` (one copy of
//! the same bytes on one thread: the floor, since the fast path copies once) and `unix_socket`
//! (the bytes written into a stream socket pair and read on the other core).
//!
//! `cargo bench --bench comch`

#[path = "support/mod.rs"]
mod support;

use criterion::{Criterion, criterion_group, criterion_main};
use dpakit::comch::{Client, Connection, Server};
use dpakit::dev::{Dev, DevRep};
use dpakit::pe::Pe;
use dpakit::soft::pin_current_thread;
use std::cell::Cell;
use std::hint::black_box;
use std::rc::Rc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;
use support::sync::{Published, StopFlag};
use support::{Echo, UnixEcho, bench_subject, cores, payload, warm_up};

const N: usize = 64;

/// A client whose server echoes on another thread.
struct CtrlEcho {
    client: Option<Client>,
    pe: Pe,
    conn: Connection,
    got: Rc<Cell<Option<[u8; N]>>>,
    stop: Arc<StopFlag>,
    server: Option<JoinHandle<()>>,
}

impl CtrlEcho {
    fn start(server_core: usize, client_core: usize) -> Self {
        let dir = std::env::temp_dir().join(format!("dpakit-bench-{}", std::process::id()));
        // SAFETY: set before the server thread starts; nothing else reads the environment now.
        unsafe { std::env::set_var("DPAKIT_SOFT_RUNTIME_DIR", &dir) };
        let stop = Arc::new(StopFlag::default());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let s = stop.clone();
        let server = std::thread::spawn(move || {
            pin_current_thread(server_core).expect("pin");
            let arm = Dev::open_by_pci("03:00.0").unwrap();
            let rep = DevRep::open_by_pci(&arm, "b1:00.0").unwrap();
            let pe = Pe::new().unwrap();
            let server = Server::builder(&arm, &rep, "bench-echo", &pe)
                .on_connect(|_, _, _| {})
                .on_message(|ch, conn, msg| ch.send(conn, msg, 0).unwrap())
                .start()
                .unwrap();
            ready_tx.send(()).unwrap();
            while !s.is_stopped() {
                pe.progress();
            }
            drop(server);
        });
        ready_rx.recv().unwrap();
        pin_current_thread(client_core).expect("pin");
        let host = Dev::open_by_pci("b1:00.0").unwrap();
        let pe = Pe::new().unwrap();
        let got: Rc<Cell<Option<[u8; N]>>> = Rc::default();
        let g = got.clone();
        let client = Client::builder(&host, "bench-echo", &pe)
            .on_message(move |_, _, msg| g.set(msg.try_into().ok()))
            .start()
            .unwrap();
        let conn = client.connect(std::time::Duration::from_secs(5)).unwrap();
        CtrlEcho {
            client: Some(client),
            pe,
            conn,
            got,
            stop,
            server: Some(server),
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
        self.client = None;
        self.stop.stop();
        if let Some(t) = self.server.take() {
            let _ = t.join();
        }
    }
}

/// A raw `SOCK_SEQPACKET` pair, both ends spinning on non-blocking receives.
struct SpinEcho {
    fd: i32,
    thread: Option<JoinHandle<()>>,
}

fn spin_recv(fd: i32, buf: &mut [u8; N]) -> bool {
    loop {
        // SAFETY: a live socket and a writable buffer of N bytes.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), N, libc::MSG_DONTWAIT) };
        if n > 0 {
            return true;
        }
        if n == 0 {
            return false;
        }
    }
}

impl SpinEcho {
    fn start(core: usize) -> Self {
        let mut fds = [0; 2];
        // SAFETY: room for two descriptors.
        let rc =
            unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0, fds.as_mut_ptr()) };
        assert_eq!(rc, 0, "socketpair");
        let theirs = fds[1];
        let thread = std::thread::spawn(move || {
            pin_current_thread(core).expect("pin");
            let mut buf = [0u8; N];
            while spin_recv(theirs, &mut buf) {
                // SAFETY: a live socket and N readable bytes.
                unsafe { libc::send(theirs, buf.as_ptr().cast(), N, 0) };
            }
            // SAFETY: ours to close.
            unsafe { libc::close(theirs) };
        });
        SpinEcho {
            fd: fds[0],
            thread: Some(thread),
        }
    }
}

impl Echo<N> for SpinEcho {
    fn echo(&mut self, msg: &[u8; N]) -> [u8; N] {
        // SAFETY: a live socket and N readable bytes.
        unsafe { libc::send(self.fd, msg.as_ptr().cast(), N, 0) };
        let mut out = [0u8; N];
        spin_recv(self.fd, &mut out);
        out
    }
}

impl Drop for SpinEcho {
    fn drop(&mut self) {
        // SAFETY: ours to shut; the peer reads end-of-file and exits.
        unsafe { libc::shutdown(self.fd, libc::SHUT_RDWR) };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // SAFETY: ours to close, once.
        unsafe { libc::close(self.fd) };
    }
}

fn round_trips(e: &mut impl Echo<N>, iters: u64) -> std::time::Duration {
    let msg = payload::<N>();
    let start = Instant::now();
    for _ in 0..iters {
        black_box(e.echo(black_box(&msg)));
    }
    start.elapsed()
}

fn ctrl_rtt(c: &mut Criterion) {
    let (host_core, peer_core) = cores();
    let mut group = c.benchmark_group("comch/ctrl_rtt_64B");
    bench_subject(
        &mut group,
        "dpakit",
        || {
            let mut e = CtrlEcho::start(peer_core, host_core);
            warm_up::<N>(&mut e, 2_000);
            e
        },
        round_trips,
    );
    bench_subject(
        &mut group,
        "seqpacket_spin",
        || {
            let mut e = SpinEcho::start(peer_core);
            warm_up::<N>(&mut e, 2_000);
            e
        },
        round_trips,
    );
    bench_subject(
        &mut group,
        "unix_socket",
        || {
            let mut e = UnixEcho::<N>::start(peer_core);
            warm_up::<N>(&mut e, 2_000);
            e
        },
        round_trips,
    );
    group.finish();
}

const FAST: usize = 64 << 10;

/// A producer on this thread streaming into a consumer on another.
struct FastStream {
    producer: Option<dpakit::comch::Producer>,
    server: Option<Server>,
    pe: Pe,
    consumer_id: u32,
    received: Arc<Published>,
    sent: u64,
    stop: Arc<StopFlag>,
    client: Option<JoinHandle<()>>,
}

impl FastStream {
    fn start(client_core: usize, server_core: usize) -> Self {
        let dir = std::env::temp_dir().join(format!("dpakit-bench-{}", std::process::id()));
        // SAFETY: set before the client thread starts.
        unsafe { std::env::set_var("DPAKIT_SOFT_RUNTIME_DIR", &dir) };
        pin_current_thread(server_core).expect("pin");
        let arm = Dev::open_by_pci("03:00.0").unwrap();
        let rep = DevRep::open_by_pci(&arm, "b1:00.0").unwrap();
        let pe = Pe::new().unwrap();
        let id = Rc::new(Cell::new(None));
        let id2 = id.clone();
        let server = Server::builder(&arm, &rep, "bench-fast", &pe)
            .on_connect(|_, _, _| {})
            .on_message(|_, _, _| {})
            .on_consumer(move |_, _, i, created| id2.set(created.then_some(i)))
            .start()
            .unwrap();
        let stop = Arc::new(StopFlag::default());
        let received = Arc::new(Published::default());
        let (s, r) = (stop.clone(), received.clone());
        let client = std::thread::spawn(move || {
            pin_current_thread(client_core).expect("pin");
            let host = Dev::open_by_pci("b1:00.0").unwrap();
            let pe = Pe::new().unwrap();
            let client = Client::builder(&host, "bench-fast", &pe)
                .on_message(|_, _, _| {})
                .start()
                .unwrap();
            let conn = client.connect(std::time::Duration::from_secs(5)).unwrap();
            let consumer = dpakit::comch::Consumer::builder(conn, &host, &pe)
                .num_recv(32)
                .buf_size(FAST)
                .on_recv(move |m| {
                    black_box(m.data);
                    r.add(1);
                })
                .start()
                .unwrap();
            while !s.is_stopped() {
                pe.progress();
            }
            drop(consumer);
        });
        while id.get().is_none() {
            pe.progress();
        }
        let conn = server.channel().connections()[0];
        let producer = dpakit::comch::Producer::builder(conn, &arm, &pe)
            .num_send(16)
            .buf_size(FAST)
            .start()
            .unwrap();
        FastStream {
            producer: Some(producer),
            server: Some(server),
            pe,
            consumer_id: id.get().unwrap(),
            received,
            sent: 0,
            stop,
            client: Some(client),
        }
    }

    fn stream(&mut self, n: u64) -> std::time::Duration {
        let producer = self.producer.as_ref().unwrap();
        let start = Instant::now();
        let target = self.sent + n;
        while self.received.get() < target {
            while self.sent < target {
                let Ok(mut loan) = producer.loan(FAST) else {
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
        self.stop.stop();
        if let Some(t) = self.client.take() {
            let _ = t.join();
        }
        self.server = None;
    }
}

/// The same bytes through a stream socket pair, read on the other core.
struct UnixStream64 {
    tx: std::os::unix::net::UnixStream,
    acks: std::os::unix::net::UnixStream,
    thread: Option<JoinHandle<()>>,
}

impl UnixStream64 {
    fn start(core: usize) -> Self {
        use std::io::{Read, Write};
        let (tx, mut rx) = std::os::unix::net::UnixStream::pair().unwrap();
        let (acks, mut ack_tx) = std::os::unix::net::UnixStream::pair().unwrap();
        let thread = std::thread::spawn(move || {
            pin_current_thread(core).expect("pin");
            let mut buf = vec![0u8; FAST];
            while rx.read_exact(&mut buf).is_ok() {
                black_box(&buf);
                if ack_tx.write_all(&[1]).is_err() {
                    break;
                }
            }
        });
        UnixStream64 {
            tx,
            acks,
            thread: Some(thread),
        }
    }

    fn stream(&mut self, n: u64, data: &[u8]) -> std::time::Duration {
        use std::io::{Read, Write};
        let start = Instant::now();
        let mut acked = 0u64;
        let mut ack = [0u8; 64];
        for i in 0..n {
            self.tx.write_all(data).unwrap();
            // Keep at most 16 messages unread, as the producer keeps 16 sends in flight.
            while i + 1 - acked > 16 {
                acked += self.acks.read(&mut ack).unwrap() as u64;
            }
        }
        while acked < n {
            acked += self.acks.read(&mut ack).unwrap() as u64;
        }
        start.elapsed()
    }
}

impl Drop for UnixStream64 {
    fn drop(&mut self) {
        let _ = self.tx.shutdown(std::net::Shutdown::Both);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn fast_stream(c: &mut Criterion) {
    let (host_core, peer_core) = cores();
    let mut group = c.benchmark_group("comch/fast_64KiB");
    group.throughput(criterion::Throughput::Bytes(FAST as u64));
    bench_subject(
        &mut group,
        "dpakit",
        || {
            let mut s = FastStream::start(peer_core, host_core);
            s.stream(200);
            s
        },
        |s, iters| s.stream(iters),
    );
    let src = vec![7u8; FAST];
    let mut dst = vec![0u8; FAST];
    group.bench_function("memcpy", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&dst);
        })
    });
    bench_subject(
        &mut group,
        "unix_socket",
        || UnixStream64::start(peer_core),
        |s, iters| s.stream(iters, &src),
    );
    group.finish();
}

criterion_group! {
    name = benches;
    config = support::config();
    targets = ctrl_rtt, fast_stream
}
criterion_main!(benches);
