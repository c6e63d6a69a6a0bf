//! The 32-byte immediate message and the kit's typed views of it.

use crate::{AbiError, MAX_IMM_DATA_LEN, Pod, bytes_of};
use core::mem::{align_of, size_of};
use memoffset::offset_of;
use static_assertions::{const_assert, const_assert_eq};

/// Bytes taken by [`MsgHeader`] at the start of every [`ImmMessage`].
pub const HEADER_LEN: usize = 8;
/// Bytes left for the payload after the header.
pub const PAYLOAD_LEN: usize = MAX_IMM_DATA_LEN - HEADER_LEN;

crate::pod_struct! {
    /// The header the kit's kernels put in front of every payload.
    #[derive(Debug, PartialEq, Eq, Hash, Default)]
    pub struct MsgHeader {
        /// What the message asks for; see [`Opcode`].
        pub opcode: u16,
        /// Opcode-specific flags; zero when unused.
        pub flags: u16,
        /// Sequence number chosen by the sender, echoed in replies.
        pub seq: u32,
    }
}

crate::pod_struct! {
    /// One MsgQ immediate: exactly 32 bytes, 32-byte aligned so that it never straddles a
    /// cache line, and valid for every bit pattern.
    ///
    /// The bytes on the wire are exactly the bytes of this struct (native byte order; host and
    /// DPA are both little-endian).
    #[repr(align(32))]
    #[derive(Debug, PartialEq, Eq, Hash, Default)]
    pub struct ImmMessage {
        /// Opcode, flags and sequence number.
        pub header: MsgHeader,
        /// The payload; read it through [`ImmMessage::view`].
        pub payload: [u8; PAYLOAD_LEN],
    }
}

const_assert_eq!(size_of::<MsgHeader>(), HEADER_LEN);
const_assert_eq!(size_of::<ImmMessage>(), MAX_IMM_DATA_LEN);
const_assert_eq!(align_of::<ImmMessage>(), 32);
const_assert!(64 % align_of::<ImmMessage>() == 0);
const_assert_eq!(offset_of!(MsgHeader, opcode), 0);
const_assert_eq!(offset_of!(MsgHeader, flags), 2);
const_assert_eq!(offset_of!(MsgHeader, seq), 4);
const_assert_eq!(offset_of!(ImmMessage, header), 0);
const_assert_eq!(offset_of!(ImmMessage, payload), HEADER_LEN);

/// The operations the kit's own kernels understand.
#[repr(u16)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Opcode {
    /// Reply with the same 32 bytes.
    Echo = 0x0001,
    /// One leg of a ping-pong exchange.
    PingPong = 0x0002,
    /// Copy a range with DMA and report a checksum ([`DmaOffloadDesc`]).
    DmaOffload = 0x0003,
    /// The answer to an offload request ([`OffloadResult`]).
    OffloadResult = 0x0004,
}

impl Opcode {
    /// Every opcode.
    pub const ALL: [Opcode; 4] = [
        Opcode::Echo,
        Opcode::PingPong,
        Opcode::DmaOffload,
        Opcode::OffloadResult,
    ];

    /// The opcode for a raw header value.
    pub const fn from_raw(raw: u16) -> Result<Self, AbiError> {
        match raw {
            0x0001 => Ok(Opcode::Echo),
            0x0002 => Ok(Opcode::PingPong),
            0x0003 => Ok(Opcode::DmaOffload),
            0x0004 => Ok(Opcode::OffloadResult),
            other => Err(AbiError::UnknownOpcode(other)),
        }
    }
}

/// A typed payload that travels after a [`MsgHeader`] with a fixed opcode.
///
/// Types implementing it must fit in [`PAYLOAD_LEN`] (24) bytes with alignment at most 8; both
/// are checked at compile time where a message is built or viewed.
pub trait Payload: Pod {
    /// The opcode that marks this payload.
    const OPCODE: Opcode;
}

impl ImmMessage {
    /// A message whose every byte is zero.
    pub const ZEROED: ImmMessage = ImmMessage {
        header: MsgHeader {
            opcode: 0,
            flags: 0,
            seq: 0,
        },
        payload: [0; PAYLOAD_LEN],
    };

