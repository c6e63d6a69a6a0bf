//! The cached run: blocks of lowered ops from a [`DecodeCache`], with the checks made before
//! each instruction (exit pc, budget) made once per block.

use super::exec::{alu, alu_w, taken};
use super::{Hart, Single, Stop, fetch};
use crate::bus::Bus;
use crate::decode::decode;
use crate::decode_cache::{DecodeCache, Entry, MAX_BLOCK};
use crate::inst::{AluOp, AluWOp, Cond, LoadKind};
use crate::op::{Op, lower};

impl Hart {
    /// Runs blocks from the cache (building them as the hart reaches new code) until a stop.
    /// A block runs whole when neither `exit_pc` nor the end of the budget falls inside it;
    /// otherwise its instructions before the one where the run stops.
    #[inline(always)]
    pub(super) fn run_blocks<B: Bus>(
        &mut self,
        bus: &mut B,
        cache: &mut DecodeCache,
        exit_pc: u64,
        budget: u64,
        start: u64,
    ) -> Stop {
        loop {
            let pc = self.pc;
            if pc == exit_pc {
                return Stop::Returned;
            }
            let left = budget.wrapping_sub(self.instret.wrapping_sub(start));
            if left == 0 {
                return Stop::Budget;
            }
            let Some((ops, bytes)) = cache.block(pc) else {
                // Code that cannot start a block runs a step at a time, fetched each time.
                if let Err(single) = build(bus, cache, pc) {
                    if let Err(stop) = self.step_decoded(bus, single) {
                        return stop;
                    }
                }
                continue;
            };
            // Both checks hold for the first instruction; cut the block before the first
            // instruction where one of them stops the run.
            let mut n = ops.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            if exit_pc.wrapping_sub(pc) < bytes {
                n = n.min(ops_before(ops, pc, exit_pc));
            }
            let whole = n == ops.len();
            let ops = &ops[..n];
            // A whole block that branches back to its own start (a loop's body) runs again at
            // once while it fits the budget: the exit pc is not its start nor inside it, so
            // only the budget is checked again.
            loop {
                if let Err(stop) = self.run_ops(bus, ops) {
                    return stop;
                }
                let left = budget.wrapping_sub(self.instret.wrapping_sub(start));
                if !whole || self.pc != pc || (n as u64) > left {
                    break;
                }
            }
        }
    }

    /// Executes the first ops of a block from `self.pc`, stopping at the first that stops the
    /// run (as single steps would: the pc, registers and retired count are that op's).
    #[inline(always)]
    fn run_ops<B: Bus>(&mut self, bus: &mut B, ops: &[Entry]) -> Result<(), Stop> {
        let start = self.pc;
        // Only the last op may jump: the others' next pc is the next op's, so it is not tracked
        // and an op's own pc is computed only where it is used. The retired count is brought up
        // to date once, after the block or at the stop (a counter read starts its block, so it
        // reads an exact count).
        let Some((last, body)) = ops.split_last() else {
            return Ok(());
        };
        for (i, e) in body.iter().enumerate() {
            if let Err(stop) = self.exec_body(bus, start, e) {
                self.pc = start.wrapping_add(u64::from(e.off));
                self.instret = self.instret.wrapping_add(i as u64);
                return Err(stop);
            }
        }
        // Counted before the last op runs: an `ecall` the bus serves sees the exact count.
        self.instret = self.instret.wrapping_add(body.len() as u64);
        let pc = start.wrapping_add(u64::from(last.off));
        let end = self.exec_op(bus, pc, &last.op, last.len);
        self.pc = *end.as_ref().unwrap_or(&pc);
        end.map(|_| self.instret = self.instret.wrapping_add(1))
    }

    /// Writes `x[i]` for an op that lowering made sure does not name x0 (see [`Op`]).
    #[inline(always)]
    fn w_nonzero(&mut self, i: u8, v: u64) {
        debug_assert_ne!(i, 0, "an op writing x0 is lowered to a Nop");
        self.x[usize::from(i & 31)] = v;
    }

