//! The soft device's documented limits ([`dpakit_abi::soft::limits`], where the transport finds
//! them too), and the check that docs/comch.md states the per-peer ones.

pub use dpakit_abi::soft::limits::*;

// --- DMA (`doca_dma`): the soft device's own limits, answered by the `doca_dma_cap_*` queries
// and documented in docs/soft-device.md ("DMA"). ----------------------------------------------

/// Largest memcpy one DMA task makes, in bytes (`doca_dma_cap_task_memcpy_get_max_buf_size`):
/// 1 GiB, the largest memory one mmap registers ([`MMAP_MAX_LEN`]). A task copies one source
/// buffer's data into one destination buffer, each inside one mmap, so no copy can be longer.
pub const DMA_MAX_BUF_SIZE: u64 = MMAP_MAX_LEN as u64;

/// Buffers one memcpy task takes, the source's list and the destination's together
/// (`doca_dma_cap_task_memcpy_get_max_buf_list_len`): 2. The soft device builds no buffer
/// chains (`doca_buf_chain_list` answers `NOT_SUPPORTED`), so a task is one source and one
/// destination buffer; DOCA's DMA samples compare this number with the source's plus the
/// destination's list length, so 1 would turn away the plainest copy.
pub const DMA_MAX_BUF_LIST_LEN: u32 = 2;

/// Largest memcpy task pool of a DMA context (`doca_dma_cap_get_max_num_tasks`): the CPU task
/// pool limit every context of the soft device has ([`CPU_MAX_NUM_TASKS`], 65,536).
pub const DMA_MAX_NUM_TASKS: u32 = CPU_MAX_NUM_TASKS as u32;

/// Bytes the DMA engine copies in one `doca_pe_progress` call at most (1 MiB, some tens of
/// microseconds of memcpy): a larger copy goes on in the next calls, so a progress call stays
/// short whatever the programs submit.
pub const DMA_PROGRESS_MAX_BYTES: usize = 1 << 20;

/// Memcpy tasks the DMA engine finishes in one `doca_pe_progress` call at most: a flood of tiny
/// copies is bounded too.
pub const DMA_PROGRESS_MAX_TASKS: usize = 256;

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

    /// The DMA limits docs/soft-device.md promises are the ones the capability queries answer.
    #[test]
    fn the_documented_dma_limits_are_these() {
        let doc = include_str!("../../docs/soft-device.md");
        let row = |query: &str| {
            doc.lines()
                .find(|l| l.starts_with(&format!("| `{query}`")))
                .unwrap_or_else(|| panic!("docs/soft-device.md has no `{query}` row"))
        };
        let size = row("doca_dma_cap_task_memcpy_get_max_buf_size");
        assert!(
            size.contains(&format!("| {} GiB (", DMA_MAX_BUF_SIZE >> 30)),
            "{size}"
        );
        let list = row("doca_dma_cap_task_memcpy_get_max_buf_list_len");
        assert!(
            list.contains(&format!("| {DMA_MAX_BUF_LIST_LEN} (")),
            "{list}"
        );
        let tasks = row("doca_dma_cap_get_max_num_tasks");
        assert!(
            tasks.contains(&format!("| {} (", grouped(u64::from(DMA_MAX_NUM_TASKS)))),
            "{tasks}"
        );
        assert!(doc.contains(&format!(
            "at most `DMA_PROGRESS_MAX_BYTES` ({} MiB)",
            DMA_PROGRESS_MAX_BYTES >> 20
        )));
        assert!(doc.contains(&format!(
            "`DMA_PROGRESS_MAX_TASKS` ({DMA_PROGRESS_MAX_TASKS})"
        )));
    }

    #[test]
    fn numbers_group_by_thousands() {
        assert_eq!(grouped(65536), "65,536");
        assert_eq!(grouped(64), "64");
        assert_eq!(grouped(1_000_000), "1,000,000");
    }
}
