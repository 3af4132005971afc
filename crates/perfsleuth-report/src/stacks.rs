//! The wall-time profile of a benchmark (`run --profile`): the headline
//! naming the hottest functions, the line saying what was sampled and lost,
//! the folded stacks (`--export-folded`, Brendan Gregg's format, which
//! inferno, flamegraph.pl and speedscope read), and the flame graphs of the
//! HTML report, drawn by inferno (the Rust port of flamegraph.pl): one per
//! benchmark and a differential one per comparison.

use perfsleuth_model::quantity::format_share;
use perfsleuth_model::{Run, StackProfile};

/// Functions named in the headline.
const NAMED: usize = 3;

/// "`alpha` 50%, `beta` 30%, `gamma_` 20% of 514 samples (self time)".
pub fn stacks_headline(p: &StackProfile) -> String {
    if p.samples == 0 {
        return "no samples (the runs were too short, or spent no time on CPU)".into();
    }
    let functions = p.functions();
    let named: Vec<String> = functions
        .iter()
        .take(NAMED)
        .map(|f| {
            format!(
                "`{}` {}",
                f.frame.function,
                rounded_share(f.self_total() as f64 / p.samples as f64)
            )
        })
        .collect();
    let rest: u64 = functions.iter().skip(NAMED).map(|f| f.self_total()).sum();
    let mut t = named.join(", ");
    if rest > 0 {
        t.push_str(&format!(
            ", {} in {} other functions",
            rounded_share(rest as f64 / p.samples as f64),
            functions.len() - NAMED
        ));
    }
    t.push_str(" (self time)");
    t
}

/// A share to the whole percent, "<1%" for a few samples rather than "0%".
fn rounded_share(share: f64) -> String {
    if share > 0.0 && share < 0.005 {
        "<1%".to_string()
    } else {
        format_share(share, 0)
    }
}

/// "514 samples in 5 runs at 997 Hz, user and kernel mode, 0 lost; on CPU
/// 98% of the wall time (off-CPU time is not sampled)". `wall_ns`: the
/// benchmark's wall time summed over the profiled runs, where known.
pub fn stacks_events(p: &StackProfile, wall_ns: Option<f64>) -> String {
    let hz = 1e9 / p.period_ns.max(1) as f64;
    if let Some(source) = &p.source {
        let rate = if p.period_ns > 0 {
            format!(" at {hz:.0} Hz")
        } else {
            String::new()
        };
        return format!(
            "{} samples{rate} imported from {source} (one profiled run)",
            p.samples
        );
    }
    let mut t = format!(
        "{} samples in {} runs at {hz:.0} Hz, {} mode, {} lost",
        p.samples,
        p.iterations.len(),
        if p.kernel { "user and kernel" } else { "user" },
        p.lost
    );
    if p.truncated > 0 {
        t.push_str(&format!(", {} not unwound", p.truncated));
    }
    if let Some(wall) = wall_ns.filter(|w| *w > 0.0) {
        let on_cpu = p.run_cpu_ns().iter().sum::<f64>() / wall;
        t.push_str(&format!(
            "; on CPU {} of the wall time (off-CPU time is not sampled; --locks traces waits)",
            format_share(on_cpu, 0)
        ));
    } else {
        t.push_str("; off-CPU time is not sampled");
    }
    t
}

/// The folded stacks of every profiled benchmark of `run`: one line per
/// distinct stack, `outer;…;inner count`, counts summed over the runs.
/// With several benchmarks profiled, each stack starts with the
/// benchmark's name. Inlined frames end in `_[i]` and kernel mode is
/// `[kernel]_[k]`, the suffixes inferno and flamegraph.pl colour by.
pub fn folded(run: &Run) -> String {
    let profiled: Vec<_> = run
        .benchmarks
        .iter()
        .filter_map(|b| b.stacks.as_ref().map(|p| (b.name.as_str(), p)))
        .collect();
    let prefix = profiled.len() > 1;
    let mut out = String::new();
    for (name, p) in profiled {
        for s in &p.stacks {
            let count: u64 = s.counts.iter().map(|&c| u64::from(c)).sum();
            if count == 0 {
                continue;
            }
            let mut parts: Vec<String> = Vec::with_capacity(s.frames.len() + 1);
            if prefix {
                parts.push(folded_name(name));
            }
            parts.extend(
                s.frames
                    .iter()
                    .filter_map(|&f| p.frames.get(f as usize))
                    .map(frame_text),
            );
            out.push_str(&parts.join(";"));
            out.push_str(&format!(" {count}\n"));
        }
    }
    out
}

