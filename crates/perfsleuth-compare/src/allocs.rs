//! Where an allocation change sits, from both sides' allocation profiles
//! (`--profile=alloc`): each function's estimated bytes (or allocations)
//! asked for per run, the shift of its median between the sides with a
//! bootstrap interval from the runs, ranked by the share of the exact
//! change it carries: "92% of +1.2 MiB allocated is in `intern` (prog)".

use perfsleuth_model::AllocProfile;
use perfsleuth_stats::{RESAMPLES, SEED, bootstrap_median_shift};
use std::collections::BTreeMap;

/// What an allocation row counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocWhat {
    /// Bytes asked for (`alloc_bytes`).
    Bytes,
    /// Allocations (`alloc_count`).
    Count,
}

/// The functions tested, as for time: those that asked for the most on the
/// two sides together, each at a Bonferroni-corrected level.
const TESTED: usize = 10;

/// Functions named in the sentence.
const NAMED: usize = 3;

/// "92% of +1.2 MiB allocated a run is in `intern` (prog): +1.1 MiB a run
/// [+1.0 MiB, +1.2 MiB]; in the noise: `make_row`": the functions whose
/// sampled allocations moved beyond the noise of the runs, as shares of
/// the exact change of the row's median (`shift`, per run); `None` where a
/// side has fewer than 3 profiled runs.
pub fn alloc_attribution(
    baseline: &[&AllocProfile],
    candidate: &[&AllocProfile],
    what: AllocWhat,
    shift: f64,
    confidence: f64,
) -> Option<String> {
    let per_run = |ps: &[&AllocProfile]| -> (usize, BTreeMap<(String, String), Vec<f64>>) {
        let runs: usize = ps.iter().map(|p| p.iterations.len()).sum();
        let mut out: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
        let mut offset = 0;
        for p in ps {
            for f in p.functions() {
                let v = out
                    .entry((f.frame.function.clone(), f.frame.module.clone()))
                    .or_insert_with(|| vec![0.0; runs]);
                let values = match what {
                    AllocWhat::Bytes => &f.self_bytes,
                    AllocWhat::Count => &f.self_count,
                };
                for (i, x) in values.iter().enumerate() {
                    v[offset + i] = *x;
                }
            }
            offset += p.iterations.len();
        }
        (runs, out)
    };
    let (nb, base) = per_run(baseline);
    let (nc, cand) = per_run(candidate);
    if nb < crate::stacks::MIN_PROFILED_RUNS || nc < crate::stacks::MIN_PROFILED_RUNS {
        return None;
    }
    if shift == 0.0 || !shift.is_finite() {
        return None;
    }
    let mut keys: Vec<&(String, String)> = base.keys().chain(cand.keys()).collect();
    keys.sort();
    keys.dedup();
    let size = |k: &(String, String)| -> f64 {
        let m = |v: Option<&Vec<f64>>| v.map_or(0.0, |v| v.iter().sum::<f64>());
        m(base.get(k)) / nb as f64 + m(cand.get(k)) / nc as f64
    };
    keys.sort_by(|a, b| size(b).total_cmp(&size(a)).then(a.cmp(b)));
    keys.truncate(TESTED);
    let level = 1.0 - (1.0 - confidence) / keys.len().max(1) as f64;
    let (zb, zc) = (vec![0.0; nb], vec![0.0; nc]);
    let mut moves = Vec::new();
    for (n, key) in keys.iter().enumerate() {
        let seed = SEED ^ (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let b = base.get(*key).unwrap_or(&zb);
        let c = cand.get(*key).unwrap_or(&zc);
        if let Some(m) = bootstrap_median_shift(b, c, level, RESAMPLES / 2, seed) {
            moves.push((*key, m));
        }
    }
    moves.sort_by(|a, b| {
        b.1.shift
            .abs()
            .total_cmp(&a.1.shift.abs())
            .then(a.0.cmp(b.0))
    });
    let amount = |x: f64| -> String {
        let sign = if x < 0.0 { "−" } else { "+" };
        match what {
            AllocWhat::Bytes => format!(
                "{sign}{}",
                perfsleuth_model::quantity::format_bytes(x.abs())
            ),
            AllocWhat::Count => format!("{sign}{}", perfsleuth_model::quantity::format_si(x.abs())),
        }
    };
    let noun = match what {
        AllocWhat::Bytes => "allocated",
        AllocWhat::Count => "allocations",
    };
    let mut parts = Vec::new();
    for (key, m) in moves.iter().filter(|(_, m)| !m.in_the_noise()).take(NAMED) {
        parts.push(format!(
            "{:.0}% in `{}` ({}): {} a run [{}, {}]",
            100.0 * m.shift / shift,
            key.0,
            key.1,
            amount(m.shift),
            amount(m.ci.lo),
            amount(m.ci.hi)
        ));
    }
    let noise: Vec<String> = moves
        .iter()
        .filter(|(_, m)| m.in_the_noise())
        .take(NAMED)
        .map(|(k, _)| format!("`{}`", k.0))
        .collect();
    let total = format!("{} {noun} a run", amount(shift));
    let mut text = match parts.split_first() {
        Some((first, rest)) => {
            std::iter::once(first.replacen(" in ", &format!(" of {total} is in "), 1))
                .chain(rest.iter().cloned())
                .collect::<Vec<_>>()
                .join("; ")
        }
        None => format!(
            "no function's sampled allocations moved beyond the noise of the runs ({total})"
        ),
    };
    if !noise.is_empty() {
        text.push_str(&format!("; in the noise: {}", noise.join(", ")));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfsleuth_model::{AllocStack, ProfileFrame};

    fn profile(runs: usize, intern: f64, row: f64) -> AllocProfile {
        let f = |n: &str| ProfileFrame {
            function: n.into(),
            module: "prog".into(),
            inlined: false,
        };
        let wobble = |x: f64| {
            (0..runs)
                .map(|i| x * (1.0 + 0.01 * (i % 3) as f64))
                .collect::<Vec<_>>()
        };
        AllocProfile {
            sample_bytes: 524_288,
            iterations: (0..runs as u32).collect(),
            allocations: vec![1; runs],
            bytes: vec![1; runs],
            frees: vec![1; runs],
            peak_live: vec![1; runs],
            dropped: 0,
            frames: vec![f("main"), f("intern"), f("make_row")],
            stacks: vec![
                AllocStack {
                    frames: vec![0, 1],
                    samples: vec![10; runs],
                    count: wobble(intern / 100.0),
                    bytes: wobble(intern),
                    at_peak: vec![0.0; runs],
                },
                AllocStack {
                    frames: vec![0, 2],
                    samples: vec![10; runs],
                    count: wobble(row / 100.0),
                    bytes: wobble(row),
                    at_peak: vec![0.0; runs],
                },
            ],
        }
    }

    #[test]
    fn the_function_that_allocates_more_carries_the_change() {
        let (b, c) = (profile(10, 8e6, 4e6), profile(10, 9.2e6, 4e6));
        let text = alloc_attribution(&[&b], &[&c], AllocWhat::Bytes, 1.2e6, 0.95).unwrap();
        assert!(
            text.starts_with(
                "101% of +1.1 MiB allocated a run is in `intern` (prog): +1.2 MiB a run ["
            ),
            "{text}"
        );
        assert!(text.ends_with("in the noise: `main`, `make_row`"), "{text}");
        assert_eq!(
            alloc_attribution(&[], &[&c], AllocWhat::Bytes, 1.2e6, 0.95),
            None
        );
    }
}
