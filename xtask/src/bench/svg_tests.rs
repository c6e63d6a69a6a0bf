//! latency.svg on the fixture: the SVG parses, every bar stands where its value says with its
//! label above it, names are escaped, bad values are survived.

use super::tests::fixture;
use super::*;

/// An element of an SVG document: its name, its attributes and, for `<text>`, its text
/// (trimmed, still escaped).
#[derive(Debug)]
struct SvgElement {
    name: String,
    attrs: BTreeMap<String, String>,
    text: String,
}

impl SvgElement {
    fn attr(&self, key: &str) -> &str {
        self.attrs.get(key).map_or("", String::as_str)
    }

    fn num(&self, key: &str) -> f64 {
        self.attr(key)
            .parse()
            .unwrap_or_else(|_| panic!("{key} of {self:?}"))
    }
}

/// Parses `svg` as XML without namespaces, DTDs, comments or CDATA (none of which the chart
/// has), panicking on anything malformed: a stray `<` or `&`, an unquoted attribute, a close
/// tag that does not match, an element left open, more than one root. Returns the elements in
/// document order.
fn parse_svg(svg: &str) -> Vec<SvgElement> {
    fn check_text(text: &str) {
        assert!(!text.contains('<') && !text.contains('>'), "{text:?}");
        for (at, _) in text.match_indices('&') {
            let rest = &text[at..];
            assert!(
                ["&lt;", "&gt;", "&amp;", "&quot;", "&apos;"]
                    .iter()
                    .any(|e| rest.starts_with(e)),
                "bare & in {text:?}"
            );
        }
    }
    let mut elements: Vec<SvgElement> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    let mut roots = 0;
    let mut rest = svg.trim_end();
    while !rest.is_empty() {
        let lt = rest.find('<').unwrap_or(rest.len());
        let text = &rest[..lt];
        check_text(text);
        match open.last() {
            Some(&e) => elements[e].text.push_str(text.trim()),
            None => assert!(text.trim().is_empty(), "text outside the root: {text:?}"),
        }
        rest = &rest[lt..];
        if rest.is_empty() {
            break;
        }
        let gt = rest.find('>').expect("unterminated tag");
        let tag = &rest[1..gt];
        rest = &rest[gt + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let e = open.pop().expect("close tag without an open one");
            assert_eq!(elements[e].name, name.trim());
            continue;
        }
        let (body, empty) = match tag.strip_suffix('/') {
            Some(body) => (body, true),
            None => (tag, false),
        };
        let name_end = body.find(char::is_whitespace).unwrap_or(body.len());
        let name = &body[..name_end];
        assert!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric()),
            "tag {tag:?}"
        );
        let mut attrs = BTreeMap::new();
        let mut a = body[name_end..].trim_start();
        while !a.is_empty() {
            let eq = a
                .find("=\"")
                .unwrap_or_else(|| panic!("attribute in {tag:?}"));
            let key = &a[..eq];
            assert!(
                key.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == ':'),
                "attribute name {key:?}"
            );
            let value_len = a[eq + 2..].find('"').expect("unterminated attribute");
            let value = &a[eq + 2..eq + 2 + value_len];
            check_text(value);
            assert!(attrs.insert(key.to_string(), value.to_string()).is_none());
            a = a[eq + 2 + value_len + 1..].trim_start();
        }
        if open.is_empty() {
            roots += 1;
        }
        elements.push(SvgElement {
            name: name.to_string(),
            attrs,
            text: String::new(),
        });
        if !empty {
            open.push(elements.len() - 1);
        }
    }
    assert!(open.is_empty(), "left open: {open:?}");
    assert_eq!(roots, 1);
    assert_eq!(elements[0].name, "svg");
    assert_eq!(elements[0].attr("xmlns"), "http://www.w3.org/2000/svg");
    elements
}

/// The texts of a chart.
fn svg_texts(elements: &[SvgElement]) -> Vec<&str> {
    elements
        .iter()
        .filter(|e| e.name == "text")
        .map(|e| e.text.as_str())
        .collect()
}

