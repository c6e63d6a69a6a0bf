//! Delivering what arrives on a Comch connection to the program's callbacks: control
//! messages from the peer's ring and socket (in the order they were sent), announcements of
//! control rings and consumers, and the peer's departure. Every pass is bounded: at most the
//! receive queue size of messages per connection, so one peer cannot hold a progress call.

use super::connection::{ConnState, Connection, report_violation};
use super::{Endpoint, Face, Flow};
use crate::error::{ErrorCode, err, note, report};
use crate::limits::COMCH_CTRL_RING_MAX_DEPTH;
use dpakit_wire::Recv;
use dpakit_wire::fast_path::RemoteConsumer;
use dpakit_wire::proto::{self, Message};
use std::os::fd::OwnedFd;

impl Endpoint {
    fn violation(&self, why: &str) {
        report_violation(self.role, why);
    }

    /// The receive buffer, for a message to be delivered from it. No `RefCell` borrow is held
    /// across the callback, which may call back into the endpoint.
    fn recv_slice<'a>(&self) -> &'a mut [u8] {
        let (buf, cap) = {
            let mut b = self.recv_buf.borrow_mut();
            (b.as_mut_ptr(), b.len())
        };
        // SAFETY: the endpoint's receive buffer, not resized while it runs; one message at a
        // time is read into it and delivered from it.
        unsafe { std::slice::from_raw_parts_mut(buf, cap) }
    }

    /// Hands one control message to the layer above (valid during the call, as DOCA
    /// documents).
    fn deliver(&self, face: &impl Face, conn: &Connection, payload: &[u8]) {
        conn.count_recv(payload.len());
        face.received(conn, payload);
    }

    /// Delivers what waits in `conn`'s control ring: at most `budget` messages.
    pub(crate) fn receive_ring(
        &self,
        face: &impl Face,
        conn: &Connection,
        budget: u32,
    ) -> (usize, Flow) {
        let mut n = 0;
        while n < budget as usize && conn.state() == ConnState::Connected {
            let slice = self.recv_slice();
            match conn.pop(slice) {
                Ok(Some(len)) => self.deliver(face, conn, &slice[..len]),
                Ok(None) => break,
                Err(e) => {
                    self.violation(e.message());
                    return (n, Flow::Closed);
                }
            }
            n += 1;
        }
        if n > 0 {
            conn.after_pops();
        }
        (n, Flow::Open)
    }

