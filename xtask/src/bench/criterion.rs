//! Criterion's results: finding each benchmark's files, reading its measurement.

use super::*;

/// How much one criterion iteration processes (`benchmark.json`'s `throughput`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throughput {
    /// Messages (or other elements) per iteration.
    Elements(u64),
    /// Bytes per iteration.
    Bytes(u64),
}

/// One criterion benchmark's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// `rtt`, `throughput`, `dma`, `threads`.
    pub bench: String,
    /// The figure within the bench, e.g. `busy_32B`.
    pub figure: String,
    /// `dpakit` or a baseline.
    pub subject: String,
    /// Median time of one iteration (criterion's `median.point_estimate`), in ns.
    pub median_ns: f64,
    /// What one iteration processes, when the bench declared it.
    pub throughput: Option<Throughput>,
}

/// The unit of a reported value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds per operation: lower is better.
    Ns,
    /// Messages per second: higher is better.
    MsgPerSec,
    /// GiB per second: higher is better.
    GibPerSec,
}

impl Unit {
    /// The unit as `report.json` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::MsgPerSec => "msg/s",
            Unit::GibPerSec => "GiB/s",
        }
    }

    /// Rates are better high, latencies low.
    pub fn higher_is_better(self) -> bool {
        self != Unit::Ns
    }

    pub(super) fn format(self, value: f64) -> String {
        match self {
            Unit::Ns => format_ns(value),
            Unit::MsgPerSec => format_rate(value),
            Unit::GibPerSec => format!("{} GiB/s", sig3(value)),
        }
    }
}

impl Measurement {
    /// The figure as reported, by bench: `rtt` in ns per round trip (the median divided by the
    /// messages of one iteration, when the bench declared them); `throughput` in msg/s (one
    /// message per iteration unless declared); `dma` in GiB/s (the declared bytes, else the
    /// figure's size: `64KiB`); any other bench by what it declared: messages → msg/s, bytes →
    /// GiB/s, nothing → ns.
    pub fn value(&self) -> (f64, Unit) {
        let per_iter = self.median_ns.max(f64::MIN_POSITIVE);
        let elements = match self.throughput {
            Some(Throughput::Elements(n)) if n > 0 => Some(n as f64),
            _ => None,
        };
        let bytes = match self.throughput {
            Some(Throughput::Bytes(n)) => Some(n),
            _ => None,
        };
        let unit = match (self.bench.as_str(), self.throughput) {
            ("rtt", _) => Unit::Ns,
            ("throughput", _) => Unit::MsgPerSec,
            ("dma", _) => Unit::GibPerSec,
            (_, Some(Throughput::Elements(_))) => Unit::MsgPerSec,
            (_, Some(Throughput::Bytes(_))) => Unit::GibPerSec,
            (_, None) => Unit::Ns,
        };
        match unit {
            Unit::Ns => (self.median_ns / elements.unwrap_or(1.0), Unit::Ns),
            Unit::MsgPerSec => (elements.unwrap_or(1.0) * 1e9 / per_iter, Unit::MsgPerSec),
            Unit::GibPerSec => match bytes.or_else(|| parse_size(&self.figure)) {
                Some(n) => (
                    n as f64 * 1e9 / per_iter / f64::from(1u32 << 30),
                    Unit::GibPerSec,
                ),
                None => (self.median_ns, Unit::Ns),
            },
        }
    }
}

/// `64B`, `4KiB`, `1MiB`, `2GiB` → bytes.
pub fn parse_size(text: &str) -> Option<u64> {
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let n: u64 = text[..digits].parse().ok()?;
    let scale = match &text[digits..] {
        "B" | "" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return None,
    };
    Some(n * scale)
}

/// Splits `<bench>/<figure>/<subject>`; the figure may itself contain `/`.
pub fn split_id(id: &str) -> Option<(&str, &str, &str)> {
    let (bench, rest) = id.split_once('/')?;
    let (figure, subject) = rest.rsplit_once('/')?;
    (!bench.is_empty() && !figure.is_empty() && !subject.is_empty())
        .then_some((bench, figure, subject))
}

/// Parses one benchmark's `new/benchmark.json` and `new/estimates.json`.
pub fn parse_measurement(benchmark_json: &str, estimates_json: &str) -> Result<Measurement> {
    let id: Value =
        serde_json::from_str(benchmark_json).map_err(|e| format!("benchmark.json: {e}"))?;
    let full_id = match id["full_id"].as_str() {
        Some(full) => full.to_string(),
        None => {
            let group = id["group_id"]
                .as_str()
                .ok_or("benchmark.json has no group_id")?;
            [
                Some(group),
                id["function_id"].as_str(),
                id["value_str"].as_str(),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("/")
        }
    };
    let (bench, figure, subject) = split_id(&full_id).ok_or_else(|| {
        format!("benchmark `{full_id}` does not follow <bench>/<figure>/<subject>")
    })?;
    let throughput = match &id["throughput"] {
        Value::Null => None,
        t => {
            if let Some(n) = t["Elements"].as_u64() {
                Some(Throughput::Elements(n))
            } else if let Some(n) = t["Bytes"].as_u64().or(t["BytesDecimal"].as_u64()) {
                Some(Throughput::Bytes(n))
            } else {
                return Err(format!("benchmark `{full_id}`: unknown throughput {t}"));
            }
        }
    };
    let estimates: Value =
        serde_json::from_str(estimates_json).map_err(|e| format!("estimates.json: {e}"))?;
    let median_ns = estimates["median"]["point_estimate"]
        .as_f64()
        .filter(|m| m.is_finite() && *m > 0.0)
        .ok_or_else(|| format!("benchmark `{full_id}`: estimates.json has no median"))?;
    Ok(Measurement {
        bench: bench.into(),
        figure: figure.into(),
        subject: subject.into(),
        median_ns,
        throughput,
    })
}

pub(super) fn written_since(path: &Path, since: SystemTime) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t >= since)
}

/// Every benchmark under `criterion_home` whose `new/estimates.json` was written at or after
/// `since`. Results that cannot be read or do not follow the id contract become notes.
pub fn collect_criterion(
    criterion_home: &Path,
    since: SystemTime,
    notes: &mut Vec<String>,
) -> Result<Vec<Measurement>> {
    let mut found: BTreeMap<(String, String, String), (SystemTime, Measurement)> = BTreeMap::new();
    let mut pending = vec![criterion_home.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if entry.file_name() != "new" {
                pending.push(path);
                continue;
            }
            let estimates = path.join("estimates.json");
            let Ok(modified) = std::fs::metadata(&estimates).and_then(|m| m.modified()) else {
                continue;
            };
            if modified < since {
                continue;
            }
            let read = |name: &str| std::fs::read_to_string(path.join(name));
            let parsed = match (read("benchmark.json"), read("estimates.json")) {
                (Ok(b), Ok(e)) => parse_measurement(&b, &e),
                (Err(e), _) | (_, Err(e)) => Err(e.to_string()),
            };
            match parsed {
                Ok(m) => {
                    let key = (m.bench.clone(), m.figure.clone(), m.subject.clone());
                    let newer = found.get(&key).is_none_or(|(t, _)| *t <= modified);
                    if newer {
                        found.insert(key, (modified, m));
                    }
                }
                Err(e) => notes.push(format!("{} skipped: {e}", path.display())),
            }
        }
    }
    if !criterion_home.is_dir() {
        return Err(format!(
            "no criterion results in {}: did the benches run?",
            criterion_home.display()
        ));
    }
    Ok(found.into_values().map(|(_, m)| m).collect())
}
