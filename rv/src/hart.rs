//! The hart: 32 integer registers, the pc, the LR reservation, and the run loops: one
//! instruction at a time (fetch, decode, execute) here, a cached block at a time in `block.rs`;
//! what each instruction does is in `exec.rs`, shared by both.

use super::bus::{Access, Bus, FaultReason, MemFault};
use super::decode::decode;
use super::decode_cache::DecodeCache;
use super::direct::Regions;
use super::inst::Inst;

mod block;
mod exec;

/// ABI names of the integer registers (lp64).
// The whole ABI register file. A group (t0..t2, a2..a6, …) is documented at its first name.
#[allow(missing_docs)]
pub mod reg {
    /// Hard-wired zero.
    pub const ZERO: usize = 0;
    /// Return address.
    pub const RA: usize = 1;
    /// Stack pointer (16-byte aligned at calls).
    pub const SP: usize = 2;
    /// Global pointer.
    pub const GP: usize = 3;
    /// Thread pointer.
    pub const TP: usize = 4;
    /// Temporaries t0..t2 (t0 is also the alternate link register).
    pub const T0: usize = 5;
    pub const T1: usize = 6;
    pub const T2: usize = 7;
    /// Saved register / frame pointer.
    pub const S0: usize = 8;
    /// Saved register.
    pub const S1: usize = 9;
    /// First argument and return value.
    pub const A0: usize = 10;
    /// Second argument and return value.
    pub const A1: usize = 11;
    /// Arguments a2..a6.
    pub const A2: usize = 12;
    pub const A3: usize = 13;
    pub const A4: usize = 14;
    pub const A5: usize = 15;
    pub const A6: usize = 16;
    /// Last argument register (by convention the call number of an `ecall`).
    pub const A7: usize = 17;
    /// Saved registers s2..s11 (callee-saved, like s0 and s1).
    pub const S2: usize = 18;
    pub const S3: usize = 19;
    pub const S4: usize = 20;
    pub const S5: usize = 21;
    pub const S6: usize = 22;
    pub const S7: usize = 23;
    pub const S8: usize = 24;
    pub const S9: usize = 25;
    pub const S10: usize = 26;
    pub const S11: usize = 27;
    /// Temporaries t3..t6.
    pub const T3: usize = 28;
    pub const T4: usize = 29;
    pub const T5: usize = 30;
    pub const T6: usize = 31;
}

/// Why [`Hart::run`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// `ecall` at `hart.pc` that the bus did not serve ([`Bus::ecall`]): pc still points at
    /// it; the caller serves it and calls [`Hart::resume_after_ecall`], which adds 4. It counts
    /// as retired.
    Ecall,
    /// `ebreak` / `c.ebreak` at `hart.pc` (not retired).
    Ebreak,
    /// pc reached `exit_pc` (the function the caller started returned to the address the caller
    /// put in ra).
    Returned,
    /// The budget ran out before the next instruction; pc is that instruction.
    Budget,
    /// An illegal or unsupported instruction at `pc` (`raw` is its bits, 16 or 32 of them; for
    /// a 48-bit or longer encoding, its first 32). Not retired; `hart.pc` is `pc`.
    Illegal {
        /// Where the instruction is.
        pc: u64,
        /// Its bits.
        raw: u32,
    },
    /// An access refused by the instruction at `pc` (for a fetch fault, the instruction being
    /// fetched). Not retired; `hart.pc` is `pc` and no register changed.
    Fault {
        /// Where the instruction is.
        pc: u64,
        /// The refused access.
        fault: MemFault,
    },
}

/// The reservation an `lr` leaves for the next `sc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Reservation {
    addr: u64,
    size: u8,
    /// The value the `lr` read (zero-extended): `sc` stores only if memory still holds it.
    value: u64,
}

/// One RV64IMAC hart in user mode.
#[derive(Clone, Debug, Default)]
pub struct Hart {
    /// The integer registers. Instructions never change `x[0]`, and [`run`](Self::run) zeroes it
    /// on entry, so kernels always read zero there.
    pub x: [u64; 32],
    /// The address of the next instruction.
    pub pc: u64,
    reservation: Option<Reservation>,
    /// Instructions retired over the hart's life: what `cycle`, `time` and `instret` read.
    instret: u64,
    /// Ranges the bus granted for direct access in the current run ([`Bus::direct`]).
    regions: Regions,
}

/// An instruction fetched and decoded (and its length), or why it could not be fetched.
type Single = Result<(Inst, u8), Stop>;

/// Fetches the instruction at `pc`: 16 bits, or 32 when the low half says so (48-bit and
/// longer formats also fetch 32, which decode as illegal). A fault is the fetching
/// instruction's.
#[inline(always)]
fn fetch<B: Bus>(bus: &mut B, pc: u64) -> Result<u32, Stop> {
    let fault = |fault| Stop::Fault { pc, fault };
    if pc & 1 != 0 {
        return Err(fault(MemFault {
            addr: pc,
            size: 2,
            access: Access::Fetch,
            reason: FaultReason::Misaligned,
        }));
    }
    let lo = bus.fetch16(pc).map_err(fault)?;
    if lo & 3 != 3 {
        return Ok(u32::from(lo));
    }
    let hi = bus.fetch16(pc.wrapping_add(2)).map_err(fault)?;
    Ok(u32::from(lo) | u32::from(hi) << 16)
}

