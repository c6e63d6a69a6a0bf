//! Completion elements: the `u64` a kernel gets from `get_completion` and passes back to read a
//! message or a DPA completion.
//!
//! On the soft device an element names its completion context and the message's position in
//! that context's ring; it is not a pointer. Every use is checked: the context must be a live
//! one of the calling DPA and of the right kind, the caller its reader, and the message still
//! held — polled and not acked. So an element used after its ack, one of another context kind
//! or DPA, or a forged one is a fatal error naming the rule, never a read of reused memory.
//!
//! Layout: kind (4 bits) | DPA id (low 12 bits) | context slot (12 bits) | position (36 bits).
//! A ring never holds more than its capacity, far below 2^36, so the position's low bits name
//! one held message.

use super::current::Current;
use crate::error::ErrorCode;
use crate::ring::{CompletionRing, Polled};

const POS_BITS: u32 = 36;
const SLOT_BITS: u32 = 12;
const DPA_BITS: u32 = 12;

/// Which kind of context gave an element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementKind {
    /// `doca_dpa_dev_comch_consumer_get_completion`.
    Consumer = 0xC,
    /// `doca_dpa_dev_get_completion`.
    Dpa = 0xD,
}

impl ElementKind {
    fn context(self) -> &'static str {
        match self {
            ElementKind::Consumer => "consumer completion",
            ElementKind::Dpa => "DPA completion",
        }
    }
}

/// The element for the message at `pos` of context `slot` of DPA `dpa_id`.
#[inline]
pub fn encode(kind: ElementKind, dpa_id: u16, slot: usize, pos: u64) -> u64 {
    debug_assert!(
        slot < 1 << SLOT_BITS,
        "context tables are smaller than 4096"
    );
    ((kind as u64) << (POS_BITS + SLOT_BITS + DPA_BITS))
        | ((u64::from(dpa_id) & ((1 << DPA_BITS) - 1)) << (POS_BITS + SLOT_BITS))
        | ((slot as u64) << POS_BITS)
        | (pos & ((1 << POS_BITS) - 1))
}

/// The context slot an element of `kind` names on the calling DPA; a fatal error otherwise.
#[inline]
pub fn slot_of(cur: &Current<'_>, element: u64, kind: ElementKind, function: &str) -> usize {
    let found = (element >> (POS_BITS + SLOT_BITS + DPA_BITS)) as u8;
    if found != kind as u8 {
        cur.fault(
            ErrorCode::InvalidValue,
            format!(
                "{function}: {element:#x} is not a {} element; an element is read only with the \
                 functions of the context kind that gave it",
                kind.context()
            ),
        );
    }
    let dpa = (element >> (POS_BITS + SLOT_BITS)) & ((1 << DPA_BITS) - 1);
    if dpa != u64::from(cur.dpa.id) & ((1 << DPA_BITS) - 1) {
        cur.fault(
            ErrorCode::InvalidValue,
            format!("{function}: element {element:#x} comes from another DPA context"),
        );
    }
    ((element >> POS_BITS) & ((1 << SLOT_BITS) - 1)) as usize
}

/// The message an element names in `ring`, which the caller has checked it may read: a fatal
/// error unless the message is still held.
#[inline]
pub fn held<'a>(
    cur: &Current<'_>,
    ring: &'a CompletionRing,
    element: u64,
    kind: ElementKind,
    function: &str,
) -> Polled<'a> {
    // SAFETY: the caller checked that this activation's thread is the context's one reader.
    match unsafe { ring.held(element, POS_BITS) } {
        Some(polled) => polled,
        None => cur.fault(
            ErrorCode::InvalidValue,
            format!(
                "{function}: {} element {element:#x} is not held: it was acked already, or never \
                 handed out; an element is valid from get_completion until the ack that \
                 releases it",
                kind.context()
            ),
        ),
    }
}
