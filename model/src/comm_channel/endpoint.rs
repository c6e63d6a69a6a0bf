//! `doca_comm_channel_ep_t`: a service listening under a name (Arm side, one connection per
//! client) or a client connected to one service (host side), and the calls that move messages.
//!
//! Nothing runs in the background: every call makes progress (accepts, handshakes, reads what
//! the sockets hold into the connections' queues, returns credits, aborts stalled peers) before
//! doing its job, and a blocking call waits on the endpoint's own epoll set between attempts.
//!
//! No loop of a call ends only when a peer cooperates: progress makes at most
//! [`COMM_CHANNEL_PASSES_PER_CALL`] passes over the ready sockets, each reading a bounded number
//! of frames per connection; a connection leaves both pollers the moment it fails, whatever
//! failed it (its record stays until the program disconnects it); and a blocking send waits at
//! most until the peer's stall time runs out.

mod service;

use super::peer::{Peer, PeerId, PeerState, PeerStats, Sent};
use super::props::{Mode, Props};
use crate::error::{Error, ErrorCode, Result, err};
use crate::limits::{
    COMM_CHANNEL_MAX_MSG_SIZE, COMM_CHANNEL_MAX_SERVICE_NAME_LEN, COMM_CHANNEL_PASSES_PER_CALL,
    COMM_CHANNEL_PEER_STALL_TIMEOUT_MS,
};
use dpakit_abi::bail;
use dpakit_wire::proto;
use dpakit_wire::{self as wire, Connect, Listener, Poller, SeqPacket};
use service::Service;
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// Poller token of a service's listening socket.
const LISTENER: u64 = u64::MAX;
/// Poller tokens of accepted sockets still in their handshake: this bit and the descriptor.
const HANDSHAKE: u64 = 1 << 62;
/// Poller token of the "something waits" event descriptors.
const READY: u64 = (1 << 62) - 1;
/// Ready descriptors one pass takes from the poller (the most `Poller::ready` reports).
const PASS: usize = 64;
/// Longest a blocking call sleeps before it looks at the clock again (handshake deadlines).
const WAIT_SLICE_MS: i32 = 100;
/// Room for the largest frame: a message and its tag, or a handshake with its two strings.
const SCRATCH: usize = COMM_CHANNEL_MAX_MSG_SIZE + proto::OVERHEAD;

/// What [`Endpoint::recv`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Received {
    /// A message, copied into the caller's buffer.
    Message {
        /// Its length in bytes.
        len: usize,
        /// The connection it came on.
        peer: PeerId,
    },
    /// A connection went to the error state (reported once): disconnect it.
    Reset {
        /// The connection.
        peer: PeerId,
        /// What happened to it.
        error: Error,
    },
}

#[derive(Debug)]
enum Role {
    Idle,
    Service(Service),
    Client,
}

/// The pollable descriptors programs wait on, and the endpoint's own wait set.
#[derive(Debug)]
struct Channels {
    /// Level-triggered: every socket and `recv_ready`. The receive event channel.
    recv: Poller,
    /// Edge-triggered on the connections' sockets (credits coming back), and `send_ready`.
    /// The send event channel.
    send: Poller,
    recv_ready: OwnedFd,
    send_ready: OwnedFd,
}

/// A legacy Comm Channel endpoint.
#[derive(Debug)]
pub struct Endpoint {
    props: Props,
    role: Role,
    peers: Vec<Option<Peer>>,
    generations: Vec<u32>,
    free: Vec<usize>,
    cursor: usize,
    scratch: Box<[u8]>,
    fds: Vec<OwnedFd>,
    channels: Option<Channels>,
    /// How long a peer may leave a send without room before its connection is aborted.
    stall: Duration,
}

/// Sets (`true`) or clears an event descriptor.
fn signal(fd: &OwnedFd, on: bool) {
    let mut value = 1u64;
    // SAFETY: 8 bytes to or from a local; errors (already set, already clear) are what we want.
    unsafe {
        if on {
            libc::write(fd.as_raw_fd(), (&raw const value).cast(), 8);
        } else {
            libc::read(fd.as_raw_fd(), (&raw mut value).cast(), 8);
        }
    }
}

