//! The `doca_comm_channel_*` functions of the C API.

use super::{EpObj, addr, ep};
use crate::capi::dev::{DevObj, DevRepObj};
use crate::capi::registry;
use crate::capi::types::*;
use crate::capi::{c_str, call, non_null, out};
use crate::comm_channel::{Endpoint, Mode, Props, Received};
use crate::dev::Side;
use crate::error::{ErrorCode, Result, bail, err};
use crate::limits::{
    COMM_CHANNEL_MAX_MSG_SIZE, COMM_CHANNEL_MAX_QUEUE_SIZE, COMM_CHANNEL_MAX_SERVICE_NAME_LEN,
    COMM_CHANNEL_SERVICE_MAX_CONNECTIONS,
};
use std::ffi::{c_char, c_int, c_void};

/// `DOCA_CC_MSG_FLAG_DONTWAIT`.
const DONTWAIT: c_int = 1;
/// `DOCA_CC_INIT_FLAG_NONBLOCK`.
const INIT_NONBLOCK: u32 = 1;

/// A device limit, after checking `devinfo`.
///
/// # Safety
/// `value` is NULL or writable.
unsafe fn cap(devinfo: *mut doca_devinfo, value: *mut u32, limit: usize) -> Result<()> {
    crate::capi::dev::devinfo(devinfo, "devinfo")?;
    // SAFETY: by the caller's contract.
    unsafe { out(value, "value", limit as u32) }
}

/// `doca_comm_channel_get_max_service_name_len`: with the terminating NUL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_get_max_service_name_len(
    max_service_name_len: *mut u32,
) -> doca_error_t {
    call("doca_comm_channel_get_max_service_name_len", || {
        // SAFETY: writable by the C contract (checked non-null).
        unsafe {
            out(
                max_service_name_len,
                "max_service_name_len",
                COMM_CHANNEL_MAX_SERVICE_NAME_LEN as u32,
            )
        }
    })
}

/// `doca_comm_channel_get_max_message_size`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_get_max_message_size(
    devinfo: *mut doca_devinfo,
    max_message_size: *mut u32,
) -> doca_error_t {
    call("doca_comm_channel_get_max_message_size", || {
        // SAFETY: writable by the C contract.
        unsafe { cap(devinfo, max_message_size, COMM_CHANNEL_MAX_MSG_SIZE) }
    })
}

/// `doca_comm_channel_get_max_send_queue_size`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_get_max_send_queue_size(
    devinfo: *mut doca_devinfo,
    max_send_queue_size: *mut u32,
) -> doca_error_t {
    call("doca_comm_channel_get_max_send_queue_size", || {
        // SAFETY: writable by the C contract.
        unsafe { cap(devinfo, max_send_queue_size, COMM_CHANNEL_MAX_QUEUE_SIZE) }
    })
}

/// `doca_comm_channel_get_max_recv_queue_size`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_get_max_recv_queue_size(
    devinfo: *mut doca_devinfo,
    max_recv_queue_size: *mut u32,
) -> doca_error_t {
    call("doca_comm_channel_get_max_recv_queue_size", || {
        // SAFETY: writable by the C contract.
        unsafe { cap(devinfo, max_recv_queue_size, COMM_CHANNEL_MAX_QUEUE_SIZE) }
    })
}

/// `doca_comm_channel_get_service_max_num_connections`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_get_service_max_num_connections(
    devinfo: *mut doca_devinfo,
    max_num_connections: *mut u32,
) -> doca_error_t {
    call("doca_comm_channel_get_service_max_num_connections", || {
        // SAFETY: writable by the C contract.
        unsafe {
            cap(
                devinfo,
                max_num_connections,
                COMM_CHANNEL_SERVICE_MAX_CONNECTIONS,
            )
        }
    })
}

fn create(endpoint: Endpoint, ep_out: *mut *mut doca_comm_channel_ep_t) -> Result<()> {
    non_null(ep_out, "ep")?;
    let handle = registry::register(Box::new(EpObj::new(endpoint)))?;
    ep(handle, "ep")?.handle.set(handle);
    // SAFETY: checked non-null; writable by the C contract.
    unsafe { out(ep_out, "ep", handle.cast()) }
}

