//! `wire_peer`: a Comch server attacked from the peer's side, through its socket.
//!
//! One server lives in this process for the whole run, driven through the C API on a PE, with
//! a program that echoes control messages and, when a peer announces a consumer, sends to it
//! from a producer on the connection. Each input is one attacking connection speaking raw
//! bytes on a `SOCK_SEQPACKET` socket, descriptors passed with `SCM_RIGHTS`:
//! - the handshake: a correct HELLO, one with fuzzed version, max message size, function and
//!   name (lengths that lie, bytes that are not UTF-8), a truncated one, garbage, or none;
//!   descriptors may come with it;
//! - frames: DATA of any length, CONSUMER_NEW, CONSUMER_GONE, BYE, unknown tags, truncated
//!   messages, any of them carrying descriptors; the attacker reads the answers or lets them
//!   pile up;
//! - consumer announcements whose descriptors are the three a consumer shares or anything
//!   else: memfds of fuzzed sizes, sealed or not (or against writing), pipe ends with their
//!   other end open or closed, eventfds blocking or not, stream, datagram and seqpacket sockets
//!   with their peer open or closed, `/dev/null`, a regular file, a directory, the attacking
//!   socket itself; too many or too few. The ring memfd is laid out as a consumer lays it out,
//!   then poked;
//! - the ring written concurrently: once a ring is announced, a second thread of the target
//!   keeps writing fuzz-chosen values into it (counters, posted receives, completion slots) —
//!   what a consumer in another process can do at any moment — while the server's producer
//!   sends to that consumer (and sends more as the input asks, to any id).
//!
//! A zero byte, and the end of the input (which reads as zeros), picks the well-behaved choice
//! wherever there is one, so short inputs reach deep: a correct handshake, an announcement a
//! real consumer would make, with receives posted.
//!
//! After each input the attacking connection is closed. Within a couple of seconds the server
//! must then have dropped it and given back every descriptor and C API object it took for it
//! (the program stops and destroys the connection's producers on disconnection, as DOCA
//! programs do), and it must still serve a well-behaved client: connect, handshake, one
//! control-message round trip. A panic (even one the API turns into an error), crash,
//! `SIGPIPE`, hang, leaked descriptor or object, or a server that no longer serves is a
//! finding; errors, refusals and dropped connections are expected.
#![no_main]
// The scribbler stands for another process writing shared memory: std atomics, no loom model.
#![allow(clippy::disallowed_types)]

mod support;

use dpakit_sys::*;
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
use std::ffi::{CStr, c_void};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::ptr::null_mut;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use support::Bytes;

/// The server's name and the host function its representor stands for (its clients').
const NAME: &CStr = c"wire-peer";
const HOST: &str = "0000:b1:00.0";
/// Most frames one input sends.
const MAX_OPS: usize = 48;
/// How long the server may take to drop the attacker, give back what it took, or serve the
/// well-behaved client; past it the input is a hang.
const PROMPT: Duration = Duration::from_secs(2);
/// The producers' memory (what they send from).
const MEM_LEN: usize = 64 << 10;
/// Send tasks of each producer the program starts.
const SEND_TASKS: u32 = 8;
/// Largest ring memfd the target maps itself (to scribble on).
const MAX_OWN_MAP: usize = 1 << 20;
/// Largest memfd the target makes (sparse).
const MAX_FILE: u64 = 1 << 36;
/// The server's max message size (the default) and the room its receive buffer has beyond it.
const MAX_MSG: usize = 4080;
const OVERHEAD: usize = 512;

/// Ring layout (see `dpakit_emu::fuzzing::ring_bytes`): header lines, posts, completions.
const POST_HEAD: usize = 0;
const POST_TAIL: usize = 64;
const COMP_TAIL: usize = 128;
const ALIVE: usize = 192;
const HEADER: usize = 256;
const POST: usize = 24;
const COMP: usize = 64;

const TAG_HELLO: u8 = 1;
const TAG_DATA: u8 = 4;
const TAG_BYE: u8 = 5;
const TAG_CONSUMER_NEW: u8 = 6;
const TAG_CONSUMER_GONE: u8 = 7;

fuzz_target!(
    init: init(),
    |data: &[u8]| RIG.with(|rig| rig.run(data))
);

fn init() {
    // A private runtime directory for this process's server socket, removed at exit.
    let dir = runtime_dir();
    // SAFETY: set before the soft device reads the environment, on the only thread.
    unsafe { std::env::set_var("DPAKIT_SOFT_RUNTIME_DIR", &dir) };
    extern "C" fn remove_dir() {
        let _ = std::fs::remove_dir_all(runtime_dir());
    }
    // SAFETY: registers a plain function.
    unsafe { libc::atexit(remove_dir) };
    let layout = dpakit_emu::fuzzing::ring_bytes(2);
    assert_eq!(
        layout,
        Some(HEADER + 2 * (POST + COMP)),
        "the ring layout changed"
    );
}

fn runtime_dir() -> PathBuf {
    std::env::temp_dir().join(format!("dpakit-fuzz-wire-{}", std::process::id()))
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// What each open descriptor is (for a finding's message).
fn fd_kinds() -> Vec<String> {
    std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            let to = std::fs::read_link(e.path()).ok()?;
            Some(format!(
                "{}->{}",
                e.file_name().to_string_lossy(),
                to.display()
            ))
        })
        .collect()
}

fn live() -> usize {
    dpakit_emu::fuzzing::live_objects()
}

// ---------------------------------------------------------------------------------------------
// The server and its program
// ---------------------------------------------------------------------------------------------

thread_local! {
    static RIG: Rig = Rig::new();
    static PROGRAM: RefCell<Program> = RefCell::default();
}

/// The server, the well-behaved client (IDLE between inputs), the producers' memory, and the
/// descriptors some attacks pass (kept for the run).
struct Rig {
    pe: *mut doca_pe,
    client: *mut doca_comch_client,
    mmap: *mut doca_mmap,
    inv: *mut doca_buf_inventory,
    mem: *mut u8,
    path: PathBuf,
    null: OwnedFd,
    file: OwnedFd,
    dir: OwnedFd,
    /// Whether the client started once.
    warm: std::cell::Cell<bool>,
}

