//! One client ↔ server connection (`struct doca_comch_connection`): its socket, its control
//! rings (dpakit_wire::ctrl_ring: control messages travel through shared memory once both
//! sides mapped them), user data, statistics, and the sends waiting for room.

use super::Done;
use crate::error::{ErrorCode, Result, bail};
use crate::limits::COMCH_PEER_STALL_TIMEOUT_MS;
use dpakit_wire::SeqPacket;
use dpakit_wire::ctrl_ring::{CtrlReceiver, CtrlSender, Pushed, depth_for};
use dpakit_wire::fast_path::ConnShared;
use dpakit_wire::proto::{self, TAG_CTRL_RING_ACK, TAG_DATA, TAG_WAKE};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::c_void;
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where a connection is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnState {
    /// Up: control messages flow.
    Connected,
    /// Disconnected (by either side, or the peer died); the handle lives until its owner has
    /// told the program.
    Closed,
}

/// Which way a control message went.
#[derive(Clone, Copy)]
enum Via {
    Socket,
    Ring,
}

/// A send waiting for room in the socket or the peer's ring: task index, message.
struct Waiting {
    index: u32,
    msg: *const u8,
    len: usize,
}

/// A `struct doca_comch_connection`.
pub struct Connection {
    /// What the layer above calls the server or client that owns it (the C API: its handle).
    pub owner: *mut c_void,
    /// What the layer above calls this connection (the C API: its handle), once it has one.
    pub handle: Cell<*mut c_void>,
    /// A server's connection (else a client's).
    pub is_server: bool,
    pub(crate) sock: SeqPacket,
    state: Cell<ConnState>,
    /// Its end was reported to the layer above (once: a connection a callback disconnected
    /// may also be found closed by its peer in the same pass).
    ended: Cell<bool>,
    /// `doca_comch_connection_{set,get}_user_data`, as the 8 bytes of `doca_data`.
    pub user_data: Cell<u64>,
    /// What producers and consumers on other threads share with the connection (among it,
    /// how many exist: the connection cannot disconnect while any do).
    pub(crate) shared: Arc<ConnShared>,
    waiting: RefCell<VecDeque<Waiting>>,
    /// This side's control ring, once announced; read from once the peer acknowledged it
    /// (`rx_active`), since everything it sent on the socket before that comes first.
    rx: RefCell<Option<CtrlReceiver>>,
    rx_active: Cell<bool>,
    /// The peer's control ring, once mapped and acknowledged: sends go there, not the socket.
    tx: RefCell<Option<CtrlSender>>,
    /// Sends in the peer's ring not taken yet (task indices, oldest first): a send completes
    /// once the peer took its message ("delivered to the remote side"), which also bounds
    /// what one side can have in flight by its send tasks. `ring_done` counts those completed.
    ring_sent: RefCell<VecDeque<u32>>,
    ring_done: Cell<u64>,
    /// A ring the peer announced while sends waited for the socket (or the acknowledgement
    /// could not be sent yet): taken up once they are out, so order holds.
    tx_offer: RefCell<Option<(OwnedFd, u64, u64)>>,
    /// The max message size both sides agreed on in the handshake: the rings' slot size.
    max_msg: Cell<u32>,
    /// Sends the peer has let through so far (written to its socket, or taken from its ring),
    /// and, while sends are outstanding, that count and when it was last seen to move: a peer
    /// that takes nothing for [`COMCH_PEER_STALL_TIMEOUT_MS`] loses the connection.
    moved: Cell<u64>,
    stall: Cell<Option<(u64, Instant)>>,
    /// The connection was dropped because its peer stalled: what was outstanding fails with
    /// `CONNECTION_ABORTED`.
    aborted: Cell<bool>,
    /// Sent messages, sent bytes, received messages, received bytes: live, and as of the last
    /// `doca_comch_connection_update_info`.
    live: [Cell<u64>; 4],
    shown: [Cell<u64>; 4],
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("is_server", &self.is_server)
            .field("state", &self.state.get())
            .finish()
    }
}

