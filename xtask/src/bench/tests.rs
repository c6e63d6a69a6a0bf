//! The pure parts of `cargo xtask bench`, on fixtures (xtask/tests/fixtures): no benchmark runs.

use super::*;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("fixtures")
}

pub(super) fn fixture(path: &str) -> String {
    std::fs::read_to_string(fixtures().join(path)).unwrap()
}

fn measurement(id: &str, median_ns: f64, throughput: Option<Throughput>) -> Measurement {
    let (bench, figure, subject) = split_id(id).unwrap();
    Measurement {
        bench: bench.into(),
        figure: figure.into(),
        subject: subject.into(),
        median_ns,
        throughput,
    }
}

/// Copies a directory tree (fresh mtimes), for tests that age some files.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xtask-bench-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn header() -> Header {
    Header {
        cpu: "Test CPU 9000".into(),
        cores: 2,
        date_utc: "2025-01-02 03:04 UTC".into(),
        quick: true,
        measure_secs: 123.0,
    }
}

#[test]
fn parses_a_criterion_benchmark() {
    let m = parse_measurement(
        &fixture("criterion/rtt_busy_32B/dpakit/new/benchmark.json"),
        &fixture("criterion/rtt_busy_32B/dpakit/new/estimates.json"),
    )
    .unwrap();
    assert_eq!(m, measurement("rtt/busy_32B/dpakit", 520.0, None));
    assert_eq!(m.value(), (520.0, Unit::Ns));

    let dma = parse_measurement(
        &fixture("criterion/dma_1MiB/memcpy/new/benchmark.json"),
        &fixture("criterion/dma_1MiB/memcpy/new/estimates.json"),
    )
    .unwrap();
    assert_eq!(dma.throughput, Some(Throughput::Bytes(1 << 20)));
    let (gib_s, unit) = dma.value();
    assert_eq!(unit, Unit::GibPerSec);
    // 1 MiB in 100 µs: 10 000 MiB/s.
    assert!((gib_s - 10_000.0 / 1024.0).abs() < 1e-9, "{gib_s}");
}

#[test]
fn ids_without_full_id_are_composed_and_checked() {
    let estimates = r#"{"median": {"point_estimate": 250.0}}"#;
    let m = parse_measurement(
        r#"{"group_id": "throughput/credits_16", "function_id": "rtrb", "value_str": null,
            "throughput": {"Elements": 16}}"#,
        estimates,
    )
    .unwrap();
    assert_eq!(
        (m.bench.as_str(), m.figure.as_str(), m.subject.as_str()),
        ("throughput", "credits_16", "rtrb")
    );
    // 16 messages in 250 ns.
    assert_eq!(m.value(), (64e6, Unit::MsgPerSec));

    let err = parse_measurement(
        r#"{"group_id": "rtt/raw_ping_pong", "function_id": null}"#,
        estimates,
    )
    .unwrap_err();
    assert!(err.contains("<bench>/<figure>/<subject>"), "{err}");
    let err = parse_measurement(r#"{"full_id": "a/b/c"}"#, r#"{"mean": {}}"#).unwrap_err();
    assert!(err.contains("no median"), "{err}");
}

#[test]
fn rates_without_a_declared_throughput() {
    // A throughput bench counts one message per iteration, a DMA bench the figure's size.
    let m = measurement("throughput/credits_1/mpsc", 100.0, None);
    assert_eq!(m.value(), (1e7, Unit::MsgPerSec));
    let m = measurement("dma/4KiB/memcpy", 1e9, None);
    assert_eq!(m.value(), (4096.0 / f64::from(1u32 << 30), Unit::GibPerSec));
    assert_eq!(
        measurement("threads/4/dpakit", 80.0, None).value().1,
        Unit::Ns
    );
    let m = measurement("threads/4/dpakit", 80.0, Some(Throughput::Elements(4)));
    assert_eq!(m.value(), (5e7, Unit::MsgPerSec));
    // A round trip is a latency whatever the bench declares; per message when it batches.
    let m = measurement("rtt/busy_0B/dpakit", 500.0, Some(Throughput::Elements(1)));
    assert_eq!(m.value(), (500.0, Unit::Ns));
    let m = measurement("rtt/busy_0B/dpakit", 5000.0, Some(Throughput::Elements(10)));
    assert_eq!(m.value(), (500.0, Unit::Ns));
    assert_eq!(parse_size("64B"), Some(64));
    assert_eq!(parse_size("64KiB"), Some(64 << 10));
    assert_eq!(parse_size("4MiB"), Some(4 << 20));
    assert_eq!(parse_size("busy_32B"), None);
    assert_eq!(split_id("rtt/busy_32B"), None);
    assert_eq!(split_id("a/b/c/d"), Some(("a", "b/c", "d")));
}

