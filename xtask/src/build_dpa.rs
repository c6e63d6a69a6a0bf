//! `cargo xtask build-dpa`: cross-compile a kernel crate for the DPA and check what it imports.
//!
//! The kernels are built by a nested cargo with its own target directory and a scrubbed
//! environment (so the outer build's RUSTFLAGS, target dir or wrapper cannot leak in), asked for
//! a staticlib with `cargo rustc --crate-type staticlib`, and found from cargo's JSON messages.
//! The archive is then read member by member: kernel entries come from the `.dpakit.kernels`
//! records that `thread_kernel!`/`rpc_kernel!` (Rust) and `DPAKIT_THREAD_KERNEL`/
//! `DPAKIT_RPC_KERNEL` (C, see [`records`]) leave behind, their sizes from the symbol table,
//! and the imports are the symbols some member needs and no member defines. Every import must
//! be a DOCA device function (`dpakit_dev::sys::DEVICE_API`); anything else — `malloc`, an
//! allocator shim, a libc call — means std, alloc or a C library slipped into a kernel.

use crate::records::{self, Lang};
use crate::setup::{self, DPA_TARGET};
use crate::{Result, dpa_image, nested, soft_exports, workspace_root};
use object::read::archive::ArchiveFile;
use object::{Object, ObjectSection, ObjectSymbol};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Tells `dpa_app!` (through `option_env!`) the DPA image its descriptor names.
const IMAGE_ENV: &str = "DPAKIT_DPA_IMAGE";

/// The section where kernel declarations record `kind:name\0` (Rust) or `kind:name:c\0` (C)
/// on device builds.
const KERNEL_SECTION: &str = ".dpakit.kernels";

/// What to build and where to put it.
#[derive(Debug, Clone)]
pub struct Options {
    /// The kernel crate (a workspace member).
    pub package: String,
    /// Its library name (the archive is `lib<lib_name>.a`).
    pub lib_name: String,
    /// Build with the release profile.
    pub release: bool,
    /// Where the archive and report.json go.
    pub out_dir: PathBuf,
    /// The nested cargo's target directory.
    pub cargo_target_dir: PathBuf,
    /// Also build the soft device's app library: the kernels compiled for the host as a shared
    /// library with the app symbol (the package needs a `soft-app` feature, as `dpakit-kernels`
    /// has), the same shape as the host library dpacc makes.
    pub soft_app: bool,
    /// Also measure instructions per message of each kit kernel in ISA mode (the
    /// `isa_profile` example) into the report.
    pub profile: bool,
}

impl Options {
    /// The kit's own kernels into `target/dpa/<profile>/`.
    pub fn shipped_kernels(release: bool) -> Self {
        let dpa = workspace_root().join("target").join("dpa");
        Options {
            package: "dpakit-kernels".into(),
            lib_name: "dpakit_kernels".into(),
            release,
            out_dir: dpa.join(profile_dir(release)),
            cargo_target_dir: dpa.join("cargo"),
            soft_app: true,
            profile: false,
        }
    }
}

impl Options {
    /// The fixture kernels that misbehave on purpose (`xtask/fixtures/faulty-kernels`), into
    /// `target/dpa/fixtures/release/`: the soft device's ISA-mode fault tests run their image.
    pub fn faulty_fixture() -> Self {
        let dpa = workspace_root().join("target").join("dpa");
        Options {
            package: "dpakit-fixture-faulty-kernels".into(),
            lib_name: "dpakit_fixture_faulty_kernels".into(),
            release: true,
            out_dir: dpa.join("fixtures").join("release"),
            cargo_target_dir: dpa.join("cargo"),
            soft_app: false,
            profile: false,
        }
    }
}

fn profile_dir(release: bool) -> &'static str {
    if release { "release" } else { "debug" }
}

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
            out.push_str(&crate::isa_profile::table(profile));
        }
        out
    }
}