impl Connection {
    /// A connection over `sock` owned by `owner`; room for `max_waiting` sends.
    pub(crate) fn new(
        owner: *mut c_void,
        is_server: bool,
        sock: SeqPacket,
        max_waiting: usize,
    ) -> Result<Rc<Self>> {
        let shared = ConnShared::new(&sock)?;
        Ok(Rc::new(Connection {
            owner,
            handle: Cell::new(std::ptr::null_mut()),
            is_server,
            shared,
            sock,
            state: Cell::new(ConnState::Connected),
            ended: Cell::new(false),
            user_data: Cell::new(0),
            waiting: RefCell::new(VecDeque::with_capacity(max_waiting)),
            rx: RefCell::new(None),
            rx_active: Cell::new(false),
            tx: RefCell::new(None),
            tx_offer: RefCell::new(None),
            ring_sent: RefCell::new(VecDeque::new()),
            ring_done: Cell::new(0),
            max_msg: Cell::new(0),
            moved: Cell::new(0),
            stall: Cell::new(None),
            aborted: Cell::new(false),
            live: Default::default(),
            shown: Default::default(),
        }))
    }

    /// Marks the connection's end as reported; false if it was already.
    pub(crate) fn end(&self) -> bool {
        !self.ended.replace(true)
    }

    /// Whether it is connected or closed.
    pub fn state(&self) -> ConnState {
        self.state.get()
    }

    /// `doca_comch_connection_update_info`: takes a snapshot of the counters;
    /// `CONNECTION_ABORTED` once the connection is closed.
    pub fn update_info(&self) -> Result<()> {
        if self.state.get() != ConnState::Connected {
            bail!(ConnectionAborted, "the connection is closed");
        }
        for (shown, live) in self.shown.iter().zip(&self.live) {
            shown.set(live.get());
        }
        Ok(())
    }

    /// `doca_comch_connection_get_counter`: counter `counter_type` (DOCA's numbering, 1 sent
    /// messages … 4 received bytes) as of the last update.
    pub fn counter(&self, counter_type: u32) -> Result<u64> {
        let Some(slot) = (counter_type as usize)
            .checked_sub(1)
            .and_then(|i| self.shown.get(i))
        else {
            bail!(
                InvalidValue,
                "counter_type {counter_type} is not a doca_comch_counter (1 sent messages, 2 \
                 sent bytes, 3 received messages, 4 received bytes)"
            );
        };
        Ok(slot.get())
    }

    /// Sends task `index`'s message, or keeps it for [`flush`](Self::flush) when there is no
    /// room (behind any already waiting, so order holds). What finished goes to `done`.
    pub(crate) fn send(&self, index: u32, msg: &[u8], done: &mut Done) {
        let mut waiting = self.waiting.borrow_mut();
        if waiting.is_empty() {
            match self.write(msg) {
                Ok(Some(via)) => {
                    self.count(0, msg.len());
                    self.sent(index, via, done);
                    return;
                }
                Ok(None) => {}
                Err(code) => {
                    done.push_back((index, code));
                    return;
                }
            }
        }
        waiting.push_back(Waiting {
            index,
            msg: msg.as_ptr(),
            len: msg.len(),
        });
    }

    /// One control message: into the peer's ring once there is one, else on the socket.
    /// `Ok(None)` while there is no room.
    fn write(&self, msg: &[u8]) -> Result<Option<Via>, ErrorCode> {
        if let Some(tx) = self.tx.borrow_mut().as_mut() {
            return match tx.push(msg) {
                Ok(Pushed::Sent { wake }) => {
                    if wake {
                        self.wake_peer();
                    }
                    Ok(Some(Via::Ring))
                }
                Ok(Pushed::Full) => Ok(None),
                Err(e) => {
                    self.broken(&e);
                    Err(ErrorCode::ConnectionAborted)
                }
            };
        }
        match self.sock.send(&[&[TAG_DATA], msg], &[]) {
            Ok(true) => Ok(Some(Via::Socket)),
            Ok(false) => Ok(None),
            Err(_) => Err(ErrorCode::NotConnected),
        }
    }

