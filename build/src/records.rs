//! The kernel records device builds leave in `.dpakit.kernels`: `kind:name` from the Rust
//! macros (`thread_kernel!`, `rpc_kernel!`), `kind:name:c` from C's `DPAKIT_THREAD_KERNEL` /
//! `DPAKIT_RPC_KERNEL` (`dpa-kernels/c/dpakit_kernel.h`).

type Result<T = (), E = String> = std::result::Result<T, E>;

/// The language a kernel is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lang {
    /// Declared with the Rust macros.
    Rust,
    /// Declared with the C marker.
    C,
}

impl Lang {
    /// The name report.json uses: `rust` or `c`.
    pub fn as_str(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::C => "c",
        }
    }
}

/// One record: the kernel's kind (`thread` or `rpc`), its symbol and its language.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Record {
    pub kind: String,
    pub symbol: String,
    pub lang: Lang,
}

/// Parses `kind:name` or `kind:name:c`; anything else is malformed.
pub fn parse(record: &str) -> Result<Record> {
    let malformed =
        || format!("malformed kernel record `{record}` (expected `kind:name` or `kind:name:c`)");
    let mut parts = record.split(':');
    let (Some(kind), Some(symbol)) = (parts.next(), parts.next()) else {
        return Err(malformed());
    };
    let lang = match (parts.next(), parts.next()) {
        (None, _) => Lang::Rust,
        (Some("c"), None) => Lang::C,
        _ => return Err(malformed()),
    };
    if !matches!(kind, "thread" | "rpc") || symbol.is_empty() {
        return Err(malformed());
    }
    Ok(Record {
        kind: kind.to_string(),
        symbol: symbol.to_string(),
        lang,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_name_kind_symbol_and_language() {
        let rust = parse("thread:echo").unwrap();
        assert_eq!(
            (rust.kind.as_str(), rust.symbol.as_str(), rust.lang),
            ("thread", "echo", Lang::Rust)
        );
        let c = parse("rpc:add_c:c").unwrap();
        assert_eq!(
            (c.kind.as_str(), c.symbol.as_str(), c.lang),
            ("rpc", "add_c", Lang::C)
        );
        assert_eq!(Lang::C.as_str(), "c");
        assert_eq!(Lang::Rust.as_str(), "rust");
    }

    #[test]
    fn malformed_records_are_refused_by_name() {
        for bad in [
            "echo",
            "thread:",
            "thread:echo:rust",
            "thread:echo:c:x",
            "task:echo",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(&format!("`{bad}`")), "{e}");
        }
    }
}
