//! The A extension: LR/SC reservations and the AMOs.

use super::*;

const LR: u32 = 0b00010;
const SC: u32 = 0b00011;

fn lr(size: u8) -> u32 {
    amo(LR, size, A0, A1, ZERO)
}

/// `sc a2, a3, (a1)`.
fn sc(size: u8) -> u32 {
    amo(SC, size, A2, A1, A3)
}

#[test]
fn lr_sc_succeeds_with_a_matching_reservation() {
    for size in [4u8, 8] {
        let mut m = Machine::new(&[]);
        m.bus.poke(DATA + 8, 8, 0x1234_5678_8000_0010);
        m.exec(lr(size), &[(A1, DATA + 8)]);
        let loaded = if size == 4 {
            0xffff_ffff_8000_0010
        } else {
            0x1234_5678_8000_0010
        };
        assert_eq!(m.x(A0), loaded, "lr sign-extends a word");
        m.exec(sc(size), &[(A3, 0x1122_3344_5566_7788)]);
        assert_eq!(m.x(A2), 0, "sc succeeded");
        let want = if size == 4 {
            0x1234_5678_5566_7788
        } else {
            0x1122_3344_5566_7788
        };
        assert_eq!(m.bus.peek(DATA + 8, 8), want, "size {size}");
    }
}

#[test]
fn sc_without_a_reservation_fails_and_stores_nothing() {
    let mut m = Machine::new(&[]);
    m.exec(sc(8), &[(A1, DATA), (A2, 77), (A3, 5)]);
    assert_eq!(m.x(A2), 1);
    assert_eq!(m.bus.peek(DATA, 8), 0);
    assert_eq!(m.bus.data_calls, 0, "no reservation: the bus is not asked");
}

#[test]
fn any_sc_ends_the_reservation() {
    let mut m = Machine::new(&[]);
    m.exec(lr(8), &[(A1, DATA)]);
    m.exec(sc(8), &[(A3, 5)]);
    assert_eq!((m.x(A2), m.bus.peek(DATA, 8)), (0, 5));
    m.exec(sc(8), &[(A3, 6)]);
    assert_eq!(
        (m.x(A2), m.bus.peek(DATA, 8)),
        (1, 5),
        "second sc after one lr"
    );

    // A failing sc (other address) ends it too.
    m.exec(lr(8), &[(A1, DATA)]);
    m.exec(sc(8), &[(A1, DATA + 8), (A3, 7)]);
    assert_eq!((m.x(A2), m.bus.peek(DATA + 8, 8)), (1, 0), "other address");
    m.exec(sc(8), &[(A1, DATA), (A3, 7)]);
    assert_eq!((m.x(A2), m.bus.peek(DATA, 8)), (1, 5), "after a failed sc");
}

#[test]
fn sc_needs_the_same_address_and_size() {
    let mut m = Machine::new(&[]);
    m.exec(lr(8), &[(A1, DATA)]);
    m.exec(sc(4), &[(A3, 9)]);
    assert_eq!((m.x(A2), m.bus.peek(DATA, 8)), (1, 0), "lr.d then sc.w");
    m.exec(lr(4), &[(A1, DATA + 4)]);
    m.exec(sc(4), &[(A1, DATA), (A3, 9)]);
    assert_eq!((m.x(A2), m.bus.peek(DATA, 8)), (1, 0), "other word");
}

#[test]
fn sc_fails_when_memory_changed_since_lr() {
    let mut m = Machine::new(&[]);
    m.bus.poke(DATA, 4, 1);
    m.exec(lr(4), &[(A1, DATA)]);
    // Another agent writes in between.
    m.bus.poke(DATA, 4, 2);
    m.exec(sc(4), &[(A3, 3)]);
    assert_eq!((m.x(A2), m.bus.peek(DATA, 4)), (1, 2));
}

#[test]
fn sc_result_register_may_be_the_source() {
    // sc.d a3, a3, (a1): the stored value is read before rd is written.
    let mut m = Machine::new(&[]);
    m.exec(lr(8), &[(A1, DATA)]);
    m.exec(amo(SC, 8, A3, A1, A3), &[(A3, 0x99)]);
    assert_eq!((m.x(A3), m.bus.peek(DATA, 8)), (0, 0x99));
}

