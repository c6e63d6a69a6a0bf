//! Finding the kernels of a device source: the functions defined with dpacc's keywords,
//! `__dpa_global__` (thread kernels) and `__dpa_rpc__` (RPCs). The source is preprocessed with
//! each keyword defined as a marker, so macros, comments and `#if`s are the compiler's business;
//! what is left to read is the marker, the function's name and its parameter list.

use std::collections::BTreeMap;

/// What the keyword becomes while scanning.
pub const GLOBAL_MARKER: &str = "__dpakit_dpacc_global__";
/// What the keyword becomes while scanning.
pub const RPC_MARKER: &str = "__dpakit_dpacc_rpc__";

/// Most arguments an RPC takes on the soft device.
pub const MAX_RPC_ARGS: usize = 4;

/// A kernel found in a source.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Kernel {
    /// Its name, the symbol host code declares.
    pub name: String,
    /// Thread kernel (`__dpa_global__`) or RPC (`__dpa_rpc__`).
    pub rpc: bool,
    /// Its parameters.
    pub num_args: usize,
}

/// The kernels defined in preprocessed source `text`, by name. Declarations (a `;` after the
/// parameter list) are not definitions and are skipped. A thread kernel must take one argument
/// (the `uint64_t` DOCA hands it), an RPC at most [`MAX_RPC_ARGS`].
pub fn kernels(text: &str) -> Result<BTreeMap<String, Kernel>, String> {
    let tokens = tokenize(text);
    let mut found = BTreeMap::new();
    let mut i = 0;
    while i < tokens.len() {
        let rpc = match tokens[i] {
            GLOBAL_MARKER => false,
            RPC_MARKER => true,
            _ => {
                i += 1;
                continue;
            }
        };
        let keyword = if rpc { "__dpa_rpc__" } else { "__dpa_global__" };
        let open = (i + 1..tokens.len())
            .find(|&j| tokens[j] == "(")
            .ok_or_else(|| format!("{keyword} without a function after it"))?;
        let name = tokens[open - 1];
        if !is_identifier(name) {
            return Err(format!(
                "{keyword} is not followed by a function (`{name}` before `(`)"
            ));
        }
        let (num_args, close) = parameters(&tokens, open)
            .ok_or_else(|| format!("{keyword} {name}: the parameter list does not end"))?;
        i = close + 1;
        if tokens.get(close + 1) == Some(&";") {
            continue; // a declaration
        }
        if !rpc && num_args != 1 {
            return Err(format!(
                "__dpa_global__ {name} takes {num_args} parameters: a DPA thread kernel takes one \
                 (the uint64_t argument of doca_dpa_thread_set_func_arg)"
            ));
        }
        if rpc && num_args > MAX_RPC_ARGS {
            return Err(format!(
                "__dpa_rpc__ {name} takes {num_args} parameters: the soft device passes at most \
                 {MAX_RPC_ARGS} to an RPC"
            ));
        }
        let kernel = Kernel {
            name: name.to_string(),
            rpc,
            num_args,
        };
        if let Some(old) = found.insert(name.to_string(), kernel) {
            return Err(format!("{} is defined twice", old.name));
        }
    }
    Ok(found)
}

/// The number of parameters of the list opening at `open`, and where it closes.
fn parameters(tokens: &[&str], open: usize) -> Option<(usize, usize)> {
    let mut depth = 0;
    let mut commas = 0;
    let mut first = None;
    for (j, token) in tokens.iter().enumerate().skip(open) {
        match *token {
            "(" => depth += 1,
            ")" => {
                depth -= 1;
                if depth == 0 {
                    let inside = &tokens[open + 1..j];
                    let n = match (first, inside) {
                        (_, []) | (_, ["void"]) => 0,
                        _ => commas + 1,
                    };
                    return Some((n, j));
                }
            }
            "," if depth == 1 => commas += 1,
            _ if first.is_none() => first = Some(j),
            _ => {}
        }
    }
    None
}

fn is_identifier(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// C tokens, coarsely: identifiers and numbers, string and character literals, and single
/// punctuation characters. Enough to find a marker, a name and a parameter list.
fn tokenize(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'#' {
            // Line markers and pragmas the preprocessor leaves.
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(&text[start..i]);
        } else if c == b'"' || c == b'\'' {
            let start = i;
            i += 1;
            while i < bytes.len() && bytes[i] != c {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(bytes.len());
            out.push(&text[start..i]);
        } else {
            let len = text[i..].chars().next().map_or(1, char::len_utf8);
            out.push(&text[i..i + len]);
            i += len;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(src: &str) -> String {
        src.replace("__dpa_global__", GLOBAL_MARKER)
            .replace("__dpa_rpc__", RPC_MARKER)
    }

    #[test]
    fn definitions_of_both_kinds_with_their_arity() {
        let found = kernels(&marked(
            "# 1 \"k.c\"\n\
             __dpa_global__ void echo(uint64_t arg) { f(\"__dpa_rpc__ x(\"); }\n\
             __dpa_rpc__ uint64_t add(uint64_t a, uint64_t b) { return a + b; }\n\
             __dpa_rpc__ uint64_t zero(void) { return 0; }\n\
             __dpa_rpc__ uint64_t declared(uint64_t a);\n\
             static void helper(int (*f)(int, int)) {}\n",
        ))
        .unwrap();
        let list: Vec<_> = found
            .values()
            .map(|k| (k.name.as_str(), k.rpc, k.num_args))
            .collect();
        assert_eq!(
            list,
            [("add", true, 2), ("echo", false, 1), ("zero", true, 0)]
        );
    }

    #[test]
    fn kernels_dpa_cannot_run_are_refused_by_name() {
        let e = kernels(&marked(
            "__dpa_global__ void two(uint64_t a, uint64_t b) {}",
        ))
        .unwrap_err();
        assert!(e.contains("two takes 2 parameters"), "{e}");
        let e = kernels(&marked(
            "__dpa_rpc__ uint64_t five(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e) {}",
        ))
        .unwrap_err();
        assert!(e.contains("at most 4"), "{e}");
        let e = kernels(&marked(
            "__dpa_global__ void k(uint64_t a) {} __dpa_global__ void k(uint64_t a) {}",
        ))
        .unwrap_err();
        assert!(e.contains("defined twice"), "{e}");
    }
}
