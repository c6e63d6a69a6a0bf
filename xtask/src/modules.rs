//! `cargo xtask modules [CRATE_DIR...]`: the module dependency graph of the workspace's crates,
//! and every circle in it.
//!
//! A module is a file (`lib.rs`, `a.rs`, `a/mod.rs`, `a/b.rs`). Module A depends on module B when
//! A names a path into B: `crate::b::…`, `super::…` or `self::…`, in a `use` (braces and all) or
//! inline. A path resolves to the longest prefix that is a module. Edges between a module and
//! its ancestors or descendants do not count (a parent declares and re-exports its children,
//! children use their parent's items); test modules (`tests`, `*_tests`) are left out. The
//! graph's strongly connected components of more than one module are the circles: two modules
//! that need each other, directly or around a loop, which no layering can order.

use crate::{Result, workspace_root};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates looked at by default: every workspace member (`.` is `dpakit` itself).
const CRATES: &[&str] = &[
    ".",
    "shared-abi",
    "dpa-dev",
    "dpa-kernels",
    "rv",
    "sync",
    "wire",
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
        let modules: BTreeMap<String, PathBuf> = files
            .into_iter()
            .filter_map(|f| module_path(src, &f).map(|m| (m, f)))
            .filter(|(m, _)| !m.split("::").any(|s| s == "tests" || s.ends_with("_tests")))
            .collect();
        let known: BTreeSet<&str> = modules.keys().map(String::as_str).collect();
        let mut graph = Graph::default();
        for (module, file) in &modules {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            let mut deps = BTreeSet::new();
            for path in referenced_paths(&strip_comments(&text)) {
                let Some(absolute) = absolute(module, &path) else {
                    continue;
                };
                let target = resolve(&known, &absolute);
                if !related(module, &target) {
                    deps.insert(target);
                }
            }
            graph.edges.insert(module.clone(), deps);
        }
        Ok(graph)
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

/// The text without comments (`//…` and `/* … */`), string contents kept out too.
fn strip_comments(text: &str) -> String {
    let bytes = text.as_bytes();
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
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            (b'"', _) => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
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

/// Every path starting with `crate`, `super` or `self` the code names, `use` trees expanded.
fn referenced_paths(code: &str) -> Vec<String> {
    let tokens = tokenize(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i];
        let starts = matches!(t, "crate" | "super" | "self")
            && tokens.get(i + 1) == Some(&"::")
            && (i == 0 || tokens[i - 1] != "::");
        if !starts {
            i += 1;
            continue;
        }
        let (paths, next) = use_tree(&tokens, i, String::new());
        out.extend(paths);
        i = next.max(i + 1);
    }
    out
}

/// Parses a path or `use` tree at `i` with `prefix`; the full paths and where it ends.
fn use_tree(tokens: &[&str], mut i: usize, prefix: String) -> (Vec<String>, usize) {
    let mut path = prefix;
    loop {
        match tokens.get(i) {
            Some(&"{") => {
                let mut out = Vec::new();
                i += 1;
                loop {
                    match tokens.get(i) {
                        Some(&"}") => return (out, i + 1),
                        Some(&",") => i += 1,
                        Some(_) => {
                            let (paths, next) = use_tree(tokens, i, path.clone());
                            out.extend(paths);
                            if next <= i {
                                return (out, i + 1);
                            }
                            i = next;
                        }
                        None => return (out, i),
                    }
                }
            }
            Some(t) if is_ident(t) => {
                if !path.is_empty() {
                    path.push_str("::");
                }
                path.push_str(t);
                i += 1;
                if tokens.get(i) == Some(&"::") {
                    i += 1;
                } else {
                    return (vec![path], i);
                }
            }
            _ => return (vec![path], i),
        }
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

/// `path` (starting `crate`, `super` or `self`) as seen from `module`, made absolute.
fn absolute(module: &str, path: &str) -> Option<String> {
    let mut base: Vec<&str> = module.split("::").collect();
    let mut parts = path.split("::").peekable();
    match parts.peek() {
        Some(&"crate") => {
            parts.next();
            base = vec!["crate"];
        }
        Some(&"self") => {
            parts.next();
        }
        Some(&"super") => {
            while parts.peek() == Some(&"super") {
                parts.next();
                if base.len() <= 1 {
                    return None;
                }
                base.pop();
            }
        }
        _ => return None,
    }
    Some(base.into_iter().chain(parts).collect::<Vec<_>>().join("::"))
}

/// The longest prefix of `path` that is a module.
fn resolve(known: &BTreeSet<&str>, path: &str) -> String {
    let mut candidate = path;
    loop {
        if known.contains(candidate) {
            return candidate.to_string();
        }
        match candidate.rfind("::") {
            Some(at) => candidate = &candidate[..at],
            None => return candidate.to_string(),
        }
    }
}

/// Whether `a` and `b` are the same module or one contains the other.
fn related(a: &str, b: &str) -> bool {
    let inside = |x: &str, y: &str| x == y || x.starts_with(&format!("{y}::"));
    inside(a, b) || inside(b, a)
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

    #[test]
    fn use_trees_and_inline_paths_are_read() {
        let code = strip_comments(
            "use crate::{a::{B, c}, d};\nuse super::e::F; // crate::not_this\n\
             fn f() { crate::g::h(); let s = \"crate::no\"; self::i::J; }",
        );
        let paths = referenced_paths(&code);
        assert_eq!(
            paths,
            [
                "crate::a::B",
                "crate::a::c",
                "crate::d",
                "super::e::F",
                "crate::g::h",
                "self::i::J"
            ]
        );
        assert_eq!(
            absolute("crate::x::y", "super::e::F").as_deref(),
            Some("crate::x::e::F")
        );
        assert_eq!(absolute("crate::x", "super::super::z"), None);
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
