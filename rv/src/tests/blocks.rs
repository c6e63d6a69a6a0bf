//! The cached run's blocks: wherever a run stops inside a block (budget, exit pc, fault), it
//! stops as single steps do; blocks hold only fixed code; x0 stays zero; the cache starts over
//! when full.

use super::program::fact;
use super::*;

/// Runs `m` to `exit_pc` within `budget` plainly and from `cache`, checks both end alike (stop,
/// retired count, registers, pc, retired total, memory and bus calls), and returns how.
fn both(m: &mut Machine, cache: &mut DecodeCache, exit_pc: u64, budget: u64) -> (Stop, u64) {
    let mut cached = m.clone();
    let with_cache = cached
        .hart
        .run_cached(&mut cached.bus, cache, exit_pc, budget);
    let plain = m.hart.run(&mut m.bus, exit_pc, budget);
    let what = format!("exit pc {exit_pc:#x}, budget {budget}");
    assert_eq!(with_cache, plain, "{what}");
    assert_eq!(cached.hart.x, m.hart.x, "registers, {what}");
    assert_eq!(cached.hart.pc, m.hart.pc, "pc, {what}");
    assert_eq!(cached.hart.instret(), m.hart.instret(), "{what}");
    assert!(cached.bus == m.bus, "memory or bus calls, {what}");
    plain
}

fn fact_of(n: u64) -> Machine {
    let mut m = Machine::new16(&fact());
    m.hart.prepare_call(TEXT, EXIT, END, &[n]);
    m
}

/// 70 increments of a0, 32-bit and compressed in turn, then `ret`: more than one block's worth
/// of straight-line code.
fn straight_line() -> Machine {
    let mut code = Vec::new();
    for _ in 0..35 {
        code.extend(split(addi(A0, A0, 1)));
        code.push(0x0505); // c.addi a0, 1
    }
    code.extend(split(RET));
    Machine::new16(&code)
}

