//! Instructions per second of the interpreter on a loop of loads, stores, ALU operations and a
//! branch, over a flat memory whose accesses are bounds- and permission-checked (as the soft
//! device's bus checks them).
//!
//! Figure `interp/loop/<subject>`, throughput in instructions:
//! - `decode_cache`: code the bus declares fixed, decoded once into cached blocks that run with
//!   one exit-pc and budget check each (the loop body is one block); the bus grants the data
//!   range for direct access at the first load ([`Bus::direct`]), so later accesses are made by
//!   the hart after two compares;
//! - `decode_cache_no_direct`: the same, every load and store checked by a bus call;
//! - `decode_each`: every instruction fetched and decoded each time it runs, every access
//!   checked by a bus call.
//!
//! `cargo bench -p dpakit-rv`

// The bench's memory is reached through host pointers, as a soft device's is.
#![allow(unsafe_code)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dpakit_rv::{Access, AmoOp, Bus, DecodeCache, Direct, FaultReason, Hart, MemFault, Stop};
use dpakit_sync::emulated;
use std::hint::black_box;

const TEXT: u64 = 0x1_0000;
const DATA: u64 = 0x2_0000;
const END: u64 = 0x3_0000;
const EXIT: u64 = 0xdead_0000;
/// Loop iterations per run; 8 instructions each.
const ITERATIONS: i32 = 2_000;

/// Flat memory: [TEXT, DATA) read-only code, [DATA, END) read-write data; every access, the
/// bus's and the hart's, is an atomic one through the memory's host address.
struct Flat {
    /// Reached only through `host` (a raw pointer), never through a reference; never freed.
    mem: *mut u64,
    fixed: bool,
    direct: bool,
}

impl Flat {
    fn offset(&self, addr: u64, size: u8, access: Access) -> Result<usize, MemFault> {
        let fault = |reason| MemFault {
            addr,
            size,
            access,
            reason,
        };
        if addr < TEXT || addr + u64::from(size) > END {
            return Err(fault(FaultReason::Unmapped));
        }
        match access {
            Access::Fetch if addr >= DATA => Err(fault(FaultReason::NotExecutable)),
            Access::Store | Access::Atomic if addr < DATA => Err(fault(FaultReason::ReadOnly)),
            _ => Ok((addr - TEXT) as usize),
        }
    }

    fn host(&self, at: usize) -> *mut u8 {
        self.mem.cast::<u8>().wrapping_add(at)
    }

    /// Sizes are 1, 2, 4 or 8, at aligned offsets (the hart passes nothing else).
    fn read(&self, at: usize, size: u8) -> u64 {
        // SAFETY: `offset` kept the access inside the memory; the hart aligned it.
        unsafe { emulated::load(self.host(at).expose_provenance() as u64, size) }
    }

    fn write(&self, at: usize, size: u8, v: u64) {
        // SAFETY: as in `read`.
        unsafe { emulated::store(self.host(at).expose_provenance() as u64, size, v) }
    }
}

impl Bus for Flat {
    fn fetch16(&mut self, addr: u64) -> Result<u16, MemFault> {
        let at = self.offset(addr, 2, Access::Fetch)?;
        Ok(self.read(at, 2) as u16)
    }
    fn load(&mut self, addr: u64, size: u8) -> Result<u64, MemFault> {
        let at = self.offset(addr, size, Access::Load)?;
        Ok(self.read(at, size))
    }
    fn store(&mut self, addr: u64, size: u8, value: u64) -> Result<(), MemFault> {
        let at = self.offset(addr, size, Access::Store)?;
        self.write(at, size, value);
        Ok(())
    }
    fn amo(&mut self, addr: u64, size: u8, op: AmoOp, operand: u64) -> Result<u64, MemFault> {
        let at = self.offset(addr, size, Access::Atomic)?;
        let old = self.read(at, size);
        self.write(at, size, op.apply(size, old, operand));
        Ok(old)
    }
    fn cas(&mut self, addr: u64, size: u8, expected: u64, new: u64) -> Result<bool, MemFault> {
        let at = self.offset(addr, size, Access::Atomic)?;
        let equal = self.read(at, size) == expected;
        if equal {
            self.write(at, size, new);
        }
        Ok(equal)
    }
    fn code_is_fixed(&self, addr: u64, len: u8) -> bool {
        self.fixed && addr >= TEXT && addr + u64::from(len) <= DATA
    }
    /// The whole code range for loads, the whole data range for loads and stores.
    fn direct(&mut self, addr: u64, size: u8, access: Access) -> Option<Direct> {
        self.offset(addr, size, access)
            .ok()
            .filter(|_| self.direct)?;
        let (start, end, writable) = match addr >= DATA {
            true => (DATA, END, true),
            false => (TEXT, DATA, false),
        };
        let host = self.host((start - TEXT) as usize);
        // SAFETY: the memory is never freed and is reached only atomically; `offset` grants
        // every load of the range (and every store, for the data range), for good.
        Some(unsafe { Direct::new(start, end - start, host, writable, 0) })
    }
}

