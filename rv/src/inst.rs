//! The decoded form of an instruction, [`Inst`], which 32-bit and compressed encodings both
//! decode to, and the bit-field helpers both decoders use.

use super::bus::AmoOp;

/// A register-register or register-immediate operation on 64-bit values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AluOp {
    /// `add`, `addi`.
    Add,
    /// `sub`.
    Sub,
    /// `sll`, `slli` (shift amount: low 6 bits).
    Sll,
    /// `slt`, `slti`.
    Slt,
    /// `sltu`, `sltiu` (the immediate is sign-extended, then compared unsigned).
    Sltu,
    /// `xor`, `xori`.
    Xor,
    /// `srl`, `srli`.
    Srl,
    /// `sra`, `srai`.
    Sra,
    /// `or`, `ori`.
    Or,
    /// `and`, `andi`.
    And,
    /// `mul`: low 64 bits of the product.
    Mul,
    /// `mulh`: high 64 bits, signed × signed.
    Mulh,
    /// `mulhsu`: high 64 bits, signed × unsigned.
    Mulhsu,
    /// `mulhu`: high 64 bits, unsigned × unsigned.
    Mulhu,
    /// `div` (signed).
    Div,
    /// `divu`.
    Divu,
    /// `rem` (signed, sign of the dividend).
    Rem,
    /// `remu`.
    Remu,
}

/// An operation on the low 32 bits whose result is sign-extended to 64 (the `*w` instructions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AluWOp {
    /// `addw`, `addiw`.
    Add,
    /// `subw`.
    Sub,
    /// `sllw`, `slliw` (shift amount: low 5 bits).
    Sll,
    /// `srlw`, `srliw`.
    Srl,
    /// `sraw`, `sraiw`.
    Sra,
    /// `mulw`.
    Mul,
    /// `divw`.
    Div,
    /// `divuw`.
    Divu,
    /// `remw`.
    Rem,
    /// `remuw`.
    Remu,
}

/// The condition of a conditional branch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cond {
    /// `beq`.
    Eq,
    /// `bne`.
    Ne,
    /// `blt` (signed).
    Lt,
    /// `bge` (signed).
    Ge,
    /// `bltu`.
    Ltu,
    /// `bgeu`.
    Geu,
}

/// The width and extension of a load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadKind {
    /// `lb`: 1 byte, sign-extended.
    B,
    /// `lh`: 2 bytes, sign-extended.
    H,
    /// `lw`: 4 bytes, sign-extended.
    W,
    /// `ld`: 8 bytes.
    D,
    /// `lbu`: 1 byte, zero-extended.
    Bu,
    /// `lhu`: 2 bytes, zero-extended.
    Hu,
    /// `lwu`: 4 bytes, zero-extended.
    Wu,
}

impl LoadKind {
    /// Bytes read.
    #[inline]
    pub fn size(self) -> u8 {
        match self {
            LoadKind::B | LoadKind::Bu => 1,
            LoadKind::H | LoadKind::Hu => 2,
            LoadKind::W | LoadKind::Wu => 4,
            LoadKind::D => 8,
        }
    }

    /// The register value of the zero-extended `size()` bytes `raw`.
    #[inline]
    pub fn extend(self, raw: u64) -> u64 {
        match self {
            LoadKind::B => raw as i8 as i64 as u64,
            LoadKind::H => raw as i16 as i64 as u64,
            LoadKind::W => raw as i32 as i64 as u64,
            LoadKind::D | LoadKind::Bu | LoadKind::Hu | LoadKind::Wu => raw,
        }
    }
}

/// A decoded instruction. Registers are 0..=31; immediates and offsets are sign-extended (or, for
/// shifts, the shift amount); sizes are in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inst {
    /// `lui`: rd = imm (already shifted left by 12 and sign-extended).
    Lui { rd: u8, imm: i64 },
    /// `auipc`: rd = pc + imm.
    Auipc { rd: u8, imm: i64 },
    /// `jal`: rd = pc + length; pc += offset.
    Jal { rd: u8, offset: i64 },
    /// `jalr`: target = (rs1 + imm) with bit 0 cleared; rd = pc + length.
    Jalr { rd: u8, rs1: u8, imm: i64 },
    /// Conditional branch: pc += offset if `cond` holds for rs1, rs2.
    Branch {
        cond: Cond,
        rs1: u8,
        rs2: u8,
        offset: i64,
    },
    /// Load from rs1 + imm.
    Load {
        kind: LoadKind,
        rd: u8,
        rs1: u8,
        imm: i64,
    },
    /// Store of the low `size` bytes of rs2 at rs1 + imm.
    Store {
        size: u8,
        rs1: u8,
        rs2: u8,
        imm: i64,
    },
    /// rd = rs1 `op` imm.
    OpImm {
        op: AluOp,
        rd: u8,
        rs1: u8,
        imm: i64,
    },
    /// rd = sext32(rs1 `op` imm).
    OpImmW {
        op: AluWOp,
        rd: u8,
        rs1: u8,
        imm: i64,
    },
    /// rd = rs1 `op` rs2.
    Op { op: AluOp, rd: u8, rs1: u8, rs2: u8 },
    /// rd = sext32(rs1 `op` rs2).
    OpW {
        op: AluWOp,
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    /// `lr.w`/`lr.d`: load-reserved from rs1.
    Lr { size: u8, rd: u8, rs1: u8 },
    /// `sc.w`/`sc.d`: store-conditional of rs2 at rs1; rd = 0 on success, 1 on failure.
    Sc { size: u8, rd: u8, rs1: u8, rs2: u8 },
    /// `amo<op>.w`/`.d` at rs1 with operand rs2; rd = old value.
    Amo {
        op: AmoOp,
        size: u8,
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    /// A read of `cycle`, `time` or `instret`: rd = the hart's retired-instruction count.
    ReadCounter { rd: u8 },
    /// `fence`, `fence.i` and their variants: nothing to do for a single sequential hart.
    Fence,
    /// `ecall`.
    Ecall,
    /// `ebreak`, `c.ebreak`.
    Ebreak,
    /// Anything the hart does not execute.
    Illegal,
}

/// Sign-extends the low `bits` bits of `v`.
#[inline(always)]
pub(crate) fn sext(v: u32, bits: u32) -> i64 {
    let shift = 32 - bits;
    i64::from(((v << shift) as i32) >> shift)
}

/// Bits `lo..lo + len` of `v`, shifted down.
#[inline(always)]
pub(crate) fn field(v: u32, lo: u32, len: u32) -> u32 {
    (v >> lo) & ((1 << len) - 1)
}