/// Builds the kernel crate for the DPA, checks its imports, writes the archive and
/// `report.json` to `opts.out_dir`.
pub fn build(opts: &Options) -> Result<Report> {
    setup::ensure_dpa_target()?;
    // The C kernels are compiled for the device with clang.
    setup::ensure_debian_packages(&[("clang", "clang")])?;
    let built = cargo_build(opts)?;
    let analysis = analyze_archive(
        &std::fs::read(&built).map_err(|e| format!("cannot read {}: {e}", built.display()))?,
    )?;
    analysis.check_imports(dpakit_dev::sys::DEVICE_API)?;
    if analysis.kernels.is_empty() {
        return Err(format!(
            "{} declares no kernels: declare them with dpakit_dev::thread_kernel! or rpc_kernel!",
            opts.package
        ));
    }

    std::fs::create_dir_all(&opts.out_dir)
        .map_err(|e| format!("cannot create {}: {e}", opts.out_dir.display()))?;
    let archive = opts.out_dir.join(format!("lib{}.a", opts.lib_name));
    std::fs::copy(&built, &archive).map_err(|e| {
        format!(
            "cannot copy {} to {}: {e}",
            built.display(),
            archive.display()
        )
    })?;
    let entries: Vec<&str> = analysis.kernels.iter().map(|k| k.symbol.as_str()).collect();
    let image = dpa_image::link(&archive, &entries, &opts.out_dir, &opts.lib_name)?;
    let soft_app = if opts.soft_app {
        Some(build_soft_app(opts, &analysis.kernels, &image)?)
    } else {
        None
    };
    let report = Report {
        archive,
        profile: profile_dir(opts.release),
        kernels: analysis.kernels,
        imports: analysis.imports.into_iter().collect(),
        isa_profile: None,
        image,
        soft_app,
    };
    let mut report = report;
    if opts.profile {
        report.isa_profile = Some(crate::isa_profile::measure(&report.image)?);
    }
    let json = serde_json::to_string_pretty(&report.to_json()).expect("JSON values serialize");
    let report_path = opts.out_dir.join("report.json");
    std::fs::write(&report_path, json + "\n")
        .map_err(|e| format!("cannot write {}: {e}", report_path.display()))?;
    Ok(report)
}

/// Runs the nested cargo and returns the staticlib it produced. One LTO'd object per archive:
/// the kernels, the wrappers they call and `core` merge into one unit, so the symbol sizes are
/// the real code sizes and dead code is gone. Device code never unwinds.
fn cargo_build(opts: &Options) -> Result<PathBuf> {
    nested::Build {
        package: &opts.package,
        lib_name: &opts.lib_name,
        crate_type: "staticlib",
        target: Some(DPA_TARGET),
        release: opts.release,
        features: &[],
        target_dir: &opts.cargo_target_dir,
        profile: &[("LTO", "fat"), ("CODEGEN_UNITS", "1"), ("PANIC", "abort")],
        env: &[],
    }
    .run()
}

/// Builds the soft device's app library into `<out_dir>/soft/lib<lib_name>.so`: the kernels
/// compiled for the host without std (as on the device, a panic finishes the thread), exporting
/// each kernel under its own name and the app symbol, and importing the DOCA device functions,
/// which the soft device's `libdoca_dpa.so` provides. C kernels are exported too (see
/// [`soft_exports`]), and the library must export every kernel the device archive records. The
/// app descriptor names `image`, which the soft device's ISA mode runs.
fn build_soft_app(opts: &Options, kernels: &[Kernel], image: &std::path::Path) -> Result<PathBuf> {
    let c_kernels: Vec<&str> = kernels
        .iter()
        .filter(|k| k.lang == Lang::C)
        .map(|k| k.symbol.as_str())
        .collect();
    let target_dir = opts.cargo_target_dir.with_file_name("soft-cargo");
    let rustc_args = soft_exports::rustc_args(&target_dir, &c_kernels)?;
    let built = nested::Build {
        package: &opts.package,
        lib_name: &opts.lib_name,
        crate_type: "cdylib",
        target: None,
        release: opts.release,
        features: &["soft-app"],
        target_dir: &target_dir,
        profile: &[("PANIC", "abort")],
        env: &[(IMAGE_ENV, image.as_os_str())],
    }
    .run_with(&rustc_args)?;
    let lib = opts
        .out_dir
        .join("soft")
        .join(format!("lib{}.so", opts.lib_name));
    nested::copy(&built, &lib)?;
    let symbols: Vec<&str> = kernels.iter().map(|k| k.symbol.as_str()).collect();
    soft_exports::check_exported(&lib, &symbols)?;
    Ok(lib)
}

/// What an archive defines, needs and declares.
#[derive(Debug, Default)]
pub struct Analysis {
    /// Kernel entries recorded in `.dpakit.kernels`, with their sizes.
    pub kernels: Vec<Kernel>,
    /// Symbols needed by some member and defined by none.
    pub imports: BTreeSet<String>,
    /// For each import, the first member that needs it (for error messages).
    pub importers: BTreeMap<String, String>,
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
            "kernels may call only the DOCA device functions declared in dpakit_dev::sys; an \
             import like this usually means std, alloc or a C library slipped into the kernel \
             build",
        );
        Err(msg)
    }
}

