//! Decoding RV64IMAC instruction words into [`Inst`].
//!
//! Compressed (RVC) instructions expand (in `rvc.rs`) into the same [`Inst`] as their 32-bit
//! equivalents, so the executor knows one form of each; only the instruction length differs. Everything the hart
//! does not implement — F/D, vector, privileged instructions, CSRs other than the user counters,
//! reserved encodings, 48-bit and longer formats — decodes to [`Inst::Illegal`].

use super::bus::AmoOp;
use super::inst::{AluOp, AluWOp, Cond, Inst, LoadKind, field, sext};
use super::rvc::decode16;

/// Decodes the instruction whose low bits are in `raw` (a 16-bit one in its low half): the
/// instruction and its length in bytes (2 or 4).
#[inline(always)]
pub fn decode(raw: u32) -> (Inst, u8) {
    if raw & 3 == 3 {
        (decode32(raw), 4)
    } else {
        (decode16(raw as u16), 2)
    }
}

/// Decodes a 32-bit instruction word (low two bits 11).
// Inlined into the run loop (as decode16 is): as a call it took a quarter of the run time.
#[inline(always)]
pub fn decode32(raw: u32) -> Inst {
    let rd = field(raw, 7, 5) as u8;
    let rs1 = field(raw, 15, 5) as u8;
    let rs2 = field(raw, 20, 5) as u8;
    let funct3 = field(raw, 12, 3);
    let funct7 = raw >> 25;
    let imm_i = sext(raw >> 20, 12);
    match raw & 0x7f {
        0x37 => Inst::Lui {
            rd,
            imm: i64::from((raw & 0xffff_f000) as i32),
        },
        0x17 => Inst::Auipc {
            rd,
            imm: i64::from((raw & 0xffff_f000) as i32),
        },
        0x6f => {
            let imm = field(raw, 31, 1) << 20
                | field(raw, 12, 8) << 12
                | field(raw, 20, 1) << 11
                | field(raw, 21, 10) << 1;
            Inst::Jal {
                rd,
                offset: sext(imm, 21),
            }
        }
        0x67 if funct3 == 0 => Inst::Jalr {
            rd,
            rs1,
            imm: imm_i,
        },
        0x63 => {
            let cond = match funct3 {
                0 => Cond::Eq,
                1 => Cond::Ne,
                4 => Cond::Lt,
                5 => Cond::Ge,
                6 => Cond::Ltu,
                7 => Cond::Geu,
                _ => return Inst::Illegal,
            };
            let imm = field(raw, 31, 1) << 12
                | field(raw, 7, 1) << 11
                | field(raw, 25, 6) << 5
                | field(raw, 8, 4) << 1;
            Inst::Branch {
                cond,
                rs1,
                rs2,
                offset: sext(imm, 13),
            }
        }
        0x03 => {
            let kind = match funct3 {
                0 => LoadKind::B,
                1 => LoadKind::H,
                2 => LoadKind::W,
                3 => LoadKind::D,
                4 => LoadKind::Bu,
                5 => LoadKind::Hu,
                6 => LoadKind::Wu,
                _ => return Inst::Illegal,
            };
            Inst::Load {
                kind,
                rd,
                rs1,
                imm: imm_i,
            }
        }
        0x23 if funct3 < 4 => Inst::Store {
            size: 1 << funct3,
            rs1,
            rs2,
            imm: sext(funct7 << 5 | u32::from(rd), 12),
        },
        0x13 => decode_op_imm(raw, funct3, rd, rs1, imm_i),
        0x1b => {
            let shamt = i64::from(rs2);
            let (op, imm) = match (funct3, funct7) {
                (0, _) => (AluWOp::Add, imm_i),
                (1, 0) => (AluWOp::Sll, shamt),
                (5, 0) => (AluWOp::Srl, shamt),
                (5, 0x20) => (AluWOp::Sra, shamt),
                // Includes shift amounts with bit 5 set: reserved on RV64.
                _ => return Inst::Illegal,
            };
            Inst::OpImmW { op, rd, rs1, imm }
        }
        0x33 => {
            let op = match (funct7, funct3) {
                (0, 0) => AluOp::Add,
                (0x20, 0) => AluOp::Sub,
                (0, 1) => AluOp::Sll,
                (0, 2) => AluOp::Slt,
                (0, 3) => AluOp::Sltu,
                (0, 4) => AluOp::Xor,
                (0, 5) => AluOp::Srl,
                (0x20, 5) => AluOp::Sra,
                (0, 6) => AluOp::Or,
                (0, 7) => AluOp::And,
                (1, 0) => AluOp::Mul,
                (1, 1) => AluOp::Mulh,
                (1, 2) => AluOp::Mulhsu,
                (1, 3) => AluOp::Mulhu,
                (1, 4) => AluOp::Div,
                (1, 5) => AluOp::Divu,
                (1, 6) => AluOp::Rem,
                (1, 7) => AluOp::Remu,
                _ => return Inst::Illegal,
            };
            Inst::Op { op, rd, rs1, rs2 }
        }
        0x3b => {
            let op = match (funct7, funct3) {
                (0, 0) => AluWOp::Add,
                (0x20, 0) => AluWOp::Sub,
                (0, 1) => AluWOp::Sll,
                (0, 5) => AluWOp::Srl,
                (0x20, 5) => AluWOp::Sra,
                (1, 0) => AluWOp::Mul,
                (1, 4) => AluWOp::Div,
                (1, 5) => AluWOp::Divu,
                (1, 6) => AluWOp::Rem,
                (1, 7) => AluWOp::Remu,
                _ => return Inst::Illegal,
            };
            Inst::OpW { op, rd, rs1, rs2 }
        }
        // fence (any predecessor/successor sets, fence.tso, pause) and fence.i; their reserved
        // fields are ignored, as the spec asks.
        0x0f if funct3 <= 1 => Inst::Fence,
        0x2f => decode_amo(raw, funct3, rd, rs1, rs2),
        0x73 => decode_system(raw, funct3, rd, rs1),
        _ => Inst::Illegal,
    }
}

