//! The legacy Comm Channel (`doca_comm_channel.h`, DOCA 1.2 to 2.8): an [`Endpoint`] is a
//! service listening under a name on the BlueField Arm side, or a client connected to one from
//! the host; a [`PeerAddr`] is one connection. Messages are 1 to `max_msg_size` bytes and
//! arrive once, in order.
//!
//! `try_send` / `try_recv` answer [`ErrorCode::Again`] where DOCA does; `send` / `recv` wait on
//! the endpoint's event channels ([`Endpoint::send_channel`], [`Endpoint::recv_channel`],
//! pollable descriptors a program can also hand to its own epoll loop). The soft device's rules
//! are in docs/comm-channel.md.

use crate::UserData;
use crate::dev::{Dev, DevRep};
use crate::error::{Error, Result, bail, doca};
use dpakit_abi::ErrorCode;
use dpakit_sys as sys;
use std::ffi::CString;
use std::fmt;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::ptr::null_mut;
use std::time::{Duration, Instant};

/// `doca_comm_channel_addr_t`: one connection of an endpoint. A plain handle: once
/// disconnected it is refused (`INVALID_VALUE`), never used.
#[doc(alias = "doca_comm_channel_addr_t")]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PeerAddr {
    raw: *mut sys::doca_comm_channel_addr_t,
}

impl PeerAddr {
    /// The `struct doca_comm_channel_addr_t *`, for calls through `dpakit-sys`.
    pub fn as_raw(&self) -> *mut sys::doca_comm_channel_addr_t {
        self.raw
    }
}

impl fmt::Debug for PeerAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PeerAddr({:p})", self.raw)
    }
}

/// A connection's counters, as `doca_comm_channel_peer_addr_update_info` snapshots them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeerStats {
    /// `doca_comm_channel_peer_addr_get_send_messages`.
    pub send_messages: u64,
    /// `doca_comm_channel_peer_addr_get_send_bytes`.
    pub send_bytes: u64,
    /// `doca_comm_channel_peer_addr_get_recv_messages`.
    pub recv_messages: u64,
    /// `doca_comm_channel_peer_addr_get_recv_bytes`.
    pub recv_bytes: u64,
    /// `doca_comm_channel_peer_addr_get_send_in_flight_messages`: sent, not yet taken by the
    /// peer's program.
    pub send_in_flight_messages: u64,
}

/// What a receive found: a message, or a peer that went away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A message of `len` bytes (at the start of the buffer) from `peer`.
    Message {
        /// Its length.
        len: usize,
        /// The connection it came on.
        peer: PeerAddr,
    },
    /// `peer` went to the error state (the other side disconnected or died): disconnect it.
    /// Reported once per connection.
    Reset {
        /// The connection.
        peer: PeerAddr,
    },
}

/// Configuration of an [`Endpoint`]: `doca_comm_channel_ep_create` and the `ep_set_*`
/// properties, then [`listen`](Self::listen) or [`connect`](Self::connect).
#[derive(Debug, Clone)]
pub struct EndpointBuilder {
    dev: Dev,
    rep: Option<DevRep>,
    max_msg_size: Option<u16>,
    send_queue_size: Option<u16>,
    recv_queue_size: Option<u16>,
}

impl EndpointBuilder {
    /// `doca_comm_channel_ep_set_device_rep`: the representor of the clients' host function
    /// (mandatory for a service).
    #[doc(alias = "doca_comm_channel_ep_set_device_rep")]
    pub fn representor(mut self, rep: &DevRep) -> Self {
        self.rep = Some(rep.clone());
        self
    }

    /// `doca_comm_channel_ep_set_max_msg_size`: 1 to 4,080 bytes, raised to 256.
    #[doc(alias = "doca_comm_channel_ep_set_max_msg_size")]
    pub fn max_msg_size(mut self, size: u16) -> Self {
        self.max_msg_size = Some(size);
        self
    }

    /// `doca_comm_channel_ep_set_send_queue_size`: messages in flight to one peer at most.
    #[doc(alias = "doca_comm_channel_ep_set_send_queue_size")]
    pub fn send_queue_size(mut self, size: u16) -> Self {
        self.send_queue_size = Some(size);
        self
    }

    /// `doca_comm_channel_ep_set_recv_queue_size`: messages one peer may have waiting here.
    #[doc(alias = "doca_comm_channel_ep_set_recv_queue_size")]
    pub fn recv_queue_size(mut self, size: u16) -> Self {
        self.recv_queue_size = Some(size);
        self
    }

