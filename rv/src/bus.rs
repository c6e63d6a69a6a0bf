//! The hart's view of memory: the [`Bus`] trait and the faults it reports.

use crate::direct::Direct;

/// The kind of a memory access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// An instruction fetch.
    Fetch,
    /// A load, including `lr.w`/`lr.d` (the reservation lives in the hart, the read is plain).
    Load,
    /// A store.
    Store,
    /// An atomic read-modify-write: an AMO or an `sc.w`/`sc.d`.
    Atomic,
}

/// Why an access was refused. The bus decides all but [`Misaligned`](Self::Misaligned), which
/// the hart raises itself before calling the bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultReason {
    /// No region is mapped at the address (or the access runs off the end of one).
    Unmapped,
    /// A store or atomic to a region the kernel may only read.
    ReadOnly,
    /// A fetch from a region that holds no code.
    NotExecutable,
    /// A load, store or atomic not naturally aligned, or a fetch from an odd address.
    Misaligned,
}

/// A refused access: what was accessed, how, and why not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemFault {
    /// The first byte of the access.
    pub addr: u64,
    /// Its size in bytes: 1, 2, 4 or 8 (2 for a fetch: instructions are fetched in halves).
    pub size: u8,
    /// Fetch, load, store or atomic.
    pub access: Access,
    /// Why it was refused.
    pub reason: FaultReason,
}

/// The operation of an atomic read-modify-write (`amo<op>.w`/`.d`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmoOp {
    /// Stores the operand.
    Swap,
    /// Stores old + operand (wrapping).
    Add,
    /// Stores old ^ operand.
    Xor,
    /// Stores old & operand.
    And,
    /// Stores old | operand.
    Or,
    /// Stores the signed minimum of old and operand (as `size`-byte integers).
    Min,
    /// Stores the signed maximum.
    Max,
    /// Stores the unsigned minimum.
    Minu,
    /// Stores the unsigned maximum.
    Maxu,
}

impl AmoOp {
    /// The value an AMO of `size` bytes stores, given the `old` memory value and the `operand`
    /// (both zero-extended from `size` bytes); zero-extended as well. For [`Bus`]
    /// implementations, so every bus computes the same results.
    pub fn apply(self, size: u8, old: u64, operand: u64) -> u64 {
        let (a, b, mask) = if size == 4 {
            // Signed comparisons see the 32-bit values sign-extended.
            let sext = |v: u64| v as u32 as i32 as i64 as u64;
            (sext(old), sext(operand), u64::from(u32::MAX))
        } else {
            (old, operand, u64::MAX)
        };
        let value = match self {
            AmoOp::Swap => b,
            AmoOp::Add => a.wrapping_add(b),
            AmoOp::Xor => a ^ b,
            AmoOp::And => a & b,
            AmoOp::Or => a | b,
            AmoOp::Min => (a as i64).min(b as i64) as u64,
            AmoOp::Max => (a as i64).max(b as i64) as u64,
            // Sign extension keeps the unsigned order of 32-bit values.
            AmoOp::Minu => a.min(b),
            AmoOp::Maxu => a.max(b),
        };
        value & mask
    }
}

/// What the hart reads and writes through: the memory map of the kernel being run. Values are
/// little-endian and zero-extended; `size` is 1, 2, 4 or 8; the hart only passes naturally
/// aligned addresses to `load`, `store`, `amo` and `cas`, and values already truncated to `size`
/// bytes.
pub trait Bus {
    /// 16 bits of instruction at `addr` (2-byte aligned; a 32-bit instruction is fetched as two
    /// halves).
    fn fetch16(&mut self, addr: u64) -> Result<u16, MemFault>;

    /// `size` bytes at `addr`, zero-extended.
    fn load(&mut self, addr: u64, size: u8) -> Result<u64, MemFault>;

    /// Writes the low `size` bytes of `value` at `addr`.
    fn store(&mut self, addr: u64, size: u8, value: u64) -> Result<(), MemFault>;

    /// Atomic read-modify-write (size 4 or 8): stores `op.apply(size, old, operand)` and returns
    /// the old value (zero-extended).
    fn amo(&mut self, addr: u64, size: u8, op: AmoOp, operand: u64) -> Result<u64, MemFault>;

    /// Atomic compare-and-swap for SC (size 4 or 8): stores `new` if memory holds `expected`;
    /// true if it did.
    fn cas(&mut self, addr: u64, size: u8, expected: u64, new: u64) -> Result<bool, MemFault>;

    /// Whether the `len` instruction bytes at `addr` stay as they are, and fetchable, for as
    /// long as this bus and the code behind it are in use: a read-only code region.
    /// [`Hart::run_cached`](crate::Hart::run_cached) then keeps their decoding and fetches
    /// them no more (but to decode another cached block that holds them), and may fetch them
    /// before the hart reaches them, to decode a block of straight-line code at once. The
    /// default promises nothing: every instruction is fetched and decoded each time it runs.
    fn code_is_fixed(&self, addr: u64, len: u8) -> bool {
        let _ = (addr, len);
        false
    }

    /// A range around the naturally aligned `[addr, addr + size)` the hart may then load from
    /// (and store to, if the range says so) itself for the rest of its run, if the bus grants
    /// this `access` (a [`Load`](Access::Load) or a [`Store`](Access::Store)) and can name such
    /// a range; see [`Direct::new`] for what a grant promises. The hart asks on an access that
    /// no range it holds covers, and makes the access through [`load`](Self::load) or
    /// [`store`](Self::store) when the answer is `None`: a refusal is always theirs. The
    /// default grants nothing.
    fn direct(&mut self, addr: u64, size: u8, access: Access) -> Option<Direct> {
        let _ = (addr, size, access);
        None
    }

    /// Serves the `ecall` at `pc` without ending the run, if the bus can: `x` holds the hart's
    /// registers (arguments in, results out; x0 is zeroed after) and `instret` its retired
    /// count with the `ecall` retired. True: served, the hart goes on at `pc + 4` within its
    /// budget. False (the default): the run stops with [`Stop::Ecall`](crate::Stop::Ecall) for
    /// the caller to serve.
    fn ecall(&mut self, pc: u64, x: &mut [u64; 32], instret: u64) -> bool {
        let _ = (pc, x, instret);
        false
    }

    /// A value that changes whenever a range [`direct`](Self::direct) granted may no longer be
    /// reached as granted (memory freed, a mapping revoked). The hart compares it with the
    /// grant's before every direct access, so it should be one plain load. The default never
    /// changes: for a bus whose grants hold for the whole run.
    #[inline(always)]
    fn stamp(&self) -> u64 {
        0
    }
}
