//! The live view's socket: how `cargo xtask dpa-top` (or any tool) asks a running program what
//! its DPA contexts are doing.
//!
//! A process that runs a DPA context listens at `<runtime dir>/stats-<pid>` (a
//! `SOCK_SEQPACKET` socket, in the directory only its user may enter). A client connects and
//! sends one request, `table` or `json`; the server answers with the view in messages of at
//! most [`CHUNK`] bytes and closes the connection. The server is one thread that does nothing
//! else: it answers connections one at a time, each within [`PEER_DEADLINE`] (a client that
//! sends nothing or reads nothing is dropped then), only from its own user (`SO_PEERCRED`),
//! and never raises SIGPIPE. It never touches the datapath: the view it sends is read from
//! counters the soft device keeps anyway.

use crate::Result;
use crate::runtime::runtime_dir;
use crate::socket::{Connect, Listener, Poller, Recv, SeqPacket, remove_stale};
use dpakit_abi::bail;
use dpakit_sync::Ordering;
use dpakit_sync::plain::AtomicBool;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most one message of an answer holds.
pub const CHUNK: usize = 32 * 1024;

/// How long the server spends on one client, request and answer together.
pub const PEER_DEADLINE: Duration = Duration::from_secs(1);

/// The most a client reads of one answer: a bound against a hostile server of its own user.
pub const MAX_ANSWER: usize = 64 << 20;

/// What a client asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// The view as people read it.
    Table,
    /// The view as one JSON object.
    Json,
}

impl Request {
    fn word(self) -> &'static [u8] {
        match self {
            Request::Table => b"table",
            Request::Json => b"json",
        }
    }

    fn parse(bytes: &[u8]) -> Option<Self> {
        match bytes {
            b"table" => Some(Request::Table),
            b"json" => Some(Request::Json),
            _ => None,
        }
    }
}

/// Where process `pid` listens.
pub fn socket_path(pid: u32) -> Result<PathBuf> {
    Ok(runtime_dir()?.join(format!("stats-{pid}")))
}

/// The server thread of this process, once it listens.
struct Server {
    /// The process that started it: a forked child inherits the record, not the thread.
    pid: u32,
    /// Wakes the thread to end.
    stop: OwnedFd,
    thread: std::thread::JoinHandle<()>,
}

static SERVER: Mutex<Option<Server>> = Mutex::new(None);

/// Set when the server thread is to end.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Listens at this process's socket and answers on a thread of its own, with `render`'s view.
/// Once per process; later calls do nothing. Sockets of dead processes left in the runtime
/// directory are removed first.
pub fn serve(render: fn(Request) -> String) -> Result<()> {
    let mut server = SERVER.lock().unwrap_or_else(|p| p.into_inner());
    if server.is_some() {
        return Ok(());
    }
    let pid = std::process::id();
    remove_dead(&runtime_dir()?);
    let listener = Listener::bind(&socket_path(pid)?)?;
    let poller = Poller::new()?;
    poller.add(listener.fd(), 0)?;
    let stop = crate::socket::eventfd()?;
    poller.add(stop.as_raw_fd(), 1)?;
    // The listener moves to the thread: its socket goes when the thread ends.
    let thread = std::thread::Builder::new()
        .name("dpakit-stats".into())
        .spawn(move || {
            loop {
                poller.wait(-1);
                if STOPPING.load(Ordering::Acquire) {
                    return;
                }
                match listener.accept() {
                    Ok(Some(client)) => answer(&client, render),
                    Ok(None) => {}
                    // Out of descriptors (the listener shed a connection): let it pass.
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        })
        .map_err(|e| {
            dpakit_abi::Error::new(
                dpakit_abi::ErrorCode::OperatingSystem,
                format!("cannot start the live view's thread: {e}"),
            )
        })?;
    *server = Some(Server { pid, stop, thread });
    Ok(())
}

/// At exit: ends the server thread and waits for it (at most the [`PEER_DEADLINE`] of a client
/// it is answering), which removes the socket with its listener, so nothing of it is left
/// behind. A forked child leaves its parent's alone.
pub fn withdraw() {
    let own = SERVER
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take_if(|s| s.pid == std::process::id());
    let Some(Server { stop, thread, .. }) = own else {
        return;
    };
    STOPPING.store(true, Ordering::Release);
    let one: u64 = 1;
    // SAFETY: 8 readable bytes, the eventfd protocol's unit.
    unsafe { libc::write(stop.as_raw_fd(), (&one as *const u64).cast(), 8) };
    let _ = thread.join();
}

/// Serves one client within [`PEER_DEADLINE`].
fn answer(client: &SeqPacket, render: fn(Request) -> String) {
    // SAFETY: getuid cannot fail and touches no memory.
    let uid = unsafe { libc::getuid() };
    if client.peer_uid().ok() != Some(uid) {
        return;
    }
    let deadline = Instant::now() + PEER_DEADLINE;
    let mut buf = [0u8; 16];
    let request = loop {
        match client.recv(&mut buf, &mut Vec::new()) {
            Ok(Recv::Message(n)) => break Request::parse(&buf[..n]),
            Ok(Recv::Empty) if wait(client.fd(), libc::POLLIN, deadline) => {}
            _ => return,
        }
    };
    let Some(request) = request else {
        let _ = client.send(&[b"unknown request: ask for `table` or `json`\n"], &[]);
        return;
    };
    let view = render(request);
    for chunk in view.as_bytes().chunks(CHUNK) {
        loop {
            match client.send(&[chunk], &[]) {
                Ok(true) => break,
                Ok(false) if wait(client.fd(), libc::POLLOUT, deadline) => {}
                _ => return,
            }
        }
    }
}

/// Waits until `fd` has `events` or `deadline` passes; whether it has them.
fn wait(fd: RawFd, events: libc::c_short, deadline: Instant) -> bool {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return false;
    }
    let mut pfd = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut pfd, 1, left.as_millis().clamp(1, 60_000) as i32) };
    n > 0 && pfd.revents & events != 0
}