/// Whether `profiles` must be drawn in samples rather than time: one of
/// them has no sampling period (imported folded stacks).
pub fn in_samples(profiles: &[&StackProfile]) -> bool {
    profiles.iter().any(|p| p.period_ns == 0)
}

/// The unit of [`folded_per_run`]'s counts.
pub fn flame_unit(in_samples: bool) -> &'static str {
    if in_samples {
        "samples a run"
    } else {
        "µs a run"
    }
}

/// The folded stacks of `profiles` (one benchmark's, over one or several
/// runs) per run — on-CPU microseconds, or samples where `in_samples` —:
/// comparable between sides that measured different numbers of runs.
pub fn folded_per_run(profiles: &[&StackProfile], in_samples: bool) -> String {
    let runs: usize = profiles.iter().map(|p| p.iterations.len()).sum();
    let mut by_stack: std::collections::BTreeMap<String, f64> = std::collections::BTreeMap::new();
    for p in profiles {
        for s in &p.stacks {
            // Samples weigh a thousand, to be read as the µs of a ms period.
            let ns: f64 = s
                .counts
                .iter()
                .enumerate()
                .map(|(i, &c)| {
                    let w = if in_samples {
                        1000.0
                    } else {
                        p.period_of(i) as f64
                    };
                    f64::from(c) * w
                })
                .sum();
            let names: Vec<String> = s
                .frames
                .iter()
                .filter_map(|&f| p.frames.get(f as usize))
                .map(frame_text)
                .collect();
            *by_stack.entry(names.join(";")).or_default() += ns;
        }
    }
    let mut out = String::new();
    for (stack, ns) in by_stack {
        let us = (ns / 1e3 / runs.max(1) as f64).round() as u64;
        if us > 0 {
            out.push_str(&format!("{stack} {us}\n"));
        }
    }
    out
}

/// A frame as a folded line names it: the `_[i]` and `_[k]` suffixes.
fn frame_text(frame: &perfsleuth_model::ProfileFrame) -> String {
    let mut text = folded_name(&frame.function);
    if frame.function == "[kernel]" {
        text.push_str("_[k]");
    } else if frame.inlined {
        text.push_str("_[i]");
    }
    text
}

/// The report's flame graph options: a fixed width, static (no script: the
/// report runs none), counts in `unit` ([`flame_unit`]).
fn flame_options<'a>(title: &str, unit: &str) -> inferno::flamegraph::Options<'a> {
    let mut o = inferno::flamegraph::Options::default();
    o.title = title.to_string();
    o.count_name = unit.to_string();
    o.image_width = Some(1200);
    o.no_javascript = true;
    o.deterministic = true;
    o.hash = true;
    o
}

/// inferno's SVG without its script element and its `onload` (with
/// `no_javascript` it still declares a few variables and an `init` call).
fn without_script(svg: String) -> String {
    let mut svg = svg.replace(" onload=\"init(evt)\"", "");
    if let (Some(a), Some(b)) = (svg.find("<script"), svg.find("</script>")) {
        svg.replace_range(a..b + "</script>".len(), "");
    }
    svg
}

/// A flame graph of folded stacks, as a standalone SVG document.
pub fn flame_svg(folded: &str, title: &str, unit: &str) -> Option<String> {
    if folded.trim().is_empty() {
        return None;
    }
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut flame_options(title, unit), folded.lines(), &mut out)
        .ok()?;
    String::from_utf8(out).ok().map(without_script)
}

/// A differential flame graph: the `after` stacks drawn, red where they
/// took more time than `before`, blue where less (both in the same units,
/// not normalised: a function that got slower is red however the others
/// moved).
pub fn diff_flame_svg(before: &str, after: &str, title: &str, unit: &str) -> Option<String> {
    if before.trim().is_empty() || after.trim().is_empty() {
        return None;
    }
    let mut diff = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options::default(),
        before.as_bytes(),
        after.as_bytes(),
        &mut diff,
    )
    .ok()?;
    let diff = String::from_utf8(diff).ok()?;
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut flame_options(title, unit), diff.lines(), &mut out)
        .ok()?;
    String::from_utf8(out).ok().map(without_script)
}

