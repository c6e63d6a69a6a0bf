//! `doca_comch_client`: on the host side, connects to the server of a name on its own PCI
//! function. `doca_ctx_start` answers `IN_PROGRESS`; progress keeps trying until the server is
//! there and the handshake is done, and the state callback reports RUNNING.

use super::comch::{Endpoint, Flow, check_name};
use super::connection::{self, ConnObj, ConnState, connection};
use super::context::{Context, CtxCore};
use super::registry::{self, Kind, Object};
use super::types::*;
use super::{c_str, call, call_value, out};
use crate::ctx::CtxState;
use crate::error::{ErrorCode, Result, bail, err};
use dpakit_wire::proto::{self, Message};
use dpakit_wire::{self as wire, Connect, Recv, SeqPacket};
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_void};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
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
    /// Established: the connection's handle.
    Connected(*mut c_void),
}

/// A `struct doca_comch_client`.
pub(crate) struct ClientObj {
    pub ep: Endpoint,
    /// The client's PCI function: servers for it are the ones it can reach.
    function: String,
    path: PathBuf,
    phase: RefCell<Phase>,
    /// Periodic timer that wakes a sleeping PE while connecting.
    timer: RefCell<Option<OwnedFd>>,
    /// The connection after it closed, until the stop completes.
    closed: Cell<*mut c_void>,
}

impl Object for ClientObj {
    const KIND: Kind = Kind::ComchClient;
}

pub(crate) fn client<'a>(ptr: *const doca_comch_client, param: &str) -> Result<&'a ClientObj> {
    registry::get::<ClientObj>(ptr.cast(), param)
}

impl ClientObj {
    /// A client's one connection has its send tasks to itself.
    pub(crate) fn sharing_send_tasks(&self) -> Option<usize> {
        None
    }

    fn pe(&self) -> Option<&super::pe::PeObj> {
        super::pe::pe(self.ep.core.pe.get().cast(), "pe").ok()
    }

    fn stop_timer(&self) {
        if let Some(t) = self.timer.borrow_mut().take() {
            if let Some(pe) = self.pe() {
                pe.pe.unwatch_fd(t.as_raw_fd());
            }
        }
    }

    /// Consumes the timer's expirations (it stays readable until read).
    fn drain_timer(&self) -> bool {
        let timer = self.timer.borrow();
        let Some(t) = timer.as_ref() else {
            return false;
        };
        wire::drain_timer(t.as_raw_fd())
    }

    /// One attempt to reach the server.
    fn try_connect(&self) -> Result<()> {
        match SeqPacket::connect(&self.path)? {
            Connect::Connected(sock) => {
                let hello = proto::hello(self.ep.max_msg_size.get(), &self.function, &self.ep.name);
                if !sock.send(&[&hello], &[])? {
                    return Ok(());
                }
                if let Some(pe) = self.pe() {
                    pe.pe.watch_fd(sock.fd())?;
                }
                *self.phase.borrow_mut() = Phase::Handshaking(sock);
            }
            Connect::Stale => wire::remove_stale(&self.path),
            Connect::Absent | Connect::Busy => {}
        }
        Ok(())
    }