/// Waits up to `ms` for `events` on `fd`.
fn wait_fd(fd: RawFd, events: libc::c_short, ms: i32) {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: one pollfd for the duration of the call.
    unsafe { libc::poll(&mut p, 1, ms) };
}

/// `INVALID_VALUE` unless `name` is a service name DOCA takes: 1 to 119 bytes (120 with the
/// terminating NUL).
pub fn check_service_name(name: &str) -> Result<()> {
    let max = COMM_CHANNEL_MAX_SERVICE_NAME_LEN;
    if name.is_empty() || name.len() >= max {
        bail!(
            InvalidValue,
            "the service name `{name}` is {} bytes: a name has 1 to {} bytes, {max} with its NUL \
             (doca_comm_channel_get_max_service_name_len)",
            name.len(),
            max - 1
        );
    }
    Ok(())
}

impl Endpoint {
    /// An endpoint with the default properties, in `mode`.
    pub fn new(mode: Mode) -> Endpoint {
        Endpoint {
            props: Props::new(mode),
            role: Role::Idle,
            peers: Vec::new(),
            generations: Vec::new(),
            free: Vec::new(),
            cursor: 0,
            scratch: Box::default(),
            fds: Vec::new(),
            channels: None,
            stall: Duration::from_millis(COMM_CHANNEL_PEER_STALL_TIMEOUT_MS),
        }
    }

    /// The stall time of this endpoint's peers (default
    /// [`COMM_CHANNEL_PEER_STALL_TIMEOUT_MS`]): shorter for tests and the fuzzer, which would
    /// otherwise wait it out.
    pub fn set_peer_stall_timeout(&mut self, stall: Duration) {
        self.stall = stall;
    }

    /// The properties in effect.
    pub fn props(&self) -> &Props {
        &self.props
    }

    /// The properties, to change: `BAD_STATE` once the endpoint listens or connects.
    pub fn props_mut(&mut self) -> Result<&mut Props> {
        if !matches!(self.role, Role::Idle) {
            bail!(
                BadState,
                "the endpoint already listens or is connected: its properties are set before \
                 doca_comm_channel_ep_listen or _connect"
            );
        }
        Ok(&mut self.props)
    }

    /// Whether the endpoint listens or connected.
    pub fn is_active(&self) -> bool {
        !matches!(self.role, Role::Idle)
    }

    fn activate(&mut self) -> Result<()> {
        let channels = Channels {
            recv: Poller::new()?,
            send: Poller::new()?,
            recv_ready: dpakit_wire::eventfd()?,
            send_ready: dpakit_wire::eventfd()?,
        };
        channels.recv.add(channels.recv_ready.as_raw_fd(), READY)?;
        channels.send.add(channels.send_ready.as_raw_fd(), READY)?;
        self.channels = Some(channels);
        self.scratch = vec![0; SCRATCH].into_boxed_slice();
        Ok(())
    }

    fn require_idle(&self, what: &str) -> Result<()> {
        match self.role {
            Role::Idle => Ok(()),
            Role::Service(_) => bail!(BadState, "{what}: the endpoint already listens"),
            Role::Client => bail!(
                BadState,
                "{what}: the endpoint is already connected (a client endpoint connects once; \
                 create another endpoint for another connection)"
            ),
        }
    }

    /// `doca_comm_channel_ep_listen`: serves `name` for the host function `function` (the
    /// representor's PCI address). `ALREADY_EXIST` if a live service of that name listens
    /// there.
    pub fn listen(&mut self, function: &str, name: &str) -> Result<()> {
        self.require_idle("doca_comm_channel_ep_listen")?;
        check_service_name(name)?;
        let path = wire::service_path(function, name)?;
        let listener = Listener::bind(&path).map_err(|e| match e.code() {
            ErrorCode::AlreadyExist => err(
                ErrorCode::AlreadyExist,
                format!(
                    "a Comm Channel service named `{name}` already listens on the representor \
                     of {function}: names are unique per representor"
                ),
            ),
            _ => e,
        })?;
        self.activate()?;
        if let Some(c) = &self.channels {
            c.recv.add(listener.fd(), LISTENER)?;
        }
        self.role = Role::Service(Service {
            listener,
            function: function.to_string(),
            name: name.to_string(),
            pending: VecDeque::new(),
        });
        Ok(())
    }