/// `doca_comm_channel_ep_create` (DOCA 1.4 and later): an endpoint with the default
/// properties that answers `AGAIN` where it would wait.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_create(
    ep: *mut *mut doca_comm_channel_ep_t,
) -> doca_error_t {
    call("doca_comm_channel_ep_create", || {
        create(Endpoint::new(Mode::NonBlocking), ep)
    })
}

/// The DOCA 1.2/1.3 form of `doca_comm_channel_ep_create(attr, ep)` (the header picks it by
/// the call's argument count): blocking unless `attr->flags` has
/// `DOCA_CC_INIT_FLAG_NONBLOCK`; `maxmsgs` sets both queue sizes, `msgsize` the message size.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpakit_soft_comm_channel_ep_create_attr(
    attr: *mut doca_comm_channel_init_attr,
    ep: *mut *mut doca_comm_channel_ep_t,
) -> doca_error_t {
    call("doca_comm_channel_ep_create", || {
        non_null(attr, "attr")?;
        // SAFETY: checked non-null; readable by the C contract.
        let attr = unsafe { *attr };
        if attr.flags & !INIT_NONBLOCK != 0 {
            bail!(
                InvalidValue,
                "attr.flags {:#x}: only DOCA_CC_INIT_FLAG_NONBLOCK is defined",
                attr.flags
            );
        }
        let mode = if attr.flags & INIT_NONBLOCK != 0 {
            Mode::NonBlocking
        } else {
            Mode::Blocking
        };
        let mut endpoint = Endpoint::new(mode);
        let props: &mut Props = endpoint.props_mut()?;
        props.set_max_msg_size(attr.msgsize)?;
        props.set_send_queue_size(attr.maxmsgs)?;
        props.set_recv_queue_size(attr.maxmsgs)?;
        create(endpoint, ep)
    })
}

/// `doca_comm_channel_ep_destroy`: disconnects every connection and frees the endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_destroy(
    local_ep: *mut doca_comm_channel_ep_t,
) -> doca_error_t {
    call("doca_comm_channel_ep_destroy", || {
        ep(local_ep.cast(), "local_ep")?;
        registry::retire::<EpObj>(local_ep.cast());
        Ok(())
    })
}

/// `doca_comm_channel_ep_set_device`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_set_device(
    ep: *mut doca_comm_channel_ep_t,
    device: *mut doca_dev,
) -> doca_error_t {
    call("doca_comm_channel_ep_set_device", || {
        let e = super::ep(ep.cast(), "ep")?;
        registry::get::<DevObj>(device.cast(), "device")?;
        e.ep.borrow_mut().props_mut()?;
        e.set_dev(device.cast());
        Ok(())
    })
}

/// `doca_comm_channel_ep_set_device_rep`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_set_device_rep(
    ep: *mut doca_comm_channel_ep_t,
    device_rep: *mut doca_dev_rep,
) -> doca_error_t {
    call("doca_comm_channel_ep_set_device_rep", || {
        let e = super::ep(ep.cast(), "ep")?;
        registry::get::<DevRepObj>(device_rep.cast(), "device_rep")?;
        e.ep.borrow_mut().props_mut()?;
        e.set_rep(device_rep.cast());
        Ok(())
    })
}

/// Sets one property of an idle endpoint.
fn set_prop(
    ptr: *mut doca_comm_channel_ep_t,
    set: impl FnOnce(&mut Props) -> Result<()>,
) -> Result<()> {
    let e = ep(ptr.cast(), "ep")?;
    let mut endpoint = e.ep.borrow_mut();
    set(endpoint.props_mut()?)
}

/// `doca_comm_channel_ep_set_max_msg_size`: 1..=4080, raised to 256.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_set_max_msg_size(
    ep: *mut doca_comm_channel_ep_t,
    max_msg_size: u16,
) -> doca_error_t {
    call("doca_comm_channel_ep_set_max_msg_size", || {
        set_prop(ep, |p| p.set_max_msg_size(u32::from(max_msg_size)))
    })
}

/// `doca_comm_channel_ep_set_send_queue_size`: 1..=8191, raised to 16 and to a power of two.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_set_send_queue_size(
    ep: *mut doca_comm_channel_ep_t,
    send_queue_size: u16,
) -> doca_error_t {
    call("doca_comm_channel_ep_set_send_queue_size", || {
        set_prop(ep, |p| p.set_send_queue_size(u32::from(send_queue_size)))
    })
}

