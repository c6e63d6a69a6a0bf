//! The messages Comch peers exchange: a tag byte, then little-endian fields. One socket message
//! is one protocol message (the socket keeps boundaries), so nothing needs framing.

use crate::Result;
use dpakit_abi::bail;

/// Protocol version, checked in the handshake.
pub const VERSION: u32 = 2;

/// Room a receive buffer needs beyond the largest control message (tag and handshake fields).
pub const OVERHEAD: usize = 512;

/// Longest refusal reason sent.
const MAX_REASON: usize = 400;

pub const TAG_HELLO: u8 = 1;
pub const TAG_WELCOME: u8 = 2;
pub const TAG_REFUSE: u8 = 3;
pub const TAG_DATA: u8 = 4;
pub const TAG_BYE: u8 = 5;
pub const TAG_CONSUMER_NEW: u8 = 6;
pub const TAG_CONSUMER_GONE: u8 = 7;
pub const TAG_CC_HELLO: u8 = 8;
pub const TAG_CC_WELCOME: u8 = 9;
pub const TAG_CC_ACK: u8 = 10;
pub const TAG_WAKE: u8 = 11;
pub const TAG_CTRL_RING: u8 = 12;
pub const TAG_CTRL_RING_ACK: u8 = 13;

/// A decoded message; borrowed fields point into the receive buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Message<'a> {
    /// Client → server, first message: who is asking, for which server, with which limits.
    Hello {
        version: u32,
        max_msg_size: u32,
        function: &'a str,
        name: &'a str,
    },
    /// Server → client: the connection is established.
    Welcome,
    /// Server → client: the connection is refused, with DOCA's error code and why.
    Refuse { code: i32, reason: &'a str },
    /// A control-path message.
    Data(&'a [u8]),
    /// The peer disconnects.
    Bye,
    /// The peer started a fast-path consumer: its id, ring depth, immediate room and the sizes
    /// of the memory it shares (ring, data; the descriptors travel with the message).
    ConsumerNew {
        id: u32,
        depth: u64,
        imm_len: u32,
        ring_len: u64,
        data_len: u64,
    },
    /// The peer's consumer with this id is gone.
    ConsumerGone { id: u32 },
    /// Legacy Comm Channel, client → service, first message: who is asking, for which service,
    /// the largest message the client takes and how many it queues (the service's credit).
    CcHello {
        version: u32,
        max_msg_size: u32,
        recv_queue: u32,
        function: &'a str,
        name: &'a str,
    },
    /// Legacy Comm Channel, service → client: connected; the service's largest message and
    /// receive queue (the client's credit).
    CcWelcome { max_msg_size: u32, recv_queue: u32 },
    /// Legacy Comm Channel: the receiver's program took this many more messages (credits back).
    CcAck { count: u32 },
    /// The sender laid out a control ring for what it receives (its memfd travels with the
    /// message): `depth` slots of the agreed max message size, `ring_len` bytes.
    CtrlRing { depth: u64, ring_len: u64 },
    /// The peer mapped this side's control ring: from now on its control messages come
    /// through it, none on the socket.
    CtrlRingAck,
    /// Something waits in a control ring (or room was freed in one): look.
    Wake,
}

/// `HELLO`.
pub fn hello(max_msg_size: u32, function: &str, name: &str) -> Vec<u8> {
    let mut m = vec![TAG_HELLO];
    m.extend_from_slice(&VERSION.to_le_bytes());
    m.extend_from_slice(&max_msg_size.to_le_bytes());
    put_str(&mut m, function);
    put_str(&mut m, name);
    m
}

/// `REFUSE`.
pub fn refuse(code: i32, reason: &str) -> Vec<u8> {
    let mut cut = reason.len().min(MAX_REASON);
    while !reason.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut m = vec![TAG_REFUSE];
    m.extend_from_slice(&code.to_le_bytes());
    put_str(&mut m, &reason[..cut]);
    m
}

/// `CONSUMER_NEW`.
pub fn consumer_new(id: u32, depth: u64, imm_len: u32, ring_len: u64, data_len: u64) -> Vec<u8> {
    let mut m = vec![TAG_CONSUMER_NEW];
    m.extend_from_slice(&id.to_le_bytes());
    m.extend_from_slice(&depth.to_le_bytes());
    m.extend_from_slice(&imm_len.to_le_bytes());
    m.extend_from_slice(&ring_len.to_le_bytes());
    m.extend_from_slice(&data_len.to_le_bytes());
    m
}

/// `CC_HELLO`.
pub fn cc_hello(max_msg_size: u32, recv_queue: u32, function: &str, name: &str) -> Vec<u8> {
    let mut m = vec![TAG_CC_HELLO];
    m.extend_from_slice(&VERSION.to_le_bytes());
    m.extend_from_slice(&max_msg_size.to_le_bytes());
    m.extend_from_slice(&recv_queue.to_le_bytes());
    put_str(&mut m, function);
    put_str(&mut m, name);
    m
}

/// `CC_WELCOME`.
pub fn cc_welcome(max_msg_size: u32, recv_queue: u32) -> [u8; 9] {
    let mut m = [TAG_CC_WELCOME; 9];
    m[1..5].copy_from_slice(&max_msg_size.to_le_bytes());
    m[5..9].copy_from_slice(&recv_queue.to_le_bytes());
    m
}

/// `CTRL_RING`.
pub fn ctrl_ring(depth: u64, ring_len: u64) -> [u8; 17] {
    let mut m = [TAG_CTRL_RING; 17];
    m[1..9].copy_from_slice(&depth.to_le_bytes());
    m[9..17].copy_from_slice(&ring_len.to_le_bytes());
    m
}

/// A message carrying only an id or a count (`CONSUMER_GONE`, `CC_ACK`).
pub fn with_id(tag: u8, id: u32) -> [u8; 5] {
    let b = id.to_le_bytes();
    [tag, b[0], b[1], b[2], b[3]]
}

fn put_str(m: &mut Vec<u8>, s: &str) {
    m.extend_from_slice(&(s.len() as u16).to_le_bytes());
    m.extend_from_slice(s.as_bytes());
}

/// Reads fields off a message, failing on a short or malformed one.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.0.len() < n {
            bail!(InvalidValue, "a Comch protocol message is truncated");
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    }

    fn str(&mut self) -> Result<&'a str> {
        let b = self.take(2)?;
        let len = usize::from(u16::from_le_bytes([b[0], b[1]]));
        std::str::from_utf8(self.take(len)?)
            .map_err(|_| dpakit_abi::Error::new(dpakit_abi::ErrorCode::InvalidValue, "not UTF-8"))
    }

    fn end(self) -> Result<()> {
        if !self.0.is_empty() {
            bail!(InvalidValue, "a Comch protocol message has trailing bytes");
        }
        Ok(())
    }
}