    /// Reads the server's answer to HELLO.
    fn answer(&self) -> usize {
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
            return self.established(sock);
        };
        super::report(&format!("comch client `{}`", self.ep.name), &e);
        drop(sock);
        self.stop_timer();
        *self.phase.borrow_mut() = Phase::Idle;
        if let Some(pe) = self.pe() {
            pe.polling(false);
        }
        self.ep.core.transition(CtxState::Idle);
        1
    }

    /// The handshake succeeded: the socket (watched by the PE since it connected) becomes the
    /// connection's.
    fn established(&self, sock: SeqPacket) -> usize {
        let max_waiting = self.ep.tasks.len();
        let handle = match ConnObj::register(self.ep.core.handle.get(), false, sock, max_waiting) {
            Ok(h) => h,
            Err(e) => {
                super::note("comch client", &e);
                return 0;
            }
        };
        if let Ok(conn) = connection(handle.cast(), "connection") {
            self.ep.offer_ring(conn);
        }
        self.stop_timer();
        *self.phase.borrow_mut() = Phase::Connected(handle);
        self.ep.core.transition(CtxState::Running);
        1
    }

    /// The server disconnected or died: waiting sends fail and the client stops.
    fn lost(&self, handle: *mut c_void) -> usize {
        if let Ok(conn) = connection(handle.cast(), "connection") {
            conn.close();
            self.ep.end_pending(conn, false);
        }
        self.closed.set(handle);
        *self.phase.borrow_mut() = Phase::Idle;
        if self.ep.core.state() == CtxState::Running {
            self.ep.core.transition(CtxState::Stopping);
        }
        1
    }

    fn poll_once(&self) -> usize {
        // Sends the server took complete first, so their tasks are free for the callbacks of
        // what arrives in this pass.
        if let Phase::Connected(h) = &*self.phase.borrow() {
            if let Ok(conn) = connection(h.cast(), "connection") {
                self.ep.reap(conn);
            }
        }
        let mut n = self.ep.run_done();
        let connected = match &*self.phase.borrow() {
            Phase::Idle => None,
            Phase::Connecting => Some(None),
            Phase::Handshaking(_) => Some(Some(std::ptr::null_mut())),
            Phase::Connected(h) => Some(Some(*h)),
        };
        match connected {
            None => {}
            Some(None) => {
                self.drain_timer();
                if let Err(e) = self.try_connect() {
                    super::note("comch client connect", &e);
                }
                n += self.answer();
            }
            Some(Some(h)) if h.is_null() => {
                self.drain_timer();
                n += self.answer();
            }
            Some(Some(h)) => {
                if let Ok(conn) = connection(h.cast(), "connection") {
                    let woke = self.ep.woke();
                    if woke {
                        conn.awake();
                    }
                    // The ring at every pass, the socket only when due: a busy pass over rings
                    // makes no system call.
                    let (mut got, mut flow) =
                        self.ep.receive_ring(h, conn, self.ep.recv_queue_size.get());
                    if flow == Flow::Open && self.ep.socket_due(conn.on_rings(), woke) {
                        let (more, then) = self.ep.receive(h, conn);
                        (got, flow) = (got + more, then);
                        // The server took nothing for the stall time: the connection goes.
                        if flow == Flow::Open && conn.stalled(Instant::now()) {
                            conn.abort();
                            flow = Flow::Closed;
                        }
                    }
                    n += got;
                    // A callback may have stopped the client (and even started it again): the
                    // rest of the pass is for the connection it still has, if any.
                    if !self.connected_to(h) {
                        return n + self.ep.run_done();
                    }
                    if flow == Flow::Closed || conn.state.get() != ConnState::Connected {
                        n += self.lost(h);
                    } else {
                        if conn.needs_flush() {
                            self.ep.flush(conn);
                        }
                        conn.shared.flush_unsent();
                    }
                }
            }
        }
        n + self.ep.run_done()
    }

    /// Whether the client is connected through connection `h`.
    fn connected_to(&self, h: *mut c_void) -> bool {
        matches!(*self.phase.borrow(), Phase::Connected(c) if c == h)
    }

    fn finish_stop(&self) {
        let closed = self.closed.replace(std::ptr::null_mut());
        if let Ok(conn) = connection(closed.cast(), "connection") {
            if let Some(pe) = self.pe() {
                pe.pe.unwatch_fd(conn.sock.fd());
            }
            connection::unregister(closed);
        }
        self.stop_timer();
        *self.phase.borrow_mut() = Phase::Idle;
        if let Some(pe) = self.pe() {
            pe.polling(false);
        }
        self.ep.core.transition(CtxState::Idle);
    }
}

impl Context for ClientObj {
    fn core(&self) -> &CtxCore {
        &self.ep.core
    }

    fn start(&self) -> Result<bool> {
        let pe = self.ep.prepare_start()?;
        let timer = wire::periodic_timer(RETRY)?;
        pe.pe.watch_fd(timer.as_raw_fd())?;
        *self.timer.borrow_mut() = Some(timer);
        pe.polling(true);
        *self.phase.borrow_mut() = Phase::Connecting;
        self.ep.core.transition(CtxState::Starting);
        Ok(false)
    }

