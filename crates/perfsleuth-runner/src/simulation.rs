//! `run --mode simulation`: every iteration runs under callgrind with a
//! fixed cache model; the counts replace the clock. This module wraps the
//! commands, collects each iteration's output and checks determinism.

use crate::error::RunError;
use crate::scratch::ScratchDir;
use perfsleuth_measure::callgrind::{self, SimulationConfig};
use perfsleuth_model::{Benchmark, Profile, Sample};
use std::path::{Path, PathBuf};

/// Functions kept per benchmark, by inclusive Ir.
pub const PROFILE_FUNCTIONS: usize = 300;
/// Timed runs by default: one measurement and one check that it repeats.
pub const DEFAULT_RUNS: u32 = 2;

/// Valgrind and the private directory the outputs go to.
#[derive(Debug)]
pub struct Simulation {
    valgrind: PathBuf,
    collect: Option<String>,
    scratch: ScratchDir,
}

impl Simulation {
    /// Finds valgrind (an error when it is missing).
    pub fn new(collect: Option<String>) -> Result<Simulation, RunError> {
        if collect.as_deref().is_some_and(|c| c.trim().is_empty()) {
            return Err(RunError::EmptyCollect);
        }
        let valgrind = callgrind::find_valgrind().map_err(|_| RunError::NoValgrind)?;
        Ok(Simulation {
            valgrind,
            collect,
            scratch: ScratchDir::new("simulation")?,
        })
    }

    /// The valgrind command line for benchmark `index`, and its output directory.
    pub fn wrap(&self, index: usize, argv: &[String]) -> Result<(Vec<String>, PathBuf), RunError> {
        let dir = self.scratch.path().join(format!("bench-{index}"));
        std::fs::create_dir_all(&dir).map_err(|source| RunError::Scratch {
            what: "cannot create",
            path: dir.clone(),
            source,
        })?;
        let cfg = SimulationConfig {
            out_dir: dir.clone(),
            collect: self.collect.clone(),
        };
        Ok((callgrind::valgrind_argv(&self.valgrind, argv, &cfg), dir))
    }

    /// Reads (and removes) what one iteration wrote into `dir`: the counters
    /// go into the sample, the profile is returned.
    pub fn collect(
        &self,
        dir: &Path,
        command: &str,
        sample: &mut Sample,
    ) -> Result<Profile, RunError> {
        let profile = callgrind::collect_outputs(dir).map_err(|source| RunError::Simulation {
            command: command.to_string(),
            source,
        })?;
        if let Some(function) = &self.collect
            && !callgrind::collect_function_seen(&profile, function)
        {
            return Err(RunError::NothingCollected {
                function: function.clone(),
                command: command.to_string(),
            });
        }
        sample.counters.extend(callgrind::counters(&profile));
        Ok(profile.top(PROFILE_FUNCTIONS))
    }
}

/// One warning per benchmark whose runs did not count the same instructions:
/// under simulation that means the program itself is not deterministic.
pub fn nondeterminism(benchmarks: &[Benchmark]) -> Vec<String> {
    benchmarks
        .iter()
        .filter_map(|b| {
            let ir: Vec<f64> = b
                .samples
                .iter()
                .filter_map(|s| s.counters.get("Ir").copied())
                .collect();
            let min = ir.iter().copied().fold(f64::INFINITY, f64::min);
            let max = ir.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (ir.len() > 1 && max > min).then(|| {
                format!(
                    "`{}` is NOT deterministic: two runs of the same binary counted different instruction totals (Ir {min:.0} … {max:.0}, {:+.3} %). \
                     Its inputs, timing, addresses or threads vary between runs; fix that before trusting small differences",
                    b.name,
                    100.0 * (max / min - 1.0)
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench(irs: &[f64]) -> Benchmark {
        Benchmark {
            name: "b".into(),
            samples: irs
                .iter()
                .map(|ir| Sample {
                    counters: [("Ir".to_string(), *ir)].into(),
                    ..Sample::default()
                })
                .collect(),
            ..Benchmark::default()
        }
    }

    #[test]
    fn differing_instruction_counts_are_reported_loudly() {
        assert!(nondeterminism(&[bench(&[100.0, 100.0]), bench(&[5.0])]).is_empty());
        let w = nondeterminism(&[bench(&[1000.0, 1001.0])]);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("NOT deterministic"), "{}", w[0]);
        assert!(w[0].contains("+0.100 %"), "{}", w[0]);
    }
}
