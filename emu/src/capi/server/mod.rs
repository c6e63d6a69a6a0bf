//! `doca_comch_server`: listens on the Arm side under a name, for clients on the host function
//! its representor stands for; accepts, handshakes and serves their connections.

use super::comch::{Endpoint, Flow, check_name};
use super::connection::{self, ConnObj, ConnState, connection};
use super::context::{Context, CtxCore};
use super::dev::DevRepObj;
use super::registry::{self, Kind, Object};
use super::types::*;
use super::{c_str, call, call_value, out};
use crate::ctx::CtxState;
use crate::error::{ErrorCode, Result, bail, err};
use crate::limits::{COMCH_HANDSHAKE_TIMEOUT_MS, COMCH_MAX_CLIENTS, COMCH_MAX_PENDING_HANDSHAKES};
use dpakit_wire::proto::{self, Message};
use dpakit_wire::{self as wire, Listener, Poller, Recv, SeqPacket};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::{c_char, c_void};
use std::time::{Duration, Instant};

/// Poller token of the listening socket.
const LISTENER: u64 = u64::MAX;
/// Poller tokens of accepted sockets still in their handshake: this bit and the descriptor.
const HANDSHAKE: u64 = 1 << 62;
/// Connections accepted per progress pass at most; the rest wait in the backlog.
const ACCEPTS_PER_PASS: usize = 64;

/// Connection-event callbacks.
#[derive(Clone, Copy, Default)]
struct ConnCbs {
    connected: doca_comch_event_connection_status_changed_cb_t,
    disconnected: doca_comch_event_connection_status_changed_cb_t,
}

/// A `struct doca_comch_server`.
pub(crate) struct ServerObj {
    pub ep: Endpoint,
    rep: *mut c_void,
    /// The host function (PCI address) its representor stands for: its clients' function.
    function: String,
    listener: Listener,
    poller: Poller,
    conn_cbs: Cell<ConnCbs>,
    /// Established connections (handles).
    conns: RefCell<Vec<*mut c_void>>,
    /// Accepted sockets waiting for their HELLO, oldest first, with when they were accepted.
    handshakes: RefCell<VecDeque<(SeqPacket, Instant)>>,
    /// Connections closed by this side, whose disconnect callback runs at the next progress.
    closing: RefCell<Vec<*mut c_void>>,
}

impl Object for ServerObj {
    const KIND: Kind = Kind::ComchServer;
}

pub(crate) fn server<'a>(ptr: *const doca_comch_server, param: &str) -> Result<&'a ServerObj> {
    registry::get::<ServerObj>(ptr.cast(), param)
}

impl ServerObj {
    /// The connections that share the send tasks (see `Endpoint::require_share`).
    pub(crate) fn sharing_send_tasks(&self) -> Option<usize> {
        Some(self.conns.borrow().len())
    }

    fn pe(&self) -> Option<&super::pe::PeObj> {
        super::pe::pe(self.ep.core.pe.get().cast(), "pe").ok()
    }

