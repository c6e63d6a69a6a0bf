//! Reading a device archive: the kernels its `.dpakit.kernels` records declare, with their code
//! sizes from the symbol table, and the symbols it imports (needed by some member, defined by
//! none). Every import must be a DOCA device function.

use crate::records;
use crate::report::Kernel;
use dpakit_abi::kernel::{BUILD_ID_SECTION, build_id_records};
use object::read::archive::ArchiveFile;
use object::{Object, ObjectSection, ObjectSymbol};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

type Result<T = (), E = String> = std::result::Result<T, E>;

/// The section where kernel declarations record `kind:name\0` (Rust) or `kind:name:c\0` (C)
/// on device builds.
const KERNEL_SECTION: &str = ".dpakit.kernels";

/// What an archive defines, needs and declares.
#[derive(Debug, Default)]
pub struct Analysis {
    /// Kernel entries recorded in `.dpakit.kernels`, with their sizes.
    pub kernels: Vec<Kernel>,
    /// Symbols needed by some member and defined by none.
    pub imports: BTreeSet<String>,
    /// For each import, the first member that needs it (for error messages).
    pub importers: BTreeMap<String, String>,
    /// The build ids `dpa_app!` recorded (app symbol, id), which the image must keep.
    pub build_ids: BTreeSet<(String, u64)>,
}

impl Analysis {
    /// Fails, naming each offender and who imports it, when an import is not in `allowed`.
    pub fn check_imports(&self, allowed: &[&str]) -> Result {
        let foreign: Vec<&String> = self
            .imports
            .iter()
            .filter(|s| !allowed.contains(&s.as_str()))
            .collect();
        if foreign.is_empty() {
            return Ok(());
        }
        let mut msg =
            String::from("the DPA object imports symbols outside the known DOCA device API:\n");
        for symbol in &foreign {
            let _ = writeln!(msg, "  {symbol}  (needed by {})", self.importers[*symbol]);
        }
        msg.push_str(
            "kernels may call only the DOCA device functions listed in dpakit_abi::device; an \
             import like this usually means std, alloc or a C library slipped into the kernel \
             build",
        );
        Err(msg)
    }
}

/// Reads a static archive of ELF objects.
pub fn analyze(data: &[u8]) -> Result<Analysis> {
    let archive = ArchiveFile::parse(data).map_err(|e| format!("not a static archive: {e}"))?;
    let mut defined: BTreeMap<String, u64> = BTreeMap::new();
    let mut undefined: BTreeMap<String, String> = BTreeMap::new();
    let mut records: Vec<records::Record> = Vec::new();
    let mut build_ids = BTreeSet::new();

    for member in archive.members() {
        let member = member.map_err(|e| format!("bad archive member: {e}"))?;
        let name = String::from_utf8_lossy(member.name()).into_owned();
        let bytes = member.data(data).map_err(|e| format!("{name}: {e}"))?;
        // Archives also carry metadata members (lib.rmeta); only objects have symbols.
        let Ok(obj) = object::File::parse(bytes) else {
            continue;
        };
        for sym in obj.symbols() {
            let Ok(sym_name) = sym.name() else { continue };
            if sym_name.is_empty() {
                continue;
            }
            if sym.is_undefined() {
                undefined
                    .entry(sym_name.to_string())
                    .or_insert_with(|| name.clone());
            } else if sym.is_global() {
                let size = defined.entry(sym_name.to_string()).or_insert(0);
                *size = (*size).max(sym.size());
            }
        }
        // Each record may sit in a section of its own (data-sections), all with this name.
        for section in obj.sections().filter(|s| s.name() == Ok(KERNEL_SECTION)) {
            let contents = section.data().map_err(|e| format!("{name}: {e}"))?;
            for record in contents.split(|&b| b == 0).filter(|r| !r.is_empty()) {
                let record = String::from_utf8_lossy(record);
                records.push(records::parse(&record).map_err(|e| format!("{name}: {e}"))?);
            }
        }
        for section in obj.sections().filter(|s| s.name() == Ok(BUILD_ID_SECTION)) {
            let contents = section.data().map_err(|e| format!("{name}: {e}"))?;
            for record in build_id_records(contents) {
                let (app, id) =
                    record.map_err(|why| format!("{name}: malformed {BUILD_ID_SECTION}: {why}"))?;
                build_ids.insert((app.to_string(), id));
            }
        }
    }

    let mut analysis = Analysis {
        build_ids,
        ..Analysis::default()
    };
    for (symbol, importer) in undefined {
        if !defined.contains_key(&symbol) {
            analysis.imports.insert(symbol.clone());
            analysis.importers.insert(symbol, importer);
        }
    }
    records.sort();
    records.dedup();
    for records::Record { kind, symbol, lang } in records {
        let size = *defined.get(&symbol).ok_or_else(|| {
            format!("kernel `{symbol}` is recorded but not exported by the archive")
        })?;
        analysis.kernels.push(Kernel {
            symbol,
            kind,
            lang,
            size,
        });
    }
    analysis.kernels.sort_by(|a, b| a.symbol.cmp(&b.symbol));
    Ok(analysis)
}
