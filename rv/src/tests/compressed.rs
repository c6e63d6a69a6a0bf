//! RV64C: every compressed instruction against its 32-bit expansion, hints, reserved encodings.

use super::super::{Inst, decode, decode16, decode32};
use super::*;

/// (compressed, its 32-bit expansion, assembler text), both words from the assembler. Every
/// RV64C instruction, with the extreme immediates and registers of each.
#[rustfmt::skip]
const PAIRS: &[(u16, u32, &str)] = &[
    (0x0040, 0x00410413, "c.addi4spn s0, sp, 4 = addi s0, sp, 4"),
    (0x1ffc, 0x3fc10793, "c.addi4spn a5, sp, 1020 = addi a5, sp, 1020"),
    (0x4188, 0x0005a503, "c.lw a0, 0(a1) = lw a0, 0(a1)"),
    (0x5fe4, 0x07c7a483, "c.lw s1, 124(a5) = lw s1, 124(a5)"),
    (0x7de8, 0x0f85b503, "c.ld a0, 248(a1) = ld a0, 248(a1)"),
    (0x641c, 0x00843783, "c.ld a5, 8(s0) = ld a5, 8(s0)"),
    (0xdef0, 0x06c6ae23, "c.sw a2, 124(a3) = sw a2, 124(a3)"),
    (0xc0c0, 0x0084a223, "c.sw s0, 4(s1) = sw s0, 4(s1)"),
    (0xfff8, 0x0ee7bc23, "c.sd a4, 248(a5) = sd a4, 248(a5)"),
    (0xe104, 0x00953023, "c.sd s1, 0(a0) = sd s1, 0(a0)"),
    (0x0001, 0x00000013, "c.nop = addi zero, zero, 0"),
    (0x1501, 0xfe050513, "c.addi a0, -32 = addi a0, a0, -32"),
    (0x0ffd, 0x01ff8f93, "c.addi t6, 31 = addi t6, t6, 31"),
    (0x357d, 0xfff5051b, "c.addiw a0, -1 = addiw a0, a0, -1"),
    (0x2d81, 0x000d8d9b, "c.addiw s11, 0 = addiw s11, s11, 0"),
    (0x5501, 0xfe000513, "c.li a0, -32 = addi a0, zero, -32"),
    (0x40fd, 0x01f00093, "c.li ra, 31 = addi ra, zero, 31"),
    (0x7101, 0xe0010113, "c.addi16sp sp, -512 = addi sp, sp, -512"),
    (0x617d, 0x1f010113, "c.addi16sp sp, 496 = addi sp, sp, 496"),
    (0x6141, 0x01010113, "c.addi16sp sp, 16 = addi sp, sp, 16"),
    (0x7501, 0xfffe0537, "c.lui a0, 0xfffe0 = lui a0, 0xfffe0"),
    (0x6ffd, 0x0001ffb7, "c.lui t6, 31 = lui t6, 31"),
    (0x6085, 0x000010b7, "c.lui ra, 1 = lui ra, 1"),
    (0x917d, 0x03f55513, "c.srli a0, 63 = srli a0, a0, 63"),
    (0x8005, 0x00145413, "c.srli s0, 1 = srli s0, s0, 1"),
    (0x97fd, 0x43f7d793, "c.srai a5, 63 = srai a5, a5, 63"),
    (0x9481, 0x4204d493, "c.srai s1, 32 = srai s1, s1, 32"),
    (0x9901, 0xfe057513, "c.andi a0, -32 = andi a0, a0, -32"),
    (0x89fd, 0x01f5f593, "c.andi a1, 31 = andi a1, a1, 31"),
    (0x8d0d, 0x40b50533, "c.sub a0, a1 = sub a0, a0, a1"),
    (0x8c3d, 0x00f44433, "c.xor s0, a5 = xor s0, s0, a5"),
    (0x8e55, 0x00d66633, "c.or a2, a3 = or a2, a2, a3"),
    (0x8f65, 0x00977733, "c.and a4, s1 = and a4, a4, s1"),
    (0x9d1d, 0x40f5053b, "c.subw a0, a5 = subw a0, a0, a5"),
    (0x9ca1, 0x008484bb, "c.addw s1, s0 = addw s1, s1, s0"),
    (0xb001, 0x801ff06f, "c.j -2048 = jal zero, -2048"),
    (0xaffd, 0x7fe0006f, "c.j 2046 = jal zero, 2046"),
    (0xd101, 0xf00500e3, "c.beqz a0, -256 = beq a0, zero, -256"),
    (0xcc7d, 0x0e040f63, "c.beqz s0, 254 = beq s0, zero, 254"),
    (0xfffd, 0xfe079fe3, "c.bnez a5, -2 = bne a5, zero, -2"),
    (0xecfd, 0x0e049f63, "c.bnez s1, 254 = bne s1, zero, 254"),
    (0x157e, 0x03f51513, "c.slli a0, 63 = slli a0, a0, 63"),
    (0x0f86, 0x001f9f93, "c.slli t6, 1 = slli t6, t6, 1"),
    (0x557e, 0x0fc12503, "c.lwsp a0, 252(sp) = lw a0, 252(sp)"),
    (0x4082, 0x00012083, "c.lwsp ra, 0(sp) = lw ra, 0(sp)"),
    (0x757e, 0x1f813503, "c.ldsp a0, 504(sp) = ld a0, 504(sp)"),
    (0x6fa2, 0x00813f83, "c.ldsp t6, 8(sp) = ld t6, 8(sp)"),
    (0x8082, 0x00008067, "c.jr ra = jalr zero, 0(ra)"),
    (0x8f82, 0x000f8067, "c.jr t6 = jalr zero, 0(t6)"),
    (0x852e, 0x00b00533, "c.mv a0, a1 = add a0, zero, a1"),
    (0x8f86, 0x00100fb3, "c.mv t6, ra = add t6, zero, ra"),
    (0x9002, 0x00100073, "c.ebreak = ebreak"),
    (0x9502, 0x000500e7, "c.jalr a0 = jalr ra, 0(a0)"),
    (0x9082, 0x000080e7, "c.jalr ra = jalr ra, 0(ra)"),
    (0x952e, 0x00b50533, "c.add a0, a1 = add a0, a0, a1"),
    (0x9ffa, 0x01ef8fb3, "c.add t6, t5 = add t6, t6, t5"),
    (0xdfaa, 0x0ea12e23, "c.swsp a0, 252(sp) = sw a0, 252(sp)"),
    (0xc006, 0x00112023, "c.swsp ra, 0(sp) = sw ra, 0(sp)"),
    (0xffaa, 0x1ea13c23, "c.sdsp a0, 504(sp) = sd a0, 504(sp)"),
    (0xe47e, 0x01f13423, "c.sdsp t6, 8(sp) = sd t6, 8(sp)"),
];

