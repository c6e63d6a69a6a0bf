//! `cargo xtask api [--bless]`: the public API of the kit's published crates as text, checked
//! against `api/<crate>.txt` so a change to the surface is a deliberate one (the diff shows it).
//!
//! The listing comes from rustdoc's JSON output (nightly): every public item reachable from the
//! crate root — modules, types, traits, functions with their signatures, fields, variants,
//! constants, inherent and trait methods — one line each, sorted. A re-export of another crate's
//! item is listed as the `pub use` it is; that crate's own listing has the item.

use crate::{Result, setup, workspace_root};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

/// The crates whose surface is guarded: the facade and what it re-exports.
pub const CRATES: &[&str] = &[
    "dpakit",
    "dpakit-host",
    "dpakit-abi",
    "dpakit-dev",
    "dpakit-build",
];

/// Lists each crate's API and compares it with `api/<crate>.txt`; `bless` writes the files.
pub fn run(bless: bool) -> Result {
    setup::ensure_nightly_component("rustc")?;
    let dir = workspace_root().join("api");
    let mut changed = Vec::new();
    for krate in CRATES {
        let listing = listing(krate)?;
        let path = dir.join(format!("{krate}.txt"));
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        if old == listing {
            continue;
        }
        if bless {
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            std::fs::write(&path, &listing)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            eprintln!("api: wrote {}", path.display());
        } else {
            changed.push(diff(krate, &old, &listing));
        }
    }
    if changed.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the public API changed:\n{}\nif that is meant, run `cargo xtask api --bless` and commit \
         api/",
        changed.join("\n")
    ))
}

/// The lines only one side has.
fn diff(krate: &str, old: &str, new: &str) -> String {
    let (old, new): (BTreeSet<&str>, BTreeSet<&str>) =
        (old.lines().collect(), new.lines().collect());
    let mut out = format!("{krate}:\n");
    for line in old.difference(&new) {
        out.push_str(&format!("  - {line}\n"));
    }
    for line in new.difference(&old) {
        out.push_str(&format!("  + {line}\n"));
    }
    out
}

/// Crates whose optional features add public API: the listing is made with them on.
const FEATURES: &[(&str, &str)] = &[("dpakit", "tokio"), ("dpakit-host", "tokio")];

/// rustdoc's JSON of `krate`'s library, made with nightly in its own target directory.
fn rustdoc_json(krate: &str) -> Result<Value> {
    let target = workspace_root().join("target").join("api");
    let features = FEATURES
        .iter()
        .filter(|(k, _)| *k == krate)
        .flat_map(|(_, f)| ["--features", f]);
    let status = Command::new("cargo")
        .args(["+nightly", "rustdoc", "-q", "-p", krate, "--lib"])
        .args(features)
        .arg("--")
        .args(["-Z", "unstable-options", "--output-format", "json"])
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(workspace_root())
        .status()
        .map_err(|e| format!("cannot run cargo +nightly rustdoc: {e}"))?;
    if !status.success() {
        return Err(format!("rustdoc's JSON of {krate} failed ({status})"));
    }
    let path: PathBuf = target
        .join("doc")
        .join(format!("{}.json", krate.replace('-', "_")));
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The sorted listing of `krate`'s public API.
pub fn listing(krate: &str) -> Result<String> {
    let doc = rustdoc_json(krate)?;
    let mut lines = BTreeSet::new();
    let root = id_key(&doc["root"]);
    let name = krate.replace('-', "_");
    walk(&doc, &root, &name, &mut lines, &mut BTreeSet::new());
    Ok(lines.into_iter().map(|l| l + "\n").collect())
}

fn id_key(id: &Value) -> String {
    match id {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        _ => String::new(),
    }
}

fn item<'a>(doc: &'a Value, id: &str) -> Option<&'a Value> {
    doc["index"].get(id)
}

