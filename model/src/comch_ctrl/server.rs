//! A Comch server (`doca_comch_server`): listens on the Arm side under a name, for clients on
//! the host function its representor stands for; accepts, handshakes and serves their
//! connections.

use super::connection::{ConnState, Connection};
use super::{Endpoint, Face, Flow};
use crate::ctx::CtxState;
use crate::error::{ErrorCode, Result, bail, err, note, report};
use crate::limits::{COMCH_HANDSHAKE_TIMEOUT_MS, COMCH_MAX_CLIENTS, COMCH_MAX_PENDING_HANDSHAKES};
use dpakit_wire::proto::{self, Message};
use dpakit_wire::{self as wire, Listener, Poller, Recv, SeqPacket};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Poller token of the listening socket.
const LISTENER: u64 = u64::MAX;
/// Poller tokens of accepted sockets still in their handshake: this bit and the descriptor.
const HANDSHAKE: u64 = 1 << 62;
/// Connections accepted per progress pass at most; the rest wait in the backlog.
const ACCEPTS_PER_PASS: usize = 64;

/// A Comch server.
pub struct Server {
    /// Its name, sizes and sends.
    pub ep: Endpoint,
    /// The host function (PCI address) its representor stands for: its clients' function.
    function: String,
    listener: Listener,
    poller: Poller,
    /// Established connections.
    conns: RefCell<Vec<Rc<Connection>>>,
    /// Accepted sockets waiting for their HELLO, oldest first, with when they were accepted.
    handshakes: RefCell<VecDeque<(SeqPacket, Instant)>>,
    /// Connections closed by this side, whose end is reported at the next progress.
    closing: RefCell<Vec<Rc<Connection>>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.ep.name())
            .field("function", &self.function)
            .field("connections", &self.conns.borrow().len())
            .finish()
    }
}

impl Server {
    /// `doca_comch_server_create`: listens as `name` for clients on PCI function `function`
    /// (the one the server's representor stands for). `ALREADY_EXIST` if a server of that
    /// name lives there.
    pub fn new(name: &str, function: String) -> Result<Self> {
        let ep = Endpoint::new("server", name)?;
        let path = wire::server_path(&function, name)?;
        let listener = Listener::bind(&path).map_err(|e| match e.code() {
            ErrorCode::AlreadyExist => err(
                ErrorCode::AlreadyExist,
                format!(
                    "a Comch server named `{name}` already runs on the representor of {function}: \
                     names are unique per device and representor"
                ),
            ),
            _ => e,
        })?;
        let poller = Poller::new()?;
        poller.add(listener.fd(), LISTENER)?;
        Ok(Self {
            ep,
            function,
            listener,
            poller,
            conns: RefCell::new(Vec::new()),
            handshakes: RefCell::new(VecDeque::new()),
            closing: RefCell::new(Vec::new()),
        })
    }

    /// Checks a send of `len` bytes on `conn` before its task is allocated: the connection is
    /// this server's and connected, the message fits, and the connection is within its share
    /// of the send tasks.
    pub fn check_send(&self, conn: &Connection, len: u32) -> Result<()> {
        self.ep
            .check_send(conn, len, Some(self.conns.borrow().len()))
    }

    /// Accepts what waits in the backlog (a bounded number per pass, so a flood of
    /// connections cannot hold the progress call) and reads each one's HELLO if it came with
    /// the connection, as a client's does.
    fn accept(&self, face: &impl Face) -> Result<usize> {
        // SAFETY: getuid cannot fail.
        let me = unsafe { libc::getuid() };
        let mut n = 0;
        for _ in 0..ACCEPTS_PER_PASS {
            if face.state() != CtxState::Running {
                // A connection callback of this loop stopped the server: the backlog waits.
                break;
            }
            let Some(sock) = self.listener.accept()? else {
                break;
            };
            match sock.peer_uid() {
                Ok(uid) if uid == me || wire::any_uid() => {}
                Ok(uid) => {
                    let _ = sock.send(
                        &[&proto::refuse(
                            ErrorCode::NotPermitted.raw(),
                            &format!(
                                "the server runs as uid {me} and accepts clients of that user \
                                 only (uid {uid} asked; DPAKIT_SOFT_COMCH_ANY_UID=1 lifts this)"
                            ),
                        )],
                        &[],
                    );
                    continue;
                }
                Err(_) => continue,
            }
            let fd = sock.fd();
            self.poller.add(fd, HANDSHAKE | fd as u64)?;
            let mut pending = self.handshakes.borrow_mut();
            pending.push_back((sock, Instant::now()));
            if pending.len() > COMCH_MAX_PENDING_HANDSHAKES {
                // The oldest silent connection makes room: a client that speaks at once is
                // served before COMCH_MAX_PENDING_HANDSHAKES newer ones arrive.
                if let Some((old, _)) = pending.pop_front() {
                    self.poller.remove(old.fd());
                }
            }
            drop(pending);
            n += self.handshake(face, fd);
        }
        Ok(n)
    }