/// What the program's callbacks saw, handled after each progress.
#[derive(Default)]
struct Program {
    /// Established connections of the server.
    conns: Vec<*mut doca_comch_connection>,
    /// Connections that went away, consumers announced: not handled yet.
    gone: Vec<*mut doca_comch_connection>,
    announced: Vec<(*mut doca_comch_connection, u32)>,
    producers: Vec<Prod>,
    /// Echoes the well-behaved client received.
    echoes: u32,
    /// What the program sends to a consumer it hears of: data bytes, immediate bytes, whether
    /// from a buffer at all.
    probe: (usize, usize, bool),
    stats: Stats,
}

/// What the run reached so far, printed after each input with `DPAKIT_FUZZ_STATS=1` (replay
/// the corpus with `-runs=0` to see what it covers).
#[derive(Debug, Default)]
struct Stats {
    inputs: u64,
    /// Connections the server established (the well-behaved client's included).
    established: u64,
    /// Consumers the server accepted, sends that completed and that failed, rings scribbled.
    consumers: u64,
    sends_done: u64,
    sends_failed: u64,
    scribbled: u64,
}

/// A producer the program started on a connection.
struct Prod {
    conn: *mut doca_comch_connection,
    p: *mut doca_comch_producer,
    stopping: bool,
}

fn with<R>(f: impl FnOnce(&mut Program) -> R) -> R {
    PROGRAM.with(|p| f(&mut p.borrow_mut()))
}

fn ok(rc: doca_error_t, what: &str) {
    assert_eq!(rc, DOCA_SUCCESS, "{what} failed");
}

/// The device whose PCI address is `pci`.
unsafe fn open_dev(pci: &CStr) -> *mut doca_dev {
    // SAFETY: valid out-parameters and strings; the list stays alive for the run.
    unsafe {
        let (mut list, mut n) = (null_mut(), 0u32);
        ok(doca_devinfo_create_list(&mut list, &mut n), "devinfo list");
        for i in 0..n as usize {
            let mut equal = 0u8;
            doca_devinfo_is_equal_pci_addr(*list.add(i), pci.as_ptr(), &mut equal);
            let mut dev = null_mut();
            if equal != 0 && doca_dev_open(*list.add(i), &mut dev) == DOCA_SUCCESS {
                return dev;
            }
        }
        panic!("no device {pci:?}");
    }
}

/// The Arm device's representor of the host function.
unsafe fn open_rep(arm: *mut doca_dev) -> *mut doca_dev_rep {
    // SAFETY: valid out-parameters and strings; the list stays alive for the run.
    unsafe {
        let (mut list, mut n) = (null_mut(), 0u32);
        ok(
            doca_devinfo_rep_create_list(
                arm,
                DOCA_DEVINFO_REP_FILTER_NET as i32,
                &mut list,
                &mut n,
            ),
            "representor list",
        );
        for i in 0..n as usize {
            let mut equal = 0u8;
            doca_devinfo_rep_is_equal_pci_addr(*list.add(i), c"b1:00.0".as_ptr(), &mut equal);
            let mut rep = null_mut();
            if equal != 0 && doca_dev_rep_open(*list.add(i), &mut rep) == DOCA_SUCCESS {
                return rep;
            }
        }
        panic!("no representor of the host function");
    }
}

fn ctx_state(ctx: *mut doca_ctx) -> doca_ctx_states {
    let mut state = DOCA_CTX_STATE_IDLE;
    // SAFETY: a live context (or any handle: the call checks) and a valid out-parameter.
    unsafe { doca_ctx_get_state(ctx, &mut state) };
    state
}

impl Rig {
    fn new() -> Rig {
        // SAFETY: the setup of a server, a client, an mmap and an inventory, with valid
        // out-parameters and strings; the memory is leaked, so it outlives the mmap.
        unsafe {
            let arm = open_dev(c"03:00.0");
            let host = open_dev(c"b1:00.0");
            let rep = open_rep(arm);
            let mut pe = null_mut();
            ok(doca_pe_create(&mut pe), "doca_pe_create");
            let mut server = null_mut();
            ok(
                doca_comch_server_create(arm, rep, NAME.as_ptr(), &mut server),
                "doca_comch_server_create",
            );
            ok(
                doca_comch_server_task_send_set_conf(
                    server,
                    Some(server_sent),
                    Some(server_sent),
                    256,
                ),
                "server send tasks",
            );
            ok(
                doca_comch_server_event_msg_recv_register(server, Some(on_message)),
                "server receive callback",
            );
            ok(
                doca_comch_server_event_connection_status_changed_register(
                    server,
                    Some(on_connect),
                    Some(on_disconnect),
                ),
                "server connection callbacks",
            );
            ok(
                doca_comch_server_event_consumer_register(
                    server,
                    Some(on_consumer),
                    Some(on_consumer_expired),
                ),
                "server consumer callbacks",
            );
            let ctx = doca_comch_server_as_ctx(server);
            ok(doca_pe_connect_ctx(pe, ctx), "connect the server");
            ok(doca_ctx_start(ctx), "start the server");
            let mut client = null_mut();
            ok(
                doca_comch_client_create(host, NAME.as_ptr(), &mut client),
                "doca_comch_client_create",
            );
            ok(
                doca_comch_client_task_send_set_conf(
                    client,
                    Some(client_sent),
                    Some(client_sent),
                    4,
                ),
                "client send tasks",
            );
            ok(
                doca_comch_client_event_msg_recv_register(client, Some(on_message)),
                "client receive callback",
            );
            ok(
                doca_pe_connect_ctx(pe, doca_comch_client_as_ctx(client)),
                "connect the client",
            );
            let mem = Box::leak(vec![0xA5u8; MEM_LEN].into_boxed_slice()).as_mut_ptr();
            let mut mmap = null_mut();
            ok(doca_mmap_create(&mut mmap), "doca_mmap_create");
            ok(
                doca_mmap_set_memrange(mmap, mem.cast(), MEM_LEN),
                "mmap range",
            );
            ok(
                doca_mmap_set_permissions(mmap, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE),
                "mmap permissions",
            );
            ok(doca_mmap_add_dev(mmap, arm), "mmap device");
            ok(doca_mmap_start(mmap), "mmap start");
            let mut inv = null_mut();
            ok(doca_buf_inventory_create(64, &mut inv), "inventory");
            ok(doca_buf_inventory_start(inv), "inventory start");
            let path = dpakit_emu::fuzzing::comch_server_path(HOST, "wire-peer")
                .expect("the server's socket path");
            let dir = runtime_dir();
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(dir.join("regular-file"))
                .expect("a regular file");
            file.set_len(1 << 20).expect("sizing the regular file");
            Rig {
                pe,
                client,
                mmap,
                inv,
                mem,
                path,
                null: std::fs::File::open("/dev/null").expect("/dev/null").into(),
                file: file.into(),
                dir: std::fs::File::open(&dir)
                    .expect("the runtime directory")
                    .into(),
                warm: std::cell::Cell::new(false),
            }
        }
    }

