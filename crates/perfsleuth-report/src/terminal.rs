//! The terminal summary printed by `perfsleuth run` and `perfsleuth show`.

use crate::format::{
    TimeUnit, format_bytes, format_duration_short, format_p, format_percent, format_ratio_min,
    pad_left, pad_right, width,
};
use crate::style::Style;
use crate::{BenchmarkReport, Comparison, RunReport, enough_runs};
use perfsleuth_model::quantity::MISSING;
use perfsleuth_model::{Metric, Run, RunStatus};
use perfsleuth_stats::RatioEstimate;
use std::fmt::Write as _;

/// `s` coloured by `tone`: only significant differences get a colour.
fn toned(style: &Style, tone: Tone, s: &str) -> String {
    match tone {
        Tone::Better => style.green(s),
        Tone::Worse => style.red(s),
        Tone::Neutral => s.to_string(),
    }
}

/// Width of the label column of a benchmark block ("Time (median ± 95% CI):").
const LABEL_WIDTH: usize = 26;

/// Indentation of warning continuation lines: under the text after "Warning: ".
const WARNING_INDENT: &str = "           ";

/// The terminal summary (what `perfsleuth run` and `perfsleuth show` print).
///
/// `report` should come from [`crate::analyze`] on the same `run`; a
/// mismatched pair renders what it can rather than panicking.
pub fn render_terminal(run: &Run, report: &RunReport, style: &Style) -> String {
    let mut out = String::new();
    if let Some(notice) = status_notice(run) {
        let painted = match run.status {
            RunStatus::Failed => style.red(&notice),
            _ => style.yellow(&notice),
        };
        let _ = writeln!(out, "{painted}\n");
    }
    if report.benchmarks.is_empty() {
        out.push_str("No benchmarks.\n");
        return out;
    }
    // Children report at least the spawner's own peak RSS (see perfsleuth-measure).
    let rss_floor = run
        .environment
        .get("measure.peak_rss_floor_bytes")
        .and_then(|v| v.parse::<f64>().ok());
    for (shown, &i) in report.order.iter().enumerate() {
        let Some(b) = report.benchmarks.get(i) else {
            continue;
        };
        if shown > 0 {
            out.push('\n');
        }
        let first_wall = run
            .benchmarks
            .get(i)
            .and_then(|b| b.samples.first())
            .map(|s| Metric::Wall.of(s));
        benchmark_block(
            &mut out,
            i,
            b,
            first_wall,
            rss_floor,
            report.time_unit,
            style,
        );
        if let Some(locks) = run.benchmarks.get(i).and_then(|b| b.locks.as_ref()) {
            labelled(&mut out, "Locks:", &crate::lock_headline(locks));
            labelled(&mut out, "", &style.dim(&crate::lock_events(locks)));
        }
        if let Some(bench) = run.benchmarks.get(i)
            && let Some(p) = bench.stacks.as_ref()
        {
            let wall: f64 = bench
                .samples
                .iter()
                .filter(|s| p.iterations.contains(&s.iteration))
                .map(|s| Metric::Wall.of(s))
                .sum();
            labelled(&mut out, "Profile:", &crate::stacks_headline(p));
            labelled(
                &mut out,
                "",
                &style.dim(&crate::stacks_events(p, Some(wall))),
            );
        }
        if let Some(p) = run.benchmarks.get(i).and_then(|b| b.allocs.as_ref()) {
            labelled(&mut out, "Allocations:", &crate::allocs_headline(p));
            labelled(&mut out, "", &style.dim(&crate::allocs_events(p)));
        }
    }
    if !report.comparisons.is_empty() {
        out.push('\n');
        comparison_block(&mut out, report, style);
    }
    out
}

