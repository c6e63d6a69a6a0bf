//! The soft device's documented limits ([`dpakit_abi::soft::limits`], where the transport finds
//! them too), and the check that docs/comch.md states the per-peer ones.

pub use dpakit_abi::soft::limits::*;

#[cfg(test)]
mod tests {
    use super::*;

    /// A number as docs/comch.md writes it (`65,536`).
    fn grouped(n: u64) -> String {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    }

    /// The per-peer limits docs/comch.md promises are the ones the soft device enforces.
    #[test]
    fn the_documented_per_peer_limits_are_these() {
        let doc = include_str!("../../docs/comch.md");
        let row = |label: &str| {
            doc.lines()
                .find(|l| l.starts_with(&format!("| {label}")))
                .unwrap_or_else(|| panic!("docs/comch.md has no `{label}` row"))
        };
        let handshakes = row("connections in their handshake");
        assert!(
            handshakes.contains(&format!("| {};", COMCH_MAX_PENDING_HANDSHAKES)),
            "{handshakes}"
        );
        assert!(
            handshakes.contains(&format!(
                "{} s to send HELLO",
                COMCH_HANDSHAKE_TIMEOUT_MS / 1000
            )),
            "{handshakes}"
        );
        let consumers = row("consumers announced per connection");
        assert!(
            consumers.contains(&format!("| {} |", COMCH_MAX_CONSUMERS_PER_CONNECTION)),
            "{consumers}"
        );
        let shared = row("memory shared per connection");
        assert!(
            shared.contains(&format!(
                "| {} GiB |",
                COMCH_MAX_SHARED_BYTES_PER_CONNECTION >> 30
            )),
            "{shared}"
        );
        let one = row("memory shared by one consumer");
        assert!(
            one.contains(&format!("≤ {} GiB", MMAP_MAX_LEN >> 30)),
            "{one}"
        );
        assert!(one.contains(&grouped(CPU_MAX_NUM_TASKS as u64)), "{one}");
    }

    #[test]
    fn numbers_group_by_thousands() {
        assert_eq!(grouped(65536), "65,536");
        assert_eq!(grouped(64), "64");
        assert_eq!(grouped(1_000_000), "1,000,000");
    }
}