    /// One progress of the PE, then what the program does outside callbacks.
    fn pass(&self) {
        // SAFETY: the rig's PE.
        unsafe { doca_pe_progress(self.pe) };
        self.serve();
    }

    /// Progresses until `done`; a finding if that takes longer than [`PROMPT`].
    fn wait(&self, what: &str, done: impl FnMut() -> bool) {
        if !self.wait_for(done) {
            panic!("{what} within {PROMPT:?}");
        }
    }

    /// Progresses until `done` (true), or for [`PROMPT`] (false).
    fn wait_for(&self, mut done: impl FnMut() -> bool) -> bool {
        let start = Instant::now();
        loop {
            self.pass();
            if done() {
                return true;
            }
            if start.elapsed() > PROMPT {
                return false;
            }
        }
    }

    /// The program's work after a progress: producers of connections that went away are
    /// stopped (and destroyed once IDLE); each consumer announced gets a send.
    fn serve(&self) {
        let (gone, announced, probe) = with(|p| {
            (
                std::mem::take(&mut p.gone),
                std::mem::take(&mut p.announced),
                p.probe,
            )
        });
        for conn in &gone {
            let stop: Vec<_> = with(|p| {
                p.conns.retain(|c| c != conn);
                p.producers
                    .iter_mut()
                    .filter(|x| x.conn == *conn && !x.stopping)
                    .map(|x| {
                        x.stopping = true;
                        x.p
                    })
                    .collect()
            });
            for p in stop {
                // SAFETY: a producer of the program; IN_PROGRESS means it ends through
                // progress, anything else that it is IDLE already.
                unsafe { doca_ctx_stop(doca_comch_producer_as_ctx(p)) };
            }
        }
        for (conn, id) in announced {
            if gone.contains(&conn) {
                continue;
            }
            if let Some(p) = self.producer(conn) {
                self.send(p, id, probe);
            }
        }
        let stopped: Vec<_> = with(|p| {
            p.producers
                .iter()
                .filter(|x| x.stopping)
                .map(|x| x.p)
                .collect()
        });
        for p in stopped {
            // SAFETY: a producer of the program.
            let ctx = unsafe { doca_comch_producer_as_ctx(p) };
            // SAFETY: as above, IDLE.
            if ctx_state(ctx) == DOCA_CTX_STATE_IDLE
                && unsafe { doca_comch_producer_destroy(p) } == DOCA_SUCCESS
            {
                with(|prog| prog.producers.retain(|x| x.p != p));
            }
        }
    }

    /// The program's running producer on `conn`, started if there is none.
    fn producer(&self, conn: *mut doca_comch_connection) -> Option<*mut doca_comch_producer> {
        let have = with(|p| {
            p.producers
                .iter()
                .find(|x| x.conn == conn && !x.stopping)
                .map(|x| x.p)
        });
        if have.is_some() {
            return have;
        }
        let mut p = null_mut();
        // SAFETY: a connection handle the server gave (the call checks it is still live) and
        // valid out-parameters.
        unsafe {
            if doca_comch_producer_create(conn, &mut p) != DOCA_SUCCESS {
                return None;
            }
            let ctx = doca_comch_producer_as_ctx(p);
            doca_comch_producer_task_send_set_conf(
                p,
                Some(producer_sent),
                Some(producer_sent),
                SEND_TASKS,
            );
            doca_pe_connect_ctx(self.pe, ctx);
            if doca_ctx_start(ctx) != DOCA_SUCCESS {
                ok(
                    doca_comch_producer_destroy(p),
                    "destroying a producer that did not start",
                );
                return None;
            }
        }
        with(|prog| {
            prog.producers.push(Prod {
                conn,
                p,
                stopping: false,
            })
        });
        Some(p)
    }

    /// Submits a send of `len` bytes (from a buffer, if `with_buf`) and `imm` immediate
    /// bytes to consumer `id`.
    fn send(
        &self,
        p: *mut doca_comch_producer,
        id: u32,
        (len, imm, with_buf): (usize, usize, bool),
    ) {
        let imm_bytes = [0x1Du8; 64];
        // SAFETY: the buffer lies in the rig's mmap; the task and buffer are released in the
        // completion callback, or here if they never reach it.
        unsafe {
            let mut buf = null_mut();
            if with_buf
                && doca_buf_inventory_buf_get_by_args(
                    self.inv,
                    self.mmap,
                    self.mem.cast(),
                    MEM_LEN,
                    self.mem.cast(),
                    len.min(MEM_LEN),
                    &mut buf,
                ) != DOCA_SUCCESS
            {
                return;
            }
            let mut task = null_mut();
            let release = |buf: *mut doca_buf| {
                if !buf.is_null() {
                    let mut left = 0u16;
                    doca_buf_dec_refcount(buf, &mut left);
                }
            };
            if doca_comch_producer_task_send_alloc_init(
                p,
                buf,
                imm_bytes.as_ptr().cast_mut(),
                imm.min(imm_bytes.len()) as u32,
                id,
                &mut task,
            ) != DOCA_SUCCESS
            {
                release(buf);
                return;
            }
            let t = doca_comch_producer_task_send_as_task(task);
            if doca_task_submit(t) != DOCA_SUCCESS {
                doca_task_free(t);
                release(buf);
            }
        }
    }

    /// The server's end of the attacking connection, once established.
    fn attacked(&self) -> Option<*mut doca_comch_connection> {
        with(|p| p.conns.last().copied())
    }

