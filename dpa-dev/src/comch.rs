//! Comch MsgQ endpoints on the DPA: the consumer that receives from CPU producers and the
//! producer that sends to CPU consumers.

use crate::mmap::HostMem;
use crate::sys;
use core::marker::PhantomData;
use dpakit_abi::handles::{
    ComchConsumerHandle, ComchProducerHandle, ConsumerCompletionHandle, MmapHandle,
};
use dpakit_abi::{AbiError, ImmMessage, Immediate, MAX_IMM_DATA_LEN, SubmitFlags, bytes_of};

/// A DPA consumer (`doca_dpa_dev_comch_consumer_t`).
#[derive(Clone, Copy, Debug)]
pub struct Consumer(ComchConsumerHandle);

impl Consumer {
    /// Wraps the handle the host obtained with `doca_comch_consumer_get_dpa_handle`.
    #[inline]
    pub const fn new(handle: ComchConsumerHandle) -> Self {
        Self(handle)
    }

    /// Allows `num_msgs` more messages to arrive (`doca_dpa_dev_comch_consumer_ack`).
    ///
    /// The consumer never holds more outstanding credits than the receive queue size set with
    /// `doca_comch_consumer_set_dev_num_recv`.
    #[inline]
    pub fn ack(&self, num_msgs: u32) {
        // SAFETY: plain value arguments; the device validates the handle.
        unsafe { sys::doca_dpa_dev_comch_consumer_ack(self.0.raw(), num_msgs) }
    }
}

/// The completion context of a DPA consumer (`doca_dpa_dev_comch_consumer_completion_t`):
/// where received messages appear.
#[derive(Debug)]
pub struct ConsumerCompletion(ConsumerCompletionHandle);

impl ConsumerCompletion {
    /// Wraps the handle the host obtained with `doca_comch_consumer_completion_get_dpa_handle`.
    #[inline]
    pub const fn new(handle: ConsumerCompletionHandle) -> Self {
        Self(handle)
    }

    /// The next received message, if one arrived.
    ///
    /// The message borrows the context: its immediate stays valid until [`ack`](Self::ack),
    /// which cannot be called while the message is alive.
    #[inline]
    pub fn get(&mut self) -> Option<ReceivedMessage<'_>> {
        let mut element = 0;
        // SAFETY: `element` is a valid out-pointer for the duration of the call.
        let got =
            unsafe { sys::doca_dpa_dev_comch_consumer_get_completion(self.0.raw(), &mut element) };
        (got != 0).then_some(ReceivedMessage {
            element,
            _context: PhantomData,
        })
    }

    /// Releases `num` read completions (`doca_dpa_dev_comch_consumer_completion_ack`).
    #[inline]
    pub fn ack(&mut self, num: u64) {
        // SAFETY: plain value arguments.
        unsafe { sys::doca_dpa_dev_comch_consumer_completion_ack(self.0.raw(), num) }
    }

    /// Re-arms the context so the next message triggers the attached thread.
    #[inline]
    pub fn request_notification(&mut self) {
        // SAFETY: plain value argument.
        unsafe { sys::doca_dpa_dev_comch_consumer_completion_request_notification(self.0.raw()) }
    }
}

/// One message taken from a [`ConsumerCompletion`].
#[derive(Debug)]
pub struct ReceivedMessage<'a> {
    element: sys::doca_dpa_dev_comch_consumer_completion_element_t,
    _context: PhantomData<&'a mut ConsumerCompletion>,
}

impl ReceivedMessage<'_> {
    /// The immediate bytes the CPU producer sent (at most 32).
    #[inline]
    pub fn imm(&self) -> &[u8] {
        let mut len = 0u32;
        // SAFETY: `len` is a valid out-pointer; the element came from get_completion.
        let ptr =
            unsafe { sys::doca_dpa_dev_comch_consumer_get_completion_imm(self.element, &mut len) };
        if ptr.is_null() || len == 0 {
            return &[];
        }
        let len = (len as usize).min(MAX_IMM_DATA_LEN);
        // SAFETY: the device keeps `len` bytes at `ptr` alive until the completion is acked,
        // and the borrow of the completion context keeps `ack` from running before then.
        unsafe { core::slice::from_raw_parts(ptr, len) }
    }

    /// The immediate as an [`ImmMessage`] (zero-filled when shorter than 32 bytes).
    #[inline]
    pub fn message(&self) -> ImmMessage {
        // The immediate is at most 32 bytes, so this cannot fail.
        ImmMessage::from_bytes(self.imm()).unwrap_or(ImmMessage::ZEROED)
    }

    /// The id of the CPU producer that sent it.
    #[inline]
    pub fn producer_id(&self) -> u32 {
        // SAFETY: the element came from get_completion.
        unsafe { sys::doca_dpa_dev_comch_consumer_get_completion_producer_id(self.element) }
    }
}