/// `doca_comm_channel_ep_set_recv_queue_size`: as the send queue.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_set_recv_queue_size(
    ep: *mut doca_comm_channel_ep_t,
    recv_queue_size: u16,
) -> doca_error_t {
    call("doca_comm_channel_ep_set_recv_queue_size", || {
        set_prop(ep, |p| p.set_recv_queue_size(u32::from(recv_queue_size)))
    })
}

/// `doca_comm_channel_ep_get_device` (NULL if none was set).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_get_device(
    ep: *mut doca_comm_channel_ep_t,
    device: *mut *mut doca_dev,
) -> doca_error_t {
    call("doca_comm_channel_ep_get_device", || {
        let e = super::ep(ep.cast(), "ep")?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(device, "device", e.dev.get().cast()) }
    })
}

/// `doca_comm_channel_ep_get_device_rep` (NULL if none was set).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_get_device_rep(
    ep: *mut doca_comm_channel_ep_t,
    device_rep: *mut *mut doca_dev_rep,
) -> doca_error_t {
    call("doca_comm_channel_ep_get_device_rep", || {
        let e = super::ep(ep.cast(), "ep")?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(device_rep, "device_rep", e.rep.get().cast()) }
    })
}

/// Reads one property into a `uint16_t`.
///
/// # Safety
/// `value` is NULL or writable.
unsafe fn get_prop(
    ptr: *mut doca_comm_channel_ep_t,
    value: *mut u16,
    param: &str,
    get: impl FnOnce(&Props) -> u32,
) -> Result<()> {
    let e = ep(ptr.cast(), "ep")?;
    let v = get(e.ep.borrow().props());
    // A queue of 8192 (8191 rounded up) does not fit: report the most a uint16_t says.
    // SAFETY: by the caller's contract.
    unsafe { out(value, param, v.min(u32::from(u16::MAX)) as u16) }
}

/// `doca_comm_channel_ep_get_max_msg_size`: the size in effect.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_get_max_msg_size(
    ep: *mut doca_comm_channel_ep_t,
    max_msg_size: *mut u16,
) -> doca_error_t {
    call("doca_comm_channel_ep_get_max_msg_size", || {
        // SAFETY: writable by the C contract.
        unsafe { get_prop(ep, max_msg_size, "max_msg_size", |p| p.max_msg_size) }
    })
}

/// `doca_comm_channel_ep_get_send_queue_size`: the size in effect.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_get_send_queue_size(
    ep: *mut doca_comm_channel_ep_t,
    send_queue_size: *mut u16,
) -> doca_error_t {
    call("doca_comm_channel_ep_get_send_queue_size", || {
        // SAFETY: writable by the C contract.
        unsafe {
            get_prop(ep, send_queue_size, "send_queue_size", |p| {
                p.send_queue_size
            })
        }
    })
}

/// `doca_comm_channel_ep_get_recv_queue_size`: the size in effect.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_get_recv_queue_size(
    ep: *mut doca_comm_channel_ep_t,
    recv_queue_size: *mut u16,
) -> doca_error_t {
    call("doca_comm_channel_ep_get_recv_queue_size", || {
        // SAFETY: writable by the C contract.
        unsafe {
            get_prop(ep, recv_queue_size, "recv_queue_size", |p| {
                p.recv_queue_size
            })
        }
    })
}

/// The device set on `e`: `BAD_STATE` if none (a mandatory property).
fn device<'a>(e: &EpObj, what: &str) -> Result<&'a DevObj> {
    registry::get::<DevObj>(e.dev.get(), "device").map_err(|_| {
        err(
            ErrorCode::BadState,
            format!(
                "{what}: the endpoint has no device (doca_comm_channel_ep_set_device is mandatory)"
            ),
        )
    })
}

