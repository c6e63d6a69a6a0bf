//! Decoded blocks of straight-line code by their first address, so the instructions of a loop
//! are fetched and decoded once and run without a lookup per instruction.

use super::op::Op;

/// The most instructions in a block: long enough that a block's checks cost little per
/// instruction, short enough that the code a jump into a block's middle decodes again stays small.
pub(crate) const MAX_BLOCK: usize = 32;

/// Blocks the table indexes: a power of two.
/// Fewer under miri, where every test run allocates and clears one.
const BLOCKS: usize = if cfg!(miri) { 64 } else { 2048 };

/// Instructions all blocks hold together: when a new block does not fit, every block is
/// forgotten. 8192 instructions (at least 16 KiB of code) in 96 KiB.
const OPS: usize = if cfg!(miri) { 4 * MAX_BLOCK } else { 8192 };

/// An address no instruction has (instructions are 2-byte aligned): marks an empty slot
/// (which also holds no instructions, should a caller set the pc there).
const EMPTY: u64 = 1;

/// A decoded instruction of a block, its offset from the block's start and its length in bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub op: Op,
    pub off: u8,
    pub len: u8,
}

impl Entry {
    /// A filler for unused entries.
    pub(crate) const NOP: Entry = Entry {
        op: Op::Nop,
        off: 0,
        len: 0,
    };
}

// Twelve bytes: 8192 of them in 96 KiB.
const _: () = assert!(size_of::<Entry>() == 12);

/// Where a block's instructions are in `ops`.
#[derive(Clone, Copy, Debug)]
struct Block {
    /// The address of its first instruction (`EMPTY`: no block).
    pc: u64,
    /// Its first instruction in `ops`.
    first: u32,
    /// How many instructions it holds (1..=MAX_BLOCK).
    count: u16,
    /// How many bytes of code they are.
    bytes: u16,
}

/// A cache of decoded code, for code whose bus promises it cannot change
/// ([`Bus::code_is_fixed`](crate::Bus::code_is_fixed)). A cache belongs to one piece of code:
/// [`clear`](Self::clear) it (or use another) before running other code at the same addresses.
///
/// It holds blocks: the instructions from an address the hart reached up to the first one that
/// may jump or stop the run (a branch, jump, `ecall`, `ebreak`; a counter read is a block of its
/// own), lowered for execution, at most 32 of them, in a table
/// indexed by the first address (a new block replaces one that shared its slot). Only what the
/// hart fetched and decoded successfully and the bus declared fixed goes in, so an instruction
/// found here passed the bus's fetch check once; the bus's promise makes that check hold for
/// every later run. An instruction is fetched and decoded once for each block that holds it
/// (a jump into the middle of a block starts another block there).
#[derive(Clone, Debug)]
pub struct DecodeCache {
    blocks: Box<[Block]>,
    ops: Box<[Entry]>,
    /// Entries of `ops` in use (blocks were appended, never removed one by one).
    used: usize,
}

impl Default for DecodeCache {
    fn default() -> Self {
        Self::new()
    }
}

impl DecodeCache {
    /// An empty cache (its memory is allocated here, once).
    pub fn new() -> Self {
        let empty = Block {
            pc: EMPTY,
            first: 0,
            count: 0,
            bytes: 0,
        };
        Self {
            blocks: vec![empty; BLOCKS].into_boxed_slice(),
            ops: vec![Entry::NOP; OPS].into_boxed_slice(),
            used: 0,
        }
    }

    /// Forgets every instruction.
    pub fn clear(&mut self) {
        for block in self.blocks.iter_mut() {
            block.pc = EMPTY;
        }
        self.used = 0;
    }

    /// How many blocks the table holds, for the tests.
    #[cfg(test)]
    pub(crate) fn blocks_held(&self) -> usize {
        self.blocks.iter().filter(|b| b.pc != EMPTY).count()
    }

    #[inline(always)]
    fn index(pc: u64) -> usize {
        (pc >> 1) as usize & (BLOCKS - 1)
    }

    /// The block that starts at `pc`, if it is here, and its length in bytes.
    #[inline(always)]
    pub(crate) fn block(&self, pc: u64) -> Option<(&[Entry], u64)> {
        let b = self.blocks[Self::index(pc)];
        // An empty slot holds no instruction, even for a caller's pc of EMPTY.
        if b.pc != pc || b.count == 0 {
            return None;
        }
        let first = b.first as usize;
        Some((
            &self.ops[first..first + usize::from(b.count)],
            u64::from(b.bytes),
        ))
    }

    /// Keeps `ops`, the block of 1..=MAX_BLOCK instructions (`bytes` long) that starts at
    /// `pc`, replacing the block that shared its slot; forgets every block first if they leave
    /// no room for it.
    pub(crate) fn insert(&mut self, pc: u64, ops: &[Entry], bytes: u64) {
        debug_assert!((1..=MAX_BLOCK).contains(&ops.len()));
        if self.used + ops.len() > self.ops.len() {
            self.clear();
        }
        let first = self.used;
        self.ops[first..first + ops.len()].copy_from_slice(ops);
        self.used += ops.len();
        self.blocks[Self::index(pc)] = Block {
            pc,
            first: first as u32,
            count: ops.len() as u16,
            // At most 32 instructions of at most 4 bytes.
            bytes: bytes as u16,
        };
    }
}
