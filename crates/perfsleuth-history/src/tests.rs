use super::*;
use perfsleuth_model::GitInfo;
use perfsleuth_stats::Rng;

fn env(cpu: &str, kernel: &str) -> Environment {
    let mut e = Environment::default();
    e.set("cpu.model", cpu, ImpactClass::Identity);
    e.set("cpu.logical_cores", "2", ImpactClass::Identity);
    e.set("kernel.release", kernel, ImpactClass::Identity);
    e.set("cpu.freq.governor", "performance", ImpactClass::Performance);
    e.set("noise.loadavg", "0.1", ImpactClass::Context);
    e
}

/// `n` runs of one benchmark; run `i` measures `level(i)` with 1 % noise,
/// on environment `env_of(i)`.
fn stored(n: usize, level: impl Fn(usize) -> f64, env_of: impl Fn(usize) -> i64) -> Vec<Stored> {
    let mut rng = Rng::new(3);
    (0..n)
        .map(|i| Stored {
            entry: HistoryEntry {
                benchmark_id: i as i64,
                run_id: i as i64 + 1,
                started_at: format!("2026-11-{:02}T{:02}:00:00Z", 1 + i / 24, i % 24),
                git: Some(GitInfo {
                    commit: format!("{i:07x}{}", "0".repeat(33)),
                    branch: Some("main".into()),
                    dirty: false,
                }),
                mode: Mode::Walltime,
                environment_id: env_of(i),
                name: "work".into(),
                parameters: BTreeMap::new(),
                binary_sha256: None,
                argv: "[\"./work\"]".into(),
                summary: None,
            },
            summary: summarize(
                &(0..20)
                    .map(|_| 1e7 * level(i) * (1.0 + 0.01 * rng.next_normal()))
                    .collect::<Vec<f64>>(),
            ),
        })
        .collect()
}

/// The history of `pts` in time order with the default method.
fn build_default(pts: Vec<Stored>) -> HistoryDoc {
    build(
        pts,
        &envs(),
        &BTreeMap::new(),
        Metric::Wall,
        &Order::Time,
        &Filter::default(),
        &Options::default(),
    )
}

fn envs() -> BTreeMap<i64, Environment> {
    BTreeMap::from([
        (1, env("Xeon", "6.1.0")),
        (2, env("Xeon", "6.8.0")),
        (3, env("EPYC", "6.1.0")),
    ])
}

#[test]
fn a_seeded_step_is_code_and_a_seeded_kernel_change_is_the_machine() {
    // Runs 0..30 at 1.0; a code step of +5 % at 30; the kernel changes at
    // 60 with a further +8 %.
    let pts = stored(
        90,
        |i| match i {
            0..30 => 1.0,
            30..60 => 1.05,
            _ => 1.05 * 1.08,
        },
        |i| if i < 60 { 1 } else { 2 },
    );
    let doc = build_default(pts);
    assert_eq!(
        doc.series.len(),
        1,
        "one machine: the kernel is a marker, not a new series"
    );
    let s = &doc.series[0];
    assert_eq!(s.markers.len(), 1);
    assert_eq!(s.markers[0].index, 60);
    assert!(
        s.markers[0].changes[0].summary.contains("6.1.0"),
        "{:?}",
        s.markers
    );
    let idx: Vec<usize> = s.change_points.iter().map(|c| c.index).collect();
    assert_eq!(idx, [30, 60], "{:?}", s.change_points);
    let code = &s.change_points[0];
    assert_eq!(
        (code.cause, code.regression),
        (HistoryCause::Code, Some(true))
    );
    assert!((code.change - 0.05).abs() < 0.01 && code.ci[0] > 0.0);
    assert!(
        code.summary.contains("no environment change"),
        "{}",
        code.summary
    );
    assert_eq!(code.after.as_deref(), Some("000001e00000"));
    let machine = &s.change_points[1];
    assert_eq!(machine.cause, HistoryCause::Environment);
    assert!(
        machine.summary.contains("in the same run")
            && machine.summary.contains("probably the machine"),
        "{}",
        machine.summary
    );
    let text = render_terminal(&doc, false);
    assert!(
        text.contains("regression:") && text.contains("environment changed at point 61"),
        "{text}"
    );
    assert!(render_markdown(&doc).contains("| SEGMENT |"));
}

#[test]
fn machines_that_differ_in_hardware_are_separate_series() {
    let pts = stored(
        20,
        |i| if i % 2 == 0 { 1.0 } else { 1.5 },
        |i| if i % 2 == 0 { 1 } else { 3 },
    );
    let doc = build_default(pts);
    assert_eq!(doc.series.len(), 2);
    for s in &doc.series {
        assert_eq!(s.points.len(), 10);
        assert!(s.change_points.is_empty(), "{:?}", s.change_points);
    }
}