    /// Drops connections that have not sent a HELLO within the handshake timeout.
    fn expire_handshakes(&self) {
        let timeout = Duration::from_millis(COMCH_HANDSHAKE_TIMEOUT_MS);
        let mut pending = self.handshakes.borrow_mut();
        while pending
            .front()
            .is_some_and(|(_, at)| at.elapsed() > timeout)
        {
            if let Some((sock, _)) = pending.pop_front() {
                self.poller.remove(sock.fd());
            }
        }
    }

    /// Reads the HELLO of handshake socket `fd` and answers it.
    fn handshake(&self, face: &impl Face, fd: i32) -> usize {
        let mut list = self.handshakes.borrow_mut();
        let Some(at) = list.iter().position(|(s, _)| s.fd() == fd) else {
            return 0;
        };
        let mut buf = [0u8; proto::OVERHEAD];
        let mut fds = Vec::new();
        let got = list[at].0.recv(&mut buf, &mut fds);
        // A HELLO carries no descriptors: any that came are closed here.
        let carried_fds = !fds.is_empty();
        drop(fds);
        let len = match got {
            Ok(Recv::Empty) => return 0,
            Ok(Recv::Message(len)) if !carried_fds => len,
            Ok(_) | Err(_) => {
                self.poller.remove(fd);
                list.remove(at);
                return 0;
            }
        };
        self.poller.remove(fd);
        let Some((sock, _)) = list.remove(at) else {
            return 0;
        };
        drop(list);
        let verdict = match proto::decode(&buf[..len]) {
            Ok(Message::Hello {
                version,
                max_msg_size,
                function,
                name,
            }) => self.judge(version, max_msg_size, function, name),
            Ok(other) => Err(err(
                ErrorCode::InvalidValue,
                format!("expected HELLO, got {other:?}"),
            )),
            Err(e) => Err(e),
        };
        match verdict {
            Ok(()) => self.establish(face, sock),
            Err(e) => {
                let _ = sock.send(&[&proto::refuse(e.code().raw(), e.message())], &[]);
                report(
                    &format!("comch server `{}`", self.ep.name()),
                    &err(e.code(), format!("refused a client: {}", e.message())),
                );
                // A client that reached the server with a valid HELLO learns of it through a
                // failed connection event.
                if let Ok(conn) = Connection::new(self.ep.token.get(), true, sock, 0) {
                    let _ = face.connected(&conn, false);
                    conn.close();
                }
                1
            }
        }
    }

    /// Whether a client may connect: same version, same name, the function this server's
    /// representor stands for, the same max message size, and room.
    fn judge(&self, version: u32, max_msg_size: u32, function: &str, name: &str) -> Result<()> {
        if version != proto::VERSION {
            bail!(
                UnsupportedVersion,
                "the client speaks Comch protocol {version}, this server {}",
                proto::VERSION
            );
        }
        if name != self.ep.name() {
            bail!(
                NotFound,
                "this server is `{}`, not `{name}`",
                self.ep.name()
            );
        }
        if function != self.function {
            bail!(
                NotPermitted,
                "the server's representor stands for PCI function {}; a client on {function} \
                 cannot connect to it",
                self.function
            );
        }
        if max_msg_size != self.ep.max_msg_size() {
            bail!(
                BadConfig,
                "max message size mismatch: the client uses {max_msg_size} bytes and the server \
                 {} (doca_comch_{{server,client}}_set_max_msg_size must agree)",
                self.ep.max_msg_size()
            );
        }
        if self.conns.borrow().len() >= COMCH_MAX_CLIENTS {
            bail!(
                Full,
                "the server has {COMCH_MAX_CLIENTS} clients, the most one server takes \
                 (doca_comch_cap_get_max_clients)"
            );
        }
        Ok(())
    }

    fn establish(&self, face: &impl Face, sock: SeqPacket) -> usize {
        if face.state() != CtxState::Running {
            // Stopped by a callback of this pass: `stop` closed the connections it had, and a
            // new one would outlive the server's stop (never reported as ended).
            let refusal = proto::refuse(ErrorCode::BadState.raw(), "the server is stopping");
            let _ = sock.send(&[&refusal], &[]);
            return 0;
        }
        if !matches!(sock.send(&[&[proto::TAG_WELCOME]], &[]), Ok(true)) {
            return 0;
        }
        let max_waiting = self.ep.send_tasks.get() as usize;
        let Ok(conn) = Connection::new(self.ep.token.get(), true, sock, max_waiting) else {
            return 0;
        };
        // The poller's token for a connection is its address (live while it is in `conns`).
        let token = Rc::as_ptr(&conn) as u64;
        if self.poller.add(conn.sock.fd(), token).is_err() {
            return 0;
        }
        self.ep.offer_ring(&conn);
        // In the list before the program hears of it: its callback may send or disconnect.
        self.conns.borrow_mut().push(conn.clone());
        if face.connected(&conn, true).is_err() {
            self.conns.borrow_mut().retain(|c| !Rc::ptr_eq(c, &conn));
            self.poller.remove(conn.sock.fd());
            conn.close();
            return 0;
        }
        1
    }