/// `doca_comm_channel_ep_listen`: a service, on the BlueField Arm side, for the host function
/// of the representor set (both mandatory).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_listen(
    local_ep: *mut doca_comm_channel_ep_t,
    name: *const c_char,
) -> doca_error_t {
    const F: &str = "doca_comm_channel_ep_listen";
    call(F, || {
        let e = ep(local_ep.cast(), "local_ep")?;
        // SAFETY: a NUL-terminated string by the C contract (checked non-null).
        let name = unsafe { c_str(name, "name") }?;
        let d = device(e, F)?;
        if d.dev.as_devinfo().side() != Side::Arm {
            bail!(
                NotPermitted,
                "{F}: a service runs on the BlueField (Arm side); device {} is a host device",
                d.dev.as_devinfo().get_pci_addr_str()
            );
        }
        let rep = registry::get::<DevRepObj>(e.rep.get(), "device_rep").map_err(|_| {
            err(
                ErrorCode::BadState,
                format!(
                    "{F}: the service has no representor (doca_comm_channel_ep_set_device_rep \
                     is mandatory on the service side)"
                ),
            )
        })?;
        let function = rep.rep.as_devinfo().get_pci_addr_str();
        e.ep.borrow_mut().listen(&function, name)
    })
}

/// `doca_comm_channel_ep_connect`: a client, on the host, to the service `name` of its
/// function; the connection is usable once `doca_comm_channel_peer_addr_update_info` answers
/// SUCCESS.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_connect(
    local_ep: *mut doca_comm_channel_ep_t,
    name: *const c_char,
    peer_addr: *mut *mut doca_comm_channel_addr_t,
) -> doca_error_t {
    const F: &str = "doca_comm_channel_ep_connect";
    call(F, || {
        let e = ep(local_ep.cast(), "local_ep")?;
        // SAFETY: a NUL-terminated string by the C contract (checked non-null).
        let name = unsafe { c_str(name, "name") }?;
        non_null(peer_addr, "peer_addr")?;
        let d = device(e, F)?;
        if d.dev.as_devinfo().side() != Side::Host {
            bail!(
                NotPermitted,
                "{F}: a client runs on the host; device {} is on the BlueField's Arm side",
                d.dev.as_devinfo().get_pci_addr_str()
            );
        }
        let function = d.dev.as_devinfo().get_pci_addr_str();
        let peer = e.ep.borrow_mut().connect(&function, name)?;
        let h = e.addr_handle(peer)?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(peer_addr, "peer_addr", h.cast()) }
    })
}

/// Whether a call with `flags` waits, or `INVALID_VALUE` for flags DOCA does not define.
fn waits(e: &EpObj, flags: c_int) -> Result<bool> {
    if flags & !DONTWAIT != 0 {
        bail!(
            InvalidValue,
            "flags {flags:#x}: only DOCA_CC_MSG_FLAG_NONE and DOCA_CC_MSG_FLAG_DONTWAIT are defined"
        );
    }
    Ok(e.ep.borrow().props().mode == Mode::Blocking && flags & DONTWAIT == 0)
}

/// `doca_comm_channel_ep_sendto`: one message of 1 to max_msg_size bytes to `peer_addr`.
/// `AGAIN` while its send queue is full (a non-blocking call); a blocking call waits until the
/// peer's stall time at most. Once the connection is in the error state: its code
/// (`CONNECTION_RESET`, or `CONNECTION_ABORTED` for a peer that made no room in the stall time).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_sendto(
    local_ep: *mut doca_comm_channel_ep_t,
    msg: *const c_void,
    len: usize,
    flags: c_int,
    peer_addr: *mut doca_comm_channel_addr_t,
) -> doca_error_t {
    call("doca_comm_channel_ep_sendto", || {
        let e = ep(local_ep.cast(), "local_ep")?;
        non_null(msg, "msg")?;
        let (owner, peer) = addr(peer_addr.cast(), "peer_addr")?;
        if !std::ptr::eq(owner, e) {
            bail!(
                InvalidValue,
                "peer_addr is a connection of another endpoint"
            );
        }
        if len == 0 {
            bail!(InvalidValue, "len is 0: a message has at least one byte");
        }
        let wait = waits(e, flags)?;
        // SAFETY: readable for `len` bytes by the C contract (checked non-null).
        let bytes = unsafe { std::slice::from_raw_parts(msg.cast::<u8>(), len) };
        e.ep.borrow_mut().send(peer, bytes, wait)
    })
}

