//! RV64I computation: register and immediate operations, W forms, shifts, LUI/AUIPC, loads and
//! stores, x0, fences.

use super::*;

const MIN: u64 = 1 << 63;
const MAX: u64 = u64::MAX;
const W_MIN: u64 = 0xffff_ffff_8000_0000;

/// `op a0, a1, a2` with a1 = a, a2 = b.
fn rr(m: &mut Machine, funct7: u32, funct3: u32, opcode: u32, a: u64, b: u64) -> u64 {
    let word = enc_r(funct7, A2, A1, funct3, A0, opcode);
    m.exec(word, &[(A1, a), (A2, b)]).x(A0)
}

/// `op a0, a1, imm` with a1 = a (`imm` holds funct6/funct7 bits for shifts).
fn ri(m: &mut Machine, funct3: u32, opcode: u32, a: u64, imm: i32) -> u64 {
    m.exec(enc_i(imm, A1, funct3, A0, opcode), &[(A1, a)]).x(A0)
}

#[test]
fn register_register_operations() {
    let mut m = Machine::new(&[]);
    let neg = |v: i64| v as u64;
    #[rustfmt::skip]
    let cases: &[(&str, u32, u32, u64, u64, u64)] = &[
        ("add wraps", 0, 0, MAX, 1, 0),
        ("add overflows signed", 0, 0, MIN - 1, 1, MIN),
        ("sub wraps", 0x20, 0, 0, 1, MAX),
        ("sub", 0x20, 0, 100, 58, 42),
        ("sll by 63", 0, 1, 1, 63, MIN),
        ("sll uses 6 bits of rs2", 0, 1, 1, 64 + 3, 8),
        ("slt signed", 0, 2, neg(-1), 1, 1),
        ("slt signed, false", 0, 2, 1, neg(-1), 0),
        ("slt equal", 0, 2, 5, 5, 0),
        ("sltu unsigned", 0, 3, neg(-1), 1, 0),
        ("sltu unsigned, true", 0, 3, 1, neg(-1), 1),
        ("xor", 0, 4, 0xff00_ff00, 0x0ff0_0ff0, 0xf0f0_f0f0),
        ("srl by 63", 0, 5, MIN, 63, 1),
        ("srl uses 6 bits of rs2", 0, 5, MAX, 64, MAX),
        ("sra by 63", 0x20, 5, MIN, 63, MAX),
        ("sra uses 6 bits of rs2", 0x20, 5, MIN, 65, 0xc000_0000_0000_0000),
        ("sra of a positive value", 0x20, 5, 0x7000_0000_0000_0000, 60, 7),
        ("or", 0, 6, 0xf0, 0x0f, 0xff),
        ("and", 0, 7, 0xf0f0, 0xff00, 0xf000),
    ];
    for &(what, funct7, funct3, a, b, want) in cases {
        assert_eq!(rr(&mut m, funct7, funct3, OP, a, b), want, "{what}");
    }
}

#[test]
fn register_immediate_operations() {
    let mut m = Machine::new(&[]);
    #[rustfmt::skip]
    let cases: &[(&str, u32, u64, i32, u64)] = &[
        ("addi negative", 0, 5, -2048, (5i64 - 2048) as u64),
        ("addi wraps", 0, MAX, 1, 0),
        ("slti", 2, (-3i64) as u64, -2, 1),
        ("slti, false", 2, 0, -1, 0),
        ("sltiu sign-extends, then compares unsigned", 3, 5, -1, 1),
        ("sltiu of MAX against -1", 3, MAX, -1, 0),
        ("sltiu 1 is seqz", 3, 0, 1, 1),
        ("xori -1 is not", 4, 0x1234, -1, !0x1234),
        ("ori sign-extends", 6, 0, -2048, 0xffff_ffff_ffff_f800),
        ("andi sign-extends", 7, MAX, -16, 0xffff_ffff_ffff_fff0),
        ("andi positive", 7, MAX, 0x7ff, 0x7ff),
        ("slli 63", 1, 1, 63, MIN),
        ("slli 0", 1, 0x1234, 0, 0x1234),
        ("srli 63", 5, MIN, 63, 1),
        ("srli 1", 5, MAX, 1, MAX >> 1),
        ("srai 63", 5, MIN, 0x400 | 63, MAX),
        ("srai 1 keeps the sign", 5, MIN, 0x400 | 1, 0xc000_0000_0000_0000),
    ];
    for &(what, funct3, a, imm, want) in cases {
        assert_eq!(ri(&mut m, funct3, OP_IMM, a, imm), want, "{what}");
    }
}

