//! An endpoint's properties and the rules DOCA states for them: sizes are raised to the
//! minimum, queue sizes rounded up to a power of two, zero and anything past the device's
//! maximum refused, nothing changed once the endpoint listens or connects.

use crate::error::Result;
use crate::limits::{
    COMM_CHANNEL_MAX_MSG_SIZE, COMM_CHANNEL_MAX_QUEUE_SIZE, COMM_CHANNEL_MIN_MSG_SIZE,
    COMM_CHANNEL_MIN_QUEUE_SIZE,
};
use dpakit_abi::bail;

/// Default largest message of an endpoint whose program set none, in bytes.
pub const DEFAULT_MAX_MSG_SIZE: u32 = COMM_CHANNEL_MAX_MSG_SIZE as u32;

/// Default send and receive queue size, in messages.
pub const DEFAULT_QUEUE_SIZE: u32 = 64;

/// Whether sends and receives wait (DOCA 1.2/1.3 endpoints made from attributes, unless they
/// ask for `DOCA_CC_INIT_FLAG_NONBLOCK`) or answer `AGAIN` (property-based endpoints, DOCA 1.4
/// and later, which programs drive with the event channel or by polling).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `sendto` waits for room, `recvfrom` for a message (unless the call says DONTWAIT).
    Blocking,
    /// Both answer `DOCA_ERROR_AGAIN` instead of waiting.
    NonBlocking,
}

/// The properties of one endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Props {
    /// Largest message this endpoint sends or receives, in bytes.
    pub max_msg_size: u32,
    /// Messages in flight to one peer at most (sent, not yet taken by its program).
    pub send_queue_size: u32,
    /// Messages one peer may have waiting here at most (its credit).
    pub recv_queue_size: u32,
    /// Blocking or not, for calls that do not say.
    pub mode: Mode,
}

impl Props {
    /// The defaults, in `mode`.
    pub fn new(mode: Mode) -> Self {
        Self {
            max_msg_size: DEFAULT_MAX_MSG_SIZE,
            send_queue_size: DEFAULT_QUEUE_SIZE,
            recv_queue_size: DEFAULT_QUEUE_SIZE,
            mode,
        }
    }

    /// `doca_comm_channel_ep_set_max_msg_size`: 1..=4080 bytes, raised to 256.
    pub fn set_max_msg_size(&mut self, size: u32) -> Result<()> {
        let max = COMM_CHANNEL_MAX_MSG_SIZE;
        if size == 0 || size as usize > max {
            bail!(
                InvalidValue,
                "max_msg_size {size} is outside 1..={max} bytes \
                 (doca_comm_channel_get_max_message_size)"
            );
        }
        self.max_msg_size = size.max(COMM_CHANNEL_MIN_MSG_SIZE as u32);
        Ok(())
    }

    /// `doca_comm_channel_ep_set_send_queue_size`.
    pub fn set_send_queue_size(&mut self, size: u32) -> Result<()> {
        self.send_queue_size = queue_size("send_queue_size", size)?;
        Ok(())
    }

    /// `doca_comm_channel_ep_set_recv_queue_size`.
    pub fn set_recv_queue_size(&mut self, size: u32) -> Result<()> {
        self.recv_queue_size = queue_size("recv_queue_size", size)?;
        Ok(())
    }
}

/// A queue size as DOCA takes it: 1..=8191 messages, raised to 16, rounded up to a power of two.
fn queue_size(what: &str, size: u32) -> Result<u32> {
    let max = COMM_CHANNEL_MAX_QUEUE_SIZE;
    if size == 0 || size as usize > max {
        bail!(
            InvalidValue,
            "{what} {size} is outside 1..={max} messages (doca_comm_channel_get_max_{}_size)",
            if what.starts_with("send") {
                "send_queue"
            } else {
                "recv_queue"
            }
        );
    }
    Ok(size
        .max(COMM_CHANNEL_MIN_QUEUE_SIZE as u32)
        .next_power_of_two())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpakit_abi::ErrorCode;

    #[test]
    fn sizes_are_raised_rounded_and_bounded() {
        let mut p = Props::new(Mode::NonBlocking);
        p.set_max_msg_size(1).unwrap();
        assert_eq!(p.max_msg_size, 256);
        p.set_max_msg_size(4080).unwrap();
        assert_eq!(p.max_msg_size, 4080);
        for bad in [0, 4081, u32::MAX] {
            let e = p.set_max_msg_size(bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidValue, "{e}");
        }
        assert_eq!(p.max_msg_size, 4080, "a refused size changes nothing");
        p.set_send_queue_size(1).unwrap();
        assert_eq!(p.send_queue_size, 16);
        p.set_recv_queue_size(100).unwrap();
        assert_eq!(p.recv_queue_size, 128);
        p.set_recv_queue_size(8191).unwrap();
        assert_eq!(p.recv_queue_size, 8192);
        for bad in [0, 8192] {
            let e = p.set_send_queue_size(bad).unwrap_err();
            assert!(e.message().contains("send_queue_size"), "{e}");
        }
    }
}