    /// rd = rs1 `op` b, for an op whose rd is not x0.
    #[inline(always)]
    fn op64(&mut self, op: AluOp, rd: u8, rs1: u8, b: u64) {
        self.w_nonzero(rd, alu(op, self.r(rs1), b));
    }

    /// rd = rs1 `op` b on words, for an op whose rd is not x0.
    #[inline(always)]
    fn op32(&mut self, op: AluWOp, rd: u8, rs1: u8, b: u64) {
        self.w_nonzero(rd, alu_w(op, self.r(rs1), b));
    }

    /// Executes `e`, an op of a block's body (not its last: no jump, branch, `ecall`, `ebreak`
    /// or counter read), at `start` + its offset, as [`exec_op`](Self::exec_op) does, without
    /// a next pc: its pc is computed only where it is used.
    #[inline(always)]
    fn exec_body<B: Bus>(&mut self, bus: &mut B, start: u64, e: &Entry) -> Result<(), Stop> {
        let pc = || start.wrapping_add(u64::from(e.off));
        let imm = |i: i32| i64::from(i) as u64;
        match e.op {
            Op::Nop => {}
            Op::Lui { rd, imm: i } => self.w_nonzero(rd, imm(i)),
            Op::Auipc { rd, imm: i } => self.w_nonzero(rd, pc().wrapping_add(imm(i))),
            Op::Lb { rd, rs1, imm: i } => self.load(bus, pc, LoadKind::B, (rd, rs1, i.into()))?,
            Op::Lh { rd, rs1, imm: i } => self.load(bus, pc, LoadKind::H, (rd, rs1, i.into()))?,
            Op::Lw { rd, rs1, imm: i } => self.load(bus, pc, LoadKind::W, (rd, rs1, i.into()))?,
            Op::Ld { rd, rs1, imm: i } => self.load(bus, pc, LoadKind::D, (rd, rs1, i.into()))?,
            Op::Lbu { rd, rs1, imm: i } => self.load(bus, pc, LoadKind::Bu, (rd, rs1, i.into()))?,
            Op::Lhu { rd, rs1, imm: i } => self.load(bus, pc, LoadKind::Hu, (rd, rs1, i.into()))?,
            Op::Lwu { rd, rs1, imm: i } => self.load(bus, pc, LoadKind::Wu, (rd, rs1, i.into()))?,
            Op::Sb { rs1, rs2, imm: i } => self.store(bus, pc, 1, (rs1, rs2, i.into()))?,
            Op::Sh { rs1, rs2, imm: i } => self.store(bus, pc, 2, (rs1, rs2, i.into()))?,
            Op::Sw { rs1, rs2, imm: i } => self.store(bus, pc, 4, (rs1, rs2, i.into()))?,
            Op::Sd { rs1, rs2, imm: i } => self.store(bus, pc, 8, (rs1, rs2, i.into()))?,
            Op::Addi { rd, rs1, imm: i } => self.op64(AluOp::Add, rd, rs1, imm(i)),
            Op::Slti { rd, rs1, imm: i } => self.op64(AluOp::Slt, rd, rs1, imm(i)),
            Op::Sltiu { rd, rs1, imm: i } => self.op64(AluOp::Sltu, rd, rs1, imm(i)),
            Op::Xori { rd, rs1, imm: i } => self.op64(AluOp::Xor, rd, rs1, imm(i)),
            Op::Ori { rd, rs1, imm: i } => self.op64(AluOp::Or, rd, rs1, imm(i)),
            Op::Andi { rd, rs1, imm: i } => self.op64(AluOp::And, rd, rs1, imm(i)),
            Op::Slli { rd, rs1, sh: s } => self.op64(AluOp::Sll, rd, rs1, s.into()),
            Op::Srli { rd, rs1, sh: s } => self.op64(AluOp::Srl, rd, rs1, s.into()),
            Op::Srai { rd, rs1, sh: s } => self.op64(AluOp::Sra, rd, rs1, s.into()),
            Op::Addiw { rd, rs1, imm: i } => self.op32(AluWOp::Add, rd, rs1, imm(i)),
            Op::Add { rd, rs1, rs2 } => self.op64(AluOp::Add, rd, rs1, self.r(rs2)),
            Op::Sub { rd, rs1, rs2 } => self.op64(AluOp::Sub, rd, rs1, self.r(rs2)),
            Op::Xor { rd, rs1, rs2 } => self.op64(AluOp::Xor, rd, rs1, self.r(rs2)),
            Op::Or { rd, rs1, rs2 } => self.op64(AluOp::Or, rd, rs1, self.r(rs2)),
            Op::And { rd, rs1, rs2 } => self.op64(AluOp::And, rd, rs1, self.r(rs2)),
            Op::Mul { rd, rs1, rs2 } => self.op64(AluOp::Mul, rd, rs1, self.r(rs2)),
            Op::Addw { rd, rs1, rs2 } => self.op32(AluWOp::Add, rd, rs1, self.r(rs2)),
            // The rarer ones, and those that cannot be in a body, as the last op runs them
            // (every variant named: a full jump table needs no range check).
            op @ (Op::Jal { .. }
            | Op::Jalr { .. }
            | Op::Beq { .. }
            | Op::Bne { .. }
            | Op::Blt { .. }
            | Op::Bge { .. }
            | Op::Bltu { .. }
            | Op::Bgeu { .. }
            | Op::Slliw { .. }
            | Op::Srliw { .. }
            | Op::Sraiw { .. }
            | Op::Imm { .. }
            | Op::ImmW { .. }
            | Op::Sll { .. }
            | Op::Srl { .. }
            | Op::Sra { .. }
            | Op::Sltu { .. }
            | Op::Subw { .. }
            | Op::Reg { .. }
            | Op::RegW { .. }
            | Op::Lr { .. }
            | Op::Sc { .. }
            | Op::Amo { .. }
            | Op::ReadCounter { .. }
            | Op::Ecall
            | Op::Ebreak) => {
                self.exec_op(bus, pc(), &op, e.len)?;
            }
        }
        Ok(())
    }

