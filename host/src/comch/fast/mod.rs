//! The Comch fast path on a connection (`doca_comch_consumer`, `doca_comch_producer`): a
//! consumer owns receive buffers the peer's producers write into in place; a producer loans
//! a buffer of its own, the program writes it, and the send moves it to a consumer.

use crate::error::{Result, doca};
use crate::mmap::{AccessFlags, Mmap};
use dpakit_sys as sys;

mod consumer;
mod producer;

pub use consumer::{Consumer, ConsumerBuilder, ReceivedBuf, Sample};
pub use producer::{Loan, Producer, ProducerBuilder};

/// An mmap the endpoint allocates and its buffers, `size` bytes each.
pub(super) struct Slots {
    pub(super) mmap: Mmap,
    inventory: *mut sys::doca_buf_inventory,
    pub(super) bufs: Vec<*mut sys::doca_buf>,
    pub(super) size: usize,
}

impl Slots {
    pub(super) fn new(
        dev: &crate::dev::Dev,
        n: u32,
        size: usize,
        access: AccessFlags,
    ) -> Result<Slots> {
        // Whole pages: a peer writes into a consumer's pages in place (see docs/comch.md).
        let mut mmap = Mmap::alloc_aligned(n as usize * size.max(1), 4096)?;
        mmap.set_permissions(access)?;
        mmap.add_dev(dev)?;
        mmap.start()?;
        let mut inventory = std::ptr::null_mut();
        doca!(doca_buf_inventory_create(n as usize, &mut inventory))?;
        let mut slots = Slots {
            mmap,
            inventory,
            bufs: Vec::with_capacity(n as usize),
            size,
        };
        doca!(doca_buf_inventory_start(inventory))?;
        let (base, _) = slots.mmap.range();
        for i in 0..n as usize {
            // SAFETY: inside the mmap's range.
            let addr = unsafe { base.add(i * size) };
            let mut buf = std::ptr::null_mut();
            doca!(doca_buf_inventory_buf_get_by_args(
                inventory,
                slots.mmap.as_raw(),
                addr.cast(),
                size,
                addr.cast(),
                0,
                &mut buf
            ))?;
            slots.bufs.push(buf);
        }
        Ok(slots)
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        for &buf in &self.bufs {
            let mut left = 0;
            let _ = doca!(doca_buf_dec_refcount(buf, &mut left));
        }
        let _ = doca!(doca_buf_inventory_destroy(self.inventory));
    }
}