/// `doca_comm_channel_ep_recvfrom`: the next message into `msg` (`*len` in: its size; out: the
/// message's), and the connection it came on. `AGAIN` when none waits (a non-blocking call);
/// `CONNECTION_RESET` with `*peer_addr` set once for a connection that went to the error state.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_recvfrom(
    local_ep: *mut doca_comm_channel_ep_t,
    msg: *mut c_void,
    len: *mut usize,
    flags: c_int,
    peer_addr: *mut *mut doca_comm_channel_addr_t,
) -> doca_error_t {
    call("doca_comm_channel_ep_recvfrom", || {
        let e = ep(local_ep.cast(), "local_ep")?;
        non_null(msg, "msg")?;
        non_null(len, "len")?;
        non_null(peer_addr, "peer_addr")?;
        let wait = waits(e, flags)?;
        // SAFETY: checked non-null; readable by the C contract.
        let size = unsafe { *len };
        // SAFETY: writable for `*len` bytes by the C contract (checked non-null).
        let buf = unsafe { std::slice::from_raw_parts_mut(msg.cast::<u8>(), size) };
        let received = e.ep.borrow_mut().recv(buf, wait)?;
        match received {
            Received::Message { len: n, peer } => {
                let h = e.addr_handle(peer)?;
                // SAFETY: checked non-null; writable by the C contract.
                unsafe {
                    *len = n;
                    *peer_addr = h.cast();
                }
                Ok(())
            }
            Received::Reset { peer, error } => {
                let h = e.addr_handle(peer)?;
                // SAFETY: checked non-null; writable by the C contract.
                unsafe {
                    *len = 0;
                    *peer_addr = h.cast();
                }
                Err(err(
                    ErrorCode::ConnectionReset,
                    format!("a connection is in the error state: {}", error.message()),
                ))
            }
        }
    })
}

/// `doca_comm_channel_ep_disconnect`: one-sided; frees the connection and its peer address.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_disconnect(
    local_ep: *mut doca_comm_channel_ep_t,
    peer_addr: *mut doca_comm_channel_addr_t,
) -> doca_error_t {
    call("doca_comm_channel_ep_disconnect", || {
        let e = ep(local_ep.cast(), "local_ep")?;
        let (owner, peer) = addr(peer_addr.cast(), "peer_addr")?;
        if !std::ptr::eq(owner, e) {
            bail!(
                InvalidValue,
                "peer_addr is a connection of another endpoint"
            );
        }
        let done = e.ep.borrow_mut().disconnect(peer);
        e.drop_addr(peer);
        done
    })
}

/// `doca_comm_channel_ep_update_service_state_info`: accepts and handshakes what waits (the
/// peer list and pending count below are read live).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_update_service_state_info(
    local_ep: *mut doca_comm_channel_ep_t,
) -> doca_error_t {
    call("doca_comm_channel_ep_update_service_state_info", || {
        let e = ep(local_ep.cast(), "local_ep")?;
        require_service(e)?;
        e.ep.borrow_mut().progress();
        Ok(())
    })
}

fn require_service(e: &EpObj) -> Result<()> {
    if e.rep.get().is_null() || !e.ep.borrow().is_active() {
        bail!(
            BadState,
            "a service endpoint's call: the endpoint is not listening (doca_comm_channel_ep_listen)"
        );
    }
    Ok(())
}

/// `doca_comm_channel_ep_get_peer_addr_list`: the service's connections; the array stays
/// valid until the next call or the endpoint's destruction.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_get_peer_addr_list(
    local_ep: *const doca_comm_channel_ep_t,
    peer_addr_array: *mut *mut *mut doca_comm_channel_addr_t,
    peer_addr_array_len: *mut u32,
) -> doca_error_t {
    call("doca_comm_channel_ep_get_peer_addr_list", || {
        let e = ep(local_ep.cast(), "local_ep")?;
        non_null(peer_addr_array, "peer_addr_array")?;
        non_null(peer_addr_array_len, "peer_addr_array_len")?;
        require_service(e)?;
        let peers: Vec<_> = e.ep.borrow().peers().collect();
        let mut handles = Vec::with_capacity(peers.len());
        for p in peers {
            handles.push(e.addr_handle(p)?);
        }
        let mut list = e.list.borrow_mut();
        *list = handles;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe {
            *peer_addr_array = list.as_mut_ptr().cast();
            *peer_addr_array_len = list.len() as u32;
        }
        Ok(())
    })
}

