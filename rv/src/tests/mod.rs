//! Tests of the RV64IMAC core: a flat test bus, instruction encoders, and one module per group.
//!
//! Expected encodings and compressed/32-bit pairs come from an independent assembler (LLVM's
//! RISC-V assembler); the encoders below are checked against them, so tests that build
//! instructions with the encoders test the decoder against the standard, not against itself.

mod atomic;
mod blocks;
mod compressed;
mod control;
mod direct;
mod golden;
mod integer;
mod muldiv;
mod program;

use super::{Access, AmoOp, Bus, DecodeCache, FaultReason, Hart, MemFault, Stop, reg::*};

/// Where the test image's code starts: [TEXT, DATA) is read-only and executable.
pub(super) const TEXT: u64 = 0x1_0000;
/// Where writable data starts: [DATA, END) is read-write, not executable.
pub(super) const DATA: u64 = 0x1_1000;
/// The end of the mapped memory (and the top of the test stack).
pub(super) const END: u64 = 0x1_2000;
/// An unmapped address callers return to.
pub(super) const EXIT: u64 = 0xdead_0000;

/// A flat memory [TEXT, END) with a code and a data range, counting the data accesses it served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct VecBus {
    pub mem: Vec<u8>,
    /// Calls of load, store, amo and cas (not fetch16): the hart must not call the bus for an
    /// access it refuses itself.
    pub data_calls: usize,
}

impl VecBus {
    pub fn new() -> Self {
        Self {
            mem: vec![0; (END - TEXT) as usize],
            data_calls: 0,
        }
    }

    /// The offset of [addr, addr + size) in `mem`, or the fault an access of `access` gets.
    fn check(&self, addr: u64, size: u8, access: Access) -> Result<usize, MemFault> {
        let fault = |reason| MemFault {
            addr,
            size,
            access,
            reason,
        };
        let end = addr.checked_add(u64::from(size));
        if addr < TEXT || end.is_none_or(|end| end > END) {
            return Err(fault(FaultReason::Unmapped));
        }
        match access {
            Access::Fetch if addr >= DATA => Err(fault(FaultReason::NotExecutable)),
            Access::Store | Access::Atomic if addr < DATA => Err(fault(FaultReason::ReadOnly)),
            _ => Ok((addr - TEXT) as usize),
        }
    }

    /// Reads memory without checks (for assertions).
    pub fn peek(&self, addr: u64, size: u8) -> u64 {
        let (at, size) = ((addr - TEXT) as usize, usize::from(size));
        let mut bytes = [0; 8];
        bytes[..size].copy_from_slice(&self.mem[at..at + size]);
        u64::from_le_bytes(bytes)
    }

    /// Writes memory without checks (to set up code and data).
    pub fn poke(&mut self, addr: u64, size: u8, value: u64) {
        let (at, size) = ((addr - TEXT) as usize, usize::from(size));
        self.mem[at..at + size].copy_from_slice(&value.to_le_bytes()[..size]);
    }
}

impl Bus for VecBus {
    fn fetch16(&mut self, addr: u64) -> Result<u16, MemFault> {
        self.check(addr, 2, Access::Fetch)?;
        Ok(self.peek(addr, 2) as u16)
    }

    fn load(&mut self, addr: u64, size: u8) -> Result<u64, MemFault> {
        self.data_calls += 1;
        self.check(addr, size, Access::Load)?;
        Ok(self.peek(addr, size))
    }

    fn store(&mut self, addr: u64, size: u8, value: u64) -> Result<(), MemFault> {
        self.data_calls += 1;
        self.check(addr, size, Access::Store)?;
        assert_eq!(value >> 1 >> (8 * size - 1), 0, "store value not truncated");
        self.poke(addr, size, value);
        Ok(())
    }

    fn amo(&mut self, addr: u64, size: u8, op: AmoOp, operand: u64) -> Result<u64, MemFault> {
        self.data_calls += 1;
        self.check(addr, size, Access::Atomic)?;
        let old = self.peek(addr, size);
        self.poke(addr, size, op.apply(size, old, operand));
        Ok(old)
    }

    fn cas(&mut self, addr: u64, size: u8, expected: u64, new: u64) -> Result<bool, MemFault> {
        self.data_calls += 1;
        self.check(addr, size, Access::Atomic)?;
        let equal = self.peek(addr, size) == expected;
        if equal {
            self.poke(addr, size, new);
        }
        Ok(equal)
    }

    /// The code range is read-only to the hart (the tests poke it only between runs).
    fn code_is_fixed(&self, addr: u64, len: u8) -> bool {
        addr >= TEXT && addr + u64::from(len) <= DATA
    }
}

/// `a0 = 1 + 2 + … + 100` in a three-instruction loop (304 instructions retired).
pub(super) fn sum_loop() -> Machine {
    Machine::new(&[
        addi(A0, ZERO, 0),
        addi(T0, ZERO, 1),
        addi(T1, ZERO, 101),
        add(A0, A0, T0), // loop:
        addi(T0, T0, 1),
        bne(T0, T1, -8),
        RET,
    ])
}