#[test]
fn word_operations_sign_extend() {
    let mut m = Machine::new(&[]);
    #[rustfmt::skip]
    let cases: &[(&str, u32, u32, u64, u64, u64)] = &[
        ("addw overflows into the sign", 0, 0, 0x7fff_ffff, 1, W_MIN),
        ("addw ignores the upper halves", 0, 0, 0xffff_ffff_0000_0001, 0x1_0000_0000, 1),
        ("addw positive", 0, 0, 0xabcd_0000_0000_0002, 3, 5),
        ("subw", 0x20, 0, 0, 1, MAX),
        ("subw of MIN", 0x20, 0, 0x8000_0000, 0, W_MIN),
        ("sllw by 31", 0, 1, 1, 31, W_MIN),
        ("sllw uses 5 bits of rs2", 0, 1, 1, 33, 2),
        ("sllw drops the upper half", 0, 1, 0x1_0000_0001, 1, 2),
        ("srlw by 31", 0, 5, 0xffff_ffff_8000_0000, 31, 1),
        ("srlw by 0 sign-extends", 0, 5, 0x8000_0000, 0, W_MIN),
        ("srlw shifts in zeros", 0, 5, MAX, 4, 0x0fff_ffff),
        ("sraw by 31", 0x20, 5, 0x8000_0000, 31, MAX),
        ("sraw uses 5 bits of rs2", 0x20, 5, 0x8000_0000, 32 + 4, 0xffff_ffff_f800_0000),
        ("sraw ignores the upper half", 0x20, 5, 0xffff_ffff_7fff_ffff, 4, 0x07ff_ffff),
    ];
    for &(what, funct7, funct3, a, b, want) in cases {
        assert_eq!(rr(&mut m, funct7, funct3, OP_32, a, b), want, "{what}");
    }
    #[rustfmt::skip]
    let cases: &[(&str, u32, u64, i32, u64)] = &[
        ("addiw overflows into the sign", 0, 0x7fff_ffff, 1, W_MIN),
        ("addiw 0 is sext.w", 0, 0x1234_5678_8000_0000, 0, W_MIN),
        ("addiw negative", 0, 0, -1, MAX),
        ("slliw 31", 1, 1, 31, W_MIN),
        ("srliw 31", 5, 0x8000_0000, 31, 1),
        ("srliw 0 sign-extends", 5, 0x8000_0000, 0, W_MIN),
        ("sraiw 31", 5, 0x8000_0000, 0x400 | 31, MAX),
        ("sraiw 1", 5, 0x8000_0000, 0x400 | 1, 0xffff_ffff_c000_0000),
    ];
    for &(what, funct3, a, imm, want) in cases {
        assert_eq!(ri(&mut m, funct3, OP_IMM_32, a, imm), want, "{what}");
    }
}

#[test]
fn lui_and_auipc() {
    let mut m = Machine::new(&[]);
    assert_eq!(m.exec(lui(A0, 0x80000), &[]).x(A0), W_MIN);
    assert_eq!(m.exec(lui(A0, 0x7ffff), &[]).x(A0), 0x7fff_f000);
    assert_eq!(m.exec(lui(A0, 0xfffff), &[]).x(A0), 0xffff_ffff_ffff_f000);
    let auipc = |imm20| enc_u(imm20, A0, AUIPC);
    assert_eq!(m.exec(auipc(0), &[]).x(A0), TEXT);
    assert_eq!(m.exec(auipc(1), &[]).x(A0), TEXT + 0x1000);
    assert_eq!(m.exec(auipc(0xfffff), &[]).x(A0), TEXT - 0x1000);
    assert_eq!(
        m.exec(auipc(0x80000), &[]).x(A0),
        TEXT.wrapping_sub(1 << 31)
    );
}

