//! Control flow and the run loop: branches, jumps, stops (budget, exit pc, ecall, ebreak,
//! illegal instructions, faults) and the counters.

use super::*;

#[test]
fn branches_signed_and_unsigned() {
    let neg = |v: i64| v as u64;
    let (min, max) = (1u64 << 63, (1u64 << 63) - 1);
    // (funct3, a, b, taken)
    #[rustfmt::skip]
    let cases: &[(&str, u32, u64, u64, bool)] = &[
        ("beq", 0, 7, 7, true), ("beq", 0, 7, 8, false),
        ("bne", 1, 7, 8, true), ("bne", 1, 7, 7, false),
        ("blt", 4, neg(-1), 1, true), ("blt", 4, 1, neg(-1), false), ("blt", 4, 3, 3, false),
        ("blt", 4, min, max, true),
        ("bge", 5, 1, neg(-1), true), ("bge", 5, 3, 3, true), ("bge", 5, neg(-1), 1, false),
        ("bge", 5, max, min, true),
        ("bltu", 6, 1, neg(-1), true), ("bltu", 6, neg(-1), 1, false), ("bltu", 6, 3, 3, false),
        ("bltu", 6, max, min, true),
        ("bgeu", 7, neg(-1), 1, true), ("bgeu", 7, 3, 3, true), ("bgeu", 7, 1, neg(-1), false),
        ("bgeu", 7, min, max, true),
    ];
    let mut m = Machine::new(&[]);
    for &(what, funct3, a, b, taken) in cases {
        for offset in [-4096, -2, 2, 4094] {
            m.exec(enc_b(offset, A1, A0, funct3, BRANCH), &[(A0, a), (A1, b)]);
            let want = if taken {
                TEXT.wrapping_add(offset as u64)
            } else {
                TEXT + 4
            };
            assert_eq!(m.hart.pc, want, "{what} {a:#x} {b:#x} by {offset}");
        }
    }
}

#[test]
fn jal_links_and_jumps() {
    let mut m = Machine::new(&[]);
    m.exec(jal(RA, -1048576), &[]);
    assert_eq!((m.x(RA), m.hart.pc), (TEXT + 4, TEXT.wrapping_sub(1 << 20)));
    m.exec(jal(T0, 1048574), &[]);
    assert_eq!((m.x(T0), m.hart.pc), (TEXT + 4, TEXT + 1048574));
}

#[test]
fn jalr_clears_bit_0_and_reads_rs1_before_linking() {
    let mut m = Machine::new(&[]);
    m.exec(jalr(RA, A0, 3), &[(A0, DATA)]);
    assert_eq!(
        (m.x(RA), m.hart.pc),
        (TEXT + 4, DATA + 2),
        "bit 0 of 3 cleared"
    );
    m.exec(jalr(RA, A0, -2048), &[(A0, DATA + 1)]);
    assert_eq!(m.hart.pc, DATA + 1 - 2048 - 1);
    m.exec(jalr(RA, RA, 8), &[(RA, DATA)]);
    assert_eq!((m.x(RA), m.hart.pc), (TEXT + 4, DATA + 8), "rd == rs1");
    m.exec(jalr(ZERO, A0, 0), &[(A0, DATA + 7)]);
    assert_eq!((m.x(ZERO), m.hart.pc), (0, DATA + 6));
}

#[test]
fn budget_stops_a_loop_after_exactly_budget_instructions() {
    let mut m = Machine::new(&[jal(ZERO, 0)]); // j .
    assert_eq!(m.run(1000), (Stop::Budget, 1000));
    assert_eq!(m.hart.pc, TEXT);
    assert_eq!(m.hart.instret(), 1000);
    assert_eq!(m.run(0), (Stop::Budget, 0));
    assert_eq!(m.run(1), (Stop::Budget, 1));
    assert_eq!(m.hart.instret(), 1001);
    // c.j . as well.
    let mut m = Machine::new16(&[0xa001]);
    assert_eq!(m.run(77), (Stop::Budget, 77));
    assert_eq!(m.hart.pc, TEXT);
}

#[test]
fn budget_counts_instructions_not_bytes() {
    // addi, c.addi, addi, c.addi, ...: the budget stops between any two of them.
    let a = split(addi(A0, A0, 1));
    let mut m = Machine::new16(&[a[0], a[1], 0x0505, a[0], a[1], 0x0505]);
    assert_eq!(m.run(3), (Stop::Budget, 3));
    assert_eq!((m.x(A0), m.hart.pc), (3, TEXT + 10));
}

