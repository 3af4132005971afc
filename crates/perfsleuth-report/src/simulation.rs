//! The terminal summary of a simulation-mode run: callgrind's counts per
//! benchmark (from the first run; the others must repeat it), where the
//! instructions went, and each benchmark against the reference.

use crate::style::Style;
use perfsleuth_model::quantity::MISSING;
use perfsleuth_model::{Benchmark, Run};
use std::fmt::Write;

/// Functions listed per benchmark.
const TOP: usize = 5;

/// The summary of a simulation-mode run.
pub fn render_simulation(run: &Run, reference: Option<usize>, style: &Style) -> String {
    let mut out = String::new();
    if let Some(notice) = crate::terminal::status_notice(run) {
        let _ = writeln!(out, "{}\n", style.yellow(&notice));
    }
    if run.benchmarks.is_empty() {
        out.push_str("No benchmarks.\n");
        return out;
    }
    for (i, b) in run.benchmarks.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        block(&mut out, i, b, style);
    }
    portability(&mut out, run, style);
    let reference = reference.unwrap_or(0).min(run.benchmarks.len() - 1);
    let base = &run.benchmarks[reference];
    let others: Vec<(usize, &Benchmark)> = run
        .benchmarks
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != reference)
        .collect();
    if !others.is_empty() {
        let _ = writeln!(out, "\nComparison with `{}`:", base.name);
        for (_, b) in others {
            let ratio = |key: &str| Some(first(b, key)? / first(base, key)?);
            let fmt = |r: Option<f64>| r.map_or(MISSING.to_string(), |r| format!("{r:.3}×"));
            let _ = writeln!(
                out,
                "  {}\n    Ir {}   est. cycles {}",
                style.bold(&b.name),
                fmt(ratio("Ir")),
                fmt(ratio("est_cycles"))
            );
        }
    }
    out
}

/// How far the counts carry to other CPUs: the `sim.*` facts the run
/// recorded (runs older than portable mode have none, and get no line).
fn portability(out: &mut String, run: &Run, style: &Style) {
    let env = &run.environment;
    match env.get("sim.portable") {
        Some("off") => {
            let _ = writeln!(
                out,
                "\n{}",
                style.dim("Counts follow this CPU's glibc dispatch (not portable): compare them with runs on the same kind of CPU.")
            );
        }
        Some(level) => {
            let _ = writeln!(
                out,
                "\nCounts portable across CPUs with {level}: glibc's dispatch was fixed and checked."
            );
            // The value runs to hundreds of characters: counted here, kept
            // whole in the run's facts.
            if let Some(t) = env.get("sim.glibc_tunables") {
                let n = t.split(':').filter(|s| !s.is_empty()).count();
                let _ = writeln!(
                    out,
                    "{}",
                    style.dim(&format!(
                        "  GLIBC_TUNABLES: {n} tunable{} set for the benchmarked processes (the value: `show --json`, fact sim.glibc_tunables)",
                        if n == 1 { "" } else { "s" }
                    ))
                );
            }
            if let Some(own) = env.get("sim.cpuid_dispatch").filter(|v| *v != "none") {
                let _ = writeln!(
                    out,
                    "{}",
                    style.yellow(&format!(
                        "  Not covered: {own} executes CPUID itself and may dispatch differently on another CPU."
                    ))
                );
            }
        }
        None => {}
    }
}

/// A simulation run as a Markdown table (for `--export-markdown`): the
/// counts of the first run of each benchmark and whether the runs agreed.
pub fn render_simulation_markdown(run: &Run) -> String {
    let mut out = String::from(
        "| Benchmark | Ir | Estimated cycles | L1 misses (I1mr + D1mr + D1mw) | LL misses (ILmr + DLmr + DLmw) | Runs |\n\
         |---|--:|--:|--:|--:|---|\n",
    );
    for b in &run.benchmarks {
        let v = |key: &str| first(b, key);
        let sum = |keys: [&str; 3]| -> Option<f64> { keys.iter().map(|k| v(k)).sum() };
        let cell = |x: Option<f64>| x.map_or(MISSING.to_string(), digits);
        let ir: Vec<f64> = b
            .samples
            .iter()
            .filter_map(|s| s.counters.get("Ir").copied())
            .collect();
        let agree = match ir.len() {
            0 => "none completed".to_string(),
            1 => "1 (unchecked)".to_string(),
            n if ir.iter().all(|x| *x == ir[0]) => format!("{n}, identical"),
            n => format!("{n}, **disagree**"),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {agree} |",
            b.name.replace('|', "\\|").replace('`', "'"),
            cell(v("Ir")),
            cell(v("est_cycles")),
            cell(sum(["I1mr", "D1mr", "D1mw"])),
            cell(sum(["ILmr", "DLmr", "DLmw"]))
        );
    }
    out
}