    /// Delivers what arrived on `conn`'s socket, at most the receive queue size
    /// of messages per progress (its ring is read by [`receive_ring`](Self::receive_ring)). A
    /// socket message other than a wake-up is handled only after the ring is emptied, so each
    /// side's messages keep their order.
    pub(crate) fn receive(&self, face: &impl Face, conn: &Connection) -> (usize, Flow) {
        let budget = self.recv_queue_size.get();
        let mut n = 0;
        for _ in 0..budget {
            if conn.state() != ConnState::Connected {
                return (n, Flow::Open);
            }
            let slice = self.recv_slice();
            // The descriptors that came with this message, closed with it (on every way out:
            // a peer that is dropped must not leave any of its descriptors open here) unless
            // an announcement keeps them. Only announcements carry any.
            let mut fds: Vec<OwnedFd> = Vec::new();
            let got = conn.sock.recv(slice, &mut fds);
            let len = match got {
                Ok(Recv::Message(len)) => len,
                Ok(Recv::Empty) => return (n, Flow::Open),
                Ok(Recv::Closed) => {
                    // What the peer put in the ring before it closed is delivered, as a
                    // socket's bytes are read to its end.
                    let (m, _) = self.receive_ring(face, conn, COMCH_CTRL_RING_MAX_DEPTH as u32);
                    return (n + m, Flow::Closed);
                }
                Err(e) => {
                    note(&format!("comch {}", self.role), &e);
                    return (n, Flow::Closed);
                }
            };
            let message = proto::decode(&slice[..len]);
            // Only announcements carry descriptors: a consumer's three (checked when it is
            // attached) and a control ring's one.
            let allowed = match &message {
                Ok(Message::ConsumerNew { .. }) | Err(_) => None,
                Ok(Message::CtrlRing { .. }) => Some(1),
                Ok(_) => Some(0),
            };
            if allowed.is_some_and(|k| k != fds.len()) {
                self.violation(&format!(
                    "{} descriptor(s) attached to a message that carries {}",
                    fds.len(),
                    allowed.unwrap_or(0)
                ));
                return (n, Flow::Closed);
            }
            // Ring first: what the peer put there was sent before this.
            if !matches!(message, Ok(Message::Wake)) {
                let (m, flow) = self.receive_ring(face, conn, COMCH_CTRL_RING_MAX_DEPTH as u32);
                n += m;
                if flow == Flow::Closed {
                    return (n, flow);
                }
            }
            match message {
                Ok(Message::Data(payload)) if payload.len() > self.max_msg_size.get() as usize => {
                    self.violation(&format!(
                        "a {}-byte message, more than the {} bytes agreed",
                        payload.len(),
                        self.max_msg_size.get()
                    ));
                    return (n, Flow::Closed);
                }
                Ok(Message::Data(_)) if conn.rx_active() => {
                    self.violation(
                        "a control message on the socket after its control ring was acknowledged",
                    );
                    return (n, Flow::Closed);
                }
                Ok(Message::Data(payload)) => self.deliver(face, conn, payload),
                Ok(Message::Wake) => {
                    let (m, flow) = self.receive_ring(face, conn, budget);
                    n += m;
                    if flow == Flow::Closed {
                        return (n, flow);
                    }
                    continue;
                }
                Ok(Message::CtrlRing { depth, ring_len }) => {
                    let fd = fds.pop().expect("one descriptor, checked above");
                    if let Err(e) = conn.peer_ring(fd, depth, ring_len) {
                        self.violation(e.message());
                        return (n, Flow::Closed);
                    }
                    continue;
                }
                Ok(Message::CtrlRingAck) => {
                    if let Err(e) = conn.ring_acknowledged() {
                        self.violation(e.message());
                        return (n, Flow::Closed);
                    }
                    continue;
                }
                Ok(Message::ConsumerNew {
                    id,
                    depth,
                    imm_len,
                    ring_len,
                    data_len,
                }) => {
                    let added = RemoteConsumer::attach(
                        id,
                        depth,
                        imm_len,
                        ring_len,
                        data_len,
                        fds,
                        &self.peer_fds,
                    )
                    .and_then(|c| conn.shared.add_remote(c));
                    match added {
                        Ok(()) => {}
                        Err(e) if e.code() == ErrorCode::Full => {
                            // Not the peer's fault: it is told why before the connection ends.
                            let _ = conn
                                .sock
                                .send(&[&proto::refuse(e.code().raw(), e.message())], &[]);
                            report(&format!("comch {}", self.role), &e);
                            return (n, Flow::Closed);
                        }
                        Err(e) => {
                            self.violation(e.message());
                            return (n, Flow::Closed);
                        }
                    }
                    face.consumer(conn, id, true);
                }
                Ok(Message::ConsumerGone { id }) => {
                    if let Err(e) = conn.shared.remove_remote(id) {
                        self.violation(e.message());
                        return (n, Flow::Closed);
                    }
                    face.consumer(conn, id, false);
                }
                Ok(Message::Bye) => return (n + 1, Flow::Closed),
                Ok(Message::Refuse { code, reason }) => {
                    let code = ErrorCode::from_raw(code).unwrap_or(ErrorCode::ConnectionAborted);
                    let e = err(
                        code,
                        format!("the peer refused this side and ended the connection: {reason}"),
                    );
                    report(&format!("comch {}", self.role), &e);
                    return (n, Flow::Closed);
                }
                Ok(other) => {
                    let e = err(
                        ErrorCode::InvalidValue,
                        format!("the peer sent {other:?} on an established connection"),
                    );
                    note(&format!("comch {}", self.role), &e);
                    return (n, Flow::Closed);
                }
                Err(e) => {
                    note(&format!("comch {}", self.role), &e);
                    return (n, Flow::Closed);
                }
            }
            n += 1;
        }
        (n, Flow::Open)
    }
}