/// Decodes one message; `INVALID_VALUE` for anything this version does not know.
pub fn decode(buf: &[u8]) -> Result<Message<'_>> {
    let Some((&tag, body)) = buf.split_first() else {
        bail!(InvalidValue, "an empty Comch protocol message");
    };
    let mut r = Reader(body);
    let message = match tag {
        TAG_HELLO => Message::Hello {
            version: r.u32()?,
            max_msg_size: r.u32()?,
            function: r.str()?,
            name: r.str()?,
        },
        TAG_WELCOME => Message::Welcome,
        TAG_REFUSE => Message::Refuse {
            code: r.u32()? as i32,
            reason: r.str()?,
        },
        TAG_DATA => return Ok(Message::Data(body)),
        TAG_BYE => Message::Bye,
        TAG_CONSUMER_NEW => Message::ConsumerNew {
            id: r.u32()?,
            depth: r.u64()?,
            imm_len: r.u32()?,
            ring_len: r.u64()?,
            data_len: r.u64()?,
        },
        TAG_CONSUMER_GONE => Message::ConsumerGone { id: r.u32()? },
        TAG_CC_HELLO => Message::CcHello {
            version: r.u32()?,
            max_msg_size: r.u32()?,
            recv_queue: r.u32()?,
            function: r.str()?,
            name: r.str()?,
        },
        TAG_CC_WELCOME => Message::CcWelcome {
            max_msg_size: r.u32()?,
            recv_queue: r.u32()?,
        },
        TAG_CC_ACK => Message::CcAck { count: r.u32()? },
        TAG_CTRL_RING => Message::CtrlRing {
            depth: r.u64()?,
            ring_len: r.u64()?,
        },
        TAG_CTRL_RING_ACK => Message::CtrlRingAck,
        TAG_WAKE => Message::Wake,
        other => bail!(InvalidValue, "unknown Comch protocol message tag {other}"),
    };
    r.end()?;
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comm_channel_messages_round_trip() {
        let h = cc_hello(300, 64, "0000:b1:00.0", "svc");
        assert_eq!(
            decode(&h).unwrap(),
            Message::CcHello {
                version: VERSION,
                max_msg_size: 300,
                recv_queue: 64,
                function: "0000:b1:00.0",
                name: "svc"
            }
        );
        assert_eq!(
            decode(&cc_welcome(4080, 16)).unwrap(),
            Message::CcWelcome {
                max_msg_size: 4080,
                recv_queue: 16
            }
        );
        assert_eq!(
            decode(&with_id(TAG_CC_ACK, 7)).unwrap(),
            Message::CcAck { count: 7 }
        );
        assert!(decode(&h[..h.len() - 1]).is_err(), "truncated");
        assert!(decode(&cc_welcome(1, 2)[..8]).is_err(), "truncated");
    }

    #[test]
    fn messages_round_trip() {
        let h = hello(4080, "0000:b1:00.0", "srv");
        assert_eq!(
            decode(&h).unwrap(),
            Message::Hello {
                version: VERSION,
                max_msg_size: 4080,
                function: "0000:b1:00.0",
                name: "srv"
            }
        );
        let r = refuse(6, "mismatch");
        assert_eq!(
            decode(&r).unwrap(),
            Message::Refuse {
                code: 6,
                reason: "mismatch"
            }
        );
        assert_eq!(
            decode(&consumer_new(7, 64, 32, 4096, 8192)).unwrap(),
            Message::ConsumerNew {
                id: 7,
                depth: 64,
                imm_len: 32,
                ring_len: 4096,
                data_len: 8192
            }
        );
        assert_eq!(
            decode(&with_id(TAG_CONSUMER_GONE, 7)).unwrap(),
            Message::ConsumerGone { id: 7 }
        );
        assert_eq!(decode(&[TAG_DATA, 1, 2]).unwrap(), Message::Data(&[1, 2]));
        assert_eq!(decode(&[TAG_DATA]).unwrap(), Message::Data(&[]));
        assert_eq!(
            decode(&ctrl_ring(128, 1 << 20)).unwrap(),
            Message::CtrlRing {
                depth: 128,
                ring_len: 1 << 20
            }
        );
        assert_eq!(decode(&[TAG_CTRL_RING_ACK]).unwrap(), Message::CtrlRingAck);
        assert_eq!(decode(&[TAG_WAKE]).unwrap(), Message::Wake);
    }

    #[test]
    fn malformed_messages_are_errors() {
        assert!(decode(&[]).is_err());
        assert!(decode(&[99]).is_err());
        assert!(decode(&[TAG_HELLO, 1, 0]).is_err());
        assert!(decode(&[TAG_BYE, 0]).is_err());
        assert!(decode(&[TAG_WAKE, 0]).is_err());
        assert!(decode(&ctrl_ring(1, 2)[..16]).is_err());
        let mut h = hello(1, "a", "b");
        h.pop();
        assert!(decode(&h).is_err());
    }

    #[test]
    fn long_reasons_are_cut_on_a_character_boundary() {
        let reason = "é".repeat(300);
        let r = refuse(1, &reason);
        let Message::Refuse { reason: got, .. } = decode(&r).unwrap() else {
            panic!()
        };
        assert!(got.len() <= MAX_REASON && reason.starts_with(got));
    }
}