/// A chart's bars (x, top, width, height) in document order, and its legend swatches: the
/// filled rectangles in a percentile's colour.
fn svg_bars(elements: &[SvgElement]) -> [Vec<[f64; 4]>; 4] {
    PERCENTILE_COLOURS.map(|c| {
        let colour = format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2);
        elements
            .iter()
            .filter(|e| e.name == "rect" && e.attr("fill").eq_ignore_ascii_case(&colour))
            .map(|e| [e.num("x"), e.num("y"), e.num("width"), e.num("height")])
            .collect()
    })
}

#[test]
fn svg_has_bars_labels_log_axis_and_legend() {
    let dists = parse_latency(&fixture("latency.json")).unwrap();
    let n = dists.len();
    let svg = latency_svg(&dists);
    assert!(svg.starts_with("<svg"));
    assert!(svg.trim_end().ends_with("</svg>"));
    assert!(!svg.contains("NaN") && !svg.contains("inf"));
    let elements = parse_svg(&svg);
    let texts = svg_texts(&elements);
    for text in [
        "Round-trip latency of a 32-byte message",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "dpakit",
        "raw_ping_pong",
        "crossbeam",
        "unix_socket",
        "(limit)",
        "round trip (log scale)",
    ] {
        assert_eq!(
            texts.iter().filter(|t| **t == text).count(),
            1,
            "{text} in {texts:?}"
        );
    }

    // Values from 410 ns to 60 µs: decades 100 ns … 1 ms (headroom for labels), equally spaced.
    let decades = ["100 ns", "1 µs", "10 µs", "100 µs", "1 ms"];
    let ticks: Vec<&SvgElement> = elements
        .iter()
        .filter(|e| e.name == "text" && decades.contains(&e.text.as_str()))
        .collect();
    assert_eq!(
        ticks.iter().map(|e| e.text.as_str()).collect::<Vec<_>>(),
        decades
    );
    let tick_ys: Vec<f64> = ticks.iter().map(|e| e.num("y")).collect();
    let decade_h = tick_ys[0] - tick_ys[1];
    assert!(decade_h > 50.0, "{tick_ys:?}");
    assert!(
        tick_ys
            .windows(2)
            .all(|w| (w[0] - w[1] - decade_h).abs() <= 1.0),
        "{tick_ys:?}"
    );
    let (bottom, top) = (tick_ys[0], tick_ys[4]);

    // Each colour: one bar per subject and the legend's swatch (above the plot).
    let bars = svg_bars(&elements);
    let mut all_bars = Vec::new();
    for (p, mut rects) in bars.into_iter().enumerate() {
        assert_eq!(rects.len(), n + 1, "{}: {rects:?}", PERCENTILES[p]);
        let swatch = rects.remove(0);
        assert!(swatch[1] + swatch[3] < top, "{swatch:?}");
        rects.sort_by(|a, b| a[0].total_cmp(&b[0]));
        for (d, rect) in dists.iter().zip(rects) {
            all_bars.push((d.percentiles[p], rect));
        }
    }
    let plot_x = elements
        .iter()
        .find(|e| e.name == "line")
        .map(|e| (e.num("x1"), e.num("x2")))
        .unwrap();
    for &(value, [x, y, w, h]) in &all_bars {
        // Inside the plot, standing on its floor, as tall as the log of its value.
        assert!(plot_x.0 <= x && x + w <= plot_x.1, "{x} {w} {plot_x:?}");
        assert!(
            (y + h - bottom).abs() <= 1.0,
            "{value}: {y} + {h} vs {bottom}"
        );
        let expected = (value / 100.0).log10() * decade_h;
        assert!(
            (h - expected).abs() <= 2.0,
            "{value}: height {h}, {expected}"
        );
    }

    // A value label above every bar, each in its own place.
    let labels: Vec<&SvgElement> = elements
        .iter()
        .filter(|e| e.name == "text" && e.attr("transform").starts_with("rotate(270"))
        .filter(|e| e.text != "round trip (log scale)")
        .collect();
    assert_eq!(labels.len(), 4 * n);
    for (value, [x, y, w, _]) in &all_bars {
        let label = labels
            .iter()
            .find(|l| l.num("x") > *x && l.num("x") < x + w)
            .unwrap_or_else(|| panic!("no label over the bar of {value}"));
        assert_eq!(label.text, format_ns(*value));
        assert!(label.num("y") < *y && label.num("y") > y - 10.0);
    }
    let mut xs: Vec<i64> = labels.iter().map(|l| l.num("x") as i64).collect();
    xs.dedup();
    assert_eq!(xs.len(), 4 * n, "labels piled up: {xs:?}");

    // dpakit's group stands out, behind its bars.
    let highlights: Vec<&SvgElement> = elements
        .iter()
        .filter(|e| e.name == "rect" && e.attr("fill").eq_ignore_ascii_case("#fff3cd"))
        .collect();
    assert_eq!(highlights.len(), 1, "dpakit stands out");
    let dpakit = elements.iter().find(|e| e.text == "dpakit").unwrap();
    let (hx, hw) = (highlights[0].num("x"), highlights[0].num("width"));
    assert!(hx < dpakit.num("x") && dpakit.num("x") < hx + hw);
}