#[test]
fn collects_only_this_runs_results() {
    let home = scratch("collect");
    copy_tree(&fixtures().join("criterion"), &home);
    // An earlier run's result for a figure this run did not measure.
    let stale = home.join("rtt_busy_32B/unix_socket/new/estimates.json");
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();

    let mut notes = Vec::new();
    let since = SystemTime::now() - Duration::from_secs(60);
    let mut found = collect_criterion(&home, since, &mut notes).unwrap();
    found.sort_by(|a, b| (&a.bench, &a.figure, &a.subject).cmp(&(&b.bench, &b.figure, &b.subject)));
    let ids: Vec<String> = found
        .iter()
        .map(|m| format!("{}/{}/{}", m.bench, m.figure, m.subject))
        .collect();
    assert_eq!(
        ids,
        [
            "dma/1MiB/dpakit",
            "dma/1MiB/memcpy",
            "rtt/busy_32B/crossbeam",
            "rtt/busy_32B/dpakit",
            "rtt/busy_32B/raw_ping_pong",
            "throughput/credits_1024/dpakit",
            "throughput/credits_1024/rtrb",
        ]
    );
    // `base/` copies are not results of this run.
    let dpakit = found
        .iter()
        .find(|m| m.id_is("rtt/busy_32B/dpakit"))
        .unwrap();
    assert_eq!(dpakit.median_ns, 520.0);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("rtt/raw_ping_pong"), "{notes:?}");

    assert!(
        collect_criterion(&home.join("absent"), since, &mut notes).is_err(),
        "no criterion directory at all is an error"
    );
    let _ = std::fs::remove_dir_all(&home);
}

impl Measurement {
    fn id_is(&self, id: &str) -> bool {
        format!("{}/{}/{}", self.bench, self.figure, self.subject) == id
    }
}

fn fixture_measurements() -> Vec<Measurement> {
    vec![
        measurement(
            "dma/1MiB/memcpy",
            100_000.0,
            Some(Throughput::Bytes(1 << 20)),
        ),
        measurement("rtt/busy_32B/unix_socket", 9000.0, None),
        measurement("rtt/busy_32B/dpakit", 520.0, None),
        measurement("rtt/busy_32B/crossbeam", 900.0, None),
        measurement("rtt/busy_32B/raw_ping_pong", 430.0, None),
        measurement("rtt/busy_8B/dpakit", 500.0, None),
        measurement("rtt/busy_8B/raw_ping_pong", 420.0, None),
        measurement(
            "throughput/credits_1024/rtrb",
            51_200.0,
            Some(Throughput::Elements(1024)),
        ),
        measurement(
            "throughput/credits_1024/dpakit",
            102_400.0,
            Some(Throughput::Elements(1024)),
        ),
        measurement(
            "dma/1MiB/dpakit",
            200_000.0,
            Some(Throughput::Bytes(1 << 20)),
        ),
        measurement("dma/64B/dpakit", 100.0, Some(Throughput::Bytes(64))),
        measurement("threads/2/crossbeam", 300.0, None),
    ]
}

#[test]
fn rows_pair_dpakit_with_each_baseline_in_contract_order() {
    let (rows, notes) = build_rows(&fixture_measurements());
    let order: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.figure.as_str(), r.baseline_name.as_str()))
        .collect();
    assert_eq!(
        order,
        [
            ("rtt/busy_8B", "raw_ping_pong"),
            ("rtt/busy_32B", "raw_ping_pong"),
            ("rtt/busy_32B", "crossbeam"),
            ("rtt/busy_32B", "unix_socket"),
            ("throughput/credits_1024", "rtrb"),
            ("dma/1MiB", "memcpy"),
        ]
    );
    let rtt = &rows[1];
    assert_eq!(
        (rtt.dpakit, rtt.baseline, rtt.unit),
        (520.0, 430.0, Unit::Ns)
    );
    assert!((rtt.ratio - 520.0 / 430.0).abs() < 1e-12);
    assert!(!rtt.better(), "slower than the limit");
    assert!(rows[2].better(), "faster than crossbeam");

    let tp = &rows[4];
    assert_eq!(tp.unit, Unit::MsgPerSec);
    assert_eq!((tp.dpakit, tp.baseline), (1e7, 2e7));
    assert_eq!(tp.ratio, 0.5);
    assert!(!tp.better(), "half rtrb's rate");

    let dma = &rows[5];
    assert_eq!(dma.unit, Unit::GibPerSec);
    assert!((dma.ratio - 0.5).abs() < 1e-12);

    assert!(
        notes.iter().any(|n| n == "dma/64B: no baseline measured"),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n == "threads/2: no dpakit measurement"),
        "{notes:?}"
    );
}

