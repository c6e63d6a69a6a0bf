//! `cargo xtask modules [CRATE_DIR...]`: the module dependency graph of the workspace's crates,
//! and every circle in it.
//!
//! A module is a file (`lib.rs`, `a.rs`, `a/mod.rs`, `a/b.rs`); inline modules are part of their
//! file. Module A depends on module B when A names an item B defines, in a `use` or inline, by
//! any path the compiler would follow:
//!
//! - from `crate::`, `self::` or `super::`, or from a child module's name (`calls::serve`);
//! - through a name a `use` brought in, renamed or not, grouped or not: `use super::api as a;`
//!   then `a::f()`, `use crate::dpa::{self as d}` then `d::thread::X`;
//! - through re-exports: `crate::dpa::Thread`, where `dpa` has `pub use thread::Thread;`, is
//!   `crate::dpa::thread`'s, and one re-exported from another crate is nobody's here (globs are
//!   followed for the names their module defines).
//!
//! A module naming its ancestors' items does not count (children use what their parent shares,
//! a parent re-exports its children); naming a descendant's does (a parent that calls into its
//! child needs what the child needs). Test code (modules `tests`, `*_tests`, and `#[cfg(test)]`
//! items) is left out. The graph's strongly connected components of more than one module are the
//! circles: modules that need each other, directly or around a loop, which no layering can
//! order.

use crate::{Result, workspace_root};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates looked at by default: every workspace member (`.` is `dpakit` itself).
const CRATES: &[&str] = &[
    ".",
    "doca-headers",
    "shared-abi",
    "dpa-dev",
    "dpa-kernels",
    "rv",
    "sync",
    "wire",
    "dpa-runtime",
    "model",
    "emu",
    "sys",
    "host",
    "build",
    "xtask",
];

/// The package name in `dir/Cargo.toml`, else the folder's name.
fn package_name(dir: &Path) -> String {
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
    manifest
        .lines()
        .find_map(|line| {
            let value = line.trim().strip_prefix("name")?.trim().strip_prefix('=')?;
            Some(value.trim().trim_matches('"').to_string())
        })
        .unwrap_or_else(|| dir.display().to_string())
}

/// One crate's modules and the dependencies between them.
#[derive(Debug, Default)]
pub struct Graph {
    /// Module path (`crate::a::b`) → the modules it depends on.
    pub edges: BTreeMap<String, BTreeSet<String>>,
}

/// Prints each crate's circles; fails if there is one (with `strict`).
pub fn run(dirs: &[String], strict: bool, edges: bool) -> Result {
    let dirs: Vec<PathBuf> = if dirs.is_empty() {
        CRATES.iter().map(|c| workspace_root().join(c)).collect()
    } else {
        dirs.iter().map(PathBuf::from).collect()
    };
    let mut total = 0;
    for dir in &dirs {
        let graph = Graph::of_crate(&dir.join("src"))?;
        let circles = graph.circles();
        let name = package_name(dir);
        println!(
            "{name}: {} modules, {} dependencies, {} circle(s)",
            graph.edges.len(),
            graph.edges.values().map(BTreeSet::len).sum::<usize>(),
            circles.len()
        );
        for circle in &circles {
            println!("  circle of {}: {}", circle.len(), circle.join(" ↔ "));
            if let Some(path) = graph.cycle_through(circle) {
                println!("    e.g. {}", path.join(" → "));
            }
            if edges {
                let inside: BTreeSet<&String> = circle.iter().collect();
                for from in circle {
                    let to: Vec<&str> = graph.edges[from]
                        .iter()
                        .filter(|t| inside.contains(t))
                        .map(String::as_str)
                        .collect();
                    println!("    {from} → {}", to.join(", "));
                }
            }
        }
        total += circles.len();
    }
    if strict && total > 0 {
        return Err(format!("{total} module circle(s): see above"));
    }
    Ok(())
}

