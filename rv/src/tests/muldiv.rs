//! The M extension: products against 128-bit references, and the division corner cases.

use super::*;

const VALUES: [u64; 12] = [
    0,
    1,
    2,
    3,
    u64::MAX,      // -1
    u64::MAX - 6,  // -7
    1 << 63,       // i64::MIN
    (1 << 63) - 1, // i64::MAX
    0x1234_5678_9abc_def0,
    0xfedc_ba98_7654_3210,
    0x8000_0000, // 32-bit MIN, positive in 64
    0xffff_ffff_7fff_ffff,
];

/// `op a0, a1, a2` of the M extension (funct7 1).
fn m_op(m: &mut Machine, funct3: u32, opcode: u32, a: u64, b: u64) -> u64 {
    m.exec(enc_r(1, A2, A1, funct3, A0, opcode), &[(A1, a), (A2, b)])
        .x(A0)
}

fn sext32(v: u32) -> u64 {
    v as i32 as i64 as u64
}

#[test]
fn products_match_128_bit_references() {
    let mut m = Machine::new(&[]);
    for a in VALUES {
        for b in VALUES {
            let (sa, sb) = (i128::from(a as i64), i128::from(b as i64));
            let (ua, ub) = (u128::from(a), u128::from(b));
            assert_eq!(
                m_op(&mut m, 0, OP, a, b),
                (ua * ub) as u64,
                "mul {a:#x} {b:#x}"
            );
            assert_eq!(
                m_op(&mut m, 1, OP, a, b),
                ((sa * sb) >> 64) as u64,
                "mulh {a:#x} {b:#x}"
            );
            assert_eq!(
                m_op(&mut m, 2, OP, a, b),
                ((sa * ub as i128) >> 64) as u64,
                "mulhsu {a:#x} {b:#x}"
            );
            assert_eq!(
                m_op(&mut m, 3, OP, a, b),
                ((ua * ub) >> 64) as u64,
                "mulhu {a:#x} {b:#x}"
            );
            let w = (a as u32).wrapping_mul(b as u32);
            assert_eq!(
                m_op(&mut m, 0, OP_32, a, b),
                sext32(w),
                "mulw {a:#x} {b:#x}"
            );
        }
    }
}

#[test]
fn quotients_and_remainders_match_references() {
    let mut m = Machine::new(&[]);
    for a in VALUES {
        for b in VALUES {
            // The spec's results for a zero divisor and for MIN / -1 are checked separately.
            if b != 0 && !(a == 1 << 63 && b == u64::MAX) {
                let (sa, sb) = (a as i64, b as i64);
                assert_eq!(
                    m_op(&mut m, 4, OP, a, b),
                    (sa / sb) as u64,
                    "div {a:#x} {b:#x}"
                );
                assert_eq!(m_op(&mut m, 5, OP, a, b), a / b, "divu {a:#x} {b:#x}");
                assert_eq!(
                    m_op(&mut m, 6, OP, a, b),
                    (sa % sb) as u64,
                    "rem {a:#x} {b:#x}"
                );
                assert_eq!(m_op(&mut m, 7, OP, a, b), a % b, "remu {a:#x} {b:#x}");
            }
            let (a32, b32) = (a as u32, b as u32);
            if b32 != 0 && !(a32 == 0x8000_0000 && b32 == u32::MAX) {
                let (sa, sb) = (a32 as i32, b32 as i32);
                let what = format!("{a:#x} {b:#x}");
                assert_eq!(
                    m_op(&mut m, 4, OP_32, a, b),
                    sext32((sa / sb) as u32),
                    "divw {what}"
                );
                assert_eq!(
                    m_op(&mut m, 5, OP_32, a, b),
                    sext32(a32 / b32),
                    "divuw {what}"
                );
                assert_eq!(
                    m_op(&mut m, 6, OP_32, a, b),
                    sext32((sa % sb) as u32),
                    "remw {what}"
                );
                assert_eq!(
                    m_op(&mut m, 7, OP_32, a, b),
                    sext32(a32 % b32),
                    "remuw {what}"
                );
            }
        }
    }
}

#[test]
fn division_by_zero() {
    let mut m = Machine::new(&[]);
    for a in VALUES {
        assert_eq!(m_op(&mut m, 4, OP, a, 0), u64::MAX, "div {a:#x}");
        assert_eq!(m_op(&mut m, 5, OP, a, 0), u64::MAX, "divu {a:#x}");
        assert_eq!(m_op(&mut m, 6, OP, a, 0), a, "rem {a:#x}");
        assert_eq!(m_op(&mut m, 7, OP, a, 0), a, "remu {a:#x}");
        // The W forms see 32-bit operands: a divisor with only upper bits set is zero too.
        for zero in [0, 0xffff_ffff_0000_0000] {
            assert_eq!(m_op(&mut m, 4, OP_32, a, zero), u64::MAX, "divw {a:#x}");
            assert_eq!(m_op(&mut m, 5, OP_32, a, zero), u64::MAX, "divuw {a:#x}");
            assert_eq!(
                m_op(&mut m, 6, OP_32, a, zero),
                sext32(a as u32),
                "remw {a:#x}"
            );
            assert_eq!(
                m_op(&mut m, 7, OP_32, a, zero),
                sext32(a as u32),
                "remuw {a:#x}"
            );
        }
    }
}

#[test]
fn signed_division_overflow() {
    let mut m = Machine::new(&[]);
    let (min, minus_one) = (1u64 << 63, u64::MAX);
    assert_eq!(m_op(&mut m, 4, OP, min, minus_one), min, "div MIN / -1");
    assert_eq!(m_op(&mut m, 6, OP, min, minus_one), 0, "rem MIN % -1");
    // Unsigned, the same bits divide normally.
    assert_eq!(m_op(&mut m, 5, OP, min, minus_one), 0, "divu");
    assert_eq!(m_op(&mut m, 7, OP, min, minus_one), min, "remu");
    let w_min = 0xffff_ffff_8000_0000;
    assert_eq!(
        m_op(&mut m, 4, OP_32, 0x8000_0000, minus_one),
        w_min,
        "divw"
    );
    assert_eq!(m_op(&mut m, 6, OP_32, 0x8000_0000, minus_one), 0, "remw");
    assert_eq!(m_op(&mut m, 5, OP_32, 0x8000_0000, minus_one), 0, "divuw");
    assert_eq!(
        m_op(&mut m, 7, OP_32, 0x8000_0000, minus_one),
        w_min,
        "remuw"
    );
}

#[test]
fn signed_remainder_takes_the_dividends_sign() {
    let mut m = Machine::new(&[]);
    let neg = |v: i64| v as u64;
    assert_eq!(m_op(&mut m, 6, OP, neg(-7), 2), neg(-1));
    assert_eq!(m_op(&mut m, 6, OP, 7, neg(-2)), 1);
    assert_eq!(
        m_op(&mut m, 4, OP, neg(-7), 2),
        neg(-3),
        "rounds toward zero"
    );
    assert_eq!(m_op(&mut m, 6, OP_32, neg(-7), 2), neg(-1));
    assert_eq!(m_op(&mut m, 4, OP_32, neg(-7), 2), neg(-3));
}