/// The line that warns that a run did not complete, so partial numbers are
/// never mistaken for a full measurement.
pub(crate) fn status_notice(run: &Run) -> Option<String> {
    let who = match run.id {
        Some(id) => format!("Run {id}"),
        None => "This run".to_string(),
    };
    let what = match run.status {
        RunStatus::Complete => return None,
        RunStatus::Interrupted => "was interrupted",
        RunStatus::Failed => "failed",
        RunStatus::Running => "did not finish (still running, or its process died)",
    };
    let n: usize = run.benchmarks.iter().map(|b| b.samples.len()).sum();
    let samples = plural(n, "sample", "samples");
    Some(format!("{who} {what}: summary of the {samples} taken."))
}

/// "1 run", "58 runs".
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Appends "  <label padded><value>".
fn labelled(out: &mut String, label: &str, value: &str) {
    let _ = writeln!(out, "  {}{value}", pad_right(label, LABEL_WIDTH));
}

/// One benchmark's block: median with CI, mean and spread, range, memory,
/// then warnings about failures and outliers.
fn benchmark_block(
    out: &mut String,
    i: usize,
    b: &BenchmarkReport,
    first_wall: Option<f64>,
    rss_floor: Option<f64>,
    time_unit: Option<TimeUnit>,
    style: &Style,
) {
    let _ = writeln!(
        out,
        "{} {}",
        style.bold(&format!("Benchmark {}:", i + 1)),
        b.name
    );
    let Some(wall) = &b.wall else {
        out.push_str("  no samples\n");
        return;
    };
    // One unit per benchmark, chosen from the median, so every time in the
    // block can be compared digit by digit.
    let unit = time_unit.unwrap_or_else(|| TimeUnit::for_ns(wall.median));
    let median = unit.format(wall.median);
    let mean = unit.format(wall.mean);
    let sigma = unit.format(wall.stddev);
    let min = unit.format(wall.min);
    let max = unit.format(wall.max);
    // A peak RSS of 0 everywhere means it was not measured (e.g. simulation).
    let rss = b.peak_rss.as_ref().filter(|s| s.max > 0.0);
    let rss_median = rss.map(|s| format_bytes(s.median));
    let w1 = [&median, &mean, &min]
        .into_iter()
        .chain(rss_median.as_ref())
        .map(|s| width(s))
        .max()
        .unwrap_or(0);
    let w2 = width(&sigma).max(width(&max));

    labelled(
        out,
        "Time (median ± 95% CI):",
        &format!(
            "{}  [{} … {}]",
            style.green(&pad_left(&median, w1)),
            unit.format(wall.median_ci.lo),
            unit.format(wall.median_ci.hi)
        ),
    );
    let mut mean_line = format!("{} ± {}", pad_left(&mean, w1), pad_left(&sigma, w2));
    if let (Some(user), Some(sys)) = (&b.user, &b.sys) {
        // One unit for both, the larger's: "System: 0 ns" beside
        // "User: 1.2 ms" would claim a nanosecond resolution rusage lacks.
        let cpu = time_unit.unwrap_or_else(|| TimeUnit::for_ns(user.mean.max(sys.mean)));
        let _ = write!(
            mean_line,
            "    User: {}, System: {}",
            cpu.format_short(user.mean),
            cpu.format_short(sys.mean)
        );
    }
    labelled(out, "Time (mean ± σ):", &mean_line);
    labelled(
        out,
        "Range (min … max):",
        &format!(
            "{} … {}    {}",
            pad_left(&min, w1),
            pad_left(&max, w2),
            plural(wall.n, "run", "runs")
        ),
    );
    if let (Some(rss), Some(rss_median)) = (rss, rss_median) {
        let at_floor = rss_floor.is_some_and(|f| f > 0.0 && rss.median <= f * 1.02);
        labelled(
            out,
            "Peak RSS (median):",
            &format!(
                "{}  [{} … {}]{}",
                pad_left(&rss_median, w1),
                format_bytes(rss.median_ci.lo),
                format_bytes(rss.median_ci.hi),
                if at_floor {
                    "  (at the measurement floor: the program uses at most this)"
                } else {
                    ""
                }
            ),
        );
    }

    if let Some(line) = counters_line(b, wall.median) {
        labelled(out, "Counters (median):", &line);
    }

    let warning = style.yellow("Warning:");
    if b.failed_runs > 0 {
        let _ = writeln!(
            out,
            "  {warning} {} of {} exited non-zero or were killed by a signal;\n\
             {WARNING_INDENT}their times are included in the statistics above.",
            b.failed_runs,
            plural(b.runs, "run", "runs"),
        );
    }
    if !wall.outliers.is_empty() {
        // A few outliers are what a shared machine gives; the median and
        // its interval do not move for them, so they get one line. Only
        // more than a tenth of the runs is a warning about the machine.
        let many = wall.outliers.len() * 10 > wall.n;
        let what = format!(
            "{} of {} {} (modified z-score > 3.5)",
            wall.outliers.len(),
            plural(wall.n, "run", "runs"),
            if wall.outliers.len() == 1 {
                "is an outlier"
            } else {
                "are outliers"
            },
        );
        if many {
            let _ = writeln!(out, "  {warning} {what}.");
        } else {
            let _ = writeln!(
                out,
                "  {} {what}; the median and its interval are robust to it.",
                style.dim("Note:")
            );
        }
        let first_is_slow_outlier =
            wall.outliers.contains(&0) && first_wall.is_some_and(|w| w > wall.median);
        if first_is_slow_outlier {
            let _ = writeln!(
                out,
                "{WARNING_INDENT}The first run is a slow outlier, which suggests cold caches: try a larger --warmup."
            );
        }
        if many && wall.outliers.len() > usize::from(first_is_slow_outlier) {
            let _ = writeln!(
                out,
                "{WARNING_INDENT}Other programs or I/O may have disturbed the runs: use a quieter machine\n\
                 {WARNING_INDENT}or more runs, and see whether the outliers persist."
            );
        }
    }
}