    /// Executes `op` (`len` bytes long) at `pc` as [`execute`](Self::execute) executes the
    /// instruction it was lowered from, with the same functions: one dispatch per instruction.
    #[inline(always)]
    fn exec_op<B: Bus>(&mut self, bus: &mut B, pc: u64, op: &Op, len: u8) -> Result<u64, Stop> {
        let next = pc.wrapping_add(u64::from(len));
        let branch = |hart: &Self, cond, rs1, rs2, offset: i32| {
            if taken(cond, hart.r(rs1), hart.r(rs2)) {
                pc.wrapping_add(i64::from(offset) as u64)
            } else {
                next
            }
        };
        let imm = |i: i32| i64::from(i) as u64;
        match *op {
            Op::Nop => {}
            Op::Lui { rd, imm: i } => self.w_nonzero(rd, imm(i)),
            Op::Auipc { rd, imm: i } => self.w_nonzero(rd, pc.wrapping_add(imm(i))),
            Op::Jal { rd, offset } => {
                self.w(rd, next);
                return Ok(pc.wrapping_add(imm(offset)));
            }
            Op::Jalr { rd, rs1, imm: i } => {
                // Read rs1 before writing rd: they may be the same register.
                let target = self.r(rs1).wrapping_add(imm(i)) & !1;
                self.w(rd, next);
                return Ok(target);
            }
            Op::Beq { rs1, rs2, offset } => return Ok(branch(self, Cond::Eq, rs1, rs2, offset)),
            Op::Bne { rs1, rs2, offset } => return Ok(branch(self, Cond::Ne, rs1, rs2, offset)),
            Op::Blt { rs1, rs2, offset } => return Ok(branch(self, Cond::Lt, rs1, rs2, offset)),
            Op::Bge { rs1, rs2, offset } => return Ok(branch(self, Cond::Ge, rs1, rs2, offset)),
            Op::Bltu { rs1, rs2, offset } => return Ok(branch(self, Cond::Ltu, rs1, rs2, offset)),
            Op::Bgeu { rs1, rs2, offset } => return Ok(branch(self, Cond::Geu, rs1, rs2, offset)),
            Op::Lb { rd, rs1, imm: i } => {
                self.load(bus, || pc, LoadKind::B, (rd, rs1, i.into()))?
            }
            Op::Lh { rd, rs1, imm: i } => {
                self.load(bus, || pc, LoadKind::H, (rd, rs1, i.into()))?
            }
            Op::Lw { rd, rs1, imm: i } => {
                self.load(bus, || pc, LoadKind::W, (rd, rs1, i.into()))?
            }
            Op::Ld { rd, rs1, imm: i } => {
                self.load(bus, || pc, LoadKind::D, (rd, rs1, i.into()))?
            }
            Op::Lbu { rd, rs1, imm: i } => {
                self.load(bus, || pc, LoadKind::Bu, (rd, rs1, i.into()))?
            }
            Op::Lhu { rd, rs1, imm: i } => {
                self.load(bus, || pc, LoadKind::Hu, (rd, rs1, i.into()))?
            }
            Op::Lwu { rd, rs1, imm: i } => {
                self.load(bus, || pc, LoadKind::Wu, (rd, rs1, i.into()))?
            }
            Op::Sb { rs1, rs2, imm: i } => self.store(bus, || pc, 1, (rs1, rs2, i.into()))?,
            Op::Sh { rs1, rs2, imm: i } => self.store(bus, || pc, 2, (rs1, rs2, i.into()))?,
            Op::Sw { rs1, rs2, imm: i } => self.store(bus, || pc, 4, (rs1, rs2, i.into()))?,
            Op::Sd { rs1, rs2, imm: i } => self.store(bus, || pc, 8, (rs1, rs2, i.into()))?,
            Op::Addi { rd, rs1, imm: i } => self.op64(AluOp::Add, rd, rs1, imm(i)),
            Op::Slti { rd, rs1, imm: i } => self.op64(AluOp::Slt, rd, rs1, imm(i)),
            Op::Sltiu { rd, rs1, imm: i } => self.op64(AluOp::Sltu, rd, rs1, imm(i)),
            Op::Xori { rd, rs1, imm: i } => self.op64(AluOp::Xor, rd, rs1, imm(i)),
            Op::Ori { rd, rs1, imm: i } => self.op64(AluOp::Or, rd, rs1, imm(i)),
            Op::Andi { rd, rs1, imm: i } => self.op64(AluOp::And, rd, rs1, imm(i)),
            Op::Slli { rd, rs1, sh: s } => self.op64(AluOp::Sll, rd, rs1, s.into()),
            Op::Srli { rd, rs1, sh: s } => self.op64(AluOp::Srl, rd, rs1, s.into()),
            Op::Srai { rd, rs1, sh: s } => self.op64(AluOp::Sra, rd, rs1, s.into()),
            Op::Addiw { rd, rs1, imm: i } => self.op32(AluWOp::Add, rd, rs1, imm(i)),
            Op::Slliw { rd, rs1, sh: s } => self.op32(AluWOp::Sll, rd, rs1, s.into()),
            Op::Srliw { rd, rs1, sh: s } => self.op32(AluWOp::Srl, rd, rs1, s.into()),
            Op::Sraiw { rd, rs1, sh: s } => self.op32(AluWOp::Sra, rd, rs1, s.into()),
            Op::Imm {
                op,
                rd,
                rs1,
                imm: i,
            } => self.op64(op, rd, rs1, imm(i)),
            Op::ImmW {
                op,
                rd,
                rs1,
                imm: i,
            } => self.op32(op, rd, rs1, imm(i)),
            Op::Reg { op, rd, rs1, rs2 } => self.op64(op, rd, rs1, self.r(rs2)),
            Op::RegW { op, rd, rs1, rs2 } => self.op32(op, rd, rs1, self.r(rs2)),
            Op::Add { rd, rs1, rs2 } => self.op64(AluOp::Add, rd, rs1, self.r(rs2)),
            Op::Sub { rd, rs1, rs2 } => self.op64(AluOp::Sub, rd, rs1, self.r(rs2)),
            Op::Xor { rd, rs1, rs2 } => self.op64(AluOp::Xor, rd, rs1, self.r(rs2)),
            Op::Or { rd, rs1, rs2 } => self.op64(AluOp::Or, rd, rs1, self.r(rs2)),
            Op::And { rd, rs1, rs2 } => self.op64(AluOp::And, rd, rs1, self.r(rs2)),
            Op::Sll { rd, rs1, rs2 } => self.op64(AluOp::Sll, rd, rs1, self.r(rs2)),
            Op::Srl { rd, rs1, rs2 } => self.op64(AluOp::Srl, rd, rs1, self.r(rs2)),
            Op::Sra { rd, rs1, rs2 } => self.op64(AluOp::Sra, rd, rs1, self.r(rs2)),
            Op::Sltu { rd, rs1, rs2 } => self.op64(AluOp::Sltu, rd, rs1, self.r(rs2)),
            Op::Mul { rd, rs1, rs2 } => self.op64(AluOp::Mul, rd, rs1, self.r(rs2)),
            Op::Addw { rd, rs1, rs2 } => self.op32(AluWOp::Add, rd, rs1, self.r(rs2)),
            Op::Subw { rd, rs1, rs2 } => self.op32(AluWOp::Sub, rd, rs1, self.r(rs2)),
            Op::Lr { size, rd, rs1 } => self.lr(bus, pc, size, rd, rs1)?,
            Op::Sc { size, rd, rs1, rs2 } => self.sc(bus, pc, size, (rd, rs1, rs2))?,
            Op::Amo {
                op,
                size,
                rd,
                rs1,
                rs2,
            } => self.amo(bus, pc, (op, size), (rd, rs1, rs2))?,
            // Exact: a counter read starts its block (see `run_ops`).
            Op::ReadCounter { rd } => self.w(rd, self.instret),
            Op::Ecall => return self.ecall(bus, pc),
            Op::Ebreak => return Err(Stop::Ebreak),
        }
        Ok(next)
    }
}