#[test]
fn returning_to_exit_pc_stops_before_fetching_it() {
    let mut m = Machine::new(&[addi(A0, ZERO, 42), RET]);
    assert_eq!(m.run(100), (Stop::Returned, 2));
    assert_eq!((m.x(A0), m.hart.pc), (42, EXIT));
    // exit_pc wins over a spent budget, and is checked before the first instruction.
    assert_eq!(m.run(0), (Stop::Returned, 0));
    let mut m = Machine::new(&[addi(A0, ZERO, 1), addi(A0, A0, 1), jal(ZERO, -8)]);
    assert_eq!(m.hart.run(&mut m.bus, TEXT + 8, 10), (Stop::Returned, 2));
    assert_eq!(m.hart.pc, TEXT + 8);
}

#[test]
fn ecall_stops_at_the_ecall_and_resumes_after_it() {
    let mut m = Machine::new(&[addi(A7, ZERO, 7), ECALL, addi(A0, A0, 1), RET]);
    m.hart.x[A0] = 20;
    assert_eq!(m.run(100), (Stop::Ecall, 2), "the ecall counts as retired");
    assert_eq!((m.hart.pc, m.x(A7)), (TEXT + 4, 7));
    // The caller serves the call: a0 = a0 * 2.
    m.hart.x[A0] *= 2;
    m.hart.resume_after_ecall();
    assert_eq!(m.run(100), (Stop::Returned, 2));
    assert_eq!(m.x(A0), 41);
    assert_eq!(m.hart.instret(), 4);
}

#[test]
fn ebreak_stops_without_retiring() {
    let mut m = Machine::new(&[addi(A0, ZERO, 1), EBREAK]);
    assert_eq!(m.run(100), (Stop::Ebreak, 1));
    assert_eq!(m.hart.pc, TEXT + 4);
    assert_eq!(m.run(100), (Stop::Ebreak, 0), "stays at the ebreak");
    let mut m = Machine::new16(&[0x9002]); // c.ebreak
    assert_eq!(m.run(100), (Stop::Ebreak, 0));
    assert_eq!(m.hart.pc, TEXT);
}

#[test]
fn illegal_instructions_stop_with_their_bits() {
    for word in [
        0xc000_1073u32,
        0x3020_0073,
        0x0000_0053,
        0x0000_001f,
        0xffff_ffff,
    ] {
        let mut m = Machine::new(&[addi(A0, ZERO, 1), word]);
        assert_eq!(
            m.run(100),
            (
                Stop::Illegal {
                    pc: TEXT + 4,
                    raw: word
                },
                1
            )
        );
        assert_eq!((m.hart.pc, m.x(A0)), (TEXT + 4, 1));
    }
    // 16 bits for a compressed one (c.unimp, the all-zero halfword), and the hart stops at it.
    let mut m = Machine::new16(&[0x0505, 0x0000, 0xffff]);
    assert_eq!(
        m.run(100),
        (
            Stop::Illegal {
                pc: TEXT + 2,
                raw: 0
            },
            1
        )
    );
    assert_eq!(m.hart.pc, TEXT + 2);
}

#[test]
fn counters_read_the_retired_count() {
    let code = [
        addi(A0, ZERO, 1),
        csrr(A1, 0xc00),                // cycle
        csrr(A2, 0xc01),                // time
        csrr(A3, 0xc02),                // instret
        0xc000_6000 | 14 << 7 | SYSTEM, // csrrsi a4, cycle, 0
        0xc020_7000 | 15 << 7 | SYSTEM, // csrrci a5, instret, 0
        0xc020_3000 | 16 << 7 | SYSTEM, // csrrc a6, instret, x0
        csrr(ZERO, 0xc00),
        RET,
    ];
    let mut m = Machine::new(&code);
    assert_eq!(m.run(100), (Stop::Returned, 9));
    let got: Vec<u64> = [A1, A2, A3, A4, A5, A6].iter().map(|&r| m.x(r)).collect();
    assert_eq!(got, [1, 2, 3, 4, 5, 6]);
    // The count goes on over calls.
    m.hart.prepare_call(TEXT, EXIT, END, &[]);
    assert_eq!(m.run(100), (Stop::Returned, 9));
    assert_eq!(m.x(A1), 10);
}