/// OP-IMM: `addi` … `andi` and the 6-bit-shamt shifts.
#[inline(always)]
fn decode_op_imm(raw: u32, funct3: u32, rd: u8, rs1: u8, imm: i64) -> Inst {
    let shamt = i64::from(field(raw, 20, 6));
    let (op, imm) = match (funct3, raw >> 26) {
        (0, _) => (AluOp::Add, imm),
        (2, _) => (AluOp::Slt, imm),
        (3, _) => (AluOp::Sltu, imm),
        (4, _) => (AluOp::Xor, imm),
        (6, _) => (AluOp::Or, imm),
        (7, _) => (AluOp::And, imm),
        (1, 0) => (AluOp::Sll, shamt),
        (5, 0) => (AluOp::Srl, shamt),
        (5, 0x10) => (AluOp::Sra, shamt),
        _ => return Inst::Illegal,
    };
    Inst::OpImm { op, rd, rs1, imm }
}

/// AMO: `lr`, `sc` and the read-modify-writes, word or doubleword; aq/rl are ignored.
#[inline(always)]
fn decode_amo(raw: u32, funct3: u32, rd: u8, rs1: u8, rs2: u8) -> Inst {
    let size = match funct3 {
        2 => 4,
        3 => 8,
        _ => return Inst::Illegal,
    };
    let op = match raw >> 27 {
        0b00010 if rs2 == 0 => return Inst::Lr { size, rd, rs1 },
        0b00011 => return Inst::Sc { size, rd, rs1, rs2 },
        0b00001 => AmoOp::Swap,
        0b00000 => AmoOp::Add,
        0b00100 => AmoOp::Xor,
        0b01100 => AmoOp::And,
        0b01000 => AmoOp::Or,
        0b10000 => AmoOp::Min,
        0b10100 => AmoOp::Max,
        0b11000 => AmoOp::Minu,
        0b11100 => AmoOp::Maxu,
        _ => return Inst::Illegal,
    };
    Inst::Amo {
        op,
        size,
        rd,
        rs1,
        rs2,
    }
}

/// SYSTEM: `ecall`, `ebreak`, and reads of the user counters. Every CSR write (including
/// `unimp`, which is `csrrw x0, cycle, x0`) and every other CSR is illegal.
#[inline(always)]
fn decode_system(raw: u32, funct3: u32, rd: u8, rs1: u8) -> Inst {
    match (funct3, raw) {
        (0, 0x0000_0073) => Inst::Ecall,
        (0, 0x0010_0073) => Inst::Ebreak,
        // csrrs/csrrc with rs1 = x0 and csrrsi/csrrci with uimm = 0 only read.
        (2 | 3 | 6 | 7, _) if rs1 == 0 && matches!(raw >> 20, 0xc00..=0xc02) => {
            Inst::ReadCounter { rd }
        }
        _ => Inst::Illegal,
    }
}
