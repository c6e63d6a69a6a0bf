//! `struct doca_comch_connection`: one client ↔ server connection, its socket, user data,
//! statistics, and the sends waiting for room in the socket.

use super::registry::{self, Kind, Object};
use super::types::*;
use super::{call, call_value, out};
use crate::error::{ErrorCode, Result, bail};
use dpakit_wire::SeqPacket;
use dpakit_wire::fast_path::ConnShared;
use dpakit_wire::proto::TAG_DATA;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::Arc;

/// Where a connection is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConnState {
    Connected,
    /// Disconnected (by either side, or the peer died); the handle lives until its owner has
    /// told the program.
    Closed,
}

/// A send waiting for room in the socket: task index, message.
struct Waiting {
    index: u32,
    msg: *const u8,
    len: usize,
}

/// A `struct doca_comch_connection`.
pub(crate) struct ConnObj {
    /// The server's or client's handle.
    pub owner: *mut c_void,
    pub is_server: bool,
    pub sock: SeqPacket,
    pub state: Cell<ConnState>,
    pub user_data: Cell<doca_data>,
    /// What producers and consumers on other threads share with the connection (among it,
    /// how many exist: the connection cannot disconnect while any do).
    pub shared: Arc<ConnShared>,
    waiting: RefCell<VecDeque<Waiting>>,
    /// Sent messages, sent bytes, received messages, received bytes: live, and as of the last
    /// `doca_comch_connection_update_info`.
    live: [Cell<u64>; 4],
    shown: [Cell<u64>; 4],
}

impl Object for ConnObj {
    const KIND: Kind = Kind::ComchConnection;
}

/// The connection behind a `struct doca_comch_connection *`.
pub(crate) fn connection<'a>(
    ptr: *const doca_comch_connection,
    param: &str,
) -> Result<&'a ConnObj> {
    registry::get::<ConnObj>(ptr.cast(), param)
}

impl ConnObj {
    /// Registers a connection over `sock` owned by `owner`; room for `max_waiting` sends.
    pub(crate) fn register(
        owner: *mut c_void,
        is_server: bool,
        sock: SeqPacket,
        max_waiting: usize,
    ) -> Result<*mut c_void> {
        let shared = ConnShared::new(&sock)?;
        registry::register(Box::new(ConnObj {
            owner,
            is_server,
            shared,
            sock,
            state: Cell::new(ConnState::Connected),
            user_data: Cell::new(doca_data::default()),
            waiting: RefCell::new(VecDeque::with_capacity(max_waiting)),
            live: Default::default(),
            shown: Default::default(),
        }))
    }

    /// Sends task `index`'s message, or keeps it for [`flush`](Self::flush) when the socket is
    /// full (behind any already waiting, so order holds). What finished goes to `done`.
    pub(crate) fn send(&self, index: u32, msg: &[u8], done: &mut VecDeque<(u32, doca_error_t)>) {
        let mut waiting = self.waiting.borrow_mut();
        if waiting.is_empty() {
            match self.sock.send(&[&[TAG_DATA], msg], &[]) {
                Ok(true) => {
                    self.count(0, msg.len());
                    done.push_back((index, 0));
                    return;
                }
                Ok(false) => {}
                Err(_) => {
                    done.push_back((index, ErrorCode::NotConnected.raw() as doca_error_t));
                    return;
                }
            }
        }
        waiting.push_back(Waiting {
            index,
            msg: msg.as_ptr(),
            len: msg.len(),
        });
    }

    /// Writes waiting sends while the socket takes them.
    pub(crate) fn flush(&self, done: &mut VecDeque<(u32, doca_error_t)>) {
        let mut waiting = self.waiting.borrow_mut();
        while let Some(w) = waiting.front() {
            let msg = if w.len == 0 {
                &[][..]
            } else {
                // SAFETY: the program keeps a submitted message valid until its task completes.
                unsafe { std::slice::from_raw_parts(w.msg, w.len) }
            };
            match self.sock.send(&[&[TAG_DATA], msg], &[]) {
                Ok(true) => {
                    self.count(0, msg.len());
                    done.push_back((w.index, 0));
                    waiting.pop_front();
                }
                Ok(false) => return,
                Err(_) => {
                    drop(waiting);
                    self.fail_pending(done);
                    return;
                }
            }
        }
    }

    /// Fails every waiting send with `CONNECTION_RESET`.
    pub(crate) fn fail_pending(&self, done: &mut VecDeque<(u32, doca_error_t)>) {
        let status = ErrorCode::ConnectionReset.raw() as doca_error_t;
        done.extend(
            self.waiting
                .borrow_mut()
                .drain(..)
                .map(|w| (w.index, status)),
        );
    }

