//! The encoders and the decoder against words an independent assembler produced.

use super::super::{AluOp, AluWOp, AmoOp, Cond, Inst, LoadKind, decode, decode32};
use super::*;

#[test]
fn encoders_match_the_assembler() {
    #[rustfmt::skip]
    let cases: &[(u32, u32, &str)] = &[
        (addi(A0, A1, -1), 0xfff58513, "addi a0, a1, -1"),
        (enc_i(-2048, T1, 2, T0, OP_IMM), 0x80032293, "slti t0, t1, -2048"),
        (enc_i(2047, A1, 3, A0, OP_IMM), 0x7ff5b513, "sltiu a0, a1, 2047"),
        (enc_i(63, A1, 1, A0, OP_IMM), 0x03f59513, "slli a0, a1, 63"),
        (enc_i(0x400 | 63, A1, 5, A0, OP_IMM), 0x43f5d513, "srai a0, a1, 63"),
        (lui(A0, 0x80000), 0x80000537, "lui a0, 0x80000"),
        (lui(T6, 0xfffff), 0xffffffb7, "lui t6, 0xfffff"),
        (enc_u(0x12345, RA, AUIPC), 0x12345097, "auipc ra, 0x12345"),
        (jal(RA, -4), 0xffdff0ef, "jal ra, -4"),
        (jal(ZERO, 1048574), 0x7ffff06f, "jal zero, 1048574"),
        (jalr(RA, T0, -2048), 0x800280e7, "jalr ra, -2048(t0)"),
        (jalr(ZERO, RA, 0), 0x00008067, "ret"),
        (RET, 0x00008067, "ret"),
        (enc_b(-4096, A1, A0, 0, BRANCH), 0x80b50063, "beq a0, a1, -4096"),
        (bne(T0, ZERO, 4094), 0x7e029fe3, "bne t0, zero, 4094"),
        (enc_b(-16, A5, A4, 7, BRANCH), 0xfef778e3, "bgeu a4, a5, -16"),
        (enc_i(-1, A1, 0, A0, LOAD), 0xfff58503, "lb a0, -1(a1)"),
        (ld(A0, SP, -8), 0xff813503, "ld a0, -8(sp)"),
        (enc_i(-2048, T1, 5, T0, LOAD), 0x80035283, "lhu t0, -2048(t1)"),
        (enc_s(-1, A0, A1, 0, STORE), 0xfea58fa3, "sb a0, -1(a1)"),
        (sw(A0, A1, 2047), 0x7ea5afa3, "sw a0, 2047(a1)"),
        (sd(RA, SP, -2048), 0x80113023, "sd ra, -2048(sp)"),
        (enc_i(31, A1, 5, A0, OP_IMM_32), 0x01f5d51b, "srliw a0, a1, 31"),
        (enc_r(0x20, A2, A1, 5, A0, OP_32), 0x40c5d53b, "sraw a0, a1, a2"),
        (mul(A0, A1, A2), 0x02c58533, "mul a0, a1, a2"),
        (enc_r(1, A2, A1, 2, A0, OP), 0x02c5a533, "mulhsu a0, a1, a2"),
        (enc_r(1, A2, A1, 7, A0, OP_32), 0x02c5f53b, "remuw a0, a1, a2"),
        (amo(0b00010, 4, A0, A1, ZERO), 0x1005a52f, "lr.w a0, (a1)"),
        (amo(0b00011, 4, A0, A1, A2), 0x18c5a52f, "sc.w a0, a2, (a1)"),
        (amo(0b11100, 8, A0, A1, A2), 0xe0c5b52f, "amomaxu.d a0, a2, (a1)"),
        (csrr(A0, 0xc00), 0xc0002573, "rdcycle a0"),
    ];
    for &(ours, theirs, asm) in cases {
        assert_eq!(ours, theirs, "{asm}: {ours:#010x} != {theirs:#010x}");
    }
}