#[test]
fn svg_escapes_names_and_survives_bad_values() {
    let dist = |subject: &str, percentiles: [f64; 4]| LatencyDist {
        subject: subject.into(),
        percentiles,
        samples: None,
    };
    let svg = latency_svg(&[dist("a<b>&c\"d'", [1.0, 2.0, 3.0, 4.0])]);
    let texts_of = |svg: &str| {
        let elements = parse_svg(svg);
        svg_texts(&elements)
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(texts_of(&svg).contains(&"a&lt;b&gt;&amp;c&quot;d&apos;".to_string()));
    assert!(!svg.contains("a<b"));

    // No value at all: still a chart, with its axes and legend but no bar.
    for dists in [
        vec![],
        vec![dist("dead", [0.0, -1.0, f64::NAN, f64::INFINITY])],
    ] {
        let svg = latency_svg(&dists);
        let elements = parse_svg(&svg);
        let texts = svg_texts(&elements);
        assert!(
            texts.contains(&"p99.9") && texts.contains(&"1 ns"),
            "{texts:?}"
        );
        assert!(svg_bars(&elements).iter().all(|c| c.len() == 1));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }

    // Only the values a log axis can show get a bar and a label.
    let svg = latency_svg(&[
        dist("dpakit", [0.0, f64::NAN, 300.0, f64::INFINITY]),
        dist("rtrb", [200.0, -5.0, 400.0, 900.0]),
    ]);
    let elements = parse_svg(&svg);
    let bars = svg_bars(&elements);
    assert_eq!(bars.map(|c| c.len()), [2, 1, 3, 2]);
    let texts = svg_texts(&elements);
    for label in ["300 ns", "200 ns", "400 ns", "900 ns", "dpakit", "rtrb"] {
        assert!(texts.contains(&label), "{label} in {texts:?}");
    }
    assert!(!svg.contains("NaN") && !svg.contains("inf"));
}

/// Writes a sample chart for a look: `cargo test -p xtask -- --ignored sample_latency_svg`.
#[test]
#[ignore = "writes latency_sample.svg to the temporary directory"]
fn sample_latency_svg() {
    let dist = |subject: &str, percentiles: [f64; 4]| LatencyDist {
        subject: subject.into(),
        percentiles,
        samples: Some(100_000),
    };
    let svg = latency_svg(&[
        dist("dpakit", [240.0, 310.0, 920.0, 6_400.0]),
        dist("raw_ping_pong", [130.0, 150.0, 210.0, 1_800.0]),
        dist("crossbeam", [290.0, 380.0, 1_300.0, 9_800.0]),
        dist("rtrb", [180.0, 230.0, 640.0, 4_100.0]),
        dist("mpsc", [500.0, 720.0, 3_900.0, 30_000.0]),
    ]);
    let path = std::env::temp_dir().join("latency_sample.svg");
    std::fs::write(&path, svg).unwrap();
    println!("{}", path.display());
}
