//! latency.svg: the latency distribution as grouped bars on a log axis, drawn with plotters'
//! SVG backend.
//!
//! One group per subject (named on the x axis, dpakit's group on a pale background, the limit
//! marked `(limit)`), one bar per percentile (p50, p90, p99, p99.9: one hue, darker for the
//! common case) with its value written above it, a log-scale y axis with a labelled grid line per
//! decade and faint ones at 2× and 5×, the legend and a title above it.
//! Values that are zero, negative or not finite have no bar.

use super::*;
use plotters::coord::Shift;
use plotters::prelude::{
    BindKeyPoints, ChartBuilder, Color, DrawingArea, DrawingAreaErrorKind, EmptyElement, FontStyle,
    FontTransform, IntoDrawingArea, IntoFont, IntoLogRange, LabelAreaPosition, RGBColor, Rectangle,
    SVGBackend, ShapeStyle, Text, TextStyle, WHITE,
};
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Bar colours for p50, p90, p99, p99.9: one hue, darker for the common case.
pub(super) const PERCENTILE_COLOURS: [RGBColor; 4] = [
    RGBColor(0x08, 0x51, 0x9c),
    RGBColor(0x31, 0x82, 0xbd),
    RGBColor(0x6b, 0xae, 0xd6),
    RGBColor(0xbd, 0xd7, 0xe7),
];

/// dpakit's group.
const HIGHLIGHT: RGBColor = RGBColor(0xff, 0xf3, 0xcd);
const INK: RGBColor = RGBColor(0x33, 0x33, 0x33);
const GREY: RGBColor = RGBColor(0x55, 0x55, 0x55);
const GRID: RGBColor = RGBColor(0xbb, 0xbb, 0xbb);
const GRID_MINOR: RGBColor = RGBColor(0xe6, 0xe6, 0xe6);

const FONT: &str = "DejaVu Sans, Verdana, sans-serif";
const TITLE: &str = "Round-trip latency of a 32-byte message";
const SUBTITLE: &str =
    "percentiles per subject, log scale, lower is better; raw_ping_pong is the physical limit";

// Layout, in pixels.
const LEFT: u32 = 80;
const RIGHT: u32 = 24;
/// A legend entry: swatch, name, gap.
const LEGEND_STEP: u32 = 66;
const TOP: u32 = 78;
const BOTTOM: u32 = 64;
const PLOT_H: u32 = 360;
const GROUP_W: i32 = 124;
const BAR_STEP: i32 = 22;
const BAR_W: i32 = 20;

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

/// Text of `px` pixels (plotters' SVG backend writes `font-size` as the size / 1.24).
fn font(px: f64) -> TextStyle<'static> {
    (FONT, px * 1.24).into_font().into()
}

/// The value a bar can show on a log axis.
fn plottable(ns: f64) -> bool {
    ns.is_finite() && ns > 0.0
}

/// Grouped bars (one group per subject, one bar per percentile) on a log-scale y axis, with a
/// label on every bar, decade grid lines and a legend.
pub fn latency_svg(dists: &[LatencyDist]) -> String {
    let plot_w = GROUP_W.unsigned_abs() * dists.len().max(1) as u32;
    // Wide enough for the legend even with a single subject.
    let width = LEFT + plot_w.max(4 * LEGEND_STEP) + RIGHT;
    let size = (width, TOP + PLOT_H + BOTTOM);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        if let Err(e) = draw(&root, dists) {
            // Not expected (the document is a String, the font metrics an estimate); the backend
            // still closes every element, so the file stays a valid if partial SVG.
            eprintln!("latency.svg: drawing failed: {e}");
        }
    }
    svg
}