    fn run(&self, data: &[u8]) {
        if !self.warm.replace(true) {
            // The client's first start makes its task pool, which stays: part of the baseline.
            self.witness();
        }
        let (fds, objects) = (open_fds(), live());
        let mut b = Bytes::new(data);
        with(|p| {
            p.probe = (
                usize::from(b.u16()) % (MEM_LEN + 1),
                usize::from(b.u8() % 40),
                b.u8() % 8 != 7,
            )
        });
        self.attack(&mut b);
        // The attacker is gone: the server drops its connection and gives back all it took.
        self.wait(
            "the server did not let go of the attacker's connection",
            || with(|p| p.conns.is_empty() && p.producers.is_empty()),
        );
        let settled = || live() == objects && open_fds() == fds;
        if !self.wait_for(settled) {
            panic!(
                "the server kept what the attacker's connection gave it: {} objects (baseline \
                 {objects}), {} descriptors (baseline {fds}): {:?}",
                live(),
                open_fds(),
                fd_kinds()
            );
        }
        self.witness();
        assert_eq!(live(), objects, "C API objects leaked");
        assert_eq!(open_fds(), fds, "descriptors leaked");
        if std::env::var_os("DPAKIT_FUZZ_STATS").is_some() {
            with(|p| {
                p.stats.inputs += 1;
                eprintln!("wire_peer: {:?}", p.stats);
            });
        }
    }

    /// A well-behaved client: connects, sends a message, gets the echo, stops.
    fn witness(&self) {
        // SAFETY: the rig's client, its connection and a static message.
        unsafe {
            let ctx = doca_comch_client_as_ctx(self.client);
            let rc = doca_ctx_start(ctx);
            assert!(
                rc == DOCA_SUCCESS || rc == DOCA_ERROR_IN_PROGRESS,
                "the well-behaved client does not start ({rc})"
            );
            self.wait("the server did not accept a well-behaved client", || {
                ctx_state(ctx) == DOCA_CTX_STATE_RUNNING
            });
            let mut conn = null_mut();
            ok(
                doca_comch_client_get_connection(self.client, &mut conn),
                "the client's connection",
            );
            let echoes = with(|p| p.echoes);
            let ping = b"are you still there?";
            let mut task = null_mut();
            ok(
                doca_comch_client_task_send_alloc_init(
                    self.client,
                    conn,
                    ping.as_ptr().cast(),
                    ping.len() as u32,
                    &mut task,
                ),
                "the client's send",
            );
            ok(
                doca_task_submit(doca_comch_task_send_as_task(task)),
                "submitting the client's send",
            );
            self.wait("the server did not answer a well-behaved client", || {
                with(|p| p.echoes > echoes)
            });
            let rc = doca_ctx_stop(ctx);
            assert!(
                rc == DOCA_SUCCESS || rc == DOCA_ERROR_IN_PROGRESS,
                "the well-behaved client does not stop ({rc})"
            );
            self.wait("the well-behaved client's connection did not end", || {
                ctx_state(ctx) == DOCA_CTX_STATE_IDLE && with(|p| p.conns.is_empty())
            });
        }
    }

    /// One attacking connection, from the handshake to its close.
    fn attack(&self, b: &mut Bytes<'_>) {
        let mode = b.u8();
        let mut peer = Peer::connect(&self.path);
        // What the attack passes or maps, closed once it ends (after the scribbler stopped).
        let mut held = Held::default();
        let jobs: Mutex<Vec<Job>> = Mutex::default();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let mut scribbler = None;
            if mode % 8 != 7 {
                let hello = hello(b);
                let fds = if mode % 8 == 6 {
                    random_fds(b, self, &peer, &mut held)
                } else {
                    Vec::new()
                };
                peer.send(self, &hello, &fds);
            }
            let mut ids = Ids::default();
            for _ in 0..MAX_OPS {
                if b.is_empty() || peer.dead {
                    break;
                }
                self.pass();
                match b.u8() % 16 {
                    0..=2 => {
                        let data = data_frame(b);
                        let fds = maybe_fds(b, self, &peer, &mut held);
                        peer.send(self, &data, &fds);
                    }
                    3..=6 => {
                        let job = self.announce(b, &mut peer, &mut held, &mut ids);
                        if let Some(job) = job {
                            jobs.lock().unwrap_or_else(|p| p.into_inner()).push(job);
                            with(|p| p.stats.scribbled += 1);
                            if scribbler.is_none() {
                                scribbler = Some(s.spawn(|| scribble(&jobs, &stop)));
                            }
                        }
                    }
                    7 => {
                        let id = ids.pick(b);
                        let mut m = vec![TAG_CONSUMER_GONE];
                        m.extend_from_slice(&id.to_le_bytes());
                        let fds = maybe_fds(b, self, &peer, &mut held);
                        peer.send(self, &m, &fds);
                    }
                    8 => {
                        let mut m = vec![TAG_BYE];
                        if b.u8().is_multiple_of(4) {
                            m.push(b.u8());
                        }
                        let fds = maybe_fds(b, self, &peer, &mut held);
                        peer.send(self, &m, &fds);
                    }
                    9 => {
                        // Any tag, any body: unknown tags, HELLO or WELCOME once established.
                        let mut m = vec![b.u8()];
                        let n = usize::from(b.u8());
                        m.extend_from_slice(b.take(n));
                        let fds = maybe_fds(b, self, &peer, &mut held);
                        peer.send(self, &m, &fds);
                    }
                    10 => {
                        let mut m = match b.u8() % 3 {
                            0 => hello(b),
                            1 => consumer_new(ids.fresh(), 4, 32, ring_len(4), 4096),
                            _ => vec![TAG_CONSUMER_GONE, 1, 0, 0, 0],
                        };
                        let cut = usize::from(b.u8()) % m.len().max(1);
                        m.truncate(cut);
                        let fds = maybe_fds(b, self, &peer, &mut held);
                        peer.send(self, &m, &fds);
                    }
                    11 => {
                        for _ in 0..b.u8() % 8 {
                            self.pass();
                        }
                    }
                    12 => peer.drain(usize::from(b.u8() % 16) + 1),
                    13 => {
                        // The program sends again, to the last consumer announced or any id.
                        let id = ids.pick(b);
                        let probe = (
                            usize::from(b.u16()) % (MEM_LEN + 1),
                            usize::from(b.u8() % 40),
                            b.u8() % 8 != 7,
                        );
                        if let Some(p) = self.attacked().and_then(|c| self.producer(c)) {
                            self.send(p, id, probe);
                        }
                    }
                    14 => {
                        // Time for retry timers and the scribbler.
                        let until = Instant::now() + Duration::from_micros(u64::from(b.u8()) * 4);
                        while Instant::now() < until {
                            self.pass();
                        }
                    }
                    _ => {
                        let hello = hello(b);
                        peer.send(self, &hello, &[]);
                    }
                }
            }
            for _ in 0..4 {
                self.pass();
            }
            stop.store(true, Ordering::Relaxed);
        });
        drop(peer);
        drop(held);
    }

    /// A `CONSUMER_NEW` with its descriptors; the job that scribbles on its ring, if the
    /// target could map the ring.
    fn announce(
        &self,
        b: &mut Bytes<'_>,
        peer: &mut Peer,
        held: &mut Held,
        ids: &mut Ids,
    ) -> Option<Job> {
        let id = match b.u8() % 4 {
            0 | 1 => ids.fresh(),
            2 => ids.last,
            _ => b.u32(),
        };
        ids.last = id;
        let depth = match b.u8() % 8 {
            0..=4 => 1u64 << (b.u8() % 8),
            5 => 1u64 << (b.u8() % 64),
            6 => b.u64(),
            _ => [65536, 131072, 0, 3][usize::from(b.u8() % 4)],
        };
        let imm_len = match b.u8() % 4 {
            0 | 1 => 32,
            2 => u32::from(b.u8() % 40),
            _ => b.u32(),
        };
        let good_ring = dpakit_emu::fuzzing::ring_bytes(depth).map(|n| n as u64);
        let ring_len = match b.u8() % 8 {
            7 => b.u64(),
            6 => good_ring.map_or(0, |n| n.wrapping_add(u64::from(b.u8())).wrapping_sub(128)),
            _ => good_ring.unwrap_or_else(|| b.u64()),
        };
        let data_len = match b.u8() % 8 {
            7 => b.u64(),
            6 => (1u64 << 30) + 8192 + u64::from(b.u8() % 2),
            5 => 0,
            _ => 4096 * (1 + u64::from(b.u8() % 16)),
        };
        let msg = consumer_new(id, depth, imm_len, ring_len, data_len);
        let shape = b.u8();
        let mut job = None;
        let mut fds = Vec::new();
        if shape % 4 != 3 {
            // The three a consumer shares, each maybe something else.
            for slot in 0..3 {
                if b.u8() % 8 == 7 {
                    fds.push(descriptor(b, self, peer, held));
                    continue;
                }
                let seals = seals(b);
                fds.push(match slot {
                    0 => {
                        let size = if b.u8() % 8 == 7 {
                            b.u64() % MAX_FILE
                        } else {
                            ring_len.min(MAX_FILE)
                        };
                        let ring = ring_contents(b, size, depth);
                        let (fd, map) = memfd(size, &ring, seals, true, held);
                        if let Some((addr, len)) = map {
                            job = scribbles(b, addr, len, depth);
                        }
                        fd
                    }
                    1 => {
                        let size = if b.u8() % 8 == 7 {
                            b.u64() % MAX_FILE
                        } else {
                            data_len.min(MAX_FILE)
                        };
                        memfd(size, &[], seals, false, held).0
                    }
                    _ => socket_pair(libc::SOCK_STREAM, b.u8() % 4 == 3, b.bool(), held),
                });
            }
            match shape % 16 {
                1 => fds.push(descriptor(b, self, peer, held)),
                2 => {
                    fds.pop();
                }
                _ => {}
            }
        } else {
            for _ in 0..b.u8() % 15 {
                fds.push(descriptor(b, self, peer, held));
            }
        }
        fds.retain(|&fd| fd >= 0);
        peer.send(self, &msg, &fds);
        job
    }
}

