//! What a session instruments on the spawner for `run`, `ab`, `explain` and
//! `scale`: the perf_event counters, `--locks`' tracer and `--profile`'s
//! sampler started before anything is stored, their errors in the CLI's
//! terms, and the lock reports and profiles kept with the run.

use crate::error::Fail;
use crate::options::{ProfileChoice, When};
use crate::sink::StoreSink;
use perfsleuth_measure::Spawner;
use perfsleuth_model::{AllocProfile, Environment, ImpactClass, LockReport, Run, StackProfile};
use perfsleuth_runner::Counters;
use perfsleuth_runner::locks::{Following, LockError, Tracer};
use perfsleuth_runner::profile::{Sampler, SamplerConfig, SamplerError};

/// The counters, the lock tracer and the sampler of one session.
pub struct Instruments {
    tracer: Option<Tracer>,
    reports: Vec<Option<LockReport>>,
    sampler: Option<Sampler>,
    profile: When,
    profiles: Vec<Option<StackProfile>>,
    allocs: Vec<Option<AllocProfile>>,
    /// What enabling them said (counters unavailable, `--locks=auto` off, …).
    pub notes: Vec<String>,
}

impl Instruments {
    /// Enables `counters` on the spawner (kernel mode too with `kernel`, the
    /// futex and sched_switch tracepoints with `tracepoints`), then starts
    /// `--locks`' tracer and `--profile`'s sampler: before anything is
    /// stored, so a refusal leaves no run behind. What the sampler does is
    /// recorded in `env` (`measure.profile`).
    pub fn start(
        spawner: &mut Spawner,
        counters: Counters,
        kernel: bool,
        tracepoints: bool,
        locks: When,
        profile: ProfileChoice,
        env: &mut Environment,
    ) -> Result<Instruments, Fail> {
        let mut notes =
            perfsleuth_runner::counters::enable(spawner, counters, kernel, tracepoints, env);
        let (tracer, note) = start(locks, spawner.pid())?;
        notes.extend(note);
        let (sampler, note) = if profile.time {
            start_sampler(profile, spawner.pid())?
        } else {
            (None, None)
        };
        match &sampler {
            Some(s) => {
                let c = s.config();
                let off_cpu = match s.off_cpu_refused() {
                    _ if c.off_cpu => "; off-CPU time from context switches".to_string(),
                    Some(why) => {
                        notes.push(format!(
                            "profile: off-CPU time is not recorded: {why}; the profile is of the time on the CPU only"
                        ));
                        format!("; off-CPU time not recorded: {why}")
                    }
                    None => "; on-CPU only (--profile=cpu)".to_string(),
                };
                env.set(
                    "measure.profile",
                    format!(
                        "cpu-clock at {} Hz, {} mode{off_cpu}",
                        c.rate_hz,
                        if c.kernel { "user and kernel" } else { "user" }
                    ),
                    ImpactClass::Context,
                );
            }
            None => env.set(
                "measure.profile",
                note.as_deref().unwrap_or("off"),
                ImpactClass::Context,
            ),
        }
        notes.extend(note);
        Ok(Instruments {
            tracer,
            reports: Vec::new(),
            sampler,
            profile: profile.when,
            profiles: Vec::new(),
            allocs: Vec::new(),
            notes,
        })
    }

    /// Detaches the tracer and stops the sampler (if any), reading which
    /// runs were each benchmark's (`benches`: their spawner command ids and
    /// names, in the run's order) from `following`; with `alloc` (the
    /// recorder, the spawner's pid, and each benchmark's record directory),
    /// collects each benchmark's allocation records.
    pub fn stop<'n>(
        &mut self,
        following: &Following<'_, Spawner>,
        benches: impl IntoIterator<Item = (perfsleuth_measure::CommandId, &'n str)>,
        alloc: Option<(
            &perfsleuth_measure::alloc::Recorder,
            u32,
            Vec<Option<std::path::PathBuf>>,
        )>,
    ) {
        let (ids, names): (Vec<_>, Vec<String>) = benches
            .into_iter()
            .map(|(id, name)| (id, name.to_string()))
            .unzip();
        let runs: Vec<Vec<u32>> = ids.iter().map(|&id| following.runs_of(id)).collect();
        if let Some((recorder, spawner, dirs)) = alloc {
            self.allocs = ids
                .iter()
                .zip(&names)
                .zip(dirs)
                .map(|((&id, name), dir)| {
                    dir.ok_or_else(|| "its command had no recorder".to_string())
                        .and_then(|dir| {
                            recorder
                                .collect(&dir, spawner, &following.runs_in_order(id))
                                .map_err(|e| e.to_string())
                        })
                        .map_err(|why| {
                            self.notes.push(format!(
                                "`{name}` not allocation-profiled: {why}; the measurements are kept"
                            ))
                        })
                        .ok()
                })
                .collect();
        }
        self.reports = finish(
            self.tracer.take(),
            &runs,
            following.forked(),
            &mut self.notes,
        );
        if let Some(sampler) = self.sampler.take() {
            let timed: Vec<Vec<(u32, u32)>> =
                ids.iter().map(|&id| following.timed_runs_of(id)).collect();
            let (profiles, notes) = perfsleuth_runner::profile::finish(
                sampler,
                self.profile,
                &names,
                &timed,
                following.forked(),
            );
            self.profiles = profiles;
            self.notes.extend(notes);
        }
    }

