//! Unit tests on hand-built runs; every bootstrap is seeded, so every
//! assertion is deterministic.

use super::*;
use perfsleuth_model::{Benchmark, Mode, RunStatus};
use perfsleuth_model::{Environment, Run};
use perfsleuth_model::{Metric, Sample};
use perfsleuth_stats::{Verdict, VerdictRule, mann_whitney_u, smallest_p};
use std::collections::BTreeMap;

const MS: f64 = 1e6;

/// The compare document as the JSON value a reader sees.
fn json_of(c: &Comparison) -> serde_json::Value {
    serde_json::to_value(to_json(c)).unwrap()
}

fn sample(i: usize, wall_ns: f64) -> Sample {
    Sample {
        iteration: i as u32,
        wall_ns: wall_ns.round() as u64,
        user_ns: (wall_ns * 0.9).round() as u64,
        sys_ns: (wall_ns * 0.05).round() as u64,
        peak_rss_bytes: 8 * 1024 * 1024,
        exit_code: Some(0),
        ..Sample::default()
    }
}

fn bench(name: &str, walls: &[f64]) -> Benchmark {
    Benchmark {
        name: name.to_string(),
        command: name.to_string(),
        argv: vec![name.to_string()],
        samples: walls
            .iter()
            .enumerate()
            .map(|(i, &w)| sample(i, w))
            .collect(),
        ..Benchmark::default()
    }
}

fn with_params(mut b: Benchmark, params: &[(&str, &str)]) -> Benchmark {
    b.parameters = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    b
}

fn with_hash(mut b: Benchmark, hash: &str) -> Benchmark {
    b.facts.set("binary.sha256", hash, ImpactClass::Identity);
    b
}

fn machine() -> Environment {
    let mut e = Environment::default();
    e.set("cpu.model", "Test CPU 3000", ImpactClass::Identity);
    e.set("kernel.release", "6.8.0", ImpactClass::Identity);
    e.set("cpu.freq.governor", "performance", ImpactClass::Performance);
    e.set("noise.loadavg", "0.10 0.10 0.10", ImpactClass::Context);
    e
}

fn run(id: i64, env: Environment, benchmarks: Vec<Benchmark>) -> Run {
    Run {
        id: Some(id),
        uuid: None,
        started_at: format!("2025-01-01T00:00:{:02}.000Z", id % 60),
        ended_at: None,
        status: RunStatus::Complete,
        tool_version: "0.1.0".to_string(),
        git: None,
        mode: Mode::Walltime,
        options: serde_json::Value::Null,
        environment: env,
        benchmarks,
        probes: Vec::new(),
    }
}

fn side(label: &str, runs: Vec<Run>) -> Side {
    Side {
        label: label.to_string(),
        runs,
    }
}

/// `n` values around `level` on an even grid of +-`spread` (relative),
/// shuffled deterministically.
fn around(level: f64, spread: f64, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let k = (i * 7) % n;
            let u = if n > 1 {
                k as f64 / (n - 1) as f64
            } else {
                0.5
            };
            level * (1.0 + spread * (2.0 * u - 1.0))
        })
        .collect()
}

/// A benchmark measured in rounds at these levels (ms), `n` samples a round
/// spread ±`spread` around each.
fn in_rounds(name: &str, levels: &[f64], spread: f64, n: usize) -> Benchmark {
    let mut b = bench(name, &[]);
    for (r, &l) in levels.iter().enumerate() {
        for (i, w) in around(l * MS, spread, n).into_iter().enumerate() {
            let mut s = sample(r * n + i, w);
            s.round = r as u32;
            b.samples.push(s);
        }
    }
    b
}

/// Options with fewer resamples, so debug-build tests stay quick, no
/// assumed between-run noise and wall time judged as named: these tests
/// are about the rule itself (the prior, learned noise and the judged time
/// have their own tests).
fn opts() -> Options {
    Options {
        resamples: 2_000,
        prior: false,
        judge_time: false,
        metrics: vec![Metric::Wall, Metric::User, Metric::Sys, Metric::PeakRss],
        ..Options::default()
    }
}

fn one(base: Vec<Benchmark>, cand: Vec<Benchmark>) -> Comparison {
    compare(
        &side("base", vec![run(1, machine(), base)]),
        &side("cand", vec![run(2, machine(), cand)]),
        &opts(),
    )
}

fn row<'a>(c: &'a Comparison, key: &str, metric: Metric) -> &'a Row {
    c.rows
        .iter()
        .find(|r| r.key() == key && r.metric == metric)
        .unwrap_or_else(|| panic!("no row {key} {metric:?} in {:#?}", c.rows))
}

fn stat(v: Verdict) -> VerdictLabel {
    crate::label(v)
}

#[test]
fn defaults_match_the_spec() {
    let o = Options::default();
    assert_eq!(o.rule, VerdictRule::default());
    assert_eq!(o.gating, vec![Metric::Wall]);
    assert_eq!(o.metrics, vec![Metric::Wall, Metric::Cpu, Metric::PeakRss]);
    assert!(o.judge_time);
    assert_eq!(o.fdr_q, Some(0.05));
    assert_eq!(o.resamples, 10_000);
    assert_eq!(
        VerdictLabel::EnvironmentChanged.as_str(),
        "environment changed"
    );
    assert_eq!(stat(Verdict::NoChange).to_string(), "no change");
}

#[test]
fn clear_ten_percent_shift_is_a_regression() {
    let base = around(100.0 * MS, 0.02, 30);
    let cand: Vec<f64> = base.iter().map(|v| v * 1.10).collect();
    let c = one(vec![bench("sort", &base)], vec![bench("sort", &cand)]);
    let wall = row(&c, "sort", Metric::Wall);
    assert_eq!(wall.verdict, stat(Verdict::Regressed));
    assert!(wall.gating);
    let ch = wall.change.as_ref().unwrap();
    assert!((ch.change - 0.10).abs() < 0.005, "{ch:?}");
    assert!(ch.ci.lo > 0.01 && ch.ci.contains(ch.change));
    assert!(wall.p_value.unwrap() < 1e-6);
    assert_eq!((wall.n_baseline, wall.n_candidate), (30, 30));
    // Peak RSS did not move: constant and equal.
    assert_eq!(
        row(&c, "sort", Metric::PeakRss).verdict,
        stat(Verdict::NoChange)
    );
    assert!(!row(&c, "sort", Metric::User).gating);
    assert!(any_gating_regression(&c));
    assert!(!c.fdr_applied, "one benchmark: nothing to adjust");
    assert!(!c.identity_changed && c.env_changes.is_empty());
    let text = render_terminal(&c, false);
    assert!(text.contains("regressed"), "{text}");
    assert!(text.contains("+10.0% ["), "{text}");
    assert!(text.contains("100.000 ms"), "{text}");
    assert!(text.contains("8.0 MiB"), "{text}");
    assert!(!text.contains('\x1b'));
    let coloured = render_terminal(&c, true);
    assert!(coloured.contains("\x1b[31mregressed\x1b[0m"), "{coloured}");
}

#[test]
fn improvement_is_green() {
    let base = around(100.0 * MS, 0.02, 30);
    let cand: Vec<f64> = base.iter().map(|v| v * 0.8).collect();
    let c = one(vec![bench("sort", &base)], vec![bench("sort", &cand)]);
    assert_eq!(
        row(&c, "sort", Metric::Wall).verdict,
        stat(Verdict::Improved)
    );
    assert!(!any_gating_regression(&c));
    assert!(render_terminal(&c, true).contains("\x1b[32mimproved\x1b[0m"));
}

#[test]
fn a_a_identical_data_is_no_change_when_tight_and_inconclusive_when_noisy() {
    // 250 ms runs, so that system time (5 %) is more than one 10 ms tick.
    let x = around(250.0 * MS, 0.002, 25);
    let c = one(vec![bench("a", &x)], vec![bench("a", &x)]);
    assert_eq!(c.rows.len(), 4);
    for r in &c.rows {
        assert_eq!(r.verdict, stat(Verdict::NoChange), "{r:?}");
        assert_eq!(r.change.as_ref().unwrap().change, 0.0);
    }
    assert!(!any_gating_regression(&c));
    assert!(render_markdown(&c).starts_with("### perfsleuth compare: `base` → `cand`"));
    assert!(render_markdown(&c).contains("No regressions: 4 no change"));
    // ±5 % noise: the same data, but a CI of about ±3 % cannot show the change
    // is within ±1 %. Not "no change", and never a regression.
    let noisy = around(50.0 * MS, 0.05, 25);
    let c = one(vec![bench("a", &noisy)], vec![bench("a", &noisy)]);
    let wall = row(&c, "a", Metric::Wall);
    assert_eq!(wall.verdict, stat(Verdict::Inconclusive), "{wall:?}");
    assert!(
        wall.notes.iter().any(|n| n.contains("more runs per side")),
        "{:?}",
        wall.notes
    );
    assert!(!any_gating_regression(&c));
}

#[test]
fn half_percent_shift_with_tight_data_is_no_change() {
    let base = around(100.0 * MS, 0.001, 30);
    let cand: Vec<f64> = base.iter().map(|v| v * 1.005).collect();
    let c = one(vec![bench("b", &base)], vec![bench("b", &cand)]);
    let wall = row(&c, "b", Metric::Wall);
    assert!(wall.p_value.unwrap() < 0.001);
    // Significant, but the whole CI is inside the ±1 % band.
    assert_eq!(wall.verdict, stat(Verdict::NoChange), "{wall:?}");
    assert!(!any_gating_regression(&c));
}

#[test]
fn a_ci_across_the_band_edge_is_inconclusive_and_says_what_would_decide() {
    // +1.5 % with ±2 % noise on 8 samples: the CI reaches across +1 %.
    let base = around(100.0 * MS, 0.02, 8);
    let cand: Vec<f64> = base.iter().map(|v| v * 1.015).collect();
    let c = one(vec![bench("w", &base)], vec![bench("w", &cand)]);
    let wall = row(&c, "w", Metric::Wall);
    assert_eq!(wall.verdict, stat(Verdict::Inconclusive), "{wall:?}");
    let note = wall
        .notes
        .iter()
        .find(|n| n.starts_with("inconclusive:"))
        .unwrap_or_else(|| panic!("{:?}", wall.notes));
    assert!(
        note.contains("reaches across the ±1.0% threshold") && note.contains("more runs per side"),
        "{note}"
    );
}

