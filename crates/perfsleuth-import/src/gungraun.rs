//! The text gungraun (iai-callgrind until 0.16) prints under `cargo bench`:
//! per benchmark a header line (`module::group::function id:(args)`) and
//! indented metric lines `Name:  NEW|OLD  (change)`. The NEW column is this
//! run's count; the OLD one is gungraun's own previous run, which perfsleuth
//! keeps itself, so it is not imported. One simulation-mode sample per
//! benchmark: Instructions as `Ir`, Estimated Cycles as `est_cycles` (the
//! same L1 + 5·LL + 35·RAM estimate simulation mode makes), the hit counts
//! as counters of their own.

use crate::{Format, ImportError, Imported};
use perfsleuth_model::{Benchmark, Sample};

/// A metric line's counter key.
fn key(name: &str) -> Option<&'static str> {
    Some(match name {
        "Instructions" => "Ir",
        "Estimated Cycles" => "est_cycles",
        "L1 Hits" => "l1_hits",
        "LL Hits" | "L2 Hits" => "ll_hits",
        "RAM Hits" => "ram_hits",
        "Total read+write" => "total_rw",
        _ => return None,
    })
}

/// The line without ANSI colour sequences (a terminal run colours it).
fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `Name:   1734|N/A   (...)` as (name, this run's count).
fn metric(line: &str) -> Option<(&str, &str)> {
    if !line.starts_with(' ') {
        return None;
    }
    let (name, rest) = line.trim().split_once(':')?;
    let new = rest.trim().split('|').next()?.trim();
    rest.contains('|').then_some((name.trim(), new))
}

/// Whether some line reads as a gungraun metric line.
pub(crate) fn looks_like(text: &str) -> bool {
    text.lines().any(|l| {
        metric(&plain(l)).is_some_and(|(n, v)| n == "Instructions" && v.parse::<u64>().is_ok())
    })
}

pub(crate) fn parse(text: &str) -> Result<Imported, ImportError> {
    let mut benchmarks: Vec<Benchmark> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = plain(raw);
        if line.trim().is_empty() {
            continue;
        }
        if let Some((name, value)) = metric(&line) {
            let Some(bench) = benchmarks.last_mut() else {
                continue;
            };
            let Some(key) = key(name) else {
                continue;
            };
            let v: f64 = value.replace(',', "").parse().map_err(|_| {
                ImportError::new(
                    format!("line {}", n + 1),
                    format!("`{value}` is not a count"),
                    "give gungraun's output as cargo bench printed it",
                )
            })?;
            if !v.is_finite() || v < 0.0 {
                return Err(ImportError::new(
                    format!("line {}", n + 1),
                    format!("{v} is not a count"),
                    "give gungraun's output as cargo bench printed it",
                ));
            }
            if let Some(s) = bench.samples.first_mut() {
                s.counters.insert(key.to_string(), v);
            }
            continue;
        }
        // A header: not indented, a Rust path, not the closing summary.
        let t = line.trim_end();
        if !t.starts_with(' ') && t.contains("::") && !t.contains(" result:") {
            benchmarks.push(Benchmark {
                name: t.to_string(),
                command: format!("cargo bench -- {t}"),
                samples: vec![Sample {
                    exit_code: Some(0),
                    ..Sample::default()
                }],
                ..Benchmark::default()
            });
        }
    }
    // A header without metrics was a log line that happened to hold `::`.
    benchmarks.retain(|b| b.samples[0].counters.contains_key("Ir"));
    Ok(Imported::of(Format::Gungraun, benchmarks))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = concat!(
        "fib::group::bench_fibonacci short:(10)\n",
        "  Instructions:                1734|N/A             (*********)\n",
        "  L1 Hits:                     2358|N/A             (*********)\n",
        "  LL Hits:                        0|N/A             (*********)\n",
        "  RAM Hits:                       4|N/A             (*********)\n",
        "  Total read+write:            2362|N/A             (*********)\n",
        "  Estimated Cycles:            2498|N/A             (*********)\n",
        "\n\u{1b}[1mGungraun result: \u{1b}[32mOk\u{1b}[0m. 1 without regressions\n",
    );

    #[test]
    fn counts_of_this_run_become_one_sample() {
        assert!(looks_like(OUT));
        let i = crate::parse(Format::Gungraun, OUT).unwrap();
        assert_eq!(i.mode(), perfsleuth_model::Mode::Simulation);
        assert_eq!(i.benchmarks.len(), 1);
        let b = &i.benchmarks[0];
        assert_eq!(b.name, "fib::group::bench_fibonacci short:(10)");
        let c = &b.samples[0].counters;
        assert_eq!(
            (c["Ir"], c["est_cycles"], c["ram_hits"]),
            (1734.0, 2498.0, 4.0)
        );
    }

    #[test]
    fn colours_are_ignored_and_bad_counts_refused() {
        let coloured = "\u{1b}[1;32ma::b\u{1b}[0m\n  Instructions:   \u{1b}[1m10\u{1b}[0m|N/A\n";
        let i = crate::parse(Format::Gungraun, coloured).unwrap();
        assert_eq!(i.benchmarks[0].name, "a::b");
        assert_eq!(i.benchmarks[0].samples[0].counters["Ir"], 10.0);
        let e = crate::parse(Format::Gungraun, "a::b\n  Instructions:   x1|N/A\n").unwrap_err();
        assert_eq!(e.at, "line 2");
    }
}