#[test]
fn mixed_units_are_not_compared() {
    let (rows, notes) = build_rows(&[
        measurement("threads/4/dpakit", 100.0, Some(Throughput::Elements(4))),
        measurement("threads/4/mpsc", 400.0, None),
    ]);
    assert!(rows.is_empty());
    assert!(notes[0].contains("not compared"), "{notes:?}");
}

#[test]
fn report_json_has_the_contract_fields() {
    let (rows, _) = build_rows(&fixture_measurements());
    let json = rows_json(&rows);
    let first = &json[1];
    assert_eq!(first["figure"], "rtt/busy_32B");
    assert_eq!(first["baseline_name"], "raw_ping_pong");
    assert_eq!(first["dpakit"], 520.0);
    assert_eq!(first["baseline"], 430.0);
    assert_eq!(first["ratio"], 1.209);
    assert_eq!(first["unit"], "ns");
    assert_eq!(json[4]["unit"], "msg/s");
    assert_eq!(json[5]["unit"], "GiB/s");
    assert_eq!(json[5]["dpakit"], 4.88281);
    assert_eq!(json.as_array().unwrap().len(), rows.len());
}

#[test]
fn targets_are_evaluated_mechanically() {
    let (rows, _) = build_rows(&fixture_measurements());
    let targets = evaluate_targets(&rows);
    let verdicts: Vec<Verdict> = targets.iter().map(|t| t.verdict).collect();
    assert_eq!(
        verdicts,
        [
            Verdict::Met,
            Verdict::NoData,
            Verdict::NoData,
            Verdict::Missed,
            Verdict::NoData
        ]
    );
    assert!(
        targets[0].detail.contains("1.21× raw_ping_pong"),
        "{}",
        targets[0].detail
    );
    assert!(
        targets[0].detail.contains("below every peer"),
        "{}",
        targets[0].detail
    );
    assert!(targets[3].detail.contains("0.50×"), "{}", targets[3].detail);

    // Throughput needs both peers: at or above crossbeam and at least half of rtrb.
    for (crossbeam, rtrb, verdict) in [
        (4.0e6, 8.0e6, Verdict::Met),
        (6.0e6, 8.0e6, Verdict::Missed),
        (4.0e6, 9.5e6, Verdict::Missed),
    ] {
        let per_msg = |rate: f64| 1e9 * 1024.0 / rate;
        let elements = Some(Throughput::Elements(1024));
        let (rows, _) = build_rows(&[
            measurement("throughput/credits_1024/dpakit", per_msg(4.5e6), elements),
            measurement(
                "throughput/credits_1024/crossbeam",
                per_msg(crossbeam),
                elements,
            ),
            measurement("throughput/credits_1024/rtrb", per_msg(rtrb), elements),
        ]);
        let t = &evaluate_targets(&rows)[1];
        assert_eq!(t.verdict, verdict, "{}", t.detail);
    }

    // ISA mode: the ratio is the ISA figure over dpakit's native one.
    for (isa, verdict) in [(1_000.0, Verdict::Met), (1_300.0, Verdict::Missed)] {
        let (rows, _) = build_rows(&[
            measurement("rtt/busy_32B/dpakit", 400.0, None),
            measurement("rtt/busy_32B/dpakit_isa", isa, None),
        ]);
        let t = &evaluate_targets(&rows)[2];
        assert_eq!(t.verdict, verdict, "{}", t.detail);
        assert!(t.detail.contains("native 400 ns"), "{}", t.detail);
    }

    // Slower than one peer misses the first target even near the limit.
    let mut slow = fixture_measurements();
    slow.push(measurement("rtt/busy_32B/rtrb", 500.0, None));
    let (rows, _) = build_rows(&slow);
    let first = &evaluate_targets(&rows)[0];
    assert_eq!(first.verdict, Verdict::Missed);
    assert!(
        first.detail.contains("not below rtrb 500 ns"),
        "{}",
        first.detail
    );

    let none = evaluate_targets(&[]);
    assert!(none.iter().all(|t| t.verdict == Verdict::NoData));

    // The Comch control path: an absolute bound, whatever the socket pair does.
    for (ours, verdict) in [(6_400.0, Verdict::Missed), (1_200.0, Verdict::Met)] {
        let (rows, _) = build_rows(&[
            measurement("comch/ctrl_rtt_64B/dpakit", ours, None),
            measurement("comch/ctrl_rtt_64B/seqpacket_spin", 3_700.0, None),
        ]);
        let comch = &evaluate_targets(&rows)[4];
        assert_eq!(comch.verdict, verdict, "{}", comch.detail);
        assert!(comch.detail.contains("3.70 µs"), "{}", comch.detail);
    }
}

