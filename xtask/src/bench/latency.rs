//! The latency distribution the latency example writes (latency.json).

use super::*;

/// The percentiles the report and the plot show.
pub const PERCENTILES: [&str; 4] = ["p50", "p90", "p99", "p99.9"];

/// One subject's round-trip latency distribution, in ns.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyDist {
    /// `dpakit`, `raw_ping_pong` or a peer.
    pub subject: String,
    /// p50, p90, p99, p99.9 in ns.
    pub percentiles: [f64; 4],
    /// How many round trips were timed, when latency.json says.
    pub samples: Option<u64>,
}

/// Reads the latency example's output. Accepted shapes, with the subjects as
///
/// - an array of objects: `[{"subject": "dpakit", "p50": 610, "p90": ..., "p99": ...,
///   "p99_9": ..., "samples": 100000}, ...]`,
/// - an object holding such an array under `subjects`, `results`, `series` or `rows`,
/// - or an object keyed by subject: `{"dpakit": {"p50_ns": 610, ...}, ...}`;
///
/// and each percentile named `p50`, `p50_ns`, `p99.9`, `p99_9`, `p999` (in ns; `_us` in µs),
/// possibly one level down (`"percentiles": {...}`). Subjects are returned dpakit first, then
/// in baseline order.
pub fn parse_latency(text: &str) -> Result<Vec<LatencyDist>> {
    let root: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let mut dists = Vec::new();
    collect_dists(&root, None, &mut dists);
    if dists.is_empty() {
        return Err("no subject with p50/p90/p99/p99.9 found".into());
    }
    dists.sort_by(|a, b| {
        (a.subject != DPAKIT, baseline_rank(&a.subject))
            .cmp(&(b.subject != DPAKIT, baseline_rank(&b.subject)))
    });
    dists.dedup_by(|a, b| a.subject == b.subject);
    Ok(dists)
}

pub(super) fn collect_dists(value: &Value, key: Option<&str>, out: &mut Vec<LatencyDist>) {
    match value {
        Value::Array(items) => {
            for item in items {
                collect_dists(item, None, out);
            }
        }
        Value::Object(map) => {
            let name = ["subject", "name", "id", "label"]
                .iter()
                .find_map(|k| map.get(*k).and_then(Value::as_str))
                .or(key);
            if let (Some(name), Some(percentiles)) = (name, percentiles_of(value)) {
                let samples = ["samples", "count", "n", "round_trips"]
                    .iter()
                    .find_map(|k| map.get(*k).and_then(Value::as_u64));
                out.push(LatencyDist {
                    subject: name.to_string(),
                    percentiles,
                    samples,
                });
                return;
            }
            for (k, v) in map {
                if v.is_object() || v.is_array() {
                    collect_dists(v, Some(k), out);
                }
            }
        }
        _ => {}
    }
}

/// `p99.9_ns` → (`999`, 1.0); `p50_us` → (`50`, 1000.0); `median` → (`50`, 1.0).
pub(super) fn percentile_key(key: &str) -> Option<(String, f64)> {
    let key = key.to_ascii_lowercase();
    let (key, scale) = if let Some(k) = key.strip_suffix("_us").or(key.strip_suffix("us")) {
        (k.to_string(), 1e3)
    } else {
        (
            key.strip_suffix("_ns")
                .or(key.strip_suffix("ns"))
                .unwrap_or(&key)
                .to_string(),
            1.0,
        )
    };
    if key == "median" {
        return Some(("50".into(), scale));
    }
    let digits: String = key
        .strip_prefix('p')?
        .chars()
        .filter(|c| !matches!(c, '.' | '_'))
        .collect();
    (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())).then_some((digits, scale))
}

/// Objects inside a subject's entry that may hold its percentiles (and, by their suffix, the
/// unit: `latency_us`).
pub(super) const PERCENTILE_CONTAINERS: &[&str] = &[
    "percentiles",
    "quantiles",
    "latency",
    "rtt",
    "round_trip",
    "stats",
    "summary",
];

pub(super) fn percentiles_of(value: &Value) -> Option<[f64; 4]> {
    let mut found: BTreeMap<String, f64> = BTreeMap::new();
    let mut scan = |map: &serde_json::Map<String, Value>, outer_scale: f64| {
        for (k, v) in map {
            if let (Some((p, scale)), Some(x)) = (percentile_key(k), v.as_f64()) {
                found.entry(p).or_insert(x * scale * outer_scale);
            }
        }
    };
    let map = value.as_object()?;
    scan(map, 1.0);
    for (key, nested) in map {
        let Some(nested) = nested.as_object() else {
            continue;
        };
        let key = key.to_ascii_lowercase();
        let (name, scale) = if let Some(name) = key.strip_suffix("_us") {
            (name, 1e3)
        } else {
            (key.strip_suffix("_ns").unwrap_or(&key), 1.0)
        };
        if PERCENTILE_CONTAINERS.contains(&name) || matches!(name, "ns" | "us") {
            scan(nested, if name == "us" { 1e3 } else { scale });
        }
    }
    let get = |p: &str| found.get(p).copied();
    Some([get("50")?, get("90")?, get("99")?, get("999")?])
}