/// A program's name, how to set it up, and a number it checks (a0 at its end, or its length).
type Program = (&'static str, fn() -> Machine, u64);

#[test]
fn a_budget_ending_inside_a_block_stops_as_single_steps_do() {
    let programs: [Program; 3] = [
        ("sum", sum_loop, 5050),
        ("fact", || fact_of(5), 120),
        ("straight", straight_line, 70),
    ];
    // Under miri, a budget that ends inside the loop's blocks and one a block past the first
    // 32 straight instructions.
    let chunks: &[u64] = if cfg!(miri) {
        &[7, 33]
    } else {
        &[1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 31, 32, 33, 64]
    };
    for (name, program, a0) in programs {
        for &chunk in chunks {
            // One cache for the whole call, resumed after each spent budget.
            let (mut m, mut cache) = (program(), DecodeCache::new());
            let stop = loop {
                match both(&mut m, &mut cache, EXIT, chunk) {
                    (Stop::Budget, retired) => assert_eq!(retired, chunk, "{name}"),
                    (stop, _) => break stop,
                }
            };
            assert_eq!((stop, m.x(A0)), (Stop::Returned, a0), "{name} by {chunk}");
        }
    }
}

#[test]
fn an_exit_pc_inside_a_block_stops_before_it() {
    let programs: &[Program] = &[("fact", || fact_of(3), 2 * 13), ("sum", sum_loop, 7 * 4)];
    // The sum's 300 instructions a run are too slow a sweep under miri.
    let programs = &programs[..if cfg!(miri) { 1 } else { 2 }];
    for &(name, program, bytes) in programs {
        let mut cache = DecodeCache::new();
        // Warm: every block of the program is in the cache before the runs that stop early.
        assert_eq!(
            both(&mut program(), &mut cache, EXIT, 10_000).0,
            Stop::Returned
        );
        // Every 2-byte step, the middle of 32-bit instructions included (never reached: the
        // run goes on to EXIT, which faults here as the exit pc is elsewhere).
        for exit_pc in (TEXT..TEXT + bytes).step_by(2) {
            let mut m = program();
            let (stop, _) = both(&mut m, &mut cache, exit_pc, 10_000);
            if stop == Stop::Returned {
                assert_eq!(m.hart.pc, exit_pc, "{name}");
            }
        }
    }
    // Stopped four instructions into a cached block of eleven.
    let mut cache = DecodeCache::new();
    let mut code = vec![addi(A0, A0, 1); 10];
    code.push(RET);
    let mut m = Machine::new(&code);
    both(&mut m.clone(), &mut cache, EXIT, 100);
    assert_eq!(
        both(&mut m, &mut cache, TEXT + 16, 100),
        (Stop::Returned, 4)
    );
    assert_eq!((m.x(A0), m.hart.pc), (4, TEXT + 16));
}

#[test]
fn a_fault_inside_a_cached_block_stops_at_its_instruction() {
    let code = [
        addi(A0, ZERO, 0),
        addi(T0, T0, 1), // loop:
        sd(T0, A1, 0),   // faults once a1 reaches END
        addi(A1, A1, 8),
        addi(A0, A0, 1),
        bne(A0, A2, -16),
        RET,
    ];
    let mut m = Machine::new(&code);
    m.hart.x[A1] = END - 64;
    m.hart.x[A2] = 100;
    let fault = MemFault {
        addr: END,
        size: 8,
        access: Access::Store,
        reason: FaultReason::Unmapped,
    };
    // The ninth time round, from the cached block: one addi, eight rounds of five, one addi.
    let stop = both(&mut m, &mut DecodeCache::new(), EXIT, 10_000);
    assert_eq!(
        stop,
        (
            Stop::Fault {
                pc: TEXT + 8,
                fault
            },
            42
        )
    );
    assert_eq!((m.x(T0), m.x(A1), m.x(A0)), (9, END, 8));
    assert_eq!(m.hart.pc, TEXT + 8);

    // A load misaligned the second time round (a1 goes up by 4).
    let code = [
        ld(A3, A1, 0), // loop:
        addi(A1, A1, 4),
        addi(A0, A0, 1),
        bne(A0, A2, -12),
        RET,
    ];
    let mut m = Machine::new(&code);
    m.hart.x[A1] = DATA;
    m.hart.x[A2] = 100;
    let fault = MemFault {
        addr: DATA + 4,
        size: 8,
        access: Access::Load,
        reason: FaultReason::Misaligned,
    };
    let stop = both(&mut m, &mut DecodeCache::new(), EXIT, 10_000);
    assert_eq!(stop, (Stop::Fault { pc: TEXT, fault }, 4));
    assert_eq!(
        m.bus.data_calls, 1,
        "the misaligned load never reached the bus"
    );
}

#[test]
fn writes_to_x0_are_discarded_in_blocks() {
    let code = [
        addi(ZERO, ZERO, 5),
        lui(ZERO, 0x12345),
        enc_u(1, ZERO, AUIPC),
        add(ZERO, A0, A0),
        mul(ZERO, A0, A0),
        enc_i(1, A0, 0, ZERO, OP_IMM_32), // addiw zero, a0, 1
        ld(ZERO, A1, 0),                  // still a load: the bus sees it
        add(A2, ZERO, ZERO),
        csrr(ZERO, 0xc02),
        addi(A3, ZERO, 1),
        jal(ZERO, 4),
        add(A4, ZERO, A0),
        RET,
    ];
    let mut m = Machine::new(&code);
    m.bus.poke(DATA, 8, 99);
    let mut cache = DecodeCache::new();
    for round in 1..=2 {
        m.hart.prepare_call(TEXT, EXIT, END, &[7, DATA]);
        assert_eq!(both(&mut m, &mut cache, EXIT, 100), (Stop::Returned, 13));
        assert_eq!(m.x(ZERO), 0);
        assert_eq!((m.x(A2), m.x(A3), m.x(A4)), (0, 1, 7), "round {round}");
        assert_eq!(m.bus.data_calls, round);
    }
}

#[test]
fn a_counter_read_inside_a_loop_reads_the_exact_count() {
    let code = [
        addi(T1, ZERO, 5),
        addi(T0, T0, 1), // loop:
        csrr(A0, 0xc02), // instret
        add(A1, A1, A0),
        bne(T0, T1, -12),
        RET,
    ];
    let mut m = Machine::new(&code);
    assert_eq!(
        both(&mut m, &mut DecodeCache::new(), EXIT, 100),
        (Stop::Returned, 1 + 4 * 5 + 1)
    );
    // Round k reads 4k - 2 (one addi before the loop, four per round, one addi before it).
    assert_eq!(m.x(A1), (1..=5).map(|k| 4 * k - 2).sum::<u64>());
}

#[test]
fn code_that_is_not_fixed_is_never_cached() {
    let m = Machine::new(&[addi(A0, ZERO, 1), addi(A0, A0, 2), RET]);
    for (fixed_end, blocks) in [(TEXT, 0), (TEXT + 4, 1)] {
        let mut bus = Fetches::new(m.bus.clone(), fixed_end);
        let (mut hart, mut cache) = (m.hart.clone(), DecodeCache::new());
        let mut call = |bus: &mut Fetches| {
            hart.prepare_call(TEXT, EXIT, END, &[]);
            assert_eq!(
                hart.run_cached(bus, &mut cache, EXIT, 100),
                (Stop::Returned, 3)
            );
            hart.x[A0]
        };
        assert_eq!(call(&mut bus), 3);
        // Changed between calls: the new instruction runs (it was not kept).
        bus.bus.poke(TEXT + 4, 4, u64::from(addi(A0, A0, 5)));
        bus.fetches = 0;
        let a0 = call(&mut bus);
        // The second call fetches what is not fixed (two halves an instruction), and only
        // that: a block ends before code that is not fixed.
        assert_eq!((a0, bus.fetches), (6, (3 - blocks) * 2));
        assert_eq!(cache.blocks_held(), blocks, "fixed below {fixed_end:#x}");
    }
}

#[test]
fn blocks_end_before_illegal_or_unfetchable_code() {
    // An illegal instruction (all zeros) after two addis: the block holds the addis.
    let mut m = Machine::new(&[addi(A0, A0, 1), addi(A0, A0, 1), 0]);
    let mut cache = DecodeCache::new();
    for _ in 0..2 {
        m.hart.prepare_call(TEXT, EXIT, END, &[]);
        let stop = Stop::Illegal {
            pc: TEXT + 8,
            raw: 0,
        };
        assert_eq!(both(&mut m, &mut cache, EXIT, 100), (stop, 2));
    }
    // Code running into the data: the block ends at DATA, the hart faults when it gets there.
    let mut m = Machine::new(&[]);
    m.bus.poke(DATA - 8, 4, u64::from(addi(A0, A0, 1)));
    m.bus.poke(DATA - 4, 4, u64::from(addi(A0, A0, 1)));
    m.hart.pc = DATA - 8;
    let fault = MemFault {
        addr: DATA,
        size: 2,
        access: Access::Fetch,
        reason: FaultReason::NotExecutable,
    };
    let stop = Stop::Fault { pc: DATA, fault };
    assert_eq!(both(&mut m, &mut DecodeCache::new(), EXIT, 100), (stop, 2));
}

#[test]
fn a_full_cache_starts_over() {
    // Entered at each of n increments in turn, from one cache: every entry starts a block of
    // its own (up to 32 instructions), more than the cache holds, so it fills and starts over.
    let n = if cfg!(miri) { 20 } else { 1000 };
    let mut code = vec![addi(A0, A0, 1); n];
    code.push(RET);
    let m = Machine::new(&code);
    let mut cache = DecodeCache::new();
    for round in 0..2 {
        for i in 0..n as u64 {
            let (mut hart, mut bus) = (m.hart.clone(), m.bus.clone());
            hart.prepare_call(TEXT + 4 * i, EXIT, END, &[]);
            let stop = hart.run_cached(&mut bus, &mut cache, EXIT, 10_000);
            assert_eq!(stop, (Stop::Returned, n as u64 - i + 1), "round {round}");
            assert_eq!(hart.x[A0], n as u64 - i);
        }
    }
}

#[test]
fn an_odd_pc_faults_from_the_cache_too() {
    // 1 is also what marks the cache's empty slots.
    for pc in [1, TEXT + 1] {
        let mut m = Machine::new(&[]);
        m.hart.pc = pc;
        let fault = MemFault {
            addr: pc,
            size: 2,
            access: Access::Fetch,
            reason: FaultReason::Misaligned,
        };
        let stop = Stop::Fault { pc, fault };
        assert_eq!(both(&mut m, &mut DecodeCache::new(), EXIT, 10), (stop, 0));
    }
}