#[test]
fn fewer_than_three_samples_is_insufficient_data() {
    let c = one(
        vec![bench("tiny", &[10.0 * MS, 10.1 * MS])],
        vec![bench("tiny", &[20.0 * MS, 20.2 * MS])],
    );
    let wall = row(&c, "tiny", Metric::Wall);
    assert_eq!(wall.verdict, stat(Verdict::InsufficientData));
    assert!(wall.notes.iter().any(|n| n.contains("too few samples")));
    assert!(!any_gating_regression(&c));
}

#[test]
fn zero_variance_equal_samples_are_no_change() {
    let c = one(
        vec![bench("const", &[5.0 * MS; 6])],
        vec![bench("const", &[5.0 * MS; 6])],
    );
    for r in &c.rows {
        // 5 ms runs: user (4.5 ms) and system time (0.25 ms) are below one
        // 10 ms tick, so they are not judged at all.
        let want = if matches!(r.metric, Metric::User | Metric::Sys) {
            Verdict::InsufficientData
        } else {
            Verdict::NoChange
        };
        assert_eq!(r.verdict, stat(want), "{r:?}");
    }
    // Constant and 20% apart: a regression a rank test can still show.
    let c = one(
        vec![bench("const", &[5.0 * MS; 6])],
        vec![bench("const", &[6.0 * MS; 6])],
    );
    assert_eq!(
        row(&c, "const", Metric::Wall).verdict,
        stat(Verdict::Regressed)
    );
}

#[test]
fn all_zero_metric_is_unchanged_and_zero_baseline_is_insufficient() {
    let mut b = bench("z", &around(MS, 0.01, 10));
    let mut cnd = b.clone();
    for s in b.samples.iter_mut().chain(cnd.samples.iter_mut()) {
        s.sys_ns = 0;
    }
    let c = one(vec![b.clone()], vec![cnd.clone()]);
    assert_eq!(row(&c, "z", Metric::Sys).verdict, stat(Verdict::NoChange));
    for s in &mut cnd.samples {
        s.sys_ns = 1000;
    }
    let c = one(vec![b], vec![cnd]);
    let sys = row(&c, "z", Metric::Sys);
    assert_eq!(sys.verdict, stat(Verdict::InsufficientData));
    assert!(sys.notes.iter().any(|n| n.contains("baseline median is 0")));
}

#[test]
fn identity_change_marks_every_row_and_opens_the_report() {
    let base = around(100.0 * MS, 0.02, 20);
    let cand: Vec<f64> = base.iter().map(|v| v * 1.10).collect();
    let mut other = machine();
    other.set("cpu.model", "Other CPU 9000", ImpactClass::Identity);
    other.set("cpu.freq.governor", "powersave", ImpactClass::Performance);
    other.set("noise.loadavg", "3.00 1.00 0.50", ImpactClass::Context);
    let c = compare(
        &side("base", vec![run(1, machine(), vec![bench("x", &base)])]),
        &side("cand", vec![run(2, other, vec![bench("x", &cand)])]),
        &opts(),
    );
    assert!(c.identity_changed);
    let keys: Vec<&str> = c.env_changes.iter().map(|ch| ch.key.as_str()).collect();
    assert_eq!(
        keys,
        ["cpu.model", "cpu.freq.governor"],
        "context is left out"
    );
    assert!(!c.rows.is_empty());
    for r in &c.rows {
        assert_eq!(r.verdict, VerdictLabel::EnvironmentChanged);
    }
    let wall = row(&c, "x", Metric::Wall);
    assert!(
        wall.notes
            .iter()
            .any(|n| n == "statistically regressed, but the machines differ")
    );
    assert!(!any_gating_regression(&c));
    let text = render_terminal(&c, false);
    assert!(text.starts_with(MACHINES_DIFFER), "{text}");
    let first_lines: Vec<&str> = text.lines().take(3).collect();
    assert!(
        first_lines[1].contains("CPU: Test CPU 3000 → Other CPU 9000"),
        "{text}"
    );
    assert!(first_lines[2].contains("a different CPU"), "{text}");
    assert!(text.contains("frequency governor: performance → powersave"));
    assert!(text.contains("environment changed"));
    let md = render_markdown(&c);
    assert!(
        md.starts_with("### ⚠️ Environment changed\n\nThe machines differ"),
        "{md}"
    );
    assert!(md.contains("**Not comparable**"));
    let j = json_of(&c);
    assert_eq!(j["identity_changed"], true);
    assert_eq!(j["env_changes"][0]["class"], "identity");
    assert_eq!(j["rows"][0]["verdict"], "environment changed");
}

#[test]
fn performance_only_change_keeps_verdicts_with_a_note() {
    let base = around(100.0 * MS, 0.02, 20);
    let cand: Vec<f64> = base.iter().map(|v| v * 1.10).collect();
    let mut boosted = machine();
    boosted.set("cpu.boost", "on", ImpactClass::Performance);
    let mut slower = machine();
    slower.set("cpu.freq.governor", "powersave", ImpactClass::Performance);
    slower.set("cpu.boost", "off", ImpactClass::Performance);
    let c = compare(
        &side("base", vec![run(1, boosted, vec![bench("x", &base)])]),
        &side("cand", vec![run(2, slower, vec![bench("x", &cand)])]),
        &opts(),
    );
    assert!(!c.identity_changed);
    let wall = row(&c, "x", Metric::Wall);
    assert_eq!(wall.verdict, stat(Verdict::Regressed));
    assert!(
        wall.notes.iter().any(
            |n| n == "possibly environmental: cpu.freq.governor, cpu.boost"
                || n == "possibly environmental: cpu.boost, cpu.freq.governor"
        ),
        "{:?}",
        wall.notes
    );
    // Unchanged rows carry no attribution.
    assert!(row(&c, "x", Metric::PeakRss).notes.is_empty());
    assert!(any_gating_regression(&c));
    let text = render_terminal(&c, false);
    assert!(text.starts_with("baseline: base   candidate: cand"));
    assert!(text.contains("Performance-relevant facts differ"));
    assert!(text.contains("possibly environmental"));
    let md = render_markdown(&c);
    assert!(md.contains("#### Environment"));
    assert!(md.contains("possibly environmental: "));
}

#[test]
fn same_binary_regression_says_so() {
    let base = around(100.0 * MS, 0.02, 20);
    let cand: Vec<f64> = base.iter().map(|v| v * 1.10).collect();
    let c = one(
        vec![with_hash(bench("x", &base), "abc")],
        vec![with_hash(bench("x", &cand), "abc")],
    );
    let wall = row(&c, "x", Metric::Wall);
    assert_eq!(wall.verdict, stat(Verdict::Regressed));
    assert!(wall.notes.iter().any(|n| n == SAME_BINARY_NOTE));
    assert!(render_terminal(&c, false).contains("same binary, different result"));
    // Another binary: the code changed, nothing to say.
    let c = one(
        vec![with_hash(bench("x", &base), "abc")],
        vec![with_hash(bench("x", &cand), "def")],
    );
    assert!(row(&c, "x", Metric::Wall).notes.is_empty());
    // Same binary, not a change: nothing to say about the binary either.
    let c = one(
        vec![with_hash(bench("x", &base), "abc")],
        vec![with_hash(bench("x", &base), "abc")],
    );
    let notes = &row(&c, "x", Metric::Wall).notes;
    assert!(!notes.iter().any(|n| n == SAME_BINARY_NOTE), "{notes:?}");
    // Same binary on different machines: still noted, before the override.
    let mut other = machine();
    other.set("kernel.release", "6.9.0", ImpactClass::Identity);
    let c = compare(
        &side(
            "b",
            vec![run(1, machine(), vec![with_hash(bench("x", &base), "abc")])],
        ),
        &side(
            "c",
            vec![run(2, other, vec![with_hash(bench("x", &cand), "abc")])],
        ),
        &opts(),
    );
    let wall = row(&c, "x", Metric::Wall);
    assert_eq!(wall.verdict, VerdictLabel::EnvironmentChanged);
    assert!(wall.notes.iter().any(|n| n == SAME_BINARY_NOTE));
}

#[test]
fn benjamini_hochberg_over_three_benchmarks() {
    let x = around(100.0 * MS, 0.02, 20);
    let slow: Vec<f64> = x.iter().map(|v| v * 1.10).collect();
    let y = around(30.0 * MS, 0.03, 20);
    let y2: Vec<f64> = y.iter().map(|v| v * 1.004).collect();
    let z = around(7.0 * MS, 0.01, 20);
    let c = one(
        vec![bench("x", &x), bench("y", &y), bench("z", &z)],
        vec![bench("x", &slow), bench("y", &y2), bench("z", &z)],
    );
    assert!(c.fdr_applied);
    assert_eq!(c.fdr_comparisons(), 3);
    for r in &c.rows {
        if r.gating {
            let (p, adj) = (r.p_value.unwrap(), r.p_adjusted.unwrap());
            assert!(adj >= p, "{r:?}");
        } else {
            assert_eq!(r.p_adjusted, None, "only gating metrics are adjusted");
        }
    }
    assert_eq!(row(&c, "x", Metric::Wall).verdict, stat(Verdict::Regressed));
    let sentence = "p-values adjusted for 3 comparisons (Benjamini–Hochberg)";
    assert!(render_terminal(&c, false).contains(sentence));
    assert!(render_markdown(&c).contains(sentence));
    assert_eq!(json_of(&c)["fdr_comparisons"], 3);

    // Turned off: no adjustment, no sentence.
    let no_fdr = Options {
        fdr_q: None,
        ..opts()
    };
    let c = compare(
        &side(
            "b",
            vec![run(1, machine(), vec![bench("x", &x), bench("y", &y)])],
        ),
        &side(
            "c",
            vec![run(2, machine(), vec![bench("x", &slow), bench("y", &y)])],
        ),
        &no_fdr,
    );
    assert!(!c.fdr_applied);
    assert!(c.rows.iter().all(|r| r.p_adjusted.is_none()));
    assert!(!render_terminal(&c, false).contains("Benjamini"));
}

