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

/// Most parameters a thread kernel (`__dpa_global__`) takes on the soft device: what
/// `doca_dpa_kernel_launch_update_set` passes after the function.
pub const MAX_KERNEL_ARGS: usize = dpakit_abi::kernel::KERNEL_MAX_ARGS;

/// A kernel found in a source.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Kernel {
    /// Its name, the symbol host code declares.
    pub name: String,
    /// Thread kernel (`__dpa_global__`) or RPC (`__dpa_rpc__`).
    pub rpc: bool,
    /// Its parameters.
    pub num_args: usize,
    /// Bit `i` set: parameter `i` is a 32-bit integer (an `int`, a `uint32_t`, an enum, or a
    /// narrower type promoted to `int`); the others are 64-bit integers or pointers. A variadic
    /// launch reads each argument with its width.
    pub narrow: u32,
}

/// The kernels defined in preprocessed source `text`, by name. Declarations (a `;` after the
/// parameter list) are not definitions and are skipped. A thread kernel takes at most
/// [`MAX_KERNEL_ARGS`] integer or pointer parameters, an RPC at most [`MAX_RPC_ARGS`].
pub fn kernels(text: &str) -> Result<BTreeMap<String, Kernel>, String> {
    let tokens = tokenize(text);
    let typedefs = typedefs(&tokens);
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
            .find(|&j| tokens[j] == "(" || tokens[j] == ";" || tokens[j] == "{")
            .filter(|&j| tokens[j] == "(");
        let Some(open) = open else {
            // `struct s {…} __dpa_global__;`: the keyword also marks shared definitions.
            i += 1;
            continue;
        };
        let name = tokens[open - 1];
        if !is_identifier(name) {
            return Err(format!(
                "{keyword} is not followed by a function (`{name}` before `(`)"
            ));
        }
        let (params, close) = parameters(&tokens, open)
            .ok_or_else(|| format!("{keyword} {name}: the parameter list does not end"))?;
        i = close + 1;
        if tokens.get(close + 1) == Some(&";") {
            continue; // a declaration
        }
        let num_args = params.len();
        if !rpc && num_args > MAX_KERNEL_ARGS {
            return Err(format!(
                "__dpa_global__ {name} takes {num_args} parameters: the soft device passes at \
                 most {MAX_KERNEL_ARGS} to a kernel"
            ));
        }
        if rpc && num_args > MAX_RPC_ARGS {
            return Err(format!(
                "__dpa_rpc__ {name} takes {num_args} parameters: the soft device passes at most \
                 {MAX_RPC_ARGS} to an RPC"
            ));
        }
        let mut narrow = 0;
        for (n, param) in params.iter().enumerate() {
            match width(param, &typedefs) {
                Ok(Width::Narrow) => narrow |= 1 << n,
                Ok(Width::Wide) => {}
                Err(why) => {
                    return Err(format!(
                        "{keyword} {name}: parameter {} (`{}`) {why}",
                        n + 1,
                        param.join(" ")
                    ));
                }
            }
        }
        let kernel = Kernel {
            name: name.to_string(),
            rpc,
            num_args,
            narrow,
        };
        if let Some(old) = found.insert(name.to_string(), kernel) {
            return Err(format!("{} is defined twice", old.name));
        }
    }
    Ok(found)
}

/// The parameters of the list opening at `open`, each as its tokens, and where the list closes.
/// `()` and `(void)` have none.
fn parameters<'t>(tokens: &[&'t str], open: usize) -> Option<(Vec<Vec<&'t str>>, usize)> {
    let mut depth = 0;
    let mut params = vec![Vec::new()];
    for (j, token) in tokens.iter().enumerate().skip(open) {
        match *token {
            "(" => {
                depth += 1;
                if depth == 1 {
                    continue;
                }
            }
            ")" => {
                depth -= 1;
                if depth == 0 {
                    if params.len() == 1 && matches!(params[0][..], [] | ["void"]) {
                        params.clear();
                    }
                    return Some((params, j));
                }
            }
            "," if depth == 1 => {
                params.push(Vec::new());
                continue;
            }
            _ => {}
        }
        params.last_mut().expect("one at least").push(*token);
    }
    None
}

