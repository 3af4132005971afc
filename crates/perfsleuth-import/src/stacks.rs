//! Profiles taken elsewhere, to join a stored run (`import --into`):
//! Brendan Gregg's folded stacks (`outer;…;inner count`, what inferno,
//! flamegraph.pl and `perfsleuth --export-folded` write) and the text of
//! `perf script` (collapsed with inferno's perf folder, the port of
//! stackcollapse-perf.pl). A file is one profiled run: its samples have no
//! run-by-run split, so a comparison shows its shares without an interval.

use crate::ImportError;
use perfsleuth_model::{ProfileFrame, ProfileStack, StackProfile};
// Millions of frames and stacks in a large profile: a fast hash.
use foldhash::HashMap;

/// The most distinct stacks a profile may hold (a larger file is refused
/// rather than stored).
pub const MAX_STACKS: usize = 1_000_000;

/// Whether `text` reads as folded stacks: every line with content is
/// `frames count`, the count a whole number, and some line has a `;`.
pub fn looks_folded(text: &str) -> bool {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty()).peekable();
    lines.peek().is_some()
        && text.contains(';')
        && lines.take(50).all(|l| {
            l.trim_end()
                .rsplit_once(' ')
                .is_some_and(|(stack, n)| !stack.is_empty() && n.parse::<u64>().is_ok())
        })
}

/// Whether `text` reads as `perf script` output: a sample header (a line
/// with `time:` then an event name), then tab-indented frames.
pub fn looks_perf_script(text: &str) -> bool {
    let mut header = false;
    for line in text.lines().take(200) {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if line.starts_with(|c: char| c.is_whitespace()) {
            return header;
        }
        header = header_period(line).is_some();
    }
    false
}

/// The sample period and event of a `perf script` header line
/// (`prog 1234 [000] 5.678901:    1003009 cpu-clock:u:`): the token after
/// the time, when it is a number, and the event after it.
fn header_period(line: &str) -> Option<(Option<u64>, String)> {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let t = tokens.iter().position(|t| {
        t.strip_suffix(':')
            .is_some_and(|n| n.contains('.') && n.parse::<f64>().is_ok())
    })?;
    let rest = &tokens[t + 1..];
    let (period, event) = match rest {
        [n, e, ..] if n.parse::<u64>().is_ok() => (n.parse().ok(), *e),
        [e, ..] => (None, *e),
        [] => return None,
    };
    let event = event.trim_end_matches(':');
    let event = event.split(':').next().unwrap_or(event);
    Some((period, event.to_string()))
}

/// Parses folded stacks into a profile of one run; `source` says where
/// it came from. The period is unknown (0): shares, not times.
pub fn parse_folded(text: &str, source: &str) -> Result<StackProfile, ImportError> {
    parse_weighted(text, source, 1)
}

/// Folded stacks whose counts are `weight` times the samples (inferno
/// weighs `perf script` samples by their period).
fn parse_weighted(text: &str, source: &str, weight: u64) -> Result<StackProfile, ImportError> {
    let mut frames: Vec<ProfileFrame> = Vec::new();
    // Keyed by the frame's text where it lies in the file, so a frame is
    // built (and its name copied) once: `frame_of` gives each text a frame
    // of its own, so the frames stay unique.
    let mut index: HashMap<&str, u32> = HashMap::default();
    let mut by_stack: HashMap<Vec<u32>, u64> = HashMap::default();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        let at = || format!("line {}", n + 1);
        let (stack, count) = line.rsplit_once(' ').ok_or_else(|| {
            ImportError::new(
                at(),
                "not `frames count`",
                "give folded stacks: `outer;…;inner COUNT` per line",
            )
        })?;
        let count: u64 = count.parse().map_err(|_| {
            ImportError::new(
                at(),
                format!("`{count}` is not a sample count"),
                "give folded stacks: `outer;…;inner COUNT` per line",
            )
        })?;
        if stack
            .trim_end()
            .rsplit_once(' ')
            .is_some_and(|(_, n)| n.parse::<u64>().is_ok())
        {
            return Err(ImportError::new(
                at(),
                "two counts on a line: a differential file (before and after)",
                "import each side's own folded stacks into its run",
            ));
        }
        let ids = stack
            .split(';')
            .filter(|f| !f.is_empty())
            .map(|f| {
                *index.entry(f).or_insert_with(|| {
                    frames.push(frame_of(f));
                    (frames.len() - 1) as u32
                })
            })
            .collect::<Vec<u32>>();
        if ids.is_empty() {
            continue;
        }
        let total = by_stack.entry(ids).or_default();
        *total = total.saturating_add(count);
        if by_stack.len() > MAX_STACKS {
            return Err(ImportError::new(
                at(),
                format!("more than {MAX_STACKS} distinct stacks"),
                "fold the profile further (fewer frames, or one process)",
            ));
        }
    }
    if by_stack.is_empty() {
        return Err(ImportError::new(
            "",
            "no stacks in the file",
            "give folded stacks: `outer;…;inner COUNT` per line",
        ));
    }
    let mut stacks: Vec<ProfileStack> = by_stack
        .into_iter()
        .map(|(frames, n)| ProfileStack {
            frames,
            counts: vec![
                u32::try_from((n as f64 / weight.max(1) as f64).round().max(1.0) as u64)
                    .unwrap_or(u32::MAX),
            ],
        })
        .collect();
    stacks.sort_by(|a, b| a.frames.cmp(&b.frames));
    let samples = stacks.iter().map(|s| u64::from(s.counts[0])).sum();
    Ok(StackProfile {
        event: "imported".into(),
        period_ns: 0,
        periods_ns: Vec::new(),
        kernel: frames.iter().any(|f| f.module == "[kernel]"),
        iterations: vec![0],
        samples,
        lost: 0,
        truncated: 0,
        frames,
        stacks,
        source: Some(source.to_string()),
        // The time waited is in the stacks (`[off-cpu: …]` leaves); a
        // file has no exact total of its own.
        off_cpu_ns: Vec::new(),
    })
}