    /// Accepts what waits in the backlog (a bounded number per pass, so a flood of
    /// connections cannot hold the progress call) and reads each one's HELLO if it came with
    /// the connection, as a client's does.
    fn accept(&self) -> Result<usize> {
        // SAFETY: getuid cannot fail.
        let me = unsafe { libc::getuid() };
        let mut n = 0;
        for _ in 0..ACCEPTS_PER_PASS {
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
            n += self.handshake(fd);
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
    fn handshake(&self, fd: i32) -> usize {
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
            Ok(()) => self.establish(sock),
            Err(e) => {
                let _ = sock.send(&[&proto::refuse(e.code().raw(), e.message())], &[]);
                super::report(
                    &format!("comch server `{}`", self.ep.name),
                    &err(e.code(), format!("refused a client: {}", e.message())),
                );
                // A client that reached the server with a valid HELLO learns of it through a
                // failed connection event.
                if let Ok(handle) = ConnObj::register(self.ep.core.handle.get(), true, sock, 0) {
                    self.connection_event(handle, true, false);
                    connection::unregister(handle);
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
        if name != self.ep.name {
            bail!(NotFound, "this server is `{}`, not `{name}`", self.ep.name);
        }
        if function != self.function {
            bail!(
                NotPermitted,
                "the server's representor stands for PCI function {}; a client on {function} \
                 cannot connect to it",
                self.function
            );
        }
        if max_msg_size != self.ep.max_msg_size.get() {
            bail!(
                BadConfig,
                "max message size mismatch: the client uses {max_msg_size} bytes and the server \
                 {} (doca_comch_{{server,client}}_set_max_msg_size must agree)",
                self.ep.max_msg_size.get()
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

    fn establish(&self, sock: SeqPacket) -> usize {
        if !matches!(sock.send(&[&[proto::TAG_WELCOME]], &[]), Ok(true)) {
            return 0;
        }
        let max_waiting = self.ep.tasks.len();
        let Ok(handle) = ConnObj::register(self.ep.core.handle.get(), true, sock, max_waiting)
        else {
            return 0;
        };
        let fd = connection(handle.cast(), "connection").map(|c| c.sock.fd());
        if fd
            .and_then(|fd| self.poller.add(fd, handle as u64))
            .is_err()
        {
            connection::unregister(handle);
            return 0;
        }
        if let Ok(conn) = connection(handle.cast(), "connection") {
            self.ep.offer_ring(conn);
        }
        self.conns.borrow_mut().push(handle);
        self.connection_event(handle, true, true);
        1
    }

    fn connection_event(&self, handle: *mut c_void, connected: bool, ok: bool) {
        let cbs = self.conn_cbs.get();
        let cb = if connected {
            cbs.connected
        } else {
            cbs.disconnected
        };
        if let Some(cb) = cb {
            debug_assert!(crate::capi::registry::in_callback_frame());
            // SAFETY: the program's callback; the connection handle is live during the call.
            unsafe {
                cb(
                    self.ep.core.handle.get().cast(),
                    handle.cast(),
                    u8::from(ok),
                )
            };
        }
    }

    /// Ends connection `handle`: sends not completed end (`ours`: this side closed it in
    /// order, see [`ConnObj::end_pending`]), the program hears of it, the handle goes.
    fn drop_connection(&self, handle: *mut c_void, ours: bool) -> usize {
        self.conns.borrow_mut().retain(|&h| h != handle);
        let Ok(conn) = connection(handle.cast(), "connection") else {
            return 0;
        };
        self.poller.remove(conn.sock.fd());
        conn.close();
        self.ep.end_pending(conn, ours);
        self.connection_event(handle, false, true);
        connection::unregister(handle);
        1
    }

    /// One progress pass while starting, running or stopping.
    fn poll_once(&self) -> usize {
        // Sends the peers took complete first, so their tasks are free for the callbacks of
        // what arrives in this pass.
        let mut i = 0;
        while let Some(h) = self.conn_at(i) {
            i += 1;
            if let Ok(conn) = connection(h.cast(), "connection") {
                self.ep.reap(conn);
            }
        }
        let mut n = self.ep.run_done();
        if self.ep.core.state() == CtxState::Running {
            if !self.handshakes.borrow().is_empty() {
                self.expire_handshakes();
            }
            let woke = self.ep.woke();
            let (got, on_rings) = self.poll_rings(woke);
            n += got;
            let on_rings = on_rings && self.handshakes.borrow().is_empty();
            if self.ep.socket_due(on_rings, woke) {
                n += self.drop_stalled();
                n += self.poll_sockets();
            }
        }
        loop {
            let Some(handle) = self.closing.borrow_mut().pop() else {
                break;
            };
            n += self.drop_connection(handle, true);
        }
        n + self.ep.run_done()
    }

    /// The connection at `i` of the list (callbacks may change the list between two calls).
    fn conn_at(&self, i: usize) -> Option<*mut c_void> {
        self.conns.borrow().get(i).copied()
    }

    /// Every connection's control ring and waiting sends, without a system call (`woke`: the
    /// engine slept since the last pass, so the peers need not wake it any more). Also whether
    /// every connection's control messages go through rings both ways.
    fn poll_rings(&self, woke: bool) -> (usize, bool) {
        let mut n = 0;
        let mut on_rings = true;
        let mut i = 0;
        while let Some(h) = self.conn_at(i) {
            i += 1;
            let Ok(conn) = connection(h.cast(), "connection") else {
                continue;
            };
            if woke {
                conn.awake();
            }
            let (got, flow) = self.ep.receive_ring(h, conn, self.ep.recv_queue_size.get());
            n += got;
            if flow == Flow::Closed {
                // The peer broke the protocol: dropped now (the list shifts down by one).
                n += self.drop_connection(h, false);
                i -= 1;
                continue;
            }
            if conn.needs_flush() {
                self.ep.flush(conn);
            }
            conn.shared.flush_unsent();
            on_rings &= conn.on_rings();
        }
        (n, on_rings)
    }

    /// Drops the connections whose peers took nothing for the stall time while sends to them
    /// were outstanding (looked at when the sockets are: a clock read per pass would cost more
    /// than a ring round trip).
    fn drop_stalled(&self) -> usize {
        let now = Instant::now();
        let mut n = 0;
        let mut i = 0;
        while let Some(h) = self.conn_at(i) {
            i += 1;
            let Ok(conn) = connection(h.cast(), "connection") else {
                continue;
            };
            if conn.stalled(now) {
                conn.abort();
                // The list shifts down by one.
                n += self.drop_connection(h, false);
                i -= 1;
            }
        }
        n
    }

    /// The listener, the handshakes and the connections' sockets the poller says are ready.
    fn poll_sockets(&self) -> usize {
        let mut n = 0;
        let mut tokens = [0u64; 64];
        let ready = self.poller.ready(&mut tokens);
        for &token in &tokens[..ready] {
            if self.ep.core.state() != CtxState::Running {
                // A callback (of this pass, or of the rings' before it) stopped the server: a
                // stopped server accepts nobody; the rest waits for its next start, if any.
                break;
            }
            n += match token {
                LISTENER => self.accept().unwrap_or_else(|e| {
                    super::note("comch server accept", &e);
                    0
                }),
                t if t & HANDSHAKE != 0 => self.handshake((t & !HANDSHAKE) as i32),
                handle => self.serve(handle as *mut c_void),
            };
        }
        n
    }

    fn serve(&self, handle: *mut c_void) -> usize {
        let Ok(conn) = connection(handle.cast(), "connection") else {
            return 0;
        };
        let (n, flow) = self.ep.receive(handle, conn);
        if flow == Flow::Closed {
            return n + self.drop_connection(handle, false);
        }
        n
    }

    fn finish_stop(&self) {
        if let Some(pe) = self.pe() {
            pe.pe.unwatch_fd(self.poller.fd());
            pe.polling(false);
        }
        self.ep.core.transition(CtxState::Idle);
    }

    /// `doca_comch_server_disconnect`.
    fn disconnect(&self, handle: *mut c_void) -> Result<()> {
        let conn = connection(handle.cast(), "connection")?;
        if conn.owner != self.ep.core.handle.get() {
            bail!(InvalidValue, "the connection belongs to another server");
        }
        if conn.state.get() != ConnState::Connected {
            bail!(NotConnected, "the connection is already disconnected");
        }
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
        self.closing.borrow_mut().push(handle);
        Ok(())
    }
}

impl Context for ServerObj {
    fn core(&self) -> &CtxCore {
        &self.ep.core
    }

    fn start(&self) -> Result<bool> {
        if self.conn_cbs.get().connected.is_none() {
            bail!(
                BadState,
                "register connection callbacks before start \
                 (doca_comch_server_event_connection_status_changed_register)"
            );
        }
        let pe = self.ep.prepare_start()?;
        pe.pe.watch_fd(self.poller.fd())?;
        pe.polling(true);
        self.ep.core.transition(CtxState::Running);
        Ok(true)
    }

    fn stop(&self) -> Result<bool> {
        let conns: Vec<_> = self
            .conns
            .borrow()
            .iter()
            .filter_map(|&h| connection(h.cast(), "connection").ok())
            .collect();
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
        for &h in &conns {
            if let Ok(conn) = connection(h.cast(), "connection") {
                let _ = conn.sock.send(&[&[proto::TAG_BYE]], &[]);
                conn.close();
            }
        }
        self.closing.borrow_mut().extend(conns);
        if self.closing.borrow().is_empty() && self.ep.tasks.outstanding() == 0 {
            self.finish_stop();
            return Ok(true);
        }
        self.ep.core.transition(CtxState::Stopping);
        Ok(false)
    }

    fn inflight(&self) -> usize {
        self.ep.tasks.inflight()
    }

    fn poll(&self) -> usize {
        self.poll_once()
    }

    fn has_pending(&self) -> bool {
        // Every connection is armed (no short cut): its peer wakes this engine from now on.
        let mut waiting = false;
        let mut i = 0;
        while let Some(h) = self.conn_at(i) {
            i += 1;
            waiting |= connection(h.cast(), "connection").is_ok_and(|c| self.ep.arm(c));
        }
        waiting || self.ep.has_done() || !self.closing.borrow().is_empty()
    }

    fn after_progress(&self) -> usize {
        let ep = &self.ep;
        ep.tasks.after_progress(
            &ep.core,
            |index, status| ep.complete(index, status),
            || {
                if self.closing.borrow().is_empty() && !ep.has_done() {
                    self.finish_stop()
                }
            },
        )
    }
}

mod api;
pub use api::*;