// ---------------------------------------------------------------------------------------------
// Callbacks of the program and the well-behaved client
// ---------------------------------------------------------------------------------------------

/// A message: the server's program echoes it; the client counts the echo.
unsafe extern "C" fn on_message(
    _event: *mut doca_comch_event_msg_recv,
    msg: *mut u8,
    len: u32,
    conn: *mut doca_comch_connection,
) {
    // SAFETY: the live connection of the callback; the message is valid during the callback,
    // copied into memory the task owns until it completes.
    unsafe {
        let server = doca_comch_server_get_server_ctx(conn);
        if server.is_null() {
            with(|p| p.echoes += 1);
            return;
        }
        let copy: Box<Vec<u8>> = Box::new(if len == 0 {
            Vec::new()
        } else {
            std::slice::from_raw_parts(msg, len as usize).to_vec()
        });
        let mut task = null_mut();
        if doca_comch_server_task_send_alloc_init(
            server,
            conn,
            copy.as_ptr().cast(),
            len,
            &mut task,
        ) != DOCA_SUCCESS
        {
            return;
        }
        let t = doca_comch_task_send_as_task(task);
        let raw = Box::into_raw(copy);
        doca_task_set_user_data(t, doca_data { ptr: raw.cast() });
        if doca_task_submit(t) != DOCA_SUCCESS {
            doca_task_free(t);
            drop(Box::from_raw(raw));
        }
    }
}

unsafe extern "C" fn server_sent(
    task: *mut doca_comch_task_send,
    task_data: doca_data,
    _ctx: doca_data,
) {
    // SAFETY: the echo's copy, made in `on_message`, freed once; the task is ours again.
    unsafe {
        drop(Box::from_raw(task_data.ptr.cast::<Vec<u8>>()));
        doca_task_free(doca_comch_task_send_as_task(task));
    }
}

unsafe extern "C" fn client_sent(task: *mut doca_comch_task_send, _: doca_data, _: doca_data) {
    // SAFETY: the task is ours again.
    unsafe { doca_task_free(doca_comch_task_send_as_task(task)) };
}

unsafe extern "C" fn producer_sent(
    task: *mut doca_comch_producer_task_send,
    _: doca_data,
    _: doca_data,
) {
    // SAFETY: the task is ours again, and so is its buffer.
    unsafe {
        let buf = doca_comch_producer_task_send_get_buf(task);
        let t = doca_comch_producer_task_send_as_task(task);
        let done = doca_task_get_status(t) == DOCA_SUCCESS;
        with(|p| match done {
            true => p.stats.sends_done += 1,
            false => p.stats.sends_failed += 1,
        });
        doca_task_free(t);
        if !buf.is_null() {
            let mut left = 0u16;
            doca_buf_dec_refcount(buf.cast_mut(), &mut left);
        }
    }
}

unsafe extern "C" fn on_connect(
    _event: *mut doca_comch_event_connection_status_changed,
    conn: *mut doca_comch_connection,
    success: u8,
) {
    if success != 0 {
        with(|p| {
            p.conns.push(conn);
            p.stats.established += 1;
        });
    }
}

