//! The legacy DOCA Comm Channel (DOCA 1.2 to 2.8): endpoints (`doca_comm_channel_ep_t`) and the
//! connections between them (`doca_comm_channel_addr_t`), between processes over the soft
//! device's transport (`dpakit-wire`), with the same isolation and trust rules as Comch.
//!
//! A service listens on the Arm side under a name, for the host function of its representor;
//! each client on that function connects its own endpoint. Messages are 1 to `max_msg_size`
//! bytes and arrive once, in order; flow control is by credit (see `peer.rs`). Calls make
//! progress themselves and block or answer `AGAIN` as the endpoint's [`Mode`] says; the send
//! and receive event channels are epoll descriptors a program can wait on.

mod endpoint;
mod peer;
mod props;

pub use endpoint::{Endpoint, Received, check_service_name};
pub use peer::{PeerId, PeerState, PeerStats};
pub use props::{DEFAULT_MAX_MSG_SIZE, DEFAULT_QUEUE_SIZE, Mode, Props};

#[cfg(test)]
mod hostile_tests;
#[cfg(test)]
mod liveness_tests;
#[cfg(test)]
mod tests;