/// How a statement should be coloured: only significant differences get a
/// colour, so colour itself never suggests a difference that is not there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tone {
    Better,
    Worse,
    Neutral,
}

/// What a ratio measures, for the wording of its statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quantity {
    Time,
    Memory,
}

/// The plain-language verdict on a ratio candidate/reference.
///
/// A difference is only claimed when the estimate is significant (its CI
/// excludes 1.0) and both sides have enough runs; its direction comes from
/// the CI, so the words can never contradict the interval printed next to
/// them. Percentages are changes of the median: "25% slower" means 1.25× the
/// time, "20% faster" means 0.80× the time.
pub(crate) fn statement(
    est: &RatioEstimate,
    quantity: Quantity,
    n_ref: usize,
    n_cand: usize,
) -> (String, Tone) {
    if !enough_runs(n_ref, n_cand) {
        return (
            format!(
                "too few runs to tell: at least {} each needed",
                perfsleuth_stats::VerdictRule::IN_RUN.min_samples
            ),
            Tone::Neutral,
        );
    }
    if !est.significant {
        let floor = perfsleuth_stats::VerdictRule::IN_RUN.noise_threshold;
        // The interval excludes no change but not the in-run floor.
        let text = if (est.ci.lo > 1.0 || est.ci.hi < 1.0) && floor > 0.0 {
            format!(
                "no significant difference beyond ±{}",
                format_percent(1.0 + floor)
            )
        } else {
            "no significant difference".to_string()
        };
        let cost = match quantity {
            Quantity::Time => what_would_tell(est, floor, n_ref.min(n_cand)),
            Quantity::Memory => None,
        };
        return (text + &cost.unwrap_or_default(), Tone::Neutral);
    }
    let higher = est.ci.lo > 1.0;
    // The point estimate can, in rare discrete cases, fall on the other side
    // of 1.0 than the CI; then the CI bound nearest 1.0 is the honest size.
    let mut r = est.ratio;
    if higher && r <= 1.0 {
        r = est.ci.lo;
    } else if !higher && r >= 1.0 {
        r = est.ci.hi;
    }
    let (more, less) = match quantity {
        Quantity::Time => ("slower", "faster"),
        Quantity::Memory => ("more memory", "less memory"),
    };
    // Beyond 2× a multiplier reads better than "250% slower", and for
    // reductions "3.00× faster" avoids the ambiguous "67% faster".
    let size = if higher && r >= 2.0 {
        format!("{:.2}× {more}", r)
    } else if !higher && r > 0.0 && r <= 0.5 && quantity == Quantity::Time {
        format!("{:.2}× {less}", 1.0 / r)
    } else {
        format!("{} {}", format_percent(r), if higher { more } else { less })
    };
    let tone = if higher { Tone::Worse } else { Tone::Better };
    (format!("{size} — significant"), tone)
}