#[test]
fn markdown_report() {
    let (rows, notes) = build_rows(&fixture_measurements());
    let latency = parse_latency(&fixture("latency.json")).unwrap();
    let md = render_markdown(&header(), &rows, &latency, &notes, Some("latency.png"));
    for expected in [
        "# dpakit benchmark report",
        "- CPU: Test CPU 9000 (2 cores)",
        "- date: 2025-01-02 03:04 UTC",
        "- mode: quick",
        "ratio` = dpakit / baseline",
        "## rtt",
        "| figure | baseline | dpakit | baseline value | ratio | better? |",
        "| rtt/busy_32B | raw_ping_pong (limit) | 520 ns | 430 ns | 1.21× | no |",
        "| rtt/busy_32B | crossbeam | 520 ns | 900 ns | 0.58× | yes |",
        "| rtt/busy_32B | unix_socket | 520 ns | 9.00 µs | 0.058× | yes |",
        "| throughput/credits_1024 | rtrb | 10.0M msg/s | 20.0M msg/s | 0.50× | no |",
        "| dma/1MiB | memcpy | 4.88 GiB/s | 9.77 GiB/s | 0.50× | no |",
        "## threads\n\nNot measured in this run.",
        "| subject | p50 | p90 | p99 | p99.9 | round trips |",
        "| dpakit | 520 ns | 610 ns | 880 ns | 4.10 µs | 100000 |",
        "| raw_ping_pong (limit) | 410 ns | 450 ns | 620 ns | 1.90 µs | 100000 |",
        "![round-trip latency distribution](latency.png)",
        "- 32-byte busy round trip ≤ 1.5× raw ping-pong and below every peer: **met**",
        "- throughput at 1024 credits ≥ crossbeam and ≥ 0.5× rtrb: not measured",
        "- DMA 1 MiB ≥ 0.8× memcpy bandwidth: **missed**",
        "- dma/64B: no baseline measured",
    ] {
        assert!(md.contains(expected), "missing {expected:?} in\n{md}");
    }
    // Bench sections in contract order.
    let at = |s: &str| md.find(s).unwrap();
    assert!(at("## rtt") < at("## throughput"));
    assert!(at("## throughput") < at("## dma"));
    assert!(at("## dma") < at("## threads"));

    let empty = render_markdown(&header(), &[], &[], &[], None);
    assert!(empty.contains("## Round-trip latency distribution\n\nNot measured in this run."));
    assert!(empty.contains(": not measured — rtt/busy_32B was not measured"));
    assert!(!empty.contains("## Notes"));
}