impl Graph {
    /// The graph of the crate whose sources are in `src` (`src/lib.rs` is `crate`).
    pub fn of_crate(src: &Path) -> Result<Graph> {
        let mut files = Vec::new();
        collect(src, &mut files)?;
        let mut sources = BTreeMap::new();
        for file in files {
            let Some(module) = module_path(src, &file) else {
                continue;
            };
            if is_test_module(&module) {
                continue;
            }
            let text = std::fs::read_to_string(&file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            sources.insert(module, text);
        }
        Ok(Graph::of_sources(&sources))
    }

    /// The graph of modules given by path (`crate::a`) and source text.
    pub fn of_sources(sources: &BTreeMap<String, String>) -> Graph {
        let crate_ = Crate {
            modules: sources
                .iter()
                .map(|(module, text)| (module.clone(), ModuleText::parse(module, text)))
                .collect(),
        };
        let mut graph = Graph::default();
        for (module, text) in &crate_.modules {
            let deps = text
                .paths
                .iter()
                .filter_map(|path| crate_.absolute(path, 0))
                .filter_map(|absolute| crate_.locate(&absolute, 0))
                .filter(|target| !inside(module, target))
                .collect();
            graph.edges.insert(module.clone(), deps);
        }
        graph
    }
    /// The strongly connected components of more than one module, each sorted.
    pub fn circles(&self) -> Vec<Vec<String>> {
        let names: Vec<&String> = self.edges.keys().collect();
        let index: BTreeMap<&String, usize> =
            names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let adjacency: Vec<Vec<usize>> = names
            .iter()
            .map(|n| {
                self.edges[*n]
                    .iter()
                    .filter_map(|t| index.get(t).copied())
                    .collect()
            })
            .collect();
        tarjan(&adjacency)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let mut c: Vec<String> = c.into_iter().map(|i| names[i].clone()).collect();
                c.sort();
                c
            })
            .collect()
    }

    /// A cycle through the component's first module, staying inside the component.
    pub fn cycle_through(&self, component: &[String]) -> Option<Vec<String>> {
        let inside: BTreeSet<&String> = component.iter().collect();
        let start = component.first()?;
        // Breadth-first from the start's successors back to the start.
        let mut previous: BTreeMap<&String, &String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        while let Some(at) = queue.pop_front() {
            for next in self.edges.get(at)?.iter().filter(|n| inside.contains(n)) {
                if next == start {
                    // Back from `at` to the start, then the closing edge.
                    let mut path = vec![at.clone()];
                    let mut cur = at;
                    while cur != start {
                        cur = previous[cur];
                        path.push(cur.clone());
                    }
                    path.reverse();
                    path.push(start.clone());
                    return Some(path);
                }
                if !previous.contains_key(next) && next != start {
                    previous.insert(next, at);
                    queue.push_back(next);
                }
            }
        }
        None
    }
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) -> Result {
    for entry in
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?
    {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            collect(&path, files)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    Ok(())
}

/// `crate::a::b` for `src/a/b.rs` or `src/a/b/mod.rs`; `crate` for `src/lib.rs`. Binaries'
/// roots (`main.rs`, `bin/`) are not modules of the library.
fn module_path(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin" || p == "main.rs") {
        return None;
    }
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    Some(
        std::iter::once("crate".to_string())
            .chain(parts)
            .collect::<Vec<_>>()
            .join("::"),
    )
}