/// `doca_comm_channel_ep_get_pending_connections`: handshakes under way.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_get_pending_connections(
    local_ep: *const doca_comm_channel_ep_t,
    pending_connections: *mut u32,
) -> doca_error_t {
    call("doca_comm_channel_ep_get_pending_connections", || {
        let e = ep(local_ep.cast(), "local_ep")?;
        require_service(e)?;
        let n = e.ep.borrow().pending_connections() as u32;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(pending_connections, "pending_connections", n) }
    })
}

/// `doca_comm_channel_ep_get_event_channel`: either output may be NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_get_event_channel(
    local_ep: *mut doca_comm_channel_ep_t,
    send_event_channel: *mut doca_event_channel_t,
    recv_event_channel: *mut doca_event_channel_t,
) -> doca_error_t {
    call("doca_comm_channel_ep_get_event_channel", || {
        let e = ep(local_ep.cast(), "local_ep")?;
        if send_event_channel.is_null() && recv_event_channel.is_null() {
            bail!(
                InvalidValue,
                "send_event_channel and recv_event_channel are both NULL: ask for at least one"
            );
        }
        let (send, recv) = e.ep.borrow().event_channels()?;
        // SAFETY: each non-null output is writable by the C contract.
        unsafe {
            if !send_event_channel.is_null() {
                *send_event_channel = send;
            }
            if !recv_event_channel.is_null() {
                *recv_event_channel = recv;
            }
        }
        Ok(())
    })
}

/// `doca_comm_channel_ep_get_service_event_channel`: readable when a client connects or a
/// message or error waits (the receive channel of the service).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_get_service_event_channel(
    local_ep: *mut doca_comm_channel_ep_t,
    service_event_channel: *mut doca_event_channel_t,
) -> doca_error_t {
    call("doca_comm_channel_ep_get_service_event_channel", || {
        let e = ep(local_ep.cast(), "local_ep")?;
        require_service(e)?;
        let (_, recv) = e.ep.borrow().event_channels()?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(service_event_channel, "service_event_channel", recv) }
    })
}

/// `doca_comm_channel_ep_event_handle_arm_send`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_event_handle_arm_send(
    local_ep: *mut doca_comm_channel_ep_t,
) -> doca_error_t {
    call("doca_comm_channel_ep_event_handle_arm_send", || {
        ep(local_ep.cast(), "local_ep")?.ep.borrow_mut().arm_send()
    })
}

/// `doca_comm_channel_ep_event_handle_arm_recv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_ep_event_handle_arm_recv(
    local_ep: *mut doca_comm_channel_ep_t,
) -> doca_error_t {
    call("doca_comm_channel_ep_event_handle_arm_recv", || {
        ep(local_ep.cast(), "local_ep")?.ep.borrow_mut().arm_recv()
    })
}

/// `doca_comm_channel_peer_addr_update_info`: a snapshot of the statistics; SUCCESS once
/// connected, `CONNECTION_INPROGRESS` before, `CONNECTION_ABORTED` (refused, or stalled: no
/// room made for the stall time) or `CONNECTION_RESET` (failed) after.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_peer_addr_update_info(
    peer_addr: *mut doca_comm_channel_addr_t,
) -> doca_error_t {
    call("doca_comm_channel_peer_addr_update_info", || {
        let (e, peer) = addr(peer_addr.cast(), "peer_addr")?;
        e.ep.borrow_mut().update_info(peer)
    })
}

/// `doca_comm_channel_peer_addr_set_user_data`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_peer_addr_set_user_data(
    peer_addr: *mut doca_comm_channel_addr_t,
    user_context: u64,
) -> doca_error_t {
    call("doca_comm_channel_peer_addr_set_user_data", || {
        let (e, peer) = addr(peer_addr.cast(), "peer_addr")?;
        e.ep.borrow_mut().set_user_data(peer, user_context)
    })
}

/// `doca_comm_channel_peer_addr_get_user_data` (0 unless set).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_peer_addr_get_user_data(
    peer_addr: *mut doca_comm_channel_addr_t,
    user_data: *mut u64,
) -> doca_error_t {
    call("doca_comm_channel_peer_addr_get_user_data", || {
        let (e, peer) = addr(peer_addr.cast(), "peer_addr")?;
        let v = e.ep.borrow_mut().user_data(peer)?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(user_data, "user_data", v) }
    })
}

