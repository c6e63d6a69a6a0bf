//! A hostile process on the same machine, speaking the soft device's Comch protocol to a
//! server by hand (see docs/comch.md, "Trust model"), must neither crash, block nor stall the
//! server, nor delay its service to a well-behaved client by more than a few milliseconds.
//!
//! The server runs in a child process (this binary in the `server` role): it echoes control
//! messages and, when a peer announces a consumer, sends it one 64-byte buffer from a producer
//! of its own — the write into the peer's ring and the wake-up are what a hostile peer attacks.
//! The attacker (raw protocol) and a well-behaved client (the safe API) run in the test.
//!
//! Why one long file: the attacks share the server role, the well-behaved client and the
//! measurements, and each class of attack is one test; apart, they would need a shared module
//! as long as the file and a server binary each.

#[path = "support/procs.rs"]
mod procs;

use dpakit::comch::{Client, Connection, Producer, Server};
use dpakit::dev::{Dev, DevRep};
use dpakit::pe::Pe;
use procs::{Proc, ev, var};
use std::cell::RefCell;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

const ARM: &str = "0000:03:00.0";
const HOST: &str = "0000:b1:00.0";
const T: Duration = Duration::from_secs(30);
/// How long a well-behaved client's round trip may take while an attack goes on.
const SERVICE_BOUND: Duration = Duration::from_millis(10);
/// Rounds of 200 round trips a check may take to see one within the bound. The server and the
/// witness both poll busily; on a loaded 2-vCPU machine the scheduler can park either of them
/// for a period (about 20 ms) in any round, while what an attack does to the server (a wait on
/// the peer, descriptors, a spin) shows in every round that follows it.
const CHECK_ROUNDS: usize = 3;

// ---------------------------------------------------------------------------------------------
// The server (child process)
// ---------------------------------------------------------------------------------------------

#[test]
fn role() {
    if var("DPAKIT_ROLE") == "server" {
        server_role();
    }
}

