//! Wall-time profiles around a measurement (`run --profile`): the sampler
//! started on the spawner, and one [`StackProfile`] per benchmark at the end
//! from its timed runs (docs/PROFILES.md).

pub use crate::When;
pub use perfsleuth_measure::sampler::{
    Collected, DEFAULT_RATE_HZ, Sampler, SamplerConfig, SamplerError, running_as_root,
};
use perfsleuth_model::StackProfile;

/// Fewer samples than this per timed run (median) make `auto` drop the
/// profile: a share would then move by a tenth with one sample.
pub const MIN_SAMPLES_PER_RUN: u64 = 10;

/// The file most samples are in without a function name (`file+0x…`),
/// with the share of the samples, when that is at least half of them.
fn unnamed(p: &StackProfile) -> Option<(String, f64)> {
    let mut by: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
    for s in &p.stacks {
        let Some(leaf) = s.frames.last().and_then(|&f| p.frames.get(f as usize)) else {
            continue;
        };
        if leaf
            .function
            .strip_prefix(leaf.module.as_str())
            .is_some_and(|rest| rest.starts_with("+0x"))
        {
            *by.entry(&leaf.module).or_default() +=
                s.counts.iter().map(|&c| u64::from(c)).sum::<u64>();
        }
    }
    let (module, n) = by.into_iter().max_by_key(|(_, n)| *n)?;
    let share = n as f64 / p.samples.max(1) as f64;
    (share >= 0.5).then(|| (module.to_string(), share))
}

/// Starts the sampler on the spawner `root` as `choice` asks: `Ok(None)` for
/// off, or for auto where sampling is impossible (with the note why); `Err`
/// only when asked for explicitly and impossible.
pub fn start(
    choice: When,
    root: u32,
    config: SamplerConfig,
) -> Result<(Option<Sampler>, Option<String>), SamplerError> {
    match choice {
        When::Off => Ok((None, None)),
        When::On => Sampler::start(root, config).map(|s| (Some(s), None)),
        When::Auto => match Sampler::start(root, config) {
            Ok(s) => Ok((Some(s), None)),
            Err(e) => Ok((None, Some(format!("not profiled: {e}")))),
        },
    }
}

/// Stops the sampler and makes each benchmark's profile from its timed runs
/// (`runs[i]`: (kernel run number, iteration) pairs, from
/// [`crate::locks::Following::timed_runs_of`]) when the kernel saw as many
/// runs start as were `forked`; otherwise the runs cannot be matched to
/// benchmarks and a note says so rather than blame the wrong one. With
/// `auto`, a benchmark whose runs gave too few samples gets no profile and
/// a note; with `on` it keeps what there is and the note says it is thin.
pub fn finish(
    sampler: Sampler,
    choice: When,
    names: &[String],
    runs: &[Vec<(u32, u32)>],
    forked: usize,
) -> (Vec<Option<StackProfile>>, Vec<String>) {
    let collected = sampler.finish();
    let mut notes = Vec::new();
    let why = if let Some(failed) = &collected.failed {
        Some(format!("the sampler's reader failed ({failed})"))
    } else if collected.runs_seen as usize != forked {
        Some(format!(
            "the kernel reported {} runs starting and perfsleuth started {forked}, so their samples cannot be matched to benchmarks (a run that failed to start, or records lost)",
            collected.runs_seen
        ))
    } else {
        None
    };
    if let Some(why) = why {
        notes.push(format!("not profiled: {why}; the measurements are kept"));
        return (vec![None; runs.len()], notes);
    }
    if collected.lost > 0 {
        notes.push(format!(
            "profile: the kernel lost {} samples (its buffer was full); shares are of the samples kept",
            collected.lost
        ));
    }
    let profiles = runs
        .iter()
        .zip(names)
        .map(|(r, name)| {
            if r.is_empty() {
                return None;
            }
            let p = collected.report(r);
            let mut totals = p.run_totals();
            totals.sort_unstable();
            let median = totals.get(totals.len() / 2).copied().unwrap_or(0);
            if median < MIN_SAMPLES_PER_RUN {
                let ms = median as f64 * p.period_ns as f64 / 1e6;
                let hz = 1e9 / p.period_ns.max(1) as f64;
                match choice {
                    When::Auto => {
                        notes.push(format!(
                            "`{name}` not profiled: {median} samples per run (~{ms:.0} ms on CPU at {hz:.0} Hz), fewer than {MIN_SAMPLES_PER_RUN}; --profile keeps it anyway"
                        ));
                        return None;
                    }
                    _ => notes.push(format!(
                        "`{name}`: only {median} samples per run (~{ms:.0} ms on CPU); its shares are coarse"
                    )),
                }
            }
            if let Some((module, share)) = unnamed(&p) {
                notes.push(format!(
                    "`{name}`: {:.0}% of the samples are in {module}, which has no symbols (a stripped binary): its functions are named by offset ({module}+0x…); keep its symbol table (strip --strip-debug, or build with -g) to see their names",
                    100.0 * share
                ));
            }
            if p.truncated * 10 > p.samples.max(1) {
                notes.push(format!(
                    "`{name}`: {} of {} samples could not be unwound past the sampled function (code in no file, such as a JIT's, or without unwind information)",
                    p.truncated, p.samples
                ));
            }
            Some(p)
        })
        .collect();
    (profiles, notes)
}