    fn create(&self) -> Result<Endpoint> {
        let mut raw = null_mut();
        doca!(doca_comm_channel_ep_create(&mut raw))?;
        let ep = Endpoint {
            raw,
            _dev: self.dev.clone(),
            _rep: self.rep.clone(),
        };
        doca!(doca_comm_channel_ep_set_device(raw, self.dev.raw()))?;
        if let Some(rep) = &self.rep {
            doca!(doca_comm_channel_ep_set_device_rep(raw, rep.raw()))?;
        }
        if let Some(n) = self.max_msg_size {
            doca!(doca_comm_channel_ep_set_max_msg_size(raw, n))?;
        }
        if let Some(n) = self.send_queue_size {
            doca!(doca_comm_channel_ep_set_send_queue_size(raw, n))?;
        }
        if let Some(n) = self.recv_queue_size {
            doca!(doca_comm_channel_ep_set_recv_queue_size(raw, n))?;
        }
        Ok(ep)
    }

    /// `doca_comm_channel_ep_listen`: a service named `name` (on an Arm-side device, with a
    /// representor).
    #[doc(alias = "doca_comm_channel_ep_listen")]
    pub fn listen(self, name: &str) -> Result<Endpoint> {
        let name = c_name(name)?;
        let ep = self.create()?;
        doca!(doca_comm_channel_ep_listen(ep.raw, name.as_ptr()))?;
        Ok(ep)
    }