    /// A message carrying `payload`, stamped with its opcode and `seq`.
    pub fn new<P: Payload>(seq: u32, payload: &P) -> Self {
        const { assert!(size_of::<P>() <= PAYLOAD_LEN && align_of::<P>() <= 8) };
        let mut msg = ImmMessage {
            header: MsgHeader {
                opcode: P::OPCODE as u16,
                flags: 0,
                seq,
            },
            payload: [0; PAYLOAD_LEN],
        };
        msg.payload[..size_of::<P>()].copy_from_slice(bytes_of(payload));
        msg
    }

    /// The same message with header flags `flags`.
    pub fn with_flags(mut self, flags: u16) -> Self {
        self.header.flags = flags;
        self
    }

    /// The payload as `P`, if the header carries `P`'s opcode.
    pub fn view<P: Payload>(&self) -> Result<P, AbiError> {
        const { assert!(size_of::<P>() <= PAYLOAD_LEN && align_of::<P>() <= 8) };
        if self.header.opcode != P::OPCODE as u16 {
            return Err(AbiError::WrongOpcode {
                expected: P::OPCODE as u16,
                found: self.header.opcode,
            });
        }
        // SAFETY: the payload holds at least size_of::<P>() bytes (asserted above), P is Pod so
        // any bytes are a valid P, and read_unaligned has no alignment requirement.
        Ok(unsafe { self.payload.as_ptr().cast::<P>().read_unaligned() })
    }

    /// The header's opcode.
    pub fn opcode(&self) -> Result<Opcode, AbiError> {
        Opcode::from_raw(self.header.opcode)
    }

    /// A message from received immediate bytes. Shorter input is zero-filled; more than 32 bytes
    /// is an error, never a truncation.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, AbiError> {
        if bytes.len() > MAX_IMM_DATA_LEN {
            return Err(AbiError::TooLong { len: bytes.len() });
        }
        let mut raw = [0u8; MAX_IMM_DATA_LEN];
        raw[..bytes.len()].copy_from_slice(bytes);
        // SAFETY: ImmMessage is Pod and exactly MAX_IMM_DATA_LEN bytes; read_unaligned does not
        // need `raw` to be 32-byte aligned.
        Ok(unsafe { raw.as_ptr().cast::<ImmMessage>().read_unaligned() })
    }

    /// The 32 bytes that go on the wire.
    pub fn as_bytes(&self) -> &[u8; MAX_IMM_DATA_LEN] {
        // SAFETY: ImmMessage is Pod, exactly MAX_IMM_DATA_LEN bytes, and [u8; N] has alignment 1.
        unsafe { &*(self as *const ImmMessage).cast::<[u8; MAX_IMM_DATA_LEN]>() }
    }
}

crate::pod_struct! {
    /// [`Opcode::Echo`]: the kernel sends the message back unchanged.
    #[derive(Debug, PartialEq, Eq, Hash, Default)]
    pub struct Echo {
        /// A value the sender uses to match the reply.
        pub token: u64,
        /// When the sender sent it, in the sender's clock.
        pub timestamp_ns: u64,
        /// Free for the sender; returned unchanged.
        pub tag: u64,
    }
}

crate::pod_struct! {
    /// [`Opcode::PingPong`]: each side answers with `count + 1`.
    #[derive(Debug, PartialEq, Eq, Hash, Default)]
    pub struct PingPong {
        /// Number of legs so far.
        pub count: u64,
        /// When the exchange started, in the initiator's clock.
        pub started_ns: u64,
        /// Free for the sender; returned unchanged.
        pub tag: u64,
    }
}

crate::pod_struct! {
    /// [`Opcode::DmaOffload`]: copy `length` bytes from `src_offset` in the source mmap to
    /// `dst_offset` in the destination mmap, then report an [`OffloadResult`].
    #[derive(Debug, PartialEq, Eq, Hash, Default)]
    pub struct DmaOffloadDesc {
        /// Offset into the source memory range.
        pub src_offset: u64,
        /// Offset into the destination memory range.
        pub dst_offset: u64,
        /// Bytes to copy.
        pub length: u64,
    }
}

crate::pod_struct! {
    /// [`Opcode::OffloadResult`]: the outcome of an offload request.
    #[derive(Debug, PartialEq, Eq, Hash, Default)]
    pub struct OffloadResult {
        /// A `doca_error_t` value; 0 (`DOCA_SUCCESS`) when the work was done.
        pub status: u32,
        /// Zero.
        pub reserved: u32,
        /// Bytes processed.
        pub length: u64,
        /// [`checksum64`](crate::checksum64) of the bytes the kernel read.
        pub checksum: u64,
    }
}