#[test]
fn adjusted_p_decides_the_gating_verdict() {
    // Medians clearly 10% apart (tight cores of 20 samples), but each side
    // has a tail of 4 beyond the other's core, so the rank test is only
    // moderately sure: raw p just below 0.05, adjusted over 3 comparisons
    // above it. Regressed alone, not after adjustment. Seconds long, so that
    // user and system time change by more than a scheduler tick.
    let base = [
        around(2000.0 * MS, 0.001, 20),
        around(2400.0 * MS, 0.001, 4),
    ]
    .concat();
    let cand = [
        around(2200.0 * MS, 0.001, 20),
        around(1800.0 * MS, 0.001, 4),
    ]
    .concat();
    let p = mann_whitney_u(&base, &cand).unwrap().p_value;
    assert!(p > 0.05 / 3.0 && p < 0.05, "fixture p = {p}");
    let alone = one(vec![bench("m", &base)], vec![bench("m", &cand)]);
    let three = one(
        vec![bench("m", &base), bench("n", &base), bench("o", &base)],
        vec![bench("m", &cand), bench("n", &base), bench("o", &base)],
    );
    let (a, t) = (
        row(&alone, "m", Metric::Wall),
        row(&three, "m", Metric::Wall),
    );
    assert_eq!(a.verdict, stat(Verdict::Regressed), "{a:?}");
    assert_eq!(a.p_value, t.p_value);
    assert_eq!(a.change, t.change);
    assert!(t.p_adjusted.unwrap() >= 0.05);
    // The CI still lies wholly beyond the threshold: not a regression after
    // adjustment, but not "unchanged" either — the interval and the test disagree.
    assert_eq!(t.verdict, stat(Verdict::Inconclusive), "{t:?}");
    // Non-gating metrics keep their raw p: user time still regressed.
    assert_eq!(
        row(&three, "m", Metric::User).verdict,
        stat(Verdict::Regressed)
    );
    assert!(!any_gating_regression(&three));
}

#[test]
fn run_to_run_shift_widens_the_ci_instead_of_claiming_a_regression() {
    // Each run sits at its own level (another boot, another thermal state);
    // within a run the samples spread +-2%. Candidate runs are 3% slower on
    // average, but the run levels overlap: 100/103 vs 103/106.
    let runs_at = |levels: &[f64]| -> Vec<Vec<f64>> {
        levels.iter().map(|&l| around(l * MS, 0.02, 50)).collect()
    };
    let (b, cd) = (runs_at(&[100.0, 103.0]), runs_at(&[103.0, 106.0]));
    let hier = compare(
        &side(
            "base",
            vec![
                run(1, machine(), vec![bench("h", &b[0])]),
                run(2, machine(), vec![bench("h", &b[1])]),
            ],
        ),
        &side(
            "cand",
            vec![
                run(3, machine(), vec![bench("h", &cd[0])]),
                run(4, machine(), vec![bench("h", &cd[1])]),
            ],
        ),
        &opts(),
    );
    let pooled = one(
        vec![bench("h", &b.concat())],
        vec![bench("h", &cd.concat())],
    );
    let (h, p) = (
        row(&hier, "h", Metric::Wall),
        row(&pooled, "h", Metric::Wall),
    );
    assert_eq!((h.n_baseline, h.n_candidate), (100, 100));
    assert_eq!(h.baseline_median, p.baseline_median);
    assert_eq!(
        p.verdict,
        stat(Verdict::Regressed),
        "pooling claims it: {p:?}"
    );
    assert_ne!(h.verdict, stat(Verdict::Regressed), "{h:?}");
    let (hc, pc) = (h.change.as_ref().unwrap(), p.change.as_ref().unwrap());
    assert!(hc.ci.width() > 2.0 * pc.ci.width(), "{hc:?} vs {pc:?}");
    assert!(hc.ci.lo <= 0.01);
    assert!(!any_gating_regression(&hier));
    assert!(hier.notes.is_empty(), "same machine: {:?}", hier.notes);
}

#[test]
fn rounds_of_one_run_are_groups_like_runs() {
    // One run per side, each in 5 rounds at their own levels (the machine's
    // speed wanders over seconds): the rounds widen the CI just as five
    // runs would, so a 3 % gap between levels that overlap is not claimed.
    let levels_b = [100.0, 104.0, 98.0, 103.0, 99.0];
    let levels_c = [103.0, 106.0, 101.0, 107.0, 102.0];
    let rounds = one(
        vec![in_rounds("h", &levels_b, 0.01, 20)],
        vec![in_rounds("h", &levels_c, 0.01, 20)],
    );
    let flat = |b: Benchmark| -> Benchmark {
        let mut b = b;
        for s in &mut b.samples {
            s.round = 0;
        }
        b
    };
    let pooled = one(
        vec![flat(in_rounds("h", &levels_b, 0.01, 20))],
        vec![flat(in_rounds("h", &levels_c, 0.01, 20))],
    );
    let (r, p) = (
        row(&rounds, "h", Metric::Wall),
        row(&pooled, "h", Metric::Wall),
    );
    assert_eq!(
        p.verdict,
        stat(Verdict::Regressed),
        "pooled rounds claim it: {p:?}"
    );
    assert_eq!(r.verdict, stat(Verdict::Inconclusive), "{r:?}");
    assert_eq!(r.baseline_median, p.baseline_median);
    let (rc, pc) = (r.change.as_ref().unwrap(), p.change.as_ref().unwrap());
    assert!(rc.ci.width() > 3.0 * pc.ci.width(), "{rc:?} vs {pc:?}");
}

#[test]
fn mixed_machines_within_a_side_are_noted() {
    let x = around(10.0 * MS, 0.02, 10);
    let mut other = machine();
    other.set("cpu.model", "Other CPU", ImpactClass::Identity);
    let mut tuned = machine();
    tuned.set("cpu.freq.governor", "schedutil", ImpactClass::Performance);
    let c = compare(
        &side(
            "base",
            vec![
                run(1, machine(), vec![bench("x", &x)]),
                run(2, other, vec![bench("x", &x)]),
            ],
        ),
        &side(
            "cand",
            vec![
                run(3, machine(), vec![bench("x", &x)]),
                run(4, tuned.clone(), vec![bench("x", &x)]),
            ],
        ),
        &opts(),
    );
    assert!(
        c.notes.iter().any(|n| n
            == "runs within the baseline side ran on different machines (run 1 vs run 2: cpu.model)"),
        "{:?}",
        c.notes
    );
    assert!(
        c.notes.iter().any(|n| n
            .starts_with("runs within the candidate side differ in performance-relevant settings")),
        "{:?}",
        c.notes
    );
    // The newest runs decide the environment diff: run 2 (other CPU) vs run 4.
    assert!(c.identity_changed);
    assert!(render_terminal(&c, false).contains("ran on different machines"));
    assert!(render_markdown(&c).contains("ran on different machines"));
}

#[test]
fn unpaired_benchmarks_are_listed() {
    let x = around(10.0 * MS, 0.02, 10);
    let c = one(
        vec![bench("kept", &x), bench("old", &x)],
        vec![
            with_params(bench("new", &x), &[("n", "2"), ("mode", "fast")]),
            bench("kept", &x),
        ],
    );
    assert_eq!(c.unpaired_baseline, ["old"]);
    assert_eq!(c.unpaired_candidate, ["new [mode=fast, n=2]"]);
    assert!(c.rows.iter().all(|r| r.benchmark == "kept"));
    let text = render_terminal(&c, false);
    assert!(
        text.contains("not compared (only in the baseline): old\n"),
        "{text}"
    );
    assert!(
        text.contains("not compared (only in the candidate): new [mode=fast, n=2]\n"),
        "{text}"
    );
    let md = render_markdown(&c);
    assert!(
        md.contains("**Not compared** (only in the baseline): `old`"),
        "{md}"
    );
    assert!(md.contains("**Not compared** (only in the candidate): `new [mode=fast, n=2]`"));
    let j = json_of(&c);
    assert_eq!(j["unpaired_candidate"][0], "new [mode=fast, n=2]");
    assert_eq!(j["summary"]["not compared"], 2);
    assert!(
        text.contains("summary: ") && text.contains(", 2 not compared\n"),
        "{text}"
    );
}

#[test]
fn parameters_are_part_of_the_key() {
    let x = around(10.0 * MS, 0.002, 10);
    let slow: Vec<f64> = x.iter().map(|v| v * 1.2).collect();
    let c = one(
        vec![
            with_params(bench("s", &x), &[("n", "1")]),
            with_params(bench("s", &x), &[("n", "2")]),
        ],
        vec![
            with_params(bench("s", &x), &[("n", "1")]),
            with_params(bench("s", &slow), &[("n", "2")]),
        ],
    );
    assert_eq!(
        row(&c, "s [n=1]", Metric::Wall).verdict,
        stat(Verdict::NoChange)
    );
    assert_eq!(
        row(&c, "s [n=2]", Metric::Wall).verdict,
        stat(Verdict::Regressed)
    );
    assert!(c.unpaired_baseline.is_empty() && c.unpaired_candidate.is_empty());
}

#[test]
fn markdown_folds_unchanged_rows_into_details() {
    // Seconds long: user and system time move by more than a 10 ms tick.
    let x = around(2000.0 * MS, 0.02, 20);
    let slow: Vec<f64> = x.iter().map(|v| v * 1.10).collect();
    let y = around(5.0 * MS, 0.02, 20);
    let c = one(
        vec![bench("x", &x), bench("y|pipe", &y)],
        vec![bench("x", &slow), bench("y|pipe", &y)],
    );
    let md = render_markdown(&c);
    assert!(
        md.starts_with("### perfsleuth compare: `base` → `cand`\n\n**"),
        "{md}"
    );
    let headline = md.lines().nth(2).unwrap();
    assert!(headline.starts_with("**3 regressed**"), "{headline}");
    assert!(headline.contains("no change"));
    let details = md.find("<details><summary>").expect("details");
    let end = md.find("</details>").expect("end of details");
    assert!(details < end);
    // The regressed wall row is in the main table, before the details.
    let regressed_row = md.find("| `x` | wall (gating)").unwrap();
    assert!(regressed_row < details, "{md}");
    // The unchanged rows are inside.
    let folded = &md[details..end];
    assert!(folded.contains("`y\\|pipe`"), "{folded}");
    assert!(folded.contains("| `x` | peak_rss |"), "{folded}");
    // Table rows have exactly 8 unescaped separators + the borders.
    for line in md.lines().filter(|l| l.starts_with("| `")) {
        let cells = line.replace("\\|", "").matches('|').count();
        assert_eq!(cells, 9, "{line}");
    }
}