unsafe extern "C" fn on_disconnect(
    _event: *mut doca_comch_event_connection_status_changed,
    conn: *mut doca_comch_connection,
    _success: u8,
) {
    with(|p| p.gone.push(conn));
}

unsafe extern "C" fn on_consumer(
    _event: *mut doca_comch_event_consumer,
    conn: *mut doca_comch_connection,
    id: u32,
) {
    with(|p| {
        p.announced.push((conn, id));
        p.stats.consumers += 1;
    });
}

unsafe extern "C" fn on_consumer_expired(
    _event: *mut doca_comch_event_consumer,
    _conn: *mut doca_comch_connection,
    _id: u32,
) {
}

// ---------------------------------------------------------------------------------------------
// The attacker
// ---------------------------------------------------------------------------------------------

/// The attacking connection.
struct Peer {
    sock: OwnedFd,
    /// The server closed it: nothing more gets through.
    dead: bool,
}

impl Peer {
    /// Connects to the server's socket (its backlog is never full here: a refusal is a
    /// finding).
    fn connect(path: &std::path::Path) -> Peer {
        // SAFETY: no pointers; the result is checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                0,
            )
        };
        assert!(fd >= 0, "socket");
        // SAFETY: a fresh descriptor.
        let sock = unsafe { OwnedFd::from_raw_fd(fd) };
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
                sock.as_raw_fd(),
                (&addr as *const libc::sockaddr_un).cast(),
                std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
            )
        };
        assert_eq!(
            rc,
            0,
            "connecting to the server: {}",
            std::io::Error::last_os_error()
        );
        Peer { sock, dead: false }
    }

    /// Sends one message with `fds`, progressing the server while its queue is full.
    fn send(&mut self, rig: &Rig, bytes: &[u8], fds: &[RawFd]) {
        #[repr(C, align(8))]
        struct Control([u8; 128]);
        if self.dead {
            return;
        }
        let fds = &fds[..fds.len().min(16)];
        for _ in 0..32 {
            let mut iov = libc::iovec {
                iov_base: bytes.as_ptr() as *mut c_void,
                iov_len: bytes.len(),
            };
            let mut control = Control([0; 128]);
            // SAFETY: msghdr is plain data; the pointers stay valid during sendmsg.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            if !fds.is_empty() {
                let len = std::mem::size_of_val(fds) as u32;
                msg.msg_control = control.0.as_mut_ptr().cast();
                // SAFETY: arithmetic, then a header and 16 descriptors at most written inside
                // the 128-byte control buffer.
                unsafe {
                    msg.msg_controllen = libc::CMSG_SPACE(len) as _;
                    let c = libc::CMSG_FIRSTHDR(&msg);
                    (*c).cmsg_level = libc::SOL_SOCKET;
                    (*c).cmsg_type = libc::SCM_RIGHTS;
                    (*c).cmsg_len = libc::CMSG_LEN(len) as _;
                    std::ptr::copy_nonoverlapping(
                        fds.as_ptr(),
                        libc::CMSG_DATA(c).cast(),
                        fds.len(),
                    );
                }
            }
            // SAFETY: `msg` describes live buffers.
            if unsafe { libc::sendmsg(self.sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) } >= 0 {
                return;
            }
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EAGAIN | libc::ENOBUFS | libc::EINTR) => rig.pass(),
                Some(libc::EPIPE | libc::ECONNRESET | libc::ENOTCONN) => {
                    self.dead = true;
                    return;
                }
                // Too large, too many descriptors in flight: this message does not go.
                _ => return,
            }
        }
    }

    /// Reads up to `n` messages the server sent (descriptors, if any, are discarded).
    fn drain(&mut self, n: usize) {
        let mut buf = [0u8; 8192];
        for _ in 0..n {
            // SAFETY: reads into a live buffer.
            let got = unsafe {
                libc::recv(
                    self.sock.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if got == 0 {
                self.dead = true;
            }
            if got <= 0 {
                return;
            }
        }
    }
}

/// Consumer ids the attack uses.
#[derive(Default)]
struct Ids {
    next: u32,
    last: u32,
}

impl Ids {
    fn fresh(&mut self) -> u32 {
        self.next += 1;
        self.next
    }

    /// The last id announced, another recent one, or any.
    fn pick(&self, b: &mut Bytes<'_>) -> u32 {
        match b.u8() % 4 {
            0 | 1 => self.last,
            2 => self.next.saturating_sub(u32::from(b.u8() % 4)),
            _ => b.u32(),
        }
    }
}

/// A HELLO: right, with fuzzed fields, truncated, or garbage.
fn hello(b: &mut Bytes<'_>) -> Vec<u8> {
    let mode = b.u8() % 8;
    if mode == 7 {
        let n = usize::from(b.u8());
        return b.take(n).to_vec();
    }
    let fuzzed = mode >= 4;
    let pick = |b: &mut Bytes<'_>, right: &'static [u8], near: &'static [u8]| -> Vec<u8> {
        if !fuzzed {
            return right.to_vec();
        }
        match b.u8() % 4 {
            0 => right.to_vec(),
            1 => near.to_vec(),
            2 => Vec::new(),
            _ => {
                let n = usize::from(b.u8());
                b.take(n).to_vec()
            }
        }
    };
    let version = if fuzzed && b.bool() { b.u32() } else { 1 };
    let max = if fuzzed {
        [MAX_MSG as u32, MAX_MSG as u32 - 1, 0, b.u32()][usize::from(b.u8() % 4)]
    } else {
        MAX_MSG as u32
    };
    let function = pick(b, HOST.as_bytes(), b"0000:b1:00.2");
    let name = pick(b, NAME.to_bytes(), b"wire-pee");
    let mut m = vec![TAG_HELLO];
    m.extend_from_slice(&version.to_le_bytes());
    m.extend_from_slice(&max.to_le_bytes());
    for s in [function, name] {
        // The length as it is, or one that lies.
        let len = if fuzzed && b.u8().is_multiple_of(8) {
            b.u16()
        } else {
            s.len() as u16
        };
        m.extend_from_slice(&len.to_le_bytes());
        m.extend_from_slice(&s);
    }
    if fuzzed && b.u8().is_multiple_of(8) {
        m.extend_from_slice(b.take(4));
    }
    if mode == 6 {
        let cut = usize::from(b.u8()) % m.len();
        m.truncate(cut);
    }
    m
}

