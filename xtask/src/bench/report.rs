//! report.md: the machine, the date, the tables, the targets evaluated.

use super::*;

/// The report's header.
#[derive(Debug, Clone)]
pub struct Header {
    /// `/proc/cpuinfo`'s model name.
    pub cpu: String,
    /// `available_parallelism`.
    pub cores: usize,
    /// `YYYY-MM-DD HH:MM UTC`.
    pub date_utc: String,
    /// Whether `--quick` was used.
    pub quick: bool,
    /// How long the measurements took.
    pub measure_secs: f64,
}

/// The CPU's model name, from `/proc/cpuinfo`.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| model_name(&info))
        .unwrap_or_else(|| "unknown CPU".into())
}

pub(super) fn model_name(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_string())
    })
}

/// `time` as `YYYY-MM-DD HH:MM UTC` (the `time` crate does the calendar).
pub fn utc_date(time: SystemTime) -> String {
    let at = time::OffsetDateTime::from(time);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02} UTC",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute()
    )
}

pub(super) fn sig3(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// `87.3 ns`, `1.25 µs`, `3.40 ms`.
pub fn format_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{} ms", sig3(ns / 1e6))
    } else if ns >= 1e3 {
        format!("{} µs", sig3(ns / 1e3))
    } else {
        format!("{} ns", sig3(ns))
    }
}

/// `512k msg/s`, `12.3M msg/s`.
pub fn format_rate(per_sec: f64) -> String {
    if per_sec >= 1e9 {
        format!("{}G msg/s", sig3(per_sec / 1e9))
    } else if per_sec >= 1e6 {
        format!("{}M msg/s", sig3(per_sec / 1e6))
    } else if per_sec >= 1e3 {
        format!("{}k msg/s", sig3(per_sec / 1e3))
    } else {
        format!("{} msg/s", sig3(per_sec))
    }
}

/// `1.21×`, `0.58×`, and two significant digits below 0.1: `0.0049×`.
pub fn format_ratio(ratio: f64) -> String {
    if !(ratio.is_finite() && ratio > 0.0) || ratio >= 0.1 {
        format!("{ratio:.2}×")
    } else {
        let decimals = (1 - ratio.log10().floor() as i32) as usize;
        format!("{ratio:.decimals$}×")
    }
}

pub(super) fn baseline_label(name: &str) -> String {
    if name == LIMIT {
        format!("{name} (limit)")
    } else {
        name.to_string()
    }
}

/// Whether a project target was met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The numbers satisfy the target.
    Met,
    /// They do not.
    Missed,
    /// This run did not measure what the target needs.
    NoData,
}

/// One of the project's performance targets, evaluated on this run's rows.
#[derive(Debug, Clone)]
pub struct Target {
    /// The target as the issue states it.
    pub goal: &'static str,
    /// Met, missed or not measured.
    pub verdict: Verdict,
    /// The numbers behind the verdict.
    pub detail: String,
}

pub(super) fn find_row<'a>(rows: &'a [Row], figure: &str, baseline: &str) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.figure == figure && r.baseline_name == baseline)
}