/// A folded frame: flamegraph.pl's suffixes say inlined (`_[i]`), kernel
/// (`_[k]`) and JIT (`_[j]`) code; `[off-cpu: REASON]` (perfsleuth's wall
/// profiles) is time waited off the CPU.
fn frame_of(f: &str) -> ProfileFrame {
    if let Some(reason) = perfsleuth_model::OffCpuReason::of_frame(f) {
        return reason.frame();
    }
    let (name, module, inlined) = if let Some(n) = f.strip_suffix("_[i]") {
        (n, "", true)
    } else if let Some(n) = f.strip_suffix("_[k]") {
        (n, "[kernel]", false)
    } else if let Some(n) = f.strip_suffix("_[j]") {
        (n, "[jit]", false)
    } else {
        (f, "", false)
    };
    ProfileFrame {
        function: name.to_string(),
        module: module.to_string(),
        inlined,
    }
}

/// Parses `perf script` output (of `perf record -g`, any call-graph
/// mode): folded by inferno, the period taken from the sample headers. For
/// `cpu-clock` and `task-clock` samples the period is nanoseconds of CPU,
/// so the profile has times; for other events (cycles) only shares.
pub fn parse_perf_script(text: &str, source: &str) -> Result<StackProfile, ImportError> {
    use inferno::collapse::Collapse as _;
    let mut folded = Vec::new();
    let mut options = inferno::collapse::perf::Options::default();
    options.annotate_kernel = true;
    options.annotate_jit = true;
    inferno::collapse::perf::Folder::from(options)
        .collapse(text.as_bytes(), &mut folded)
        .map_err(|e| {
            ImportError::new(
                "",
                format!("cannot fold the perf script output: {e}"),
                "give the text `perf script` prints for a `perf record -g` file",
            )
        })?;
    let folded = String::from_utf8_lossy(&folded);
    if folded.trim().is_empty() {
        return Err(ImportError::new(
            "",
            "no samples with call stacks in the perf script output",
            "record with call stacks (`perf record -g` or `--call-graph dwarf`), then `perf script`",
        ));
    }
    let headers: Vec<(Option<u64>, String)> = text
        .lines()
        .filter(|l| !l.starts_with(|c: char| c.is_whitespace() || c == '#'))
        .filter_map(header_period)
        .collect();
    // inferno weighs each sample by its period: back to samples.
    let mut periods: Vec<u64> = headers.iter().filter_map(|(n, _)| *n).collect();
    periods.sort_unstable();
    let period = periods.get(periods.len() / 2).copied().filter(|&n| n > 0);
    let mut p = parse_weighted(&folded, source, period.unwrap_or(1))?;
    if let Some((_, event)) = headers.first() {
        p.event = event.clone();
    }
    if let Some(period) = period
        && matches!(p.event.as_str(), "cpu-clock" | "task-clock")
    {
        p.period_ns = period;
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folded_stacks_keep_their_counts_and_suffixes() {
        let p = parse_folded(
            "main;work;alpha 50\nmain;work;beta_[i] 30\nmain;work;beta_[i];sys_write_[k] 2\nmain;work;alpha 5\n",
            "x.folded",
        )
        .unwrap();
        assert_eq!(p.samples, 87);
        assert_eq!(p.iterations, vec![0]);
        let f = p.functions();
        assert_eq!(f[0].frame.function, "alpha");
        assert_eq!(f[0].self_total(), 55);
        assert!(p.frames.iter().any(|f| f.function == "beta" && f.inlined));
        assert!(
            p.frames
                .iter()
                .any(|f| f.function == "sys_write" && f.module == "[kernel]")
        );
        assert!(looks_folded("a;b 1\na 2\n"));
        assert!(!looks_folded("{\"results\": []}"));
    }

    #[test]
    fn bad_folded_lines_are_named() {
        let e = parse_folded("a;b 1\na;b x\n", "f").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        let e = parse_folded("a;b 1 2\n", "f").unwrap_err();
        assert!(e.to_string().contains("differential"), "{e}");
        assert!(parse_folded("\n\n", "f").is_err());
    }

    #[test]
    fn perf_script_text_folds_with_its_period() {
        let text = "shares 4242 [001] 10.000100:    1003009 cpu-clock:u: \n\
            \t    55d0a0001234 alpha+0x14 (/tmp/shares)\n\
            \t    55d0a0001300 work+0x30 (/tmp/shares)\n\
            \t    55d0a0001400 main+0x20 (/tmp/shares)\n\
            \n\
            shares 4242 [001] 10.001103:    1003009 cpu-clock:u: \n\
            \t    55d0a0001234 beta+0x14 (/tmp/shares)\n\
            \t    55d0a0001300 work+0x30 (/tmp/shares)\n\
            \t    55d0a0001400 main+0x20 (/tmp/shares)\n\
            \n";
        assert!(looks_perf_script(text));
        assert!(!looks_folded(text));
        let p = parse_perf_script(text, "perf.txt").unwrap();
        assert_eq!(p.event, "cpu-clock");
        assert_eq!(p.period_ns, 1_003_009);
        assert_eq!(p.samples, 2);
        let names: Vec<&str> = p.frames.iter().map(|f| f.function.as_str()).collect();
        assert!(
            names.contains(&"alpha") && names.contains(&"main"),
            "{names:?}"
        );
    }
}