fn server_role() {
    let arm = Dev::open_by_pci(ARM).unwrap();
    let rep = DevRep::open_by_pci(&arm, HOST).unwrap();
    let pe = Pe::new().unwrap();
    // Consumers announced and not probed yet, connections gone: handled outside callbacks.
    let announced: Rc<RefCell<Vec<(Connection, u32)>>> = Rc::default();
    let gone: Rc<RefCell<Vec<Connection>>> = Rc::default();
    let (a, g) = (announced.clone(), gone.clone());
    let server = Server::builder(&arm, &rep, &var("NAME"), &pe)
        .on_connect(|_, _, ok| ev(format_args!("connect {}", u8::from(ok))))
        .on_disconnect(move |_, conn, _| {
            g.borrow_mut().push(conn);
            ev(format_args!("disconnect"));
        })
        .on_message(|ch, conn, msg| {
            ev(format_args!("message {}", msg.len()));
            let _ = ch.send(conn, msg, 0);
        })
        .on_consumer(move |_, conn, id, created| {
            if created {
                a.borrow_mut().push((conn, id));
            }
        })
        .start()
        .unwrap();
    let mut producers: Vec<(Connection, Producer)> = Vec::new();
    ev(format_args!("ready"));
    loop {
        pe.progress();
        for conn in gone.borrow_mut().drain(..) {
            producers.retain(|(c, _)| *c != conn);
        }
        let todo = std::mem::take(&mut *announced.borrow_mut());
        for (conn, id) in todo {
            if !producers.iter().any(|(c, _)| *c == conn) {
                match Producer::builder(conn, &arm, &pe).num_send(4).start() {
                    Ok(p) => producers.push((conn, p)),
                    Err(e) => {
                        ev(format_args!("producer-failed {:?}", e.code()));
                        continue;
                    }
                }
            }
            let (_, p) = producers.iter().find(|(c, _)| *c == conn).unwrap();
            match p.send(id, &[7u8; 64], b"probe", 0) {
                Ok(()) => ev(format_args!("probe-submitted {id}")),
                Err(e) => ev(format_args!("probe-refused {id} {:?}", e.code())),
            }
        }
        if server.state().is_err() {
            return;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The attacker: the wire protocol by hand
// ---------------------------------------------------------------------------------------------

/// A raw connection to the server's socket.
struct Raw(OwnedFd);

/// The runtime directory this process's soft device uses (the server child is given the
/// same, so the well-behaved client in this process finds it).
fn shared_runtime_dir() -> PathBuf {
    let set = |v: &str| std::env::var_os(v).filter(|d| !d.is_empty());
    if let Some(d) = set("DPAKIT_SOFT_RUNTIME_DIR") {
        return d.into();
    }
    if let Some(d) = set("XDG_RUNTIME_DIR") {
        return PathBuf::from(d).join("dpakit-soft");
    }
    // SAFETY: getuid cannot fail.
    PathBuf::from(format!("/tmp/dpakit-soft-{}", unsafe { libc::getuid() }))
}

/// Where server `name` listens: the runtime directory, the function and a 64-bit FNV-1a hash
/// of the name (wire/src/runtime.rs).
fn server_socket(dir: &Path, name: &str) -> PathBuf {
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    dir.join(format!("comch-{HOST}-{hash:016x}"))
}

/// Room for the descriptors a message carries, aligned for its control headers.
#[repr(C, align(8))]
struct Control([u8; 64]);

/// A message header over one buffer and all of `control`, for sendmsg and recvmsg; both must
/// outlive its use.
fn message(iov: &mut libc::iovec, control: &mut Control) -> libc::msghdr {
    // SAFETY: msghdr is plain data; all zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = control.0.len() as _;
    msg
}

impl Raw {
    /// Connects without saying anything.
    fn connect(path: &Path) -> Option<Raw> {
        // SAFETY: no pointers; the result is checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                0,
            )
        };
        if fd < 0 {
            return None;
        }
        // SAFETY: a fresh descriptor.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sockaddr_un is plain data.
        let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let bytes = path.as_os_str().as_encoded_bytes();
        for (d, &s) in addr.sun_path.iter_mut().zip(bytes) {
            *d = s as libc::c_char;
        }
        // SAFETY: a valid address of that size.
        let rc = unsafe {
            libc::connect(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_un).cast(),
                std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
            )
        };
        (rc == 0).then_some(Raw(fd))
    }

    /// Connects and completes the handshake for server `name` as a client of `HOST` would.
    fn handshake(path: &Path, name: &str) -> Raw {
        let raw = Raw::connect(path).expect("connect");
        // SAFETY: no pointers: the handshake waits for its answer.
        unsafe { libc::fcntl(raw.0.as_raw_fd(), libc::F_SETFL, 0) };
        let mut hello = vec![1u8];
        hello.extend_from_slice(&2u32.to_le_bytes()); // protocol version
        hello.extend_from_slice(&4080u32.to_le_bytes());
        for s in [HOST, name] {
            hello.extend_from_slice(&(s.len() as u16).to_le_bytes());
            hello.extend_from_slice(s.as_bytes());
        }
        raw.send(&hello, &[]);
        let mut buf = [0u8; 512];
        // SAFETY: reads into a live buffer.
        let n = unsafe { libc::recv(raw.0.as_raw_fd(), buf.as_mut_ptr().cast(), 512, 0) };
        assert_eq!((n, buf[0]), (1, 2), "WELCOME");
        raw
    }

    /// Sends one message with `fds` attached (blocking).
    fn send(&self, bytes: &[u8], fds: &[RawFd]) -> bool {
        let mut iov = libc::iovec {
            iov_base: bytes.as_ptr() as *mut libc::c_void,
            iov_len: bytes.len(),
        };
        let mut control = Control([0; 64]);
        let mut msg = message(&mut iov, &mut control);
        if fds.is_empty() {
            msg.msg_control = std::ptr::null_mut();
            msg.msg_controllen = 0;
        } else {
            let len = std::mem::size_of_val(fds) as u32;
            // SAFETY: arithmetic, then a header written inside the 64-byte control buffer.
            unsafe {
                msg.msg_controllen = libc::CMSG_SPACE(len) as _;
                let c = libc::CMSG_FIRSTHDR(&msg);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = libc::CMSG_LEN(len) as _;
                std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c).cast(), fds.len());
            }
        }
        // SAFETY: `msg` describes live buffers.
        unsafe { libc::sendmsg(self.0.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) >= 0 }
    }

    /// Whether the server closed the connection (within `timeout`).
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
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }
}

