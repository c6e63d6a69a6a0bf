//! A RISC-V RV64IMAC interpreter core and DPA image loader, for dpakit's soft device's ISA mode.
//!
//! The soft device can run a DPA kernel from the riscv64 image the kit builds (rustc's
//! `riscv64imac-unknown-none-elf`, or C from `clang -march=rv64imac`, lp64 ABI) one instruction
//! at a time: `decode` turns an instruction word (32-bit, or 16-bit compressed, expanded into
//! the same form) into an `Inst`, and [`Hart::run`] executes them against a
//! [`Bus`] until something needs the caller: an `ecall` (a device call), an `ebreak`, the return
//! of the called function, an illegal instruction, a refused access, or a spent budget.
//!
//! Why an interpreter of our own rather than an emulator library:
//! - every load, store and atomic is checked by the [`Bus`] against the memory map of
//!   host-shared regions the kernel may reach; a refused access stops the hart with a precise
//!   fault (the instruction's pc, the address, size and kind), and misaligned accesses are
//!   caught before the bus sees them. The bus may grant a whole checked window for the rest of
//!   a run ([`Bus::direct`], a [`Direct`]): the hart then makes loads and stores inside it
//!   itself, after two compares and a look at the bus's stamp, which changes when a grant may
//!   no longer hold; everything else still goes to the bus;
//! - an instruction budget bounds each call, so a looping kernel cannot hold a worker;
//! - an `ecall` is served by the bus inside the run if it can ([`Bus::ecall`], the soft
//!   device's device calls), or stops the hart at the instruction;
//! - instruction counts are exact and deterministic, and the counters a kernel can read
//!   (`cycle`, `time`, `instret`) all return the retired count, so runs replay identically;
//! - nothing allocates, the only `unsafe` is the direct accesses a grant promises valid, there
//!   is no dynamic dispatch (the loop is monomorphized over the bus), and there is nothing to
//!   compile but this code;
//! - code the bus declares fixed is decoded once: [`Hart::run_cached`] keeps it in a
//!   [`DecodeCache`] the caller owns, as blocks of straight-line instructions (up to a branch,
//!   jump, `ecall` or `ebreak`) lowered to one operation each (`addi`, `ld`, `bne`, … rather
//!   than a format and then an operation), and runs a block in a tight loop: the exit-pc and
//!   budget checks are made once per block, and a block the budget or exit pc ends inside runs
//!   only its instructions before that point, so counts and stops are exact to the
//!   instruction; a whole block that branches back to its start runs again at once while it
//!   fits the budget. A fault inside a block stops the hart at that instruction with the state
//!   single steps would leave.
//!   [`Hart::run`] fetches and decodes every instruction each time; both paths execute through
//!   the same functions.
//!
//! The hart is a single user-mode RV64IMAC hart with the user counters of Zicsr: no F/D, no
//! vector, no privileged instructions; those decode as illegal and stop the run.

//!
//! [`Image`] loads the position-independent riscv64 executable a kernel crate is linked into
//! (dpakit-build's `<lib>.elf`) at a host address, applies its relative relocations and names
//! its functions and its device-function stubs, so every address the hart uses is a host address.
#![warn(missing_docs)]
// Unsafe code in two places: the loaded image's pages seen as bytes (see `image::memory_bytes`),
// and the hart's direct accesses to memory the bus granted (`direct`).
#![deny(unsafe_code)]

mod bus;
mod decode;
mod decode_cache;
mod direct;
mod hart;
mod image;
mod inst;
mod op;
mod rvc;
#[cfg(test)]
mod tests;

pub use bus::{Access, AmoOp, Bus, FaultReason, MemFault};
pub use decode_cache::DecodeCache;
pub use direct::Direct;
pub use hart::{Hart, Stop, reg};
pub use image::{Image, ImageError, Perm, Segment, Symbol};
// The decoder, for the tests.
#[cfg(test)]
pub(crate) use decode::{decode, decode32};
#[cfg(test)]
pub(crate) use inst::{AluOp, AluWOp, Cond, Inst, LoadKind};
#[cfg(test)]
pub(crate) use rvc::decode16;