    /// Ends `conn`: sends not completed end (`ours`: this side closed it in order, see
    /// [`Connection::end_pending`]), and the layer above hears of it.
    fn drop_connection(&self, face: &impl Face, conn: &Rc<Connection>, ours: bool) -> usize {
        self.conns.borrow_mut().retain(|c| !Rc::ptr_eq(c, conn));
        if !conn.end() {
            return 0;
        }
        self.poller.remove(conn.sock.fd());
        conn.close();
        self.ep.end_pending(conn, ours);
        face.disconnected(conn);
        1
    }

    /// One progress pass while starting, running or stopping.
    /// One progress pass while starting, running or stopping; returns the events reported.
    pub fn poll(&self, face: &impl Face) -> usize {
        // Sends the peers took complete first, so their tasks are free for the callbacks of
        // what arrives in this pass.
        let mut i = 0;
        while let Some(conn) = self.conn_at(i) {
            i += 1;
            self.ep.reap(&conn);
        }
        let mut n = self.ep.run_done(face);
        if face.state() == CtxState::Running {
            if !self.handshakes.borrow().is_empty() {
                self.expire_handshakes();
            }
            let woke = self.ep.woke();
            let (got, on_rings) = self.poll_rings(face, woke);
            n += got;
            let on_rings = on_rings && self.handshakes.borrow().is_empty();
            if self.ep.socket_due(on_rings, woke) {
                n += self.drop_stalled(face);
                n += self.poll_sockets(face);
            }
        }
        loop {
            let Some(conn) = self.closing.borrow_mut().pop() else {
                break;
            };
            n += self.drop_connection(face, &conn, true);
        }
        n + self.ep.run_done(face)
    }

    /// The connection at `i` of the list (callbacks may change the list between two calls).
    fn conn_at(&self, i: usize) -> Option<Rc<Connection>> {
        self.conns.borrow().get(i).cloned()
    }

    /// Every connection's control ring and waiting sends, without a system call (`woke`: the
    /// engine slept since the last pass, so the peers need not wake it any more). Also whether
    /// every connection's control messages go through rings both ways.
    fn poll_rings(&self, face: &impl Face, woke: bool) -> (usize, bool) {
        let mut n = 0;
        let mut on_rings = true;
        let mut i = 0;
        while let Some(conn) = self.conn_at(i) {
            i += 1;
            if woke {
                conn.awake();
            }
            let (got, flow) = self.ep.receive_ring(face, &conn, self.ep.recv_queue_size());
            n += got;
            if flow == Flow::Closed {
                // The peer broke the protocol: dropped now (the list shifts down by one).
                n += self.drop_connection(face, &conn, false);
                i -= 1;
                continue;
            }
            if conn.state() != ConnState::Connected {
                // Disconnected by a callback of this pass: ended with the closing ones.
                continue;
            }
            if conn.needs_flush() {
                self.ep.flush(&conn);
            }
            conn.shared.flush_unsent();
            on_rings &= conn.on_rings();
        }
        (n, on_rings)
    }

    /// Drops the connections whose peers took nothing for the stall time while sends to them
    /// were outstanding (looked at when the sockets are: a clock read per pass would cost more
    /// than a ring round trip).
    fn drop_stalled(&self, face: &impl Face) -> usize {
        let now = Instant::now();
        let mut n = 0;
        let mut i = 0;
        while let Some(conn) = self.conn_at(i) {
            i += 1;
            if conn.stalled(now) {
                conn.abort();
                // The list shifts down by one.
                n += self.drop_connection(face, &conn, false);
                i -= 1;
            }
        }
        n
    }

    /// The listener, the handshakes and the connections' sockets the poller says are ready.
    fn poll_sockets(&self, face: &impl Face) -> usize {
        let mut n = 0;
        let mut tokens = [0u64; 64];
        let ready = self.poller.ready(&mut tokens);
        for &token in &tokens[..ready] {
            if face.state() != CtxState::Running {
                // A callback (of this pass, or of the rings' before it) stopped the server: a
                // stopped server accepts nobody; the rest waits for its next start, if any.
                break;
            }
            n += match token {
                LISTENER => self.accept(face).unwrap_or_else(|e| {
                    note("comch server accept", &e);
                    0
                }),
                t if t & HANDSHAKE != 0 => self.handshake(face, (t & !HANDSHAKE) as i32),
                conn => self.serve(face, conn),
            };
        }
        n
    }

