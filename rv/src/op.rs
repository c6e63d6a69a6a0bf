//! The executed form of an instruction, [`Op`]: an [`Inst`] lowered so that one `match` picks
//! the whole operation (`Addi`, `Ld`, `Bne`, …) instead of a format and then an operation, in
//! 8 bytes, so a block of them is dense.
//!
//! [`Inst`] stays the decoder's form (what the encoding means, as the tests and the golden
//! encodings state it); `Op` is what the executor matches on.

use super::bus::AmoOp;
use super::inst::{AluOp, AluWOp, Cond, Inst, LoadKind};

/// A lowered instruction. Immediates and offsets fit 32 bits in every encoding; an ALU
/// operation, `lui` or `auipc` with rd = x0 is a [`Nop`](Op::Nop) (it has no effect), so the
/// arms that write rd for those never see x0. Fields as in [`Inst`]; `sh` is a shift amount.
// One line a variant: the list reads as a table of the instruction set.
#[rustfmt::skip]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// No effect: a fence, or an ALU operation, `lui` or `auipc` whose result goes to x0.
    Nop,
    // Upper immediates, jumps and branches.
    Lui { rd: u8, imm: i32 },
    Auipc { rd: u8, imm: i32 },
    Jal { rd: u8, offset: i32 },
    Jalr { rd: u8, rs1: u8, imm: i32 },
    Beq { rs1: u8, rs2: u8, offset: i32 },
    Bne { rs1: u8, rs2: u8, offset: i32 },
    Blt { rs1: u8, rs2: u8, offset: i32 },
    Bge { rs1: u8, rs2: u8, offset: i32 },
    Bltu { rs1: u8, rs2: u8, offset: i32 },
    Bgeu { rs1: u8, rs2: u8, offset: i32 },
    // Loads and stores.
    Lb { rd: u8, rs1: u8, imm: i32 },
    Lh { rd: u8, rs1: u8, imm: i32 },
    Lw { rd: u8, rs1: u8, imm: i32 },
    Ld { rd: u8, rs1: u8, imm: i32 },
    Lbu { rd: u8, rs1: u8, imm: i32 },
    Lhu { rd: u8, rs1: u8, imm: i32 },
    Lwu { rd: u8, rs1: u8, imm: i32 },
    Sb { rs1: u8, rs2: u8, imm: i32 },
    Sh { rs1: u8, rs2: u8, imm: i32 },
    Sw { rs1: u8, rs2: u8, imm: i32 },
    Sd { rs1: u8, rs2: u8, imm: i32 },
    // Register-immediate operations (rd is not x0).
    Addi { rd: u8, rs1: u8, imm: i32 },
    Slti { rd: u8, rs1: u8, imm: i32 },
    Sltiu { rd: u8, rs1: u8, imm: i32 },
    Xori { rd: u8, rs1: u8, imm: i32 },
    Ori { rd: u8, rs1: u8, imm: i32 },
    Andi { rd: u8, rs1: u8, imm: i32 },
    Slli { rd: u8, rs1: u8, sh: u8 },
    Srli { rd: u8, rs1: u8, sh: u8 },
    Srai { rd: u8, rs1: u8, sh: u8 },
    Addiw { rd: u8, rs1: u8, imm: i32 },
    Slliw { rd: u8, rs1: u8, sh: u8 },
    Srliw { rd: u8, rs1: u8, sh: u8 },
    Sraiw { rd: u8, rs1: u8, sh: u8 },
    /// Any other register-immediate operation (the decoders make none; kept exact all the same).
    Imm { op: AluOp, rd: u8, rs1: u8, imm: i32 },
    ImmW { op: AluWOp, rd: u8, rs1: u8, imm: i32 },
    // Register-register operations (rd is not x0): the common ones, then the others.
    Add { rd: u8, rs1: u8, rs2: u8 },
    Sub { rd: u8, rs1: u8, rs2: u8 },
    Xor { rd: u8, rs1: u8, rs2: u8 },
    Or { rd: u8, rs1: u8, rs2: u8 },
    And { rd: u8, rs1: u8, rs2: u8 },
    Sll { rd: u8, rs1: u8, rs2: u8 },
    Srl { rd: u8, rs1: u8, rs2: u8 },
    Sra { rd: u8, rs1: u8, rs2: u8 },
    Sltu { rd: u8, rs1: u8, rs2: u8 },
    Mul { rd: u8, rs1: u8, rs2: u8 },
    Addw { rd: u8, rs1: u8, rs2: u8 },
    Subw { rd: u8, rs1: u8, rs2: u8 },
    Reg { op: AluOp, rd: u8, rs1: u8, rs2: u8 },
    RegW { op: AluWOp, rd: u8, rs1: u8, rs2: u8 },
    // Atomics, counters and traps.
    Lr { size: u8, rd: u8, rs1: u8 },
    Sc { size: u8, rd: u8, rs1: u8, rs2: u8 },
    Amo { op: AmoOp, size: u8, rd: u8, rs1: u8, rs2: u8 },
    ReadCounter { rd: u8 },
    Ecall,
    Ebreak,
}