/// Lists the public item `id` at `path` and what it contains.
fn walk(
    doc: &Value,
    id: &str,
    path: &str,
    out: &mut BTreeSet<String>,
    seen: &mut BTreeSet<String>,
) {
    if !seen.insert(format!("{id}@{path}")) {
        return;
    }
    let Some(it) = item(doc, id) else { return };
    if it["visibility"] != "public" && path.contains("::") {
        return;
    }
    let inner = &it["inner"];
    let Some((kind, body)) = inner.as_object().and_then(|o| o.iter().next()) else {
        return;
    };
    match kind.as_str() {
        "module" => {
            out.insert(format!("mod {path}"));
            for child in body["items"].as_array().into_iter().flatten() {
                let key = id_key(child);
                let child_name = item(doc, &key)
                    .and_then(|c| c["name"].as_str())
                    .unwrap_or("");
                walk(doc, &key, &format!("{path}::{child_name}"), out, seen);
            }
        }
        "use" => {
            let target = id_key(&body["id"]);
            let glob = body["is_glob"].as_bool().unwrap_or(false);
            let source = body["source"].as_str().unwrap_or("?");
            let local = !target.is_empty() && item(doc, &target).is_some();
            let parent = path.rsplit_once("::").map_or(path, |(p, _)| p);
            match (local, glob) {
                (true, true) => {
                    if let Some(module) = item(doc, &target) {
                        for child in module["inner"]["module"]["items"]
                            .as_array()
                            .into_iter()
                            .flatten()
                        {
                            let key = id_key(child);
                            let n = item(doc, &key)
                                .and_then(|c| c["name"].as_str())
                                .unwrap_or("");
                            walk(doc, &key, &format!("{parent}::{n}"), out, seen);
                        }
                    }
                }
                (true, false) => {
                    let n = body["name"].as_str().unwrap_or("");
                    walk(doc, &target, &format!("{parent}::{n}"), out, seen);
                }
                (false, true) => {
                    out.insert(format!("pub use {parent}::* = {source}::*"));
                }
                (false, false) => {
                    let n = body["name"].as_str().unwrap_or("_");
                    out.insert(format!("pub use {parent}::{n} = {source}"));
                }
            }
        }
        "function" => {
            out.insert(format!("fn {path}{}", signature(body)));
        }
        "struct" | "union" => {
            out.insert(format!("{kind} {path}"));
            let fields = body["kind"]["plain"]["fields"]
                .as_array()
                .or_else(|| body["kind"]["tuple"].as_array())
                .or_else(|| body["fields"].as_array());
            for (i, f) in fields.into_iter().flatten().enumerate() {
                let key = id_key(f);
                if let Some(field) = item(doc, &key).filter(|f| f["visibility"] == "public") {
                    let name = field["name"].as_str().map_or(i.to_string(), str::to_string);
                    out.insert(format!(
                        "field {path}::{name}: {}",
                        ty(&field["inner"]["struct_field"])
                    ));
                }
            }
            impls(doc, body, path, out, seen);
        }
        "enum" => {
            out.insert(format!("enum {path}"));
            for v in body["variants"].as_array().into_iter().flatten() {
                let key = id_key(v);
                if let Some(n) = item(doc, &key).and_then(|v| v["name"].as_str()) {
                    out.insert(format!("variant {path}::{n}"));
                }
            }
            impls(doc, body, path, out, seen);
        }
        "trait" => {
            out.insert(format!("trait {path}"));
            for m in body["items"].as_array().into_iter().flatten() {
                let key = id_key(m);
                if let Some(member) = item(doc, &key) {
                    let n = member["name"].as_str().unwrap_or("");
                    walk(doc, &key, &format!("{path}::{n}"), out, seen);
                }
            }
        }
        "constant" => {
            out.insert(format!("const {path}: {}", ty(&body["type"])));
        }
        "static" => {
            out.insert(format!("static {path}: {}", ty(&body["type"])));
        }
        "type_alias" => {
            out.insert(format!("type {path} = {}", ty(&body["type"])));
        }
        "macro" | "proc_macro" => {
            out.insert(format!("macro {path}!"));
        }
        "assoc_const" => {
            out.insert(format!("const {path}: {}", ty(&body["type"])));
        }
        "assoc_type" => {
            out.insert(format!("type {path}"));
        }
        other => {
            out.insert(format!("{other} {path}"));
        }
    }
}