/// For a time with no significant difference whose interval still reaches
/// past the ±1 % a comparison between runs gates at: how far, and about how
/// many more runs would tell such a change from none (the interval either
/// clearing the in-run `floor` or lying within ±1 %), so "no difference"
/// never reads as "no 1 % change" when the runs could not show it.
fn what_would_tell(est: &RatioEstimate, floor: f64, n: usize) -> Option<String> {
    let gate = perfsleuth_stats::VerdictRule::default().noise_threshold;
    let (lo, hi) = (est.ci.lo - 1.0, est.ci.hi - 1.0);
    if lo >= -gate && hi <= gate {
        return None;
    }
    let reach = if hi > gate && hi >= -lo {
        format!("{} slower", format_percent(est.ci.hi))
    } else {
        format!("{} faster", format_percent(est.ci.lo))
    };
    // The interval is not symmetric about the estimate: each way to decide
    // asks one of its sides (or both) to shrink to the room it has.
    let c = est.ratio - 1.0;
    let narrow = |side: f64, room: f64| perfsleuth_stats::samples_to_narrow(n, side, room);
    let clear_floor = if c > floor {
        narrow(c - lo, c - floor)
    } else if c < -floor {
        narrow(hi - c, -floor - c)
    } else {
        None
    };
    let within_gate = if c.abs() < gate {
        narrow(hi - c, gate - c)
            .zip(narrow(c - lo, c + gate))
            .map(|(a, b)| a.max(b))
    } else {
        None
    };
    let needed = match (clear_floor, within_gate) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b)?,
    };
    let more = (needed - n as f64).max(1.0);
    Some(format!(
        ", yet the CI reaches {reach}: ≈ {} more run{} each would tell a {} change from none",
        perfsleuth_model::quantity::format_count(more),
        if more == 1.0 { "" } else { "s" },
        format_percent(1.0 + gate)
    ))
}

/// "1.03× [0.99× … 1.07×]".
///
/// A significant interval whose bound would round to "1.00×" gets more
/// decimals (up to four), so the printed interval visibly excludes 1.
fn estimate_text(est: &RatioEstimate) -> String {
    let bounds = [est.ci.lo, est.ci.hi];
    let shows_one = |x: f64, d: usize| x != 1.0 && format!("{x:.d$}") == format!("{:.d$}", 1.0);
    let mut d = 2;
    while est.significant && d < 4 && bounds.iter().any(|&x| shows_one(x, d)) {
        d += 1;
    }
    format!(
        "{} [{} … {}]",
        format_ratio_min(est.ratio, d),
        format_ratio_min(est.ci.lo, d),
        format_ratio_min(est.ci.hi, d)
    )
}

/// The comparison of every other benchmark with the reference.
fn comparison_block(out: &mut String, report: &RunReport, style: &Style) {
    let Some(reference) = report.benchmarks.get(report.reference) else {
        return;
    };
    if reference.runs == 0 {
        let _ = writeln!(
            out,
            "Comparison with `{}`: the reference has no samples, so nothing can be compared.",
            reference.name
        );
        return;
    }
    let _ = writeln!(out, "Comparison with `{}`:", reference.name);
    for c in &report.comparisons {
        comparison_rows(out, c, reference, report, style);
    }
}