/// The text without comments (`//…`, `/* … */` nested) and without the contents of string and
/// character literals (raw strings too), so neither can pass for code.
fn strip_comments(text: &str) -> String {
    let bytes = text.as_bytes();
    let ident = |i: usize| bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_';
    let starts_token = |i: usize| i == 0 || !ident(i - 1);
    // The number of `#`s of the raw string whose `r` is at `i`, if one starts there: the `r`
    // begins a token (alone, or after a `b` or `c` prefix) and `#`s lead to a `"`.
    let raw_string_at = |i: usize| {
        let prefixed = i >= 1 && b"bc".contains(&bytes[i - 1]) && starts_token(i - 1);
        let hashes = bytes[i + 1..].iter().take_while(|&&c| c == b'#').count();
        ((starts_token(i) || prefixed) && bytes.get(i + 1 + hashes) == Some(&b'"'))
            .then_some(hashes)
    };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b'/', Some(b'/')) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                let mut depth = 0usize;
                while i < bytes.len() {
                    if bytes[i..].starts_with(b"/*") {
                        depth += 1;
                        i += 2;
                    } else if bytes[i..].starts_with(b"*/") {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            // A raw string: `r"…"`, `r#"…"#`, `br#"…"#`, `cr"…"`.
            (b'r', Some(b'"' | b'#')) if raw_string_at(i).is_some() => {
                let hashes = raw_string_at(i).unwrap_or(0);
                let mut end = Vec::from([b'"']);
                end.extend(std::iter::repeat_n(b'#', hashes));
                i += 2 + hashes;
                while i < bytes.len() && !bytes[i..].starts_with(&end) {
                    i += 1;
                }
                i += end.len();
                out.push_str("\"\"");
            }
            (b'"', _) => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            // A character literal (`'x'`, `'\''`, `'"'`); a lifetime (`'a`) stays.
            (b'\'', Some(_)) => {
                let len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                if bytes[i + 1] == b'\\' {
                    i += 2;
                    while i < bytes.len() && bytes[i] != b'\'' {
                        i += if bytes[i] == b'\\' { 2 } else { 1 };
                    }
                    i += 1;
                    out.push_str("' '");
                } else if bytes.get(i + 1 + len) == Some(&b'\'') {
                    i += 2 + len;
                    out.push_str("' '");
                } else {
                    out.push('\'');
                    i += 1;
                }
            }
            _ => {
                let len = text[i..].chars().next().map_or(1, char::len_utf8);
                out.push_str(&text[i..i + len]);
                i += len;
            }
        }
    }
    out
}

/// Whether a module is test code: `tests`, `*_tests`, or inside one.
fn is_test_module(module: &str) -> bool {
    module
        .split("::")
        .any(|s| s == "tests" || s.ends_with("_tests"))
}

/// A path as written, and the module (file module, then any inline modules) it was written in.
#[derive(Debug, Clone)]
struct Written {
    scope: Vec<String>,
    segments: Vec<String>,
}

/// What one module's file says about names.
#[derive(Debug, Default)]
struct ModuleText {
    /// Names a `use` brings in (`use a::b;` brings `b`, `use a::b as c;` brings `c`,
    /// `use a::{self as d}` brings `d`), each with the path it stands for.
    bindings: BTreeMap<String, Written>,
    /// The modules of `use a::*;`.
    globs: Vec<Written>,
    /// Names the file defines (functions, types, traits, constants, statics, macros, inline
    /// modules; methods too: only globs are resolved with this, and loosely).
    items: BTreeSet<String>,
    /// Every path the file names: each `use` leaf, and each path in the code. A re-export
    /// (`pub use`) counts only when the file itself names what it brings in: otherwise it is a
    /// name for others, whose paths through it reach the item's own module.
    paths: Vec<Written>,
}

/// Keywords that define a named item: the next identifier is the item's name.
const ITEM_KEYWORDS: &[&str] = &[
    "fn", "struct", "enum", "union", "trait", "type", "const", "static", "mod",
];