impl Payload for Echo {
    const OPCODE: Opcode = Opcode::Echo;
}
impl Payload for PingPong {
    const OPCODE: Opcode = Opcode::PingPong;
}
impl DmaOffloadDesc {
    /// Header flag: copy only, skip the checksum (the result carries 0). For measuring the copy.
    pub const FLAG_NO_CHECKSUM: u16 = 1 << 0;
}

impl Payload for DmaOffloadDesc {
    const OPCODE: Opcode = Opcode::DmaOffload;
}
impl Payload for OffloadResult {
    const OPCODE: Opcode = Opcode::OffloadResult;
}

crate::impl_immediate!(
    MsgHeader,
    ImmMessage,
    Echo,
    PingPong,
    DmaOffloadDesc,
    OffloadResult
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::from_imm_bytes;

    #[test]
    fn message_round_trips_through_bytes() {
        let echo = Echo {
            token: 7,
            timestamp_ns: 123_456_789,
            tag: u64::MAX,
        };
        let msg = ImmMessage::new(42, &echo);
        let bytes = *msg.as_bytes();
        assert_eq!(&bytes[..2], &(Opcode::Echo as u16).to_ne_bytes());
        assert_eq!(&bytes[4..8], &42u32.to_ne_bytes());
        assert_eq!(&bytes[8..16], &7u64.to_ne_bytes());

        let back = ImmMessage::from_bytes(&bytes).unwrap();
        assert_eq!(back, msg);
        assert_eq!(back.opcode(), Ok(Opcode::Echo));
        assert_eq!(back.view::<Echo>(), Ok(echo));
        assert_eq!(from_imm_bytes::<ImmMessage>(&bytes), Ok(msg));
    }

    #[test]
    fn every_view_round_trips() {
        let desc = DmaOffloadDesc {
            src_offset: 4096,
            dst_offset: 64,
            length: 1 << 20,
        };
        assert_eq!(ImmMessage::new(1, &desc).view::<DmaOffloadDesc>(), Ok(desc));
        let result = OffloadResult {
            status: 0,
            reserved: 0,
            length: 1 << 20,
            checksum: 0xfeed,
        };
        assert_eq!(
            ImmMessage::new(2, &result).view::<OffloadResult>(),
            Ok(result)
        );
        let ping = PingPong {
            count: 3,
            started_ns: 9,
            tag: 1,
        };
        assert_eq!(ImmMessage::new(3, &ping).view::<PingPong>(), Ok(ping));
    }

    #[test]
    fn short_input_is_zero_filled() {
        let msg = ImmMessage::from_bytes(&[1, 0, 0, 0, 9, 0, 0, 0]).unwrap();
        assert_eq!(
            msg.header,
            MsgHeader {
                opcode: 1,
                flags: 0,
                seq: 9
            }
        );
        assert_eq!(msg.payload, [0; PAYLOAD_LEN]);
        assert_eq!(ImmMessage::from_bytes(&[]), Ok(ImmMessage::ZEROED));
    }

    #[test]
    fn more_than_32_bytes_is_an_error_not_a_truncation() {
        let err = ImmMessage::from_bytes(&[0xab; 33]).unwrap_err();
        assert_eq!(err, AbiError::TooLong { len: 33 });
        assert!(err.to_string().contains("32 bytes"));
    }

    #[test]
    fn views_check_the_opcode() {
        let msg = ImmMessage::new(5, &Echo::default());
        assert_eq!(
            msg.view::<DmaOffloadDesc>(),
            Err(AbiError::WrongOpcode {
                expected: 3,
                found: 1
            })
        );
        let mut unknown = msg;
        unknown.header.opcode = 0x7777;
        assert_eq!(unknown.opcode(), Err(AbiError::UnknownOpcode(0x7777)));
    }

    #[test]
    fn opcodes_round_trip() {
        for op in Opcode::ALL {
            assert_eq!(Opcode::from_raw(op as u16), Ok(op));
        }
        assert_eq!(Opcode::from_raw(0), Err(AbiError::UnknownOpcode(0)));
    }

    #[test]
    fn any_bit_pattern_is_a_message() {
        for fill in [0x00u8, 0x5a, 0xff] {
            let msg = ImmMessage::from_bytes(&[fill; 32]).unwrap();
            assert_eq!(msg.as_bytes(), &[fill; 32]);
        }
    }
}