/// An SVG document as an `<img>` of the HTML report: its own styles and ids
/// stay out of the page, and nothing in it runs.
pub fn svg_img(svg: &str, alt: &str) -> String {
    use base64::Engine as _;
    format!(
        "<img class=\"flame\" alt=\"{}\" src=\"data:image/svg+xml;base64,{}\">",
        crate::markup::escape(alt),
        base64::engine::general_purpose::STANDARD.encode(svg)
    )
}

/// A frame's name with the format's separators taken out.
fn folded_name(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            ';' => ':',
            '\n' | '\r' => ' ',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfsleuth_model::{ProfileFrame, ProfileStack};

    fn frame(f: &str, inlined: bool) -> ProfileFrame {
        ProfileFrame {
            function: f.into(),
            module: "prog".into(),
            inlined,
        }
    }

    fn profile() -> StackProfile {
        StackProfile {
            event: "cpu-clock".into(),
            period_ns: 1_003_009,
            kernel: true,
            iterations: vec![0, 1],
            samples: 20,
            lost: 0,
            truncated: 0,
            periods_ns: Vec::new(),
            frames: vec![
                frame("main", false),
                frame("alpha", false),
                frame("beta;x", true),
                frame("[kernel]", false),
            ],
            stacks: vec![
                ProfileStack {
                    frames: vec![0, 1],
                    counts: vec![6, 6],
                },
                ProfileStack {
                    frames: vec![0, 2],
                    counts: vec![3, 2],
                },
                ProfileStack {
                    frames: vec![0, 2, 3],
                    counts: vec![1, 2],
                },
            ],
            source: None,
        }
    }

    #[test]
    fn the_headline_names_self_time_and_the_events_say_what_was_not_sampled() {
        let p = profile();
        assert_eq!(
            stacks_headline(&p),
            "`alpha` 60%, `beta;x` 25%, `[kernel]` 15% (self time)"
        );
        let e = stacks_events(&p, Some(40.0e6));
        assert!(e.starts_with("20 samples in 2 runs at 997 Hz, user and kernel mode, 0 lost; on CPU 50% of the wall time"), "{e}");
        assert!(e.contains("off-CPU time is not sampled"), "{e}");
    }

    #[test]
    fn flame_graphs_are_static_svg_naming_the_functions() {
        let p = profile();
        let folded = folded_per_run(&[&p], false);
        // 12 samples × 1.003 ms over 2 runs: 6 018 µs a run.
        assert!(folded.contains("main;alpha 6018\n"), "{folded}");
        let svg = flame_svg(&folded, "b", flame_unit(false)).unwrap();
        assert!(svg.contains("<svg") && svg.contains("alpha"), "{svg}");
        assert!(!svg.contains("<script") && !svg.contains("onload"));
        let mut slower = p.clone();
        slower.stacks[0].counts = vec![12, 12];
        let diff = diff_flame_svg(
            &folded,
            &folded_per_run(&[&slower], false),
            "b",
            flame_unit(false),
        )
        .unwrap();
        // The grown function is drawn red (inferno: rgb(255,…,…) for growth).
        assert!(
            diff.contains("alpha") && diff.contains("rgb(255,"),
            "{diff}"
        );
        let img = svg_img(&svg, "flame <b>");
        assert!(img.starts_with(
            "<img class=\"flame\" alt=\"flame &lt;b&gt;\" src=\"data:image/svg+xml;base64,"
        ));
        assert_eq!(flame_svg("", "x", "µs a run"), None);
        // Without a period (imported folded stacks): samples a run.
        let mut imported = p.clone();
        imported.period_ns = 0;
        assert!(in_samples(&[&imported]));
        assert!(folded_per_run(&[&imported], true).contains("main;alpha 6\n"));
    }

    #[test]
    fn folded_stacks_sum_the_runs_and_mark_inlined_and_kernel_frames() {
        let mut run = crate::testutil::run(vec![crate::testutil::bench("b", &[10], 1)]);
        run.benchmarks[0].stacks = Some(profile());
        assert_eq!(
            folded(&run),
            "main;alpha 12\nmain;beta:x_[i] 5\nmain;beta:x_[i];[kernel]_[k] 3\n"
        );
        // Two profiled benchmarks: each stack starts with its benchmark.
        let mut second = run.benchmarks[0].clone();
        second.name = "c".into();
        run.benchmarks.push(second);
        assert!(folded(&run).starts_with("b;main;alpha 12\n"));
        assert!(folded(&run).contains("\nc;main;alpha 12\n"));
    }
}
