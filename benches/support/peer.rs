//! The second process of a two-process benchmark.
//!
//! The bench binary runs itself again with `DPAKIT_BENCH_PEER=<role>`: the peer pins itself to
//! its core, takes the descriptors it inherited (sockets, a shared page), says it is ready on
//! stdout and serves until its stdin closes — the parent holds the other end of that pipe, so
//! a bench that stops or crashes leaves no peer behind. The bench's `main` asks [`role`]
//! first and runs the peer instead of criterion when it is one.
// The shared page holds atomics two processes use: no loom model can reach another process.
#![allow(clippy::disallowed_types)]

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::RawFd;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const ROLE_ENV: &str = "DPAKIT_BENCH_PEER";
const CORE_ENV: &str = "DPAKIT_BENCH_PEER_CORE";
const FDS_ENV: &str = "DPAKIT_BENCH_PEER_FDS";

/// The running peer process, seen from the bench.
pub struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Peer {
    /// Starts the peer `role` pinned to `core`, handing it `fds` (which must not be
    /// close-on-exec), and waits until it is ready.
    pub fn spawn(role: &str, core: usize, fds: &[RawFd]) -> Peer {
        Self::spawn_progressing(role, core, fds, || {})
    }

    /// As [`spawn`](Self::spawn), running `progress` while it waits: for a peer that needs
    /// this process to answer before it is ready (a server's handshake).
    pub fn spawn_progressing(
        role: &str,
        core: usize,
        fds: &[RawFd],
        mut progress: impl FnMut(),
    ) -> Peer {
        let fds: Vec<String> = fds.iter().map(ToString::to_string).collect();
        let mut child = Command::new(std::env::current_exe().expect("the bench binary"))
            .env(ROLE_ENV, role)
            .env(CORE_ENV, core.to_string())
            .env(FDS_ENV, fds.join(","))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the peer process");
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let line = loop {
            match rx.try_recv() {
                Ok(line) => break line,
                Err(std::sync::mpsc::TryRecvError::Empty) => {
                    assert!(
                        Instant::now() < deadline,
                        "the peer `{role}` never got ready"
                    );
                    progress();
                }
                Err(e) => panic!("the peer `{role}`: {e}"),
            }
        };
        assert_eq!(line.trim(), "ready", "the peer `{role}` did not start");
        let stdin = child.stdin.take();
        Peer { child, stdin }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // End of file on its stdin: the peer exits.
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The role of this process, if it is a peer.
pub fn role() -> Option<String> {
    std::env::var(ROLE_ENV).ok()
}

/// In the peer: pins it, arranges for it to exit when the bench closes its stdin, and returns
/// the descriptors it was given.
pub fn enter() -> Vec<RawFd> {
    let core: usize = std::env::var(CORE_ENV)
        .ok()
        .and_then(|c| c.parse().ok())
        .expect("the peer's core");
    dpakit::soft::pin_current_thread(core).expect("pin the peer");
    std::thread::spawn(|| {
        let _ = std::io::stdin().read(&mut [0u8; 1]);
        // A role that watches `stopped` returns and cleans up; any other is ended.
        STOPPED.store(true, Ordering::Relaxed);
        std::thread::sleep(Duration::from_secs(1));
        std::process::exit(0);
    });
    std::env::var(FDS_ENV)
        .unwrap_or_default()
        .split(',')
        .filter_map(|f| f.parse().ok())
        .collect()
}

static STOPPED: AtomicBool = AtomicBool::new(false);

/// In the peer: whether the bench is done with it (its stdin closed).
pub fn stopped() -> bool {
    STOPPED.load(Ordering::Relaxed)
}

/// In the peer: tells the bench it serves now.
pub fn ready() {
    let mut out = std::io::stdout();
    writeln!(out, "ready").expect("stdout");
    out.flush().expect("stdout");
}

/// A page of memory shared with the peer (a memfd it inherits), holding counters on cache
/// lines of their own.
pub struct SharedPage {
    fd: RawFd,
    base: *mut u8,
}

const PAGE: usize = 4096;
/// Bytes between two counters: a cache line pair, so neighbours never share a line.
const STRIDE: usize = 128;

impl SharedPage {
    /// A fresh zeroed page, its descriptor inheritable.
    pub fn new() -> SharedPage {
        // SAFETY: a NUL-terminated name; no flags, so the descriptor survives exec.
        let fd = unsafe { libc::memfd_create(c"dpakit-bench".as_ptr(), 0) };
        assert!(fd >= 0, "memfd_create");
        // SAFETY: our descriptor.
        assert_eq!(unsafe { libc::ftruncate(fd, PAGE as libc::off_t) }, 0);
        Self::map(fd)
    }

    /// The page behind an inherited descriptor.
    pub fn map(fd: RawFd) -> SharedPage {
        // SAFETY: maps PAGE bytes of a memfd of that size, shared, readable and writable.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED, "mmap the shared page");
        SharedPage {
            fd,
            base: base.cast(),
        }
    }

    pub fn fd(&self) -> RawFd {
        self.fd
    }

    /// Counter `i` (0..32).
    pub fn counter(&self, i: usize) -> &AtomicU64 {
        assert!(i < PAGE / STRIDE);
        // SAFETY: inside the mapping, aligned to 128 bytes; the page lives as long as `self`
        // and is only ever accessed through atomics, in both processes.
        unsafe { &*self.base.add(i * STRIDE).cast::<AtomicU64>() }
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: the mapping and descriptor made in `new`/`map`, released once.
        unsafe {
            libc::munmap(self.base.cast(), PAGE);
            libc::close(self.fd);
        }
    }
}

/// A socket pair whose second end a peer inherits: (ours, theirs).
pub fn socket_pair(kind: libc::c_int) -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    // SAFETY: room for two descriptors; no SOCK_CLOEXEC, so the peer can inherit one.
    let rc = unsafe { libc::socketpair(libc::AF_UNIX, kind, 0, fds.as_mut_ptr()) };
    assert_eq!(rc, 0, "socketpair");
    (fds[0], fds[1])
}