#[test]
fn short_series_say_why_nothing_is_detected() {
    let pts = stored(3, |_| 1.0, |_| 1);
    let doc = build_default(pts);
    assert_eq!(
        doc.series[0].note.as_deref(),
        Some("3 points: change points need at least 4")
    );
}

#[test]
fn check_fails_once_for_a_new_code_regression_and_never_for_the_environment() {
    let opts = Options::default();
    let run = |n: usize, env_at: usize| {
        let pts = stored(
            n,
            |i| if i >= 40 { 1.10 } else { 1.0 },
            |i| if i >= env_at { 2 } else { 1 },
        );
        let mut doc = build(
            pts,
            &envs(),
            &BTreeMap::new(),
            Metric::Wall,
            &Order::Time,
            &Filter::default(),
            &opts,
        );
        let findings = check(&mut doc, Some(n as i64), &opts);
        let c = doc.check.expect("check stores its result");
        assert_eq!(c.failed, findings.iter().any(|f| f.fails));
        c
    };
    // Up to the step: nothing to report.
    assert!(!run(40, 1000).failed);
    // The run that makes the +10 % step visible fails the check ...
    let first_alert = (41..50)
        .find(|&n| run(n, 1000).failed)
        .expect("some run alerts");
    assert!(run(first_alert, 1000).reasons[0].starts_with("regression:"));
    // ... and the next run does not alert again.
    assert!(!run(first_alert + 1, 1000).failed);
    // The same step with a kernel change at it never fails.
    let c = run(first_alert, 40);
    assert!(
        !c.failed && c.reasons[0].starts_with("not failing"),
        "{c:?}"
    );
}

#[test]
fn git_order_beats_time_order_and_filters_apply() {
    // Commit positions reverse the time order.
    let pts = stored(10, |i| 1.0 + i as f64, |_| 1);
    let pos: HashMap<String, usize> = pts
        .iter()
        .map(|p| {
            (
                p.entry.git.as_ref().unwrap().commit.clone(),
                10 - p.entry.run_id as usize,
            )
        })
        .collect();
    let doc = build(
        pts,
        &envs(),
        &BTreeMap::new(),
        Metric::Wall,
        &Order::Git(pos),
        &Filter {
            last: Some(4),
            ..Filter::default()
        },
        &Options::default(),
    );
    assert_eq!(doc.order, "git first-parent");
    let ids: Vec<i64> = doc.series[0]
        .points
        .iter()
        .map(|p| p.run_id.unwrap())
        .collect();
    assert_eq!(ids, [4, 3, 2, 1]);
    let entries: Vec<HistoryEntry> = stored(3, |_| 1.0, |_| 1)
        .into_iter()
        .map(|s| s.entry)
        .collect();
    let f = Filter {
        benchmarks: vec!["nope".into()],
        ..Filter::default()
    };
    assert!(
        matches!(select(entries.clone(), &f, &Order::Time), Err(HistoryError::UnknownBenchmark(_, k)) if k == ["work"])
    );
    let f = Filter {
        branch: Some("dev".into()),
        ..Filter::default()
    };
    assert!(matches!(
        select(entries.clone(), &f, &Order::Time),
        Err(HistoryError::NoRuns(_))
    ));
    let f = Filter {
        since_time: Some("2026-11-01T02:00:00Z".into()),
        ..Filter::default()
    };
    assert_eq!(select(entries, &f, &Order::Time).unwrap().len(), 1);
}

#[test]
fn a_stable_baseline_skips_a_segment_too_short_to_trust() {
    let pts = stored(42, |i| if i >= 40 { 1.3 } else { 1.0 }, |_| 1);
    let doc = build_default(pts);
    let s = &doc.series[0];
    assert_eq!(s.change_points.len(), 1, "{:?}", s.change_points);
    let (idx, after) = stable_baseline(s).unwrap();
    assert_eq!((idx, after.is_none()), (39, true));
    let pts = stored(44, |i| if i >= 40 { 1.3 } else { 1.0 }, |_| 1);
    let doc = build_default(pts);
    let (idx, after) = stable_baseline(&doc.series[0]).unwrap();
    assert_eq!((idx, after.map(|c| c.index)), (43, Some(40)));
}

