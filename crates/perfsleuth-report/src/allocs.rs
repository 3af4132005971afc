//! A benchmark's allocation profile (`run --profile=alloc`): the headline
//! with a run's exact counts and the functions that asked for the most
//! bytes, and the line saying how the stacks were sampled.

use perfsleuth_model::AllocProfile;
use perfsleuth_model::quantity::{format_bytes, format_count, format_share};

/// Functions named in the headline.
const NAMED: usize = 3;

/// The median of `v` (0 for none).
fn median(v: &[u64]) -> f64 {
    let v: Vec<f64> = v.iter().map(|&x| x as f64).collect();
    perfsleuth_stats::median(&v).unwrap_or(0.0)
}

/// "200102 allocations a run, 36.6 MiB asked for (exact); peak live 1.2
/// MiB; by stack: `intern` 62%, `make_row` 21%, `main` 17% of the bytes
/// (sampled)": a run's counts (medians over the runs, which a
/// deterministic program makes all alike) and who asked.
pub fn allocs_headline(p: &AllocProfile) -> String {
    let mut t = format!(
        "{} allocations a run, {} asked for (exact); peak live {}",
        format_count(median(&p.allocations)),
        format_bytes(median(&p.bytes)),
        format_bytes(median(&p.peak_live))
    );
    let functions = p.functions();
    let total: f64 = functions.iter().map(|f| f.self_total()).sum();
    if total > 0.0 {
        let named: Vec<String> = functions
            .iter()
            .take(NAMED)
            .filter(|f| f.self_total() > 0.0)
            .map(|f| {
                format!(
                    "`{}` {}",
                    f.frame.function,
                    format_share(f.self_total() / total, 0)
                )
            })
            .collect();
        t.push_str(&format!(
            "; by stack: {} of the bytes (sampled)",
            named.join(", ")
        ));
    }
    t
}

/// The sampled stacks as folded lines (`outer;…;inner KiB`), their bytes a
/// run in KiB: what the report's allocation flame graph draws.
pub fn alloc_folded(p: &AllocProfile) -> String {
    let runs = p.iterations.len().max(1) as f64;
    let mut by: std::collections::BTreeMap<String, f64> = Default::default();
    for s in &p.stacks {
        let names: Vec<&str> = s
            .frames
            .iter()
            .filter_map(|&f| p.frames.get(f as usize))
            .map(|f| f.function.as_str())
            .collect();
        let key = names
            .iter()
            .map(|n| n.replace([';', '\n', '\r'], " "))
            .collect::<Vec<_>>()
            .join(";");
        *by.entry(key).or_default() += s.bytes.iter().sum::<f64>() / runs;
    }
    let mut out = String::new();
    for (stack, bytes) in by {
        let kib = (bytes / 1024.0).round() as u64;
        if kib > 0 && !stack.is_empty() {
            out.push_str(&format!("{stack} {kib}\n"));
        }
    }
    out
}

/// "41 stacks from 3 runs, an allocation sampled every 512 KiB allocated
/// on average, 0 dropped".
pub fn allocs_events(p: &AllocProfile) -> String {
    let samples: u64 = p
        .stacks
        .iter()
        .flat_map(|s| &s.samples)
        .map(|&n| u64::from(n))
        .sum();
    format!(
        "{samples} sampled allocations in {} stacks from {} runs, one every {} allocated on average; {} dropped",
        p.stacks.len(),
        p.iterations.len(),
        format_bytes(p.sample_bytes as f64),
        p.dropped
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfsleuth_model::{AllocStack, ProfileFrame};

    #[test]
    fn the_headline_says_the_exact_counts_and_who_asked() {
        let f = |n: &str| ProfileFrame {
            function: n.into(),
            module: "prog".into(),
            inlined: false,
        };
        let p = AllocProfile {
            sample_bytes: 524_288,
            iterations: vec![0, 1, 2],
            allocations: vec![200_102; 3],
            bytes: vec![38_338_384; 3],
            frees: vec![200_101; 3],
            peak_live: vec![1 << 20, 1 << 20, 2 << 20],
            dropped: 0,
            frames: vec![f("main"), f("intern"), f("make_row")],
            stacks: vec![
                AllocStack {
                    frames: vec![0, 1],
                    samples: vec![50, 52, 48],
                    count: vec![1e5; 3],
                    bytes: vec![3e7; 3],
                    at_peak: vec![0.0; 3],
                },
                AllocStack {
                    frames: vec![0, 2],
                    samples: vec![10, 9, 11],
                    count: vec![1e5; 3],
                    bytes: vec![1e7; 3],
                    at_peak: vec![0.0; 3],
                },
            ],
        };
        assert_eq!(
            allocs_headline(&p),
            "200102 allocations a run, 36.6 MiB asked for (exact); peak live 1.0 MiB; by stack: `intern` 75%, `make_row` 25% of the bytes (sampled)"
        );
        assert_eq!(
            allocs_events(&p),
            "180 sampled allocations in 2 stacks from 3 runs, one every 512.0 KiB allocated on average; 0 dropped"
        );
    }
}