    /// Task `index`'s message is out: a socket send is done, a ring send once the peer takes it
    /// ([`reap`](Self::reap)).
    fn sent(&self, index: u32, via: Via, done: &mut Done) {
        if matches!(via, Via::Socket) {
            self.moved.set(self.moved.get().wrapping_add(1));
        }
        match via {
            Via::Socket => done.push_back((index, ErrorCode::Success)),
            Via::Ring => self.ring_sent.borrow_mut().push_back(index),
        }
    }

    /// Completes the ring sends the peer has taken since the last call.
    pub(crate) fn reap(&self, done: &mut Done) {
        let taken = match self.tx.borrow().as_ref().map(CtrlSender::taken) {
            None => return,
            Some(Ok(taken)) => taken,
            Some(Err(e)) => {
                self.broken(&e);
                return;
            }
        };
        let mut sent = self.ring_sent.borrow_mut();
        while self.ring_done.get() != taken {
            let Some(index) = sent.pop_front() else { break };
            self.ring_done.set(self.ring_done.get().wrapping_add(1));
            self.moved.set(self.moved.get().wrapping_add(1));
            done.push_back((index, ErrorCode::Success));
        }
    }

    /// Sends submitted on this connection and not completed: in the peer's ring, or waiting
    /// for room.
    pub(crate) fn outstanding(&self) -> usize {
        self.ring_sent.borrow().len() + self.waiting.borrow().len()
    }

    /// Whether the peer has taken nothing for [`COMCH_PEER_STALL_TIMEOUT_MS`] while sends to
    /// it were outstanding (`now`: the pass's clock). Then the connection is to be dropped
    /// ([`abort`](Self::abort)).
    pub(crate) fn stalled(&self, now: Instant) -> bool {
        if self.outstanding() == 0 {
            self.stall.set(None);
            return false;
        }
        let moved = self.moved.get();
        match self.stall.get() {
            Some((seen, since)) if seen == moved => {
                now.saturating_duration_since(since)
                    >= Duration::from_millis(COMCH_PEER_STALL_TIMEOUT_MS)
            }
            _ => {
                self.stall.set(Some((moved, now)));
                false
            }
        }
    }

    /// Drops a connection whose peer stalled: the reason is reported and kept as the last
    /// error, the socket shut (the peer sees a disconnection), and what was outstanding fails
    /// with `CONNECTION_ABORTED` when the owner ends the connection.
    pub(crate) fn abort(&self) {
        let role = if self.is_server { "server" } else { "client" };
        let e = crate::error::err(
            ErrorCode::ConnectionAborted,
            format!(
                "the peer took none of the {} message(s) sent to it for \
                 {COMCH_PEER_STALL_TIMEOUT_MS} ms (COMCH_PEER_STALL_TIMEOUT_MS): the connection \
                 is dropped and its sends fail",
                self.outstanding()
            ),
        );
        crate::error::report(&format!("comch {role}"), &e);
        self.aborted.set(true);
        self.sock.shutdown();
    }

    /// Tells the peer to look at a ring. Never waits: a full socket already holds a wake-up.
    pub(crate) fn wake_peer(&self) {
        let _ = self.sock.send(&[&[TAG_WAKE]], &[]);
    }

    /// The peer broke the control-ring protocol: the connection ends (its owner sees the
    /// socket closed at its next progress and drops it, as for the other violations).
    fn broken(&self, e: &crate::error::Error) {
        let role = if self.is_server { "server" } else { "client" };
        report_violation(role, e.message());
        self.sock.shutdown();
    }

    /// Writes waiting sends while there is room, then takes up a ring the peer announced
    /// meanwhile.
    pub(crate) fn flush(&self, done: &mut Done) {
        let mut waiting = self.waiting.borrow_mut();
        while let Some(w) = waiting.front() {
            let msg = if w.len == 0 {
                &[][..]
            } else {
                // SAFETY: the program keeps a submitted message valid until its task completes.
                unsafe { std::slice::from_raw_parts(w.msg, w.len) }
            };
            match self.write(msg) {
                Ok(Some(via)) => {
                    self.count(0, msg.len());
                    self.sent(w.index, via, done);
                    waiting.pop_front();
                }
                Ok(None) => return,
                Err(_) => {
                    drop(waiting);
                    self.end_pending(false, done);
                    return;
                }
            }
        }
        drop(waiting);
        self.take_offer();
    }