    /// `doca_comm_channel_ep_connect` (again while no service of that name listens yet), then
    /// `doca_comm_channel_peer_addr_update_info` until the handshake completes; `TIME_OUT` (or
    /// `NOT_CONNECTED`) after `timeout`: a client connected to the service `name`, and its
    /// connection.
    #[doc(alias = "doca_comm_channel_ep_connect")]
    pub fn connect(self, name: &str, timeout: Duration) -> Result<(Endpoint, PeerAddr)> {
        let deadline = Instant::now() + timeout;
        let (ep, peer) = loop {
            match self.clone().start_connect(name) {
                Err(e) if e.code() == ErrorCode::NotConnected && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                started => break started?,
            }
        };
        loop {
            if ep.is_connected(peer)? {
                return Ok((ep, peer));
            }
            if Instant::now() >= deadline {
                bail!(
                    TimeOut,
                    "the service did not complete the handshake within {timeout:?}"
                );
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

impl EndpointBuilder {
    /// `doca_comm_channel_ep_connect` without waiting: the handshake completes while the
    /// program goes on (and, in one thread, while the service accepts); ask
    /// [`Endpoint::is_connected`].
    pub fn start_connect(self, name: &str) -> Result<(Endpoint, PeerAddr)> {
        let name = c_name(name)?;
        let ep = self.create()?;
        let mut raw = null_mut();
        doca!(doca_comm_channel_ep_connect(
            ep.raw,
            name.as_ptr(),
            &mut raw
        ))?;
        Ok((ep, PeerAddr { raw }))
    }
}

fn c_name(name: &str) -> Result<CString> {
    CString::new(name)
        .map_err(|_| Error::new(ErrorCode::InvalidValue, "a service name with a NUL byte"))
}

/// `doca_comm_channel_ep_t`: a service or a client endpoint. Destroying it
/// (`doca_comm_channel_ep_destroy`, on drop) disconnects every connection.
///
/// A service and a client in one program (on hardware the client runs on the host):
///
/// ```
/// use dpakit::comm_channel::{Endpoint, Event};
/// use dpakit::dev::{Dev, DevRep};
/// use std::time::{Duration, Instant};
///
/// # fn main() -> dpakit::Result<()> {
/// let wait = Duration::from_secs(5);
/// let arm = Dev::open_by_pci("03:00.0")?;
/// let rep = DevRep::open_by_pci(&arm, "b1:00.0")?;
/// let service = Endpoint::builder(&arm).representor(&rep).listen("doc-comm-channel")?;
/// let host = Dev::open_by_pci("b1:00.0")?;
/// let (client, to_service) = Endpoint::builder(&host).start_connect("doc-comm-channel")?;
/// // In one thread the service accepts while it looks for messages.
/// let mut buf = [0u8; 64];
/// let deadline = Instant::now() + wait;
/// while !client.is_connected(to_service)? && Instant::now() < deadline {
///     let _ = service.try_recv(&mut buf);
/// }
/// client.send(to_service, b"hello")?;
/// match service.recv_timeout(&mut buf, wait)? {
///     Event::Message { len, peer } => {
///         let answer = buf[..len].to_vec();
///         service.send(peer, &answer)?;
///     }
///     Event::Reset { .. } => panic!("the client went away"),
/// }
/// let Event::Message { len, .. } = client.recv_timeout(&mut buf, wait)? else {
///     panic!("no answer");
/// };
/// assert_eq!(&buf[..len], b"hello");
/// # Ok(())
/// # }
/// ```
#[doc(alias = "doca_comm_channel_ep_t")]
pub struct Endpoint {
    raw: *mut sys::doca_comm_channel_ep_t,
    _dev: Dev,
    _rep: Option<DevRep>,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("raw", &self.raw)
            .field("service", &self._rep.is_some())
            .finish()
    }
}

impl Drop for Endpoint {
    #[doc(alias = "doca_comm_channel_ep_destroy")]
    fn drop(&mut self) {
        let _ = doca!(doca_comm_channel_ep_destroy(self.raw));
    }
}

/// One of an endpoint's event channels: a descriptor to poll, valid while the endpoint lives.
#[derive(Debug, Clone, Copy)]
pub struct EventChannel<'a> {
    fd: BorrowedFd<'a>,
}

impl AsRawFd for EventChannel<'_> {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Waits up to `ms` (-1: for ever) for `fd` to turn readable. `SHUTDOWN` on SIGINT or SIGTERM
/// (Ctrl-C), once per signal (see [`interrupt`](crate::interrupt)); any other outcome sends the
/// caller back to look at its endpoint.
fn wait_readable(fd: RawFd, ms: i32, what: &str) -> Result<()> {
    match crate::interrupt::poll_readable(fd, ms, what) {
        Err(e) if e.code() == ErrorCode::Shutdown => Err(e),
        _ => Ok(()),
    }
}

/// Milliseconds left before `deadline` for `poll` (-1: none).
fn left_ms(deadline: Option<Instant>) -> i32 {
    match deadline {
        None => -1,
        Some(d) => d
            .saturating_duration_since(Instant::now())
            .as_millis()
            .min(i32::MAX as u128) as i32,
    }
}

impl Endpoint {
    /// `doca_comm_channel_ep_create` on `dev` (`doca_comm_channel_ep_set_device`).
    #[doc(alias = "doca_comm_channel_ep_create")]
    #[doc(alias = "doca_comm_channel_ep_set_device")]
    pub fn builder(dev: &Dev) -> EndpointBuilder {
        EndpointBuilder {
            dev: dev.clone(),
            rep: None,
            max_msg_size: None,
            send_queue_size: None,
            recv_queue_size: None,
        }
    }

    /// The `struct doca_comm_channel_ep_t *`, for calls through `dpakit-sys`.
    pub fn as_raw(&self) -> *mut sys::doca_comm_channel_ep_t {
        self.raw
    }

    /// `doca_comm_channel_ep_get_max_msg_size`: the size in effect.
    #[doc(alias = "doca_comm_channel_ep_get_max_msg_size")]
    pub fn max_msg_size(&self) -> Result<u16> {
        let mut v = 0;
        doca!(doca_comm_channel_ep_get_max_msg_size(self.raw, &mut v))?;
        Ok(v)
    }

    /// `doca_comm_channel_ep_get_send_queue_size`: the size in effect.
    #[doc(alias = "doca_comm_channel_ep_get_send_queue_size")]
    pub fn send_queue_size(&self) -> Result<u16> {
        let mut v = 0;
        doca!(doca_comm_channel_ep_get_send_queue_size(self.raw, &mut v))?;
        Ok(v)
    }

    /// `doca_comm_channel_ep_get_recv_queue_size`: the size in effect.
    #[doc(alias = "doca_comm_channel_ep_get_recv_queue_size")]
    pub fn recv_queue_size(&self) -> Result<u16> {
        let mut v = 0;
        doca!(doca_comm_channel_ep_get_recv_queue_size(self.raw, &mut v))?;
        Ok(v)
    }

    /// `doca_comm_channel_ep_sendto`, once: `AGAIN` while the connection's send queue is full.
    #[doc(alias = "doca_comm_channel_ep_sendto")]
    pub fn try_send(&self, peer: PeerAddr, msg: &[u8]) -> Result<()> {
        doca!(doca_comm_channel_ep_sendto(
            self.raw,
            msg.as_ptr().cast(),
            msg.len(),
            sys::DOCA_CC_MSG_FLAG_NONE as i32,
            peer.raw
        ))
    }

    /// Sends `msg` to `peer`, waiting on the send channel while its queue is full: for the
    /// peer's stall time at most (`COMM_CHANNEL_PEER_STALL_TIMEOUT_MS` on the soft device), then
    /// `CONNECTION_ABORTED`, the connection in the error state. `SHUTDOWN` on Ctrl-C, as for
    /// [`recv`](Self::recv).
    pub fn send(&self, peer: PeerAddr, msg: &[u8]) -> Result<()> {
        loop {
            match self.try_send(peer, msg) {
                Err(e) if e.code() == ErrorCode::Again => {
                    self.arm_send()?;
                    wait_readable(self.send_channel()?.as_raw_fd(), 100, "Endpoint::send")?;
                }
                done => return done,
            }
        }
    }

    /// `doca_comm_channel_ep_recvfrom`, once: the next message into `buf`, or a connection's
    /// error; `AGAIN` when nothing waits.
    #[doc(alias = "doca_comm_channel_ep_recvfrom")]
    pub fn try_recv(&self, buf: &mut [u8]) -> Result<Event> {
        let mut len = buf.len();
        let mut peer = null_mut();
        match doca!(doca_comm_channel_ep_recvfrom(
            self.raw,
            buf.as_mut_ptr().cast(),
            &mut len,
            sys::DOCA_CC_MSG_FLAG_NONE as i32,
            &mut peer
        )) {
            Ok(()) => Ok(Event::Message {
                len,
                peer: PeerAddr { raw: peer },
            }),
            Err(e) if e.code() == ErrorCode::ConnectionReset && !peer.is_null() => {
                Ok(Event::Reset {
                    peer: PeerAddr { raw: peer },
                })
            }
            Err(e) => Err(e),
        }
    }

    /// The next message or connection error, waiting for one on the receive channel.
    /// `SHUTDOWN` if SIGINT or SIGTERM (Ctrl-C) arrives while it waits, once per signal (see
    /// [`interrupt`](crate::interrupt)).
    pub fn recv(&self, buf: &mut [u8]) -> Result<Event> {
        self.recv_until(buf, None)
    }

    /// As [`recv`](Self::recv), `TIME_OUT` after `timeout`.
    pub fn recv_timeout(&self, buf: &mut [u8], timeout: Duration) -> Result<Event> {
        self.recv_until(buf, Some(Instant::now() + timeout))
    }

    fn recv_until(&self, buf: &mut [u8], deadline: Option<Instant>) -> Result<Event> {
        loop {
            match self.try_recv(buf) {
                Err(e) if e.code() == ErrorCode::Again => {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        bail!(TimeOut, "no message arrived in time");
                    }
                    self.arm_recv()?;
                    let fd = self.recv_channel()?.as_raw_fd();
                    wait_readable(fd, left_ms(deadline).min(100), "Endpoint::recv")?;
                }
                done => return done,
            }
        }
    }

    /// `doca_comm_channel_ep_disconnect`: ends `peer` on this side and frees it.
    #[doc(alias = "doca_comm_channel_ep_disconnect")]
    pub fn disconnect(&self, peer: PeerAddr) -> Result<()> {
        doca!(doca_comm_channel_ep_disconnect(self.raw, peer.raw))
    }

    /// `doca_comm_channel_ep_get_peer_addr_list` (a service): its connections.
    #[doc(alias = "doca_comm_channel_ep_get_peer_addr_list")]
    #[doc(alias = "doca_comm_channel_ep_update_service_state_info")]
    pub fn peers(&self) -> Result<Vec<PeerAddr>> {
        doca!(doca_comm_channel_ep_update_service_state_info(self.raw))?;
        let (mut list, mut n) = (null_mut(), 0u32);
        doca!(doca_comm_channel_ep_get_peer_addr_list(
            self.raw, &mut list, &mut n
        ))?;
        let peer = |i: usize| {
            // SAFETY: DOCA hands `n` addresses, valid until the next call.
            let raw = unsafe { *list.add(i) };
            PeerAddr { raw }
        };
        Ok((0..n as usize).map(peer).collect())
    }

    /// `doca_comm_channel_ep_get_pending_connections` (a service): handshakes under way.
    #[doc(alias = "doca_comm_channel_ep_get_pending_connections")]
    pub fn pending_connections(&self) -> Result<u32> {
        let mut n = 0;
        doca!(doca_comm_channel_ep_get_pending_connections(
            self.raw, &mut n
        ))?;
        Ok(n)
    }

    fn channels(&self) -> Result<(RawFd, RawFd)> {
        let (mut send, mut recv) = (-1, -1);
        doca!(doca_comm_channel_ep_get_event_channel(
            self.raw, &mut send, &mut recv
        ))?;
        Ok((send, recv))
    }

    /// `doca_comm_channel_ep_get_event_channel`'s send channel: readable when a connection has
    /// room for a message, after [`arm_send`](Self::arm_send).
    #[doc(alias = "doca_comm_channel_ep_get_event_channel")]
    pub fn send_channel(&self) -> Result<EventChannel<'_>> {
        let (send, _) = self.channels()?;
        // SAFETY: the endpoint owns the descriptor until it is destroyed, which the borrow
        // outlives.
        let fd = unsafe { BorrowedFd::borrow_raw(send) };
        Ok(EventChannel { fd })
    }

