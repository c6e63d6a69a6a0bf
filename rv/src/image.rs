//! Loading a DPA image: the riscv64 executable dpakit-build links from the kernels and the device
//! runtime.
//!
//! The image is position-independent. It is copied into memory of its own at an address the
//! allocator chooses, its relative relocations are applied, and from then on every address in it
//! is a host address: the kernel, the soft device and the host program all name the same byte the
//! same way, as they do for DPA memory and mmaps.

use object::elf;
use object::read::elf::{Dyn, ElfFile64, FileHeader, ProgramHeader};
use object::{Endianness, Object, ObjectSymbol, SymbolKind};
use std::fmt;

/// Why bytes are not an image the interpreter can run; the message says what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageError(String);

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ImageError {}

/// Largest image the soft device loads (DPA programs are kilobytes; this bounds a bad file).
const MAX_IMAGE_SIZE: u64 = 64 << 20;

/// Page granule of the image's segments.
const PAGE: u64 = 4096;

/// What a segment of the image allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Perm {
    /// Stores are allowed.
    pub write: bool,
    /// It holds code.
    pub exec: bool,
}

/// One loaded segment, in host addresses.
#[derive(Clone, Copy, Debug)]
pub struct Segment {
    /// Its first byte.
    pub start: u64,
    /// One past its last byte.
    pub end: u64,
    /// What it allows.
    pub perm: Perm,
}

/// A function symbol of the image, in host addresses.
#[derive(Clone, Debug)]
pub struct Symbol {
    /// Its first instruction.
    pub start: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Its name.
    pub name: String,
}

/// 4 KiB-aligned storage for the loaded image.
#[repr(C, align(4096))]
#[derive(Clone, Copy)]
struct Page([u8; PAGE as usize]);

/// A loaded image.
pub struct Image {
    /// Where it came from (diagnostics).
    pub path: String,
    /// The storage every segment lives in; its address is the image's load bias.
    memory: Box<[Page]>,
    /// Its loaded segments.
    pub segments: Vec<Segment>,
    /// Function symbols, by address.
    pub symbols: Vec<Symbol>,
    /// For each name of the stub list [`Image::parse`] was given, the address of that stub's
    /// `ecall` (0 when the image does not call it).
    pub stubs: Vec<u64>,
}

impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Image")
            .field("path", &self.path)
            .field("bias", &format_args!("{:#x}", self.bias()))
            .field("segments", &self.segments)
            .finish()
    }
}

impl Image {
    /// Loads an image from its bytes; `path` names it in errors. `stubs` names the device
    /// functions whose runtime stubs ([`Image::stub_at`]) the caller serves.
    pub fn parse(data: &[u8], path: &str, stubs: &[&str]) -> Result<Image, ImageError> {
        let bad = |why: String| {
            ImageError(format!(
                "{path} is not a DPA image the soft device can run: {why}"
            ))
        };
        let file = ElfFile64::<Endianness>::parse(data).map_err(|e| bad(e.to_string()))?;
        let header = file.elf_header();
        let endian = file.endian();
        if header.e_machine(endian) != elf::EM_RISCV || !file.is_little_endian() {
            return Err(bad("not a little-endian riscv64 ELF file".into()));
        }
        if header.e_type(endian) != elf::ET_DYN {
            return Err(bad(
                "not position-independent (link it with -pie, as build-dpa does)".into(),
            ));
        }
        let loads: Vec<_> = file
            .elf_program_headers()
            .iter()
            .filter(|ph| ph.p_type(endian) == elf::PT_LOAD)
            .collect();
        let span_end = loads
            .iter()
            .map(|ph| ph.p_vaddr(endian).checked_add(ph.p_memsz(endian)))
            .try_fold(0u64, |end, e| e.map(|e| end.max(e)))
            .ok_or_else(|| bad("a segment wraps the address space".into()))?;
        if loads.is_empty() || span_end > MAX_IMAGE_SIZE {
            return Err(bad(format!(
                "{} loadable segments spanning {span_end} bytes (at most {MAX_IMAGE_SIZE})",
                loads.len()
            )));
        }
        let pages = span_end.div_ceil(PAGE) as usize;
        let mut memory = vec![Page([0; PAGE as usize]); pages].into_boxed_slice();
        let bias = memory.as_mut_ptr() as u64;
        let bytes = memory_bytes(&mut memory);
        let mut segments = Vec::new();
        for ph in &loads {
            let (vaddr, memsz) = (ph.p_vaddr(endian), ph.p_memsz(endian));
            let contents = ph
                .data(endian, data)
                .map_err(|_| bad("a segment lies outside the file".into()))?;
            if contents.len() as u64 > memsz {
                return Err(bad("a segment has more file bytes than memory".into()));
            }
            let at = vaddr as usize;
            bytes[at..at + contents.len()].copy_from_slice(contents);
            let flags = ph.p_flags(endian);
            segments.push(Segment {
                start: bias + vaddr,
                end: bias + vaddr + memsz,
                perm: Perm {
                    write: flags & elf::PF_W != 0,
                    exec: flags & elf::PF_X != 0,
                },
            });
        }
        relocate(&file, data, bytes, bias).map_err(bad)?;

        let mut symbols: Vec<Symbol> = file
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.is_definition())
            .filter_map(|s| {
                Some(Symbol {
                    start: bias + s.address(),
                    size: s.size(),
                    name: s.name().ok()?.to_string(),
                })
            })
            .collect();
        symbols.sort_by_key(|s| s.start);
        let stubs = stubs
            .iter()
            .map(|name| {
                symbols
                    .iter()
                    .find(|s| s.name == *name)
                    .map_or(0, |s| s.start)
            })
            .collect();
        Ok(Image {
            path: path.to_string(),
            memory,
            segments,
            symbols,
            stubs,
        })
    }

    /// The host address of the image's address 0.
    pub fn bias(&self) -> u64 {
        self.memory.as_ptr() as u64
    }

    /// The address of function `name`, if the image defines it.
    pub fn function(&self, name: &str) -> Option<u64> {
        self.symbols
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.start)
    }

    /// The device function whose runtime stub has its `ecall` at `pc`: an index into the stub
    /// list [`Image::parse`] was given.
    #[inline]
    pub fn stub_at(&self, pc: u64) -> Option<usize> {
        self.stubs.iter().position(|&s| s == pc && s != 0)
    }

    /// `pc` as `symbol+offset (image offset …)` for diagnostics, Rust symbols demangled.
    pub fn describe(&self, pc: u64) -> String {
        let offset = pc.wrapping_sub(self.bias());
        let inside = self.segments.iter().any(|s| (s.start..s.end).contains(&pc));
        if !inside {
            return format!("{pc:#x}, outside the image");
        }
        let symbol = self
            .symbols
            .iter()
            .rev()
            .find(|s| s.start <= pc && pc < s.start + s.size.max(1));
        match symbol {
            Some(s) => format!(
                "{pc:#x}: {:#}+{:#x}, image offset {offset:#x}",
                rustc_demangle::demangle(&s.name),
                pc - s.start
            ),
            None => format!("{pc:#x}: image offset {offset:#x}"),
        }
    }
}