fn draw(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    dists: &[LatencyDist],
) -> std::result::Result<(), DrawingAreaErrorKind<std::io::Error>> {
    root.fill(&WHITE)?;
    let width = root.dim_in_pixel().0 as i32;
    let centre = width / 2;
    let centred = Pos::new(HPos::Center, VPos::Bottom);
    root.draw(&Text::new(
        TITLE,
        (centre, 30),
        TextStyle::from((FONT, 16.0 * 1.24).into_font().style(FontStyle::Bold)).pos(centred),
    ))?;
    root.draw(&Text::new(
        SUBTITLE,
        (centre, 46),
        font(11.0).pos(centred).color(&GREY),
    ))?;
    // The legend, top right, above the plot (where it never hides a bar).
    let outline = ShapeStyle::from(INK.mix(0.8)).stroke_width(1);
    let step = LEGEND_STEP as i32;
    for (i, (name, colour)) in PERCENTILES.iter().zip(PERCENTILE_COLOURS).enumerate() {
        let x = width - RIGHT as i32 - 4 * step + i as i32 * step;
        let swatch = [(x, 52), (x + 12, 64)];
        root.draw(&Rectangle::new(swatch, colour.filled()))?;
        root.draw(&Rectangle::new(swatch, outline))?;
        let name_style = font(11.0).pos(Pos::new(HPos::Left, VPos::Center));
        root.draw(&Text::new(*name, (x + 16, 58), name_style))?;
    }

    // The y axis: whole decades, from the one below the fastest value to one with headroom above
    // the slowest for its label.
    let values = || {
        dists
            .iter()
            .flat_map(|d| d.percentiles)
            .filter(|&v| plottable(v))
    };
    let lo = values().fold(f64::INFINITY, f64::min);
    let hi = values().fold(0.0, f64::max);
    let (lo, hi) = if lo <= hi { (lo, hi) } else { (1.0, 10.0) };
    let lo_exp = lo.log10().floor() as i32;
    let hi_exp = ((hi * 2.5).log10().ceil() as i32).max(lo_exp + 1);
    let decades: Vec<f64> = (lo_exp..=hi_exp).map(|e| 10f64.powi(e)).collect();
    let minors: Vec<f64> = decades[..decades.len() - 1]
        .iter()
        .flat_map(|d| [2.0 * d, 5.0 * d])
        .collect();
    let (y_lo, y_hi) = (decades[0], decades[decades.len() - 1]);

    // The x axis in pixels: group g spans [g × GROUP_W, (g + 1) × GROUP_W), named at its centre.
    let plot_w = GROUP_W * dists.len().max(1) as i32;
    let left_of = |g: usize| g as i32 * GROUP_W;
    let centres: Vec<i32> = (0..dists.len()).map(|g| left_of(g) + GROUP_W / 2).collect();
    let subject_of = |x: &i32| {
        dists
            .get((x / GROUP_W) as usize)
            .map_or_else(String::new, |d| d.subject.clone())
    };
    let tick = |ns: &f64| tick_label(*ns);

    let mut chart = ChartBuilder::on(root)
        .margin_top(TOP)
        .margin_left(12)
        .margin_right(width as u32 - LEFT - plot_w as u32)
        .y_label_area_size(LEFT - 12)
        .x_label_area_size(BOTTOM)
        .build_cartesian_2d(
            (0..plot_w).with_key_points(centres),
            (y_lo..y_hi)
                .log_scale()
                .with_key_points(decades.clone())
                .with_light_points(minors),
        )?;

    // dpakit's group stands out, behind the grid.
    chart.draw_series(
        dists
            .iter()
            .enumerate()
            .filter(|(_, d)| d.subject == DPAKIT)
            .map(|(g, _)| {
                Rectangle::new(
                    [(left_of(g) + 2, y_lo), (left_of(g) + GROUP_W - 2, y_hi)],
                    HIGHLIGHT.filled(),
                )
            }),
    )?;

    chart
        .configure_mesh()
        .disable_x_mesh()
        .bold_line_style(GRID)
        .light_line_style(GRID_MINOR)
        .axis_style(INK)
        .set_tick_mark_size(LabelAreaPosition::Bottom, 4)
        .x_label_formatter(&subject_of)
        .y_label_formatter(&tick)
        .x_label_style(font(12.0))
        .y_label_style(font(11.0))
        .y_desc("round trip (log scale)")
        .axis_desc_style(font(12.0))
        .draw()?;

    let value_label = font(10.0)
        .transform(FontTransform::Rotate270)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let bars_start = (GROUP_W - 4 * BAR_STEP) / 2;
    for (i, colour) in PERCENTILE_COLOURS.into_iter().enumerate() {
        let bars = || {
            dists.iter().enumerate().filter_map(move |(g, d)| {
                let value = d.percentiles[i];
                let x = left_of(g) + bars_start + i as i32 * BAR_STEP;
                plottable(value).then_some(([(x, y_lo), (x + BAR_W, value.max(y_lo))], value))
            })
        };
        chart.draw_series(bars().map(|(corners, _)| Rectangle::new(corners, colour.filled())))?;
        chart.draw_series(bars().map(|(corners, _)| Rectangle::new(corners, outline)))?;
        chart.draw_series(bars().map(|([(x0, _), (x1, top)], value)| {
            EmptyElement::at(((x0 + x1) / 2, top))
                + Text::new(format_ns(value), (0, -4), value_label.clone())
        }))?;
    }

    // Under the limit's name.
    chart.draw_series(
        dists
            .iter()
            .enumerate()
            .filter(|(_, d)| d.subject == LIMIT)
            .map(|(g, _)| {
                EmptyElement::at((left_of(g) + GROUP_W / 2, y_lo))
                    + Text::new(
                        "(limit)",
                        (0, 24),
                        font(10.0)
                            .pos(Pos::new(HPos::Center, VPos::Top))
                            .color(&GREY),
                    )
            }),
    )?;

    root.present()
}