#[test]
fn json_round_trip_has_the_schema_fields() {
    let x = around(2000.0 * MS, 0.02, 20);
    let slow: Vec<f64> = x.iter().map(|v| v * 1.10).collect();
    let c = one(
        vec![with_params(bench("x", &x), &[("n", "1")])],
        vec![with_params(bench("x", &slow), &[("n", "1")])],
    );
    let text = serde_json::to_string_pretty(&json_of(&c)).unwrap();
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(j["schema"], "perfsleuth/compare");
    assert_eq!(j["schema_version"], 2);
    assert_eq!(j["baseline"], "base");
    assert_eq!(j["candidate"], "cand");
    assert_eq!(j["identity_changed"], false);
    assert_eq!(j["fdr_applied"], false);
    assert_eq!(j["any_gating_regression"], true);
    assert!(j["env_changes"].as_array().unwrap().is_empty());
    assert!(j["notes"].as_array().unwrap().is_empty());
    assert_eq!(j["summary"]["regressed"], 3, "wall, user and sys");
    // (2 s walls: user and system time move by more than a 10 ms tick.)
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(rows.len(), c.rows.len());
    let w = &rows[0];
    assert_eq!(w["benchmark"], "x");
    assert_eq!(w["parameters"]["n"], "1");
    assert_eq!(w["key"], "x [n=1]");
    assert_eq!(w["metric"], "wall");
    assert_eq!(w["unit"], "ns");
    assert_eq!(w["better"], "lower");
    assert_eq!(w["gating"], true);
    assert_eq!(w["verdict"], "regressed");
    assert_eq!(w["n_baseline"], 20);
    assert_eq!(w["p_adjusted"], serde_json::Value::Null);
    let ch = &w["change"];
    assert!(ch["ci_low"].as_f64().unwrap() <= ch["change"].as_f64().unwrap());
    assert_eq!(ch["confidence"], 0.95);
    assert_eq!(ch["resamples"], 2_000);
    let r0 = &c.rows[0];
    assert_eq!(w["baseline_median"].as_f64().unwrap(), r0.baseline_median);
    assert_eq!(w["p_value"].as_f64().unwrap(), r0.p_value.unwrap());
    assert_eq!(rows[3]["metric"], "peak_rss");
    assert_eq!(rows[3]["unit"], "bytes");
}

#[test]
fn gating_decides_what_fails() {
    // Only peak RSS regresses.
    let x = around(10.0 * MS, 0.02, 10);
    let b = bench("mem", &x);
    let mut cnd = b.clone();
    for s in &mut cnd.samples {
        s.peak_rss_bytes = 12 * 1024 * 1024;
    }
    let c = one(vec![b.clone()], vec![cnd.clone()]);
    assert_eq!(
        row(&c, "mem", Metric::PeakRss).verdict,
        stat(Verdict::Regressed)
    );
    assert!(!any_gating_regression(&c), "wall gates by default");

    let on_rss = Options {
        gating: vec![Metric::PeakRss],
        ..opts()
    };
    let run_pair = |o: &Options| {
        compare(
            &side("b", vec![run(1, machine(), vec![b.clone()])]),
            &side("c", vec![run(2, machine(), vec![cnd.clone()])]),
            o,
        )
    };
    let c = run_pair(&on_rss);
    assert!(row(&c, "mem", Metric::PeakRss).gating);
    assert!(!row(&c, "mem", Metric::Wall).gating);
    assert!(any_gating_regression(&c));

    // Per benchmark: gate on RSS for this one only.
    let mut per = opts();
    per.per_benchmark.insert(
        "mem".to_string(),
        BenchmarkOptions {
            metrics: Some(vec![Metric::PeakRss]),
            ..BenchmarkOptions::default()
        },
    );
    assert!(any_gating_regression(&run_pair(&per)));

    // A gating metric not among the shown ones is still shown.
    let narrow = Options {
        metrics: vec![Metric::Wall],
        gating: vec![Metric::PeakRss],
        ..opts()
    };
    let c = run_pair(&narrow);
    let metrics: Vec<Metric> = c.rows.iter().map(|r| r.metric).collect();
    assert_eq!(metrics, [Metric::Wall, Metric::PeakRss]);
    assert!(any_gating_regression(&c));
}

#[test]
fn per_benchmark_threshold_overrides_the_rule() {
    let base = around(100.0 * MS, 0.001, 30);
    let cand: Vec<f64> = base.iter().map(|v| v * 1.005).collect();
    let mut o = opts();
    o.per_benchmark.insert(
        "b".to_string(),
        BenchmarkOptions {
            threshold: Some(0.001),
            ..BenchmarkOptions::default()
        },
    );
    let c = compare(
        &side("b", vec![run(1, machine(), vec![bench("b", &base)])]),
        &side("c", vec![run(2, machine(), vec![bench("b", &cand)])]),
        &o,
    );
    assert_eq!(row(&c, "b", Metric::Wall).verdict, stat(Verdict::Regressed));
    o.per_benchmark.get_mut("b").unwrap().alpha = Some(1e-300);
    let c = compare(
        &side("b", vec![run(1, machine(), vec![bench("b", &base)])]),
        &side("c", vec![run(2, machine(), vec![bench("b", &cand)])]),
        &o,
    );
    // No p reaches α = 1e-300, though the CI clears the 0.1 % threshold.
    assert_eq!(
        row(&c, "b", Metric::Wall).verdict,
        stat(Verdict::Inconclusive)
    );
}

#[test]
fn failed_samples_count_and_are_noted() {
    let x = around(10.0 * MS, 0.02, 10);
    let mut b = bench("f", &x);
    b.samples[0].exit_code = Some(1);
    let c = one(vec![b], vec![bench("f", &x)]);
    assert_eq!(row(&c, "f", Metric::Wall).n_baseline, 10);
    assert!(
        c.notes
            .iter()
            .any(|n| n
                == "f: 1 baseline and 0 candidate samples exited unsuccessfully and are included"),
        "{:?}",
        c.notes
    );
}

#[test]
fn bad_input_never_panics() {
    let x = around(10.0 * MS, 0.02, 10);
    let empty = side("nothing", Vec::new());
    let full = side("full", vec![run(1, machine(), vec![bench("x", &x)])]);
    let hollow = side("hollow", vec![run(2, machine(), vec![bench("x", &[])])]);
    let partly = side(
        "partly",
        vec![
            run(3, machine(), vec![bench("x", &x)]),
            run(4, machine(), vec![bench("x", &[])]),
        ],
    );
    let cases = [
        (&empty, &empty),
        (&empty, &full),
        (&full, &empty),
        (&hollow, &full),
        (&full, &hollow),
        (&hollow, &hollow),
        (&partly, &full),
        (&full, &partly),
    ];
    let weird = [
        opts(),
        Options {
            resamples: 0,
            ..opts()
        },
        Options {
            rule: VerdictRule {
                alpha: f64::NAN,
                noise_threshold: -1.0,
                min_samples: 0,
                no_change_within: 0.0,
            },
            fdr_q: Some(f64::NAN),
            metrics: Vec::new(),
            gating: Vec::new(),
            ..opts()
        },
    ];
    for o in &weird {
        for (b, c) in cases {
            let cmp = compare(b, c, o);
            let _ = render_terminal(&cmp, true);
            let _ = render_markdown(&cmp);
            let j = json_of(&cmp);
            assert_eq!(j["schema"], SCHEMA);
            assert!(!any_gating_regression(&cmp));
        }
    }
    let cmp = compare(&empty, &full, &opts());
    assert!(cmp.rows.is_empty());
    assert_eq!(cmp.unpaired_candidate, ["x"]);
    assert!(cmp.notes.iter().any(|n| n.contains("has no runs")));
    assert!(!cmp.identity_changed, "no runs: no environment to compare");
    assert!(render_terminal(&cmp, false).contains("No benchmarks in common."));
    assert!(render_markdown(&cmp).contains("No benchmarks in common."));

    let cmp = compare(&hollow, &full, &opts());
    let wall = row(&cmp, "x", Metric::Wall);
    assert_eq!(wall.verdict, stat(Verdict::InsufficientData));
    assert!(wall.baseline_median.is_nan());
    assert!(
        wall.notes
            .iter()
            .any(|n| n == "no samples on the baseline side")
    );
    assert_eq!(
        json_of(&cmp)["rows"][0]["baseline_median"],
        serde_json::Value::Null
    );
    assert!(render_terminal(&cmp, false).contains("–"));

    // An empty run among several is skipped, the other run still counts.
    let cmp = compare(&partly, &full, &opts());
    assert_eq!(row(&cmp, "x", Metric::Wall).n_baseline, 10);
    // The same samples on both sides: no change at all, and no verdict of one.
    let x = row(&cmp, "x", Metric::Wall);
    assert_eq!(x.change.as_ref().map(|c| c.change), Some(0.0));
    assert!(
        matches!(
            x.verdict,
            VerdictLabel::NoChange | VerdictLabel::Inconclusive
        ),
        "{x:?}"
    );
}

#[test]
fn partial_runs_are_noted() {
    let x = around(10.0 * MS, 0.02, 10);
    let mut r = run(1, machine(), vec![bench("x", &x)]);
    r.status = RunStatus::Interrupted;
    let c = compare(
        &side("b", vec![r]),
        &side("c", vec![run(2, machine(), vec![bench("x", &x)])]),
        &opts(),
    );
    assert!(
        c.notes
            .iter()
            .any(|n| n == "baseline run 1 is interrupted: its samples may be partial")
    );
}