    fn stop(&self) -> Result<bool> {
        let phase = std::mem::replace(&mut *self.phase.borrow_mut(), Phase::Idle);
        match phase {
            Phase::Connected(h) => {
                let conn = connection(h.cast(), "connection")?;
                if let Err(e) = conn.require_no_fast_path("stopping the client") {
                    *self.phase.borrow_mut() = Phase::Connected(h);
                    return Err(e);
                }
                let _ = conn.sock.send(&[&[proto::TAG_BYE]], &[]);
                conn.close();
                self.ep.end_pending(conn, true);
                self.closed.set(h);
            }
            Phase::Handshaking(sock) => {
                if let Some(pe) = self.pe() {
                    pe.pe.unwatch_fd(sock.fd());
                }
            }
            Phase::Connecting | Phase::Idle => {}
        }
        if self.ep.tasks.outstanding() == 0 && !self.ep.has_done() {
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
        // Armed: the server wakes this engine from now on.
        let armed = match &*self.phase.borrow() {
            Phase::Connected(h) => connection(h.cast(), "connection").is_ok_and(|c| self.ep.arm(c)),
            _ => false,
        };
        armed || self.ep.has_done()
    }

    fn after_progress(&self) -> usize {
        let ep = &self.ep;
        ep.tasks.after_progress(
            &ep.core,
            |index, status| ep.complete(index, status),
            || {
                if !ep.has_done() {
                    self.finish_stop()
                }
            },
        )
    }
}

/// `doca_comch_client_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_client_create(
    dev: *mut doca_dev,
    name: *const c_char,
    comch_client: *mut *mut doca_comch_client,
) -> doca_error_t {
    call("doca_comch_client_create", || {
        let d = super::dev::dev(dev, "dev")?;
        // SAFETY: a NUL-terminated string by the C contract (checked non-null).
        let name = unsafe { c_str(name, "name") }?;
        super::non_null(comch_client, "comch_client")?;
        d.dev.as_devinfo().comch_cap_client_is_supported()?;
        check_name(name)?;
        let function = d.dev.as_devinfo().get_pci_addr_str();
        let path = wire::server_path(&function, name)?;
        crate::capi::context::register_view::<ClientObj>(registry::Kind::ComchClient);
        let handle = registry::register(Box::new(ClientObj {
            ep: Endpoint::new("client", dev.cast(), name.to_owned()),
            function,
            path,
            phase: RefCell::new(Phase::Idle),
            timer: RefCell::new(None),
            closed: Cell::new(std::ptr::null_mut()),
        }))?;
        client(handle.cast(), "client")?.ep.core.handle.set(handle);
        d.users.hold();
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(comch_client, "comch_client", handle.cast()) }
    })
}

/// `doca_comch_client_destroy`: the context must be IDLE.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_client_destroy(
    comch_client: *mut doca_comch_client,
) -> doca_error_t {
    call("doca_comch_client_destroy", || {
        let c = client(comch_client, "comch_client")?;
        c.ep.core.require_idle("destroy the client")?;
        if let Some(pe) = c.pe() {
            pe.disconnect(c.ep.core.handle.get());
        }
        if let Ok(d) = super::dev::dev(c.ep.dev.cast(), "dev") {
            d.users.release();
        }
        c.ep.tasks.release();
        registry::retire::<ClientObj>(comch_client.cast());
        Ok(())
    })
}

/// `doca_comch_client_as_ctx`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_client_as_ctx(
    comch_client: *mut doca_comch_client,
) -> *mut doca_ctx {
    call_value("doca_comch_client_as_ctx", std::ptr::null_mut(), || {
        client(comch_client, "comch_client")?;
        Ok(comch_client.cast())
    })
}

/// `doca_comch_client_get_connection`: `BAD_STATE` until the client runs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_client_get_connection(
    comch_client: *const doca_comch_client,
    connection: *mut *mut doca_comch_connection,
) -> doca_error_t {
    call("doca_comch_client_get_connection", || {
        let c = client(comch_client, "comch_client")?;
        let Phase::Connected(h) = *c.phase.borrow() else {
            bail!(
                BadState,
                "the client is {}: it has a connection once RUNNING",
                c.ep.core.state()
            );
        };
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(connection, "connection", h.cast()) }
    })
}

super::comch_api::endpoint_functions! {
    object: doca_comch_client, param: comch_client, get: client,
    set_max_msg_size: doca_comch_client_set_max_msg_size,
    set_recv_queue_size: doca_comch_client_set_recv_queue_size,
    get_max_msg_size: doca_comch_client_get_max_msg_size,
    get_recv_queue_size: doca_comch_client_get_recv_queue_size,
    get_device: doca_comch_client_get_device,
    task_send_set_conf: doca_comch_client_task_send_set_conf,
    task_send_alloc_init: doca_comch_client_task_send_alloc_init,
    event_msg_recv_register: doca_comch_client_event_msg_recv_register,
    event_consumer_register: doca_comch_client_event_consumer_register,
}
