//! DPA completion contexts (`doca_dpa_dev_completion_t`): where DPA producers report finished
//! sends and copies.

use crate::sys;
use core::marker::PhantomData;
use dpakit_abi::handles::CompletionHandle;

/// A DPA completion context.
#[derive(Debug)]
pub struct Completion(CompletionHandle);

/// `doca_dpa_dev_completion_type_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionType {
    /// A send (or DMA copy with immediate) finished.
    Send,
    /// An RDMA write with immediate was received.
    RecvRdmaWriteImm,
    /// A send was received.
    RecvSend,
    /// A send with immediate was received.
    RecvSendImm,
    /// A send failed.
    SendErr,
    /// A receive failed.
    RecvErr,
    /// A value this crate does not know.
    Other(u32),
}

impl CompletionType {
    /// The type for DOCA's raw value.
    #[inline]
    pub const fn from_raw(raw: u32) -> Self {
        match raw {
            0x0 => CompletionType::Send,
            0x1 => CompletionType::RecvRdmaWriteImm,
            0x2 => CompletionType::RecvSend,
            0x3 => CompletionType::RecvSendImm,
            0xD => CompletionType::SendErr,
            0xE => CompletionType::RecvErr,
            other => CompletionType::Other(other),
        }
    }

    /// DOCA's raw value.
    #[inline]
    pub const fn raw(self) -> u32 {
        match self {
            CompletionType::Send => 0x0,
            CompletionType::RecvRdmaWriteImm => 0x1,
            CompletionType::RecvSend => 0x2,
            CompletionType::RecvSendImm => 0x3,
            CompletionType::SendErr => 0xD,
            CompletionType::RecvErr => 0xE,
            CompletionType::Other(raw) => raw,
        }
    }
}

impl Completion {
    /// Wraps the handle the host obtained with `doca_dpa_completion_get_dpa_handle`.
    #[inline]
    pub const fn new(handle: CompletionHandle) -> Self {
        Self(handle)
    }

    /// The next completion, if any (`doca_dpa_dev_get_completion`).
    #[inline]
    pub fn get(&mut self) -> Option<CompletionElement<'_>> {
        let mut element = 0;
        // SAFETY: `element` is a valid out-pointer for the duration of the call.
        let got = unsafe { sys::doca_dpa_dev_get_completion(self.0.raw(), &mut element) };
        (got != 0).then_some(CompletionElement {
            element,
            _context: PhantomData,
        })
    }

    /// Releases `num` read completions (`doca_dpa_dev_completion_ack`).
    #[inline]
    pub fn ack(&mut self, num: u64) {
        // SAFETY: plain value arguments.
        unsafe { sys::doca_dpa_dev_completion_ack(self.0.raw(), num) }
    }

    /// Re-arms the context so the next completion triggers the attached thread.
    #[inline]
    pub fn request_notification(&mut self) {
        // SAFETY: plain value argument.
        unsafe { sys::doca_dpa_dev_completion_request_notification(self.0.raw()) }
    }
}

/// One completion taken from a [`Completion`] context.
#[derive(Debug)]
pub struct CompletionElement<'a> {
    element: sys::doca_dpa_dev_completion_element_t,
    _context: PhantomData<&'a mut Completion>,
}

impl CompletionElement<'_> {
    /// What finished.
    #[inline]
    pub fn completion_type(&self) -> CompletionType {
        // SAFETY: the element came from get_completion.
        CompletionType::from_raw(unsafe { sys::doca_dpa_dev_get_completion_type(self.element) })
    }

    /// The user data of the context that produced it (`doca_ctx_set_user_data` on the host).
    #[inline]
    pub fn user_data(&self) -> u32 {
        // SAFETY: the element came from get_completion.
        unsafe { sys::doca_dpa_dev_get_completion_user_data(self.element) }
    }
}

#[cfg(test)]
mod tests {
    use super::CompletionType;

    #[test]
    fn completion_types_round_trip() {
        for raw in [0x0, 0x1, 0x2, 0x3, 0xD, 0xE, 0x7] {
            assert_eq!(CompletionType::from_raw(raw).raw(), raw);
        }
        assert_eq!(CompletionType::from_raw(0xD), CompletionType::SendErr);
    }
}
