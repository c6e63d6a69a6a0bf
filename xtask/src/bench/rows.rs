//! Rows of the report: each dpakit figure beside each baseline of the same run.

use super::*;

/// One figure of dpakit beside one baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `<bench>/<figure>`.
    pub figure: String,
    /// dpakit's value.
    pub dpakit: f64,
    /// The baseline's value.
    pub baseline: f64,
    /// The baseline's subject name.
    pub baseline_name: String,
    /// `dpakit / baseline`.
    pub ratio: f64,
    /// The unit of both values.
    pub unit: Unit,
}

impl Row {
    /// Whether dpakit beats the baseline (lower latency, or higher rate).
    pub fn better(&self) -> bool {
        if self.unit.higher_is_better() {
            self.dpakit > self.baseline
        } else {
            self.dpakit < self.baseline
        }
    }

    /// The bench part of the figure.
    pub fn bench(&self) -> &str {
        self.figure.split('/').next().unwrap_or_default()
    }
}

pub(super) fn rank<'a>(order: &'a [&'a str], name: &'a str) -> (usize, &'a str) {
    (
        order.iter().position(|o| *o == name).unwrap_or(order.len()),
        name,
    )
}

pub(super) fn baseline_rank(name: &str) -> (usize, &str) {
    let order: Vec<&str> = BASELINES.iter().map(|(n, _)| *n).collect();
    (
        order.iter().position(|o| *o == name).unwrap_or(order.len()),
        name,
    )
}

pub(super) fn figure_order(bench: &str) -> &'static [&'static str] {
    FIGURES
        .iter()
        .find(|(b, _)| *b == bench)
        .map_or(&[], |(_, f)| f)
}

/// One row per (figure, baseline) pair that has both a dpakit and a baseline measurement,
/// ordered by bench, figure and baseline as the contract lists them. Measurements that cannot
/// be paired become notes.
pub fn build_rows(measurements: &[Measurement]) -> (Vec<Row>, Vec<String>) {
    let mut notes = Vec::new();
    let mut by_figure: BTreeMap<(&str, &str), Vec<&Measurement>> = BTreeMap::new();
    for m in measurements {
        by_figure
            .entry((m.bench.as_str(), m.figure.as_str()))
            .or_default()
            .push(m);
    }
    let mut figures: Vec<(&str, &str)> = by_figure.keys().copied().collect();
    figures.sort_by(|(b1, f1), (b2, f2)| {
        rank(BENCHES, b1)
            .cmp(&rank(BENCHES, b2))
            .then_with(|| rank(figure_order(b1), f1).cmp(&rank(figure_order(b2), f2)))
    });

    let mut rows = Vec::new();
    for key @ (bench, figure) in figures {
        let mut subjects = by_figure[&key].clone();
        subjects.sort_by(|a, b| baseline_rank(&a.subject).cmp(&baseline_rank(&b.subject)));
        let Some(dpakit) = subjects.iter().find(|m| m.subject == DPAKIT) else {
            notes.push(format!("{bench}/{figure}: no dpakit measurement"));
            continue;
        };
        let (ours, unit) = dpakit.value();
        let mut baselines = 0;
        for base in subjects.iter().filter(|m| m.subject != DPAKIT) {
            let (theirs, their_unit) = base.value();
            if their_unit != unit {
                notes.push(format!(
                    "{bench}/{figure}: dpakit is in {} but {} in {}: not compared",
                    unit.as_str(),
                    base.subject,
                    their_unit.as_str()
                ));
                continue;
            }
            baselines += 1;
            rows.push(Row {
                figure: format!("{bench}/{figure}"),
                dpakit: ours,
                baseline: theirs,
                baseline_name: base.subject.clone(),
                ratio: ours / theirs,
                unit,
            });
        }
        if baselines == 0 {
            notes.push(format!("{bench}/{figure}: no baseline measured"));
        }
    }
    (rows, notes)
}

/// Rounds to `digits` significant digits (keeps report.json readable).
pub(super) fn round_sig(value: f64, digits: i32) -> f64 {
    if value == 0.0 || !value.is_finite() {
        return value;
    }
    let scale = 10f64.powi(digits - 1 - value.abs().log10().floor() as i32);
    (value * scale).round() / scale
}

/// What `report.json` holds.
pub fn rows_json(rows: &[Row]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                json!({
                    "figure": r.figure,
                    "dpakit": round_sig(r.dpakit, 6),
                    "baseline": round_sig(r.baseline, 6),
                    "baseline_name": r.baseline_name,
                    "ratio": round_sig(r.ratio, 4),
                    "unit": r.unit.as_str(),
                })
            })
            .collect(),
    )
}