/// `doca_comm_channel_peer_addr_user_data_set`: the DOCA 1.2/1.3 name.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_peer_addr_user_data_set(
    peer_addr: *mut doca_comm_channel_addr_t,
    user_context: u64,
) -> doca_error_t {
    // SAFETY: the same contract.
    unsafe { doca_comm_channel_peer_addr_set_user_data(peer_addr, user_context) }
}

/// `doca_comm_channel_peer_addr_user_data_get`: the DOCA 1.2/1.3 name.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_peer_addr_user_data_get(
    peer_addr: *mut doca_comm_channel_addr_t,
    user_data: *mut u64,
) -> doca_error_t {
    // SAFETY: the same contract.
    unsafe { doca_comm_channel_peer_addr_get_user_data(peer_addr, user_data) }
}

/// One statistic of the last snapshot.
///
/// # Safety
/// `value` is NULL or writable.
unsafe fn stat(
    peer_addr: *const doca_comm_channel_addr_t,
    value: *mut u64,
    param: &str,
    pick: impl FnOnce(&crate::comm_channel::PeerStats) -> u64,
) -> Result<()> {
    let (e, peer) = addr(peer_addr.cast(), "peer_addr")?;
    let stats = e.ep.borrow_mut().stats(peer)?;
    // SAFETY: by the caller's contract.
    unsafe { out(value, param, pick(&stats)) }
}

/// `doca_comm_channel_peer_addr_get_send_messages` (as of the last update_info).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_peer_addr_get_send_messages(
    peer_addr: *const doca_comm_channel_addr_t,
    send_messages: *mut u64,
) -> doca_error_t {
    call("doca_comm_channel_peer_addr_get_send_messages", || {
        // SAFETY: writable by the C contract.
        unsafe {
            stat(peer_addr, send_messages, "send_messages", |s| {
                s.send_messages
            })
        }
    })
}

/// `doca_comm_channel_peer_addr_get_send_bytes` (as of the last update_info).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_peer_addr_get_send_bytes(
    peer_addr: *const doca_comm_channel_addr_t,
    send_bytes: *mut u64,
) -> doca_error_t {
    call("doca_comm_channel_peer_addr_get_send_bytes", || {
        // SAFETY: writable by the C contract.
        unsafe { stat(peer_addr, send_bytes, "send_bytes", |s| s.send_bytes) }
    })
}

/// `doca_comm_channel_peer_addr_get_recv_messages` (as of the last update_info).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_peer_addr_get_recv_messages(
    peer_addr: *const doca_comm_channel_addr_t,
    recv_messages: *mut u64,
) -> doca_error_t {
    call("doca_comm_channel_peer_addr_get_recv_messages", || {
        // SAFETY: writable by the C contract.
        unsafe {
            stat(peer_addr, recv_messages, "recv_messages", |s| {
                s.recv_messages
            })
        }
    })
}

/// `doca_comm_channel_peer_addr_get_recv_bytes` (as of the last update_info).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_peer_addr_get_recv_bytes(
    peer_addr: *const doca_comm_channel_addr_t,
    recv_bytes: *mut u64,
) -> doca_error_t {
    call("doca_comm_channel_peer_addr_get_recv_bytes", || {
        // SAFETY: writable by the C contract.
        unsafe { stat(peer_addr, recv_bytes, "recv_bytes", |s| s.recv_bytes) }
    })
}

/// `doca_comm_channel_peer_addr_get_send_in_flight_messages` (as of the last update_info):
/// sent, not yet taken by the peer's program.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comm_channel_peer_addr_get_send_in_flight_messages(
    peer_addr: *const doca_comm_channel_addr_t,
    send_in_flight_messages: *mut u64,
) -> doca_error_t {
    call(
        "doca_comm_channel_peer_addr_get_send_in_flight_messages",
        || {
            // SAFETY: writable by the C contract.
            unsafe {
                stat(
                    peer_addr,
                    send_in_flight_messages,
                    "send_in_flight_messages",
                    |s| s.send_in_flight_messages,
                )
            }
        },
    )
}