/// The first run's value of a counter.
fn first(b: &Benchmark, key: &str) -> Option<f64> {
    b.samples.first()?.counters.get(key).copied()
}

/// The median of a counter over the benchmark's runs.
fn median(b: &Benchmark, key: &str) -> Option<f64> {
    let mut v: Vec<f64> = b
        .samples
        .iter()
        .filter_map(|s| s.counters.get(key).copied())
        .collect();
    v.sort_by(f64::total_cmp);
    perfsleuth_stats::median(&v)
}

fn block(out: &mut String, i: usize, b: &Benchmark, style: &Style) {
    let _ = writeln!(
        out,
        "{}",
        style.bold(&format!("Benchmark {}: {}", i + 1, b.name))
    );
    let ir: Vec<f64> = b
        .samples
        .iter()
        .filter_map(|s| s.counters.get("Ir").copied())
        .collect();
    if ir.is_empty() {
        out.push_str("  no simulated run completed\n");
        return;
    }
    let min = ir.iter().copied().fold(f64::INFINITY, f64::min);
    let max = ir.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let agreement = if ir.len() == 1 {
        "1 run, not checked for determinism".to_string()
    } else if max == min {
        format!("{} runs, identical counts", ir.len())
    } else if max / min - 1.0 < perfsleuth_model::NONDETERMINISM_WARNING {
        format!(
            "{} runs within {} instruction{} ({}) of each other: below any threshold",
            ir.len(),
            digits(max - min),
            if max - min == 1.0 { "" } else { "s" },
            perfsleuth_model::quantity::format_relative(max / min - 1.0)
        )
    } else {
        style.red(&format!(
            "{} runs DISAGREE: Ir {} … {}, {} apart ({}; the program is not deterministic)",
            ir.len(),
            digits(min),
            digits(max),
            digits(max - min),
            perfsleuth_model::quantity::format_relative(max / min - 1.0)
        ))
    };
    // The median, the number `compare` judges (not the first run's).
    let value = |key: &str| median(b, key).map_or(MISSING.to_string(), digits);
    let _ = writeln!(
        out,
        "  Instructions (Ir):    {:>16}   {agreement}",
        value("Ir")
    );
    let _ = writeln!(
        out,
        "  Estimated cycles:     {:>16}   L1 hits + 5·LL hits + 35·RAM hits",
        value("est_cycles")
    );
    let _ = writeln!(
        out,
        "  Data reads / writes:  {:>16} / {}",
        value("Dr"),
        value("Dw")
    );
    let _ = writeln!(
        out,
        "  L1 misses:            {} instr, {} read, {} write",
        value("I1mr"),
        value("D1mr"),
        value("D1mw")
    );
    let _ = writeln!(
        out,
        "  LL misses:            {} instr, {} read, {} write",
        value("ILmr"),
        value("DLmr"),
        value("DLmw")
    );
    if let Some(p) = &b.profile
        && let Some(e) = p.event("Ir")
    {
        let total = p.totals.get(e).copied().unwrap_or(0).max(1) as f64;
        let _ = writeln!(out, "  Where the instructions went (self, inclusive):");
        // By own cost: inclusive cost ranks the call chain (_start, main) first.
        let mut by_self: Vec<_> = p.functions.iter().collect();
        by_self.sort_by_key(|f| std::cmp::Reverse(f.self_cost.get(e).copied().unwrap_or(0)));
        for f in by_self.into_iter().take(TOP) {
            let incl = f.inclusive.get(e).copied().unwrap_or(0) as f64;
            let own = f.self_cost.get(e).copied().unwrap_or(0) as f64;
            let _ = writeln!(
                out,
                "    {:>5.1}%  {:>5.1}%  {} ({})",
                100.0 * own / total,
                100.0 * incl / total,
                f.function,
                short_object(&f.object)
            );
        }
    }
}

/// The file name of a shared object or executable.
pub(crate) fn short_object(object: &str) -> &str {
    object.rsplit('/').next().unwrap_or(object)
}

