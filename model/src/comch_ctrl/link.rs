//! A fast-path endpoint's hold on its connection.

use super::connection::Connection;
use crate::error::{Result, bail};
use dpakit_wire::fast_path::ConnShared;
use std::cell::Cell;
use std::sync::Arc;

/// What a producer or consumer on a connection shares with it (the socket, the peer's
/// consumers), counted: the connection cannot stop or disconnect while endpoints hold it.
#[derive(Debug)]
pub struct Link {
    shared: Arc<ConnShared>,
    released: Cell<bool>,
}

impl Link {
    /// Holds `conn` for a new producer or consumer. Endpoints may be created on other threads
    /// than the connection's: this reads only what is shared with them. `NOT_CONNECTED` once
    /// the connection is closed or being disconnected.
    pub fn hold(conn: &Connection) -> Result<Self> {
        if !conn.shared.endpoints.hold() {
            bail!(
                NotConnected,
                "the connection is closed or being disconnected"
            );
        }
        Ok(Self {
            shared: conn.shared.clone(),
            released: Cell::new(false),
        })
    }

    /// A new producer id on the connection.
    pub fn producer_id(&self) -> u32 {
        self.shared.producer_id()
    }

    /// A new consumer id on the connection.
    pub fn consumer_id(&self) -> u32 {
        self.shared.consumer_id()
    }

    pub(crate) fn shared(&self) -> &Arc<ConnShared> {
        &self.shared
    }

    /// The endpoint is destroyed: the connection may stop or disconnect again (once it has no
    /// other endpoint). Idempotent; dropping the link releases it too.
    pub fn release(&self) {
        if !self.released.replace(true) {
            self.shared.endpoints.release();
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.release();
    }
}