#[test]
fn history_fit_reads_otava_s_csv_example() {
    let text = "time,commit,metric1,metric2
2026.01.01 3:00:00 +0100,aaa0,154023,10.43
2026.01.02 3:00:00 +0100,aaa1,138455,10.23
2026.01.03 3:00:00 +0100,aaa2,143112,10.29
2026.01.04 3:00:00 +0100,aaa3,149190,10.91
2026.01.05 3:00:00 +0100,aaa4,132098,10.34
2026.01.06 3:00:00 +0100,aaa5,151344,10.69
2026.01.07 3:00:00 +0100,aaa6,155145,9.23
2026.01.08 3:00:00 +0100,aaa7,148889,9.11
2026.01.09 3:00:00 +0100,aaa8,149466,9.13
2026.01.10 3:00:00 +0100,aaa9,148209,9.03
";
    let csv = read_csv(text, None).unwrap();
    let opts = Options {
        min_change: Some(0.0),
        ..Options::default()
    };
    let doc = fit(&csv, &opts);
    assert!(doc.series[0].change_points.is_empty());
    let cp = &doc.series[1].change_points;
    assert_eq!(cp.len(), 1);
    assert_eq!((cp[0].index, cp[0].after.as_deref()), (6, Some("aaa6")));
    assert!(cp[0].summary.starts_with("-12.9%"), "{}", cp[0].summary);
    let json = serde_json::to_string(&doc).unwrap();
    assert!(json.contains("\"perfsleuth/history\""));
}

#[test]
fn markers_index_the_points_kept_when_a_run_has_no_value() {
    // Run 2 has no finite value (a counter it did not record): its point
    // is left out, and the kernel change at run 5 is marked at point 4.
    let mut pts = stored(8, |_| 1.0, |i| if i < 5 { 1 } else { 2 });
    pts[2].summary = None;
    let doc = build_default(pts);
    let s = &doc.series[0];
    assert_eq!(s.points.len(), 7);
    assert_eq!(s.markers.len(), 1);
    assert_eq!(s.markers[0].index, 4);
    assert_eq!(s.points[4].run_id, Some(6));
}

#[test]
fn byte_identical_programs_that_step_together_are_the_machine_not_the_code() {
    // Three benchmarks in each of 60 runs; all on one machine with no
    // recorded change. `a` and `b` keep one binary throughout and both get
    // +10 % / +12 % slower at run 30; `c` gets a new binary at run 30 and
    // +6 % slower: a code change in the same run.
    let series = |name: &str, id: i64, step: f64, new_binary: bool| {
        let mut pts = stored(60, |i| if i < 30 { 1.0 } else { 1.0 + step }, |_| 1);
        for (i, p) in pts.iter_mut().enumerate() {
            p.entry.name = name.to_string();
            p.entry.benchmark_id = 3 * i as i64 + id;
            let version = if new_binary && i >= 30 { "v2" } else { "v1" };
            p.entry.binary_sha256 = Some(format!("{name}-{version}"));
        }
        pts
    };
    let mut pts = series("a", 0, 0.10, false);
    pts.extend(series("b", 1, 0.12, false));
    pts.extend(series("c", 2, 0.06, true));
    let doc = build_default(pts);
    let cause = |name: &str| {
        let s = doc.series.iter().find(|s| s.benchmark == name).unwrap();
        assert_eq!(s.change_points.len(), 1, "{name}: {:?}", s.change_points);
        s.change_points[0].clone()
    };
    for name in ["a", "b"] {
        let c = cause(name);
        assert_eq!(c.cause, HistoryCause::Machine, "{name}: {}", c.summary);
        assert!(
            c.summary
                .contains("2 benchmarks whose programs are byte-identical either side moved")
                && c.summary
                    .ends_with("one common step — the machine, not the code"),
            "{}",
            c.summary
        );
    }
    let c = cause("c");
    assert_eq!(c.cause, HistoryCause::Code, "{}", c.summary);

    // One byte-identical program alone keeps its cause, and says so.
    let doc = build_default(series("a", 0, 0.10, false));
    let c = &doc.series[0].change_points[0];
    assert_eq!(c.cause, HistoryCause::Code);
    assert!(
        c.summary.contains("byte-identical either side"),
        "{}",
        c.summary
    );
}

#[test]
fn a_series_too_short_to_search_says_so_once_and_not_that_it_has_no_change_point() {
    // The history page said both "No change point." and "1 point: change
    // points need at least 4" for a one-point series (issue 38).
    let csv = read_csv("commit,value\naaa0,10\n", None).unwrap();
    let doc = fit(&csv, &Options::default());
    let html = render_html(&doc);
    assert!(!html.contains("No change point."), "{html}");
    assert_eq!(
        html.matches("1 point: change points need at least 4")
            .count(),
        1,
        "{html}"
    );
}