/// The targets: 32-byte busy round trip ≤ 1.5× the raw ping-pong and below every peer;
/// throughput at 1024 credits ≥ crossbeam and ≥ 0.5× rtrb; the ISA-mode round trip ≤ 3× the
/// native one; DMA of 1 MiB ≥ 0.8× memcpy's bandwidth; the Comch control-path round trip
/// between two processes ≤ 1.5 µs.
pub fn evaluate_targets(rows: &[Row]) -> Vec<Target> {
    let mut targets = Vec::new();

    let goal = "32-byte busy round trip ≤ 1.5× raw ping-pong and below every peer";
    let rtt: Vec<&Row> = rows.iter().filter(|r| r.figure == "rtt/busy_32B").collect();
    targets.push(match find_row(rows, "rtt/busy_32B", LIMIT) {
        None => Target {
            goal,
            verdict: Verdict::NoData,
            detail: "rtt/busy_32B was not measured against raw_ping_pong".into(),
        },
        Some(limit) => {
            let peers: Vec<&&Row> = rtt.iter().filter(|r| r.baseline_name != LIMIT).collect();
            let near_limit = limit.ratio <= 1.5;
            let slower_than: Vec<String> = peers
                .iter()
                .filter(|r| !r.better())
                .map(|r| format!("{} {}", r.baseline_name, format_ns(r.baseline)))
                .collect();
            let mut detail = format!(
                "dpakit {} = {:.2}× raw_ping_pong {} ({} 1.5×)",
                format_ns(limit.dpakit),
                limit.ratio,
                format_ns(limit.baseline),
                if near_limit { "≤" } else { ">" }
            );
            if peers.is_empty() {
                detail.push_str("; no peer was measured");
            } else if slower_than.is_empty() {
                let _ = write!(
                    detail,
                    "; below every peer ({})",
                    peers
                        .iter()
                        .map(|r| format!("{} {}", r.baseline_name, format_ns(r.baseline)))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            } else {
                let _ = write!(detail, "; not below {}", slower_than.join(", "));
            }
            Target {
                goal,
                verdict: if near_limit && slower_than.is_empty() && !peers.is_empty() {
                    Verdict::Met
                } else {
                    Verdict::Missed
                },
                detail,
            }
        }
    });

    let goal = "throughput at 1024 credits ≥ crossbeam and ≥ 0.5× rtrb";
    let crossbeam = find_row(rows, "throughput/credits_1024", "crossbeam");
    let rtrb = find_row(rows, "throughput/credits_1024", "rtrb");
    targets.push(match (crossbeam, rtrb) {
        (Some(c), Some(r)) => Target {
            goal,
            verdict: if c.ratio >= 1.0 && r.ratio >= 0.5 {
                Verdict::Met
            } else {
                Verdict::Missed
            },
            detail: format!(
                "dpakit {} vs crossbeam {} ({:.2}×) and rtrb {} ({:.2}×)",
                format_rate(r.dpakit),
                format_rate(c.baseline),
                c.ratio,
                format_rate(r.baseline),
                r.ratio
            ),
        },
        _ => Target {
            goal,
            verdict: Verdict::NoData,
            detail: "throughput/credits_1024 was not measured against crossbeam and rtrb".into(),
        },
    });

    let goal = "ISA-mode 32-byte round trip ≤ 3× the native one";
    targets.push(match find_row(rows, "rtt/busy_32B", "dpakit_isa") {
        None => Target {
            goal,
            verdict: Verdict::NoData,
            detail: "rtt/busy_32B was not measured in ISA mode".into(),
        },
        Some(r) => {
            let isa_over_native = r.baseline / r.dpakit;
            Target {
                goal,
                verdict: if isa_over_native <= 3.0 {
                    Verdict::Met
                } else {
                    Verdict::Missed
                },
                detail: format!(
                    "ISA {} = {:.2}× native {}",
                    format_ns(r.baseline),
                    isa_over_native,
                    format_ns(r.dpakit)
                ),
            }
        }
    });

    let goal = "DMA 1 MiB ≥ 0.8× memcpy bandwidth";
    targets.push(match find_row(rows, "dma/1MiB", "memcpy") {
        None => Target {
            goal,
            verdict: Verdict::NoData,
            detail: "dma/1MiB was not measured against memcpy".into(),
        },
        Some(r) => Target {
            goal,
            verdict: if r.ratio >= 0.8 {
                Verdict::Met
            } else {
                Verdict::Missed
            },
            detail: format!(
                "dpakit {} vs memcpy {} ({:.2}×)",
                Unit::GibPerSec.format(r.dpakit),
                Unit::GibPerSec.format(r.baseline),
                r.ratio
            ),
        },
    });
    let goal = "Comch control-path 64-byte round trip between two processes ≤ 1.5 µs (a \
                BlueField's: 4.16 µs)";
    targets.push(
        match find_row(rows, "comch/ctrl_rtt_64B", "seqpacket_spin") {
            None => Target {
                goal,
                verdict: Verdict::NoData,
                detail: "comch/ctrl_rtt_64B was not measured".into(),
            },
            Some(r) => Target {
                goal,
                verdict: if r.dpakit <= 1_500.0 {
                    Verdict::Met
                } else {
                    Verdict::Missed
                },
                detail: format!(
                    "dpakit {} (a spinning SOCK_SEQPACKET pair: {})",
                    format_ns(r.dpakit),
                    format_ns(r.baseline)
                ),
            },
        },
    );
    targets
}

/// The 32-byte round trip from the latency example, whose subjects take turns in short rounds:
/// on a VM whose core-to-core latency changes over minutes, this comparison is not skewed by the
/// order criterion measures subjects in. None without dpakit and the limit.
pub fn interleaved_rtt_check(latency: &[LatencyDist]) -> Option<String> {
    let p50 = |name: &str| {
        latency
            .iter()
            .find(|d| d.subject == name)
            .map(|d| d.percentiles[0])
    };
    let dpakit = p50(DPAKIT)?;
    let limit = p50(LIMIT)?;
    let mut line = format!(
        "interleaved cross-check (latency example, p50): dpakit {} = {:.2}× raw_ping_pong {}",
        format_ns(dpakit),
        dpakit / limit,
        format_ns(limit)
    );
    for d in latency
        .iter()
        .filter(|d| d.subject != DPAKIT && d.subject != LIMIT)
    {
        let _ = write!(
            line,
            "; {:.2}× {} {}",
            dpakit / d.percentiles[0],
            d.subject,
            format_ns(d.percentiles[0])
        );
    }
    Some(line)
}

/// The whole `report.md`.
pub fn render_markdown(
    header: &Header,
    rows: &[Row],
    latency: &[LatencyDist],
    notes: &[String],
    plot: Option<&str>,
) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# dpakit benchmark report\n");
    let _ = writeln!(md, "- CPU: {} ({} cores)", header.cpu, header.cores);
    let _ = writeln!(md, "- date: {}", header.date_utc);
    let _ = writeln!(
        md,
        "- mode: {}",
        if header.quick {
            "quick (`--quick`: short criterion runs; a smoke test, not a measurement)"
        } else {
            "full"
        }
    );
    let _ = writeln!(md, "- measuring took {:.0} s", header.measure_secs);
    let _ = writeln!(
        md,
        "\nEach value is criterion's median. `ratio` = dpakit / baseline: for latencies (ns) \
         lower is better, so a ratio below 1 means dpakit is faster; for rates (msg/s, GiB/s) \
         higher is better, so a ratio above 1 means dpakit moves more. `raw_ping_pong` is the \
         physical limit of a core-to-core round trip, not a peer: nothing beats it."
    );

    for bench in BENCHES.iter().copied().chain(
        rows.iter()
            .map(Row::bench)
            .filter(|b| !BENCHES.contains(b))
            .collect::<std::collections::BTreeSet<_>>(),
    ) {
        let bench_rows: Vec<&Row> = rows.iter().filter(|r| r.bench() == bench).collect();
        let _ = writeln!(md, "\n## {bench}\n");
        if bench_rows.is_empty() {
            let _ = writeln!(md, "Not measured in this run.");
            continue;
        }
        let _ = writeln!(
            md,
            "| figure | baseline | dpakit | baseline value | ratio | better? |"
        );
        let _ = writeln!(md, "|---|---|---:|---:|---:|:---:|");
        for r in bench_rows {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                r.figure,
                baseline_label(&r.baseline_name),
                r.unit.format(r.dpakit),
                r.unit.format(r.baseline),
                format_ratio(r.ratio),
                if r.better() { "yes" } else { "no" }
            );
        }
    }

    let _ = writeln!(md, "\n## Round-trip latency distribution\n");
    if latency.is_empty() {
        let _ = writeln!(md, "Not measured in this run.");
    } else {
        let _ = writeln!(md, "From the latency example (`latency.json`).\n");
        let _ = writeln!(md, "| subject | p50 | p90 | p99 | p99.9 | round trips |");
        let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|");
        for d in latency {
            let [p50, p90, p99, p999] = d.percentiles.map(format_ns);
            let _ = writeln!(
                md,
                "| {} | {p50} | {p90} | {p99} | {p999} | {} |",
                baseline_label(&d.subject),
                d.samples.map_or("".into(), |n| n.to_string())
            );
        }
        if let Some(plot) = plot {
            let _ = writeln!(md, "\n![round-trip latency distribution]({plot})");
        }
    }

    let _ = writeln!(md, "\n## Targets\n");
    for t in evaluate_targets(rows) {
        let verdict = match t.verdict {
            Verdict::Met => "**met**",
            Verdict::Missed => "**missed**",
            Verdict::NoData => "not measured",
        };
        let _ = writeln!(md, "- {}: {verdict} — {}", t.goal, t.detail);
    }
    if let Some(check) = interleaved_rtt_check(latency) {
        let _ = writeln!(md, "- {check}");
    }

    if !notes.is_empty() {
        let _ = writeln!(md, "\n## Notes\n");
        for note in notes {
            let _ = writeln!(md, "- {note}");
        }
    }
    md
}