impl Hart {
    /// A hart with every register and the pc zero, no reservation, nothing retired.
    pub fn new() -> Self {
        Self::default()
    }

    /// Instructions retired over the hart's life (every [`run`](Self::run) and call): the value
    /// `rdcycle`, `rdtime` and `rdinstret` read, so kernels see deterministic counters.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn instret(&self) -> u64 {
        self.instret
    }

    /// Sets registers for a call: pc = entry, ra = exit_pc, sp = stack_top, a0.. = args, other
    /// registers zero, reservation cleared. The retired count goes on.
    ///
    /// # Panics
    /// If `stack_top` is not 16-byte aligned (the psABI's stack alignment) or `args` holds more
    /// than 8 values (a0..a7): both are the caller's bugs, not the kernel's.
    pub fn prepare_call(&mut self, entry: u64, exit_pc: u64, stack_top: u64, args: &[u64]) {
        assert!(
            stack_top % 16 == 0,
            "stack top {stack_top:#x} is not 16-byte aligned"
        );
        assert!(
            args.len() <= 8,
            "{} arguments, at most 8 go in registers",
            args.len()
        );
        self.x = [0; 32];
        self.x[reg::RA] = exit_pc;
        self.x[reg::SP] = stack_top;
        self.x[reg::A0..reg::A0 + args.len()].copy_from_slice(args);
        self.pc = entry;
        self.reservation = None;
    }

    /// Steps past the `ecall` that [`Stop::Ecall`] reported (ecall has no compressed form).
    pub fn resume_after_ecall(&mut self) {
        self.pc = self.pc.wrapping_add(4);
    }

    /// Runs until a stop; retires at most `budget` instructions. Returns the stop and how many
    /// instructions retired in this call: an `ecall` counts (it is done once the caller serves
    /// it), a faulting, illegal or `ebreak` instruction does not. Before each instruction,
    /// `pc == exit_pc` stops with [`Stop::Returned`], then a spent budget with
    /// [`Stop::Budget`].
    pub fn run<B: Bus>(&mut self, bus: &mut B, exit_pc: u64, budget: u64) -> (Stop, u64) {
        self.run_with(bus, None, exit_pc, budget)
    }

    /// As [`run`](Self::run), keeping the decoding of code the bus declares fixed
    /// ([`Bus::code_is_fixed`]) in `cache`, as blocks of straight-line instructions, and running
    /// those blocks from there instead of fetching and decoding again: the exit-pc and budget
    /// checks are made once per block, and an instruction is dispatched once (loads, stores
    /// and atomics still go through the bus one by one). The results are those of `run`, to
    /// the instruction; `cache` must hold decodings of the code behind this bus only.
    pub fn run_cached<B: Bus>(
        &mut self,
        bus: &mut B,
        cache: &mut DecodeCache,
        exit_pc: u64,
        budget: u64,
    ) -> (Stop, u64) {
        self.run_with(bus, Some(cache), exit_pc, budget)
    }

    #[inline(always)]
    fn run_with<B: Bus>(
        &mut self,
        bus: &mut B,
        cache: Option<&mut DecodeCache>,
        exit_pc: u64,
        budget: u64,
    ) -> (Stop, u64) {
        let start = self.instret;
        // The caller may have written x[0] through the public field.
        self.x[0] = 0;
        // Grants last one run: the bus may be another one now.
        self.regions.clear();
        // The retired count is the budget's clock too: one counter per instruction, not two.
        // An `ecall` retires and stops the run at once, so it never overshoots the budget.
        let stop = match cache {
            None => loop {
                if self.pc == exit_pc {
                    break Stop::Returned;
                }
                if self.instret.wrapping_sub(start) == budget {
                    break Stop::Budget;
                }
                if let Err(stop) = self.step(bus) {
                    break stop;
                }
            },
            Some(cache) => self.run_blocks(bus, cache, exit_pc, budget, start),
        };
        (stop, self.instret.wrapping_sub(start))
    }

    /// Fetches, decodes and executes one instruction. On `Err` no register changed; an `ecall`
    /// retired, an `sc` that faulted lost its reservation.
    #[inline(always)]
    fn step<B: Bus>(&mut self, bus: &mut B) -> Result<(), Stop> {
        let pc = self.pc;
        let (inst, len) = decode(fetch(bus, pc)?);
        self.pc = self.execute(bus, pc, &inst, len)?;
        self.instret = self.instret.wrapping_add(1);
        Ok(())
    }

    /// As [`step`](Self::step), for an instruction fetched and decoded already (or that could
    /// not be fetched). Not inlined: with a copy of its own, the plain loop's `step` dispatches
    /// straight from the decoder's match to the instruction's code.
    #[inline(never)]
    fn step_decoded<B: Bus>(&mut self, bus: &mut B, fetched: Single) -> Result<(), Stop> {
        let (inst, len) = fetched?;
        self.pc = self.execute(bus, self.pc, &inst, len)?;
        self.instret = self.instret.wrapping_add(1);
        Ok(())
    }
}
