//! Decoding RVC (compressed, 16-bit) instructions into the [`Inst`] of their 32-bit
//! equivalents (RV64C: quadrants 0, 1 and 2). Hints (e.g. `c.nop` with an immediate, `c.li`
//! to x0) decode as the instruction they expand to, which changes nothing; reserved encodings
//! and the floating-point loads and stores decode as [`Inst::Illegal`].

use super::inst::{AluOp, AluWOp, Cond, Inst, LoadKind, field, sext};

/// rd', rs1', rs2': the 3-bit register fields of RVC name x8..x15.
#[inline(always)]
fn creg(v: u32, lo: u32) -> u8 {
    8 + field(v, lo, 3) as u8
}

/// The 6-bit signed immediate of the CI format: imm[5] at bit 12, imm[4:0] at bits 6:2.
#[inline(always)]
fn ci_imm(v: u32) -> i64 {
    sext(field(v, 12, 1) << 5 | field(v, 2, 5), 6)
}

/// Decodes a 16-bit (RVC) instruction (low two bits not 11) into its 32-bit equivalent.
#[inline(always)]
pub fn decode16(raw: u16) -> Inst {
    let v = u32::from(raw);
    let funct3 = field(v, 13, 3);
    // The full 5-bit register fields of the CI/CR/CSS formats.
    let rd = field(v, 7, 5) as u8;
    let rs2 = field(v, 2, 5) as u8;
    match (v & 3, funct3) {
        // Quadrant 0. The all-zero word is reserved (nzuimm = 0 makes it illegal here).
        (0, 0b000) => {
            let nzuimm = field(v, 11, 2) << 4
                | field(v, 7, 4) << 6
                | field(v, 6, 1) << 2
                | field(v, 5, 1) << 3;
            if nzuimm == 0 {
                return Inst::Illegal;
            }
            Inst::OpImm {
                op: AluOp::Add,
                rd: creg(v, 2),
                rs1: 2,
                imm: i64::from(nzuimm),
            }
        }
        (0, 0b010) => Inst::Load {
            kind: LoadKind::W,
            rd: creg(v, 2),
            rs1: creg(v, 7),
            imm: cw_offset(v),
        },
        (0, 0b011) => Inst::Load {
            kind: LoadKind::D,
            rd: creg(v, 2),
            rs1: creg(v, 7),
            imm: cd_offset(v),
        },
        (0, 0b110) => Inst::Store {
            size: 4,
            rs1: creg(v, 7),
            rs2: creg(v, 2),
            imm: cw_offset(v),
        },
        (0, 0b111) => Inst::Store {
            size: 8,
            rs1: creg(v, 7),
            rs2: creg(v, 2),
            imm: cd_offset(v),
        },
        // c.fld, c.fsd (no F/D) and the reserved 0b100.
        (0, _) => Inst::Illegal,

        // Quadrant 1. c.nop and the rd = 0 / imm = 0 forms of c.addi are hints: executing them
        // as the addi they expand to changes nothing.
        (1, 0b000) => Inst::OpImm {
            op: AluOp::Add,
            rd,
            rs1: rd,
            imm: ci_imm(v),
        },
        (1, 0b001) if rd != 0 => Inst::OpImmW {
            op: AluWOp::Add,
            rd,
            rs1: rd,
            imm: ci_imm(v),
        },
        (1, 0b010) => Inst::OpImm {
            op: AluOp::Add,
            rd,
            rs1: 0,
            imm: ci_imm(v),
        },
        (1, 0b011) if rd == 2 => {
            let nzimm = field(v, 12, 1) << 9
                | field(v, 6, 1) << 4
                | field(v, 5, 1) << 6
                | field(v, 3, 2) << 7
                | field(v, 2, 1) << 5;
            if nzimm == 0 {
                return Inst::Illegal;
            }
            Inst::OpImm {
                op: AluOp::Add,
                rd: 2,
                rs1: 2,
                imm: sext(nzimm, 10),
            }
        }
        (1, 0b011) => match ci_imm(v) {
            0 => Inst::Illegal,
            imm => Inst::Lui { rd, imm: imm << 12 },
        },
        (1, 0b100) => decode_c_alu(v),
        (1, 0b101) => {
            let imm = field(v, 12, 1) << 11
                | field(v, 11, 1) << 4
                | field(v, 9, 2) << 8
                | field(v, 8, 1) << 10
                | field(v, 7, 1) << 6
                | field(v, 6, 1) << 7
                | field(v, 3, 3) << 1
                | field(v, 2, 1) << 5;
            Inst::Jal {
                rd: 0,
                offset: sext(imm, 12),
            }
        }
        (1, 0b110 | 0b111) => {
            let imm = field(v, 12, 1) << 8
                | field(v, 10, 2) << 3
                | field(v, 5, 2) << 6
                | field(v, 3, 2) << 1
                | field(v, 2, 1) << 5;
            Inst::Branch {
                cond: if funct3 == 0b110 { Cond::Eq } else { Cond::Ne },
                rs1: creg(v, 7),
                rs2: 0,
                offset: sext(imm, 9),
            }
        }
        // c.addiw with rd = 0 is reserved.
        (1, _) => Inst::Illegal,

        // Quadrant 2.
        (2, 0b000) => Inst::OpImm {
            op: AluOp::Sll,
            rd,
            rs1: rd,
            imm: i64::from(field(v, 12, 1) << 5 | field(v, 2, 5)),
        },
        (2, 0b010) if rd != 0 => Inst::Load {
            kind: LoadKind::W,
            rd,
            rs1: 2,
            imm: i64::from(field(v, 12, 1) << 5 | field(v, 4, 3) << 2 | field(v, 2, 2) << 6),
        },
        (2, 0b011) if rd != 0 => Inst::Load {
            kind: LoadKind::D,
            rd,
            rs1: 2,
            imm: i64::from(field(v, 12, 1) << 5 | field(v, 5, 2) << 3 | field(v, 2, 3) << 6),
        },
        (2, 0b100) => match (field(v, 12, 1), rd, rs2) {
            (0, 0, 0) => Inst::Illegal, // c.jr x0 is reserved
            (0, _, 0) => Inst::Jalr {
                rd: 0,
                rs1: rd,
                imm: 0,
            },
            (0, _, _) => Inst::Op {
                op: AluOp::Add,
                rd,
                rs1: 0,
                rs2,
            },
            (_, 0, 0) => Inst::Ebreak,
            (_, _, 0) => Inst::Jalr {
                rd: 1,
                rs1: rd,
                imm: 0,
            },
            (_, _, _) => Inst::Op {
                op: AluOp::Add,
                rd,
                rs1: rd,
                rs2,
            },
        },
        (2, 0b110) => Inst::Store {
            size: 4,
            rs1: 2,
            rs2,
            imm: i64::from(field(v, 9, 4) << 2 | field(v, 7, 2) << 6),
        },
        (2, 0b111) => Inst::Store {
            size: 8,
            rs1: 2,
            rs2,
            imm: i64::from(field(v, 10, 3) << 3 | field(v, 7, 3) << 6),
        },
        // c.fldsp, c.fsdsp (no F/D), and c.lwsp/c.ldsp with rd = 0 (reserved).
        _ => Inst::Illegal,
    }
}