    /// Reads the socket of the connection whose poller token is `token`, if it is still one
    /// of this server's (a callback of this pass may have ended it).
    fn serve(&self, face: &impl Face, token: u64) -> usize {
        let found = self
            .conns
            .borrow()
            .iter()
            .find(|c| Rc::as_ptr(c) as u64 == token)
            .cloned();
        let Some(conn) = found else {
            return 0;
        };
        let (n, flow) = self.ep.receive(face, &conn);
        if flow == Flow::Closed {
            return n + self.drop_connection(face, &conn, false);
        }
        n
    }

    /// `doca_ctx_start`: the caller checked the layer's own configuration (callbacks, task
    /// pool); the server runs from now on.
    pub fn start(&self, face: &impl Face) -> Result<()> {
        self.ep.prepare_start()?;
        face.watch(self.poller.fd())?;
        face.polling(true);
        face.transition(CtxState::Running);
        Ok(())
    }

    /// `doca_ctx_stop`: every connection is told and closed (their ends are reported at the
    /// next progress). `IN_USE`, and nothing changes, while producers or consumers exist on
    /// any connection. `tasks_outstanding`: the send tasks not back in the layer's pool.
    /// Returns whether the server is IDLE now (else it is STOPPING until progress ends it).
    pub fn stop(&self, face: &impl Face, tasks_outstanding: usize) -> Result<bool> {
        let conns: Vec<_> = self.conns.borrow().clone();
        for (i, conn) in conns.iter().enumerate() {
            if let Err(e) = conn.require_no_fast_path("stopping the server") {
                for sealed in &conns[..i] {
                    sealed.unseal();
                }
                return Err(e);
            }
        }
        for (sock, _) in self.handshakes.borrow_mut().drain(..) {
            self.poller.remove(sock.fd());
        }
        let conns = std::mem::take(&mut *self.conns.borrow_mut());
        for conn in &conns {
            let _ = conn.sock.send(&[&[proto::TAG_BYE]], &[]);
            conn.close();
        }
        self.closing.borrow_mut().extend(conns);
        if self.closing.borrow().is_empty() && tasks_outstanding == 0 {
            self.finish_stop(face);
            return Ok(true);
        }
        face.transition(CtxState::Stopping);
        Ok(false)
    }

    /// After a progress pass of a STOPPING server whose tasks are all back: IDLE once every
    /// connection's end and every send's completion is reported.
    pub fn try_finish_stop(&self, face: &impl Face) {
        if self.closing.borrow().is_empty() && !self.ep.has_done() {
            self.finish_stop(face)
        }
    }

    fn finish_stop(&self, face: &impl Face) {
        face.unwatch(self.poller.fd());
        face.polling(false);
        face.transition(CtxState::Idle);
    }

    /// Whether a progress pass has something to report now. Arms every connection on the way
    /// (no short cut): its peer wakes this engine from now on.
    pub fn has_pending(&self) -> bool {
        let mut waiting = false;
        let mut i = 0;
        while let Some(conn) = self.conn_at(i) {
            i += 1;
            waiting |= self.ep.arm(&conn);
        }
        waiting || self.ep.has_done() || !self.closing.borrow().is_empty()
    }

    /// `doca_comch_server_disconnect` (the caller checked that the server runs).
    pub fn disconnect(&self, conn: &Connection) -> Result<()> {
        if conn.owner != self.ep.token.get() {
            bail!(InvalidValue, "the connection belongs to another server");
        }
        let listed = self
            .conns
            .borrow()
            .iter()
            .find(|c| std::ptr::eq(Rc::as_ptr(c), conn))
            .cloned();
        let Some(conn) = listed.filter(|c| c.state() == ConnState::Connected) else {
            bail!(NotConnected, "the connection is already disconnected");
        };
        conn.require_no_fast_path("disconnecting")?;
        let sent = conn.sock.send(&[&[proto::TAG_BYE]], &[]);
        if !matches!(sent, Ok(true)) {
            conn.unseal();
        }
        if !sent? {
            bail!(
                Again,
                "the connection's queue is full: the disconnection message cannot be sent now; \
                 progress and call doca_comch_server_disconnect again"
            );
        }
        conn.close();
        self.conns.borrow_mut().retain(|c| !Rc::ptr_eq(c, &conn));
        self.closing.borrow_mut().push(conn);
        Ok(())
    }
}
