//! The hart: 32 integer registers, the pc, the LR reservation, and the execute loop.

use super::bus::{Access, Bus, FaultReason, MemFault};
use super::decode::decode;
use super::decode_cache::DecodeCache;
use super::inst::{AluOp, AluWOp, Cond, Inst};

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
    /// `ecall` at `hart.pc` (pc still points at it; the caller serves it and calls
    /// [`Hart::resume_after_ecall`], which adds 4). It counts as retired.
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
}

/// A fault refused by the hart itself: a misaligned access.
#[inline(always)]
fn misaligned(pc: u64, addr: u64, size: u8, access: Access) -> Stop {
    Stop::Fault {
        pc,
        fault: MemFault {
            addr,
            size,
            access,
            reason: FaultReason::Misaligned,
        },
    }
}

/// The low `size` bytes of `value`.
#[inline(always)]
fn truncate(value: u64, size: u8) -> u64 {
    value & (u64::MAX >> (64 - 8 * u32::from(size)))
}

/// `value` (at most 32 bits) sign-extended to 64 when `size` is 4.
#[inline(always)]
fn extend_word(value: u64, size: u8) -> u64 {
    if size == 4 {
        value as i32 as i64 as u64
    } else {
        value
    }
}

/// Whether a branch on `cond` is taken.
#[inline(always)]
fn taken(cond: Cond, a: u64, b: u64) -> bool {
    match cond {
        Cond::Eq => a == b,
        Cond::Ne => a != b,
        Cond::Lt => (a as i64) < (b as i64),
        Cond::Ge => (a as i64) >= (b as i64),
        Cond::Ltu => a < b,
        Cond::Geu => a >= b,
    }
}

/// `a op b` on 64-bit values, with the M extension's results for division by zero (quotient
/// all ones, remainder the dividend) and overflow (`MIN / -1` = `MIN`, remainder 0).
#[inline(always)]
pub fn alu(op: AluOp, a: u64, b: u64) -> u64 {
    match op {
        AluOp::Add => a.wrapping_add(b),
        AluOp::Sub => a.wrapping_sub(b),
        AluOp::Sll => a << (b & 63),
        AluOp::Slt => u64::from((a as i64) < (b as i64)),
        AluOp::Sltu => u64::from(a < b),
        AluOp::Xor => a ^ b,
        AluOp::Srl => a >> (b & 63),
        AluOp::Sra => ((a as i64) >> (b & 63)) as u64,
        AluOp::Or => a | b,
        AluOp::And => a & b,
        AluOp::Mul => a.wrapping_mul(b),
        // The 128-bit products cannot overflow: |i64 × u64| < 2^127.
        AluOp::Mulh => ((i128::from(a as i64) * i128::from(b as i64)) >> 64) as u64,
        AluOp::Mulhsu => ((i128::from(a as i64) * i128::from(b)) >> 64) as u64,
        AluOp::Mulhu => ((u128::from(a) * u128::from(b)) >> 64) as u64,
        AluOp::Div if b == 0 => u64::MAX,
        AluOp::Div => (a as i64).wrapping_div(b as i64) as u64,
        AluOp::Divu => a.checked_div(b).unwrap_or(u64::MAX),
        AluOp::Rem if b == 0 => a,
        AluOp::Rem => (a as i64).wrapping_rem(b as i64) as u64,
        AluOp::Remu => a.checked_rem(b).unwrap_or(a),
    }
}

