//! A Comch client (`doca_comch_client`): on the host side, connects to the server of a name on
//! its own PCI function. Its start leaves it STARTING; progress keeps trying until the server
//! is there and the handshake is done, and then it is RUNNING.

use super::connection::{ConnState, Connection};
use super::{Endpoint, Face, Flow};
use crate::ctx::CtxState;
use crate::error::{ErrorCode, Result, err, note, report};
use crate::retry_timer::RetryTimer;
use dpakit_wire::proto::{self, Message};
use dpakit_wire::{self as wire, Connect, Recv, SeqPacket};
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// How often a starting client tries to reach its server.
const RETRY: Duration = Duration::from_millis(10);

/// Where the client is between start and stop.
enum Phase {
    Idle,
    /// No server answered yet; the timer wakes the PE to try again.
    Connecting,
    /// Connected, HELLO sent, waiting for the answer.
    Handshaking(SeqPacket),
    /// Established.
    Connected(Rc<Connection>),
}

/// A Comch client.
pub struct Client {
    /// Its server's name, its sizes and sends.
    pub ep: Endpoint,
    /// The client's PCI function: servers for it are the ones it can reach.
    function: String,
    path: PathBuf,
    phase: RefCell<Phase>,
    /// Periodic timer that wakes a sleeping PE while connecting.
    timer: RetryTimer,
    /// The connection after it closed, until the stop completes.
    closed: RefCell<Option<Rc<Connection>>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("name", &self.ep.name())
            .field("function", &self.function)
            .field("connected", &self.connection().is_some())
            .finish()
    }
}

impl Client {
    /// `doca_comch_client_create`: a client of the server named `name` on PCI function
    /// `function` (the client's own).
    pub fn new(name: &str, function: String) -> Result<Self> {
        let ep = Endpoint::new("client", name)?;
        let path = wire::server_path(&function, name)?;
        Ok(Self {
            ep,
            function,
            path,
            phase: RefCell::new(Phase::Idle),
            timer: RetryTimer::new(RETRY),
            closed: RefCell::new(None),
        })
    }

    /// `doca_comch_client_get_connection`: its connection while connected.
    pub fn connection(&self) -> Option<Rc<Connection>> {
        match &*self.phase.borrow() {
            Phase::Connected(conn) => Some(conn.clone()),
            _ => None,
        }
    }

    /// Checks a send of `len` bytes on `conn` before its task is allocated: the connection is
    /// this client's and connected, and the message fits (a client's one connection has its
    /// send tasks to itself).
    pub fn check_send(&self, conn: &Connection, len: u32) -> Result<()> {
        self.ep.check_send(conn, len, None)
    }

    fn stop_timer(&self, face: &impl Face) {
        self.timer.off(|fd| face.unwatch(fd));
    }

    /// One attempt to reach the server.
    fn try_connect(&self, face: &impl Face) -> Result<()> {
        match SeqPacket::connect(&self.path)? {
            Connect::Connected(sock) => {
                let hello = proto::hello(self.ep.max_msg_size(), &self.function, self.ep.name());
                if !sock.send(&[&hello], &[])? {
                    return Ok(());
                }
                face.watch(sock.fd())?;
                *self.phase.borrow_mut() = Phase::Handshaking(sock);
            }
            Connect::Stale => wire::remove_stale(&self.path),
            Connect::Absent | Connect::Busy => {}
        }
        Ok(())
    }