/// A DPA producer (`doca_dpa_dev_comch_producer_t`).
#[derive(Clone, Copy, Debug)]
pub struct Producer(ComchProducerHandle);

/// The copy half of [`Producer::dma_copy`]: `length` bytes from `src_addr` in `src_mmap` to
/// `dst_addr` in `dst_mmap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaCopy {
    /// Destination memory map; needs local read-write access.
    pub dst_mmap: MmapHandle,
    /// Destination address inside `dst_mmap`'s range.
    pub dst_addr: u64,
    /// Source memory map; needs local read access.
    pub src_mmap: MmapHandle,
    /// Source address inside `src_mmap`'s range.
    pub src_addr: u64,
    /// Bytes to copy; source and destination ranges must not overlap.
    pub length: usize,
}

impl DmaCopy {
    /// A copy of all of `src` into `dst`; `None` unless they are the same length.
    #[inline]
    pub fn between(dst: &HostMem, src: &HostMem) -> Option<DmaCopy> {
        (dst.len() == src.len()).then(|| DmaCopy {
            dst_mmap: dst.mmap(),
            dst_addr: dst.addr(),
            src_mmap: src.mmap(),
            src_addr: src.addr(),
            length: src.len() as usize,
        })
    }
}

impl Producer {
    /// Wraps the handle the host obtained with `doca_comch_producer_get_dpa_handle`.
    #[inline]
    pub const fn new(handle: ComchProducerHandle) -> Self {
        Self(handle)
    }

    /// Whether the CPU consumer `consumer_id` has no receive posted, so a send would have
    /// nowhere to land.
    #[inline]
    pub fn is_consumer_empty(&self, consumer_id: u32) -> bool {
        // SAFETY: plain value arguments.
        unsafe {
            sys::doca_dpa_dev_comch_producer_is_consumer_empty(self.0.raw(), consumer_id) != 0
        }
    }

    /// Sends `imm` to the CPU consumer `consumer_id` (`doca_dpa_dev_comch_producer_post_send_imm_only`).
    ///
    /// More than 32 bytes is refused with [`AbiError::TooLong`] before reaching the device.
    #[inline]
    pub fn post_send_imm_only(
        &self,
        consumer_id: u32,
        imm: &[u8],
        flags: SubmitFlags,
    ) -> Result<(), AbiError> {
        let len = checked_imm_len(imm)?;
        // SAFETY: `imm` is valid for `len` bytes during the call; the device copies it.
        unsafe {
            sys::doca_dpa_dev_comch_producer_post_send_imm_only(
                self.0.raw(),
                consumer_id,
                imm.as_ptr(),
                len,
                flags.bits(),
            )
        }
        Ok(())
    }

    /// Sends a typed immediate; its size is checked at compile time, so this cannot fail.
    #[inline]
    pub fn send<T: Immediate>(&self, consumer_id: u32, value: &T, flags: SubmitFlags) {
        const { assert!(core::mem::size_of::<T>() <= MAX_IMM_DATA_LEN) };
        let bytes = bytes_of(value);
        // SAFETY: `bytes` is valid for its length (≤ 32, asserted above) during the call.
        unsafe {
            sys::doca_dpa_dev_comch_producer_post_send_imm_only(
                self.0.raw(),
                consumer_id,
                bytes.as_ptr(),
                bytes.len() as u32,
                flags.bits(),
            )
        }
    }