#[test]
fn latency_json_shapes() {
    let dists = parse_latency(&fixture("latency.json")).unwrap();
    let subjects: Vec<&str> = dists.iter().map(|d| d.subject.as_str()).collect();
    assert_eq!(
        subjects,
        ["dpakit", "raw_ping_pong", "crossbeam", "unix_socket"]
    );
    assert_eq!(dists[0].percentiles, [520.0, 610.0, 880.0, 4100.0]);
    assert_eq!(dists[0].samples, Some(100_000));

    let keyed = parse_latency(
        r#"{"unit": "ns", "results": {
            "rtrb": {"percentiles": {"p50_ns": 700, "p90_ns": 800, "p99_ns": 900, "p99.9_ns": 1000}},
            "dpakit": {"p50_us": 0.5, "p90_us": 0.6, "p99_us": 0.7, "p999_us": 2}}}"#,
    )
    .unwrap();
    assert_eq!(keyed[0].subject, "dpakit");
    assert_eq!(keyed[0].percentiles, [500.0, 600.0, 700.0, 2000.0]);
    assert_eq!(keyed[1].subject, "rtrb");
    assert_eq!(keyed[1].percentiles, [700.0, 800.0, 900.0, 1000.0]);
    assert_eq!(keyed[1].samples, None);

    let array = parse_latency(
        r#"[{"name": "mpsc", "median": 3000, "p90": 4000, "p99": 5000, "p99_9": 9000, "count": 7}]"#,
    )
    .unwrap();
    assert_eq!(array[0].percentiles, [3000.0, 4000.0, 5000.0, 9000.0]);
    assert_eq!(array[0].samples, Some(7));

    let nested_us = parse_latency(
        r#"{"subjects": [{"subject": "dpakit",
            "latency_us": {"p50": 1, "p90": 2, "p99": 3, "p99.9": 4}}]}"#,
    )
    .unwrap();
    assert_eq!(nested_us[0].percentiles, [1e3, 2e3, 3e3, 4e3]);

    assert!(
        parse_latency(r#"{"dpakit": {"p50": 1}}"#).is_err(),
        "p90.. missing"
    );
    assert!(parse_latency("not json").is_err());
}

#[test]
fn dates_and_cpu_model() {
    let at = |secs: u64| utc_date(SystemTime::UNIX_EPOCH + Duration::from_secs(secs));
    assert_eq!(at(0), "1970-01-01 00:00 UTC");
    assert_eq!(at(951_782_400 + 3600 + 120), "2000-02-29 01:02 UTC");
    assert_eq!(at(1_735_689_599), "2024-12-31 23:59 UTC");
    assert_eq!(at(4_107_542_400), "2100-03-01 00:00 UTC");
    assert_eq!(
        model_name("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n"),
        Some("AMD EPYC 7B13".into())
    );
    assert_eq!(model_name("processor: 0\n"), None);
}

#[test]
fn value_formatting() {
    assert_eq!(format_ns(87.26), "87.3 ns");
    assert_eq!(format_ns(1250.0), "1.25 µs");
    assert_eq!(format_ns(3_400_000.0), "3.40 ms");
    assert_eq!(format_rate(512_345.0), "512k msg/s");
    assert_eq!(format_rate(12_340_000.0), "12.3M msg/s");
    assert_eq!(Unit::GibPerSec.format(9.765), "9.77 GiB/s");
    assert_eq!(round_sig(1.2093023, 4), 1.209);
    assert_eq!(format_ratio(1.2093), "1.21×");
    assert_eq!(format_ratio(0.1), "0.10×");
    assert_eq!(format_ratio(0.0578), "0.058×");
    assert_eq!(format_ratio(0.004855), "0.0049×");
    assert_eq!(round_sig(10_000_000.4, 6), 10_000_000.0);
}

#[test]
fn quick_arguments_are_criterion_options() {
    // Each option takes a value, and the sample size is criterion's minimum.
    assert_eq!(QUICK_CRITERION_ARGS.len() % 2, 0);
    for pair in QUICK_CRITERION_ARGS.chunks(2) {
        assert!(pair[0].starts_with("--"), "{pair:?}");
        assert!(pair[1].parse::<f64>().is_ok(), "{pair:?}");
    }
    let size = QUICK_CRITERION_ARGS
        .iter()
        .position(|a| *a == "--sample-size")
        .unwrap();
    assert!(QUICK_CRITERION_ARGS[size + 1].parse::<u32>().unwrap() >= 10);
}

#[test]
fn interleaved_check_sets_dpakit_beside_the_limit_and_each_peer() {
    let dist = |subject: &str, p50: f64| LatencyDist {
        subject: subject.into(),
        percentiles: [p50, p50 * 2.0, p50 * 3.0, p50 * 4.0],
        samples: Some(10),
    };
    let line = interleaved_rtt_check(&[
        dist("dpakit", 300.0),
        dist("raw_ping_pong", 100.0),
        dist("rtrb", 150.0),
    ])
    .unwrap();
    assert_eq!(
        line,
        "interleaved cross-check (latency example, p50): dpakit 300 ns = 3.00× raw_ping_pong \
         100 ns; 2.00× rtrb 150 ns"
    );
    assert!(interleaved_rtt_check(&[dist("dpakit", 300.0)]).is_none());
    assert!(interleaved_rtt_check(&[]).is_none());
}
