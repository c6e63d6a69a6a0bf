//! What a build made: the kernels, their imports, the files; as JSON (`report.json`) and as a
//! table for the terminal.

use crate::records::Lang;
use crate::{DPA_TARGET, Error, Result};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One kernel entry point in the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    /// Exported symbol name.
    pub symbol: String,
    /// `thread` or `rpc`.
    pub kind: String,
    /// The language it is written in.
    pub lang: Lang,
    /// Size of the entry function in bytes.
    pub size: u64,
}

/// The result of a successful build.
#[derive(Debug, Clone)]
pub struct Report {
    /// The kernel package.
    pub package: String,
    /// Its library name: the archive is `lib<lib_name>.a`, the image `<lib_name>.elf`.
    pub lib_name: String,
    /// The archive written to the output directory.
    pub archive: PathBuf,
    /// `release` or `debug`.
    pub profile: &'static str,
    /// Kernel entries, by name.
    pub kernels: Vec<Kernel>,
    /// Undefined symbols of the archive (all DOCA device functions), sorted.
    pub imports: Vec<String>,
    /// The archive linked with the device runtime: what the soft device's ISA mode runs.
    pub image: PathBuf,
    /// The soft device's app library, when built.
    pub soft_app: Option<PathBuf>,
    /// Instructions per message of each kernel in ISA mode (`--profile`).
    pub isa_profile: Option<Value>,
}

impl Report {
    /// The report as JSON (what `report.json` holds).
    pub fn to_json(&self) -> Value {
        json!({
            "target": DPA_TARGET,
            "package": self.package,
            "lib_name": self.lib_name,
            "profile": self.profile,
            "archive": self.archive.display().to_string(),
            "kernels": self.kernels.iter().map(|k| json!({
                "symbol": k.symbol,
                "kind": k.kind,
                "lang": k.lang.as_str(),
                "size": k.size,
            })).collect::<Vec<_>>(),
            "imports": self.imports,
            "image": self.image.display().to_string(),
            "soft_app": self.soft_app.as_ref().map(|p| p.display().to_string()),
            "isa_profile": self.isa_profile,
        })
    }

    /// Writes `report.json` into `dir`.
    pub fn write_json(&self, dir: &Path) -> Result {
        let json = serde_json::to_string_pretty(&self.to_json()).expect("JSON values serialize");
        let path = dir.join("report.json");
        std::fs::write(&path, json + "\n").map_err(|e| Error::io(&path, e))
    }

    /// The report as a table for the terminal.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "DPA kernels: {} ({DPA_TARGET}, {})",
            self.archive.display(),
            self.profile
        );
        let width = self
            .kernels
            .iter()
            .map(|k| k.symbol.len())
            .max()
            .unwrap_or(0)
            .max("kernel".len());
        let _ = writeln!(
            out,
            "  {:<width$}  {:<6}  {:<4}  {:>10}",
            "kernel", "kind", "lang", "code size"
        );
        for k in &self.kernels {
            let _ = writeln!(
                out,
                "  {:<width$}  {:<6}  {:<4}  {:>8} B",
                k.symbol,
                k.kind,
                k.lang.as_str(),
                k.size
            );
        }
        let _ = writeln!(
            out,
            "  imports ({} DOCA device symbols):",
            self.imports.len()
        );
        for import in &self.imports {
            let _ = writeln!(out, "    {import}");
        }
        let _ = writeln!(out, "DPA image (ISA mode): {}", self.image.display());
        if let Some(lib) = &self.soft_app {
            let _ = writeln!(out, "soft device app library: {}", lib.display());
        }
        if let Some(profile) = &self.isa_profile {
            out.push_str(&crate::profile::table(profile));
        }
        out
    }
}
