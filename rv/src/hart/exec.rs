//! What instructions do: the operations, the checked accesses, and the executor of a decoded
//! [`Inst`] for the single-step path. The block path's executor (`block.rs`) dispatches on
//! lowered ops but calls the same functions here, so both paths share every semantic.

use super::{Hart, Reservation, Stop, fetch};
use crate::bus::{Access, AmoOp, Bus, FaultReason, MemFault};
use crate::inst::{AluOp, AluWOp, Cond, Inst, LoadKind};

/// A fault refused by the hart itself: a misaligned access.
#[cold]
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
pub(super) fn taken(cond: Cond, a: u64, b: u64) -> bool {
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
pub(super) fn alu(op: AluOp, a: u64, b: u64) -> u64 {
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
pub(super) fn alu_w(op: AluWOp, a: u64, b: u64) -> u64 {
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
    #[inline(always)]
    pub(super) fn r(&self, i: u8) -> u64 {
        self.x[usize::from(i & 31)]
    }

    /// Writes `x[i]`, which may be x0: undone at once (cheaper than a branch).
    #[inline(always)]
    pub(super) fn w(&mut self, i: u8, v: u64) {
        self.x[usize::from(i & 31)] = v;
        self.x[0] = 0;
    }

    /// The load of `kind` at rs1 + imm by the instruction at `pc()` into rd, checked for
    /// alignment here and by the bus (the pc is computed only if the load goes to the bus).
    #[inline(always)]
    pub(super) fn load<B: Bus>(
        &mut self,
        bus: &mut B,
        pc: impl Fn() -> u64,
        kind: LoadKind,
        (rd, rs1, imm): (u8, u8, i64),
    ) -> Result<(), Stop> {
        let addr = self.r(rs1).wrapping_add(imm as u64);
        let size = kind.size();
        if addr & (u64::from(size) - 1) != 0 {
            return Err(misaligned(pc(), addr, size, Access::Load));
        }
        let v = match self.regions.load(addr, size, bus.stamp()) {
            Some(v) => v,
            None => self.load_slow(bus, pc(), addr, size)?,
        };
        self.w(rd, kind.extend(v));
        Ok(())
    }

    /// A load no granted range covers: asks the bus for a range, or makes it through the bus.
    #[cold]
    #[inline(never)]
    fn load_slow<B: Bus>(
        &mut self,
        bus: &mut B,
        pc: u64,
        addr: u64,
        size: u8,
    ) -> Result<u64, Stop> {
        if let Some(d) = bus.direct(addr, size, Access::Load) {
            self.regions.insert(d);
            if let Some(v) = self.regions.load(addr, size, bus.stamp()) {
                return Ok(v);
            }
        }
        bus.load(addr, size)
            .map_err(|fault| Stop::Fault { pc, fault })
    }

    /// The store of the low `size` bytes of rs2 at rs1 + imm by the instruction at `pc()`.
    #[inline(always)]
    pub(super) fn store<B: Bus>(
        &mut self,
        bus: &mut B,
        pc: impl Fn() -> u64,
        size: u8,
        (rs1, rs2, imm): (u8, u8, i64),
    ) -> Result<(), Stop> {
        let addr = self.r(rs1).wrapping_add(imm as u64);
        if addr & (u64::from(size) - 1) != 0 {
            return Err(misaligned(pc(), addr, size, Access::Store));
        }
        let value = truncate(self.r(rs2), size);
        if self.regions.store(addr, size, value, bus.stamp()) {
            return Ok(());
        }
        self.store_slow(bus, pc(), addr, size, value)
    }

    /// A store no granted range covers: asks the bus for a range, or makes it through the bus.
    #[cold]
    #[inline(never)]
    fn store_slow<B: Bus>(
        &mut self,
        bus: &mut B,
        pc: u64,
        addr: u64,
        size: u8,
        value: u64,
    ) -> Result<(), Stop> {
        if let Some(d) = bus.direct(addr, size, Access::Store) {
            self.regions.insert(d);
            if self.regions.store(addr, size, value, bus.stamp()) {
                return Ok(());
            }
        }
        bus.store(addr, size, value)
            .map_err(|fault| Stop::Fault { pc, fault })
    }

    /// `lr` of `size` bytes at rs1 into rd.
    #[inline(always)]
    pub(super) fn lr<B: Bus>(
        &mut self,
        bus: &mut B,
        pc: u64,
        size: u8,
        rd: u8,
        rs1: u8,
    ) -> Result<(), Stop> {
        let addr = self.r(rs1);
        if addr & (u64::from(size) - 1) != 0 {
            return Err(misaligned(pc, addr, size, Access::Load));
        }
        let value = bus
            .load(addr, size)
            .map_err(|fault| Stop::Fault { pc, fault })?;
        self.reservation = Some(Reservation { addr, size, value });
        self.w(rd, extend_word(value, size));
        Ok(())
    }

    /// `sc` of `size` bytes of rs2 at rs1; rd = 0 if it stored.
    #[inline(always)]
    pub(super) fn sc<B: Bus>(
        &mut self,
        bus: &mut B,
        pc: u64,
        size: u8,
        (rd, rs1, rs2): (u8, u8, u8),
    ) -> Result<(), Stop> {
        let addr = self.r(rs1);
        // Any sc ends the reservation, whether it succeeds, fails or faults.
        let reservation = self.reservation.take();
        if addr & (u64::from(size) - 1) != 0 {
            return Err(misaligned(pc, addr, size, Access::Atomic));
        }
        let stored = match reservation {
            Some(r) if r.addr == addr && r.size == size => bus
                .cas(addr, size, r.value, truncate(self.r(rs2), size))
                .map_err(|fault| Stop::Fault { pc, fault })?,
            _ => false,
        };
        self.w(rd, u64::from(!stored));
        Ok(())
    }

    /// `amo<op>` of `size` bytes at rs1 with operand rs2; rd = the old value.
    #[inline(always)]
    pub(super) fn amo<B: Bus>(
        &mut self,
        bus: &mut B,
        pc: u64,
        (op, size): (AmoOp, u8),
        (rd, rs1, rs2): (u8, u8, u8),
    ) -> Result<(), Stop> {
        let addr = self.r(rs1);
        if addr & (u64::from(size) - 1) != 0 {
            return Err(misaligned(pc, addr, size, Access::Atomic));
        }
        let old = bus
            .amo(addr, size, op, truncate(self.r(rs2), size))
            .map_err(|fault| Stop::Fault { pc, fault })?;
        self.w(rd, extend_word(old, size));
        Ok(())
    }

    /// `ecall` at `pc`, with the instructions before it counted: served by the bus
    /// ([`Bus::ecall`]), after which the hart goes on at the next instruction (the caller counts
    /// the `ecall` retired), or else it retires and stops the run.
    #[inline(always)]
    pub(super) fn ecall<B: Bus>(&mut self, bus: &mut B, pc: u64) -> Result<u64, Stop> {
        if bus.ecall(pc, &mut self.x, self.instret.wrapping_add(1)) {
            self.x[0] = 0;
            return Ok(pc.wrapping_add(4));
        }
        self.instret = self.instret.wrapping_add(1);
        Err(Stop::Ecall)
    }

    /// Executes `inst` (`len` bytes long) at `pc` and returns the pc of the next instruction;
    /// the caller moves the pc there and counts the instruction retired. On `Err` no register
    /// changed; an `ecall` is counted retired here, an `sc` that faulted lost its reservation.
    #[inline(always)]
    pub(super) fn execute<B: Bus>(
        &mut self,
        bus: &mut B,
        pc: u64,
        inst: &Inst,
        len: u8,
    ) -> Result<u64, Stop> {
        let next = pc.wrapping_add(u64::from(len));
        match *inst {
            Inst::Lui { rd, imm } => self.w(rd, imm as u64),
            Inst::Auipc { rd, imm } => self.w(rd, pc.wrapping_add(imm as u64)),
            Inst::Jal { rd, offset } => {
                self.w(rd, next);
                return Ok(pc.wrapping_add(offset as u64));
            }
            Inst::Jalr { rd, rs1, imm } => {
                // Read rs1 before writing rd: they may be the same register.
                let target = self.r(rs1).wrapping_add(imm as u64) & !1;
                self.w(rd, next);
                return Ok(target);
            }
            Inst::Branch {
                cond,
                rs1,
                rs2,
                offset,
            } => {
                if taken(cond, self.r(rs1), self.r(rs2)) {
                    return Ok(pc.wrapping_add(offset as u64));
                }
            }
            Inst::Load { kind, rd, rs1, imm } => self.load(bus, || pc, kind, (rd, rs1, imm))?,
            Inst::Store {
                size,
                rs1,
                rs2,
                imm,
            } => self.store(bus, || pc, size, (rs1, rs2, imm))?,
            Inst::OpImm { op, rd, rs1, imm } => self.w(rd, alu(op, self.r(rs1), imm as u64)),
            Inst::OpImmW { op, rd, rs1, imm } => self.w(rd, alu_w(op, self.r(rs1), imm as u64)),
            Inst::Op { op, rd, rs1, rs2 } => self.w(rd, alu(op, self.r(rs1), self.r(rs2))),
            Inst::OpW { op, rd, rs1, rs2 } => self.w(rd, alu_w(op, self.r(rs1), self.r(rs2))),
            Inst::Lr { size, rd, rs1 } => self.lr(bus, pc, size, rd, rs1)?,
            Inst::Sc { size, rd, rs1, rs2 } => self.sc(bus, pc, size, (rd, rs1, rs2))?,
            Inst::Amo {
                op,
                size,
                rd,
                rs1,
                rs2,
            } => self.amo(bus, pc, (op, size), (rd, rs1, rs2))?,
            Inst::ReadCounter { rd } => self.w(rd, self.instret),
            Inst::Fence => {}
            Inst::Ecall => return self.ecall(bus, pc),
            Inst::Ebreak => return Err(Stop::Ebreak),
            // Never cached: fetched just now, so fetching again gives the same bits.
            Inst::Illegal => {
                return Err(match fetch(bus, pc) {
                    Ok(raw) => Stop::Illegal { pc, raw },
                    Err(stop) => stop,
                });
            }
        }
        Ok(next)
    }
}
