//! The soft device's transport between processes (dpakit-wire): how a Comch connection
//! reaches the other side.
//!
//! * [`runtime`]: the private runtime directory, where a server's socket is and why a client
//!   finds the servers of its own PCI function only (Comch's isolation by representor);
//! * [`socket`]: `SOCK_SEQPACKET` sockets and the poller a progress engine waits on;
//! * [`proto`]: the handshake and control messages, decoded without trusting the peer;
//! * [`ctrl_ring`]: the control path in shared memory, a ring per direction of a connection;
//! * [`fast_path`]: the shared-memory rings of the Comch fast path and their announcement,
//!   with every byte and descriptor a peer hands over checked;
//! * [`stats`]: the live view's socket, where a tool asks a running program what its DPA
//!   contexts are doing.
//!
//! A layer of the soft device (docs/design.md): it knows DOCA's error codes and the documented
//! limits ([`dpakit_abi::soft::limits`]), nothing of the model or the C API above it. Its API is
//! the soft device's own, unstable, and not for programs.

pub mod ctrl_ring;
pub mod fast_path;
/// Doors for the fuzz targets into the transport's decoders (feature `fuzzing`).
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod proto;
pub mod runtime;
pub mod socket;
pub mod stats;

pub use runtime::{any_uid, runtime_dir, server_path, service_path};
pub use socket::{Connect, Listener, Poller, Recv, SeqPacket, eventfd, remove_stale};

use dpakit_abi::Error;

/// The result of a transport call: DOCA's code and the rule that was broken.
pub type Result<T, E = Error> = core::result::Result<T, E>;