/// The public methods of a type's inherent impls, and the traits it implements (not the
/// blanket and auto-trait impls every type gets).
fn impls(
    doc: &Value,
    body: &Value,
    path: &str,
    out: &mut BTreeSet<String>,
    seen: &mut BTreeSet<String>,
) {
    for imp in body["impls"].as_array().into_iter().flatten() {
        let key = id_key(imp);
        let Some(imp) = item(doc, &key) else { continue };
        let imp = &imp["inner"]["impl"];
        if imp["is_synthetic"].as_bool().unwrap_or(false) || !imp["blanket_impl"].is_null() {
            continue;
        }
        match imp["trait"].as_object() {
            Some(t) => {
                let name = t.get("path").and_then(Value::as_str).unwrap_or("?");
                out.insert(format!("impl {name} for {path}"));
            }
            None => {
                for m in imp["items"].as_array().into_iter().flatten() {
                    let key = id_key(m);
                    if let Some(member) = item(doc, &key).filter(|m| m["visibility"] == "public") {
                        let n = member["name"].as_str().unwrap_or("");
                        walk(doc, &key, &format!("{path}::{n}"), out, seen);
                    }
                }
            }
        }
    }
}

/// `(name: Type, …) -> Type`.
fn signature(f: &Value) -> String {
    let sig = &f["sig"];
    let inputs: Vec<String> = sig["inputs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| format!("{}: {}", p[0].as_str().unwrap_or("_"), ty(&p[1])))
        .collect();
    let output = if sig["output"].is_null() {
        String::new()
    } else {
        format!(" -> {}", ty(&sig["output"]))
    };
    let unsafety = if f["header"]["is_unsafe"].as_bool().unwrap_or(false) {
        " unsafe"
    } else {
        ""
    };
    format!("({}){output}{unsafety}", inputs.join(", "))
}

/// A type as source text (coarse for the rarer forms).
fn ty(t: &Value) -> String {
    let Some((kind, v)) = t.as_object().and_then(|o| o.iter().next()) else {
        return "_".into();
    };
    match kind.as_str() {
        "primitive" | "generic" => v.as_str().unwrap_or("_").to_string(),
        "resolved_path" => {
            let name = v["path"].as_str().unwrap_or("_");
            let args = v["args"]["angle_bracketed"]["args"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|x| match x.get("type") {
                            Some(t) => ty(t),
                            None => x["lifetime"].as_str().unwrap_or("_").to_string(),
                        })
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            if args.is_empty() {
                name.to_string()
            } else {
                format!("{name}<{}>", args.join(", "))
            }
        }
        "borrowed_ref" => format!(
            "&{}{}",
            if v["is_mutable"].as_bool().unwrap_or(false) {
                "mut "
            } else {
                ""
            },
            ty(&v["type"])
        ),
        "raw_pointer" => format!(
            "*{} {}",
            if v["is_mutable"].as_bool().unwrap_or(false) {
                "mut"
            } else {
                "const"
            },
            ty(&v["type"])
        ),
        "slice" => format!("[{}]", ty(v)),
        "array" => format!("[{}; {}]", ty(&v["type"]), v["len"].as_str().unwrap_or("_")),
        "tuple" => {
            let parts: Vec<String> = v.as_array().into_iter().flatten().map(ty).collect();
            format!("({})", parts.join(", "))
        }
        "impl_trait" => {
            let bounds: Vec<String> = v
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| {
                    b["trait_bound"]["trait"]["path"]
                        .as_str()
                        .map(str::to_string)
                })
                .collect();
            format!("impl {}", bounds.join(" + "))
        }
        "dyn_trait" => {
            let traits: Vec<String> = v["traits"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["trait"]["path"].as_str().map(str::to_string))
                .collect();
            format!("dyn {}", traits.join(" + "))
        }
        "qualified_path" => format!(
            "{}::{}",
            ty(&v["self_type"]),
            v["name"].as_str().unwrap_or("_")
        ),
        "function_pointer" => "fn(…)".into(),
        other => other.to_string(),
    }
}