    /// The receive channel: readable when a message or a connection's error waits, after
    /// [`arm_recv`](Self::arm_recv).
    pub fn recv_channel(&self) -> Result<EventChannel<'_>> {
        let (_, recv) = self.channels()?;
        // SAFETY: as for the send channel.
        let fd = unsafe { BorrowedFd::borrow_raw(recv) };
        Ok(EventChannel { fd })
    }

    /// `doca_comm_channel_ep_event_handle_arm_send`.
    #[doc(alias = "doca_comm_channel_ep_event_handle_arm_send")]
    pub fn arm_send(&self) -> Result<()> {
        doca!(doca_comm_channel_ep_event_handle_arm_send(self.raw))
    }

    /// `doca_comm_channel_ep_event_handle_arm_recv`.
    #[doc(alias = "doca_comm_channel_ep_event_handle_arm_recv")]
    pub fn arm_recv(&self) -> Result<()> {
        doca!(doca_comm_channel_ep_event_handle_arm_recv(self.raw))
    }

    /// `doca_comm_channel_peer_addr_update_info`: whether the handshake of `peer` completed
    /// (`false` while it runs; the service's refusal or the connection's error otherwise).
    pub fn is_connected(&self, peer: PeerAddr) -> Result<bool> {
        match doca!(doca_comm_channel_peer_addr_update_info(peer.raw)) {
            Ok(()) => Ok(true),
            Err(e) if e.code() == ErrorCode::ConnectionInProgress => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// `doca_comm_channel_peer_addr_update_info` and the statistics getters: `peer`'s counters
    /// now. Once the connection is in the error state, its error: `CONNECTION_RESET`, or
    /// `CONNECTION_ABORTED` for a peer that made no room for a send within the stall time.
    #[doc(alias = "doca_comm_channel_peer_addr_update_info")]
    pub fn stats(&self, peer: PeerAddr) -> Result<PeerStats> {
        doca!(doca_comm_channel_peer_addr_update_info(peer.raw))?;
        let mut s = PeerStats::default();
        doca!(doca_comm_channel_peer_addr_get_send_messages(
            peer.raw,
            &mut s.send_messages
        ))?;
        doca!(doca_comm_channel_peer_addr_get_send_bytes(
            peer.raw,
            &mut s.send_bytes
        ))?;
        doca!(doca_comm_channel_peer_addr_get_recv_messages(
            peer.raw,
            &mut s.recv_messages
        ))?;
        doca!(doca_comm_channel_peer_addr_get_recv_bytes(
            peer.raw,
            &mut s.recv_bytes
        ))?;
        doca!(doca_comm_channel_peer_addr_get_send_in_flight_messages(
            peer.raw,
            &mut s.send_in_flight_messages
        ))?;
        Ok(s)
    }

    /// `doca_comm_channel_peer_addr_set_user_data`.
    #[doc(alias = "doca_comm_channel_peer_addr_set_user_data")]
    pub fn set_user_data(&self, peer: PeerAddr, value: impl Into<UserData>) -> Result<()> {
        doca!(doca_comm_channel_peer_addr_set_user_data(
            peer.raw,
            value.into().raw()
        ))
    }

    /// `doca_comm_channel_peer_addr_get_user_data` (0 unless set).
    #[doc(alias = "doca_comm_channel_peer_addr_get_user_data")]
    pub fn user_data(&self, peer: PeerAddr) -> Result<UserData> {
        let mut v = 0;
        doca!(doca_comm_channel_peer_addr_get_user_data(peer.raw, &mut v))?;
        Ok(UserData::from_raw(v))
    }
}

/// `doca_comm_channel_get_max_service_name_len`: with the terminating NUL.
#[doc(alias = "doca_comm_channel_get_max_service_name_len")]
pub fn max_service_name_len() -> Result<u32> {
    let mut v = 0;
    doca!(doca_comm_channel_get_max_service_name_len(&mut v))?;
    Ok(v)
}
