//! One connection of an endpoint (`doca_comm_channel_addr_t`): its socket, state, credits,
//! the messages its peer sent that the program has not taken yet, and its statistics.
//!
//! Flow control is by credit: a side may have at most the other's receive queue size (and its
//! own send queue size) of messages in flight, and the receiver returns credits (`CC_ACK`) as
//! its program takes messages. So a peer's waiting messages are bounded by the receive queue
//! size this side chose, and a peer that sends past its credit, sends more than the agreed
//! message size, returns credits it never had or speaks out of turn has broken the protocol:
//! the connection goes to the error state (`CONNECTION_RESET`), nothing else is affected.
//!
//! Nothing a peer does keeps a call busy or waiting: a pass reads at most
//! [`COMM_CHANNEL_FRAMES_PER_PASS`] frames of one connection, and a peer that leaves this side
//! with no room for a message to it and returns no credit for the stall time
//! ([`COMM_CHANNEL_PEER_STALL_TIMEOUT_MS`] unless the endpoint says otherwise) loses its
//! connection (`CONNECTION_ABORTED`).

use super::props::Props;
use crate::error::{Error, ErrorCode, Result, err};
#[cfg(doc)]
use crate::limits::COMM_CHANNEL_PEER_STALL_TIMEOUT_MS;
use crate::limits::{
    COMM_CHANNEL_FRAMES_PER_PASS, COMM_CHANNEL_MAX_MSG_SIZE, COMM_CHANNEL_MAX_QUEUE_SIZE,
    COMM_CHANNEL_MIN_MSG_SIZE, COMM_CHANNEL_MIN_QUEUE_SIZE,
};
use dpakit_abi::bail;
use dpakit_wire::proto::{self, Message};
use dpakit_wire::{Recv, SeqPacket};
use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

/// A connection's name within its endpoint; never reused by that endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PeerId(pub u64);

/// Where a connection stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerState {
    /// Client side: `CC_HELLO` sent, the service has not answered yet.
    Connecting,
    /// Messages flow.
    Connected,
    /// The connection failed or ended; the program should disconnect it.
    Errored(Error),
}

/// A connection's counters, as of the last `doca_comm_channel_peer_addr_update_info`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeerStats {
    /// Messages sent to the peer.
    pub send_messages: u64,
    /// Bytes sent to the peer.
    pub send_bytes: u64,
    /// Messages received from the peer (taken by the program).
    pub recv_messages: u64,
    /// Bytes received from the peer (taken by the program).
    pub recv_bytes: u64,
    /// Messages sent that the peer's program has not taken yet.
    pub send_in_flight_messages: u64,
}

/// What one send attempt found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Sent {
    /// On its way.
    Yes,
    /// No credit left: the peer's program has this many messages to take first.
    NoCredit,
    /// The socket is full for now.
    SocketFull,
}

/// One received message waiting for the program: its length and a buffer of the endpoint's
/// message size (buffers are reused, so a steady stream allocates nothing).
#[derive(Debug)]
struct Waiting {
    len: usize,
    buf: Box<[u8]>,
}

#[derive(Debug)]
pub(super) struct Peer {
    pub id: PeerId,
    pub sock: SeqPacket,
    pub state: PeerState,
    /// The largest message the peer takes.
    peer_max_msg: u32,
    /// Messages this side may have in flight: min(own send queue, peer's receive queue).
    credit: u32,
    in_flight: u32,
    queue: VecDeque<Waiting>,
    spare: Vec<Box<[u8]>>,
    /// Messages taken by the program whose credit is not returned yet.
    owed: u32,
    live: PeerStats,
    snapshot: PeerStats,
    /// The program was told of the error state (recvfrom answered CONNECTION_RESET once).
    pub reset_reported: bool,
    /// `doca_comm_channel_peer_addr_set_user_data`.
    pub user_data: u64,
    /// Its socket is in the endpoint's pollers (until it fails or is disconnected).
    pub polled: bool,
    /// Since when a send found no room (no credit left, or the socket full) with no credit
    /// back since: the stall clock.
    blocked_since: Option<Instant>,
}

