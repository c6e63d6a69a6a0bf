//! Comch control path round trip between two threads (server echoing on one core, client on
//! the other), beside a Unix socket pair doing the same round trip in the same run: the
//! control path rides on Unix sockets in the soft device, so that is its floor.
//!
//! Figure `comch/ctrl_rtt_64B/<subject>`, subjects `dpakit`, `seqpacket_spin` (a raw
//! `SOCK_SEQPACKET` pair, both sides busy-polling non-blocking receives: the floor of the
//! transport) and `unix_socket` (a blocking stream pair, what a program would write by hand).
//! Time per iteration is one round trip. `cargo bench --bench comch`

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
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;
use support::{Echo, UnixEcho, bench_subject, cores, payload, warm_up};

const N: usize = 64;

/// A client whose server echoes on another thread.
struct CtrlEcho {
    client: Option<Client>,
    pe: Pe,
    conn: Connection,
    got: Rc<Cell<Option<[u8; N]>>>,
    stop: Arc<AtomicBool>,
    server: Option<JoinHandle<()>>,
}

impl CtrlEcho {
    fn start(server_core: usize, client_core: usize) -> Self {
        let dir = std::env::temp_dir().join(format!("dpakit-bench-{}", std::process::id()));
        // SAFETY: set before the server thread starts; nothing else reads the environment now.
        unsafe { std::env::set_var("DPAKIT_SOFT_RUNTIME_DIR", &dir) };
        let stop = Arc::new(AtomicBool::new(false));
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
            while !s.load(Ordering::Relaxed) {
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
        self.stop.store(true, Ordering::Relaxed);
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

criterion_group! {
    name = benches;
    config = support::config();
    targets = ctrl_rtt
}
criterion_main!(benches);