/// Hints: legal encodings that change nothing (but the pc).
#[rustfmt::skip]
const HINTS: &[(u16, &str)] = &[
    (0x0005, "c.nop 1"),
    (0x0501, "c.addi a0, 0"),
    (0x4005, "c.li zero, 1"),
    (0x6005, "c.lui zero, 1"),
    (0x0006, "c.slli zero, 1"),
    (0x0502, "c.slli64 a0 (shift amount 0)"),
    (0x8001, "c.srli64 s0"),
    (0x8401, "c.srai64 s0"),
    (0x8006, "c.mv zero, ra"),
    (0x9006, "c.add zero, ra"),
];

/// Reserved encodings, and the floating-point ones (no F/D).
#[rustfmt::skip]
const RESERVED: &[(u16, &str)] = &[
    (0x0000, "all zero (c.unimp)"),
    (0x0004, "c.addi4spn s1, sp, 0"),
    (0x001c, "c.addi4spn a5, sp, 0"),
    (0x8000, "quadrant 0, funct3 100"),
    (0x9ffc, "quadrant 0, funct3 100"),
    (0x2001, "c.addiw zero, 0"),
    (0x307d, "c.addiw zero, -1"),
    (0x6101, "c.addi16sp sp, 0"),
    (0x6501, "c.lui a0, 0"),
    (0x6001, "c.lui zero, 0"),
    (0x4002, "c.lwsp zero, 0(sp)"),
    (0x507e, "c.lwsp zero, 252(sp)"),
    (0x6002, "c.ldsp zero, 0(sp)"),
    (0x8002, "c.jr zero"),
    (0x9c41, "quadrant 1, funct3 100, funct6 100111, funct2 10"),
    (0x9c61, "quadrant 1, funct3 100, funct6 100111, funct2 11"),
    (0x2588, "c.fld fa0, 8(a1)"),
    (0xa588, "c.fsd fa0, 8(a1)"),
    (0x2522, "c.fldsp fa0, 8(sp)"),
    (0xa42a, "c.fsdsp fa0, 8(sp)"),
];