#[test]
fn decoder_matches_the_assembler() {
    use Inst::*;
    #[rustfmt::skip]
    let cases: &[(u32, Inst)] = &[
        (0xfff58513, OpImm { op: AluOp::Add, rd: 10, rs1: 11, imm: -1 }),
        (0x7ff5b513, OpImm { op: AluOp::Sltu, rd: 10, rs1: 11, imm: 2047 }),
        (0x07f4f413, OpImm { op: AluOp::And, rd: 8, rs1: 9, imm: 127 }),
        (0x03f5d513, OpImm { op: AluOp::Srl, rd: 10, rs1: 11, imm: 63 }),
        (0x43f5d513, OpImm { op: AluOp::Sra, rd: 10, rs1: 11, imm: 63 }),
        (0x80000537, Lui { rd: 10, imm: -0x8000_0000 }),
        (0x12345097, Auipc { rd: 1, imm: 0x1234_5000 }),
        (0xffdff0ef, Jal { rd: 1, offset: -4 }),
        (0x7ffff06f, Jal { rd: 0, offset: 1048574 }),
        (0x800280e7, Jalr { rd: 1, rs1: 5, imm: -2048 }),
        (0x80b50063, Branch { cond: Cond::Eq, rs1: 10, rs2: 11, offset: -4096 }),
        (0x7e029fe3, Branch { cond: Cond::Ne, rs1: 5, rs2: 0, offset: 4094 }),
        (0x00944463, Branch { cond: Cond::Lt, rs1: 8, rs2: 9, offset: 8 }),
        (0xfeb55ce3, Branch { cond: Cond::Ge, rs1: 10, rs2: 11, offset: -8 }),
        (0x00d66863, Branch { cond: Cond::Ltu, rs1: 12, rs2: 13, offset: 16 }),
        (0xfef778e3, Branch { cond: Cond::Geu, rs1: 14, rs2: 15, offset: -16 }),
        (0x00259503, Load { kind: LoadKind::H, rd: 10, rs1: 11, imm: 2 }),
        (0x0045a503, Load { kind: LoadKind::W, rd: 10, rs1: 11, imm: 4 }),
        (0x7ff34283, Load { kind: LoadKind::Bu, rd: 5, rs1: 6, imm: 2047 }),
        (0x00c36283, Load { kind: LoadKind::Wu, rd: 5, rs1: 6, imm: 12 }),
        (0x00a59123, Store { size: 2, rs1: 11, rs2: 10, imm: 2 }),
        (0x80113023, Store { size: 8, rs1: 2, rs2: 1, imm: -2048 }),
        (0xfff5851b, OpImmW { op: AluWOp::Add, rd: 10, rs1: 11, imm: -1 }),
        (0x01f5951b, OpImmW { op: AluWOp::Sll, rd: 10, rs1: 11, imm: 31 }),
        (0x41f5d51b, OpImmW { op: AluWOp::Sra, rd: 10, rs1: 11, imm: 31 }),
        (0x40c58533, Op { op: AluOp::Sub, rd: 10, rs1: 11, rs2: 12 }),
        (0x00c5a533, Op { op: AluOp::Slt, rd: 10, rs1: 11, rs2: 12 }),
        (0x40c5d533, Op { op: AluOp::Sra, rd: 10, rs1: 11, rs2: 12 }),
        (0x02c59533, Op { op: AluOp::Mulh, rd: 10, rs1: 11, rs2: 12 }),
        (0x02c5b533, Op { op: AluOp::Mulhu, rd: 10, rs1: 11, rs2: 12 }),
        (0x02c5e533, Op { op: AluOp::Rem, rd: 10, rs1: 11, rs2: 12 }),
        (0x00c5953b, OpW { op: AluWOp::Sll, rd: 10, rs1: 11, rs2: 12 }),
        (0x02c5c53b, OpW { op: AluWOp::Div, rd: 10, rs1: 11, rs2: 12 }),
        (0x02c5d53b, OpW { op: AluWOp::Divu, rd: 10, rs1: 11, rs2: 12 }),
        (0x1405b52f, Lr { size: 8, rd: 10, rs1: 11 }),
        (0x1ac5b52f, Sc { size: 8, rd: 10, rs1: 11, rs2: 12 }),
        (0x08c5a52f, Amo { op: AmoOp::Swap, size: 4, rd: 10, rs1: 11, rs2: 12 }),
        (0x00c5b52f, Amo { op: AmoOp::Add, size: 8, rd: 10, rs1: 11, rs2: 12 }),
        (0x20c5a52f, Amo { op: AmoOp::Xor, size: 4, rd: 10, rs1: 11, rs2: 12 }),
        (0x60c5b52f, Amo { op: AmoOp::And, size: 8, rd: 10, rs1: 11, rs2: 12 }),
        (0x46c5a52f, Amo { op: AmoOp::Or, size: 4, rd: 10, rs1: 11, rs2: 12 }),
        (0x80c5a52f, Amo { op: AmoOp::Min, size: 4, rd: 10, rs1: 11, rs2: 12 }),
        (0xa0c5b52f, Amo { op: AmoOp::Max, size: 8, rd: 10, rs1: 11, rs2: 12 }),
        (0xc0c5a52f, Amo { op: AmoOp::Minu, size: 4, rd: 10, rs1: 11, rs2: 12 }),
        (0xe0c5b52f, Amo { op: AmoOp::Maxu, size: 8, rd: 10, rs1: 11, rs2: 12 }),
        (0xc0002573, ReadCounter { rd: 10 }), // rdcycle a0
        (0xc0102573, ReadCounter { rd: 10 }), // rdtime a0
        (0xc0203573, ReadCounter { rd: 10 }), // csrrc a0, instret, zero
        (0xc0006573, ReadCounter { rd: 10 }), // csrrsi a0, cycle, 0
        (0xc0207573, ReadCounter { rd: 10 }), // csrrci a0, instret, 0
        (0x0330000f, Fence),                  // fence rw, rw
        (0x8330000f, Fence),                  // fence.tso
        (0x0000100f, Fence),                  // fence.i
        (0x00000073, Ecall),
        (0x00100073, Ebreak),
    ];
    for &(word, inst) in cases {
        assert_eq!(decode32(word), inst, "{word:#010x}");
        assert_eq!(decode(word), (inst, 4), "{word:#010x}");
    }
}

