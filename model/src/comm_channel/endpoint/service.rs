//! A service's side of connecting: accepting sockets from its listener, holding them while
//! their `CC_HELLO` comes (a bounded number, for a bounded time) and welcoming or refusing each.
//! A socket that fails or is refused leaves the poller at once.

use super::{Endpoint, HANDSHAKE, Role};
use crate::comm_channel::peer::Peer;
use crate::error::{ErrorCode, err};
use crate::limits::{
    COMCH_HANDSHAKE_TIMEOUT_MS, COMCH_MAX_PENDING_HANDSHAKES, COMM_CHANNEL_SERVICE_MAX_CONNECTIONS,
};
use dpakit_wire::proto::{self, Message};
use dpakit_wire::{self as wire, Listener, Recv, SeqPacket};
use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Connections accepted per progress pass at most.
const ACCEPTS_PER_PASS: usize = 64;

/// An accepted connection waiting for its `CC_HELLO`.
#[derive(Debug)]
pub(super) struct Pending {
    sock: SeqPacket,
    since: Instant,
}

#[derive(Debug)]
pub(super) struct Service {
    pub listener: Listener,
    pub function: String,
    pub name: String,
    pub pending: VecDeque<Pending>,
}

impl Endpoint {
    pub(super) fn accept(&mut self) {
        let Role::Service(service) = &mut self.role else {
            return;
        };
        let Some(c) = &self.channels else { return };
        for _ in 0..ACCEPTS_PER_PASS {
            let sock = match service.listener.accept() {
                Ok(Some(s)) => s,
                _ => break,
            };
            // A local peer of another user may not reach this service.
            // SAFETY: getuid cannot fail and touches no memory.
            let me = unsafe { libc::getuid() };
            match sock.peer_uid() {
                Ok(uid) if uid == me || wire::any_uid() => {}
                _ => continue,
            }
            if service.pending.len() >= COMCH_MAX_PENDING_HANDSHAKES {
                // The oldest silent connection makes room.
                if let Some(old) = service.pending.pop_front() {
                    c.recv.remove(old.sock.fd());
                }
            }
            let fd = sock.fd();
            if c.recv.add(fd, HANDSHAKE | fd as u64).is_ok() {
                service.pending.push_back(Pending {
                    sock,
                    since: Instant::now(),
                });
            }
        }
    }

    pub(super) fn expire_handshakes(&mut self) {
        let Role::Service(service) = &mut self.role else {
            return;
        };
        let timeout = Duration::from_millis(COMCH_HANDSHAKE_TIMEOUT_MS);
        while service
            .pending
            .front()
            .is_some_and(|p| p.since.elapsed() > timeout)
        {
            if let (Some(old), Some(c)) = (service.pending.pop_front(), &self.channels) {
                c.recv.remove(old.sock.fd());
            }
        }
    }

    /// Reads the `CC_HELLO` of the pending connection on `fd`, and welcomes or refuses it.
    pub(super) fn handshake(&mut self, fd: RawFd) {
        let Role::Service(service) = &mut self.role else {
            return;
        };
        let Some(at) = service.pending.iter().position(|p| p.sock.fd() == fd) else {
            return;
        };
        self.fds.clear();
        let n = match service.pending[at]
            .sock
            .recv(&mut self.scratch, &mut self.fds)
        {
            Ok(Recv::Message(n)) if self.fds.is_empty() => n,
            Ok(Recv::Empty) => return,
            // Closed, descriptors, an error: the connection goes.
            _ => {
                self.fds.clear();
                if let (Some(p), Some(c)) = (service.pending.remove(at), &self.channels) {
                    c.recv.remove(p.sock.fd());
                }
                return;
            }
        };
        let Some(pending) = service.pending.remove(at) else {
            return;
        };
        if let Some(c) = &self.channels {
            c.recv.remove(pending.sock.fd());
        }
        let connected = self.peers.iter().flatten().count();
        let verdict = match proto::decode(&self.scratch[..n]) {
            Ok(Message::CcHello {
                version,
                max_msg_size,
                recv_queue,
                function,
                name,
            }) => {
                if version != proto::VERSION || !Peer::announced_ok(max_msg_size, recv_queue) {
                    Err(err(
                        ErrorCode::NotSupported,
                        format!(
                            "protocol version {version}, max_msg_size {max_msg_size}, \
                             recv_queue {recv_queue}: not what this service speaks"
                        ),
                    ))
                } else if function != service.function || name != service.name {
                    Err(err(
                        ErrorCode::NotFound,
                        format!("no service `{name}` for function {function} here"),
                    ))
                } else if connected >= COMM_CHANNEL_SERVICE_MAX_CONNECTIONS {
                    Err(err(
                        ErrorCode::NoMemory,
                        format!(
                            "the service `{name}` serves {COMM_CHANNEL_SERVICE_MAX_CONNECTIONS} \
                             connections, the most it takes"
                        ),
                    ))
                } else {
                    Ok((max_msg_size, recv_queue))
                }
            }
            // Anything else first: not a Comm Channel client.
            _ => return,
        };
        match verdict {
            Ok(announced) => {
                let welcome =
                    proto::cc_welcome(self.props.max_msg_size, self.props.recv_queue_size);
                if !matches!(pending.sock.send(&[&welcome], &[]), Ok(true)) {
                    return;
                }
                let props = self.props;
                let _ = self.insert(|id| Peer::connected(id, pending.sock, &props, announced));
            }
            Err(e) => {
                let _ = pending
                    .sock
                    .send(&[&proto::refuse(e.code().raw(), e.message())], &[]);
            }
        }
    }
}