/// A bus that counts fetches and calls its code fixed only below `fixed_end` (0: none of it).
#[derive(Clone)]
pub(super) struct Fetches {
    pub bus: VecBus,
    pub fixed_end: u64,
    pub fetches: usize,
}

impl Fetches {
    pub(super) fn new(bus: VecBus, fixed_end: u64) -> Self {
        Self {
            bus,
            fixed_end,
            fetches: 0,
        }
    }
}

impl Bus for Fetches {
    fn fetch16(&mut self, addr: u64) -> Result<u16, MemFault> {
        self.fetches += 1;
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
        addr.saturating_add(u64::from(len)) <= self.fixed_end && self.bus.code_is_fixed(addr, len)
    }
}

/// A hart and its memory.
#[derive(Clone, Debug)]
pub(super) struct Machine {
    pub hart: Hart,
    pub bus: VecBus,
}

impl Machine {
    /// A machine with `code` (32-bit words) at TEXT, pc = TEXT, ra = EXIT, sp = END.
    pub fn new(code: &[u32]) -> Self {
        let mut m = Machine {
            hart: Hart::new(),
            bus: VecBus::new(),
        };
        for (i, w) in code.iter().enumerate() {
            m.bus.poke(TEXT + 4 * i as u64, 4, u64::from(*w));
        }
        m.hart.prepare_call(TEXT, EXIT, END, &[]);
        m
    }

    /// A machine with `code` given as halfwords (compressed instructions, or 32-bit ones as
    /// two halves via [`split`]).
    pub fn new16(code: &[u16]) -> Self {
        let mut m = Machine::new(&[]);
        for (i, h) in code.iter().enumerate() {
            m.bus.poke(TEXT + 2 * i as u64, 2, u64::from(*h));
        }
        m
    }

    /// Runs with exit pc EXIT; the same run with a decode cache must end the same way, with
    /// the same registers, memory and bus calls (so every test checks the cached path too).
    pub fn run(&mut self, budget: u64) -> (Stop, u64) {
        if cfg!(miri) {
            // Twice the interpretation is minutes under miri; the native runs compare them.
            return self.hart.run(&mut self.bus, EXIT, budget);
        }
        let mut cached = self.clone();
        let mut cache = DecodeCache::new();
        let with_cache = cached
            .hart
            .run_cached(&mut cached.bus, &mut cache, EXIT, budget);
        let plain = self.hart.run(&mut self.bus, EXIT, budget);
        assert_eq!(with_cache, plain, "the cached run stopped otherwise");
        assert_eq!(cached.hart.x, self.hart.x, "registers after the cached run");
        assert_eq!(cached.hart.pc, self.hart.pc, "pc after the cached run");
        assert_eq!(cached.hart.instret(), self.hart.instret());
        assert!(
            cached.bus == self.bus,
            "memory or bus calls after the cached run"
        );
        plain
    }

    /// Places `word` at TEXT, sets `regs`, and executes it alone; it must retire.
    pub fn exec(&mut self, word: u32, regs: &[(usize, u64)]) -> &mut Self {
        assert_eq!(
            self.exec_stop(word, regs),
            (Stop::Budget, 1),
            "{word:#010x}"
        );
        self
    }

    /// Places `word` at TEXT, sets `regs`, runs one instruction and returns how it stopped.
    pub fn exec_stop(&mut self, word: u32, regs: &[(usize, u64)]) -> (Stop, u64) {
        self.bus.poke(TEXT, 4, u64::from(word));
        self.hart.pc = TEXT;
        for &(r, v) in regs {
            self.hart.x[r] = v;
        }
        self.run(1)
    }

    /// Register `r`.
    pub fn x(&self, r: usize) -> u64 {
        self.hart.x[r]
    }
}

/// The halves of a 32-bit instruction, for [`Machine::new16`].
pub(super) fn split(word: u32) -> [u16; 2] {
    [word as u16, (word >> 16) as u16]
}

// Encoders of the six base formats. Registers are x0..x31; immediates are the byte offsets
// or values the assembler takes.

pub(super) fn enc_r(funct7: u32, rs2: usize, rs1: usize, funct3: u32, rd: usize, op: u32) -> u32 {
    funct7 << 25 | (rs2 as u32) << 20 | (rs1 as u32) << 15 | funct3 << 12 | (rd as u32) << 7 | op
}

pub(super) fn enc_i(imm: i32, rs1: usize, funct3: u32, rd: usize, op: u32) -> u32 {
    assert!((-2048..2048).contains(&imm), "{imm}");
    (imm as u32) << 20 | (rs1 as u32) << 15 | funct3 << 12 | (rd as u32) << 7 | op
}

pub(super) fn enc_s(imm: i32, rs2: usize, rs1: usize, funct3: u32, op: u32) -> u32 {
    assert!((-2048..2048).contains(&imm), "{imm}");
    let imm = imm as u32;
    (imm >> 5) << 25 | (rs2 as u32) << 20 | (rs1 as u32) << 15 | funct3 << 12 | (imm & 31) << 7 | op
}

