//! The analysis of a stored (or just measured) `perfsleuth scale` run, from
//! the sample counters the sweep wrote (`perfsleuth_model::scale_keys`).

use crate::{Analysis, CpuSplit, Machine, Observation, RunObservation, analyze};
use perfsleuth_model::Run;
use perfsleuth_model::scale_keys::{CPU_BUSY_PREFIX, CPU_KEYS, CPU_TICKS, THROUGHPUT, WORK};

/// Rebuilds the analysis of a scale run; `None` when the run is not a scale
/// run or holds no throughput.
pub fn analysis_of(run: &Run) -> Option<Analysis> {
    let param = run.scale_options()?.param;
    let observations: Vec<Observation> = run
        .benchmarks
        .iter()
        .filter_map(|b| {
            let n: f64 = b.parameters.get(&param)?.parse().ok()?;
            let runs = b
                .samples
                .iter()
                .filter_map(|s| {
                    let c = &s.counters;
                    let throughput = *c.get(THROUGHPUT)?;
                    let cpu = match CPU_KEYS.map(|k| c.get(k).copied()) {
                        [
                            Some(user),
                            Some(system),
                            Some(idle),
                            Some(iowait),
                            Some(steal),
                        ] => Some(CpuSplit {
                            user,
                            system,
                            idle,
                            iowait,
                            steal,
                        }),
                        _ => None,
                    };
                    let per_cpu: Vec<(usize, f64)> = c
                        .iter()
                        .filter_map(|(k, v)| {
                            Some((k.strip_prefix(CPU_BUSY_PREFIX)?.parse().ok()?, *v))
                        })
                        .collect();
                    // Indexed by CPU number: a CPU without elapsed ticks in a
                    // run has no entry, and must not shift the others.
                    let width = per_cpu.iter().map(|(cpu, _)| cpu + 1).max().unwrap_or(0);
                    let mut by_cpu = vec![f64::NAN; width.min(4096)];
                    for (cpu, v) in per_cpu {
                        if let Some(slot) = by_cpu.get_mut(cpu) {
                            *slot = v;
                        }
                    }
                    Some(RunObservation {
                        throughput,
                        wall_s: perfsleuth_model::Metric::Wall.of(s) / 1e9,
                        work: c.get(WORK).copied().unwrap_or(0.0),
                        cpu,
                        per_cpu_busy: by_cpu,
                        cpu_ticks: c.get(CPU_TICKS).copied(),
                        cpu_time_s: Some((s.user_ns + s.sys_ns) as f64 / 1e9),
                        voluntary_cs: Some(s.voluntary_cs as f64),
                        futex_calls: c.get("futex_calls").copied(),
                        cpu_migrations: c.get("cpu_migrations").copied(),
                    })
                })
                .collect::<Vec<_>>();
            (!runs.is_empty()).then_some(Observation {
                n,
                runs,
                locks: b.locks.as_deref().cloned(),
            })
        })
        .collect();
    if observations.is_empty() {
        return None;
    }
    let cap = perfsleuth_env::cpu_capacity(&run.environment);
    let machine = Machine {
        logical: cap.logical,
        physical: cap.physical,
        usable: cap.usable,
        limited_by: cap.limited_by,
    };
    Some(analyze(&param, &observations, &machine))
}