#[test]
fn results_are_reproducible_and_order_independent() {
    let x = around(100.0 * MS, 0.03, 15);
    let y: Vec<f64> = x.iter().map(|v| v * 1.02).collect();
    let a = one(
        vec![bench("p", &x), bench("q", &x)],
        vec![bench("p", &y), bench("q", &y)],
    );
    let b = one(
        vec![bench("p", &x), bench("q", &x)],
        vec![bench("p", &y), bench("q", &y)],
    );
    assert_eq!(a, b);
    // A row's bootstrap stream does not depend on the other rows.
    let alone = one(vec![bench("q", &x)], vec![bench("q", &y)]);
    assert_eq!(
        row(&a, "q", Metric::Wall).change,
        row(&alone, "q", Metric::Wall).change
    );
}

#[test]
fn same_binary_with_other_arguments_is_not_called_the_same() {
    let mut base = with_hash(bench("b", &around(10.0 * MS, 0.01, 30)), "aa");
    let mut cand = with_hash(bench("b", &around(11.0 * MS, 0.01, 30)), "aa");
    base.argv = vec!["sleep".into(), "0.01".into()];
    cand.argv = vec!["sleep".into(), "0.011".into()];
    let c = compare(
        &side("base", vec![run(1, machine(), vec![base])]),
        &side("cand", vec![run(2, machine(), vec![cand])]),
        &opts(),
    );
    let wall = c.rows.iter().find(|r| r.metric == Metric::Wall).unwrap();
    assert_eq!(wall.verdict.as_str(), "regressed");
    assert!(!wall.notes.iter().any(|n| n == SAME_BINARY_NOTE));
}

#[test]
fn peak_rss_at_the_measurement_floor_is_not_judged() {
    let mut a = run(1, machine(), vec![bench("b", &around(10.0 * MS, 0.01, 30))]);
    let mut b = run(2, machine(), vec![bench("b", &around(10.0 * MS, 0.01, 30))]);
    for s in &mut a.benchmarks[0].samples {
        s.peak_rss_bytes = 2_000_000;
    }
    for s in &mut b.benchmarks[0].samples {
        s.peak_rss_bytes = 2_040_000;
    }
    a.environment.set(
        "measure.peak_rss_floor_bytes",
        "2000000",
        ImpactClass::Context,
    );
    b.environment.set(
        "measure.peak_rss_floor_bytes",
        "2040000",
        ImpactClass::Context,
    );
    let c = compare(&side("a", vec![a]), &side("b", vec![b]), &opts());
    let rss = c.rows.iter().find(|r| r.metric == Metric::PeakRss).unwrap();
    assert_eq!(rss.verdict.as_str(), "no change");
    assert!(rss.notes.iter().any(|n| n.contains("floor")));
}

#[test]
fn too_few_samples_for_significance_are_insufficient_not_unchanged() {
    assert!((smallest_p(3, 3) - 0.1).abs() < 1e-12);
    assert!((smallest_p(5, 5) - 2.0 / 252.0).abs() < 1e-12);
    assert_eq!(smallest_p(0, 3), 1.0);
    assert_eq!(smallest_p(200, 200), 0.0);
    assert!(smallest_p(4, 3) <= 0.06);
}

#[test]
fn simulation_and_scale_runs_pick_their_own_metrics() {
    let ir = Metric::parse("Ir").expect("Ir");
    let cycles = Metric::parse("est_cycles").expect("est_cycles");
    let sim = simulation_options(&Options::default());
    assert_eq!(sim.gating, vec![ir]);
    assert_eq!(sim.metrics, vec![ir, cycles]);
    let throughput = Metric::parse("throughput").expect("throughput");
    let sweep = scale_options(&Options::default());
    assert_eq!(sweep.gating, vec![throughput]);
    assert_eq!(sweep.metrics[0], throughput);
    assert!(sweep.metrics.contains(&Metric::Wall));
}

#[test]
fn exact_verdicts_follow_the_threshold_and_direction() {
    // Through the one verdict function, with each metric's own direction.
    let exact = |change: f64, metric: Metric| {
        let rule = VerdictRule::default();
        perfsleuth_stats::decide(
            &rule,
            &perfsleuth_stats::Evidence::Exact(change),
            crate::stats_direction(metric),
        )
    };
    let ir = Metric::parse("Ir").expect("Ir");
    assert_eq!(exact(0.0, ir), Verdict::NoChange);
    assert_eq!(exact(0.005, ir), Verdict::NoChange);
    assert_eq!(exact(0.05, ir), Verdict::Regressed);
    assert_eq!(exact(-0.05, ir), Verdict::Improved);
    let throughput = Metric::parse("throughput").expect("throughput");
    assert_eq!(exact(-0.05, throughput), Verdict::Regressed);
}

#[test]
fn function_attribution_names_the_functions_that_moved() {
    use perfsleuth_model::{FunctionProfile, Profile};
    let f = |object: &str, function: &str, ir: u64| FunctionProfile {
        object: object.into(),
        function: function.into(),
        self_cost: vec![ir],
        inclusive: vec![ir],
        ..FunctionProfile::default()
    };
    let base = Profile {
        events: vec!["Ir".into()],
        totals: vec![1000],
        functions: vec![
            f("/old/prog", "main", 500),
            f("/lib/libc.so.6", "_int_malloc", 500),
        ],
        ..Profile::default()
    };
    let cand = Profile {
        events: vec!["Ir".into()],
        totals: vec![1120],
        functions: vec![
            f("/new/prog", "main", 520),
            f("/lib/libc.so.6", "_int_malloc", 600),
        ],
        ..Profile::default()
    };
    let (total, moved) = function_moves(&base, &cand, "Ir").expect("both have Ir");
    assert_eq!(total, 120.0);
    // The table of the HTML report: both sides' self cost, biggest move first.
    assert_eq!(moved[0].function, "_int_malloc");
    assert_eq!((moved[0].baseline, moved[0].candidate), (500.0, 600.0));
    assert_eq!(moved[1].object, "prog");
    let note = function_attribution(total, &moved, "Ir", 0.12).expect("a note");
    assert_eq!(
        note,
        "83% of +12.0% Ir is in `_int_malloc` (libc.so.6); 17% in `main` (prog)"
    );
    let (same, none) = function_moves(&base, &base, "Ir").unwrap();
    assert!(none.is_empty());
    assert_eq!(function_attribution(same, &none, "Ir", 0.0), None);
}

/// A simulation run whose benchmark counted these Ir values.
fn simulated(id: i64, irs: &[f64]) -> Run {
    let mut b = bench("prog", &vec![1e9; irs.len()]);
    for (s, ir) in b.samples.iter_mut().zip(irs) {
        s.counters.insert("Ir".into(), *ir);
        s.counters.insert("est_cycles".into(), ir * 1.5);
    }
    let mut r = run(id, machine(), vec![b]);
    r.mode = Mode::Simulation;
    r
}

#[test]
fn simulation_counts_are_judged_exactly_even_with_a_tiny_wobble() {
    let ir = Metric::parse("Ir").expect("Ir");
    // Identical within each side: exact, one run per side is enough.
    let c = compare(
        &side("base", vec![simulated(1, &[1_000_000.0])]),
        &side("cand", vec![simulated(2, &[1_050_000.0])]),
        &opts(),
    );
    let r = row(&c, "prog", ir);
    assert!(r.gating, "Ir gates in simulation");
    assert_eq!(r.verdict, stat(Verdict::Regressed));
    assert_eq!(r.p_value, None);
    assert!(
        c.rows.iter().all(|r| r.metric != Metric::Wall),
        "wall timed valgrind"
    );

    // A few instructions of wobble (a thread start) stay exact, with a note.
    let c = compare(
        &side("base", vec![simulated(1, &[1_000_000.0, 1_000_084.0])]),
        &side("cand", vec![simulated(2, &[1_000_020.0, 1_000_090.0])]),
        &opts(),
    );
    let r = row(&c, "prog", ir);
    assert_eq!(r.verdict, stat(Verdict::NoChange), "{r:?}");
    assert!(
        r.notes.iter().any(|n| n.contains("judged on the medians")),
        "{:?}",
        r.notes
    );

    // Real variation (2 %) gets the statistics, and 2 vs 2 cannot decide.
    let c = compare(
        &side("base", vec![simulated(1, &[1_000_000.0, 1_020_000.0])]),
        &side("cand", vec![simulated(2, &[1_100_000.0, 1_120_000.0])]),
        &opts(),
    );
    assert_eq!(row(&c, "prog", ir).verdict, stat(Verdict::InsufficientData));
}

#[test]
fn sides_of_different_modes_are_a_mismatch() {
    let wall = side(
        "base",
        vec![run(1, machine(), vec![bench("p", &[1.0, 2.0, 3.0])])],
    );
    let sim = side("cand", vec![simulated(2, &[1000.0])]);
    let why = mode_mismatch(&wall, &sim).expect("mismatch");
    assert!(
        why.contains("walltime mode") && why.contains("simulation mode"),
        "{why}"
    );
    assert_eq!(mode_mismatch(&sim, &sim), None);
    assert_eq!(mode_mismatch(&wall, &side("empty", vec![])), None);
}

#[test]
fn wide_benchmark_names_keep_the_columns_aligned() {
    let base = around(100.0 * MS, 0.02, 30);
    let c = one(
        vec![bench("排序", &base), bench("sort", &base)],
        vec![bench("排序", &base), bench("sort", &base)],
    );
    let text = render_terminal(&c, false);
    // The metric column starts in the same terminal column on every row,
    // whether the name before it is ASCII or two-column ideographs.
    let metric_col = |line: &str| {
        let at = line.find(" wall").or_else(|| line.find(" metric"))?;
        Some(perfsleuth_report::width(&line[..at]))
    };
    let cols: Vec<usize> = text
        .lines()
        .filter(|l| l.starts_with("排序") || l.starts_with("sort") || l.starts_with("benchmark"))
        .filter_map(metric_col)
        .collect();
    assert!(cols.len() >= 3, "{text}");
    assert!(cols.iter().all(|&c| c == cols[0]), "{cols:?}\n{text}");
}

