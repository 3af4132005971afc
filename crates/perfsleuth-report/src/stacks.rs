//! The wall-time profile of a benchmark (`run --profile`): the headline
//! naming the functions the time is in (on the CPU, and off it in a wall
//! profile), the line saying what was sampled and lost,
//! the folded stacks (`--export-folded`, Brendan Gregg's format, which
//! inferno, flamegraph.pl and speedscope read), and the flame graphs of the
//! HTML report, drawn by inferno (the Rust port of flamegraph.pl): one per
//! benchmark and a differential one per comparison.

use perfsleuth_model::quantity::format_share;
use perfsleuth_model::{Run, StackProfile};

/// Functions named in the headline.
const NAMED: usize = 3;

/// "`alpha` 50%, `beta` 30%, `gamma_` 20% (self time)"; in a wall profile
/// the time waited is its function's too: "`fetch_row` (off CPU: poll)
/// 76%, `crunch` 23%, <1% in 4 other functions (self time, on and off the
/// CPU)".
pub fn stacks_headline(p: &StackProfile) -> String {
    if p.samples == 0 {
        return "no samples (the runs were too short, or spent no time on CPU)".into();
    }
    let top = p.top_functions(NAMED);
    let named: Vec<String> = top
        .named
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f.label(),
                rounded_share(f.self_total() as f64 / p.samples as f64)
            )
        })
        .collect();
    // Functions with time of their own: a caller's inclusive time is not more.
    let mut t = named.join(", ");
    if top.others_self > 0 {
        t.push_str(&format!(
            ", {} in {} other function{}",
            rounded_share(top.others_self as f64 / p.samples as f64),
            top.others,
            if top.others == 1 { "" } else { "s" }
        ));
    }
    t.push_str(if p.has_off_cpu() {
        " (self time, on and off the CPU)"
    } else {
        " (self time)"
    });
    t
}

/// How the shares of the profiled time moved from profile `a` to `b`:
/// each function's share of its profile's time in `a` and in `b`, the
/// biggest move first, at most `n`. Shares, not times, so profiles of
/// different work (a sweep's levels, each with its own number of threads)
/// are comparable.
pub fn shares_moved(a: &StackProfile, b: &StackProfile, n: usize) -> Vec<(String, f64, f64)> {
    let shares = |p: &StackProfile| -> std::collections::HashMap<String, f64> {
        let total = p.samples.max(1) as f64;
        p.functions()
            .into_iter()
            .map(|f| (f.label(), f.self_total() as f64 / total))
            .collect()
    };
    let (sa, sb) = (shares(a), shares(b));
    let mut labels: Vec<&String> = sa.keys().chain(sb.keys()).collect();
    labels.sort();
    labels.dedup();
    let mut moved: Vec<(String, f64, f64)> = labels
        .into_iter()
        .map(|l| {
            (
                l.clone(),
                sa.get(l).copied().unwrap_or(0.0),
                sb.get(l).copied().unwrap_or(0.0),
            )
        })
        .collect();
    moved.sort_by(|x, y| {
        (y.2 - y.1)
            .abs()
            .total_cmp(&(x.2 - x.1).abs())
            .then(x.0.cmp(&y.0))
    });
    moved.truncate(n);
    moved
}

