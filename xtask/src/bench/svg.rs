//! latency.svg: the latency distribution as grouped bars on a log axis.

use super::*;

/// Bar colours for p50, p90, p99, p99.9: one hue, darker for the common case.
pub(super) const PERCENTILE_COLOURS: [&str; 4] = ["#08519c", "#3182bd", "#6baed6", "#bdd7e7"];

/// A decade on the y axis: `100 ns`, `1 µs`, `10 ms`.
pub(super) fn tick_label(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{} µs", ns / 1e3)
    } else {
        format!("{ns} ns")
    }
}

pub(super) fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Grouped bars (one group per subject, one bar per percentile) on a log-scale y axis, with a
/// label on every bar, decade grid lines and a legend.
pub fn latency_svg(dists: &[LatencyDist]) -> String {
    const LEFT: f64 = 80.0;
    const RIGHT: f64 = 24.0;
    const TOP: f64 = 78.0;
    const BOTTOM: f64 = 64.0;
    const PLOT_H: f64 = 360.0;
    const GROUP_W: f64 = 124.0;
    const BAR_W: f64 = 22.0;

    let values: Vec<f64> = dists
        .iter()
        .flat_map(|d| d.percentiles)
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    let (lo, hi) = if values.is_empty() {
        (1.0, 10.0)
    } else {
        (lo, hi)
    };
    let lo_exp = lo.log10().floor() as i32;
    // Headroom above the tallest bar for its label.
    let hi_exp = ((hi * 2.5).log10().ceil() as i32).max(lo_exp + 1);
    let plot_w = GROUP_W * dists.len().max(1) as f64;
    let width = LEFT + plot_w + RIGHT;
    let height = TOP + PLOT_H + BOTTOM;
    let bottom = TOP + PLOT_H;
    let y_of = |v: f64| {
        let t =
            (v.max(10f64.powi(lo_exp)).log10() - f64::from(lo_exp)) / f64::from(hi_exp - lo_exp);
        bottom - t * PLOT_H
    };

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="DejaVu Sans, Verdana, sans-serif">"##
    );
    let _ = writeln!(
        svg,
        r##"<rect x="0" y="0" width="{width:.0}" height="{height:.0}" fill="white"/>"##
    );
    let _ = writeln!(
        svg,
        r##"<text x="{:.0}" y="24" font-size="16" font-weight="bold" text-anchor="middle">Round-trip latency of a 32-byte message</text>"##,
        width / 2.0
    );
    let _ = writeln!(
        svg,
        r##"<text x="{:.0}" y="42" font-size="11" fill="#555" text-anchor="middle">percentiles per subject, log scale, lower is better; raw_ping_pong is the physical limit</text>"##,
        width / 2.0
    );

    // Legend, top right.
    for (i, (name, colour)) in PERCENTILES.iter().zip(PERCENTILE_COLOURS).enumerate() {
        let x = width - RIGHT - 4.0 * 66.0 + i as f64 * 66.0;
        let _ = writeln!(
            svg,
            r##"<rect class="legend" x="{x:.1}" y="52" width="12" height="12" fill="{colour}" stroke="#333" stroke-width="0.5"/><text x="{:.1}" y="62" font-size="11">{name}</text>"##,
            x + 16.0
        );
    }

    // dpakit's group stands out, behind the grid.
    for (g, dist) in dists.iter().enumerate() {
        if dist.subject == DPAKIT {
            let _ = writeln!(
                svg,
                r##"<rect class="highlight" x="{:.1}" y="{TOP:.0}" width="{:.1}" height="{PLOT_H:.0}" fill="#fff3cd"/>"##,
                LEFT + g as f64 * GROUP_W + 2.0,
                GROUP_W - 4.0
            );
        }
    }

    // Grid: decades labelled, 2× and 5× faint.
    for exp in lo_exp..=hi_exp {
        let decade = 10f64.powi(exp);
        let y = y_of(decade);
        let _ = writeln!(
            svg,
            r##"<line class="grid" x1="{LEFT:.0}" y1="{y:.1}" x2="{:.0}" y2="{y:.1}" stroke="#bbb" stroke-width="1"/><text class="tick" x="{:.0}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            y + 4.0,
            tick_label(decade)
        );
        if exp < hi_exp {
            for minor in [2.0, 5.0] {
                let y = y_of(decade * minor);
                let _ = writeln!(
                    svg,
                    r##"<line x1="{LEFT:.0}" y1="{y:.1}" x2="{:.0}" y2="{y:.1}" stroke="#e6e6e6" stroke-width="1"/>"##,
                    LEFT + plot_w
                );
            }
        }
    }
    let _ = writeln!(
        svg,
        r##"<text x="18" y="{:.0}" font-size="12" text-anchor="middle" transform="rotate(-90 18 {:.0})">round trip (log scale)</text>"##,
        TOP + PLOT_H / 2.0,
        TOP + PLOT_H / 2.0
    );

    for (g, dist) in dists.iter().enumerate() {
        let x0 = LEFT + g as f64 * GROUP_W;
        let bars_x = x0 + (GROUP_W - 4.0 * BAR_W) / 2.0;
        for (i, (&value, colour)) in dist.percentiles.iter().zip(PERCENTILE_COLOURS).enumerate() {
            if !(value.is_finite() && value > 0.0) {
                continue;
            }
            let x = bars_x + i as f64 * BAR_W;
            let y = y_of(value);
            let _ = writeln!(
                svg,
                r##"<rect class="bar" x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{colour}" stroke="#333" stroke-width="0.5"><title>{} {}: {}</title></rect>"##,
                BAR_W - 2.0,
                (bottom - y).max(0.5),
                xml_escape(&dist.subject),
                PERCENTILES[i],
                format_ns(value)
            );
            let (lx, ly) = (x + BAR_W / 2.0 + 3.0, y - 4.0);
            let _ = writeln!(
                svg,
                r##"<text class="value" x="{lx:.1}" y="{ly:.1}" font-size="10" transform="rotate(-90 {lx:.1} {ly:.1})">{}</text>"##,
                format_ns(value)
            );
        }
        let weight = if dist.subject == DPAKIT {
            "bold"
        } else {
            "normal"
        };
        let _ = writeln!(
            svg,
            r##"<text class="subject" x="{:.1}" y="{:.1}" font-size="12" font-weight="{weight}" text-anchor="middle">{}</text>"##,
            x0 + GROUP_W / 2.0,
            bottom + 18.0,
            xml_escape(&dist.subject)
        );
        if dist.subject == LIMIT {
            let _ = writeln!(
                svg,
                r##"<text x="{:.1}" y="{:.1}" font-size="10" fill="#555" text-anchor="middle">(limit)</text>"##,
                x0 + GROUP_W / 2.0,
                bottom + 32.0
            );
        }
    }
    let _ = writeln!(
        svg,
        r##"<line x1="{LEFT:.0}" y1="{bottom:.1}" x2="{:.0}" y2="{bottom:.1}" stroke="#333" stroke-width="1"/><line x1="{LEFT:.0}" y1="{TOP:.0}" x2="{LEFT:.0}" y2="{bottom:.1}" stroke="#333" stroke-width="1"/>"##,
        LEFT + plot_w
    );
    svg.push_str("</svg>\n");
    svg
}