/// The rows of one comparison: the candidate's name, then time and memory.
fn comparison_rows(
    out: &mut String,
    c: &Comparison,
    reference: &BenchmarkReport,
    report: &RunReport,
    style: &Style,
) {
    // Time and memory estimates share a width so their verdicts line up.
    let est_width = [&c.time, &c.peak_rss]
        .into_iter()
        .flatten()
        .map(|e| width(&estimate_text(e)))
        .max()
        .unwrap_or(0);
    let Some(cand) = report.benchmarks.get(c.index) else {
        return;
    };
    let _ = writeln!(out, "  {}", cand.name);
    if cand.runs == 0 {
        out.push_str("    no samples\n");
        return;
    }
    match &c.time {
        Some(est) => {
            let (text, tone) = if c.time_inconclusive {
                (
                    "inconclusive: the 95% CI and the rank test disagree; measure more runs"
                        .to_string(),
                    Tone::Neutral,
                )
            } else {
                statement(est, Quantity::Time, reference.runs, cand.runs)
            };
            let p = c.time_p_value.map(|p| format!(" ({})", format_p(p)));
            let label = if c.judged.metric == Metric::Cpu {
                "cpu time"
            } else {
                "time    "
            };
            let _ = writeln!(
                out,
                "    {label}  {}  {}{}",
                pad_right(&estimate_text(est), est_width),
                toned(style, tone, &text),
                p.unwrap_or_default()
            );
            let paired = c
                .pairs
                .map_or(String::new(), |n| format!("; {n} adjacent pairs"));
            let _ = writeln!(
                out,
                "              {}",
                style.dim(&format!("{}{paired}", c.judged.sentence()))
            );
        }
        None => out.push_str(&format!(
            "    time      {MISSING} (the reference's median time is 0)\n"
        )),
    }
    // No estimate means peak RSS was not measured (a median of 0): say nothing.
    if let Some(est) = &c.peak_rss {
        let (text, tone) = statement(est, Quantity::Memory, reference.runs, cand.runs);
        let _ = writeln!(
            out,
            "    peak RSS  {}  {}",
            pad_right(&estimate_text(est), est_width),
            toned(style, tone, &text)
        );
    }
}