impl Peer {
    /// A service's connection: the client's HELLO was accepted.
    pub fn connected(id: PeerId, sock: SeqPacket, own: &Props, peer: (u32, u32)) -> Peer {
        let mut p = Peer::connecting(id, sock);
        p.welcome(own, peer);
        p
    }

    /// A client's connection, HELLO sent.
    pub fn connecting(id: PeerId, sock: SeqPacket) -> Peer {
        Peer {
            id,
            sock,
            state: PeerState::Connecting,
            peer_max_msg: 0,
            credit: 0,
            in_flight: 0,
            queue: VecDeque::new(),
            spare: Vec::new(),
            owed: 0,
            live: PeerStats::default(),
            snapshot: PeerStats::default(),
            reset_reported: false,
            user_data: 0,
            polled: true,
            blocked_since: None,
        }
    }

    fn welcome(&mut self, own: &Props, (max_msg, recv_queue): (u32, u32)) {
        self.peer_max_msg = max_msg;
        self.credit = own.send_queue_size.min(recv_queue);
        self.state = PeerState::Connected;
    }

    /// Whether the values a peer announced are ones a well-behaved endpoint can have.
    pub fn announced_ok(max_msg: u32, recv_queue: u32) -> bool {
        (COMM_CHANNEL_MIN_MSG_SIZE..=COMM_CHANNEL_MAX_MSG_SIZE).contains(&(max_msg as usize))
            && (COMM_CHANNEL_MIN_QUEUE_SIZE..=COMM_CHANNEL_MAX_QUEUE_SIZE + 1)
                .contains(&(recv_queue as usize))
    }

    /// The connection failed: it stays until the program disconnects it.
    pub fn fail(&mut self, code: ErrorCode, why: String) {
        if !matches!(self.state, PeerState::Errored(_)) {
            self.state = PeerState::Errored(err(code, why));
            self.sock.shutdown();
        }
    }

    pub fn is_connected(&self) -> bool {
        self.state == PeerState::Connected
    }

    /// In the error state (failed, refused or ended).
    pub fn is_failed(&self) -> bool {
        matches!(self.state, PeerState::Errored(_))
    }

    /// When the stall clock runs out, if it runs.
    pub fn stall_deadline(&self, stall: Duration) -> Option<Instant> {
        self.blocked_since
            .filter(|_| !self.is_failed())
            .map(|t| t + stall)
    }

    /// Aborts the connection if the peer left this side with no room for `stall` and returned
    /// no credit meanwhile.
    pub fn check_stall(&mut self, now: Instant, stall: Duration) {
        if self.stall_deadline(stall).is_none_or(|d| now < d) {
            return;
        }
        let ms = stall.as_millis();
        let why = if self.state == PeerState::Connecting {
            format!(
                "the service did not answer the connection's hello for {ms} ms: connection \
                 aborted"
            )
        } else if self.in_flight >= self.credit {
            format!(
                "the peer returned no credit for {ms} ms with all {} messages of its credit in \
                 flight (its program took none of them): connection aborted",
                self.in_flight
            )
        } else {
            format!(
                "the peer returned no credit for {ms} ms and read nothing from its socket, full \
                 with {} messages in flight: connection aborted",
                self.in_flight
            )
        };
        self.fail(ErrorCode::ConnectionAborted, why);
    }

    /// Whether a send would find credit.
    pub fn has_credit(&self) -> bool {
        self.is_connected() && self.in_flight < self.credit
    }

