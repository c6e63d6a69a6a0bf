//! `doca_comm_channel.h`: the legacy Comm Channel endpoint API over the model's
//! [`comm_channel`](crate::comm_channel). An endpoint handle owns its peer-address handles:
//! each connection gets one the first time C sees it (connect, recvfrom, the peer list), and
//! disconnecting or destroying the endpoint makes them stale (later use: `INVALID_VALUE`, the
//! handle named as destroyed). Endpoints are not thread-safe, as in DOCA: one thread at a time.

mod api;

pub use api::*;

use super::dev::{DevObj, DevRepObj};
use super::registry::{self, Kind, Object};
use crate::comm_channel::{Endpoint, PeerId};
use crate::error::Result;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::c_void;

/// `struct doca_comm_channel_ep_t`.
pub(crate) struct EpObj {
    ep: RefCell<Endpoint>,
    /// Its own handle.
    handle: Cell<*mut c_void>,
    /// `doca_comm_channel_ep_set_device` (a held `DevObj` handle, or NULL).
    dev: Cell<*mut c_void>,
    /// `doca_comm_channel_ep_set_device_rep` (a held `DevRepObj` handle, or NULL).
    rep: Cell<*mut c_void>,
    /// The handle C knows each connection by.
    addrs: RefCell<HashMap<PeerId, *mut c_void>>,
    /// The array `doca_comm_channel_ep_get_peer_addr_list` last handed out (valid until the
    /// next call or the endpoint's destruction).
    list: RefCell<Vec<*mut c_void>>,
}

impl Object for EpObj {
    const KIND: Kind = Kind::CommChannelEp;
}

/// `struct doca_comm_channel_addr_t`: one connection of an endpoint.
pub(crate) struct AddrObj {
    ep: *mut c_void,
    peer: PeerId,
}

impl Object for AddrObj {
    const KIND: Kind = Kind::CommChannelAddr;
}

fn ep<'a>(ptr: *const c_void, param: &str) -> Result<&'a EpObj> {
    registry::get::<EpObj>(ptr, param)
}

/// The endpoint and connection behind a peer address.
fn addr<'a>(ptr: *const c_void, param: &str) -> Result<(&'a EpObj, PeerId)> {
    let a = registry::get::<AddrObj>(ptr, param)?;
    Ok((ep(a.ep, param)?, a.peer))
}

impl EpObj {
    fn new(endpoint: Endpoint) -> EpObj {
        EpObj {
            ep: RefCell::new(endpoint),
            handle: Cell::new(std::ptr::null_mut()),
            dev: Cell::new(std::ptr::null_mut()),
            rep: Cell::new(std::ptr::null_mut()),
            addrs: RefCell::new(HashMap::new()),
            list: RefCell::new(Vec::new()),
        }
    }

    /// The handle of `peer`, made the first time C sees it.
    fn addr_handle(&self, peer: PeerId) -> Result<*mut c_void> {
        if let Some(&h) = self.addrs.borrow().get(&peer) {
            return Ok(h);
        }
        let h = registry::register(Box::new(AddrObj {
            ep: self.handle.get(),
            peer,
        }))?;
        self.addrs.borrow_mut().insert(peer, h);
        Ok(h)
    }

    /// Forgets the handle of a disconnected `peer` (later use finds it destroyed).
    fn drop_addr(&self, peer: PeerId) {
        if let Some(h) = self.addrs.borrow_mut().remove(&peer) {
            registry::retire::<AddrObj>(h);
        }
        self.list.borrow_mut().retain(|_| false);
    }

    /// Replaces a held device (or representor) handle, releasing the old one.
    fn hold<T: Object>(
        slot: &Cell<*mut c_void>,
        new: *mut c_void,
        users: impl Fn(&T) -> &super::Users,
    ) {
        let old = slot.replace(new);
        if let Ok(o) = registry::get::<T>(old, "old") {
            users(o).release();
        }
        if let Ok(n) = registry::get::<T>(new, "new") {
            users(n).hold();
        }
    }

    fn set_dev(&self, dev: *mut c_void) {
        Self::hold::<DevObj>(&self.dev, dev, |d| &d.users);
    }

    fn set_rep(&self, rep: *mut c_void) {
        Self::hold::<DevRepObj>(&self.rep, rep, |r| &r.users);
    }
}

impl Drop for EpObj {
    fn drop(&mut self) {
        for (_, h) in self.addrs.get_mut().drain() {
            registry::retire::<AddrObj>(h);
        }
        self.set_dev(std::ptr::null_mut());
        self.set_rep(std::ptr::null_mut());
    }
}