    /// Reads the server's answer to HELLO.
    fn answer(&self, face: &impl Face) -> usize {
        let mut buf = [0u8; proto::OVERHEAD];
        let mut fds = Vec::new();
        let got = match &*self.phase.borrow() {
            Phase::Handshaking(sock) => sock.recv(&mut buf, &mut fds),
            _ => return 0,
        };
        let refused = match got {
            Ok(Recv::Empty) => return 0,
            Ok(Recv::Message(len)) => match proto::decode(&buf[..len]) {
                Ok(Message::Welcome) => None,
                Ok(Message::Refuse { code, reason }) => Some(err(
                    ErrorCode::from_raw(code).unwrap_or(ErrorCode::Unknown),
                    format!("the server refused the connection: {reason}"),
                )),
                Ok(other) => Some(err(
                    ErrorCode::InvalidValue,
                    format!("the server answered {other:?} to HELLO"),
                )),
                Err(e) => Some(e),
            },
            // The server went away during the handshake: try again (the socket closes with
            // the phase, which leaves the PE's watch).
            Ok(Recv::Closed) | Err(_) => {
                *self.phase.borrow_mut() = Phase::Connecting;
                return 0;
            }
        };
        let Phase::Handshaking(sock) =
            std::mem::replace(&mut *self.phase.borrow_mut(), Phase::Connecting)
        else {
            return 0;
        };
        let Some(e) = refused else {
            return self.established(face, sock);
        };
        report(&format!("comch client `{}`", self.ep.name()), &e);
        face.unwatch(sock.fd());
        drop(sock);
        self.stop_timer(face);
        *self.phase.borrow_mut() = Phase::Idle;
        face.polling(false);
        face.transition(CtxState::Idle);
        1
    }

    /// The handshake succeeded: the socket (watched by the PE since it connected) becomes the
    /// connection's.
    fn established(&self, face: &impl Face, sock: SeqPacket) -> usize {
        let max_waiting = self.ep.send_tasks.get() as usize;
        let fd = sock.fd();
        let conn = match Connection::new(self.ep.token.get(), false, sock, max_waiting) {
            Ok(conn) => conn,
            Err(e) => {
                note("comch client", &e);
                face.unwatch(fd);
                return 0;
            }
        };
        if let Err(e) = face.connected(&conn, true) {
            note("comch client", &e);
            face.unwatch(fd);
            return 0;
        }
        self.ep.offer_ring(&conn);
        self.stop_timer(face);
        *self.phase.borrow_mut() = Phase::Connected(conn);
        face.transition(CtxState::Running);
        1
    }

    /// The server disconnected or died: waiting sends fail and the client stops.
    fn lost(&self, face: &impl Face, conn: Rc<Connection>) -> usize {
        conn.close();
        self.ep.end_pending(&conn, false);
        *self.closed.borrow_mut() = Some(conn);
        *self.phase.borrow_mut() = Phase::Idle;
        if face.state() == CtxState::Running {
            face.transition(CtxState::Stopping);
        }
        1
    }

    /// One progress pass while starting, running or stopping; returns the events reported.
    pub fn poll(&self, face: &impl Face) -> usize {
        // Sends the server took complete first, so their tasks are free for the callbacks of
        // what arrives in this pass.
        if let Some(conn) = self.connection() {
            self.ep.reap(&conn);
        }
        let mut n = self.ep.run_done(face);
        enum Now {
            Idle,
            Connecting,
            Handshaking,
            Connected(Rc<Connection>),
        }
        let now = match &*self.phase.borrow() {
            Phase::Idle => Now::Idle,
            Phase::Connecting => Now::Connecting,
            Phase::Handshaking(_) => Now::Handshaking,
            Phase::Connected(conn) => Now::Connected(conn.clone()),
        };
        match now {
            Now::Idle => {}
            Now::Connecting => {
                self.timer.drain();
                if let Err(e) = self.try_connect(face) {
                    note("comch client connect", &e);
                }
                n += self.answer(face);
            }
            Now::Handshaking => {
                self.timer.drain();
                n += self.answer(face);
            }
            Now::Connected(conn) => n += self.serve(face, conn),
        }
        n + self.ep.run_done(face)
    }