    /// Copies with DMA, then sends `imm` to the CPU consumer `consumer_id`
    /// (`doca_dpa_dev_comch_producer_dma_copy`).
    #[inline]
    pub fn dma_copy(
        &self,
        consumer_id: u32,
        copy: DmaCopy,
        imm: &[u8],
        flags: SubmitFlags,
    ) -> Result<(), AbiError> {
        let len = checked_imm_len(imm)?;
        // SAFETY: `imm` is valid for `len` bytes during the call; the device validates the
        // mmaps and ranges.
        unsafe {
            sys::doca_dpa_dev_comch_producer_dma_copy(
                self.0.raw(),
                consumer_id,
                copy.dst_mmap.raw(),
                copy.dst_addr,
                copy.src_mmap.raw(),
                copy.src_addr,
                copy.length,
                imm.as_ptr(),
                len,
                flags.bits(),
            )
        }
        Ok(())
    }
}

fn checked_imm_len(imm: &[u8]) -> Result<u32, AbiError> {
    if imm.len() > MAX_IMM_DATA_LEN {
        Err(AbiError::TooLong { len: imm.len() })
    } else {
        Ok(imm.len() as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    // Counters of the stand-ins below: statics that C-ABI functions reach, bookkeeping of a
    // test rather than a protocol (the crate has no facade: its device code has no atomics).
    #[allow(clippy::disallowed_types)]
    use std::sync::atomic::{AtomicU32, Ordering};

    // Stand-ins for the two device functions these tests reach: they count calls and remember
    // the length they were given.
    #[allow(clippy::disallowed_types)]
    static SENDS: AtomicU32 = AtomicU32::new(0);
    #[allow(clippy::disallowed_types)]
    static LAST_LEN: AtomicU32 = AtomicU32::new(u32::MAX);

    #[unsafe(no_mangle)]
    extern "C" fn doca_dpa_dev_comch_producer_post_send_imm_only(
        _producer: u64,
        _consumer_id: u32,
        _imm: *const u8,
        imm_length: u32,
        _flags: u32,
    ) {
        SENDS.fetch_add(1, Ordering::SeqCst);
        LAST_LEN.store(imm_length, Ordering::SeqCst);
    }

    #[unsafe(no_mangle)]
    #[allow(clippy::too_many_arguments)]
    extern "C" fn doca_dpa_dev_comch_producer_dma_copy(
        _producer: u64,
        _consumer_id: u32,
        _dst_mmap: u32,
        _dst_addr: u64,
        _src_mmap: u32,
        _src_addr: u64,
        _length: usize,
        _imm: *const u8,
        imm_length: u32,
        _flags: u32,
    ) {
        SENDS.fetch_add(1, Ordering::SeqCst);
        LAST_LEN.store(imm_length, Ordering::SeqCst);
    }

    #[test]
    fn immediate_lengths_are_checked_before_the_device() {
        let producer = Producer::new(ComchProducerHandle(1));
        let copy = DmaCopy {
            dst_mmap: MmapHandle(1),
            dst_addr: 0,
            src_mmap: MmapHandle(2),
            src_addr: 0,
            length: 8,
        };
        assert_eq!(
            producer.post_send_imm_only(0, &[0; 33], SubmitFlags::FLUSH),
            Err(AbiError::TooLong { len: 33 })
        );
        assert_eq!(
            producer.dma_copy(0, copy, &[0; 64], SubmitFlags::NONE),
            Err(AbiError::TooLong { len: 64 })
        );
        assert_eq!(
            SENDS.load(Ordering::SeqCst),
            0,
            "an oversized immediate reached the device"
        );

        producer
            .post_send_imm_only(0, &[7; 32], SubmitFlags::FLUSH)
            .unwrap();
        assert_eq!(LAST_LEN.load(Ordering::SeqCst), 32);
        producer
            .dma_copy(0, copy, &[7; 5], SubmitFlags::NONE)
            .unwrap();
        assert_eq!(LAST_LEN.load(Ordering::SeqCst), 5);
        producer.send(0, &ImmMessage::ZEROED, SubmitFlags::NONE);
        assert_eq!(LAST_LEN.load(Ordering::SeqCst), 32);
        assert_eq!(SENDS.load(Ordering::SeqCst), 3);
    }
}