#[test]
fn unsupported_32_bit_instructions_are_illegal() {
    let cases: &[(u32, &str)] = &[
        (0xc0001073, "unimp (csrrw x0, cycle, x0)"),
        (0xc005a573, "csrrs a0, cycle, a1 (a write)"),
        (0xc0001573, "csrrw a0, cycle, zero"),
        (0xc000d573, "csrrwi a0, cycle, 1"),
        (0xc000e573, "csrrsi a0, cycle, 1 (a write)"),
        (0xc0302573, "csrr a0, hpmcounter3"),
        (0xc8002573, "csrr a0, cycleh (RV32 only)"),
        (0x30002573, "csrr a0, mstatus"),
        (0x00302573, "csrr a0, fcsr"),
        (0x30200073, "mret"),
        (0x10500073, "wfi"),
        (0x12000073, "sfence.vma"),
        (0x00200073, "uret / reserved system"),
        (0x00c5f553, "fadd.s fa0, fa1, fa2 (rm = dyn)"),
        (0x00813507, "fld fa0, 8(sp)"),
        (0x022180d7, "vadd.vv v1, v2, v3"),
        (0x0000001f, "48-bit format"),
        (0x0000003f, "64-bit format"),
        (0x0000007f, "80-bit+ format"),
        (0x0000200f, "misc-mem funct3 2 (cbo)"),
        (0x04059513, "slli with funct6 1"),
        (0x40059513, "slli with funct6 0x10"),
        (0x0405d513, "srli with funct6 1"),
        (0x4405d513, "srai with funct6 0x11"),
        (0x0205951b, "slliw with shamt bit 5 set"),
        (0x0205d51b, "srliw with shamt bit 5 set"),
        (0x4205d51b, "sraiw with shamt bit 5 set"),
        (0x40c5c533, "funct7 0x20 on xor"),
        (0x02c5953b, "mulw's funct7 on sllw (funct3 1)"),
        (0x40c5f53b, "funct7 0x20 on op-32 funct3 7"),
        (0x0000f503, "load funct3 7"),
        (0x00a5c023, "store funct3 4"),
        (0x00b52063, "branch funct3 2"),
        (0x00b53063, "branch funct3 3"),
        (0x00051067, "jalr funct3 1"),
        (0x10c5a52f, "lr.w with rs2 != 0"),
        (0x08c5852f, "amoswap with funct3 0"),
        (0x28c5a52f, "amo funct5 0b00101"),
        (0x00000000, "all zero"),
        (0xffffffff, "all ones"),
    ];
    for &(word, asm) in cases {
        assert_eq!(decode32(word), Inst::Illegal, "{asm}: {word:#010x}");
        if word & 3 == 3 {
            assert_eq!(decode(word), (Inst::Illegal, 4), "{asm}");
        }
    }
}