impl ModuleText {
    fn parse(module: &str, text: &str) -> ModuleText {
        let code = strip_comments(text);
        let tokens = tokenize(&code);
        let mut parsed = ModuleText::default();
        let file_scope: Vec<String> = module.split("::").map(str::to_string).collect();
        // Inline modules open at a brace depth; the scope grows by their names.
        let mut inline: Vec<(String, usize)> = Vec::new();
        let mut depth = 0usize;
        // Identifiers named outside `use` declarations, and the re-exports to keep if the file
        // names what they bring in.
        let mut mentioned = BTreeSet::new();
        let mut reexports: Vec<(String, Written)> = Vec::new();
        let mut i = 0;
        while i < tokens.len() {
            let scope = || {
                let mut scope = file_scope.clone();
                scope.extend(inline.iter().map(|(name, _)| name.clone()));
                scope
            };
            match tokens[i] {
                "#" if is_cfg_test(&tokens, i) => {
                    i = item_end(&tokens, i);
                }
                "{" => {
                    depth += 1;
                    i += 1;
                }
                "}" => {
                    depth = depth.saturating_sub(1);
                    if inline.last().is_some_and(|(_, d)| *d == depth) {
                        inline.pop();
                    }
                    i += 1;
                }
                "mod" if tokens.get(i + 2) == Some(&"{") => {
                    let name = tokens[i + 1];
                    parsed.items.insert(name.to_string());
                    if is_test_module(name) {
                        i = block_end(&tokens, i + 2);
                    } else {
                        inline.push((name.to_string(), depth));
                        depth += 1;
                        i += 3;
                    }
                }
                "use" => {
                    let public = is_public(&tokens, i);
                    let mut at = i + 1;
                    if tokens.get(at) == Some(&"::") {
                        // `use ::other_crate::…`: nothing of this crate.
                        at += 1;
                        let (_, next) = use_tree(&tokens, at, Vec::new());
                        i = next.max(at);
                        continue;
                    }
                    let (leaves, next) = use_tree(&tokens, at, Vec::new());
                    let scope = scope();
                    for leaf in leaves {
                        let written = Written {
                            scope: scope.clone(),
                            segments: leaf.path,
                        };
                        if written.segments.is_empty() {
                            continue;
                        }
                        match (leaf.name, public) {
                            (UseName::Glob, _) => parsed.globs.push(written.clone()),
                            (UseName::Bound(name), true) => {
                                parsed.bindings.insert(name.clone(), written.clone());
                                reexports.push((name, written));
                                continue;
                            }
                            (UseName::Bound(name), false) => {
                                parsed.bindings.insert(name, written.clone());
                            }
                            (UseName::Unbound, _) => {}
                        }
                        if !public {
                            parsed.paths.push(written);
                        }
                    }
                    i = next.max(i + 1);
                }
                "macro_rules" if tokens.get(i + 1) == Some(&"!") => {
                    if let Some(name) = tokens.get(i + 2).filter(|t| is_ident(t)) {
                        parsed.items.insert(name.to_string());
                    }
                    i += 3;
                }
                t if ITEM_KEYWORDS.contains(&t)
                    && tokens.get(i + 1).is_some_and(|n| is_ident(n)) =>
                {
                    parsed.items.insert(tokens[i + 1].to_string());
                    i += 1;
                }
                t if is_ident(t)
                    && tokens.get(i + 1) == Some(&"::")
                    && (i == 0 || tokens[i - 1] != "::") =>
                {
                    let (segments, next) = path_at(&tokens, i);
                    mentioned.insert(segments[0].clone());
                    parsed.paths.push(Written {
                        scope: scope(),
                        segments,
                    });
                    i = next;
                }
                t => {
                    if is_ident(t) {
                        mentioned.insert(t.to_string());
                    }
                    i += 1;
                }
            }
        }
        parsed.paths.extend(
            reexports
                .into_iter()
                .filter(|(name, _)| mentioned.contains(name))
                .map(|(_, written)| written),
        );
        parsed
    }
}

/// Whether the `use` at `i` is a re-export: `pub use`, `pub(crate) use`, `pub(in …) use`.
fn is_public(tokens: &[&str], i: usize) -> bool {
    match i.checked_sub(1).map(|j| tokens[j]) {
        Some("pub") => true,
        Some(")") => tokens[..i - 1]
            .iter()
            .rposition(|t| *t == "(")
            .and_then(|open| open.checked_sub(1))
            .is_some_and(|p| tokens[p] == "pub"),
        _ => false,
    }
}

/// Whether the attribute at `i` is `#[cfg(test)]`.
fn is_cfg_test(tokens: &[&str], i: usize) -> bool {
    tokens.get(i..i + 7) == Some(&["#", "[", "cfg", "(", "test", ")", "]"][..])
}