/// Asks the process listening at `path` for its view, within `timeout`.
pub fn query(path: &Path, request: Request, timeout: Duration) -> Result<String> {
    let deadline = Instant::now() + timeout;
    let server = match SeqPacket::connect(path)? {
        Connect::Connected(s) => s,
        Connect::Absent => bail!(NotFound, "no process listens at {}", path.display()),
        Connect::Stale => bail!(NotFound, "the process of {} has ended", path.display()),
        Connect::Busy => bail!(Again, "{} is busy: try again", path.display()),
    };
    while !server.send(&[request.word()], &[])? {
        if !wait(server.fd(), libc::POLLOUT, deadline) {
            bail!(
                TimeOut,
                "{} took no request within {timeout:?}",
                path.display()
            );
        }
    }
    let mut answer = Vec::new();
    let mut buf = vec![0u8; CHUNK];
    loop {
        match server.recv(&mut buf, &mut Vec::new())? {
            Recv::Message(n) if answer.len() + n <= MAX_ANSWER => {
                answer.extend_from_slice(&buf[..n])
            }
            Recv::Message(_) => bail!(
                TooBig,
                "{} answers more than {MAX_ANSWER} bytes",
                path.display()
            ),
            Recv::Closed => break,
            Recv::Empty => {
                if !wait(server.fd(), libc::POLLIN, deadline) {
                    bail!(
                        TimeOut,
                        "{} did not answer within {timeout:?}",
                        path.display()
                    );
                }
            }
        }
    }
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// The processes with a live view in the runtime directory, by pid, with their sockets;
/// sockets of dead processes are removed on the way.
pub fn servers() -> Result<Vec<(u32, PathBuf)>> {
    let dir = runtime_dir()?;
    remove_dead(&dir);
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((pid_of(&e.file_name())?, e.path())))
        .collect();
    found.sort();
    Ok(found)
}

/// The pid a socket's name `stats-<pid>` carries.
fn pid_of(name: &std::ffi::OsStr) -> Option<u32> {
    name.to_str()?.strip_prefix("stats-")?.parse().ok()
}

/// Removes the sockets in `dir` whose process is gone (no connection: a live server would
/// spend its time on it).
fn remove_dead(dir: &Path) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Some(pid) = pid_of(&entry.file_name()) else {
            continue;
        };
        let Ok(raw) = libc::pid_t::try_from(pid) else {
            continue;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let gone = unsafe { libc::kill(raw, 0) } < 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            // Refused connections confirm it before the file goes.
            remove_stale(&entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_one_word() {
        for r in [Request::Table, Request::Json] {
            assert_eq!(Request::parse(r.word()), Some(r));
        }
        assert_eq!(Request::parse(b"table\n"), None);
        assert_eq!(pid_of("stats-42".as_ref()), Some(42));
        assert_eq!(pid_of("comch-0000:03:00.0-1".as_ref()), None);
    }
}