// The encodings the loop needs (RV64I base formats).
fn i_type(imm: i32, rs1: u32, f3: u32, rd: u32, op: u32) -> u32 {
    ((imm as u32) << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op
}
fn r_type(f7: u32, rs2: u32, rs1: u32, f3: u32, rd: u32) -> u32 {
    (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | 0x33
}
fn s_type(imm: i32, rs2: u32, rs1: u32, f3: u32) -> u32 {
    let imm = imm as u32;
    ((imm >> 5) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | ((imm & 31) << 7) | 0x23
}
fn b_type(offset: i32, rs2: u32, rs1: u32, f3: u32) -> u32 {
    let o = offset as u32;
    (((o >> 12) & 1) << 31)
        | (((o >> 5) & 0x3f) << 25)
        | (rs2 << 20)
        | (rs1 << 15)
        | (f3 << 12)
        | (((o >> 1) & 0xf) << 8)
        | (((o >> 11) & 1) << 7)
        | 0x63
}

const ZERO: u32 = 0;
const RA: u32 = 1;
const T0: u32 = 5;
const T1: u32 = 6;
const T2: u32 = 7;
const A0: u32 = 10;
const A1: u32 = 11;
const T3: u32 = 28;

/// `a0 = f(a1 = data address)`: ITERATIONS rounds of load, add, update, store, shift, xor,
/// count, branch.
fn program() -> Vec<u32> {
    vec![
        i_type(0, ZERO, 0, T0, 0x13),          // addi t0, zero, 0
        i_type(ITERATIONS, ZERO, 0, T1, 0x13), // addi t1, zero, ITERATIONS
        i_type(0, ZERO, 0, A0, 0x13),          // addi a0, zero, 0
        i_type(0, A1, 3, T2, 0x03),            // loop: ld t2, 0(a1)
        r_type(0, T2, A0, 0, A0),              // add a0, a0, t2
        i_type(3, T2, 0, T2, 0x13),            // addi t2, t2, 3
        s_type(0, T2, A1, 3),                  // sd t2, 0(a1)
        i_type(1, A0, 1, T3, 0x13),            // slli t3, a0, 1
        r_type(0, T3, A0, 4, A0),              // xor a0, a0, t3
        i_type(1, T0, 0, T0, 0x13),            // addi t0, t0, 1
        b_type(-28, T1, T0, 1),                // bne t0, t1, loop
        i_type(0, RA, 0, ZERO, 0x67),          // ret (jalr zero, 0(ra))
    ]
}

/// Retired instructions per run.
const RETIRED: u64 = 3 + 8 * ITERATIONS as u64 + 1;

fn machine(fixed: bool, direct: bool) -> Flat {
    let bus = Flat {
        mem: Box::leak(vec![0u64; ((END - TEXT) / 8) as usize].into_boxed_slice()).as_mut_ptr(),
        fixed,
        direct,
    };
    for (i, w) in program().iter().enumerate() {
        bus.write(4 * i, 4, u64::from(*w));
    }
    bus
}

fn run(hart: &mut Hart, bus: &mut Flat, cache: Option<&mut DecodeCache>) -> u64 {
    hart.prepare_call(TEXT, EXIT, END, &[0, DATA]);
    let (stop, retired) = match cache {
        Some(cache) => hart.run_cached(bus, cache, EXIT, u64::MAX),
        None => hart.run(bus, EXIT, u64::MAX),
    };
    assert_eq!((stop, retired), (Stop::Returned, RETIRED));
    hart.x[A0 as usize]
}

fn interp(c: &mut Criterion) {
    let mut group = c.benchmark_group("interp/loop");
    group.throughput(Throughput::Elements(RETIRED));
    let mut hart = Hart::new();
    let mut bus = machine(true, true);
    let mut cache = DecodeCache::new();
    group.bench_function("decode_cache", |b| {
        b.iter(|| black_box(run(&mut hart, &mut bus, Some(&mut cache))))
    });
    let mut bus = machine(true, false);
    let mut cache = DecodeCache::new();
    group.bench_function("decode_cache_no_direct", |b| {
        b.iter(|| black_box(run(&mut hart, &mut bus, Some(&mut cache))))
    });
    let mut bus = machine(false, false);
    group.bench_function("decode_each", |b| {
        b.iter(|| black_box(run(&mut hart, &mut bus, None)))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = interp
}
criterion_main!(benches);