/// Ring layout a consumer shares (wire/src/fast_path/ring.rs): a 320-byte header of five
/// counters on their own lines, `depth` posts of 24 bytes, `depth` completion slots of 64.
const RING_HEADER: usize = 320;

fn ring_bytes(depth: u64) -> usize {
    RING_HEADER + depth as usize * 88
}

fn memfd(len: usize, contents: &[u8]) -> OwnedFd {
    // SAFETY: a NUL-terminated name; checked below.
    let fd = unsafe {
        libc::memfd_create(
            c"hostile".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    assert!(fd >= 0);
    // SAFETY: a fresh descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: writes a live slice, sizes and seals the file.
    unsafe {
        assert_eq!(
            libc::write(fd.as_raw_fd(), contents.as_ptr().cast(), contents.len()),
            contents.len() as isize
        );
        assert_eq!(libc::ftruncate(fd.as_raw_fd(), len as libc::off_t), 0);
        assert_eq!(
            libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, libc::F_SEAL_SHRINK),
            0
        );
    }
    fd
}

/// A ring of `depth` with one receive of 4 KiB posted, alive and asleep (so every send wakes
/// it); completion slots free unless `stuck` (then none ever is).
fn ring(depth: u64, stuck: bool) -> Vec<u8> {
    let mut r = vec![0u8; ring_bytes(depth)];
    r[64..72].copy_from_slice(&1u64.to_le_bytes()); // post_tail: one posted
    r[192..200].copy_from_slice(&1u64.to_le_bytes()); // alive
    r[256..264].copy_from_slice(&1u64.to_le_bytes()); // sleeping: wake me
    r[RING_HEADER + 8..RING_HEADER + 16].copy_from_slice(&4096u64.to_le_bytes()); // post 0: capacity
    let comps = RING_HEADER + depth as usize * 24;
    for i in 0..depth as usize {
        let seq = if stuck { u64::MAX } else { i as u64 };
        r[comps + i * 64..comps + i * 64 + 8].copy_from_slice(&seq.to_le_bytes());
    }
    r
}

/// A `CONSUMER_NEW` for consumer `id` with a ring of `depth` and `data_len` bytes of data.
fn consumer_new(id: u32, depth: u64, data_len: u64) -> Vec<u8> {
    let mut m = vec![6u8];
    m.extend_from_slice(&id.to_le_bytes());
    m.extend_from_slice(&depth.to_le_bytes());
    m.extend_from_slice(&32u32.to_le_bytes());
    m.extend_from_slice(&(ring_bytes(depth) as u64).to_le_bytes());
    m.extend_from_slice(&data_len.to_le_bytes());
    m
}

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: room for two descriptors.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: fresh descriptors.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

fn stream_pair() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: room for two descriptors.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    assert_eq!(rc, 0);
    // SAFETY: fresh descriptors.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

// ---------------------------------------------------------------------------------------------
// The well-behaved client, and what the test measures
// ---------------------------------------------------------------------------------------------

/// A client of the safe API that measures control-path round trips.
struct Witness {
    pe: Pe,
    client: Client,
    conn: Connection,
    echoes: Rc<RefCell<u64>>,
}

impl Witness {
    fn connect(host: &Dev, name: &str) -> Witness {
        let pe = Pe::new().unwrap();
        let echoes = Rc::new(RefCell::new(0u64));
        let e = echoes.clone();
        let client = Client::builder(host, name, &pe)
            .on_message(move |_, _, _| *e.borrow_mut() += 1)
            .start()
            .unwrap();
        let conn = client.connect(T).unwrap();
        Witness {
            pe,
            client,
            conn,
            echoes,
        }
    }

    /// The slowest of `n` round trips.
    fn worst_round_trip(&self, n: usize) -> Duration {
        let mut worst = Duration::ZERO;
        for i in 0..n {
            let start = Instant::now();
            let want = *self.echoes.borrow() + 1;
            self.client
                .channel()
                .send(self.conn, &(i as u64).to_le_bytes(), 0)
                .unwrap();
            while *self.echoes.borrow() < want {
                self.pe.progress();
                assert!(start.elapsed() < T, "the server stopped serving");
            }
            worst = worst.max(start.elapsed());
        }
        worst
    }
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// The server, the witness, and the attack's figures.
struct Scene {
    // One scene at a time: two spinning servers on a 2-core machine would measure the
    // scheduler, not the server.
    _one_at_a_time: std::sync::MutexGuard<'static, ()>,
    dir: PathBuf,
    name: String,
    server: Proc,
    witness: Witness,
    /// The witness's worst of 200 round trips before the attack: what the check's figures
    /// compare with.
    baseline: Duration,
    _host: Dev,
}

impl Scene {
    fn new(test: &str) -> Scene {
        static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let guard = ONE.lock().unwrap_or_else(|p| p.into_inner());
        let dir = shared_runtime_dir();
        let name = format!("hostile-{}-{test}", std::process::id());
        let server = Proc::spawn(&dir, "server", &[("NAME", name.clone())]);
        server.expect("ready", T);
        let host = Dev::open_by_pci(HOST).unwrap();
        let witness = Witness::connect(&host, &name);
        server.expect("connect 1", T);
        let baseline = witness.worst_round_trip(200);
        Scene {
            baseline,
            _one_at_a_time: guard,
            dir,
            name,
            server,
            witness,
            _host: host,
        }
    }

    fn socket(&self) -> PathBuf {
        server_socket(&self.dir, &self.name)
    }

    fn handshake(&self) -> Raw {
        Raw::handshake(&self.socket(), &self.name)
    }

    /// After an attack: the server still runs and serves the witness promptly. Prints the
    /// figures for the closing note.
    fn check(&mut self, attack: &str, rss_before: u64) {
        let mut worsts = Vec::new();
        while worsts.len() < CHECK_ROUNDS && worsts.iter().all(|w| *w >= SERVICE_BOUND) {
            worsts.push(self.witness.worst_round_trip(200));
        }
        let worst = *worsts.iter().min().expect("one round at least");
        let pid = self.server.child.id();
        assert!(
            self.server.child.try_wait().unwrap().is_none(),
            "{attack}: the server died"
        );
        eprintln!(
            "{attack}: worst witness round trip {worst:?} (rounds: {worsts:?}; before the \
             attack {:?}), server RSS {rss_before} -> {} KiB, {} descriptors",
            self.baseline,
            rss_kib(pid),
            open_fds(pid)
        );
        assert!(
            worst < SERVICE_BOUND,
            "{attack}: a well-behaved client waited {worst:?} at worst in each of {CHECK_ROUNDS} \
             rounds ({worsts:?})"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The attacks
// ---------------------------------------------------------------------------------------------

/// 1. A wake-up whose reader is gone: a pipe (refused: not a socket) and a stream socket with
///    its other end closed (accepted; the write must not raise SIGPIPE).
#[test]
fn a_wake_up_with_no_reader_raises_no_sigpipe() {
    let mut s = Scene::new("sigpipe");
    let rss = rss_kib(s.server.child.id());
    let pipe_peer = s.handshake();
    let (r, w) = pipe();
    drop(r);
    let (ring_fd, data_fd) = (memfd(ring_bytes(4), &ring(4, false)), memfd(4096, &[]));
    pipe_peer.send(
        &consumer_new(1, 4, 4096),
        &[ring_fd.as_raw_fd(), data_fd.as_raw_fd(), w.as_raw_fd()],
    );
    assert!(
        pipe_peer.closed_within(T),
        "a pipe as wake-up drops the peer"
    );

    let socket_peer = s.handshake();
    let (mine, theirs) = stream_pair();
    drop(mine);
    socket_peer.send(
        &consumer_new(1, 4, 4096),
        &[ring_fd.as_raw_fd(), data_fd.as_raw_fd(), theirs.as_raw_fd()],
    );
    s.server.expect("probe-submitted 1", T);
    s.check("wake-up without a reader", rss);
}

/// 2. A wake-up that would block: a blocking eventfd at its maximum (refused), and a blocking
///    stream socket whose buffer is full (written without waiting).
#[test]
fn a_wake_up_that_would_block_blocks_nothing() {
    let mut s = Scene::new("block");
    let rss = rss_kib(s.server.child.id());
    let (ring_fd, data_fd) = (memfd(ring_bytes(4), &ring(4, false)), memfd(4096, &[]));

    let eventfd_peer = s.handshake();
    // SAFETY: no pointers.
    let efd = unsafe { OwnedFd::from_raw_fd(libc::eventfd(0, libc::EFD_CLOEXEC)) };
    let max = u64::MAX - 1;
    // SAFETY: writes 8 bytes from a live u64.
    unsafe { libc::write(efd.as_raw_fd(), (&max as *const u64).cast(), 8) };
    eventfd_peer.send(
        &consumer_new(1, 4, 4096),
        &[ring_fd.as_raw_fd(), data_fd.as_raw_fd(), efd.as_raw_fd()],
    );
    assert!(
        eventfd_peer.closed_within(T),
        "an eventfd as wake-up drops the peer"
    );

    let full_peer = s.handshake();
    let (_mine, theirs) = stream_pair();
    // Fill the socket's buffer, then leave it blocking.
    // SAFETY: no pointers.
    unsafe { libc::fcntl(theirs.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    let chunk = [0u8; 4096];
    // SAFETY: sends from a live buffer until the socket is full.
    while unsafe { libc::send(theirs.as_raw_fd(), chunk.as_ptr().cast(), 4096, 0) } > 0 {}
    // SAFETY: no pointers.
    unsafe { libc::fcntl(theirs.as_raw_fd(), libc::F_SETFL, 0) };
    full_peer.send(
        &consumer_new(1, 4, 4096),
        &[ring_fd.as_raw_fd(), data_fd.as_raw_fd(), theirs.as_raw_fd()],
    );
    s.server.expect("probe-submitted 1", T);
    s.check("wake-up that would block", rss);
}

/// 3. A ring whose completion slots never free: the send fails at once and the peer is
///    dropped, instead of holding the server's thread.
#[test]
fn a_ring_that_never_frees_its_slots_stalls_nothing() {
    let mut s = Scene::new("stuck");
    let rss = rss_kib(s.server.child.id());
    let peer = s.handshake();
    let (ring_fd, data_fd) = (memfd(ring_bytes(4), &ring(4, true)), memfd(4096, &[]));
    let (_mine, theirs) = stream_pair();
    peer.send(
        &consumer_new(1, 4, 4096),
        &[ring_fd.as_raw_fd(), data_fd.as_raw_fd(), theirs.as_raw_fd()],
    );
    s.server.expect("probe-submitted 1", T);
    assert!(peer.closed_within(T), "a broken ring drops the peer");
    s.check("completion slots never freed", rss);
}

/// 4. A control message longer than the agreed maximum is never delivered: the peer is dropped.
#[test]
fn an_oversized_message_is_not_delivered() {
    let mut s = Scene::new("oversized");
    let rss = rss_kib(s.server.child.id());
    let peer = s.handshake();
    let mut data = vec![4u8];
    data.resize(4591, 0xAB);
    peer.send(&data, &[]);
    assert!(peer.closed_within(T), "the peer is dropped");
    let mut events = Vec::new();
    while let Ok((_, e)) = s.server.events.try_recv() {
        events.push(e);
    }
    assert!(
        !events.iter().any(|e| e == "message 4590"),
        "delivered: {events:?}"
    );
    s.check("oversized control message", rss);
}

/// 5. Connections that never say HELLO: the server keeps at most 64 and drops each after 1 s;
///    its descriptors stay bounded and a well-behaved client is served meanwhile.
#[test]
fn silent_connections_cannot_exhaust_the_server() {
    let mut s = Scene::new("silent");
    let rss = rss_kib(s.server.child.id());
    let pid = s.server.child.id();
    let fds_before = open_fds(pid);
    raise_fd_limit();
    let path = s.socket();
    let mut silent = Vec::new();
    for _ in 0..1530 {
        match Raw::connect(&path) {
            Some(r) => silent.push(r),
            None => std::thread::sleep(Duration::from_micros(200)),
        }
        if silent.len() % 100 == 0 {
            s.witness.pe.progress();
        }
    }
    s.check("1,530 silent connections", rss);
    let fds = open_fds(pid);
    assert!(
        fds <= fds_before + 64 + 8,
        "the server holds {fds} descriptors (before: {fds_before})"
    );
    // The handshake timeout frees the rest.
    std::thread::sleep(Duration::from_millis(1500));
    s.witness.worst_round_trip(10);
    assert!(open_fds(pid) <= fds_before + 8);
}

/// 6. Too many consumers on one connection, and a 64 TiB memory file: the peer is dropped, the
///    server maps neither.
#[test]
fn announcements_past_the_limits_are_refused() {
    let mut s = Scene::new("limits");
    let rss = rss_kib(s.server.child.id());
    let ring_fd = memfd(ring_bytes(4), &ring(4, false));
    let data_fd = memfd(4096, &[]);

    let many = s.handshake();
    let mut keep = Vec::new();
    for id in 1..=40 {
        let (_mine, theirs) = stream_pair();
        if !many.send(
            &consumer_new(id, 4, 4096),
            &[ring_fd.as_raw_fd(), data_fd.as_raw_fd(), theirs.as_raw_fd()],
        ) {
            break;
        }
        keep.push(_mine);
    }
    assert!(many.closed_within(T), "the 33rd consumer drops the peer");

    let huge = s.handshake();
    let big = memfd(0, &[]);
    // SAFETY: no pointers; a sparse file.
    assert_eq!(unsafe { libc::ftruncate(big.as_raw_fd(), 1 << 46) }, 0);
    let (_mine, theirs) = stream_pair();
    huge.send(
        &consumer_new(1, 4, 1 << 46),
        &[ring_fd.as_raw_fd(), big.as_raw_fd(), theirs.as_raw_fd()],
    );
    assert!(
        huge.closed_within(T),
        "a 64 TiB announcement drops the peer"
    );
    s.check("consumer limits", rss);
}

/// 7. Descriptors on a message that carries none — a DATA frame, or an empty message (which
///    reads as the peer hanging up) — are closed with the connection they break, not kept until
///    the server next receives from anyone: a pipe's reader sees its end of file at once.
#[test]
fn descriptors_on_a_broken_connection_are_closed_with_it() {
    let mut s = Scene::new("stray-fds");
    let rss = rss_kib(s.server.child.id());
    for (what, msg) in [
        ("a DATA frame", &[4u8, 1, 2, 3][..]),
        ("an empty message", &[]),
    ] {
        let peer = s.handshake();
        let (r, w) = pipe();
        assert!(peer.send(msg, &[w.as_raw_fd()]), "sending {what}");
        drop(w);
        assert!(
            peer.closed_within(T),
            "{what} with a descriptor drops the peer"
        );
        assert!(
            end_of_file_within(&r, Duration::from_secs(5)),
            "the server still holds the pipe's write end that came with {what}"
        );
    }
    s.check("descriptors on a message that carries none", rss);
}

/// Control-ring layout (wire/src/ctrl_ring.rs): four counter lines (tail, head, sleeping,
/// sender waiting), then slots of a 4-byte length, 4 of padding and room for the agreed max
/// message size (4080 here), each rounded up to 64 bytes.
const CTRL_HEADER: usize = 256;
const CTRL_SLOT: usize = 4096;

fn ctrl_ring_len(depth: u64) -> u64 {
    (CTRL_HEADER + depth as usize * CTRL_SLOT) as u64
}

fn ctrl_ring_msg(depth: u64, ring_len: u64) -> Vec<u8> {
    let mut m = vec![12u8];
    m.extend_from_slice(&depth.to_le_bytes());
    m.extend_from_slice(&ring_len.to_le_bytes());
    m
}

impl Raw {
    /// The server's control-ring announcement, which follows WELCOME: its depth, length and
    /// memory file.
    fn server_ring(&self) -> (u64, u64, OwnedFd) {
        let mut buf = [0u8; 64];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let mut control = Control([0; 64]);
        let mut msg = message(&mut iov, &mut control);
        // SAFETY: `msg` describes live buffers (the socket blocks: set in `handshake`).
        let n = unsafe { libc::recvmsg(self.0.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        assert_eq!((n, buf[0]), (17, 12), "CTRL_RING after WELCOME");
        // SAFETY: the kernel wrote one SCM_RIGHTS header with one descriptor.
        let fd = unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            assert!(!c.is_null() && (*c).cmsg_type == libc::SCM_RIGHTS);
            let mut fd: RawFd = -1;
            std::ptr::copy_nonoverlapping(libc::CMSG_DATA(c).cast(), &mut fd, 1);
            OwnedFd::from_raw_fd(fd)
        };
        let depth = u64::from_le_bytes(buf[1..9].try_into().unwrap());
        let len = u64::from_le_bytes(buf[9..17].try_into().unwrap());
        (depth, len, fd)
    }
}

/// Writes `value` at `offset` of the server's control ring (mapped for the write).
fn poke_ring(fd: &OwnedFd, len: u64, offset: usize, value: u64) {
    // SAFETY: a fresh shared mapping of the server's sealed ring file, unmapped below; the
    // write lands inside it (offsets are the header's and slot 0's).
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        std::ptr::write_volatile(p.cast::<u8>().add(offset).cast::<u64>(), value);
        libc::munmap(p, len as usize);
    }
}

/// 8. The control path in shared memory: a ring announced in a file that can shrink, or of
///    the wrong size, or without its file; an acknowledgement repeated; a control message on
///    the socket once the ring is acknowledged; and, in the server's own ring, a published
///    count past the ring or a message longer than agreed. Each drops its peer alone.
#[test]
fn control_ring_violations_drop_their_peer() {
    let mut s = Scene::new("ctrl-ring");
    let rss = rss_kib(s.server.child.id());
    let len = ctrl_ring_len(128);
    // SAFETY: a NUL-terminated name; a fresh descriptor, sized but not sealed.
    let unsealed = unsafe {
        let fd = libc::memfd_create(c"unsealed".as_ptr(), libc::MFD_CLOEXEC);
        assert!(fd >= 0);
        assert_eq!(libc::ftruncate(fd, len as libc::off_t), 0);
        OwnedFd::from_raw_fd(fd)
    };
    let sealed = memfd(len as usize, &[]);
    let announcements: [(&str, Vec<u8>, Vec<RawFd>); 3] = [
        (
            "a ring that can shrink",
            ctrl_ring_msg(128, len),
            vec![unsealed.as_raw_fd()],
        ),
        (
            "a ring of the wrong size",
            ctrl_ring_msg(128, len - 64),
            vec![sealed.as_raw_fd()],
        ),
        ("a ring without its file", ctrl_ring_msg(128, len), vec![]),
    ];
    for (what, msg, fds) in announcements {
        let peer = s.handshake();
        peer.send(&msg, &fds);
        assert!(peer.closed_within(T), "{what} drops the peer");
    }
    let twice = s.handshake();
    twice.send(&[13], &[]);
    twice.send(&[13], &[]);
    assert!(
        twice.closed_within(T),
        "a second acknowledgement drops the peer"
    );

    let socket_after_ack = s.handshake();
    socket_after_ack.send(&[13], &[]);
    socket_after_ack.send(&[4, 1, 2, 3], &[]);
    assert!(
        socket_after_ack.closed_within(T),
        "a control message on the socket after the acknowledgement drops the peer"
    );

    for (what, offset, value) in [
        ("a published count past the ring", 0, 1000u64),
        ("a message longer than agreed", CTRL_HEADER, 5000),
    ] {
        let peer = s.handshake();
        let (depth, ring_len, fd) = peer.server_ring();
        assert_eq!((depth, ring_len), (128, len), "the server's ring");
        peer.send(&[13], &[]);
        poke_ring(&fd, ring_len, offset, value);
        if offset != 0 {
            poke_ring(&fd, ring_len, 0, 1); // one message published
        }
        peer.send(&[11], &[]); // WAKE
        assert!(peer.closed_within(T), "{what} drops the peer");
    }
    s.check("control ring violations", rss);
}

/// Whether reading `fd` (a pipe's read end) finds its end of file within `timeout`.
fn end_of_file_within(fd: &OwnedFd, timeout: Duration) -> bool {
    // SAFETY: no pointers.
    unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    let deadline = Instant::now() + timeout;
    let mut buf = [0u8; 64];
    while Instant::now() < deadline {
        // SAFETY: reads into a live buffer.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n == 0 {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

fn raise_fd_limit() {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid rlimit to fill, then to set.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut l);
        l.rlim_cur = l.rlim_max.min(8192);
        libc::setrlimit(libc::RLIMIT_NOFILE, &l);
    }
}