/// A share to the whole percent, "<1%" for a few samples rather than "0%".
pub fn rounded_share(share: f64) -> String {
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
        p.on_cpu_samples(),
        p.iterations.len(),
        if p.kernel { "user and kernel" } else { "user" },
        p.lost
    );
    if p.truncated > 0 {
        t.push_str(&format!(", {} not unwound", p.truncated));
    }
    let runs = p.iterations.len().max(1) as f64;
    let ms = |ns: f64| perfsleuth_model::quantity::format_duration_ns(ns / runs);
    let on_cpu: f64 = p.run_cpu_ns().iter().sum();
    if !p.off_cpu_ns.is_empty() {
        let off: f64 = p.off_cpu_ns.iter().map(|&n| n as f64).sum();
        t.push_str(&format!(
            "; a run: {} on the CPU, {} off it",
            ms(on_cpu),
            ms(off)
        ));
        if let Some(wall) = wall_ns.filter(|w| *w > 0.0) {
            t.push_str(&format!(" (threads summed; wall {})", ms(wall)));
        }
    } else if let Some(wall) = wall_ns.filter(|w| *w > 0.0) {
        t.push_str(&format!(
            "; on CPU {} of the wall time (off-CPU time is not recorded)",
            format_share(on_cpu / wall, 0)
        ));
    } else {
        t.push_str("; off-CPU time is not recorded");
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

/// The fill of the frames of time off the CPU: a blue apart from the
/// flame graph's warm on-CPU colours.
const OFF_CPU_FILL: &str = "rgb(86,143,209)";

/// The legend of a flame graph with time off the CPU.
const OFF_CPU_LEGEND: &str =
    "blue: time off the CPU, the frame [off-cpu: REASON] above where the thread waited";

/// Gives every frame of time off the CPU (its title names an
/// `[off-cpu: …]` frame) the [`OFF_CPU_FILL`].
fn mark_off_cpu(svg: String) -> String {
    const TITLE: &str = "<title>[off-cpu: ";
    if !svg.contains(TITLE) {
        return svg;
    }
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg.as_str();
    while let Some(at) = rest.find(TITLE) {
        let (before, after) = rest.split_at(at);
        out.push_str(before);
        // This frame's rectangle follows its title: replace its fill.
        match after.find("fill=\"").map(|f| f + "fill=\"".len()) {
            Some(start) => match after[start..].find('"') {
                Some(len) => {
                    out.push_str(&after[..start]);
                    out.push_str(OFF_CPU_FILL);
                    rest = &after[start + len..];
                }
                None => {
                    rest = after;
                    break;
                }
            },
            None => {
                rest = after;
                break;
            }
        }
    }
    out.push_str(rest);
    out
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
    // Frames under a pixel are invisible but would still set the graph's
    // height: one thin deep stack (a page fault's kernel path) left most
    // of the box empty above a shallow program. inferno's width is a
    // percentage of the total; 0.1 % of 1 200 pixels is about one.
    o.min_width = 0.1;
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

/// A flame graph of folded stacks, as a standalone SVG document; time off
/// the CPU in blue, with a legend saying so.
pub fn flame_svg(folded: &str, title: &str, unit: &str) -> Option<String> {
    if folded.trim().is_empty() {
        return None;
    }
    let mut options = flame_options(title, unit);
    if folded.contains("[off-cpu: ") {
        options.subtitle = Some(OFF_CPU_LEGEND.to_string());
    }
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut options, folded.lines(), &mut out).ok()?;
    String::from_utf8(out)
        .ok()
        .map(without_script)
        .map(mark_off_cpu)
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
    let mut options = flame_options(title, unit);
    if diff.contains("[off-cpu: ") {
        // Red and blue say more or less time here: waits are told by name.
        options.subtitle =
            Some("frames [off-cpu: REASON]: time off the CPU, where the thread waited".into());
    }
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut options, diff.lines(), &mut out).ok()?;
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
            off_cpu_ns: Vec::new(),
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
        assert!(e.contains("(off-CPU time is not recorded)"), "{e}");
    }

    /// [`profile`] with 8 and 12 periods waited in poll under `alpha`.
    fn wall() -> StackProfile {
        let mut p = profile();
        p.frames.push(ProfileFrame {
            function: "__poll".into(),
            module: "libc.so.6".into(),
            inlined: false,
        });
        p.frames.push(perfsleuth_model::OffCpuReason::Poll.frame());
        p.stacks.push(ProfileStack {
            frames: vec![0, 1, 4, 5],
            counts: vec![8, 12],
        });
        p.samples = 40;
        p.off_cpu_ns = vec![8_100_000, 11_900_000];
        p
    }

    #[test]
    fn a_wall_profile_names_the_wait_in_its_function_and_says_both_times() {
        let p = wall();
        assert_eq!(
            stacks_headline(&p),
            "`alpha` (off CPU: poll) 50%, `alpha` 30%, `beta;x` 12%, 8% in 1 other function (self time, on and off the CPU)"
        );
        let e = stacks_events(&p, Some(62.0e6));
        assert!(
            e.starts_with("20 samples in 2 runs at 997 Hz, user and kernel mode, 0 lost; a run: 10.030 ms on the CPU, 10.000 ms off it (threads summed; wall 31.000 ms)"),
            "{e}"
        );
        // The folded stacks end in the reason's frame; the graph draws it blue
        // with a legend.
        let folded = folded_per_run(&[&p], false);
        assert!(
            folded.contains("main;alpha;__poll;[off-cpu: poll] 10030\n"),
            "{folded}"
        );
        let svg = flame_svg(&folded, "b", flame_unit(false)).unwrap();
        assert!(svg.contains(OFF_CPU_LEGEND), "{svg}");
        let frame = svg.find("<title>[off-cpu: poll]").unwrap();
        let fill = &svg[frame..][svg[frame..].find("fill=\"").unwrap()..];
        assert!(
            fill.starts_with(&format!("fill=\"{OFF_CPU_FILL}\"")),
            "{fill}"
        );
        // Only that frame: alpha's keeps a warm colour.
        assert_eq!(svg.matches(OFF_CPU_FILL).count(), 1, "{svg}");
    }

    #[test]
    fn a_flame_graph_is_as_tall_as_the_stacks_it_draws() {
        let height = |svg: &str| -> usize {
            let at = svg.find(" height=\"").unwrap() + " height=\"".len();
            svg[at..][..svg[at..].find('"').unwrap()].parse().unwrap()
        };
        let shallow = "main;work;alpha 50000\nmain;work;beta 50000\n";
        // 0.06 % of the time 40 frames deep: under a pixel wide.
        let deep = format!(
            "{shallow}main;work;{} 60\n",
            (0..40)
                .map(|i| format!("k{i}"))
                .collect::<Vec<_>>()
                .join(";")
        );
        let alone = flame_svg(shallow, "b", "µs a run").unwrap();
        assert_eq!(
            height(&flame_svg(&deep, "b", "µs a run").unwrap()),
            height(&alone)
        );
        assert_eq!(
            height(&diff_flame_svg(shallow, &deep, "b", "µs a run").unwrap()),
            height(&alone)
        );
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
        run.benchmarks[0].stacks = Some(Box::new(profile()));
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