/// `a op b` on the low 32 bits, sign-extended to 64; division corner cases as in [`alu`].
#[inline(always)]
pub fn alu_w(op: AluWOp, a: u64, b: u64) -> u64 {
    let (a, b) = (a as u32, b as u32);
    let r = match op {
        AluWOp::Add => a.wrapping_add(b),
        AluWOp::Sub => a.wrapping_sub(b),
        AluWOp::Sll => a << (b & 31),
        AluWOp::Srl => a >> (b & 31),
        AluWOp::Sra => ((a as i32) >> (b & 31)) as u32,
        AluWOp::Mul => a.wrapping_mul(b),
        AluWOp::Div if b == 0 => u32::MAX,
        AluWOp::Div => (a as i32).wrapping_div(b as i32) as u32,
        AluWOp::Divu => a.checked_div(b).unwrap_or(u32::MAX),
        AluWOp::Rem if b == 0 => a,
        AluWOp::Rem => (a as i32).wrapping_rem(b as i32) as u32,
        AluWOp::Remu => a.checked_rem(b).unwrap_or(a),
    };
    r as i32 as i64 as u64
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

    /// As [`run`](Self::run), keeping the decoding of instructions in code the bus declares
    /// fixed ([`Bus::code_is_fixed`]) in `cache`, and taking it from there instead of fetching
    /// and decoding again. The results are those of `run`; `cache` must hold decodings of the
    /// code behind this bus only.
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
        mut cache: Option<&mut DecodeCache>,
        exit_pc: u64,
        budget: u64,
    ) -> (Stop, u64) {
        let start = self.instret;
        // The caller may have written x[0] through the public field.
        self.x[0] = 0;
        // The retired count is the budget's clock too: one counter per instruction, not two.
        // An `ecall` retires and stops the run at once, so it never overshoots the budget.
        let stop = loop {
            if self.pc == exit_pc {
                break Stop::Returned;
            }
            if self.instret.wrapping_sub(start) == budget {
                break Stop::Budget;
            }
            if let Err(stop) = self.step(bus, cache.as_deref_mut()) {
                break stop;
            }
        };
        (stop, self.instret.wrapping_sub(start))
    }

    #[inline(always)]
    fn r(&self, i: u8) -> u64 {
        self.x[usize::from(i & 31)]
    }

    /// Writes x[i]; a write to x0 is undone at the end of the step (cheaper than a branch here).
    #[inline(always)]
    fn w(&mut self, i: u8, v: u64) {
        self.x[usize::from(i & 31)] = v;
    }

    /// Fetches the instruction at `pc`: 16 bits, or 32 when the low half says so (48-bit and
    /// longer formats also fetch 32, which decode as illegal).
    #[inline(always)]
    fn fetch<B: Bus>(bus: &mut B, pc: u64) -> Result<u32, Stop> {
        if pc & 1 != 0 {
            return Err(misaligned(pc, pc, 2, Access::Fetch));
        }
        let fault = |fault| Stop::Fault { pc, fault };
        let lo = bus.fetch16(pc).map_err(fault)?;
        if lo & 3 != 3 {
            return Ok(u32::from(lo));
        }
        let hi = bus.fetch16(pc.wrapping_add(2)).map_err(fault)?;
        Ok(u32::from(lo) | u32::from(hi) << 16)
    }

    /// Executes one instruction. On `Err` no register changed; an `ecall` retired, an `sc` that
    /// faulted lost its reservation.
    #[inline(always)]
    fn step<B: Bus>(&mut self, bus: &mut B, cache: Option<&mut DecodeCache>) -> Result<(), Stop> {
        let pc = self.pc;
        let Some(cache) = cache else {
            let (inst, len) = decode(Self::fetch(bus, pc)?);
            return self.execute(bus, pc, &inst, len);
        };
        if let Some((inst, len)) = cache.get(pc) {
            // Executed from the cache slot: each arm reads only the fields it uses.
            return self.execute(bus, pc, inst, len);
        }
        let (inst, len) = decode(Self::fetch(bus, pc)?);
        if inst != Inst::Illegal && bus.code_is_fixed(pc, len) {
            cache.put(pc, (inst, len));
        }
        self.execute(bus, pc, &inst, len)
    }

    /// Executes `inst` (`len` bytes long) at `pc`.
    #[inline(always)]
    fn execute<B: Bus>(&mut self, bus: &mut B, pc: u64, inst: &Inst, len: u8) -> Result<(), Stop> {
        let next = pc.wrapping_add(u64::from(len));
        let fault = |fault| Stop::Fault { pc, fault };
        let new_pc = match *inst {
            Inst::Lui { rd, imm } => {
                self.w(rd, imm as u64);
                next
            }
            Inst::Auipc { rd, imm } => {
                self.w(rd, pc.wrapping_add(imm as u64));
                next
            }
            Inst::Jal { rd, offset } => {
                self.w(rd, next);
                pc.wrapping_add(offset as u64)
            }
            Inst::Jalr { rd, rs1, imm } => {
                // Read rs1 before writing rd: they may be the same register.
                let target = self.r(rs1).wrapping_add(imm as u64) & !1;
                self.w(rd, next);
                target
            }
            Inst::Branch {
                cond,
                rs1,
                rs2,
                offset,
            } => {
                if taken(cond, self.r(rs1), self.r(rs2)) {
                    pc.wrapping_add(offset as u64)
                } else {
                    next
                }
            }
            Inst::Load { kind, rd, rs1, imm } => {
                let addr = self.r(rs1).wrapping_add(imm as u64);
                let size = kind.size();
                if addr & (u64::from(size) - 1) != 0 {
                    return Err(misaligned(pc, addr, size, Access::Load));
                }
                let v = bus.load(addr, size).map_err(fault)?;
                self.w(rd, kind.extend(v));
                next
            }
            Inst::Store {
                size,
                rs1,
                rs2,
                imm,
            } => {
                let addr = self.r(rs1).wrapping_add(imm as u64);
                if addr & (u64::from(size) - 1) != 0 {
                    return Err(misaligned(pc, addr, size, Access::Store));
                }
                bus.store(addr, size, truncate(self.r(rs2), size))
                    .map_err(fault)?;
                next
            }
            Inst::OpImm { op, rd, rs1, imm } => {
                self.w(rd, alu(op, self.r(rs1), imm as u64));
                next
            }
            Inst::OpImmW { op, rd, rs1, imm } => {
                self.w(rd, alu_w(op, self.r(rs1), imm as u64));
                next
            }
            Inst::Op { op, rd, rs1, rs2 } => {
                self.w(rd, alu(op, self.r(rs1), self.r(rs2)));
                next
            }
            Inst::OpW { op, rd, rs1, rs2 } => {
                self.w(rd, alu_w(op, self.r(rs1), self.r(rs2)));
                next
            }
            Inst::Lr { size, rd, rs1 } => {
                let addr = self.r(rs1);
                if addr & (u64::from(size) - 1) != 0 {
                    return Err(misaligned(pc, addr, size, Access::Load));
                }
                let value = bus.load(addr, size).map_err(fault)?;
                self.reservation = Some(Reservation { addr, size, value });
                self.w(rd, extend_word(value, size));
                next
            }
            Inst::Sc { size, rd, rs1, rs2 } => {
                let addr = self.r(rs1);
                // Any sc ends the reservation, whether it succeeds, fails or faults.
                let reservation = self.reservation.take();
                if addr & (u64::from(size) - 1) != 0 {
                    return Err(misaligned(pc, addr, size, Access::Atomic));
                }
                let stored = match reservation {
                    Some(r) if r.addr == addr && r.size == size => bus
                        .cas(addr, size, r.value, truncate(self.r(rs2), size))
                        .map_err(fault)?,
                    _ => false,
                };
                self.w(rd, u64::from(!stored));
                next
            }
            Inst::Amo {
                op,
                size,
                rd,
                rs1,
                rs2,
            } => {
                let addr = self.r(rs1);
                if addr & (u64::from(size) - 1) != 0 {
                    return Err(misaligned(pc, addr, size, Access::Atomic));
                }
                let old = bus
                    .amo(addr, size, op, truncate(self.r(rs2), size))
                    .map_err(fault)?;
                self.w(rd, extend_word(old, size));
                next
            }
            Inst::ReadCounter { rd } => {
                self.w(rd, self.instret);
                next
            }
            Inst::Fence => next,
            Inst::Ecall => {
                self.instret = self.instret.wrapping_add(1);
                return Err(Stop::Ecall);
            }
            Inst::Ebreak => return Err(Stop::Ebreak),
            // Never cached: fetched just now, so fetching again gives the same bits.
            Inst::Illegal => {
                return Err(match Self::fetch(bus, pc) {
                    Ok(raw) => Stop::Illegal { pc, raw },
                    Err(stop) => stop,
                });
            }
        };
        self.x[0] = 0;
        self.pc = new_pc;
        self.instret = self.instret.wrapping_add(1);
        Ok(())
    }
}