/// How a parameter travels through a variadic argument list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Width {
    /// Promoted to a 32-bit `int` or `unsigned int`.
    Narrow,
    /// A 64-bit integer or a pointer.
    Wide,
}

/// Types that name no width of their own (qualifiers, attributes' keywords).
const QUALIFIERS: &[&str] = &["const", "volatile", "restrict", "__restrict", "register"];

/// The width of a parameter declared by `tokens` (its type, then its name if it has one).
fn width(tokens: &[&str], typedefs: &BTreeMap<&str, Vec<&str>>) -> Result<Width, String> {
    let mut words = strip_attributes(tokens);
    // A trailing identifier after a type is the parameter's name.
    if words.len() > 1
        && is_identifier(words[words.len() - 1])
        && !is_type_keyword(words[words.len() - 1])
    {
        words.pop();
    }
    type_width(&words, typedefs, 0)
}

/// The width of the type `words` (no name), following the source's typedefs.
fn type_width(
    words: &[&str],
    typedefs: &BTreeMap<&str, Vec<&str>>,
    depth: u32,
) -> Result<Width, String> {
    if words.iter().any(|t| *t == "*" || *t == "[") {
        return Ok(Width::Wide);
    }
    let words: Vec<&str> = words
        .iter()
        .copied()
        .filter(|t| !QUALIFIERS.contains(t))
        .collect();
    if words.iter().any(|w| matches!(*w, "float" | "double")) {
        return Err(
            "is floating-point: kernels on the soft device take integers and pointers".into(),
        );
    }
    if words.iter().any(|w| matches!(*w, "struct" | "union")) {
        return Err("is a structure passed by value: pass a pointer or a handle".into());
    }
    if words.first() == Some(&"enum") {
        return Ok(Width::Narrow);
    }
    if words.contains(&"long") {
        return Ok(Width::Wide);
    }
    if !words.is_empty() && words.iter().all(|w| is_type_keyword(w)) {
        return Ok(Width::Narrow);
    }
    if let [name] = words[..] {
        if let Some(w) = fixed_width(name) {
            return Ok(w);
        }
        if let Some(def) = typedefs.get(name).filter(|_| depth < 16) {
            return type_width(def, typedefs, depth + 1);
        }
        return Err(format!(
            "has type `{name}`, whose width the soft dpacc cannot tell: declare it with a \
             standard integer type (uint64_t, uint32_t, …) or a pointer"
        ));
    }
    Err(format!(
        "has type `{}`, which the soft dpacc does not read: use a standard integer type or a \
         pointer",
        words.join(" ")
    ))
}

/// Whether `w` is a keyword of an integer type (never a parameter's name).
fn is_type_keyword(w: &str) -> bool {
    w == "long" || is_base_word(w)
}

/// `char`, `short`, `int` and the like: words of a type promoted to `int` unless `long`.
fn is_base_word(w: &str) -> bool {
    matches!(
        w,
        "char" | "short" | "int" | "signed" | "unsigned" | "_Bool" | "bool" | "__signed__"
    )
}

/// The standard integer typedefs, whatever the headers say.
fn fixed_width(name: &str) -> Option<Width> {
    Some(match name {
        "int8_t" | "uint8_t" | "int16_t" | "uint16_t" | "int32_t" | "uint32_t" => Width::Narrow,
        "int64_t" | "uint64_t" | "size_t" | "ssize_t" | "intptr_t" | "uintptr_t" | "ptrdiff_t"
        | "intmax_t" | "uintmax_t" => Width::Wide,
        _ => return None,
    })
}

/// `tokens` without `__attribute__((…))` groups.
fn strip_attributes<'t>(tokens: &[&'t str]) -> Vec<&'t str> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if matches!(tokens[i], "__attribute__" | "__attribute") && tokens.get(i + 1) == Some(&"(") {
            let mut depth = 0;
            i += 1;
            while i < tokens.len() {
                match tokens[i] {
                    "(" => depth += 1,
                    ")" => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            i += 1;
            continue;
        }
        out.push(tokens[i]);
        i += 1;
    }
    out
}