#[test]
fn the_gate_never_passes_without_looking() {
    let x = around(10.0 * MS, 0.001, 12);
    let slow: Vec<f64> = x.iter().map(|v| v * 1.5).collect();
    let all = one(vec![bench("a", &x)], vec![bench("a", &x)]);
    assert_eq!(gate(&all, false), Gate::Pass);
    assert_eq!(gate(&all, false).reason(), None);
    let missing = one(vec![bench("a", &x), bench("b", &x)], vec![bench("a", &x)]);
    assert_eq!(gate(&missing, false), Gate::Missing(vec!["b".into()]));
    assert!(
        gate(&missing, false)
            .reason()
            .unwrap()
            .contains("`b` of the baseline is not")
    );
    assert_eq!(gate(&missing, true), Gate::Pass);
    let none = one(vec![bench("a", &x)], vec![bench("c", &x)]);
    assert_eq!(gate(&none, false), Gate::NothingShared);
    assert_eq!(gate(&none, true), Gate::Pass);
    // A regression fails the gate even with --allow-missing.
    let worse = one(
        vec![bench("a", &x), bench("b", &x)],
        vec![bench("a", &slow)],
    );
    assert_eq!(gate(&worse, true), Gate::Regressed(vec!["a wall".into()]));
    assert!(gate(&worse, true).fails());
}

#[test]
fn changes_below_a_metrics_resolution_are_not_judged() {
    // 30 ms runs: system time (5 % of wall) is 1.5 ms, below one 10 ms tick;
    // a 50 % slower candidate moves user time by 13.5 ms, more than a tick.
    let x = around(30.0 * MS, 0.001, 20);
    let slow: Vec<f64> = x.iter().map(|v| v * 1.5).collect();
    let c = one(vec![bench("x", &x)], vec![bench("x", &slow)]);
    let sys = row(&c, "x", Metric::Sys);
    assert_eq!(sys.verdict, stat(Verdict::InsufficientData), "{sys:?}");
    assert!(
        sys.notes[0].contains("system time is counted in 10 ms scheduler ticks"),
        "{:?}",
        sys.notes
    );
    assert_eq!(row(&c, "x", Metric::User).verdict, stat(Verdict::Regressed));
    assert_eq!(row(&c, "x", Metric::Wall).verdict, stat(Verdict::Regressed));
    // 200 ms vs 205 ms of user time: 4.5 ms apart, less than a tick.
    let a = around(200.0 * MS, 0.001, 20);
    let b: Vec<f64> = a.iter().map(|v| v * 1.025).collect();
    let c = one(vec![bench("y", &a)], vec![bench("y", &b)]);
    let user = row(&c, "y", Metric::User);
    assert_eq!(user.verdict, stat(Verdict::InsufficientData), "{user:?}");
    assert!(
        user.notes[0].contains("differ by less than one"),
        "{:?}",
        user.notes
    );
    // Peak RSS is counted in pages: the same pages on both sides is just unchanged.
    assert_eq!(
        row(&c, "y", Metric::PeakRss).verdict,
        stat(Verdict::NoChange)
    );
}

/// Runs of one benchmark at these medians (tight samples around each).
fn history_at(levels: &[f64]) -> Vec<Vec<Sample>> {
    levels
        .iter()
        .map(|&l| bench("h", &around(l * MS, 0.005, 20)).samples)
        .collect()
}

#[test]
fn without_history_a_virtual_machine_gets_the_assumed_noise() {
    let mut vm = machine();
    vm.set("virt.hypervisor", "KVM", ImpactClass::Identity);
    let base = vec![bench("h", &around(100.0 * MS, 0.005, 40))];
    let cand = |f: f64| vec![bench("h", &around(100.0 * f * MS, 0.005, 40))];
    let judge = |env: &Environment, f: f64, prior: bool| {
        compare(
            &side("base", vec![run(1, env.clone(), base.clone())]),
            &side("cand", vec![run(2, env.clone(), cand(f))]),
            &Options { prior, ..opts() },
        )
    };
    // A tight 4 % shift: regressed by the rule alone, but between one run
    // and another on a VM (±4.9 % each, ±6.9 % for a difference) it cannot
    // be told from noise: the interval widens to ±6.9 % around it.
    let rule_only = judge(&vm, 1.04, false);
    assert_eq!(
        row(&rule_only, "h", Metric::Wall).verdict,
        stat(Verdict::Regressed)
    );
    let c = judge(&vm, 1.04, true);
    let r = row(&c, "h", Metric::Wall);
    assert_eq!(r.verdict, stat(Verdict::Inconclusive), "{r:#?}");
    let ci = r.change.as_ref().unwrap().ci;
    assert!(
        (ci.lo - (0.04 - r.band)).abs() < 1e-9 && (ci.hi - (0.04 + r.band)).abs() < 1e-9,
        "{ci:?}"
    );
    assert!(
        r.notes.iter().any(|n| n
            .starts_with("inconclusive: two separate runs of one program differ by up to ±6.9%")),
        "{:?}",
        r.notes
    );
    assert!(
        (r.band - 1.96 * 0.025 * 2f64.sqrt()).abs() < 1e-3,
        "{}",
        r.band
    );
    let note = r
        .notes
        .iter()
        .find(|n| n.starts_with("noise for `h`"))
        .unwrap();
    assert!(
        note.contains("±2.5% per run (σ, assumed for a virtual machine)"),
        "{note}"
    );
    assert!(note.contains("no same-binary runs stored"), "{note}");
    assert!(
        note.contains("between 1 run of baseline and 1 run of candidate that is ±6.9%"),
        "{note}"
    );
    // +10 % clears it; peak RSS does not drift with the machine's speed.
    let ten = judge(&vm, 1.10, true);
    assert_eq!(
        row(&ten, "h", Metric::Wall).verdict,
        stat(Verdict::Regressed)
    );
    let rss = row(&ten, "h", Metric::PeakRss);
    assert!(rss.noise.is_none() && rss.band == 0.0, "{rss:#?}");
    // A guest whose CPU time is also stolen: ±9.8 % a run.
    let mut shared = vm.clone();
    shared.set("noise.steal_pct", "4.8", ImpactClass::Context);
    let n = prior_noise(&shared);
    assert_eq!(n.sd, 0.05);
    assert_eq!(
        n.source,
        "assumed for a virtual machine with stolen CPU time"
    );
    // A machine with no known drift: ±2.0 % a run.
    let bare = judge(&machine(), 1.04, true);
    let r = row(&bare, "h", Metric::Wall);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("±1.0% per run (σ, assumed for a machine without known drift)")),
        "{:?}",
        r.notes
    );
    assert_eq!(r.verdict, stat(Verdict::Regressed));
}

#[test]
fn learned_noise_from_five_same_binary_runs_sets_the_band() {
    let base = vec![bench("h", &around(100.0 * MS, 0.005, 40))];
    let cand = vec![bench("h", &around(103.0 * MS, 0.005, 40))];
    let with = |levels: &[f64]| {
        let mut o = opts();
        o.prior = true;
        o.history.insert("h".to_string(), history_at(levels));
        compare(
            &side("base", vec![run(1, machine(), base.clone())]),
            &side("cand", vec![run(2, machine(), cand.clone())]),
            &o,
        )
    };
    // Runs of this binary vary by ~4 % (the robust spread of consecutive
    // medians): a 3 % difference between two single runs is well inside
    // what they do on their own.
    let noisy = with(&[100.0, 97.0, 103.0, 101.0, 99.0, 104.0, 96.0]);
    let r = row(&noisy, "h", Metric::Wall);
    let n = r.noise.as_ref().unwrap();
    assert_eq!(n.runs, 7);
    assert!((n.sd - 0.0419).abs() < 0.003, "{n:?}");
    assert!((n.q - 2.447).abs() < 0.01, "t(6) = {}", n.q);
    assert_eq!(r.verdict, stat(Verdict::Inconclusive), "{r:#?}");
    let figure = format!(
        "noise for `h` on this machine class: ±{:.1}% per run (σ, learned from 7 same-binary runs)",
        100.0 * n.sd
    );
    assert!(
        r.notes.iter().any(|n| n.starts_with(&figure)),
        "{figure} in {:?}",
        r.notes
    );
    // Quiet history (±0.3 % a run) of 20 runs: learned alone, 3 % regresses.
    let quiet: Vec<f64> = (0..20)
        .map(|i| [100.0, 100.2, 99.9, 100.1, 99.8][i % 5])
        .collect();
    let calm = with(&quiet);
    let r = row(&calm, "h", Metric::Wall);
    assert_eq!(r.verdict, stat(Verdict::Regressed), "{r:#?}");
    assert!(r.band < 0.012, "{}", r.band);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("between 1 run of baseline and 1 run of candidate that is ±")),
        "{:?}",
        r.notes
    );
    // The same quiet spread from 5 runs is not trusted below the machine's
    // assumed noise (a handful of runs often looks far too calm).
    let five = with(&quiet[..5]);
    let r = row(&five, "h", Metric::Wall);
    let n = r.noise.as_ref().unwrap();
    assert_eq!((n.sd, n.runs), (0.01, 5), "{n:?}");
    assert!(
        n.source
            .starts_with("assumed for a machine without known drift, above the 0."),
        "{}",
        n.source
    );
    assert_eq!(r.verdict, stat(Verdict::Inconclusive), "{r:#?}");
    // Four runs are not enough: the prior stands in, and the note says why.
    let few = with(&[100.0, 97.0, 103.0, 101.0]);
    let r = row(&few, "h", Metric::Wall);
    assert_eq!(r.noise.as_ref().unwrap().runs, 0);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("only 4 same-binary runs are stored, 5 are needed")),
        "{:?}",
        r.notes
    );
}