#[test]
fn every_compressed_instruction_decodes_as_its_expansion() {
    for &(c, w, asm) in PAIRS {
        assert_ne!(decode32(w), Inst::Illegal, "{asm}");
        assert_eq!(decode(u32::from(c)), (decode32(w), 2), "{asm}");
    }
    // Every RV64C mnemonic is in the table.
    for name in [
        "addi4spn", "lw", "ld", "sw", "sd", "nop", "addi", "addiw", "li", "addi16sp", "lui",
        "srli", "srai", "andi", "sub", "xor", "or", "and", "subw", "addw", "j", "beqz", "bnez",
        "slli", "lwsp", "ldsp", "jr", "mv", "ebreak", "jalr", "add", "swsp", "sdsp",
    ] {
        let listed = PAIRS.iter().any(|(_, _, asm)| {
            asm.strip_prefix("c.")
                .and_then(|rest| rest.strip_prefix(name))
                .is_some_and(|rest| rest.starts_with(' '))
        });
        assert!(listed, "c.{name}");
    }
}

/// Register states to run each pair from: addresses into data, all zero, and two pseudo-random
/// ones (whose loads and stores mostly fault, which must happen the same way).
fn states() -> Vec<Machine> {
    let mut base = Machine::new(&[]);
    for (i, a) in (DATA..END).enumerate() {
        base.bus
            .poke(a, 1, (i as u64).wrapping_mul(37).wrapping_add(11));
    }
    let mut states = Vec::new();
    let mut m = base.clone();
    for i in 1..32 {
        m.hart.x[i] = DATA + 0x100 + 8 * i as u64;
    }
    states.push(m);
    let mut m = base.clone();
    m.hart.x = [0; 32];
    states.push(m);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..2 {
        let mut m = base.clone();
        for i in 1..32 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            m.hart.x[i] = seed;
        }
        states.push(m);
    }
    states
}

#[test]
fn every_compressed_instruction_executes_as_its_expansion() {
    let (short, long) = (TEXT + 2, TEXT + 4);
    for (s, state) in states().into_iter().enumerate() {
        for &(c, w, asm) in PAIRS {
            let (mut mc, mut mw) = (state.clone(), state.clone());
            mc.bus.poke(TEXT, 2, u64::from(c));
            mw.bus.poke(TEXT, 4, u64::from(w));
            let (stop_c, stop_w) = (mc.run(1), mw.run(1));
            let what = format!("{asm} in state {s}");
            assert_eq!(stop_c, stop_w, "{what}");
            // The link register and the fall-through pc differ by the length.
            for r in 0..32 {
                let (vc, vw) = (mc.x(r), mw.x(r));
                assert!(
                    vc == vw || (vc, vw) == (short, long),
                    "{what}: x{r} {vc:#x} {vw:#x}"
                );
            }
            let (pc_c, pc_w) = (mc.hart.pc, mw.hart.pc);
            assert!(pc_c == pc_w || (pc_c, pc_w) == (short, long), "{what}: pc");
            mc.bus.poke(TEXT, 4, 0);
            mw.bus.poke(TEXT, 4, 0);
            assert_eq!(mc.bus, mw.bus, "{what}: memory");
        }
    }
}

#[test]
fn compressed_link_is_pc_plus_2() {
    let mut m = Machine::new16(&[0x9502]); // c.jalr a0
    m.hart.x[A0] = DATA;
    assert_eq!(m.run(1), (Stop::Budget, 1));
    assert_eq!((m.x(RA), m.hart.pc), (TEXT + 2, DATA));
    let mut m = Machine::new16(&[0x9082]); // c.jalr ra: the target is the old ra
    m.hart.x[RA] = DATA + 6;
    assert_eq!(m.run(1), (Stop::Budget, 1));
    assert_eq!((m.x(RA), m.hart.pc), (TEXT + 2, DATA + 6));
}

#[test]
fn hints_change_nothing_but_the_pc() {
    let state = states().swap_remove(0);
    for &(c, asm) in HINTS {
        assert_ne!(decode16(c), Inst::Illegal, "{asm}");
        let mut m = state.clone();
        m.bus.poke(TEXT, 2, u64::from(c));
        let before = m.hart.x;
        assert_eq!(m.run(1), (Stop::Budget, 1), "{asm}");
        assert_eq!((m.hart.x, m.hart.pc), (before, TEXT + 2), "{asm}");
    }
}

#[test]
fn reserved_compressed_encodings_are_illegal() {
    for &(c, asm) in RESERVED {
        assert_eq!(decode(u32::from(c)), (Inst::Illegal, 2), "{asm}");
        let mut m = Machine::new16(&[c]);
        let raw = u32::from(c);
        assert_eq!(m.run(1), (Stop::Illegal { pc: TEXT, raw }, 0), "{asm}");
    }
}