/// Fetches and decodes the straight-line code from `pc` into a block in `cache`. If the
/// instruction at `pc` cannot start a block, returns its decoding (or why it could not be
/// fetched) for the hart to execute once, uncached.
///
/// The block ends after an instruction that may jump or stop the run, or before one that cannot
/// be fetched, is illegal or is not fixed code: what happens there is decided when the hart gets
/// there. Ahead of the hart, only fixed code is fetched. A counter read starts a block of its
/// own: the hart counts a block's instructions when it ends, so the count is exact only at a
/// block's start.
#[cold]
fn build<B: Bus>(bus: &mut B, cache: &mut DecodeCache, pc: u64) -> Result<(), Single> {
    let (mut ops, mut n, mut at) = ([Entry::NOP; MAX_BLOCK], 0, pc);
    while n < MAX_BLOCK {
        if at != pc && !bus.code_is_fixed(at, 2) {
            break;
        }
        let raw = match fetch(bus, at) {
            Ok(raw) => raw,
            Err(stop) if at == pc => return Err(Err(stop)),
            Err(_) => break,
        };
        let (inst, len) = decode(raw);
        let op = match lower(inst) {
            Some(op) if bus.code_is_fixed(at, len) => op,
            _ if at == pc => return Err(Ok((inst, len))),
            _ => break,
        };
        if matches!(op, Op::ReadCounter { .. }) && at != pc {
            break;
        }
        // At most 31 instructions of at most 4 bytes before it.
        let off = at.wrapping_sub(pc) as u8;
        ops[n] = Entry { op, off, len };
        n += 1;
        at = at.wrapping_add(u64::from(len));
        if op.ends_block() {
            break;
        }
    }
    cache.insert(pc, &ops[..n], at.wrapping_sub(pc));
    Ok(())
}

/// How many of the block `ops` at `pc` come before the one at `exit_pc` (all, if `exit_pc` is
/// not where one of them starts).
#[cold]
fn ops_before(ops: &[Entry], pc: u64, exit_pc: u64) -> usize {
    ops.iter()
        .position(|e| pc.wrapping_add(u64::from(e.off)) == exit_pc)
        .unwrap_or(ops.len())
}