/// A DATA frame of some length: empty, at the limits the server agreed, past them, any.
fn data_frame(b: &mut Bytes<'_>) -> Vec<u8> {
    let len = match b.u8() % 8 {
        0 => 0,
        1 => MAX_MSG,
        2 => MAX_MSG + 1,
        3 => MAX_MSG + OVERHEAD - 2 + usize::from(b.u8() % 4),
        4 => usize::from(b.u16()) % 9000,
        _ => usize::from(b.u8()),
    };
    let mut m = vec![TAG_DATA];
    m.extend_from_slice(b.take(len));
    m.resize(len + 1, 0xAB);
    m
}

fn consumer_new(id: u32, depth: u64, imm_len: u32, ring_len: u64, data_len: u64) -> Vec<u8> {
    let mut m = vec![TAG_CONSUMER_NEW];
    m.extend_from_slice(&id.to_le_bytes());
    m.extend_from_slice(&depth.to_le_bytes());
    m.extend_from_slice(&imm_len.to_le_bytes());
    m.extend_from_slice(&ring_len.to_le_bytes());
    m.extend_from_slice(&data_len.to_le_bytes());
    m
}

fn ring_len(depth: u64) -> u64 {
    (HEADER as u64) + depth * (POST + COMP) as u64
}

/// A ring as a consumer lays it out — alive, receives posted from a (maybe wrapping) start,
/// completion slots free — then poked; or raw bytes.
fn ring_contents(b: &mut Bytes<'_>, size: u64, depth: u64) -> Vec<u8> {
    let len = size.min(MAX_OWN_MAP as u64) as usize;
    let mut r = vec![0u8; len];
    let put = |r: &mut [u8], at: usize, v: u64| {
        if let Some(s) = r.get_mut(at..at + 8) {
            s.copy_from_slice(&v.to_le_bytes());
        }
    };
    if b.u8() % 8 == 7 {
        let raw = b.take(len.min(512));
        r[..raw.len()].copy_from_slice(raw);
        return r;
    }
    let d = depth.clamp(1, 1 << 16);
    let start = match b.u8() % 4 {
        3 => u64::MAX - u64::from(b.u8() % 4),
        2 => u64::from(b.u8()),
        _ => 0,
    };
    let posted = d - u64::from(b.u8()) % (d + 1);
    put(&mut r, POST_HEAD, start);
    put(&mut r, POST_TAIL, start.wrapping_add(posted));
    put(&mut r, COMP_TAIL, start);
    put(&mut r, ALIVE, u64::from(b.u8() % 8 != 7));
    for k in 0..posted.min(64) {
        let i = (start.wrapping_add(k) % d) as usize;
        let at = HEADER + i * POST;
        let offset = match b.u8() % 4 {
            3 => b.u64(),
            2 => u64::from(b.u16()) * 8,
            _ => 0,
        };
        let capacity = match b.u8() % 4 {
            3 => b.u64(),
            2 => u64::from(b.u16()),
            _ => 1 << 16,
        };
        put(&mut r, at, offset);
        put(&mut r, at + 8, capacity);
        put(&mut r, at + 16, u64::from(b.u32()));
    }
    // Completion slots: slot `k` of the round starting at `start` is free for producers when
    // its round is `start + k`; or none ever is.
    let stuck = b.u8() % 8 == 7;
    let comps = HEADER + d as usize * POST;
    for k in 0..d.min(4096) {
        let i = (start.wrapping_add(k) % d) as usize;
        let seq = if stuck {
            u64::MAX
        } else {
            start.wrapping_add(k)
        };
        put(&mut r, comps + i * COMP, seq);
    }
    for _ in 0..b.u8() % 8 {
        let at = (usize::from(b.u16()) * 8) % len.max(1);
        put(&mut r, at, b.u64());
    }
    r
}

/// Seals for a memfd: against shrinking (what the server wants), none, or more.
fn seals(b: &mut Bytes<'_>) -> i32 {
    match b.u8() % 16 {
        15 => 0,
        14 => libc::F_SEAL_SHRINK | libc::F_SEAL_WRITE,
        13 => libc::F_SEAL_SHRINK | libc::F_SEAL_FUTURE_WRITE,
        12 => libc::F_SEAL_GROW,
        11 => libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL,
        _ => libc::F_SEAL_SHRINK,
    }
}

// ---------------------------------------------------------------------------------------------
// Descriptors
// ---------------------------------------------------------------------------------------------

/// What an attack passes or maps, released when it ends.
#[derive(Default)]
struct Held {
    fds: Vec<OwnedFd>,
    maps: Vec<Map>,
}

impl Held {
    fn keep(&mut self, fd: OwnedFd) -> RawFd {
        let raw = fd.as_raw_fd();
        self.fds.push(fd);
        raw
    }
}

/// The target's own mapping of a ring memfd.
struct Map {
    addr: usize,
    len: usize,
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: a mapping made in `memfd`, unmapped once (the scribbler has stopped).
        unsafe { libc::munmap(self.addr as *mut c_void, self.len) };
    }
}