#[test]
fn misaligned_loads_and_stores_fault_with_the_address() {
    #[rustfmt::skip]
    let cases: &[(u32, u8, Access)] = &[
        (enc_i(1, A1, 1, A0, LOAD), 2, Access::Load),   // lh a0, 1(a1)
        (enc_i(2, A1, 2, A0, LOAD), 4, Access::Load),   // lw a0, 2(a1)
        (enc_i(4, A1, 3, A0, LOAD), 8, Access::Load),   // ld a0, 4(a1)
        (enc_i(3, A1, 5, A0, LOAD), 2, Access::Load),   // lhu a0, 3(a1)
        (enc_i(6, A1, 6, A0, LOAD), 4, Access::Load),   // lwu a0, 6(a1)
        (enc_s(1, A0, A1, 1, STORE), 2, Access::Store), // sh a0, 1(a1)
        (enc_s(-2, A0, A1, 2, STORE), 4, Access::Store), // sw a0, -2(a1)
        (enc_s(7, A0, A1, 3, STORE), 8, Access::Store), // sd a0, 7(a1)
    ];
    for &(word, size, access) in cases {
        let mut m = Machine::new(&[]);
        let inst = super::super::decode32(word);
        let stop = m.exec_stop(word, &[(A0, 5), (A1, DATA + 16)]);
        let Stop::Fault { pc, fault } = stop.0 else {
            panic!("{inst:?}: {stop:?}");
        };
        assert_eq!(pc, TEXT);
        assert_eq!((fault.size, fault.access), (size, access), "{inst:?}");
        assert_eq!(fault.reason, FaultReason::Misaligned, "{inst:?}");
        assert_ne!(fault.addr % u64::from(size), 0, "{inst:?}");
        assert!(
            fault.addr.abs_diff(DATA + 16) < 8,
            "{inst:?}: {:#x}",
            fault.addr
        );
        assert_eq!((stop.1, m.hart.pc, m.x(A0)), (0, TEXT, 5), "{inst:?}");
        assert_eq!(m.bus.data_calls, 0, "{inst:?}");
        assert_eq!((m.bus.peek(DATA + 8, 8), m.bus.peek(DATA + 16, 8)), (0, 0));
    }
    // The exact address, for one of them.
    let mut m = Machine::new(&[]);
    let stop = m.exec_stop(enc_i(-3, A1, 3, A0, LOAD), &[(A1, DATA + 16)]);
    let fault = MemFault {
        addr: DATA + 13,
        size: 8,
        access: Access::Load,
        reason: FaultReason::Misaligned,
    };
    assert_eq!(stop, (Stop::Fault { pc: TEXT, fault }, 0));
    // Bytes are never misaligned.
    m.exec(enc_i(3, A1, 4, A0, LOAD), &[(A1, DATA)]);
}

#[test]
fn refused_loads_and_stores_report_the_bus_fault() {
    let mut m = Machine::new(&[]);
    let stop = m.exec_stop(ld(A0, A1, 0), &[(A0, 5), (A1, END)]);
    let fault = MemFault {
        addr: END,
        size: 8,
        access: Access::Load,
        reason: FaultReason::Unmapped,
    };
    assert_eq!((stop, m.x(A0)), ((Stop::Fault { pc: TEXT, fault }, 0), 5));
    let stop = m.exec_stop(sw(A0, A1, 4), &[(A1, TEXT)]);
    let fault = MemFault {
        addr: TEXT + 4,
        size: 4,
        access: Access::Store,
        reason: FaultReason::ReadOnly,
    };
    assert_eq!(stop, (Stop::Fault { pc: TEXT, fault }, 0));
    // Code is readable (constants live there).
    m.exec(lw(A0, A1, 0), &[(A1, TEXT)]);
    assert_eq!(m.x(A0), u64::from(lw(A0, A1, 0)));
}

#[test]
fn fetch_faults() {
    let fetch = |addr, reason| MemFault {
        addr,
        size: 2,
        access: Access::Fetch,
        reason,
    };
    // From data: not executable.
    let mut m = Machine::new(&[jalr(ZERO, A0, 0)]);
    m.hart.x[A0] = DATA + 8;
    let stop = Stop::Fault {
        pc: DATA + 8,
        fault: fetch(DATA + 8, FaultReason::NotExecutable),
    };
    assert_eq!(m.run(10), (stop, 1));
    assert_eq!(m.hart.pc, DATA + 8);
    // From nowhere.
    let mut m = Machine::new(&[]);
    m.hart.pc = 0x40;
    let stop = Stop::Fault {
        pc: 0x40,
        fault: fetch(0x40, FaultReason::Unmapped),
    };
    assert_eq!(m.run(10), (stop, 0));
    // From an odd address (only a caller can put one in pc).
    m.hart.pc = TEXT + 1;
    let stop = Stop::Fault {
        pc: TEXT + 1,
        fault: fetch(TEXT + 1, FaultReason::Misaligned),
    };
    assert_eq!(m.run(10), (stop, 0));
    // A 32-bit instruction whose second half lies past the code.
    let mut m = Machine::new(&[]);
    m.bus.poke(DATA - 2, 2, 0x0513); // the low half of an addi
    m.hart.pc = DATA - 2;
    let stop = Stop::Fault {
        pc: DATA - 2,
        fault: fetch(DATA, FaultReason::NotExecutable),
    };
    assert_eq!(m.run(10), (stop, 0));
}