/// The counters in one line: "task clock 1.02 CPUs · 3 context switches ·
/// …", with IPC and miss rates where their parts were counted.
fn counters_line(b: &BenchmarkReport, wall_median: f64) -> Option<String> {
    if b.counters.is_empty() {
        return None;
    }
    let get = |key: &str| {
        b.counters
            .iter()
            .find(|(c, _)| c.key == key)
            .map(|(_, v)| *v)
    };
    let mut parts = Vec::new();
    if let Some(tc) = get("task_clock_ns") {
        let cpus = if wall_median > 0.0 {
            tc / wall_median
        } else {
            f64::NAN
        };
        parts.push(format!(
            "task clock {} ({cpus:.2} CPUs)",
            format_duration_short(tc)
        ));
    }
    for (key, one, many) in [
        ("context_switches", "context switch", "context switches"),
        ("cpu_migrations", "CPU migration", "CPU migrations"),
        ("page_faults", "page fault", "page faults"),
        ("futex_calls", "futex call", "futex calls"),
        ("sched_switches", "sched switch", "sched switches"),
    ] {
        if let Some(v) = get(key) {
            // Events are whole: a median between two counts is shown rounded.
            let n = v.round();
            let text = if n < 1000.0 {
                format!("{n:.0}")
            } else {
                crate::format::format_si(n)
            };
            parts.push(format!("{text} {}", if n == 1.0 { one } else { many }));
        }
    }
    if let Some(ins) = get("instructions") {
        let ipc = get("cycles")
            .filter(|c| *c > 0.0)
            .map(|c| format!(", IPC {:.2}", ins / c));
        parts.push(format!(
            "{} instructions{}",
            crate::format::format_si(ins),
            ipc.unwrap_or_default()
        ));
    }
    if let (Some(miss), Some(refs)) = (get("cache_misses"), get("cache_references"))
        && refs > 0.0
    {
        parts.push(format!("cache misses {:.1}%", 100.0 * miss / refs));
    }
    if let (Some(miss), Some(all)) = (get("branch_misses"), get("branches"))
        && all > 0.0
    {
        parts.push(format!("branch misses {:.2}%", 100.0 * miss / all));
    }
    (!parts.is_empty()).then(|| parts.join(" · "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use perfsleuth_stats::Interval;
    use perfsleuth_summary::analyze;

    fn est(ratio: f64, lo: f64, hi: f64) -> RatioEstimate {
        RatioEstimate {
            ratio,
            ci: Interval { lo, hi },
            significant: lo > 1.0 || hi < 1.0,
            resamples: 10_000,
        }
    }

    fn say(e: &RatioEstimate, q: Quantity) -> String {
        statement(e, q, 30, 30).0
    }

    #[test]
    fn statements_claim_only_what_the_interval_shows() {
        use Quantity::{Memory, Time};
        let cases = [
            (
                est(1.03, 0.99, 1.07),
                Time,
                "no significant difference, yet the CI reaches 7.0% slower: ≈ 32 more runs each would tell a 1.0% change from none",
            ),
            // Within ±1 % there is nothing more to tell; memory gets no advice.
            (est(1.002, 0.995, 1.009), Time, "no significant difference"),
            (est(1.03, 0.99, 1.07), Memory, "no significant difference"),
            (est(1.03, 1.01, 1.05), Time, "3.0% slower — significant"),
            (
                est(0.78, 0.77, 0.79),
                Memory,
                "22% less memory — significant",
            ),
            (est(1.25, 1.2, 1.3), Memory, "25% more memory — significant"),
            (est(0.8, 0.75, 0.85), Time, "20% faster — significant"),
            (est(2.5, 2.4, 2.6), Time, "2.50× slower — significant"),
            (est(0.25, 0.2, 0.3), Time, "4.00× faster — significant"),
            // A CI touching 1.0 exactly does not exclude it.
            (
                est(1.1, 1.0, 1.2),
                Time,
                "no significant difference, yet the CI reaches 20% slower: ≈ 2 more runs each would tell a 1.0% change from none",
            ),
            // One that excludes it but not the in-run floor says which floor.
            (
                RatioEstimate {
                    significant: false,
                    ..est(0.998, 0.9965, 0.9995)
                },
                Time,
                "no significant difference beyond ±0.2%",
            ),
        ];
        for (e, q, want) in cases {
            assert_eq!(say(&e, q), want, "{e:?}");
        }
        // An interval off-centre past the floor: its lower side must shrink
        // to the floor, not its half-width to the estimate's distance.
        let past_floor = RatioEstimate {
            significant: false,
            ..est(1.009, 1.001, 1.016)
        };
        assert_eq!(
            statement(&past_floor, Time, 336, 340).0,
            "no significant difference beyond ±0.2%, yet the CI reaches 1.6% slower: ≈ 103 more runs each would tell a 1.0% change from none"
        );
    }

    #[test]
    fn statements_follow_the_interval_when_the_point_disagrees() {
        let e = est(1.0, 1.01, 1.02);
        assert_eq!(say(&e, Quantity::Time), "1.0% slower — significant");
        assert_eq!(statement(&e, Quantity::Time, 30, 30).1, Tone::Worse);
        assert_eq!(
            statement(&est(0.9, 0.8, 0.95), Quantity::Time, 30, 30).1,
            Tone::Better
        );
    }

    #[test]
    fn significant_intervals_never_print_as_touching_one() {
        assert_eq!(
            estimate_text(&est(1.012, 1.003, 1.021)),
            "1.012× [1.003× … 1.021×]"
        );
        assert_eq!(
            estimate_text(&est(1.0, 1.00002, 1.0001)),
            "1.0000× [1.0000× … 1.0001×]"
        );
        assert_eq!(
            estimate_text(&est(1.002, 0.998, 1.006)),
            "1.00× [1.00× … 1.01×]"
        );
        assert_eq!(
            estimate_text(&est(0.78, 0.77, 0.79)),
            "0.78× [0.77× … 0.79×]"
        );
    }

    #[test]
    fn statements_refuse_to_judge_tiny_samples() {
        let e = est(2.0, 2.0, 2.0);
        let (text, tone) = statement(&e, Quantity::Time, 1, 30);
        assert_eq!(text, "too few runs to tell: at least 5 each needed");
        assert_eq!(tone, Tone::Neutral);
    }

    #[test]
    fn one_benchmark_block_is_exact() {
        // Wall times 12.1 .. 12.9 ms around a 12.5 ms median, RSS 6.5 MiB.
        let walls = [12_100_000, 12_300_000, 12_500_000, 12_700_000, 12_900_000];
        let r = run(vec![bench("./janet-x64 words.janet", &walls, 6_815_744)]);
        let text = render_terminal(&r, &analyze(&r, None), &Style::default());
        let expected = "\
Benchmark 1: ./janet-x64 words.janet
  Time (median ± 95% CI):   12.500 ms  [12.100 ms … 12.900 ms]
  Time (mean ± σ):          12.500 ms ±  0.316 ms    User: 10.0 ms, System: 1.2 ms
  Range (min … max):        12.100 ms … 12.900 ms    5 runs
  Peak RSS (median):          6.5 MiB  [6.5 MiB … 6.5 MiB]
";
        assert_eq!(text, expected);
    }

    #[test]
    fn comparison_section_is_exact() {
        let r = run(vec![
            bench("base", &spread(20, 10_000_000, 100_000), 8 << 20),
            bench("slower", &spread(20, 12_000_000, 100_000), 8 << 20),
            bench("smaller", &spread(20, 10_000_000, 100_000), 4 << 20),
        ]);
        let text = render_terminal(&r, &analyze(&r, None), &Style::default());
        let comparison = text.split("\n\n").last().unwrap();
        let expected = "\
Comparison with `base`:
  slower
    cpu time  1.20× [1.20× … 1.20×]  20% slower — significant (p < 0.001)
              judged on CPU time: keeps 0.90 CPUs busy without waiting; wall time includes 10% off the CPU (stolen or taken by other processes); 20 adjacent pairs
    peak RSS  1.00× [1.00× … 1.00×]  no significant difference
  smaller
    cpu time  1.00× [1.00× … 1.00×]  no significant difference (p = 1.00)
              judged on CPU time: keeps 0.90 CPUs busy without waiting; wall time includes 10% off the CPU (stolen or taken by other processes); 20 adjacent pairs
    peak RSS  0.50× [0.50× … 0.50×]  50% less memory — significant
";
        assert_eq!(comparison, expected);
    }

    #[test]
    fn failures_outliers_and_status_are_reported() {
        let mut walls = spread(12, 1_000_000, 20_000);
        walls[0] = 5_000_000; // cold first run
        let mut b = bench("cmd", &walls, 1 << 20);
        b.samples[3].exit_code = Some(2);
        let mut r = run(vec![b, bench("empty", &[], 0)]);
        r.status = perfsleuth_model::RunStatus::Interrupted;
        let text = render_terminal(&r, &analyze(&r, None), &Style::default());
        assert!(
            text.starts_with("Run 12 was interrupted: summary of the 12 samples taken.\n\n"),
            "{text}"
        );
        assert!(text.contains(
            "  Warning: 1 of 12 runs exited non-zero or were killed by a signal;\n\
             \x20          their times are included in the statistics above.\n"
        ));
        assert!(
            text.contains("  Note: 1 of 12 runs is an outlier (modified z-score > 3.5); the median and its interval are robust to it.\n"),
            "{text}"
        );
        assert!(text.contains("cold caches: try a larger --warmup."));
        assert!(!text.contains("Other programs"));
        assert!(text.contains("Benchmark 2: empty\n  no samples\n"));
        assert!(text.contains("  empty\n    no samples\n"));
        // More than a tenth of the runs: a warning about the machine.
        let mut walls = spread(12, 1_000_000, 20_000);
        walls[4] = 5_000_000;
        walls[7] = 6_000_000;
        let noisy = run(vec![bench("cmd", &walls, 1 << 20)]);
        let warned = render_terminal(&noisy, &analyze(&noisy, None), &Style::default());
        assert!(
            warned.contains("  Warning: 2 of 12 runs are outliers (modified z-score > 3.5).\n"),
            "{warned}"
        );
        assert!(
            warned.contains("Other programs or I/O may have disturbed the runs"),
            "{warned}"
        );
    }

    #[test]
    fn colour_is_optional_and_plain_text_has_no_escapes() {
        let r = run(vec![
            bench("a", &spread(10, 1_000_000, 1000), 1 << 20),
            bench("b", &spread(10, 2_000_000, 1000), 1 << 20),
        ]);
        let rep = analyze(&r, None);
        let plain = render_terminal(&r, &rep, &Style { color: false });
        assert!(!plain.contains('\x1b'));
        let colored = render_terminal(&r, &rep, &Style { color: true });
        assert!(colored.contains("\x1b[1mBenchmark 1:\x1b[0m a"));
        assert!(colored.contains("\x1b[31m2.00× slower — significant\x1b[0m"));
    }

    #[test]
    fn degenerate_runs_render() {
        let empty = run(vec![]);
        assert_eq!(
            render_terminal(&empty, &analyze(&empty, None), &Style::default()),
            "No benchmarks.\n"
        );
        let mut zeros = run(vec![bench("z", &[0], 0), bench("y", &[0, 0], 0)]);
        zeros.id = None;
        zeros.status = perfsleuth_model::RunStatus::Failed;
        let text = render_terminal(&zeros, &analyze(&zeros, None), &Style::default());
        assert!(text.starts_with("This run failed: summary of the 3 samples taken.\n"));
        assert!(
            text.contains("  Range (min … max):        0 ns … 0 ns    1 run\n"),
            "{text}"
        );
        assert!(!text.contains("Peak RSS"));
        assert!(text.contains("    time      –"));
        // Mismatched report and run: nothing to index, still no panic.
        let other = run(vec![bench("only", &[5], 5)]);
        let _ = render_terminal(&other, &analyze(&zeros, Some(1)), &Style::default());
    }

    #[test]
    fn counters_are_summarised_in_one_line_with_derived_rates() {
        let mut b = bench("./prog", &[10_000_000, 10_000_000, 10_000_000], 4096);
        for s in &mut b.samples {
            s.counters = [
                ("task_clock_ns", 20_000_000.0),
                ("context_switches", 3.0),
                ("cpu_migrations", 1.0),
                ("page_faults", 120.0),
                ("instructions", 3.0e9),
                ("cycles", 2.0e9),
                ("branches", 1.0e8),
                ("branch_misses", 1.0e6),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        }
        let r = run(vec![b]);
        let text = render_terminal(&r, &analyze(&r, None), &Style { color: false });
        assert!(
            text.contains(
                "Counters (median):        task clock 20.0 ms (2.00 CPUs) · 3 context switches · 1 CPU migration · 120 page faults · 3.00G instructions, IPC 1.50 · branch misses 1.00%"
            ),
            "{text}"
        );
        // Without counters there is no line.
        let plain = run(vec![bench("./prog", &[10, 11, 12], 4096)]);
        let text = render_terminal(&plain, &analyze(&plain, None), &Style { color: false });
        assert!(!text.contains("Counters"), "{text}");
    }
}