fn owned(fd: i32) -> Option<OwnedFd> {
    // SAFETY: a fresh descriptor nothing else owns, if valid.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A memfd of `size` bytes starting with `contents`, with `seals`; mapped here too if `map`
/// (for the scribbler), as far as [`MAX_OWN_MAP`] and the seals allow. -1 if it could not be
/// made.
fn memfd(
    size: u64,
    contents: &[u8],
    seals: i32,
    map: bool,
    held: &mut Held,
) -> (RawFd, Option<(usize, usize)>) {
    // SAFETY: a NUL-terminated name.
    let fd = unsafe {
        libc::memfd_create(
            c"wire-peer".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    let Some(fd) = owned(fd) else {
        return (-1, None);
    };
    let raw = fd.as_raw_fd();
    // SAFETY: writes a live slice, sizes and seals the file; failures leave it as it is.
    unsafe {
        libc::write(raw, contents.as_ptr().cast(), contents.len());
        libc::ftruncate(raw, size as libc::off_t);
        libc::fcntl(raw, libc::F_ADD_SEALS, seals);
    }
    let len = size.min(MAX_OWN_MAP as u64) as usize;
    let mut mapped = None;
    if map && len > 0 && seals & (libc::F_SEAL_WRITE | libc::F_SEAL_FUTURE_WRITE) == 0 {
        // SAFETY: a fresh shared mapping of the file's first `len` bytes; checked.
        let addr = unsafe {
            libc::mmap(
                null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                raw,
                0,
            )
        };
        if addr != libc::MAP_FAILED {
            held.maps.push(Map {
                addr: addr as usize,
                len,
            });
            mapped = Some((addr as usize, len));
        }
    }
    (held.keep(fd), mapped)
}

/// One end of a socket pair of `kind`; the other end kept open unless `close_peer`.
fn socket_pair(kind: i32, close_peer: bool, nonblocking: bool, held: &mut Held) -> RawFd {
    let mut fds = [0; 2];
    let flags = if nonblocking { libc::SOCK_NONBLOCK } else { 0 };
    // SAFETY: room for two descriptors; checked.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            kind | flags | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } < 0
    {
        return -1;
    }
    let (ours, theirs) = (owned(fds[0]), owned(fds[1]));
    if let Some(t) = theirs.filter(|_| !close_peer) {
        held.keep(t);
    }
    ours.map_or(-1, |o| held.keep(o))
}

/// A descriptor of a random kind.
fn descriptor(b: &mut Bytes<'_>, rig: &Rig, peer: &Peer, held: &mut Held) -> RawFd {
    match b.u8() % 12 {
        0 => {
            let size = match b.u8() % 4 {
                0 => b.u64() % MAX_FILE,
                1 => 0,
                _ => u64::from(b.u16()) * 8,
            };
            let s = seals(b);
            memfd(size, &[], s, false, held).0
        }
        1 => socket_pair(libc::SOCK_STREAM, b.bool(), b.bool(), held),
        2 => socket_pair(libc::SOCK_DGRAM, b.bool(), b.bool(), held),
        3 => socket_pair(libc::SOCK_SEQPACKET, b.bool(), b.bool(), held),
        4 | 5 => {
            // A pipe's read or write end, the other end open or closed.
            let mut fds = [0; 2];
            // SAFETY: room for two descriptors; checked.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
                return -1;
            }
            let (r, w) = (owned(fds[0]), owned(fds[1]));
            let (send, other) = if b.bool() { (r, w) } else { (w, r) };
            if let Some(o) = other.filter(|_| !b.bool()) {
                held.keep(o);
            }
            send.map_or(-1, |s| held.keep(s))
        }
        6 => {
            let flags = if b.bool() { libc::EFD_NONBLOCK } else { 0 };
            // SAFETY: no pointers.
            let Some(fd) = owned(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | flags) }) else {
                return -1;
            };
            if b.bool() {
                // At its maximum: a blocking write to it would never return.
                let max = u64::MAX - 1;
                // SAFETY: writes 8 bytes from a live u64.
                unsafe { libc::write(fd.as_raw_fd(), (&max as *const u64).cast(), 8) };
            }
            held.keep(fd)
        }
        7 => rig.null.as_raw_fd(),
        8 => rig.file.as_raw_fd(),
        9 => rig.dir.as_raw_fd(),
        10 => peer.sock.as_raw_fd(),
        _ => socket_pair(libc::SOCK_STREAM, false, true, held),
    }
}

/// Up to 14 descriptors of random kinds.
fn random_fds(b: &mut Bytes<'_>, rig: &Rig, peer: &Peer, held: &mut Held) -> Vec<RawFd> {
    let n = 1 + b.u8() % 14;
    let mut fds: Vec<RawFd> = (0..n).map(|_| descriptor(b, rig, peer, held)).collect();
    fds.retain(|&fd| fd >= 0);
    fds
}

/// Usually none: descriptors on a frame that carries none.
fn maybe_fds(b: &mut Bytes<'_>, rig: &Rig, peer: &Peer, held: &mut Held) -> Vec<RawFd> {
    if b.u8() % 8 == 7 {
        random_fds(b, rig, peer, held)
    } else {
        Vec::new()
    }
}

// ---------------------------------------------------------------------------------------------
// The scribbler
// ---------------------------------------------------------------------------------------------

/// One write the scribbler repeats into a ring.
#[derive(Clone, Copy)]
enum Write {
    Set(u64),
    Add(u64),
}

/// The writes the scribbler keeps making into one ring the target mapped.
struct Job {
    addr: usize,
    writes: Vec<(usize, Write)>,
}

/// Writes into the ring mapped at `addr` (`len` bytes, of `depth`): to its counters, posted
/// receives, completion slots or anywhere, values a consumer would write and others.
fn scribbles(b: &mut Bytes<'_>, addr: usize, len: usize, depth: u64) -> Option<Job> {
    let d = depth.clamp(1, 1 << 16) as usize;
    let n = b.u8() % 8;
    if n == 0 {
        return None;
    }
    let mut writes = Vec::new();
    for _ in 0..n {
        let i = usize::from(b.u16()) % d;
        let at = match b.u8() % 7 {
            0 => POST_HEAD,
            1 => POST_TAIL,
            2 => COMP_TAIL,
            3 => ALIVE,
            4 => HEADER + i * POST + 8 * usize::from(b.u8() % 3),
            5 => HEADER + d * POST + i * COMP,
            _ => usize::from(b.u16()) * 8,
        };
        let w = match b.u8() % 6 {
            0 => Write::Set(0),
            1 => Write::Set(1),
            2 => Write::Set(u64::MAX),
            3 => Write::Add(1),
            4 => Write::Add(u64::MAX),
            _ => Write::Set(b.u64()),
        };
        if at + 8 <= len {
            writes.push((at, w));
        }
    }
    (!writes.is_empty()).then_some(Job { addr, writes })
}

/// The second thread: keeps making every job's writes until `stop`.
fn scribble(jobs: &Mutex<Vec<Job>>, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        {
            let jobs = jobs.lock().unwrap_or_else(|p| p.into_inner());
            for job in jobs.iter() {
                for &(at, w) in &job.writes {
                    // SAFETY: `at + 8` lies inside the job's mapping (checked when made), which
                    // lives until the scribbler has stopped; 8-aligned (page-aligned base).
                    let word = unsafe { &*((job.addr + at) as *const AtomicU64) };
                    match w {
                        Write::Set(v) => word.store(v, Ordering::Relaxed),
                        Write::Add(v) => {
                            word.fetch_add(v, Ordering::Relaxed);
                        }
                    }
                }
            }
        }
        std::thread::yield_now();
    }
}