    /// `doca_comm_channel_ep_connect`: connects to the service `name` of the host function
    /// `function` and starts the handshake; the connection is usable once
    /// [`update_info`](Self::update_info) answers SUCCESS.
    pub fn connect(&mut self, function: &str, name: &str) -> Result<PeerId> {
        self.require_idle("doca_comm_channel_ep_connect")?;
        check_service_name(name)?;
        let path = wire::service_path(function, name)?;
        let sock = match SeqPacket::connect(&path)? {
            Connect::Connected(s) => s,
            Connect::Absent | Connect::Stale => bail!(
                NotConnected,
                "no Comm Channel service named `{name}` listens for host function {function}: \
                 start the service first"
            ),
            Connect::Busy => bail!(
                Again,
                "the service `{name}` has too many connections waiting: try again"
            ),
        };
        let hello = proto::cc_hello(
            self.props.max_msg_size,
            self.props.recv_queue_size,
            function,
            name,
        );
        if !sock.send(&[&hello], &[])? {
            bail!(
                Again,
                "the service `{name}` does not take connections now: try again"
            );
        }
        self.activate()?;
        self.role = Role::Client;
        let id = self.insert(|id| Peer::connecting(id, sock))?;
        Ok(id)
    }

    fn insert(&mut self, make: impl FnOnce(PeerId) -> Peer) -> Result<PeerId> {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.peers.push(None);
                self.generations.push(0);
                self.peers.len() - 1
            }
        };
        let id = PeerId(u64::from(self.generations[slot]) << 32 | slot as u64);
        let peer = make(id);
        if let Some(c) = &self.channels {
            let fd = peer.sock.fd();
            c.recv.add(fd, slot as u64)?;
            c.send.add_edge(fd, slot as u64)?;
        }
        self.peers[slot] = Some(peer);
        Ok(id)
    }

    fn slot(&self, id: PeerId) -> Option<usize> {
        let slot = (id.0 & 0xffff_ffff) as usize;
        let live = self.generations.get(slot) == Some(&((id.0 >> 32) as u32))
            && self.peers.get(slot).is_some_and(Option::is_some);
        live.then_some(slot)
    }

    fn peer_mut(&mut self, id: PeerId) -> Result<&mut Peer> {
        match self.slot(id) {
            Some(slot) => Ok(self.peers[slot].as_mut().unwrap_or_else(|| unreachable!())),
            None => bail!(
                NotFound,
                "the peer address is not a connection of this endpoint (disconnected?)"
            ),
        }
    }

    /// The connections, oldest first (`doca_comm_channel_ep_get_peer_addr_list`).
    pub fn peers(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.peers.iter().flatten().map(|p| p.id)
    }

    /// Handshakes under way (`doca_comm_channel_ep_get_pending_connections`).
    pub fn pending_connections(&self) -> usize {
        match &self.role {
            Role::Service(s) => s.pending.len(),
            _ => 0,
        }
    }

    /// Accepts, handshakes and reads what is ready, without waiting: at most
    /// [`COMM_CHANNEL_PASSES_PER_CALL`] passes of up to 64 ready descriptors (what is still
    /// ready waits for the next call); then returns credits and aborts stalled peers.
    pub fn progress(&mut self) {
        let mut tokens = [0u64; PASS];
        for _ in 0..COMM_CHANNEL_PASSES_PER_CALL {
            let n = match &self.channels {
                Some(c) => c.recv.ready(&mut tokens),
                None => return,
            };
            for &token in &tokens[..n] {
                match token {
                    LISTENER => self.accept(),
                    READY => {}
                    t if t & HANDSHAKE != 0 => self.handshake((t & !HANDSHAKE) as RawFd),
                    slot => self.pump(slot as usize),
                }
            }
            if n < tokens.len() {
                break;
            }
        }
        self.expire_handshakes();
        let now = Instant::now();
        for slot in 0..self.peers.len() {
            if let Some(p) = self.peers[slot].as_mut() {
                p.return_credits();
                p.check_stall(now, self.stall);
            }
            self.unpoll_failed(slot);
        }
    }

    /// Takes the connection in `slot` out of both pollers once it failed: a failed socket
    /// stays readable (end of file) until the program disconnects it, and would otherwise
    /// count as ready on every pass.
    fn unpoll_failed(&mut self, slot: usize) {
        let Some(p) = self.peers.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        if p.polled && p.is_failed() {
            p.polled = false;
            if let Some(c) = &self.channels {
                c.recv.remove(p.sock.fd());
                c.send.remove(p.sock.fd());
            }
        }
    }

    fn pump(&mut self, slot: usize) {
        let props = self.props;
        if let Some(p) = self.peers.get_mut(slot).and_then(Option::as_mut) {
            p.pump(&props, &mut self.scratch, &mut self.fds);
        }
        self.unpoll_failed(slot);
    }

    /// `doca_comm_channel_ep_sendto`: sends `msg` to `peer`. A blocking call waits for credit
    /// and room, until the peer's stall time runs out at most (then `CONNECTION_ABORTED`);
    /// otherwise `AGAIN`.
    pub fn send(&mut self, peer: PeerId, msg: &[u8], wait: bool) -> Result<()> {
        let slot = self.slot(peer).ok_or_else(|| {
            err(
                ErrorCode::NotFound,
                "the peer address is not a connection of this endpoint (disconnected?)",
            )
        })?;
        let started = Instant::now();
        let stall = self.stall;
        loop {
            self.pump(slot);
            let p = self.peers[slot].as_mut().unwrap_or_else(|| unreachable!());
            p.check_stall(Instant::now(), stall);
            let sent = p.send(msg);
            self.unpoll_failed(slot);
            let p = self.peers[slot].as_ref().unwrap_or_else(|| unreachable!());
            let blocked_on = match sent {
                Ok(Sent::Yes) => return Ok(()),
                Ok(Sent::NoCredit) => libc::POLLIN,
                Ok(Sent::SocketFull) => libc::POLLOUT,
                Err(e) if wait && e.code() == ErrorCode::ConnectionAborted => bail!(
                    ConnectionAborted,
                    "doca_comm_channel_ep_sendto waited {} ms for the peer to make room for a \
                     message (a credit back, or room in its socket) and it made none: {}",
                    started.elapsed().as_millis(),
                    e.message()
                ),
                Err(e) => return Err(e),
            };
            if !wait {
                bail!(
                    Again,
                    "the send queue to this peer is full ({} messages in flight): try again (a \
                     peer that makes no room for {} ms loses its connection)",
                    p.in_flight(),
                    stall.as_millis()
                );
            }
            // Wake up when the stall time runs out, if that comes first.
            let left = p.stall_deadline(stall).map_or(WAIT_SLICE_MS, |d| {
                let ms = d.saturating_duration_since(Instant::now()).as_millis();
                i32::try_from(ms)
                    .unwrap_or(i32::MAX)
                    .saturating_add(1)
                    .min(WAIT_SLICE_MS)
            });
            wait_fd(p.sock.fd(), blocked_on, left);
        }
    }

    /// `doca_comm_channel_ep_recvfrom`: the next message, from the connections in turn; a
    /// connection that went to the error state is reported once. A blocking call waits for
    /// one; otherwise `AGAIN`.
    pub fn recv(&mut self, buf: &mut [u8], wait: bool) -> Result<Received> {
        if !self.is_active() {
            bail!(
                BadState,
                "doca_comm_channel_ep_recvfrom: the endpoint neither listens nor is connected"
            );
        }
        loop {
            self.progress();
            if let Some(found) = self.next_received(buf)? {
                return Ok(found);
            }
            if !wait {
                bail!(Again, "no message waiting: try again");
            }
            if let Some(c) = &self.channels {
                c.recv.wait(WAIT_SLICE_MS);
            }
        }
    }

    fn next_received(&mut self, buf: &mut [u8]) -> Result<Option<Received>> {
        let n = self.peers.len();
        for i in 0..n {
            let slot = (self.cursor + i) % n;
            let props = self.props;
            let Some(p) = self.peers[slot].as_mut() else {
                continue;
            };
            if p.has_waiting() {
                let id = p.id;
                let len = p.take(buf, &props);
                // Taking returns credits, which may find the peer gone.
                self.unpoll_failed(slot);
                let len = len?;
                self.cursor = slot + 1;
                return Ok(Some(Received::Message { len, peer: id }));
            }
            if let PeerState::Errored(e) = &p.state {
                if !p.reset_reported {
                    p.reset_reported = true;
                    self.cursor = slot + 1;
                    return Ok(Some(Received::Reset {
                        peer: p.id,
                        error: e.clone(),
                    }));
                }
            }
        }
        Ok(None)
    }

    /// `doca_comm_channel_ep_disconnect`: ends the connection on this side (the peer finds
    /// out when it next sends or receives) and frees it.
    pub fn disconnect(&mut self, peer: PeerId) -> Result<()> {
        let Some(slot) = self.slot(peer) else {
            bail!(
                NotFound,
                "the peer address is not a connection of this endpoint (disconnected already?)"
            );
        };
        if let Some(p) = self.peers[slot].take() {
            if let (true, Some(c)) = (p.polled, &self.channels) {
                c.recv.remove(p.sock.fd());
                c.send.remove(p.sock.fd());
            }
            p.bye();
        }
        self.generations[slot] = self.generations[slot].wrapping_add(1);
        self.free.push(slot);
        Ok(())
    }

    /// `doca_comm_channel_peer_addr_update_info`.
    pub fn update_info(&mut self, peer: PeerId) -> Result<()> {
        if let Some(slot) = self.slot(peer) {
            self.pump(slot);
        }
        self.peer_mut(peer)?.update_info()
    }

    /// The counters of `peer` as of its last [`update_info`](Self::update_info).
    pub fn stats(&mut self, peer: PeerId) -> Result<PeerStats> {
        Ok(self.peer_mut(peer)?.stats())
    }

    /// `doca_comm_channel_peer_addr_set_user_data`.
    pub fn set_user_data(&mut self, peer: PeerId, value: u64) -> Result<()> {
        self.peer_mut(peer)?.user_data = value;
        Ok(())
    }

    /// `doca_comm_channel_peer_addr_get_user_data` (0 unless set).
    pub fn user_data(&mut self, peer: PeerId) -> Result<u64> {
        Ok(self.peer_mut(peer)?.user_data)
    }

    /// `doca_comm_channel_ep_get_event_channel`: the send and receive event descriptors.
    pub fn event_channels(&self) -> Result<(RawFd, RawFd)> {
        match &self.channels {
            Some(c) => Ok((c.send.fd(), c.recv.fd())),
            None => bail!(
                BadState,
                "the endpoint has no event channel before doca_comm_channel_ep_listen or _connect"
            ),
        }
    }

    /// `doca_comm_channel_ep_event_handle_arm_recv`: the receive channel turns readable when a
    /// message (or a connection's error) waits, now or later.
    pub fn arm_recv(&mut self) -> Result<()> {
        self.event_channels()?;
        self.progress();
        let waiting = self.peers.iter().flatten().any(|p| {
            p.has_waiting() || (matches!(p.state, PeerState::Errored(_)) && !p.reset_reported)
        });
        if let Some(c) = &self.channels {
            signal(&c.recv_ready, waiting);
        }
        Ok(())
    }

    /// `doca_comm_channel_ep_event_handle_arm_send`: the send channel turns readable when a
    /// connection has room for a message, now or once credits come back.
    pub fn arm_send(&mut self) -> Result<()> {
        self.event_channels()?;
        if let Some(c) = &self.channels {
            // Consume the edges reported so far: only new arrivals wake the program again.
            signal(&c.send_ready, false);
            let mut tokens = [0u64; 64];
            for _ in 0..16 {
                if c.send.ready(&mut tokens) == 0 {
                    break;
                }
            }
        }
        self.progress();
        let room = self.peers.iter().flatten().any(Peer::has_credit);
        if let Some(c) = &self.channels {
            signal(&c.send_ready, room);
        }
        Ok(())
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        for p in self.peers.iter().flatten() {
            p.bye();
        }
    }
}
