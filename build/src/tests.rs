//! Builds of the kit's own kernel packages, and of a fixture whose kernels import what no DOCA
//! device library has.

use super::*;
use crate::archive::Analysis;
use serde_json::{Value, json};

/// The kit's workspace, whose kernel packages these tests build.
pub(crate) fn kit_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("dpakit-build lives inside the kit's workspace")
        .to_path_buf()
}

/// A fresh directory for one test's files, under the kit's target directory.
pub(crate) fn scratch_dir(name: &str) -> PathBuf {
    let dir = test_dir(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn test_dir(name: &str) -> PathBuf {
    kit_root()
        .join("target")
        .join("dpa")
        .join("build-tests")
        .join(name)
}

/// The kit's own kernels, built in release into a test directory.
pub(crate) fn kit_kernels(out: &Path) -> Kernels {
    Kernels::new("dpakit-kernels")
        .workspace(kit_root())
        .release(true)
        .out_dir(out)
}

#[test]
fn shipped_kernels_import_only_the_device_api() {
    let out_dir = test_dir("shipped");
    let report = kit_kernels(&out_dir)
        .build()
        .expect("the shipped kernels build for the DPA");

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

    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap())
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
    assert!(out_dir.join("libdpakit_kernels.a").is_file());
    assert_eq!(written["package"], "dpakit-kernels");
    assert_eq!(written["lib_name"], "dpakit_kernels");
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
    let out_dir = test_dir("bad-kernel");
    let err = Kernels::new("dpakit-fixture-bad-kernel")
        .workspace(kit_root())
        .release(true)
        .out_dir(&out_dir)
        .cargo_target_dir(test_dir("bad-kernel-cargo"))
        .build()
        .expect_err("malloc is not part of the DOCA device API");
    assert_eq!(err.kind(), ErrorKind::Imports);
    let err = err.to_string();
    assert!(err.contains("outside the known DOCA device API"), "{err}");
    assert!(err.contains("malloc"), "{err}");
    // The C kernel beside it calls printf: the same check names it and its object.
    let printf = err
        .lines()
        .find(|l| l.trim_start().starts_with("printf "))
        .unwrap_or_else(|| panic!("printf is refused too: {err}"));
    assert!(printf.contains("leaky_c.o)"), "{printf}");
    assert!(
        !out_dir.join("report.json").exists(),
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
        .check_imports(dpakit_abi::device::DEVICE_API)
        .unwrap_err();
    assert!(err.contains("__rust_alloc  (needed by b.o)"), "{err}");
    assert!(!err.contains("doca_dpa_dev_log "), "{err}");
    analysis.imports.remove("__rust_alloc");
    assert!(
        analysis
            .check_imports(dpakit_abi::device::DEVICE_API)
            .is_ok()
    );
}