    /// Whether [`flush`](Self::flush) has anything to do.
    pub(crate) fn needs_flush(&self) -> bool {
        !self.waiting.borrow().is_empty() || self.tx_offer.borrow().is_some()
    }

    /// Lays out this side's control ring (`recv_queue_size` deep, rounded up, for messages of
    /// the agreed `max_msg_size`) and announces it. Without room to announce it, or memory,
    /// the peer keeps sending on the socket.
    pub(crate) fn offer_ring(&self, recv_queue_size: u32, max_msg_size: u32) {
        self.max_msg.set(max_msg_size);
        let depth = depth_for(recv_queue_size);
        let Ok((rx, fd, len)) = CtrlReceiver::create(depth, max_msg_size as usize) else {
            return;
        };
        let msg = proto::ctrl_ring(depth, len);
        if matches!(self.sock.send(&[&msg], &[fd.as_raw_fd()]), Ok(true)) {
            *self.rx.borrow_mut() = Some(rx);
        }
    }

    /// The peer announced its ring (`fd`, `depth` slots, `ring_len` bytes): mapped and
    /// acknowledged now, or once the sends waiting on the socket are out. `INVALID_VALUE` (a
    /// violation) for a second announcement or a ring that is not what was agreed.
    pub(crate) fn peer_ring(&self, fd: OwnedFd, depth: u64, ring_len: u64) -> Result<()> {
        if self.tx.borrow().is_some() || self.tx_offer.borrow().is_some() {
            bail!(InvalidValue, "the peer announced a second control ring");
        }
        *self.tx_offer.borrow_mut() = Some((fd, depth, ring_len));
        if self.waiting.borrow().is_empty() {
            return self.take_offer_checked();
        }
        Ok(())
    }

    fn take_offer(&self) {
        if let Err(e) = self.take_offer_checked() {
            self.broken(&e);
        }
    }

    /// Maps the announced ring and acknowledges it; from the acknowledgement on, sends go into
    /// the ring. Keeps the offer while the socket has no room for the acknowledgement.
    fn take_offer_checked(&self) -> Result<()> {
        let Some((fd, depth, ring_len)) = self.tx_offer.borrow_mut().take() else {
            return Ok(());
        };
        let max_msg = self.max_msg.get() as usize;
        let tx = CtrlSender::attach(&fd, depth, ring_len, max_msg)?;
        match self.sock.send(&[&[TAG_CTRL_RING_ACK]], &[]) {
            Ok(true) => {
                // Room for every message the ring can hold: no allocation per send.
                self.ring_sent.borrow_mut().reserve(depth as usize);
                *self.tx.borrow_mut() = Some(tx);
            }
            Ok(false) => *self.tx_offer.borrow_mut() = Some((fd, depth, ring_len)),
            Err(_) => {}
        }
        Ok(())
    }

    /// The peer mapped this side's ring: read from it from now on. `INVALID_VALUE` (a
    /// violation) if there is none to acknowledge.
    pub(crate) fn ring_acknowledged(&self) -> Result<()> {
        if self.rx.borrow().is_none() || self.rx_active.get() {
            bail!(
                InvalidValue,
                "the peer acknowledged a control ring this side did not announce"
            );
        }
        self.rx_active.set(true);
        Ok(())
    }

    /// Whether control messages arrive through the ring (then none may come on the socket).
    pub(crate) fn rx_active(&self) -> bool {
        self.rx_active.get()
    }

    /// Whether both directions go through rings and nothing waits: the socket then carries
    /// only wake-ups, disconnections and fast-path announcements, and is looked at less often.
    pub(crate) fn on_rings(&self) -> bool {
        self.rx_active.get() && self.tx.borrow().is_some() && !self.needs_flush()
    }