    pub(crate) fn has_waiting(&self) -> bool {
        !self.waiting.borrow().is_empty()
    }

    /// Marks the connection closed and shuts the socket, so the peer sees it at once.
    pub(crate) fn close(&self) {
        self.state.set(ConnState::Closed);
        self.sock.shutdown();
        self.shared.close();
    }

    /// IN_USE while producers or consumers exist on the connection; else seals it, so none can
    /// be created while `what` goes on (undo with [`unseal`](Self::unseal) if it fails).
    pub(crate) fn require_no_fast_path(&self, what: &str) -> Result<()> {
        match self.shared.endpoints.seal_if_unused() {
            Ok(()) => Ok(()),
            Err(n) => bail!(
                InUse,
                "{n} producer(s)/consumer(s) exist on the connection: stop and destroy them \
                 before {what}"
            ),
        }
    }

    /// Lets endpoints be created again after a takedown that did not happen.
    pub(crate) fn unseal(&self) {
        if self.state.get() != ConnState::Closed {
            self.shared.endpoints.unseal();
        }
    }

    fn count(&self, first: usize, bytes: usize) {
        self.live[first].set(self.live[first].get() + 1);
        self.live[first + 1].set(self.live[first + 1].get() + bytes as u64);
    }

    pub(crate) fn count_recv(&self, bytes: usize) {
        self.count(2, bytes);
    }
}

/// `doca_comch_connection_set_user_data`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_connection_set_user_data(
    connection: *mut doca_comch_connection,
    user_data: doca_data,
) -> doca_error_t {
    call("doca_comch_connection_set_user_data", || {
        self::connection(connection, "connection")?
            .user_data
            .set(user_data);
        Ok(())
    })
}

/// `doca_comch_connection_get_user_data`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_connection_get_user_data(
    connection: *const doca_comch_connection,
) -> doca_data {
    call_value(
        "doca_comch_connection_get_user_data",
        doca_data::default(),
        || Ok(self::connection(connection, "connection")?.user_data.get()),
    )
}

/// `doca_comch_server_get_server_ctx`: NULL for a client's connection.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_server_get_server_ctx(
    connection: *const doca_comch_connection,
) -> *mut doca_comch_server {
    call_value(
        "doca_comch_server_get_server_ctx",
        std::ptr::null_mut(),
        || {
            let c = self::connection(connection, "connection")?;
            Ok(if c.is_server {
                c.owner.cast()
            } else {
                std::ptr::null_mut()
            })
        },
    )
}

/// `doca_comch_client_get_client_ctx`: NULL for a server's connection.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_client_get_client_ctx(
    connection: *const doca_comch_connection,
) -> *mut doca_comch_client {
    call_value(
        "doca_comch_client_get_client_ctx",
        std::ptr::null_mut(),
        || {
            let c = self::connection(connection, "connection")?;
            Ok(if c.is_server {
                std::ptr::null_mut()
            } else {
                c.owner.cast()
            })
        },
    )
}

/// `doca_comch_connection_update_info`: takes a snapshot of the counters;
/// `CONNECTION_ABORTED` once the connection is closed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_connection_update_info(
    comch_connection: *mut doca_comch_connection,
) -> doca_error_t {
    call("doca_comch_connection_update_info", || {
        let c = self::connection(comch_connection, "comch_connection")?;
        if c.state.get() != ConnState::Connected {
            bail!(ConnectionAborted, "the connection is closed");
        }
        for (shown, live) in c.shown.iter().zip(&c.live) {
            shown.set(live.get());
        }
        Ok(())
    })
}

/// `doca_comch_connection_get_counter`: the value as of the last update.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_connection_get_counter(
    comch_connection: *const doca_comch_connection,
    counter_type: doca_comch_counter,
    counter_value: *mut u64,
) -> doca_error_t {
    call("doca_comch_connection_get_counter", || {
        let c = self::connection(comch_connection, "comch_connection")?;
        let Some(slot) = (counter_type as usize)
            .checked_sub(1)
            .and_then(|i| c.shown.get(i))
        else {
            bail!(
                InvalidValue,
                "counter_type {counter_type} is not a doca_comch_counter (1 sent messages, 2 \
                 sent bytes, 3 received messages, 4 received bytes)"
            );
        };
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(counter_value, "counter_value", slot.get()) }
    })
}

/// Unregisters connection `handle` (its socket closes with it).
pub(crate) fn unregister(handle: *mut c_void) {
    drop(registry::unregister::<ConnObj>(handle));
}