#[test]
fn amos_return_the_old_value_and_store_the_result() {
    let neg = |v: i64| v as u64;
    #[rustfmt::skip]
    let cases: &[(&str, u32, u8, u64, u64, u64)] = &[
        // (name, funct5, size, memory before, operand, memory after)
        ("amoswap.d", 0b00001, 8, 5, neg(-9), neg(-9)),
        ("amoadd.d", 0b00000, 8, u64::MAX, 2, 1),
        ("amoxor.d", 0b00100, 8, 0xff00, 0x0ff0, 0xf0f0),
        ("amoand.d", 0b01100, 8, 0xff00, 0x0ff0, 0x0f00),
        ("amoor.d", 0b01000, 8, 0xff00, 0x0ff0, 0xfff0),
        ("amomin.d signed", 0b10000, 8, neg(-5), 3, neg(-5)),
        ("amomax.d signed", 0b10100, 8, neg(-5), 3, 3),
        ("amominu.d unsigned", 0b11000, 8, neg(-5), 3, 3),
        ("amomaxu.d unsigned", 0b11100, 8, neg(-5), 3, neg(-5)),
        ("amoswap.w", 0b00001, 4, 5, 0x8000_0000, 0x8000_0000),
        ("amoadd.w wraps at 32 bits", 0b00000, 4, 0x7fff_ffff, 1, 0x8000_0000),
        ("amoadd.w carries nothing out", 0b00000, 4, 0xffff_ffff, 1, 0),
        ("amoxor.w", 0b00100, 4, 0xff00, 0x0ff0, 0xf0f0),
        ("amoand.w", 0b01100, 4, 0xffff_ff00, 0x0ff0, 0x0f00),
        ("amoor.w", 0b01000, 4, 0xff00, 0x0ff0, 0xfff0),
        ("amomin.w signed", 0b10000, 4, 0xffff_fffb, 3, 0xffff_fffb),
        ("amomax.w signed", 0b10100, 4, 0xffff_fffb, 3, 3),
        ("amominu.w unsigned", 0b11000, 4, 0xffff_fffb, 3, 3),
        ("amomaxu.w unsigned", 0b11100, 4, 0xffff_fffb, 3, 0xffff_fffb),
        ("amomin.w sees 32 bits of rs2", 0b10000, 4, 5, 0x0000_0001_ffff_ffff, 0xffff_ffff),
        ("amomaxu.w sees 32 bits of rs2", 0b11100, 4, 5, 0xffff_ffff_0000_0001, 5),
    ];
    for &(what, funct5, size, before, operand, after) in cases {
        let mut m = Machine::new(&[]);
        m.bus.poke(DATA + 8, 8, 0xaaaa_aaaa_aaaa_aaaa);
        m.bus.poke(DATA + 8, size, before);
        m.exec(
            amo(funct5, size, A0, A1, A2),
            &[(A1, DATA + 8), (A2, operand)],
        );
        let old = if size == 4 {
            before as u32 as i32 as i64 as u64
        } else {
            before
        };
        assert_eq!(m.x(A0), old, "{what}: rd");
        assert_eq!(m.bus.peek(DATA + 8, size), after, "{what}: memory");
        if size == 4 {
            assert_eq!(m.bus.peek(DATA + 12, 4), 0xaaaa_aaaa, "{what}: next word");
        }
    }
}

#[test]
fn amo_with_aq_rl_and_rd_equal_to_rs2() {
    // amoadd.d.aqrl a2, a2, (a1): the operand is read before rd is written.
    let mut m = Machine::new(&[]);
    m.bus.poke(DATA, 8, 40);
    m.exec(amo(0, 8, A2, A1, A2) | 3 << 25, &[(A1, DATA), (A2, 2)]);
    assert_eq!((m.x(A2), m.bus.peek(DATA, 8)), (40, 42));
}

#[test]
fn misaligned_atomics_fault_without_the_bus() {
    for (word, size, access) in [
        (lr(4), 4, Access::Load),
        (lr(8), 8, Access::Load),
        (sc(4), 4, Access::Atomic),
        (sc(8), 8, Access::Atomic),
        (amo(0, 4, A0, A1, A2), 4, Access::Atomic),
        (amo(0, 8, A0, A1, A2), 8, Access::Atomic),
    ] {
        let mut m = Machine::new(&[]);
        let addr = DATA + u64::from(size) / 2;
        let stop = m.exec_stop(word, &[(A1, addr), (A0, 11), (A2, 12)]);
        let fault = MemFault {
            addr,
            size,
            access,
            reason: FaultReason::Misaligned,
        };
        assert_eq!(stop, (Stop::Fault { pc: TEXT, fault }, 0), "{word:#x}");
        assert_eq!((m.x(A0), m.x(A2), m.hart.pc), (11, 12, TEXT));
        assert_eq!(m.bus.data_calls, 0);
    }
}

#[test]
fn atomics_on_read_only_memory_fault() {
    let mut m = Machine::new(&[]);
    let stop = m.exec_stop(amo(0, 8, A0, A1, A2), &[(A1, TEXT + 8), (A0, 11)]);
    let fault = MemFault {
        addr: TEXT + 8,
        size: 8,
        access: Access::Atomic,
        reason: FaultReason::ReadOnly,
    };
    assert_eq!(stop, (Stop::Fault { pc: TEXT, fault }, 0));
    assert_eq!(m.x(A0), 11);
    // lr of code is a plain read, and the sc that follows faults at the bus.
    m.exec(lr(8), &[(A1, TEXT + 8)]);
    assert_eq!(
        m.exec_stop(sc(8), &[(A2, 13)]),
        (Stop::Fault { pc: TEXT, fault }, 0)
    );
    assert_eq!(m.x(A2), 13);
}