    /// Takes the next message of this side's ring into `buf`: its length, `None` when empty
    /// (or not in use yet), `INVALID_VALUE` when the peer broke the protocol.
    pub(crate) fn pop(&self, buf: &mut [u8]) -> Result<Option<usize>> {
        if !self.rx_active.get() {
            return Ok(None);
        }
        match self.rx.borrow_mut().as_mut() {
            Some(rx) => rx.pop(buf),
            None => Ok(None),
        }
    }

    /// After taking messages from this side's ring: wakes a sender that waits for room.
    pub(crate) fn after_pops(&self) {
        let waiting = self
            .rx
            .borrow()
            .as_ref()
            .is_some_and(|rx| rx.sender_waiting());
        if waiting {
            self.wake_peer();
        }
    }

    /// Before the owner's progress engine sleeps: the peer wakes it from now on, when it sends
    /// and, with sends in its ring, when it takes them. Whether either happened already.
    pub(crate) fn sleep(&self) -> bool {
        let arrived =
            self.rx_active.get() && self.rx.borrow_mut().as_mut().is_some_and(|rx| rx.sleep());
        let taken = !self.ring_sent.borrow().is_empty()
            && self
                .tx
                .borrow()
                .as_ref()
                .is_some_and(|tx| tx.sleep_until_taken(self.ring_done.get()));
        arrived | taken
    }

    /// The owner runs again.
    pub(crate) fn awake(&self) {
        if let Some(rx) = self.rx.borrow_mut().as_mut() {
            rx.awake();
        }
    }

    /// Ends every send not completed: what the peer took from the ring is delivered; the rest
    /// of the ring is delivered too when this side closes in order (`ours`: the peer empties the
    /// ring before it acts on the close, as it reads a socket to its end) and fails with
    /// `CONNECTION_RESET` when the peer went; sends still waiting for room fail either way.
    pub(crate) fn end_pending(&self, ours: bool, done: &mut Done) {
        self.reap(done);
        let reset = if self.aborted.get() {
            ErrorCode::ConnectionAborted
        } else {
            ErrorCode::ConnectionReset
        };
        let in_ring = if ours { ErrorCode::Success } else { reset };
        // Ring sends first: they were out before the waiting ones.
        done.extend(self.ring_sent.borrow_mut().drain(..).map(|i| (i, in_ring)));
        done.extend(
            self.waiting
                .borrow_mut()
                .drain(..)
                .map(|w| (w.index, reset)),
        );
    }

    /// Marks the connection closed and shuts the socket, so the peer sees it at once.
    pub(crate) fn close(&self) {
        self.state.set(ConnState::Closed);
        self.sock.shutdown();
        self.shared.close();
    }

    /// IN_USE while producers or consumers exist on the connection; else seals it, so none can
    /// be created while `what` goes on (undo with [`unseal`](Self::unseal) if it fails).
    pub(crate) fn require_no_fast_path(&self, what: &str) -> Result<()> {
        match self.shared.endpoints.seal_if_unused() {
            Ok(()) => Ok(()),
            Err(n) => bail!(
                InUse,
                "{n} producer(s)/consumer(s) exist on the connection: stop and destroy them \
                 before {what}"
            ),
        }
    }

    /// Lets endpoints be created again after a takedown that did not happen.
    pub(crate) fn unseal(&self) {
        if self.state.get() != ConnState::Closed {
            self.shared.endpoints.unseal();
        }
    }

    fn count(&self, first: usize, bytes: usize) {
        self.live[first].set(self.live[first].get() + 1);
        self.live[first + 1].set(self.live[first + 1].get() + bytes as u64);
    }

    pub(crate) fn count_recv(&self, bytes: usize) {
        self.count(2, bytes);
    }
}

/// Reports that the peer of a Comch `role` ("server" or "client") broke the protocol and is
/// dropped, with `why`, kept as the last error.
pub(crate) fn report_violation(role: &str, why: &str) {
    let e = crate::error::err(
        ErrorCode::InvalidValue,
        format!("the peer broke the protocol, the connection is dropped: {why}"),
    );
    crate::error::report(&format!("comch {role}"), &e);
}