/// An integer count with thin grouping: 12,345,678.
pub(crate) fn digits(v: f64) -> String {
    if !v.is_finite() {
        return MISSING.to_string();
    }
    let s = format!("{:.0}", v.abs());
    let mut grouped = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    if v < 0.0 {
        format!("-{grouped}")
    } else {
        grouped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfsleuth_model::{FunctionProfile, Mode, Profile, Sample};

    fn sample(ir: f64) -> Sample {
        Sample {
            counters: [
                ("Ir".to_string(), ir),
                ("est_cycles".to_string(), ir * 1.5),
                ("Dr".to_string(), 10.0),
            ]
            .into(),
            exit_code: Some(0),
            ..Sample::default()
        }
    }

    #[test]
    fn counts_agreement_functions_and_ratios() {
        let mut run = crate::testutil::run(vec![]);
        run.mode = Mode::Simulation;
        run.benchmarks = vec![
            Benchmark {
                name: "./a".into(),
                samples: vec![sample(1_000_000.0), sample(1_000_000.0)],
                profile: Some(Box::new(Profile {
                    events: vec!["Ir".into()],
                    totals: vec![1_000_000],
                    functions: vec![FunctionProfile {
                        object: "/usr/lib/libc.so.6".into(),
                        function: "_int_malloc".into(),
                        self_cost: vec![400_000],
                        inclusive: vec![450_000],
                        ..FunctionProfile::default()
                    }],
                    ..Profile::default()
                })),
                ..Benchmark::default()
            },
            Benchmark {
                name: "./b".into(),
                samples: vec![sample(1_200_000.0), sample(1_200_001.0)],
                ..Benchmark::default()
            },
            Benchmark {
                name: "./c".into(),
                samples: vec![
                    sample(1_300_000.0),
                    sample(1_200_000.0),
                    sample(1_250_000.0),
                ],
                ..Benchmark::default()
            },
        ];
        let text = render_simulation(&run, None, &Style { color: false });
        assert!(text.contains("1,000,000"), "{text}");
        assert!(text.contains("2 runs, identical counts"), "{text}");
        assert!(
            text.contains("40.0%   45.0%  _int_malloc (libc.so.6)"),
            "{text}"
        );
        // One instruction in a million is no disagreement (issue 38)…
        assert!(
            text.contains(
                "2 runs within 1 instruction (0.000083%) of each other: below any threshold"
            ),
            "{text}"
        );
        // …8 % is, with how far apart.
        assert!(
            text.contains("3 runs DISAGREE: Ir 1,200,000 … 1,300,000, 100,000 apart (8.3%;"),
            "{text}"
        );
        // The headline count is the median (what compare judges), not the first run's.
        assert!(
            text.lines()
                .any(|l| l.contains("Instructions (Ir):") && l.contains("1,250,000")),
            "{text}"
        );
        assert!(text.contains("Ir 1.200×   est. cycles 1.200×"), "{text}");
    }

    #[test]
    fn the_portable_tunables_are_counted_not_printed_whole() {
        // Their 600-character value was printed under every run (issue 38).
        let mut run = crate::testutil::run(vec![]);
        run.mode = Mode::Simulation;
        run.benchmarks = vec![Benchmark {
            name: "./a".into(),
            samples: vec![sample(1_000_000.0)],
            ..Benchmark::default()
        }];
        let value = "glibc.cpu.hwcaps=-AVX512F,-AVX512VL:glibc.cpu.x86_rep_movsb_threshold=2048:glibc.cpu.x86_data_cache_size=32768";
        let env = &mut run.environment;
        env.set(
            "sim.portable",
            "x86-64-v3",
            perfsleuth_model::ImpactClass::Identity,
        );
        env.set(
            "sim.glibc_tunables",
            value,
            perfsleuth_model::ImpactClass::Identity,
        );
        let text = render_simulation(&run, None, &Style { color: false });
        assert!(!text.contains(value), "{text}");
        assert!(
            text.contains("GLIBC_TUNABLES: 3 tunables set for the benchmarked processes"),
            "{text}"
        );
    }

    #[test]
    fn digits_are_grouped() {
        assert_eq!(digits(0.0), "0");
        assert_eq!(digits(999.0), "999");
        assert_eq!(digits(1000.0), "1,000");
        assert_eq!(digits(-1234567.0), "-1,234,567");
        assert_eq!(digits(f64::NAN), "–");
    }

    #[test]
    fn markdown_shows_counts_not_valgrind_times() {
        let mut run = crate::testutil::run(vec![]);
        run.mode = Mode::Simulation;
        run.benchmarks = vec![Benchmark {
            name: "./a".into(),
            samples: vec![sample(1_000_000.0), sample(1_000_000.0)],
            ..Benchmark::default()
        }];
        let md = render_simulation_markdown(&run);
        assert!(
            md.contains("| `./a` | 1,000,000 | 1,500,000 | – | – | 2, identical |"),
            "{md}"
        );
    }
}
