//! Small whole programs, called the way the soft device calls a kernel.

use super::*;

#[test]
fn a_loop_sums_1_to_100() {
    let mut m = sum_loop();
    assert_eq!(m.run(10_000), (Stop::Returned, 3 + 3 * 100 + 1));
    assert_eq!(m.x(A0), 5050);
    // The same call with too small a budget stops inside the loop, and can go on.
    let mut m = sum_loop();
    assert_eq!(m.run(100), (Stop::Budget, 100));
    assert_eq!(m.run(10_000), (Stop::Returned, 204));
    assert_eq!(m.x(A0), 5050);
}

/// `u64 fact(u64 n)`, recursive, keeping ra and s0 on the stack; mixes compressed and 32-bit
/// instructions as a compiler does.
pub(super) fn fact() -> Vec<u16> {
    let mut code = vec![
        0x717d, // c.addi16sp sp, -16
        0xe406, // c.sdsp ra, 8(sp)
        0xe022, // c.sdsp s0, 0(sp)
        0x842a, // c.mv s0, a0
        0x4505, // c.li a0, 1
        0xc419, // c.beqz s0, done (+14)
    ];
    code.extend(split(addi(A0, S0, -1)));
    code.extend(split(jal(RA, -16))); // to fact
    code.extend(split(mul(A0, A0, S0)));
    code.extend([
        0x60a2, // done: c.ldsp ra, 8(sp)
        0x6402, // c.ldsp s0, 0(sp)
        0x6141, // c.addi16sp sp, 16
        0x8082, // c.jr ra
    ]);
    code
}

#[test]
fn a_recursive_function_uses_the_stack() {
    for (n, want) in [
        (0u64, 1u64),
        (1, 1),
        (10, 3_628_800),
        (20, 2_432_902_008_176_640_000),
    ] {
        let mut m = Machine::new16(&fact());
        m.hart.prepare_call(TEXT, EXIT, END, &[n]);
        m.hart.x[S0] = 0x5a5a; // callee-saved: must come back unchanged
        // 13 instructions per level above 0, 10 for the last.
        assert_eq!(m.run(100_000), (Stop::Returned, 13 * n + 10), "fact({n})");
        assert_eq!(m.x(A0), want, "fact({n})");
        assert_eq!((m.x(SP), m.x(S0), m.hart.pc), (END, 0x5a5a, EXIT));
        // The outermost frame holds the caller's ra and s0.
        assert_eq!(
            (m.bus.peek(END - 8, 8), m.bus.peek(END - 16, 8)),
            (EXIT, 0x5a5a)
        );
    }
}

#[test]
fn a_stack_overflow_faults_at_the_first_store_below_the_data() {
    // fact(1000) needs 16 KiB of stack; the test memory has 4 KiB of data.
    let mut m = Machine::new16(&fact());
    m.hart.prepare_call(TEXT, EXIT, END, &[1000]);
    let (stop, _) = m.run(100_000);
    let fault = MemFault {
        addr: DATA - 8,
        size: 8,
        access: Access::Store,
        reason: FaultReason::ReadOnly,
    };
    // The first store below the data range is c.sdsp ra, 8(sp) with sp = DATA - 16.
    assert_eq!(
        stop,
        Stop::Fault {
            pc: TEXT + 2,
            fault
        }
    );
    assert_eq!(m.x(SP), DATA - 16);
}

#[test]
fn cached_code_is_fetched_once() {
    for fixed in [true, false] {
        let m = sum_loop();
        let mut hart = m.hart.clone();
        let mut bus = Fetches::new(m.bus, if fixed { u64::MAX } else { 0 });
        let mut cache = DecodeCache::new();
        assert_eq!(
            hart.run_cached(&mut bus, &mut cache, EXIT, 10_000),
            (Stop::Returned, 304)
        );
        assert_eq!(hart.x[A0], 5050);
        // 32-bit instructions, two halves each, fetched once per block that holds them: the
        // entry block (six, up to the loop's branch), the loop's block (three) and `ret`'s;
        // all 304 of them, each time they ran, without the promise.
        let expected = if fixed { (6 + 3 + 1) * 2 } else { 304 * 2 };
        assert_eq!(bus.fetches, expected, "fixed: {fixed}");
    }
}

#[test]
fn a_cache_serves_its_code_only_until_cleared() {
    let m = sum_loop();
    let mut cache = DecodeCache::new();
    let (mut hart, mut bus) = (m.hart.clone(), m.bus.clone());
    assert_eq!(
        hart.run_cached(&mut bus, &mut cache, EXIT, 10_000).0,
        Stop::Returned
    );
    assert_eq!(hart.x[A0], 5050);
    // Other code at the same addresses (a new image): `addi a0, zero, 7; ret`.
    bus.poke(TEXT, 4, u64::from(addi(A0, ZERO, 7)));
    bus.poke(TEXT + 4, 4, u64::from(RET));
    let entry = |hart: &mut Hart| hart.prepare_call(TEXT, EXIT, END, &[]);
    // The stale cache still runs the old program: its contract is one piece of code.
    entry(&mut hart);
    hart.run_cached(&mut bus, &mut cache, EXIT, 10_000);
    assert_eq!(hart.x[A0], 5050, "the old program, from the cache");
    // Cleared, it serves the new code.
    cache.clear();
    entry(&mut hart);
    assert_eq!(
        hart.run_cached(&mut bus, &mut cache, EXIT, 10_000),
        (Stop::Returned, 2)
    );
    assert_eq!(hart.x[A0], 7);
}