#[test]
fn a_candidate_that_measured_more_rounds_counts_as_more_runs() {
    let mut vm = machine();
    vm.set("virt.hypervisor", "KVM", ImpactClass::Identity);
    // Asked for 5 rounds, measured 20 (extended while inconclusive).
    let mut extended = run(
        2,
        vm.clone(),
        vec![bench("h", &around(104.0 * MS, 0.005, 200))],
    );
    extended.options = serde_json::json!({"rounds": 5});
    for (i, s) in extended.benchmarks[0].samples.iter_mut().enumerate() {
        s.round = (i / 10) as u32;
    }
    let mut o = opts();
    o.prior = true;
    let base = run(
        1,
        vm.clone(),
        vec![bench("h", &around(100.0 * MS, 0.005, 40))],
    );
    let c = compare(
        &side("base", vec![base.clone()]),
        &side("cand", vec![extended]),
        &o,
    );
    let r = row(&c, "h", Metric::Wall);
    // 1 baseline run against 4 runs' worth: 1.96 * 2.5 % * sqrt(1 + 1/4).
    assert!(
        (r.band - 1.96 * 0.025 * 1.25f64.sqrt()).abs() < 1e-3,
        "{}",
        r.band
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("between 1 run of baseline and 4 runs of candidate")),
        "{:?}",
        r.notes
    );
}

#[test]
fn rounds_that_wander_raise_the_assumed_noise() {
    // No history; the candidate's five rounds wander by ~6 %, more than a
    // guest's assumed 2.5 %: the assumed noise follows what the runs show.
    let mut vm = machine();
    vm.set("virt.hypervisor", "KVM", ImpactClass::Identity);
    let steady = in_rounds("h", &[100.0; 5], 0.005, 10);
    let wandering = in_rounds("h", &[100.0, 108.0, 95.0, 104.0, 93.0], 0.005, 10);
    let o = Options {
        prior: true,
        ..opts()
    };
    let c = compare(
        &side("base", vec![run(1, vm.clone(), vec![steady.clone()])]),
        &side("cand", vec![run(2, vm.clone(), vec![wandering])]),
        &o,
    );
    let r = row(&c, "h", Metric::Wall);
    let n = r.noise.as_ref().unwrap();
    assert!((n.sd - 0.062).abs() < 0.001, "{n:?}");
    assert_eq!(
        n.source,
        "assumed from the spread of these runs' rounds, above the 2.5% assumed for a virtual machine"
    );
    // Steady rounds leave the fingerprint's assumption alone.
    let c = compare(
        &side("base", vec![run(1, vm.clone(), vec![steady.clone()])]),
        &side("cand", vec![run(2, vm, vec![steady])]),
        &o,
    );
    assert_eq!(row(&c, "h", Metric::Wall).noise.as_ref().unwrap().sd, 0.025);
}

#[test]
fn a_program_kept_from_the_cpu_is_the_machine_not_the_code() {
    let base = bench("h", &around(20.0 * MS, 0.01, 60));
    // The same CPU work (19 ms of user + sys a run), but 40 % longer in
    // wall time: the program waited for a CPU it did not get.
    let mut starved = bench("h", &around(28.0 * MS, 0.01, 60));
    for (s, b) in starved.samples.iter_mut().zip(&base.samples) {
        s.user_ns = b.user_ns;
        s.sys_ns = b.sys_ns;
    }
    let c = one(vec![base.clone()], vec![starved]);
    let r = row(&c, "h", Metric::Wall);
    assert_eq!(r.verdict, stat(Verdict::Inconclusive), "{r:#?}");
    let note = r
        .notes
        .iter()
        .find(|n| n.starts_with("the machine, not the code"))
        .unwrap_or_else(|| panic!("{:?}", r.notes));
    assert!(
        note.contains("wall time +40.0% but CPU time +0.0%"),
        "{note}"
    );
    assert!(note.contains("it got 68% of a CPU against 95%"), "{note}");
    assert!(!any_gating_regression(&c));
    // A real slowdown costs CPU time too: regressed.
    let slower = bench("h", &around(28.0 * MS, 0.01, 60));
    let r = one(vec![base.clone()], vec![slower]);
    assert_eq!(row(&r, "h", Metric::Wall).verdict, stat(Verdict::Regressed));
    // Waiting more often (a sleep added to the code) is the code's.
    let mut sleeps = bench("h", &around(28.0 * MS, 0.01, 60));
    for (s, b) in sleeps.samples.iter_mut().zip(&base.samples) {
        s.user_ns = b.user_ns;
        s.sys_ns = b.sys_ns;
        s.voluntary_cs = b.voluntary_cs + 2;
    }
    let r = one(vec![base.clone()], vec![sleeps]);
    assert_eq!(row(&r, "h", Metric::Wall).verdict, stat(Verdict::Regressed));
    // Measured interleaved the machine cannot starve one side only: the
    // same numbers are the programs' (`run 'sleep 0.001' 'sleep 0.01'`
    // with --fail-on passed as "the machine" about one time in five).
    let mut waits_longer = bench("h", &around(28.0 * MS, 0.01, 60));
    for (s, b) in waits_longer.samples.iter_mut().zip(&base.samples) {
        s.user_ns = b.user_ns;
        s.sys_ns = b.sys_ns;
    }
    let together = compare(
        &side("base", vec![run(1, machine(), vec![base])]),
        &side("cand", vec![run(2, machine(), vec![waits_longer])]),
        &paired(&opts()),
    );
    let r = row(&together, "h", Metric::Wall);
    assert_eq!(r.verdict, stat(Verdict::Regressed), "{r:#?}");
}

/// Two benchmarks as an interleaved run measures them: `pairs` adjacent
/// runs in 5 rounds, the machine's speed swinging ±25 % between moments
/// (both runs of a pair alike), the candidate `factor` slower.
fn interleaved(pairs: usize, factor: f64) -> (Benchmark, Benchmark) {
    let (mut b, mut c) = (bench("p", &[]), bench("p", &[]));
    for i in 0..pairs {
        let speed = 1.0 + 0.25 * (i as f64 / 3.0).sin();
        let jitter = 1.0 + 0.004 * ((i * 7 % 11) as f64 - 5.0) / 5.0;
        let mut sb = sample(i, 20.0 * MS * speed * jitter);
        let mut sc = sample(i, 20.0 * MS * speed * factor / jitter);
        sb.round = (i * 5 / pairs) as u32;
        sc.round = sb.round;
        b.samples.push(sb);
        c.samples.push(sc);
    }
    (b, c)
}

#[test]
fn interleaved_sides_are_judged_on_their_adjacent_pairs() {
    let (b, c) = interleaved(60, 1.03);
    let o = Options {
        paired: true,
        ..opts()
    };
    let cmp = compare(
        &side("base", vec![run(1, machine(), vec![b.clone()])]),
        &side("cand", vec![run(2, machine(), vec![c.clone()])]),
        &o,
    );
    let r = row(&cmp, "p", Metric::Wall);
    let ch = r.change.as_ref().unwrap();
    assert!((ch.change - 0.03).abs() < 0.003, "{r:#?}");
    assert!(ch.ci.lo > 0.02 && ch.ci.hi < 0.04, "{r:#?}");
    assert_eq!(r.verdict, stat(Verdict::Regressed), "{r:#?}");
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("median of the 60 adjacent runs' ratios")),
        "{r:#?}"
    );
    // The same samples unpaired: the swing hides the change.
    let unpaired = compare(
        &side("base", vec![run(1, machine(), vec![b])]),
        &side("cand", vec![run(2, machine(), vec![c])]),
        &opts(),
    );
    let u = row(&unpaired, "p", Metric::Wall);
    assert_ne!(u.verdict, stat(Verdict::Regressed), "{u:#?}");
}

#[test]
fn interleaved_sides_flag_beyond_the_floor_and_end_unchanged_within_the_threshold() {
    // Issue 34: with ±1 % as the floor, +1 % measured interleaved could
    // never be flagged however many pairs `ab` took.
    let judge = |pairs, factor, o: &Options| {
        let (b, c) = interleaved(pairs, factor);
        let cmp = compare(
            &side("base", vec![run(1, machine(), vec![b])]),
            &side("cand", vec![run(2, machine(), vec![c])]),
            o,
        );
        row(&cmp, "p", Metric::Wall).clone()
    };
    let default = paired(&opts());
    assert_eq!(
        default.rule.noise_threshold,
        VerdictRule::IN_RUN.noise_threshold
    );
    assert_eq!(default.rule.no_change_band(), 0.01);
    let r = judge(200, 1.006, &default);
    assert_eq!(r.verdict, stat(Verdict::Regressed), "{r:#?}");
    // An unchanged program still ends `no change`, inside ±1 %.
    let r = judge(60, 1.0, &default);
    assert_eq!(r.verdict, stat(Verdict::NoChange), "{r:#?}");
    // A threshold the user set applies as given.
    let given = paired(&Options {
        threshold_given: true,
        ..opts()
    });
    assert_eq!(given.rule, opts().rule);
    let r = judge(200, 1.006, &given);
    assert_eq!(r.verdict, stat(Verdict::NoChange), "{r:#?}");
}

#[test]
fn the_two_runs_of_one_ab_are_paired_whatever_command_compares_them() {
    // `compare 35 36` on the runs `ab` stored: judged as `ab` judged them,
    // not with a between-run band around an unpaired estimate.
    let (b, c) = interleaved(60, 1.03);
    let mut rb = run(1, machine(), vec![b]);
    let mut rc = run(2, machine(), vec![c]);
    rb.options = serde_json::json!({"ab": {"side": "baseline"}});
    rc.options = serde_json::json!({"ab": {"side": "candidate"}});
    rc.started_at = rb.started_at.clone();
    let (sb, sc) = (side("base", vec![rb]), side("cand", vec![rc]));
    assert!(measured_together(&sb, &sc));
    let o = Options {
        prior: true,
        ..opts()
    };
    let cmp = compare(&sb, &sc, &o);
    let r = row(&cmp, "p", Metric::Wall);
    assert_eq!(r.verdict, stat(Verdict::Regressed), "{r:#?}");
    assert_eq!(r.band, 0.0, "{r:#?}");
    assert!(cmp.notes.iter().any(|n| n.contains("measured interleaved")));
    // Two separate runs are not.
    let mut later = sc.clone();
    later.runs[0].started_at = "2025-01-01T00:01:00.000Z".into();
    assert!(!measured_together(&sb, &later));
}