impl Op {
    /// Whether the op may change the pc other than to the next instruction, or stop the run
    /// whatever happens, or reads the retired count: the last op of a block.
    #[inline(always)]
    pub(crate) fn ends_block(self) -> bool {
        matches!(
            self,
            Op::ReadCounter { .. }
                | Op::Jal { .. }
                | Op::Jalr { .. }
                | Op::Beq { .. }
                | Op::Bne { .. }
                | Op::Blt { .. }
                | Op::Bge { .. }
                | Op::Bltu { .. }
                | Op::Bgeu { .. }
                | Op::Ecall
                | Op::Ebreak
        )
    }
}

/// `v`, which the decoder produced from at most 32 bits of immediate.
#[inline(always)]
fn imm32(v: i64) -> i32 {
    debug_assert_eq!(v, i64::from(v as i32), "immediate wider than 32 bits");
    v as i32
}

/// The op that executes `inst`; none for an illegal instruction.
#[inline(always)]
pub(crate) fn lower(inst: Inst) -> Option<Op> {
    Some(match inst {
        Inst::Lui { rd: 0, .. } | Inst::Auipc { rd: 0, .. } => Op::Nop,
        Inst::Lui { rd, imm } => Op::Lui {
            rd,
            imm: imm32(imm),
        },
        Inst::Auipc { rd, imm } => Op::Auipc {
            rd,
            imm: imm32(imm),
        },
        Inst::Jal { rd, offset } => Op::Jal {
            rd,
            offset: imm32(offset),
        },
        Inst::Jalr { rd, rs1, imm } => Op::Jalr {
            rd,
            rs1,
            imm: imm32(imm),
        },
        Inst::Branch {
            cond,
            rs1,
            rs2,
            offset,
        } => {
            let offset = imm32(offset);
            match cond {
                Cond::Eq => Op::Beq { rs1, rs2, offset },
                Cond::Ne => Op::Bne { rs1, rs2, offset },
                Cond::Lt => Op::Blt { rs1, rs2, offset },
                Cond::Ge => Op::Bge { rs1, rs2, offset },
                Cond::Ltu => Op::Bltu { rs1, rs2, offset },
                Cond::Geu => Op::Bgeu { rs1, rs2, offset },
            }
        }
        Inst::Load { kind, rd, rs1, imm } => {
            let imm = imm32(imm);
            match kind {
                LoadKind::B => Op::Lb { rd, rs1, imm },
                LoadKind::H => Op::Lh { rd, rs1, imm },
                LoadKind::W => Op::Lw { rd, rs1, imm },
                LoadKind::D => Op::Ld { rd, rs1, imm },
                LoadKind::Bu => Op::Lbu { rd, rs1, imm },
                LoadKind::Hu => Op::Lhu { rd, rs1, imm },
                LoadKind::Wu => Op::Lwu { rd, rs1, imm },
            }
        }
        Inst::Store {
            size,
            rs1,
            rs2,
            imm,
        } => {
            let imm = imm32(imm);
            match size {
                1 => Op::Sb { rs1, rs2, imm },
                2 => Op::Sh { rs1, rs2, imm },
                4 => Op::Sw { rs1, rs2, imm },
                // The decoders give sizes 1, 2, 4 and 8 only.
                _ => Op::Sd { rs1, rs2, imm },
            }
        }
        Inst::OpImm { rd: 0, .. }
        | Inst::OpImmW { rd: 0, .. }
        | Inst::Op { rd: 0, .. }
        | Inst::OpW { rd: 0, .. } => Op::Nop,
        Inst::OpImm { op, rd, rs1, imm } => lower_op_imm(op, rd, rs1, imm),
        Inst::OpImmW { op, rd, rs1, imm } => {
            // Shift amounts are 0..32 here.
            let sh = imm as u8;
            match op {
                AluWOp::Sll => Op::Slliw { rd, rs1, sh },
                AluWOp::Srl => Op::Srliw { rd, rs1, sh },
                AluWOp::Sra => Op::Sraiw { rd, rs1, sh },
                AluWOp::Add => Op::Addiw {
                    rd,
                    rs1,
                    imm: imm32(imm),
                },
                op => Op::ImmW {
                    op,
                    rd,
                    rs1,
                    imm: imm32(imm),
                },
            }
        }
        Inst::Op { op, rd, rs1, rs2 } => match op {
            AluOp::Add => Op::Add { rd, rs1, rs2 },
            AluOp::Sub => Op::Sub { rd, rs1, rs2 },
            AluOp::Xor => Op::Xor { rd, rs1, rs2 },
            AluOp::Or => Op::Or { rd, rs1, rs2 },
            AluOp::And => Op::And { rd, rs1, rs2 },
            AluOp::Sll => Op::Sll { rd, rs1, rs2 },
            AluOp::Srl => Op::Srl { rd, rs1, rs2 },
            AluOp::Sra => Op::Sra { rd, rs1, rs2 },
            AluOp::Sltu => Op::Sltu { rd, rs1, rs2 },
            AluOp::Mul => Op::Mul { rd, rs1, rs2 },
            op => Op::Reg { op, rd, rs1, rs2 },
        },
        Inst::OpW { op, rd, rs1, rs2 } => match op {
            AluWOp::Add => Op::Addw { rd, rs1, rs2 },
            AluWOp::Sub => Op::Subw { rd, rs1, rs2 },
            op => Op::RegW { op, rd, rs1, rs2 },
        },
        Inst::Lr { size, rd, rs1 } => Op::Lr { size, rd, rs1 },
        Inst::Sc { size, rd, rs1, rs2 } => Op::Sc { size, rd, rs1, rs2 },
        Inst::Amo {
            op,
            size,
            rd,
            rs1,
            rs2,
        } => Op::Amo {
            op,
            size,
            rd,
            rs1,
            rs2,
        },
        Inst::ReadCounter { rd } => Op::ReadCounter { rd },
        Inst::Fence => Op::Nop,
        Inst::Ecall => Op::Ecall,
        Inst::Ebreak => Op::Ebreak,
        Inst::Illegal => return None,
    })
}

/// OP-IMM with rd ≠ x0.
#[inline(always)]
fn lower_op_imm(op: AluOp, rd: u8, rs1: u8, imm: i64) -> Op {
    // Shift amounts are 0..64 here.
    let sh = imm as u8;
    let imm = imm32(imm);
    match op {
        AluOp::Add => Op::Addi { rd, rs1, imm },
        AluOp::Slt => Op::Slti { rd, rs1, imm },
        AluOp::Sltu => Op::Sltiu { rd, rs1, imm },
        AluOp::Xor => Op::Xori { rd, rs1, imm },
        AluOp::Or => Op::Ori { rd, rs1, imm },
        AluOp::And => Op::Andi { rd, rs1, imm },
        AluOp::Sll => Op::Slli { rd, rs1, sh },
        AluOp::Srl => Op::Srli { rd, rs1, sh },
        AluOp::Sra => Op::Srai { rd, rs1, sh },
        op => Op::Imm { op, rd, rs1, imm },
    }
}

// Eight bytes: a tag, three register numbers and a 32-bit immediate.
const _: () = assert!(size_of::<Op>() == 8);
