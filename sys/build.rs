//! Generates the bindings to DOCA's C API and says what to link.
//!
//! * Default (feature `soft`): bindgen over the soft device's own DOCA headers (published by
//!   `dpakit-doca-headers` as `DEP_DPAKIT_DOCA_HEADERS_INCLUDE`, a copy in its `OUT_DIR`); the
//!   soft device (`dpakit-emu`) is a Rust dependency, linked in.
//!   Without libclang on the machine, the checked-in `bindings/soft.rs` (the same generation,
//!   kept current by `cargo xtask test`) stands in, so a plain `cargo run` needs nothing
//!   installed. Also writes `sig_check.rs`: for every function bound, a compile-time check that
//!   the soft device defines it with exactly the declared signature.
//! * Feature `doca`: bindgen over an installed DOCA SDK's headers, found through `DOCA_HOME` or
//!   pkg-config, and links `libdoca_comch`, `libdoca_dpa` and `libdoca_common`.

use std::env;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The DOCA headers the kit binds (Core, Comch MsgQ, DPA host API, sync events, the version,
/// the RDMA and DMA declarations programs' helper files use, the legacy Comm Channel).
const HEADERS: &[&str] = &[
    "doca_error.h",
    "doca_types.h",
    "doca_dev.h",
    "doca_pe.h",
    "doca_ctx.h",
    "doca_mmap.h",
    "doca_buf.h",
    "doca_buf_inventory.h",
    "doca_buf_pool.h",
    "doca_comch.h",
    "doca_comch_msgq.h",
    "doca_comch_consumer.h",
    "doca_comch_producer.h",
    "doca_dpa.h",
    "doca_sync_event.h",
    "doca_version.h",
    "doca_rdma.h",
    "doca_dma.h",
    "doca_comm_channel.h",
];

/// The soft device's own controls, bound in the default configuration only.
const SOFT_HEADER: &str = "dpakit_soft.h";

/// Functions the soft device defines in C (variadic), so the Rust signature check skips them.
const DEFINED_IN_C: &[&str] = &[
    "doca_dpa_rpc",
    "doca_dpa_kernel_launch_update_set",
    "doca_dpa_kernel_launch_update_add",
];

/// The DOCA libraries feature `doca` links, dependents first.
const DOCA_LIBS: &[&str] = &["doca_comch", "doca_dpa", "doca_common"];

/// The pkg-config packages of those libraries.
const DOCA_PACKAGES: &[&str] = &["doca-comch", "doca-dpa", "doca-common"];

fn main() {
    for var in [
        "DOCA_HOME",
        "PKG_CONFIG_PATH",
        "DPAKIT_SYS_WRITE_FALLBACK",
        "DPAKIT_SYS_CHECK_FALLBACK",
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let result = if env::var_os("CARGO_FEATURE_DOCA").is_some() {
        installed_sdk(&out)
    } else {
        soft_device(&out)
    };
    if let Err(message) = result {
        println!("cargo::error={message}");
    }
}

/// The default configuration: the soft device's headers, linked as a Rust dependency.
fn soft_device(out: &Path) -> Result<(), String> {
    let include = PathBuf::from(env::var("DEP_DPAKIT_DOCA_HEADERS_INCLUDE").map_err(|_| {
        "dpakit-doca-headers did not publish its include directory \
         (DEP_DPAKIT_DOCA_HEADERS_INCLUDE): build with the default feature `soft`, or enable \
         `doca` to bind an installed DOCA SDK"
            .to_string()
    })?);
    // Every header by the path read, so a published directory that is gone or replaced runs
    // this script again rather than leaving bindings of other headers in place.
    println!("cargo::rerun-if-changed={}", include.display());
    for header in headers_in(&include)? {
        println!("cargo::rerun-if-changed={}", header.display());
    }
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let fallback = manifest.join("bindings/soft.rs");
    println!("cargo::rerun-if-changed={}", fallback.display());
    let mut headers: Vec<&str> = HEADERS.to_vec();
    headers.push(SOFT_HEADER);
    let text = match generate(&[include], &headers) {
        Ok(text) => {
            if env::var_os("DPAKIT_SYS_WRITE_FALLBACK").is_some() {
                std::fs::write(&fallback, &text)
                    .map_err(|e| format!("cannot write {}: {e}", fallback.display()))?;
            }
            if env::var_os("DPAKIT_SYS_CHECK_FALLBACK").is_some() {
                let committed = std::fs::read_to_string(&fallback).unwrap_or_default();
                if committed != text {
                    return Err(format!(
                        "{} is not what bindgen generates from the soft device's headers: \
                         regenerate it with `DPAKIT_SYS_WRITE_FALLBACK=1 cargo build -p \
                         dpakit-sys` and commit it",
                        fallback.display()
                    ));
                }
            }
            text
        }
        Err(GenerateError::NoLibclang(why)) => {
            println!(
                "cargo::warning=libclang not found ({why}); using the checked-in bindings of the \
                 soft device's headers (install libclang-dev to generate them)"
            );
            std::fs::read_to_string(&fallback)
                .map_err(|e| format!("cannot read {}: {e}", fallback.display()))?
        }
        Err(GenerateError::Failed(why)) => return Err(why),
    };
    write(&out.join("bindings.rs"), &text)?;
    write(&out.join("sig_check.rs"), &signature_checks(&text))
}

/// The headers in `dir` (they include one another, so all of them are inputs).
fn headers_in(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let unreadable = |e: std::io::Error| {
        format!(
            "cannot read the soft device's headers in {} (published by dpakit-doca-headers): {e}",
            dir.display()
        )
    };
    let mut headers = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let path = entry.map_err(unreadable)?.path();
        if path.extension().is_some_and(|e| e == "h") {
            headers.push(path);
        }
    }
    headers.sort();
    Ok(headers)
}

/// Feature `doca`: an installed SDK's headers and libraries.
fn installed_sdk(out: &Path) -> Result<(), String> {
    let sdk = find_sdk()?;
    for dir in &sdk.lib_dirs {
        println!("cargo::rustc-link-search=native={}", dir.display());
    }
    if let Some(dir) = sdk.lib_dirs.first() {
        println!("cargo::metadata=libdir={}", dir.display());
    }
    for lib in DOCA_LIBS {
        println!("cargo::rustc-link-lib=dylib={lib}");
    }
    let text = generate(&sdk.include_dirs, HEADERS).map_err(|e| match e {
        GenerateError::NoLibclang(why) => format!(
            "feature `doca` binds the installed DOCA SDK's headers with bindgen, which needs \
             libclang ({why}): install it (Debian: apt-get install libclang-dev)"
        ),
        GenerateError::Failed(why) => why,
    })?;
    write(&out.join("bindings.rs"), &text)?;
    write(&out.join("sig_check.rs"), "")
}

struct Sdk {
    include_dirs: Vec<PathBuf>,
    lib_dirs: Vec<PathBuf>,
}

/// `DOCA_HOME` first (an SDK prefix: `include/`, `lib/` or `lib/<triple>/`), then pkg-config.
fn find_sdk() -> Result<Sdk, String> {
    if let Some(home) = env::var_os("DOCA_HOME").map(PathBuf::from) {
        let include = home.join("include");
        if !include.join("doca_dpa.h").exists() {
            return Err(format!(
                "DOCA_HOME={} has no include/doca_dpa.h: point it at a DOCA SDK prefix \
                 (e.g. /opt/mellanox/doca)",
                home.display()
            ));
        }
        let triple = format!(
            "{}-linux-gnu",
            env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default()
        );
        let lib_dirs = [
            home.join("lib").join(triple),
            home.join("lib"),
            home.join("lib64"),
        ]
        .into_iter()
        .filter(|d| DOCA_LIBS.iter().all(|l| has_lib(d, l)))
        .take(1)
        .collect::<Vec<_>>();
        if lib_dirs.is_empty() {
            return Err(format!(
                "DOCA_HOME={} has no lib/ with libdoca_comch, libdoca_dpa and libdoca_common",
                home.display()
            ));
        }
        return Ok(Sdk {
            include_dirs: vec![include],
            lib_dirs,
        });
    }
    let output = Command::new("pkg-config")
        .args(["--cflags", "--libs"])
        .args(DOCA_PACKAGES)
        .output();
    match output {
        Ok(o) if o.status.success() => {
            let flags = String::from_utf8_lossy(&o.stdout).into_owned();
            let mut sdk = Sdk {
                include_dirs: Vec::new(),
                lib_dirs: Vec::new(),
            };
            for flag in flags.split_whitespace() {
                if let Some(dir) = flag.strip_prefix("-I") {
                    sdk.include_dirs.push(dir.into());
                } else if let Some(dir) = flag.strip_prefix("-L") {
                    sdk.lib_dirs.push(dir.into());
                }
            }
            Ok(sdk)
        }
        _ => Err(format!(
            "feature `doca` needs an installed DOCA SDK, and none was found: install DOCA \
             (doca-sdk-comch, doca-sdk-dpa and doca-sdk-common, under /opt/mellanox/doca) and \
             set DOCA_HOME to its prefix or make `pkg-config {}` find it (PKG_CONFIG_PATH). \
             Without a BlueField, `cargo xtask soft-sdk` lays the soft device out as an SDK \
             under target/soft-doca",
            DOCA_PACKAGES.join(" ")
        )),
    }
}

fn has_lib(dir: &Path, lib: &str) -> bool {
    dir.join(format!("lib{lib}.so")).exists() || dir.join(format!("lib{lib}.a")).exists()
}

enum GenerateError {
    /// libclang could not be loaded.
    NoLibclang(String),
    /// It was, and generation failed.
    Failed(String),
}

fn generate(include_dirs: &[PathBuf], headers: &[&str]) -> Result<String, GenerateError> {
    let mut wrapper = String::new();
    for header in headers {
        let _ = writeln!(wrapper, "#include <{header}>");
    }
    let mut builder =
        bindgen::Builder::default()
            .header_contents("dpakit_sys_wrapper.h", &wrapper)
            .clang_arg("-DDOCA_ALLOW_EXPERIMENTAL_API")
            .allowlist_function("doca_.*|dpakit_soft_.*")
            .allowlist_type("doca_.*|dpakit_soft_.*")
            .allowlist_var("DOCA_.*|DPAKIT_SOFT_.*")
            .blocklist_function("dpakit_soft_internal_.*")
            .default_enum_style(bindgen::EnumVariation::Consts)
            .prepend_enum_name(false)
            .rust_edition(bindgen::RustEdition::Edition2024)
            .rust_target(bindgen::RustTarget::stable(85, 0).map_err(|e| {
                GenerateError::Failed(format!("bindgen does not know Rust 1.85: {e}"))
            })?)
            .use_core()
            .generate_comments(false)
            .layout_tests(true)
            .derive_default(true);
    for dir in include_dirs {
        builder = builder.clang_arg(format!("-I{}", dir.display()));
    }
    if let Err(e) = clang_sys_load() {
        return Err(GenerateError::NoLibclang(e));
    }
    builder
        .generate()
        .map(|b| b.to_string())
        .map_err(|e| GenerateError::Failed(format!("bindgen failed on the DOCA headers: {e}")))
}

/// Whether libclang can be loaded (bindgen panics when it cannot).
fn clang_sys_load() -> Result<(), String> {
    std::panic::catch_unwind(bindgen::clang_version)
        .map(drop)
        .map_err(|_| "no libclang shared library could be loaded".to_string())
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// For every `pub fn` the bindings declare, a const that only compiles if the soft device
/// defines a function of that name with exactly that type:
/// `const _: unsafe extern "C" fn(*mut doca_pe) -> u8 = ::dpakit_emu::capi::doca_pe_progress;`
fn signature_checks(bindings: &str) -> String {
    let mut out = String::new();
    let mut rest = bindings;
    while let Some(at) = rest.find("pub fn ") {
        rest = &rest[at + "pub fn ".len()..];
        let Some(open) = rest.find('(') else { break };
        let name = rest[..open].trim().to_string();
        let Some(close) = matching_paren(&rest[open..]).map(|c| open + c) else {
            break;
        };
        let params = &rest[open + 1..close];
        let Some(semi) = rest[close..].find(';').map(|s| close + s) else {
            break;
        };
        let ret = rest[close + 1..semi].trim();
        rest = &rest[semi..];
        if DEFINED_IN_C.contains(&name.as_str()) {
            continue;
        }
        let types: Vec<String> = split_top_level(params)
            .into_iter()
            .filter(|p| !p.trim().is_empty())
            .map(|p| match p.split_once(':') {
                Some((_, ty)) => ty.trim().to_string(),
                None => p.trim().to_string(),
            })
            .collect();
        let _ = writeln!(
            out,
            "const _: unsafe extern \"C\" fn({}) {} = ::dpakit_emu::capi::{name};",
            types.join(", "),
            ret
        );
    }
    out
}

/// The offset of the `)` closing the `(` that `s` starts with.
fn matching_paren(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Splits a parameter list at the commas outside any brackets.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start, mut prev) = (0i32, 0, ' ');
    for (i, c) in s.char_indices() {
        let arrow = prev == '-' && c == '>';
        prev = c;
        match c {
            '(' | '<' | '[' => depth += 1,
            '>' if arrow => {}
            ')' | '>' | ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}