#[test]
fn a_busy_program_is_judged_on_cpu_time_and_a_sleeping_one_on_wall_time() {
    // `sample` gives 95 % of the wall time as CPU time, no waits: CPU time
    // gates, wall time is shown beside it.
    let o = Options {
        judge_time: true,
        metrics: Options::default().metrics,
        ..opts()
    };
    let busy = |o: &Options| {
        let b = || vec![bench("busy", &around(20.0 * MS, 0.01, 30))];
        compare(
            &side("base", vec![run(1, machine(), b())]),
            &side("cand", vec![run(2, machine(), b())]),
            o,
        )
    };
    let c = busy(&o);
    let cpu = row(&c, "busy", Metric::Cpu);
    assert!(cpu.gating, "{cpu:#?}");
    assert!(
        cpu.notes[0].starts_with("judged on CPU time: keeps 0.95 CPUs busy"),
        "{cpu:#?}"
    );
    let wall = row(&c, "busy", Metric::Wall);
    assert!(
        !wall.gating && wall.notes[0].contains("does not gate"),
        "{wall:#?}"
    );
    // A sleeping program: a tenth of a CPU, so wall time gates.
    let sleepy = |name: &str| {
        let mut b = bench(name, &around(20.0 * MS, 0.01, 30));
        for s in &mut b.samples {
            s.user_ns /= 10;
            s.sys_ns /= 10;
            s.voluntary_cs = 1;
        }
        b
    };
    let c = compare(
        &side("base", vec![run(1, machine(), vec![sleepy("nap")])]),
        &side("cand", vec![run(2, machine(), vec![sleepy("nap")])]),
        &o,
    );
    let wall = row(&c, "nap", Metric::Wall);
    assert!(wall.gating, "{wall:#?}");
    assert!(
        wall.notes[0].starts_with("judged on wall time: the program waits"),
        "{wall:#?}"
    );
    assert!(!row(&c, "nap", Metric::Cpu).gating);
    // A metric the user named gates as named.
    let named = Options {
        judge_time: false,
        ..opts()
    };
    let c = busy(&named);
    assert!(row(&c, "busy", Metric::Wall).gating);
}

#[test]
fn byte_identical_programs_that_moved_together_are_the_machines_step() {
    let base = around(100.0 * MS, 0.02, 20);
    let slower = |f: f64| base.iter().map(|v| v * f).collect::<Vec<f64>>();
    let c = one(
        vec![
            with_hash(bench("x", &base), "abc"),
            with_hash(bench("y", &base), "def"),
        ],
        vec![
            with_hash(bench("x", &slower(1.10)), "abc"),
            with_hash(bench("y", &slower(1.12)), "def"),
        ],
    );
    for key in ["x", "y"] {
        let r = row(&c, key, Metric::Wall);
        assert_eq!(r.verdict, stat(Verdict::Inconclusive), "{r:#?}");
    }
    assert!(
        c.notes.iter().any(
            |n| n.contains("2 benchmarks whose programs are byte-identical")
                && n.contains("the machine, not the code")
        ),
        "{:?}",
        c.notes
    );
    assert!(!gate(&c, false).fails());
}

#[test]
fn separate_runs_that_cannot_decide_name_what_would() {
    // Two separate runs with the assumed noise of a VM: a 4 % change is
    // inside the between-run band, and no number of runs in one invocation
    // decides it; the note names the interleaved command and its cost.
    let mut vm = machine();
    vm.set("virt.hypervisor", "kvm", ImpactClass::Performance);
    vm.set("noise.steal_pct", "8.0", ImpactClass::Context);
    let base = in_rounds("./prog", &[20.0; 5], 0.04, 20);
    let mut cand = in_rounds("./prog", &[20.8; 5], 0.04, 20);
    cand.argv = vec!["./prog-new".into()];
    let o = Options {
        prior: true,
        ..opts()
    };
    let c = compare(
        &side("b", vec![run(1, vm.clone(), vec![base])]),
        &side("c", vec![run(2, vm, vec![cand])]),
        &o,
    );
    let r = row(&c, "./prog", Metric::Wall);
    assert_eq!(r.verdict, stat(Verdict::Inconclusive), "{r:#?}");
    let note = r
        .notes
        .iter()
        .find(|n| n.contains("no number of runs in one invocation"))
        .unwrap_or_else(|| panic!("{r:#?}"));
    assert!(
        note.contains("`perfsleuth run './prog' './prog-new'`"),
        "{note}"
    );
    assert!(note.contains("pairs (≈"), "{note}");
    assert!(
        !r.notes.iter().any(|n| n.contains("more runs per side")),
        "{r:#?}"
    );
}

#[test]
fn a_judged_change_is_also_said_as_hyperfine_says_it() {
    let slower = v1_v2("b", 10.0, 12.5);
    let gating = slower.rows.iter().find(|r| r.gating).unwrap();
    assert_eq!(gating.verdict, VerdictLabel::Regressed);
    let line = crate::render::factor_lines(&slower);
    assert_eq!(line.len(), 1, "{line:?}");
    assert!(line[0].starts_with("`b`: v2 is 1.2"), "{line:?}");
    assert!(line[0].contains("× slower than v1 ("), "{line:?}");
    assert!(render_terminal(&slower, false).contains(&line[0]));
    assert!(crate::render_markdown(&slower).contains("× slower than v1"));
    // The other way: faster, by the inverse of the ratio.
    let faster = v1_v2("b", 12.5, 10.0);
    let line = crate::render::factor_lines(&faster);
    assert!(
        line[0].contains("is 1.2") && line[0].contains("× faster than v1"),
        "{line:?}"
    );
    // Nothing judged changed: no such line.
    let same = v1_v2("b", 10.0, 10.0);
    assert!(crate::render::factor_lines(&same).is_empty());
}

#[test]
fn a_variant_benchmark_key_says_its_set_up_once() {
    // `./bench [base] [variant=base]` said the variant twice (issue 38).
    let params = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    assert_eq!(
        benchmark_key("./bench [base]", &params(&[("variant", "base")])),
        "./bench [base]"
    );
    assert_eq!(
        benchmark_key(
            "./bench [fast]",
            &params(&[("n", "1"), ("variant", "fast")])
        ),
        "./bench [fast] [n=1]"
    );
    // A parameter that happens to be called `variant` is still shown.
    assert_eq!(
        benchmark_key("./bench", &params(&[("variant", "x")])),
        "./bench [variant=x]"
    );
}

#[test]
fn github_annotations_name_each_regressed_benchmark_escaped() {
    let slower = v1_v2("a, b: c", 10.0, 12.5);
    let text = crate::render_github_annotations(&slower);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    // `:` and `,` end a property unless escaped; the message keeps them.
    assert!(
        lines[0].starts_with("::error title=perfsleuth%3A a%2C b%3A c regressed::"),
        "{text}"
    );
    assert!(lines[0].contains("%25 ["), "{text}");
    assert!(lines[0].contains(" against v1"), "{text}");
    // A `%` in the message is escaped, as the runner reads it back.
    assert!(
        !lines[0].split("::").nth(2).unwrap().contains("% "),
        "{text}"
    );
    let faster = v1_v2("b", 12.5, 10.0);
    assert!(
        crate::render_github_annotations(&faster)
            .starts_with("::notice title=perfsleuth%3A b improved::")
    );
}

/// One benchmark `name` at about `base_ms` in run 1 (side "v1") against
/// `cand_ms` in run 2 (side "v2"), 30 samples each, 1 % spread.
fn v1_v2(name: &str, base_ms: f64, cand_ms: f64) -> Comparison {
    compare(
        &side(
            "v1",
            vec![run(
                1,
                machine(),
                vec![bench(name, &around(base_ms * MS, 0.01, 30))],
            )],
        ),
        &side(
            "v2",
            vec![run(
                2,
                machine(),
                vec![bench(name, &around(cand_ms * MS, 0.01, 30))],
            )],
        ),
        &opts(),
    )
}

#[test]
fn par_each_mut_visits_every_item_once_with_its_index() {
    // Below the size judged on one thread, at it, and split across threads.
    for n in [0, 1, 10, 2_000, 2_001, 9_999] {
        let mut items: Vec<(usize, u32)> = (0..n).map(|i| (i, 0)).collect();
        crate::estimate::par_each_mut(&mut items, |i, item| {
            assert_eq!(i, item.0, "index handed with the item");
            item.1 += 1;
        });
        assert!(items.iter().all(|item| item.1 == 1), "{n} items");
    }
}

#[test]
fn the_terminal_report_is_written_in_pieces_as_it_is_made() {
    /// Keeps what is written and the size of each write.
    #[derive(Default)]
    struct Recorder {
        text: Vec<u8>,
        writes: Vec<usize>,
    }
    impl std::io::Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.text.extend_from_slice(buf);
            self.writes.push(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    // 2 500 benchmarks: more rows than one thread judges, and a report of
    // several hundred kilobytes.
    let names: Vec<String> = (0..2_500).map(|i| format!("bench-{i:05}")).collect();
    let side_of = |label: &str, id: i64, ms: f64| {
        let benches = names
            .iter()
            .map(|n| bench(n, &around(ms * MS, 0.01, 10)))
            .collect();
        side(label, vec![run(id, machine(), benches)])
    };
    let c = compare(&side_of("v1", 1, 10.0), &side_of("v2", 2, 10.5), &opts());
    let mut to = Recorder::default();
    crate::write_terminal(&c, false, &mut to).unwrap();
    let whole = crate::render_terminal(&c, false);
    assert_eq!(String::from_utf8(to.text).unwrap(), whole);
    assert!(whole.len() > 300_000, "{} bytes", whole.len());
    assert!(to.writes.len() > 4, "{:?}", to.writes);
    // No piece much larger than the 64 KiB it gathers before writing.
    assert!(to.writes.iter().all(|&n| n < 80 * 1024), "{:?}", to.writes);
    // Judged on several threads: every benchmark's gating row, in order.
    let gating: Vec<&Row> = c.rows.iter().filter(|r| r.gating).collect();
    assert_eq!(gating.len(), 2_500);
    assert!(gating.iter().zip(&names).all(|(r, n)| &r.benchmark == n));
    assert!(
        gating.iter().all(|r| r.verdict == VerdictLabel::Regressed),
        "a 5 % change at 1 % spread"
    );
}
