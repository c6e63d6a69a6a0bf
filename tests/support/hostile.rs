//! What the hostile-peer tests share (tests/comch_hostile*.rs): the server role they attack,
//! the raw protocol an attacker speaks, the well-behaved client that witnesses the service,
//! and the measurements. A test binary declares `procs` beside this module and a `role` test
//! that runs [`server_role`] when the binary is started as the server.
#![allow(dead_code)]

use crate::procs::{Proc, cpu_seconds, ev, var};
pub use crate::procs::{open_fds, rss_kib, shared_runtime_dir};
use dpakit::comch::{Client, Connection, Producer, Server};
use dpakit::dev::{Dev, DevRep};
use dpakit::pe::Pe;
use std::cell::RefCell;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

pub const ARM: &str = "0000:03:00.0";
pub const HOST: &str = "0000:b1:00.0";
pub const T: Duration = Duration::from_secs(30);
/// How long a well-behaved client's round trip may take while an attack goes on.
pub const SERVICE_BOUND: Duration = Duration::from_millis(10);
/// Rounds of 200 round trips a check may take to see one within the bound. The server and the
/// witness both poll busily; on a loaded 2-vCPU machine the scheduler can park either of them
/// for a period (about 20 ms) in any round, while what an attack does to the server (a wait on
/// the peer, descriptors, a spin) shows in every round that follows it.
pub const CHECK_ROUNDS: usize = 3;

// ---------------------------------------------------------------------------------------------
// The server (child process)
// ---------------------------------------------------------------------------------------------