/// Reads a static archive of ELF objects.
pub fn analyze_archive(data: &[u8]) -> Result<Analysis> {
    let archive = ArchiveFile::parse(data).map_err(|e| format!("not a static archive: {e}"))?;
    let mut defined: BTreeMap<String, u64> = BTreeMap::new();
    let mut undefined: BTreeMap<String, String> = BTreeMap::new();
    let mut records: Vec<records::Record> = Vec::new();

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
    }

    let mut analysis = Analysis::default();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn test_dir(name: &str) -> PathBuf {
        workspace_root()
            .join("target")
            .join("dpa")
            .join("xtask-tests")
            .join(name)
    }

    #[test]
    fn shipped_kernels_import_only_the_device_api() {
        let mut opts = Options::shipped_kernels(true);
        opts.out_dir = test_dir("shipped");
        let report = build(&opts).expect("the shipped kernels build for the DPA");

        // Kernels in both languages, each recorded with its own.
        for (symbol, lang) in [
            ("echo", Lang::Rust),
            ("dma_offload", Lang::Rust),
            ("echo_c", Lang::C),
            ("dma_offload_c", Lang::C),
        ] {
            let kernel = report
                .kernels
                .iter()
                .find(|k| k.symbol == symbol)
                .unwrap_or_else(|| panic!("{symbol} is exported"));
            assert_eq!((kernel.kind.as_str(), kernel.lang), ("thread", lang));
            assert!(kernel.size > 0, "{symbol}");
        }
        assert!(
            report
                .kernels
                .iter()
                .any(|k| k.symbol == "dpakit_consumer_ack" && k.kind == "rpc")
        );
        for needed in [
            "doca_dpa_dev_comch_consumer_get_completion",
            "doca_dpa_dev_comch_consumer_ack",
            "doca_dpa_dev_comch_producer_post_send_imm_only",
        ] {
            assert!(
                report.imports.iter().any(|i| i == needed),
                "echo must import {needed}"
            );
        }

        let written: Value = serde_json::from_str(
            &std::fs::read_to_string(opts.out_dir.join("report.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(written["target"], DPA_TARGET);
        let kernels = written["kernels"].as_array().unwrap();
        assert_eq!(kernels.len(), report.kernels.len());
        let lang_of = |symbol: &str| {
            kernels
                .iter()
                .find(|k| k["symbol"] == symbol)
                .map(|k| k["lang"].clone())
        };
        assert_eq!(lang_of("echo"), Some(json!("rust")));
        assert_eq!(lang_of("dma_offload_c"), Some(json!("c")));
        assert!(opts.out_dir.join("libdpakit_kernels.a").is_file());
        let table = report.table();
        assert!(table.contains("lang"), "{table}");
        assert!(
            table.lines().any(|l| l
                .split_whitespace()
                .collect::<Vec<_>>()
                .starts_with(&["echo_c", "thread", "c"])),
            "{table}"
        );
        assert!(
            report.soft_app.as_ref().is_some_and(|lib| lib.is_file()),
            "the soft device's app library is built beside the device archive"
        );
    }

    #[test]
    fn kernels_importing_malloc_or_printf_are_refused() {
        let opts = Options {
            package: "dpakit-fixture-bad-kernel".into(),
            lib_name: "dpakit_fixture_bad_kernel".into(),
            release: true,
            out_dir: test_dir("bad-kernel"),
            cargo_target_dir: test_dir("bad-kernel-cargo"),
            soft_app: false,
            profile: false,
        };
        let err = build(&opts).expect_err("malloc is not part of the DOCA device API");
        assert!(err.contains("outside the known DOCA device API"), "{err}");
        assert!(err.contains("malloc"), "{err}");
        // The C kernel beside it calls printf: the same check names it and its object.
        let printf = err
            .lines()
            .find(|l| l.trim_start().starts_with("printf "))
            .unwrap_or_else(|| panic!("printf is refused too: {err}"));
        assert!(printf.contains("leaky_c.o)"), "{printf}");
        assert!(
            !opts.out_dir.join("report.json").exists(),
            "a refused build writes no report"
        );
    }

    #[test]
    fn imports_check_names_each_offender() {
        let mut analysis = Analysis::default();
        for (symbol, member) in [("doca_dpa_dev_log", "a.o"), ("__rust_alloc", "b.o")] {
            analysis.imports.insert(symbol.into());
            analysis.importers.insert(symbol.into(), member.into());
        }
        let err = analysis
            .check_imports(dpakit_dev::sys::DEVICE_API)
            .unwrap_err();
        assert!(err.contains("__rust_alloc  (needed by b.o)"), "{err}");
        assert!(!err.contains("doca_dpa_dev_log "), "{err}");
        analysis.imports.remove("__rust_alloc");
        assert!(analysis.check_imports(dpakit_dev::sys::DEVICE_API).is_ok());
    }
}