/// Where the item whose attributes start at `i` ends: after its `;`, or its block's `}`.
fn item_end(tokens: &[&str], mut i: usize) -> usize {
    let mut brackets = 0usize;
    while i < tokens.len() {
        match tokens[i] {
            "[" | "(" => brackets += 1,
            "]" | ")" => brackets = brackets.saturating_sub(1),
            ";" if brackets == 0 => return i + 1,
            "{" if brackets == 0 => return block_end(tokens, i),
            _ => {}
        }
        i += 1;
    }
    i
}

/// Where the block opening at `open` (a `{`) ends: after its `}`.
fn block_end(tokens: &[&str], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, t) in tokens.iter().enumerate().skip(open) {
        match *t {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    tokens.len()
}

/// The segments of the path starting at `i` (`a::b::c`, up to a generic or anything else), and
/// where it ends.
fn path_at(tokens: &[&str], mut i: usize) -> (Vec<String>, usize) {
    let mut segments = Vec::new();
    while let Some(t) = tokens.get(i).filter(|t| is_ident(t)) {
        segments.push(t.to_string());
        i += 1;
        if tokens.get(i) == Some(&"::") && tokens.get(i + 1).is_some_and(|n| is_ident(n)) {
            i += 1;
        } else {
            break;
        }
    }
    (segments, i)
}

/// What a `use` leaf brings into scope.
#[derive(Debug, Clone, PartialEq, Eq)]
enum UseName {
    /// A name: the last segment, or what `as` renames it to.
    Bound(String),
    /// Every public name of the module (`*`).
    Glob,
    /// Nothing (`as _`).
    Unbound,
}

/// One leaf of a `use` tree: the full path (a trailing `self` dropped) and what it brings.
#[derive(Debug, Clone, PartialEq, Eq)]
struct UseLeaf {
    path: Vec<String>,
    name: UseName,
}

/// Parses a `use` tree at `i` under `prefix`: its leaves and where it ends.
fn use_tree(tokens: &[&str], mut i: usize, prefix: Vec<String>) -> (Vec<UseLeaf>, usize) {
    let mut path = prefix;
    loop {
        match tokens.get(i) {
            Some(&"{") => {
                let mut leaves = Vec::new();
                i += 1;
                loop {
                    match tokens.get(i) {
                        Some(&"}") => return (leaves, i + 1),
                        Some(&",") => i += 1,
                        Some(_) => {
                            let (more, next) = use_tree(tokens, i, path.clone());
                            leaves.extend(more);
                            if next <= i {
                                return (leaves, i + 1);
                            }
                            i = next;
                        }
                        None => return (leaves, i),
                    }
                }
            }
            Some(&"*") => {
                return (
                    vec![UseLeaf {
                        path,
                        name: UseName::Glob,
                    }],
                    i + 1,
                );
            }
            Some(t) if is_ident(t) => {
                // `a::{self}` is `a`; a leading `self::` is a path segment like `crate::`.
                let leaf_self = *t == "self" && !path.is_empty();
                if !leaf_self {
                    path.push(t.to_string());
                }
                i += 1;
                if tokens.get(i) == Some(&"::") {
                    i += 1;
                    continue;
                }
                let mut name = path
                    .last()
                    .cloned()
                    .map_or(UseName::Unbound, UseName::Bound);
                if tokens.get(i) == Some(&"as") {
                    name = match tokens.get(i + 1) {
                        Some(&"_") => UseName::Unbound,
                        Some(alias) => UseName::Bound(alias.to_string()),
                        None => UseName::Unbound,
                    };
                    i += 2;
                }
                return (vec![UseLeaf { path, name }], i);
            }
            _ => return (Vec::new(), i),
        }
    }
}

/// Every module's text, to resolve paths across them.
struct Crate {
    modules: BTreeMap<String, ModuleText>,
}

/// How many bindings and re-exports a path may go through (a `use` circle is a compile error,
/// so this bounds nothing real).
const MAX_HOPS: usize = 32;

impl Crate {
    /// The file module a scope is in: its longest prefix that is a module.
    fn file_module(&self, scope: &[String]) -> String {
        (1..=scope.len())
            .rev()
            .map(|n| scope[..n].join("::"))
            .find(|m| self.modules.contains_key(m))
            .unwrap_or_else(|| "crate".to_string())
    }

    /// `path` from the crate root (`["crate", …]`), or `None` when it starts outside the crate
    /// (another crate, std, a local item or a generic).
    fn absolute(&self, path: &Written, hops: usize) -> Option<Vec<String>> {
        if hops > MAX_HOPS {
            return None;
        }
        let (first, rest) = path.segments.split_first()?;
        let mut base: Vec<String> = match first.as_str() {
            "crate" => vec!["crate".into()],
            "self" => path.scope.clone(),
            "super" => {
                let mut base = path.scope.clone();
                base.pop();
                let mut rest = rest;
                while let Some(("super", more)) = rest.split_first().map(|(s, m)| (s.as_str(), m)) {
                    base.pop();
                    rest = more;
                }
                if base.is_empty() {
                    return None;
                }
                base.extend(rest.iter().cloned());
                return Some(base);
            }
            name => {
                let module = self.file_module(&path.scope);
                let child = format!("{module}::{name}");
                if self.modules.contains_key(&child) {
                    child.split("::").map(str::to_string).collect()
                } else {
                    let bound = self.modules.get(&module)?.bindings.get(name)?;
                    self.absolute(bound, hops + 1)?
                }
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The module that defines what the absolute `path` names, following re-exports; `None`
    /// when that is in another crate.
    fn locate(&self, path: &[String], hops: usize) -> Option<String> {
        if hops > MAX_HOPS || path.first().map(String::as_str) != Some("crate") {
            return None;
        }
        let mut module = "crate".to_string();
        for (at, segment) in path.iter().enumerate().skip(1) {
            let child = format!("{module}::{segment}");
            if self.modules.contains_key(&child) {
                module = child;
                continue;
            }
            let Some(text) = self.modules.get(&module) else {
                return Some(module);
            };
            if text.items.contains(segment) {
                return Some(module);
            }
            let onward = |target: Vec<String>| {
                let mut target = target;
                target.extend(path[at + 1..].iter().cloned());
                self.locate(&target, hops + 1)
            };
            if let Some(bound) = text.bindings.get(segment) {
                return onward(self.absolute(bound, hops + 1)?);
            }
            for glob in &text.globs {
                let Some(mut from) = self.absolute(glob, hops + 1) else {
                    continue;
                };
                let has = self
                    .locate(&from, hops + 1)
                    .and_then(|m| self.modules.get(&m))
                    .is_some_and(|t| t.items.contains(segment) || t.bindings.contains_key(segment));
                if has {
                    from.push(segment.clone());
                    return onward(from);
                }
            }
            return Some(module);
        }
        Some(module)
    }
}

fn is_ident(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn tokenize(code: &str) -> Vec<&str> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(&code[start..i]);
        } else if c == b':' && bytes.get(i + 1) == Some(&b':') {
            out.push("::");
            i += 2;
        } else {
            let len = code[i..].chars().next().map_or(1, char::len_utf8);
            out.push(&code[i..i + len]);
            i += len;
        }
    }
    out
}

/// Whether `module` is `target` or inside it.
fn inside(module: &str, target: &str) -> bool {
    module == target || module.starts_with(&format!("{target}::"))
}

/// Tarjan's strongly connected components, iteratively.
fn tarjan(adjacency: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = adjacency.len();
    let (mut index, mut low) = (vec![usize::MAX; n], vec![0; n]);
    let (mut on_stack, mut stack) = (vec![false; n], Vec::new());
    let (mut next, mut components) = (0, Vec::new());
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some((v, edge)) = work.pop() {
            if edge == 0 {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = adjacency[v].get(edge) {
                work.push((v, edge + 1));
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                components.push(component);
            }
        }
    }
    components
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The graph of a crate given as `(module, source)` pairs.
    fn graph(modules: &[(&str, &str)]) -> Graph {
        let sources = modules
            .iter()
            .map(|(m, s)| (m.to_string(), s.to_string()))
            .collect();
        Graph::of_sources(&sources)
    }

    /// The modules `module` depends on.
    fn deps<'g>(graph: &'g Graph, module: &str) -> Vec<&'g str> {
        graph.edges[module].iter().map(String::as_str).collect()
    }

    #[test]
    fn use_trees_are_read_with_their_names() {
        let code = strip_comments("use crate::{a::{B, c as d}, e::{self as f}, g::*, h as _};");
        let tokens = tokenize(&code);
        let (leaves, _) = use_tree(&tokens, 1, Vec::new());
        let leaf = |path: &[&str], name: UseName| UseLeaf {
            path: path.iter().map(|s| s.to_string()).collect(),
            name,
        };
        let bound = |n: &str| UseName::Bound(n.into());
        assert_eq!(
            leaves,
            [
                leaf(&["crate", "a", "B"], bound("B")),
                leaf(&["crate", "a", "c"], bound("d")),
                leaf(&["crate", "e"], bound("f")),
                leaf(&["crate", "g"], UseName::Glob),
                leaf(&["crate", "h"], UseName::Unbound),
            ]
        );
        assert_eq!(
            module_path(Path::new("s"), Path::new("s/a/mod.rs")).as_deref(),
            Some("crate::a")
        );
        assert_eq!(
            module_path(Path::new("s"), Path::new("s/lib.rs")).as_deref(),
            Some("crate")
        );
    }

    #[test]
    fn comments_strings_and_characters_are_not_code() {
        let code = strip_comments(
            "a /* x /* nested */ crate::no */ b // crate::no\n\
             c \"crate::no\" d r#\"crate::no \"quoted\" \"# e br\"crate::no\" \
             f '\"' g crate::yes '\\'' h <'a> i",
        );
        assert_eq!(
            tokenize(&code)
                .into_iter()
                .filter(|t| is_ident(t))
                .collect::<Vec<_>>(),
            [
                "a", "b", "c", "d", "e", "b", "f", "g", "crate", "yes", "h", "a", "i"
            ]
        );
    }

    #[test]
    fn crate_super_and_self_paths_reach_the_same_module() {
        let g = graph(&[
            ("crate", "mod a; mod b;"),
            (
                "crate::a",
                "mod c; fn f() { crate::b::X; super::b::Y; self::c::Z; }",
            ),
            (
                "crate::a::c",
                "pub struct Z; fn g() { super::super::b::X; }",
            ),
            ("crate::b", "pub struct X; pub struct Y;"),
        ]);
        assert_eq!(deps(&g, "crate::a"), ["crate::a::c", "crate::b"]);
        assert_eq!(deps(&g, "crate::a::c"), ["crate::b"]);
        assert!(deps(&g, "crate::b").is_empty());
    }

    #[test]
    fn renamed_imports_are_followed() {
        let g = graph(&[
            ("crate", "mod dpa;"),
            ("crate::dpa", "mod api; mod act; mod isa;"),
            ("crate::dpa::act", "pub fn run() { super::isa::go(); }"),
            (
                "crate::dpa::isa",
                "use super::api as native; pub fn go() { native::call(); }",
            ),
            // `self as`: the `use` names the parent, the path through it a sibling.
            (
                "crate::dpa::api",
                "use crate::dpa::{self as d}; pub fn call() { d::act::run(); }",
            ),
        ]);
        assert_eq!(deps(&g, "crate::dpa::isa"), ["crate::dpa::api"]);
        assert_eq!(deps(&g, "crate::dpa::api"), ["crate::dpa::act"]);
        assert_eq!(
            g.circles(),
            [vec![
                "crate::dpa::act",
                "crate::dpa::api",
                "crate::dpa::isa"
            ]]
        );
    }

    #[test]
    fn grouped_renames_are_followed() {
        let g = graph(&[
            ("crate", "mod a; mod b; mod c;"),
            (
                "crate::a",
                "use crate::{b::{self as bee}, c::{Thing as Other}}; fn f() { bee::g(); }",
            ),
            ("crate::b", "pub fn g() {}"),
            ("crate::c", "pub struct Thing;"),
        ]);
        assert_eq!(deps(&g, "crate::a"), ["crate::b", "crate::c"]);
    }

    #[test]
    fn child_modules_are_named_without_a_prefix_and_count() {
        let g = graph(&[
            ("crate", "mod isa; mod api;"),
            (
                "crate::isa",
                "mod calls; use calls::Fn; fn run() { calls::serve(); }",
            ),
            (
                "crate::isa::calls",
                "pub struct Fn; pub fn serve() { crate::api::f(); }",
            ),
            ("crate::api", "pub fn f() { crate::isa::run(); }"),
        ]);
        assert_eq!(deps(&g, "crate::isa"), ["crate::isa::calls"]);
        assert_eq!(
            g.circles(),
            [vec!["crate::api", "crate::isa", "crate::isa::calls"]],
            "a parent calling into its child needs what the child needs"
        );
    }

    #[test]
    fn re_exports_lead_to_the_defining_module() {
        let g = graph(&[
            ("crate", "mod dpa; mod pe; pub use dpa::Thread;"),
            (
                "crate::dpa",
                "mod thread; mod glob; pub use thread::Thread; pub(crate) use glob::*; \
                 pub use other_crate::Ending; pub use thread::Used; fn f(_: Used) {}",
            ),
            ("crate::dpa::thread", "pub struct Thread; pub struct Used;"),
            ("crate::dpa::glob", "pub fn globbed() {}"),
            (
                "crate::pe",
                "use crate::Thread; use super::dpa::Ending; fn f() { crate::dpa::globbed(); }",
            ),
        ]);
        assert_eq!(
            deps(&g, "crate::pe"),
            ["crate::dpa::glob", "crate::dpa::thread"],
            "through two re-exports and a glob; an item of another crate is no edge"
        );
        assert_eq!(
            deps(&g, "crate::dpa"),
            ["crate::dpa::thread"],
            "a re-export counts only when the module names what it brings in"
        );
        assert!(deps(&g, "crate").is_empty());
    }

    #[test]
    fn test_code_is_left_out() {
        let g = graph(&[
            ("crate", "mod a; mod b;"),
            (
                "crate::a",
                "#[cfg(test)] use crate::b::X; #[cfg(test)] fn t() { crate::b::Y; } \
                 mod tests { use crate::b::Z; } mod inner { fn f() { super::super::b::W; } }",
            ),
            ("crate::b", "pub struct W;"),
        ]);
        assert_eq!(
            deps(&g, "crate::a"),
            ["crate::b"],
            "only the inline module's path, `super` taken from inside it"
        );
        let g = graph(&[
            ("crate", "mod a; mod b;"),
            ("crate::a", "#[cfg(test)] mod tests { use crate::b::X; }"),
            ("crate::b", "pub struct X;"),
        ]);
        assert!(deps(&g, "crate::a").is_empty());
    }

    #[test]
    fn circles_are_strongly_connected_components_across_siblings() {
        let dir = workspace_root().join("target/xtask-tests/modules");
        let _ = std::fs::remove_dir_all(&dir);
        let src = dir.join("src");
        std::fs::create_dir_all(src.join("p")).unwrap();
        let write = |f: &str, s: &str| std::fs::write(src.join(f), s).unwrap();
        write("lib.rs", "mod a; mod b; mod c; mod p; pub use a::A;");
        write("a.rs", "use crate::b::B; pub struct A;");
        write("b.rs", "use crate::c::C; pub struct B;");
        write("c.rs", "use super::a::A; pub struct C;");
        write("p/mod.rs", "mod q; pub use self::q::Q; use crate::a::A;");
        write("p/q.rs", "use super::super::p::X; pub struct Q;");
        let graph = Graph::of_crate(&src).unwrap();
        let circles = graph.circles();
        assert_eq!(circles, [vec!["crate::a", "crate::b", "crate::c"]]);
        let cycle = graph.cycle_through(&circles[0]).unwrap();
        assert_eq!(cycle, ["crate::a", "crate::b", "crate::c", "crate::a"]);
        assert!(
            graph.edges["crate::p::q"].is_empty(),
            "a child using its parent"
        );
    }
}