#[test]
fn loads_extend_by_kind() {
    let mut m = Machine::new(&[]);
    m.bus.poke(DATA, 8, 0x8786_8584_8382_8180);
    m.bus.poke(DATA + 8, 8, 0x0706_0504_0302_7f01);
    #[rustfmt::skip]
    let cases: &[(&str, u32, u64, u64)] = &[
        ("lb", 0, DATA, 0xffff_ffff_ffff_ff80),
        ("lh", 1, DATA, 0xffff_ffff_ffff_8180),
        ("lw", 2, DATA, 0xffff_ffff_8382_8180),
        ("ld", 3, DATA, 0x8786_8584_8382_8180),
        ("lbu", 4, DATA, 0x80),
        ("lhu", 5, DATA, 0x8180),
        ("lwu", 6, DATA, 0x8382_8180),
        ("lb positive", 0, DATA + 9, 0x7f),
        ("lh positive", 1, DATA + 8, 0x7f01),
        ("lw positive", 2, DATA + 8, 0x0302_7f01),
        ("lbu at an odd address", 4, DATA + 7, 0x87),
        ("lhu at the last halfword", 5, DATA + 6, 0x8786),
    ];
    for &(what, funct3, addr, want) in cases {
        // Through a negative offset, so the address really is rs1 + imm.
        let word = enc_i(-16, A1, funct3, A0, LOAD);
        assert_eq!(m.exec(word, &[(A1, addr + 16)]).x(A0), want, "{what}");
    }
}

#[test]
fn stores_write_only_their_bytes() {
    let value = 0x1122_3344_5566_7788;
    for (funct3, size, want) in [
        (0, 1, 0xaaaa_aaaa_aaaa_aa88u64),
        (1, 2, 0xaaaa_aaaa_aaaa_7788),
        (2, 4, 0xaaaa_aaaa_5566_7788),
        (3, 8, 0x1122_3344_5566_7788),
    ] {
        let mut m = Machine::new(&[]);
        m.bus.poke(DATA + 8, 8, 0xaaaa_aaaa_aaaa_aaaa);
        m.bus.poke(DATA + 16, 8, 0xaaaa_aaaa_aaaa_aaaa);
        m.exec(enc_s(8, A0, A1, funct3, STORE), &[(A0, value), (A1, DATA)]);
        assert_eq!(m.bus.peek(DATA + 8, 8), want, "size {size}");
        assert_eq!(
            m.bus.peek(DATA + 16, 8),
            0xaaaa_aaaa_aaaa_aaaa,
            "size {size}"
        );
        assert_eq!(m.bus.peek(DATA, 8), 0, "size {size}");
    }
}

#[test]
fn x0_stays_zero() {
    let mut m = Machine::new(&[]);
    m.bus.poke(DATA, 8, 0x55);
    assert_eq!(m.exec(addi(ZERO, ZERO, 5), &[]).x(ZERO), 0);
    assert_eq!(m.exec(lui(ZERO, 0x12345), &[]).x(ZERO), 0);
    assert_eq!(m.exec(add(ZERO, A1, A1), &[(A1, 3)]).x(ZERO), 0);
    assert_eq!(m.exec(jal(ZERO, 8), &[]).x(ZERO), 0);
    assert_eq!(m.exec(ld(ZERO, A1, 0), &[(A1, DATA)]).x(ZERO), 0);
    // The loaded value went nowhere, but the load happened.
    assert_eq!(m.bus.data_calls, 1);
    // x0 reads as zero even when the caller wrote the field.
    m.hart.x[ZERO] = 7;
    assert_eq!(m.exec(add(A0, ZERO, ZERO), &[(A0, 9)]).x(A0), 0);
    assert_eq!(m.x(ZERO), 0);
}

#[test]
fn fences_do_nothing() {
    for word in [
        0x0ff0_000f,
        0x0330_000f,
        0x8330_000f,
        0x0000_100f,
        0x0100_000f,
    ] {
        let mut m = Machine::new(&[]);
        let before = m.hart.x;
        m.exec(word, &[]);
        assert_eq!(m.hart.x, before, "{word:#x}");
        assert_eq!(m.hart.pc, TEXT + 4, "{word:#x}");
        assert_eq!(m.bus.data_calls, 0);
    }
}