pub fn server_role() {
    let arm = Dev::open_by_pci(ARM).unwrap();
    let rep = DevRep::open_by_pci(&arm, HOST).unwrap();
    let pe = Pe::new().unwrap();
    // Consumers announced and not probed yet, connections gone: handled outside callbacks.
    let announced: Rc<RefCell<Vec<(Connection, u32)>>> = Rc::default();
    let gone: Rc<RefCell<Vec<Connection>>> = Rc::default();
    let (a, g) = (announced.clone(), gone.clone());
    // FD_LIMIT: the server's own descriptor limit (set here, in the child: a limit set in the
    // test process would race with its other tests).
    if let Ok(limit) = var("FD_LIMIT").parse::<u64>() {
        set_fd_limit(limit);
    }
    let send_tasks = crate::procs::var_u64("SEND_TASKS", 64) as u32;
    // SLEEP=1: the server sleeps on its PE when idle (up to 10 ms at a time), as a service
    // that is not busy-polling does, so its CPU time shows what the peers cost it.
    let sleep = var("SLEEP") == "1";
    let server = Server::builder(&arm, &rep, &var("NAME"), &pe)
        .num_send_tasks(send_tasks)
        .on_connect(|_, _, ok| ev(format_args!("connect {}", u8::from(ok))))
        .on_disconnect(move |_, conn, _| {
            g.borrow_mut().push(conn);
            ev(format_args!("disconnect"));
        })
        .on_message(|ch, conn, msg| {
            ev(format_args!("message {}", msg.len()));
            if let Err(e) = ch.send(conn, msg, 0) {
                ev(format_args!("send-refused {:?}", e.code()));
            }
        })
        .on_consumer(move |_, conn, id, created| {
            if created {
                a.borrow_mut().push((conn, id));
            }
        })
        .start()
        .unwrap();
    let mut producers: Vec<(Connection, Producer)> = Vec::new();
    // SIGTERM ends the loop, as a service's handler would: the test sees whether the progress
    // calls still return under attack.
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe { libc::signal(libc::SIGTERM, on_sigterm as *const () as libc::sighandler_t) };
    ev(format_args!("ready"));
    loop {
        if TERMINATED.load(std::sync::atomic::Ordering::Relaxed) {
            ev(format_args!("terminated"));
            return;
        }
        if !pe.progress() && sleep {
            let _ = pe.wait(Duration::from_millis(10));
        }
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

// A signal handler may touch nothing but a static atomic: a bare one, outside the facade.
#[allow(clippy::disallowed_types)]
static TERMINATED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_sigterm(_: libc::c_int) {
    TERMINATED.store(true, std::sync::atomic::Ordering::Relaxed);
}

// ---------------------------------------------------------------------------------------------
// The attacker: the wire protocol by hand
// ---------------------------------------------------------------------------------------------

/// A raw connection to the server's socket.
pub struct Raw(pub OwnedFd);

/// Where server `name` listens: the runtime directory, the function and a 64-bit FNV-1a hash
/// of the name (wire/src/runtime.rs).
pub fn server_socket(dir: &Path, name: &str) -> PathBuf {
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    dir.join(format!("comch-{HOST}-{hash:016x}"))
}

/// Room for the descriptors a message carries, aligned for its control headers.
#[repr(C, align(8))]
pub struct Control(pub [u8; 64]);

/// A message header over one buffer and all of `control`, for sendmsg and recvmsg; both must
/// outlive its use.
pub fn message(iov: &mut libc::iovec, control: &mut Control) -> libc::msghdr {
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
    pub fn connect(path: &Path) -> Option<Raw> {
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
    pub fn handshake(path: &Path, name: &str) -> Raw {
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
    pub fn send(&self, bytes: &[u8], fds: &[RawFd]) -> bool {
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

    /// Whether the server shut the connection (within `timeout`), without reading from it: a
    /// peer that takes nothing must stay one while the test waits.
    pub fn hung_up_within(&self, timeout: Duration) -> bool {
        let mut p = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLRDHUP,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one pollfd for the duration of the call.
        let rc = unsafe { libc::poll(&mut p, 1, ms) };
        rc > 0 && p.revents & (libc::POLLHUP | libc::POLLRDHUP) != 0
    }

    /// Whether the server closed the connection (within `timeout`).
    pub fn closed_within(&self, timeout: Duration) -> bool {
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
pub const RING_HEADER: usize = 320;

pub fn ring_bytes(depth: u64) -> usize {
    RING_HEADER + depth as usize * 88
}

pub fn memfd(len: usize, contents: &[u8]) -> OwnedFd {
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
pub fn ring(depth: u64, stuck: bool) -> Vec<u8> {
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
pub fn consumer_new(id: u32, depth: u64, data_len: u64) -> Vec<u8> {
    let mut m = vec![6u8];
    m.extend_from_slice(&id.to_le_bytes());
    m.extend_from_slice(&depth.to_le_bytes());
    m.extend_from_slice(&32u32.to_le_bytes());
    m.extend_from_slice(&(ring_bytes(depth) as u64).to_le_bytes());
    m.extend_from_slice(&data_len.to_le_bytes());
    m
}

pub fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: room for two descriptors.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: fresh descriptors.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

pub fn stream_pair() -> (OwnedFd, OwnedFd) {
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
pub struct Witness {
    pub pe: Pe,
    pub client: Client,
    pub conn: Connection,
    pub echoes: Rc<RefCell<u64>>,
}

impl Witness {
    pub fn connect(host: &Dev, name: &str) -> Witness {
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
    pub fn worst_round_trip(&self, n: usize) -> Duration {
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

/// The share of one core process `pid` used over `window` (in percent).
pub fn cpu_percent(pid: u32, window: Duration) -> u64 {
    let before = cpu_seconds(pid);
    std::thread::sleep(window);
    ((cpu_seconds(pid) - before) * 100.0 / window.as_secs_f64()) as u64
}

/// The server, the witness, and the attack's figures.
pub struct Scene {
    // One scene at a time: two spinning servers on a 2-core machine would measure the
    // scheduler, not the server.
    pub _one_at_a_time: std::sync::MutexGuard<'static, ()>,
    pub dir: PathBuf,
    pub name: String,
    pub server: Proc,
    pub witness: Witness,
    /// The witness's worst of 200 round trips before the attack: what the check's figures
    /// compare with.
    pub baseline: Duration,
    pub _host: Dev,
}

impl Scene {
    pub fn new(test: &str) -> Scene {
        Scene::with(test, &[])
    }

    /// A scene whose server also gets `env` (`SEND_TASKS`, `SLEEP`).
    pub fn with(test: &str, env: &[(&str, &str)]) -> Scene {
        static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let guard = ONE.lock().unwrap_or_else(|p| p.into_inner());
        let dir = shared_runtime_dir();
        let name = format!("hostile-{}-{test}", std::process::id());
        let mut vars = vec![("NAME", name.clone())];
        vars.extend(env.iter().map(|&(k, v)| (k, v.to_string())));
        let server = Proc::spawn(&dir, "server", &vars);
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

    pub fn socket(&self) -> PathBuf {
        server_socket(&self.dir, &self.name)
    }

    pub fn handshake(&self) -> Raw {
        Raw::handshake(&self.socket(), &self.name)
    }

    /// After an attack: the server still runs and serves the witness promptly. Prints the
    /// figures for the closing note.
    pub fn check(&mut self, attack: &str, rss_before: u64) {
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

/// Control-ring layout (wire/src/ctrl_ring.rs): four counter lines (tail, head, sleeping,
/// sender waiting), then slots of a 4-byte length, 4 of padding and room for the agreed max
/// message size (4080 here), each rounded up to 64 bytes.
pub const CTRL_HEADER: usize = 256;
pub const CTRL_SLOT: usize = 4096;

pub fn ctrl_ring_len(depth: u64) -> u64 {
    (CTRL_HEADER + depth as usize * CTRL_SLOT) as u64
}

pub fn ctrl_ring_msg(depth: u64, ring_len: u64) -> Vec<u8> {
    let mut m = vec![12u8];
    m.extend_from_slice(&depth.to_le_bytes());
    m.extend_from_slice(&ring_len.to_le_bytes());
    m
}

impl Raw {
    /// The server's control-ring announcement, which follows WELCOME: its depth, length and
    /// memory file.
    pub fn server_ring(&self) -> (u64, u64, OwnedFd) {
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
pub fn poke_ring(fd: &OwnedFd, len: u64, offset: usize, value: u64) {
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

/// Whether reading `fd` (a pipe's read end) finds its end of file within `timeout`.
pub fn end_of_file_within(fd: &OwnedFd, timeout: Duration) -> bool {
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

/// Sets this process's soft descriptor limit to `n` (at most the hard limit).
pub fn set_fd_limit(n: u64) {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid rlimit to fill, then to set.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut l);
        l.rlim_cur = l.rlim_max.min(n);
        libc::setrlimit(libc::RLIMIT_NOFILE, &l);
    }
}

pub fn raise_fd_limit() {
    set_fd_limit(8192);
}