/// The offset of c.lw/c.sw: uimm[5:3] at bits 12:10, uimm[2] at bit 6, uimm[6] at bit 5.
#[inline(always)]
fn cw_offset(v: u32) -> i64 {
    i64::from(field(v, 10, 3) << 3 | field(v, 6, 1) << 2 | field(v, 5, 1) << 6)
}

/// The offset of c.ld/c.sd: uimm[5:3] at bits 12:10, uimm[7:6] at bits 6:5.
#[inline(always)]
fn cd_offset(v: u32) -> i64 {
    i64::from(field(v, 10, 3) << 3 | field(v, 5, 2) << 6)
}

/// Quadrant 1, funct3 100: c.srli, c.srai, c.andi and the register-register c.sub … c.addw.
#[inline(always)]
fn decode_c_alu(v: u32) -> Inst {
    let rd = creg(v, 7);
    let rs2 = creg(v, 2);
    // Shift amount 0 is a hint; shifting by 0 changes nothing.
    let shamt = i64::from(field(v, 12, 1) << 5 | field(v, 2, 5));
    let op_imm = |op, imm| Inst::OpImm {
        op,
        rd,
        rs1: rd,
        imm,
    };
    let op = |op| Inst::Op {
        op,
        rd,
        rs1: rd,
        rs2,
    };
    let op_w = |op| Inst::OpW {
        op,
        rd,
        rs1: rd,
        rs2,
    };
    match (field(v, 10, 2), field(v, 12, 1), field(v, 5, 2)) {
        (0b00, _, _) => op_imm(AluOp::Srl, shamt),
        (0b01, _, _) => op_imm(AluOp::Sra, shamt),
        (0b10, _, _) => op_imm(AluOp::And, ci_imm(v)),
        (_, 0, 0b00) => op(AluOp::Sub),
        (_, 0, 0b01) => op(AluOp::Xor),
        (_, 0, 0b10) => op(AluOp::Or),
        (_, 0, _) => op(AluOp::And),
        (_, _, 0b00) => op_w(AluWOp::Sub),
        (_, _, 0b01) => op_w(AluWOp::Add),
        // Reserved on RV64C (no Zcb).
        _ => Inst::Illegal,
    }
}