pub(super) fn enc_b(imm: i32, rs2: usize, rs1: usize, funct3: u32, op: u32) -> u32 {
    assert!((-4096..4096).contains(&imm) && imm % 2 == 0, "{imm}");
    let imm = imm as u32;
    (imm >> 12 & 1) << 31
        | (imm >> 5 & 0x3f) << 25
        | (rs2 as u32) << 20
        | (rs1 as u32) << 15
        | funct3 << 12
        | (imm >> 1 & 0xf) << 8
        | (imm >> 11 & 1) << 7
        | op
}

/// `imm20` is the 20-bit upper immediate as the assembler writes it (`lui a0, 0x80000`).
pub(super) fn enc_u(imm20: u32, rd: usize, op: u32) -> u32 {
    assert!(imm20 < 1 << 20, "{imm20:#x}");
    imm20 << 12 | (rd as u32) << 7 | op
}

pub(super) fn enc_j(imm: i32, rd: usize, op: u32) -> u32 {
    assert!(
        (-(1 << 20)..1 << 20).contains(&imm) && imm % 2 == 0,
        "{imm}"
    );
    let imm = imm as u32;
    (imm >> 20 & 1) << 31
        | (imm >> 1 & 0x3ff) << 21
        | (imm >> 11 & 1) << 20
        | (imm >> 12 & 0xff) << 12
        | (rd as u32) << 7
        | op
}

// Opcodes (the whole base set, whether or not a test names it).
pub(super) const LOAD: u32 = 0x03;
#[allow(dead_code)]
pub(super) const MISC_MEM: u32 = 0x0f;
pub(super) const OP_IMM: u32 = 0x13;
pub(super) const AUIPC: u32 = 0x17;
pub(super) const OP_IMM_32: u32 = 0x1b;
pub(super) const STORE: u32 = 0x23;
pub(super) const AMO: u32 = 0x2f;
pub(super) const OP: u32 = 0x33;
pub(super) const LUI: u32 = 0x37;
pub(super) const OP_32: u32 = 0x3b;
pub(super) const BRANCH: u32 = 0x63;
pub(super) const JALR: u32 = 0x67;
pub(super) const JAL: u32 = 0x6f;
pub(super) const SYSTEM: u32 = 0x73;

// The instructions the tests use most, by their assembler names.

pub(super) fn addi(rd: usize, rs1: usize, imm: i32) -> u32 {
    enc_i(imm, rs1, 0, rd, OP_IMM)
}
pub(super) fn add(rd: usize, rs1: usize, rs2: usize) -> u32 {
    enc_r(0, rs2, rs1, 0, rd, OP)
}
pub(super) fn mul(rd: usize, rs1: usize, rs2: usize) -> u32 {
    enc_r(1, rs2, rs1, 0, rd, OP)
}
pub(super) fn lui(rd: usize, imm20: u32) -> u32 {
    enc_u(imm20, rd, LUI)
}
pub(super) fn jal(rd: usize, offset: i32) -> u32 {
    enc_j(offset, rd, JAL)
}
pub(super) fn jalr(rd: usize, rs1: usize, imm: i32) -> u32 {
    enc_i(imm, rs1, 0, rd, JALR)
}
/// `ret`.
pub(super) const RET: u32 = 0x0000_8067;
pub(super) fn bne(rs1: usize, rs2: usize, offset: i32) -> u32 {
    enc_b(offset, rs2, rs1, 1, BRANCH)
}
pub(super) fn ld(rd: usize, rs1: usize, imm: i32) -> u32 {
    enc_i(imm, rs1, 3, rd, LOAD)
}
pub(super) fn lw(rd: usize, rs1: usize, imm: i32) -> u32 {
    enc_i(imm, rs1, 2, rd, LOAD)
}
pub(super) fn sd(rs2: usize, rs1: usize, imm: i32) -> u32 {
    enc_s(imm, rs2, rs1, 3, STORE)
}
pub(super) fn sw(rs2: usize, rs1: usize, imm: i32) -> u32 {
    enc_s(imm, rs2, rs1, 2, STORE)
}
/// `csrrs rd, csr, x0`: `csrr`.
pub(super) fn csrr(rd: usize, csr: u32) -> u32 {
    csr << 20 | 2 << 12 | (rd as u32) << 7 | SYSTEM
}
pub(super) const ECALL: u32 = 0x0000_0073;
pub(super) const EBREAK: u32 = 0x0010_0073;
/// `amo<funct5>.w/.d rd, rs2, (rs1)` (`size` 4 or 8), aq/rl clear.
pub(super) fn amo(funct5: u32, size: u8, rd: usize, rs1: usize, rs2: usize) -> u32 {
    enc_r(
        funct5 << 2,
        rs2,
        rs1,
        if size == 4 { 2 } else { 3 },
        rd,
        AMO,
    )
}