    /// Puts the lock reports and profiles on `run`'s benchmarks and into the store.
    pub fn attach(&mut self, run: &mut Run, sink: &mut StoreSink<'_>) -> Result<(), Fail> {
        attach(run, std::mem::take(&mut self.reports), sink)?;
        for (i, profile) in std::mem::take(&mut self.profiles).into_iter().enumerate() {
            let (Some(mut profile), Some(bench)) = (profile, run.benchmarks.get_mut(i)) else {
                continue;
            };
            // A run cut short (Ctrl-C) was sampled but kept no sample.
            let kept: Vec<u32> = bench.samples.iter().map(|s| s.iteration).collect();
            profile.keep_iterations(&kept);
            if profile.iterations.is_empty() {
                if !kept.is_empty() {
                    self.notes.push(format!(
                        "`{}` not profiled: none of the runs it sampled is among the runs kept (the measuring was cut short); the measurements are kept",
                        bench.name
                    ));
                }
                continue;
            }
            sink.set_stacks(i, &profile)?;
            bench.stacks = Some(Box::new(profile));
        }
        for (i, allocs) in std::mem::take(&mut self.allocs).into_iter().enumerate() {
            let (Some(mut allocs), Some(bench)) = (allocs, run.benchmarks.get_mut(i)) else {
                continue;
            };
            let kept: Vec<u32> = bench.samples.iter().map(|s| s.iteration).collect();
            allocs.keep_iterations(&kept);
            if allocs.iterations.is_empty() {
                continue;
            }
            // The counts are metrics of the runs: counters of their samples.
            for (k, &iteration) in allocs.iterations.iter().enumerate() {
                if let (Some(counters), Some(s)) = (
                    allocs.counters_of(k),
                    bench.samples.iter_mut().find(|s| s.iteration == iteration),
                ) {
                    s.counters
                        .extend(counters.iter().map(|&(key, v)| (key.to_string(), v)));
                }
            }
            let counters: Vec<(u32, &std::collections::BTreeMap<String, f64>)> = bench
                .samples
                .iter()
                .filter(|s| allocs.iterations.contains(&s.iteration))
                .map(|s| (s.iteration, &s.counters))
                .collect();
            sink.set_allocs(i, &allocs, &counters)?;
            bench.allocs = Some(Box::new(allocs));
        }
        Ok(())
    }
}

/// Starts the sampler as `choice` asks; with `auto` where it cannot, the note why.
fn start_sampler(
    choice: ProfileChoice,
    spawner: u32,
) -> Result<(Option<Sampler>, Option<String>), Fail> {
    perfsleuth_runner::profile::start(
        choice.when,
        spawner,
        SamplerConfig {
            off_cpu: choice.off_cpu,
            ..SamplerConfig::default_for_this_process()
        },
    )
    .map_err(|e| {
        let hint = match e {
            SamplerError::Open(_) if perfsleuth_runner::profile::running_as_root() => {
                "allow perf_event_open in the container's seccomp profile (or give it CAP_PERFMON); drop --profile, or use --profile=auto"
            }
            SamplerError::Open(_) => {
                "profiling needs perf_event_paranoid ≤ 2 (sysctl kernel.perf_event_paranoid=2) or CAP_PERFMON; drop --profile, or use --profile=auto"
            }
            SamplerError::Map(_) => {
                "raise perf_event_mlock_kb or RLIMIT_MEMLOCK (ulimit -l), or run as root; drop --profile, or use --profile=auto"
            }
            SamplerError::Unsupported(_) => "drop --profile; profiles are sampled on x86-64 only",
        };
        Fail::usage(format!("cannot profile: {e}"), hint)
    })
}

/// Starts tracing as `choice` asks; with `auto` where it cannot, the note why.
fn start(choice: When, spawner: u32) -> Result<(Option<Tracer>, Option<String>), Fail> {
    if choice != When::Off {
        // Loading takes ~0.1 s: Ctrl-C meanwhile must end as an interrupted
        // run (exit 130), not kill perfsleuth with the programs half set up.
        crate::term::catch_interrupts()?;
    }
    perfsleuth_runner::locks::start(choice, spawner).map_err(|e| {
        let hint = match e {
            LockError::NotPermitted => {
                "run perfsleuth as root (or with CAP_BPF and CAP_PERFMON), or drop --locks"
            }
            LockError::Unsupported(_) => {
                "drop --locks; the futex counts (--counters all) still show that threads block"
            }
            LockError::NoBtf(_) => {
                "lock tracing needs a kernel built with BTF (CONFIG_DEBUG_INFO_BTF; Linux 5.18 or later); drop --locks"
            }
            LockError::Load(_) | LockError::Read(_) => {
                "lock tracing needs raw tracepoints, BPF ring buffers and BTF (Linux 5.18 or later); drop --locks, or use --locks=auto"
            }
        };
        Fail::usage(format!("cannot trace locks: {e}"), hint)
    })
}

/// Detaches the tracer (if any) and reports each benchmark's runs.
fn finish(
    tracer: Option<Tracer>,
    runs: &[Vec<u32>],
    forked: usize,
    notes: &mut Vec<String>,
) -> Vec<Option<LockReport>> {
    let Some(tracer) = tracer else {
        return Vec::new();
    };
    let (reports, note) = perfsleuth_runner::locks::finish(tracer, runs, forked);
    notes.extend(note);
    reports
}

/// Puts the reports on the run's benchmarks and into the store.
fn attach(
    run: &mut Run,
    reports: Vec<Option<LockReport>>,
    sink: &mut StoreSink<'_>,
) -> Result<(), Fail> {
    for (i, report) in reports.into_iter().enumerate() {
        let (Some(report), Some(bench)) = (report, run.benchmarks.get_mut(i)) else {
            continue;
        };
        sink.set_locks(i, &report)?;
        bench.locks = Some(Box::new(report));
    }
    Ok(())
}