#[allow(unsafe_code)]
fn memory_bytes(memory: &mut [Page]) -> &mut [u8] {
    let len = std::mem::size_of_val(memory);
    // SAFETY: Page is plain bytes without padding; the slice covers exactly the boxed pages,
    // borrowed mutably for the returned lifetime.
    unsafe { std::slice::from_raw_parts_mut(memory.as_mut_ptr().cast::<u8>(), len) }
}

/// Applies the image's dynamic relocations: only `R_RISCV_RELATIVE` (an address inside the
/// image) may appear; anything else would need a symbol the image does not define.
fn relocate(
    file: &ElfFile64<'_, Endianness>,
    data: &[u8],
    bytes: &mut [u8],
    bias: u64,
) -> std::result::Result<(), String> {
    let endian = file.endian();
    let Some(dynamic) = file
        .elf_program_headers()
        .iter()
        .find(|ph| ph.p_type(endian) == elf::PT_DYNAMIC)
    else {
        return Ok(());
    };
    let entries: &[elf::Dyn64<Endianness>] = dynamic
        .dynamic(endian, data)
        .map_err(|e| e.to_string())?
        .unwrap_or(&[]);
    let (mut rela, mut rela_size) = (None, 0u64);
    for entry in entries {
        match entry.tag32(endian) {
            Some(elf::DT_RELA) => rela = Some(entry.d_val(endian)),
            Some(elf::DT_RELASZ) => rela_size = entry.d_val(endian),
            Some(elf::DT_REL) | Some(elf::DT_JMPREL) => {
                return Err("it has REL or PLT relocations (link with -pie only)".into());
            }
            _ => {}
        }
    }
    let Some(rela) = rela else { return Ok(()) };
    // The relocation table is inside a loaded segment; read it from the loaded bytes.
    let table = bytes
        .get(rela as usize..)
        .and_then(|t| t.get(..rela_size as usize))
        .ok_or("its relocation table lies outside the image")?
        .to_vec();
    let size = std::mem::size_of::<elf::Rela64<Endianness>>();
    for raw in table.chunks_exact(size) {
        let (offset, info, addend) = (
            u64::from_le_bytes(raw[0..8].try_into().expect("8 bytes")),
            u64::from_le_bytes(raw[8..16].try_into().expect("8 bytes")),
            i64::from_le_bytes(raw[16..24].try_into().expect("8 bytes")),
        );
        let kind = (info & 0xffff_ffff) as u32;
        if kind != elf::R_RISCV_RELATIVE {
            return Err(format!(
                "relocation type {kind} at {offset:#x} (only RELATIVE)"
            ));
        }
        let target = bytes
            .get_mut(offset as usize..)
            .and_then(|t| t.get_mut(..8))
            .ok_or_else(|| format!("a relocation at {offset:#x} lies outside the image"))?;
        target.copy_from_slice(&bias.wrapping_add_signed(addend).to_le_bytes());
    }
    Ok(())
}
