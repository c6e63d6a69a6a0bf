//! Decoded instructions by address, so the instructions of a loop are fetched and decoded once.

use super::inst::Inst;

/// Slots of a cache: a power of two, enough for the hot code of a kernel (8 KiB of compressed
/// instructions, 16 KiB of 32-bit ones) in 96 KiB.
/// Fewer under miri, where every test run allocates and clears one.
const SLOTS: usize = if cfg!(miri) { 64 } else { 4096 };

/// An address no instruction has (instructions are 2-byte aligned): marks an empty slot.
const EMPTY: u64 = 1;

#[derive(Clone, Copy, Debug)]
struct Slot {
    pc: u64,
    inst: Inst,
    len: u8,
}

/// A direct-mapped cache of decoded instructions, for code whose bus promises it cannot change
/// ([`Bus::code_is_fixed`](crate::Bus::code_is_fixed)). A cache belongs to one piece of code:
/// [`clear`](Self::clear) it (or use another) before running other code at the same addresses.
///
/// Only what the hart fetched and decoded successfully goes in, so an instruction found here
/// passed the bus's fetch check once; the bus's promise makes that check hold for every later
/// run.
#[derive(Clone, Debug)]
pub struct DecodeCache {
    slots: Box<[Slot]>,
}

impl Default for DecodeCache {
    fn default() -> Self {
        Self::new()
    }
}

impl DecodeCache {
    /// An empty cache (its slots are allocated here, once).
    pub fn new() -> Self {
        Self {
            slots: vec![
                Slot {
                    pc: EMPTY,
                    inst: Inst::Illegal,
                    len: 0,
                };
                SLOTS
            ]
            .into_boxed_slice(),
        }
    }

    /// Forgets every instruction.
    pub fn clear(&mut self) {
        for slot in self.slots.iter_mut() {
            slot.pc = EMPTY;
        }
    }

    #[inline(always)]
    fn index(pc: u64) -> usize {
        (pc >> 1) as usize & (SLOTS - 1)
    }

    /// The instruction decoded at `pc`, if it is here.
    #[inline(always)]
    pub(crate) fn get(&self, pc: u64) -> Option<(&Inst, u8)> {
        let slot = &self.slots[Self::index(pc)];
        (slot.pc == pc).then_some((&slot.inst, slot.len))
    }

    /// Keeps the decoding of the instruction at `pc` (replacing whatever shared its slot).
    #[inline(always)]
    pub(crate) fn put(&mut self, pc: u64, (inst, len): (Inst, u8)) {
        self.slots[Self::index(pc)] = Slot { pc, inst, len };
    }
}