    /// A pass over the connection: its ring always, its socket only when due (a busy pass over
    /// rings makes no system call).
    fn serve(&self, face: &impl Face, conn: Rc<Connection>) -> usize {
        let woke = self.ep.woke();
        if woke {
            conn.awake();
        }
        let (mut got, mut flow) = self.ep.receive_ring(face, &conn, self.ep.recv_queue_size());
        if flow == Flow::Open && self.ep.socket_due(conn.on_rings(), woke) {
            let (more, then) = self.ep.receive(face, &conn);
            (got, flow) = (got + more, then);
            // The server took nothing for the stall time: the connection goes.
            if flow == Flow::Open && conn.stalled(Instant::now()) {
                conn.abort();
                flow = Flow::Closed;
            }
        }
        // A callback may have stopped the client (and even started it again): the rest of
        // the pass is for the connection it still has, if any.
        if !self.connected_to(&conn) {
            return got;
        }
        if flow == Flow::Closed || conn.state() != ConnState::Connected {
            return got + self.lost(face, conn);
        }
        if conn.needs_flush() {
            self.ep.flush(&conn);
        }
        conn.shared.flush_unsent();
        got
    }

    /// Whether the client is connected through `conn`.
    fn connected_to(&self, conn: &Rc<Connection>) -> bool {
        matches!(&*self.phase.borrow(), Phase::Connected(c) if Rc::ptr_eq(c, conn))
    }

    fn finish_stop(&self, face: &impl Face) {
        if let Some(conn) = self.closed.borrow_mut().take() {
            face.unwatch(conn.sock.fd());
            if conn.end() {
                face.disconnected(&conn);
            }
        }
        self.stop_timer(face);
        *self.phase.borrow_mut() = Phase::Idle;
        face.polling(false);
        face.transition(CtxState::Idle);
    }

    /// `doca_ctx_start`: the caller checked the layer's own configuration (callbacks, task
    /// pool). The client is STARTING until progress has reached the server.
    pub fn start(&self, face: &impl Face) -> Result<()> {
        self.ep.prepare_start()?;
        self.timer.on(|fd| face.watch(fd))?;
        face.polling(true);
        *self.phase.borrow_mut() = Phase::Connecting;
        face.transition(CtxState::Starting);
        Ok(())
    }

    /// `doca_ctx_stop`: the server is told and the connection closed. `IN_USE`, and nothing
    /// changes, while producers or consumers exist on the connection. `tasks_outstanding`: the
    /// send tasks not back in the layer's pool. Returns whether the client is IDLE now (else
    /// it is STOPPING until progress ends it).
    pub fn stop(&self, face: &impl Face, tasks_outstanding: usize) -> Result<bool> {
        let phase = std::mem::replace(&mut *self.phase.borrow_mut(), Phase::Idle);
        match phase {
            Phase::Connected(conn) => {
                if let Err(e) = conn.require_no_fast_path("stopping the client") {
                    *self.phase.borrow_mut() = Phase::Connected(conn);
                    return Err(e);
                }
                let _ = conn.sock.send(&[&[proto::TAG_BYE]], &[]);
                conn.close();
                self.ep.end_pending(&conn, true);
                *self.closed.borrow_mut() = Some(conn);
            }
            Phase::Handshaking(sock) => face.unwatch(sock.fd()),
            Phase::Connecting | Phase::Idle => {}
        }
        if tasks_outstanding == 0 && !self.ep.has_done() {
            self.finish_stop(face);
            return Ok(true);
        }
        face.transition(CtxState::Stopping);
        Ok(false)
    }

    /// After a progress pass of a STOPPING client whose tasks are all back: IDLE once every
    /// send's completion is reported.
    pub fn try_finish_stop(&self, face: &impl Face) {
        if !self.ep.has_done() {
            self.finish_stop(face)
        }
    }

    /// Whether a progress pass has something to report now. Arms the connection on the way:
    /// the server wakes this engine from now on.
    pub fn has_pending(&self) -> bool {
        let armed = self.connection().is_some_and(|conn| self.ep.arm(&conn));
        armed || self.ep.has_done()
    }
}