/// The simple typedefs of the source (`typedef <type words> NAME;`, no braces or parentheses),
/// by name.
fn typedefs<'t>(tokens: &[&'t str]) -> BTreeMap<&'t str, Vec<&'t str>> {
    let mut out = BTreeMap::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] != "typedef" {
            i += 1;
            continue;
        }
        let end = (i + 1..tokens.len()).find(|&j| matches!(tokens[j], ";" | "{" | "("));
        match end {
            Some(end) if tokens[end] == ";" && end >= i + 3 => {
                let name = tokens[end - 1];
                if is_identifier(name) && !tokens[i + 1..end - 1].contains(&",") {
                    out.insert(name, tokens[i + 1..end - 1].to_vec());
                }
                i = end + 1;
            }
            Some(end) => i = end + 1,
            None => break,
        }
    }
    out
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
             __dpa_global__ void hello(void) { }\n\
             __dpa_rpc__ uint64_t add(uint64_t a, uint64_t b) { return a + b; }\n\
             __dpa_rpc__ uint64_t zero(void) { return 0; }\n\
             __dpa_rpc__ uint64_t declared(uint64_t a);\n\
             struct shared { int x; } __dpa_global__;\n\
             static void helper(int (*f)(int, int)) {}\n",
        ))
        .unwrap();
        let list: Vec<_> = found
            .values()
            .map(|k| (k.name.as_str(), k.rpc, k.num_args))
            .collect();
        assert_eq!(
            list,
            [
                ("add", true, 2),
                ("echo", false, 1),
                ("hello", false, 0),
                ("zero", true, 0)
            ]
        );
    }

    #[test]
    fn each_parameter_has_the_width_a_variadic_launch_reads() {
        let found = kernels(&marked(
            "typedef unsigned int __u32;\n\
             typedef __u32 uint32_t;\n\
             typedef unsigned long long u64_t;\n\
             typedef uint32_t doca_dpa_dev_mmap_t;\n\
             typedef struct big *big_ptr;\n\
             enum mode { A, B };\n\
             __dpa_global__ void k(uint64_t a, doca_dpa_dev_mmap_t m, const char *p, \
             unsigned n, enum mode e, u64_t w, big_ptr b, int x[], uint8_t c, \
             long l, uint32_t __attribute__((unused)) u) {}\n",
        ))
        .unwrap();
        let k = &found["k"];
        assert_eq!(k.num_args, 11);
        // Narrow: m, n, e, c, u.
        assert_eq!(k.narrow, 1 << 1 | 1 << 3 | 1 << 4 | 1 << 8 | 1 << 10);
    }

    #[test]
    fn kernels_dpa_cannot_run_are_refused_by_name() {
        let refused = |src: &str, expect: &str| {
            let e = kernels(&marked(src)).unwrap_err();
            assert!(e.contains(expect), "{e}");
        };
        let many = (0..17)
            .map(|i| format!("uint64_t a{i}"))
            .collect::<Vec<_>>();
        refused(
            &format!("__dpa_global__ void wide({}) {{}}", many.join(", ")),
            "wide takes 17 parameters",
        );
        refused(
            "__dpa_rpc__ uint64_t five(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e) {}",
            "at most 4",
        );
        refused(
            "__dpa_global__ void k(uint64_t a) {} __dpa_global__ void k(uint64_t a) {}",
            "defined twice",
        );
        refused(
            "__dpa_global__ void f(double d) {}",
            "parameter 1 (`double d`) is floating-point",
        );
        refused(
            "struct s { int a; }; __dpa_global__ void f(uint64_t a, struct s v) {}",
            "parameter 2 (`struct s v`) is a structure passed by value",
        );
        refused(
            "__dpa_global__ void f(mystery_t m) {}",
            "`mystery_t`, whose width the soft dpacc cannot tell",
        );
    }
}