#[test]
fn prepare_call_sets_up_the_registers() {
    let mut m = Machine::new(&[]);
    m.hart.x = [0x5555; 32];
    m.hart
        .prepare_call(TEXT + 0x40, EXIT, END - 64, &[1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(m.hart.pc, TEXT + 0x40);
    assert_eq!((m.x(RA), m.x(SP)), (EXIT, END - 64));
    assert_eq!(m.hart.x[A0..=A7], [1, 2, 3, 4, 5, 6, 7, 8]);
    for r in (0..32).filter(|r| ![RA, SP].contains(r) && !(A0..=A7).contains(r)) {
        assert_eq!(m.x(r), 0, "x{r}");
    }
    // The reservation is gone: an sc right away fails.
    let mut m = Machine::new(&[]);
    m.exec(amo(0b00010, 8, A0, A1, ZERO), &[(A1, DATA)]);
    m.hart.prepare_call(TEXT, EXIT, END, &[]);
    m.exec(amo(0b00011, 8, A2, A1, A3), &[(A1, DATA), (A3, 1)]);
    assert_eq!((m.x(A2), m.bus.peek(DATA, 8)), (1, 0));
}

#[test]
#[should_panic(expected = "not 16-byte aligned")]
fn prepare_call_refuses_a_misaligned_stack() {
    Hart::new().prepare_call(TEXT, EXIT, END - 8, &[]);
}

/// Serves the `ecall`s of [`VecBus`] code itself: a0 = a0 * 10 + a7, counting the retired
/// instructions it was told.
struct Serving {
    bus: VecBus,
    told: Vec<u64>,
}

impl Bus for Serving {
    fn fetch16(&mut self, addr: u64) -> Result<u16, MemFault> {
        self.bus.fetch16(addr)
    }
    fn load(&mut self, addr: u64, size: u8) -> Result<u64, MemFault> {
        self.bus.load(addr, size)
    }
    fn store(&mut self, addr: u64, size: u8, value: u64) -> Result<(), MemFault> {
        self.bus.store(addr, size, value)
    }
    fn amo(&mut self, addr: u64, size: u8, op: AmoOp, operand: u64) -> Result<u64, MemFault> {
        self.bus.amo(addr, size, op, operand)
    }
    fn cas(&mut self, addr: u64, size: u8, expected: u64, new: u64) -> Result<bool, MemFault> {
        self.bus.cas(addr, size, expected, new)
    }
    fn code_is_fixed(&self, addr: u64, len: u8) -> bool {
        self.bus.code_is_fixed(addr, len)
    }
    fn ecall(&mut self, pc: u64, x: &mut [u64; 32], instret: u64) -> bool {
        assert_eq!(pc % 4, 0);
        x[A0] = x[A0] * 10 + x[A7];
        x[ZERO] = 99; // the hart zeroes it again
        self.told.push(instret);
        true
    }
}

#[test]
fn an_ecall_the_bus_serves_does_not_stop_the_run() {
    let code = [
        addi(A7, ZERO, 3),
        ECALL,
        addi(A7, ZERO, 4),
        addi(T0, ZERO, 0),
        ECALL,
        add(A1, ZERO, ZERO),
        RET,
    ];
    for cached in [false, true] {
        let mut m = Machine::new(&code);
        let mut bus = Serving {
            bus: m.bus.clone(),
            told: Vec::new(),
        };
        m.hart.prepare_call(TEXT, EXIT, END, &[1]);
        let (stop, retired) = match cached {
            true => m
                .hart
                .run_cached(&mut bus, &mut DecodeCache::new(), EXIT, 100),
            false => m.hart.run(&mut bus, EXIT, 100),
        };
        assert_eq!((stop, retired), (Stop::Returned, 7), "cached: {cached}");
        assert_eq!(m.hart.x[A0], 134);
        assert_eq!(m.hart.x[ZERO], 0);
        // Each ecall saw the count with itself retired.
        assert_eq!(bus.told, [2, 5]);
    }
}