    /// Messages sent that the peer's program has not taken yet.
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    pub fn has_waiting(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Reads what the socket holds, [`COMM_CHANNEL_FRAMES_PER_PASS`] frames at most (the rest
    /// keeps the socket ready for the next pass): messages into the queue, credits back, the
    /// service's answer. A broken rule puts the connection in the error state.
    pub fn pump(&mut self, own: &Props, scratch: &mut [u8], fds: &mut Vec<OwnedFd>) {
        for _ in 0..COMM_CHANNEL_FRAMES_PER_PASS {
            if self.is_failed() {
                return;
            }
            fds.clear();
            match self.sock.recv(scratch, fds) {
                Ok(Recv::Message(n)) => {
                    if !fds.is_empty() {
                        fds.clear();
                        return self
                            .broke("sent descriptors, which Comm Channel messages never carry");
                    }
                    if let Err(e) = self.frame(own, &scratch[..n]) {
                        return self.broke(e.message());
                    }
                }
                Ok(Recv::Empty) => return,
                Ok(Recv::Closed) => {
                    return self.fail(
                        ErrorCode::ConnectionReset,
                        "the peer disconnected or died".into(),
                    );
                }
                Err(e) => return self.broke(e.message()),
            }
        }
    }

    fn broke(&mut self, why: &str) {
        let why = format!("the peer broke the Comm Channel protocol ({why}): connection reset");
        self.fail(ErrorCode::ConnectionReset, why);
    }

    fn frame(&mut self, own: &Props, frame: &[u8]) -> Result<()> {
        match (proto::decode(frame)?, &self.state) {
            (Message::Data(body), PeerState::Connected) => {
                if body.len() > own.max_msg_size as usize {
                    bail!(
                        InvalidValue,
                        "a {}-byte message, past the {}-byte max_msg_size",
                        body.len(),
                        own.max_msg_size
                    );
                }
                // Its credit: the messages it sent that this side has not returned credit
                // for, waiting or taken (what a pass leaves unread does not count yet).
                if self.queue.len() + self.owed as usize >= own.recv_queue_size as usize {
                    bail!(
                        InvalidValue,
                        "a message past its credit of {}",
                        own.recv_queue_size
                    );
                }
                let mut buf = self
                    .spare
                    .pop()
                    .unwrap_or_else(|| vec![0; own.max_msg_size as usize].into_boxed_slice());
                buf[..body.len()].copy_from_slice(body);
                self.queue.push_back(Waiting {
                    len: body.len(),
                    buf,
                });
            }
            (Message::CcAck { count }, PeerState::Connected) => {
                if count > self.in_flight {
                    bail!(
                        InvalidValue,
                        "{count} credits back with {} messages in flight",
                        self.in_flight
                    );
                }
                self.in_flight -= count;
                self.live.send_in_flight_messages = u64::from(self.in_flight);
                // Room again: the stall clock stops (a credit of 0 is no credit).
                if count > 0 {
                    self.blocked_since = None;
                }
            }
            (
                Message::CcWelcome {
                    max_msg_size,
                    recv_queue,
                },
                PeerState::Connecting,
            ) => {
                if !Peer::announced_ok(max_msg_size, recv_queue) {
                    bail!(
                        InvalidValue,
                        "a welcome with max_msg_size {max_msg_size}, recv_queue {recv_queue}"
                    );
                }
                self.welcome(own, (max_msg_size, recv_queue));
                self.blocked_since = None;
            }
            (Message::Refuse { code, reason }, PeerState::Connecting) => {
                let code = ErrorCode::from_raw(code).unwrap_or(ErrorCode::ConnectionAborted);
                self.state = PeerState::Errored(err(
                    ErrorCode::ConnectionAborted,
                    format!("the service refused the connection: {reason} ({code})"),
                ));
            }
            (Message::Bye, _) => {
                self.fail(ErrorCode::ConnectionReset, "the peer disconnected".into());
            }
            (other, state) => bail!(InvalidValue, "{other:?} while {state:?}"),
        }
        Ok(())
    }

    /// Sends `msg` if the credit and the socket allow.
    pub fn send(&mut self, msg: &[u8]) -> Result<Sent> {
        match &self.state {
            PeerState::Connected => {}
            PeerState::Connecting => {
                // No credit before the welcome: the stall clock runs.
                self.blocked_since.get_or_insert_with(Instant::now);
                return Ok(Sent::NoCredit);
            }
            PeerState::Errored(e) => {
                return Err(err(
                    e.code(),
                    format!(
                        "the connection is in the error state ({}): disconnect it",
                        e.message()
                    ),
                ));
            }
        }
        if msg.len() > self.peer_max_msg as usize {
            bail!(
                InvalidValue,
                "a {}-byte message is larger than the {}-byte max_msg_size of the connection",
                msg.len(),
                self.peer_max_msg
            );
        }
        if self.in_flight >= self.credit {
            self.blocked_since.get_or_insert_with(Instant::now);
            return Ok(Sent::NoCredit);
        }
        match self.sock.send(&[&[proto::TAG_DATA], msg], &[]) {
            Ok(true) => {
                // The peer made room (it read its socket): the stall clock stops.
                self.blocked_since = None;
                self.in_flight += 1;
                self.live.send_messages += 1;
                self.live.send_bytes += msg.len() as u64;
                self.live.send_in_flight_messages = u64::from(self.in_flight);
                Ok(Sent::Yes)
            }
            Ok(false) => {
                self.blocked_since.get_or_insert_with(Instant::now);
                Ok(Sent::SocketFull)
            }
            Err(e) => {
                self.fail(ErrorCode::ConnectionReset, e.message().to_string());
                bail!(ConnectionReset, "the peer is gone ({})", e.message())
            }
        }
    }

    /// Hands the next waiting message to the program: its length. `INVALID_VALUE` (and the
    /// message stays) if `buf` is too small for it.
    pub fn take(&mut self, buf: &mut [u8], own: &Props) -> Result<usize> {
        let Some(next) = self.queue.front() else {
            bail!(Again, "no message waiting");
        };
        if next.len > buf.len() {
            bail!(
                InvalidValue,
                "the {}-byte buffer is smaller than the {}-byte message waiting (it stays \
                 queued)",
                buf.len(),
                next.len
            );
        }
        let Waiting { len, buf: slot } = self.queue.pop_front().unwrap_or_else(|| unreachable!());
        buf[..len].copy_from_slice(&slot[..len]);
        self.spare.push(slot);
        self.live.recv_messages += 1;
        self.live.recv_bytes += len as u64;
        self.owed += 1;
        // Credits go back in batches, and at once when the queue runs dry, so a sender never
        // waits on credits for messages already taken.
        if self.owed >= (own.recv_queue_size / 4).max(1) || self.queue.is_empty() {
            self.return_credits();
        }
        Ok(len)
    }

    /// Returns the credits owed (again at the next progress if the socket is full).
    pub fn return_credits(&mut self) {
        if self.owed == 0 || !self.is_connected() {
            return;
        }
        match self
            .sock
            .send(&[&proto::with_id(proto::TAG_CC_ACK, self.owed)], &[])
        {
            Ok(true) => self.owed = 0,
            Ok(false) => {}
            Err(e) => self.fail(ErrorCode::ConnectionReset, e.message().to_string()),
        }
    }

    /// `doca_comm_channel_peer_addr_update_info`: a snapshot of the counters; SUCCESS,
    /// CONNECTION_INPROGRESS, or the error state's code.
    pub fn update_info(&mut self) -> Result<()> {
        self.snapshot = self.live;
        match &self.state {
            PeerState::Connected => Ok(()),
            PeerState::Connecting => {
                bail!(ConnectionInProgress, "the service has not answered yet")
            }
            PeerState::Errored(e) => Err(e.clone()),
        }
    }

    /// The counters as of the last [`update_info`](Self::update_info).
    pub fn stats(&self) -> PeerStats {
        self.snapshot
    }

    /// Tells the peer this side disconnects (best effort: it finds out anyway).
    pub fn bye(&self) {
        let _ = self.sock.send(&[&[proto::TAG_BYE]], &[]);
        self.sock.shutdown();
    }
}
