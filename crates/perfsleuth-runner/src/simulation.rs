//! `run --mode simulation`: every iteration runs under callgrind with a
//! fixed cache model; the counts replace the clock. This module wraps the
//! commands, collects each iteration's output and checks determinism.

use crate::error::RunError;
use crate::scratch::ScratchDir;
use perfsleuth_env::portable::{self, Baseline};
use perfsleuth_measure::callgrind::{self, SimulationConfig};
use perfsleuth_model::{Benchmark, Environment, ImpactClass, Profile, Sample};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Functions kept per benchmark, by inclusive Ir.
pub const PROFILE_FUNCTIONS: usize = 300;
/// Timed runs by default: one measurement and one check that it repeats.
pub const DEFAULT_RUNS: u32 = 2;

/// Whether the counts are made independent of this machine's CPU
/// (`--portable`), see `perfsleuth_env::portable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortableChoice {
    /// Glibc dispatches as this CPU (as valgrind presents it) says.
    Off,
    /// Portable at the default baseline where this machine allows it,
    /// else not, with a note saying why.
    Auto,
    /// Portable at this baseline, or no run at all.
    On(Baseline),
}

/// The portable profile in use, and what verifying it showed.
#[derive(Debug, Clone)]
pub struct Portable {
    /// The `GLIBC_TUNABLES` value and what it was made from.
    pub profile: portable::Profile,
    /// What glibc reported under it.
    pub verified: portable::Verified,
}

/// Valgrind and the private directory the outputs go to.
#[derive(Debug)]
pub struct Simulation {
    valgrind: PathBuf,
    collect: Option<String>,
    scratch: ScratchDir,
    portable: Option<Portable>,
    /// Why the counts are not portable, when they could have been.
    not_portable: Option<String>,
    /// `valgrind --version`: another version may translate, so count, differently.
    version: Result<String, callgrind::SimError>,
    /// The caches simulated for benchmarks without a variant's own
    /// (`run --cache-model`); callgrind's fixed model by default.
    cache: callgrind::CacheModel,
}

impl Simulation {
    /// Finds valgrind (an error when it is missing) and, unless `portable`
    /// is off, builds and verifies the portable profile: refused ones are
    /// an error for [`PortableChoice::On`] and a note for `Auto`.
    pub fn new(collect: Option<String>, portable: PortableChoice) -> Result<Simulation, RunError> {
        if collect.as_deref().is_some_and(|c| c.trim().is_empty()) {
            return Err(RunError::EmptyCollect);
        }
        let valgrind = callgrind::find_valgrind().map_err(|_| RunError::NoValgrind)?;
        let baseline = match portable {
            PortableChoice::Off => None,
            PortableChoice::Auto => Some(portable::DEFAULT_BASELINE),
            PortableChoice::On(b) => Some(b),
        };
        let (portable_profile, not_portable) = match baseline {
            None => (None, None),
            Some(b) => match own_tunables()
                .and_then(|user| prepare_portable(&valgrind, b, user.as_deref()))
            {
                Ok(p) => (Some(p), None),
                Err(refusal) if portable == PortableChoice::Auto => (None, Some(refusal.0)),
                Err(refusal) => return Err(RunError::NotPortable(refusal.0)),
            },
        };
        Ok(Simulation {
            cache: callgrind::CacheModel::DEFAULT,
            version: callgrind::valgrind_version(&valgrind),
            valgrind,
            collect,
            scratch: ScratchDir::new("simulation")?,
            portable: portable_profile,
            not_portable,
        })
    }

    /// Simulates these caches instead of the fixed model (`run --cache-model`).
    pub fn set_cache_model(&mut self, cache: callgrind::CacheModel) {
        self.cache = cache;
    }

    /// The portable profile in use, if any.
    pub fn portable(&self) -> Option<&Portable> {
        self.portable.as_ref()
    }

    /// Under the portable profile, the `GLIBC_TUNABLES` a variant that sets
    /// its own (`user`; `None`: unsets it) must give its child: the profile
    /// with `user` merged in as a run started with it would use, checked
    /// under valgrind the same way. `None` without the profile (the
    /// variant's value applies as it is).
    pub fn portable_tunables_for(&self, user: Option<&str>) -> Result<Option<String>, RunError> {
        let Some(p) = &self.portable else {
            return Ok(None);
        };
        prepare_portable(&self.valgrind, p.profile.baseline, user)
            .map(|q| Some(q.profile.tunables))
            .map_err(|r| RunError::NotPortable(r.0))
    }

    /// What the benchmarked process's environment gets on top of ours.
    pub fn child_env(&self) -> Vec<(String, Option<String>)> {
        self.portable
            .iter()
            .map(|p| {
                (
                    "GLIBC_TUNABLES".to_string(),
                    Some(p.profile.tunables.clone()),
                )
            })
            .collect()
    }

    /// The run's facts about how it counted: `sim.portable`,
    /// `sim.glibc_tunables`, `sim.cache_model` and `sim.valgrind_version`
    /// (identity: counts made differently do not compare).
    pub fn record(&self, env: &mut Environment) {
        match &self.portable {
            Some(p) => {
                env.set(
                    "sim.portable",
                    p.profile.baseline.name(),
                    ImpactClass::Identity,
                );
                env.set(
                    "sim.glibc_tunables",
                    p.profile.tunables.clone(),
                    ImpactClass::Identity,
                );
            }
            None => env.set("sim.portable", "off", ImpactClass::Identity),
        }
        // Another cache model is another counter for the miss counts.
        let model = if self.cache == callgrind::CacheModel::DEFAULT {
            callgrind::CACHE_MODEL.to_string()
        } else {
            self.cache.describe()
        };
        env.set("sim.cache_model", model, ImpactClass::Identity);
        env.set_read(
            "sim.valgrind_version",
            self.version.as_ref().cloned().map_err(ToString::to_string),
            ImpactClass::Identity,
        );
    }

    /// Notes for the run's output: what portable mode verified, or why the
    /// counts are not portable.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        match (&self.portable, &self.not_portable) {
            (Some(p), _) => {
                notes.push(p.verified.summary(&p.profile));
                if self.cache == callgrind::CacheModel::DEFAULT {
                    notes.push(format!(
                        "valgrind's cache model is fixed by perfsleuth's options ({}), not read from this CPU",
                        callgrind::CACHE_MODEL
                    ));
                }
            }
            (None, Some(why)) => notes.push(format!(
                "counts are NOT portable across CPUs: {why}; glibc's string functions follow this CPU as valgrind presents it"
            )),
            (None, None) => {}
        }
        notes
    }

    /// Warnings for the run's output: what the user's own `GLIBC_TUNABLES`
    /// changed in the profile, and what the profile could not fix here.
    pub fn warnings(&self) -> Vec<String> {
        let Some(p) = &self.portable else {
            return Vec::new();
        };
        let mut out: Vec<String> = p
            .profile
            .overridden
            .iter()
            .map(|o| format!("your GLIBC_TUNABLES overrides the portable profile ({o}): counts compare only with runs that have the same setting"))
            .collect();
        out.extend(
            p.profile
                .unfixed
                .iter()
                .map(|u| format!("portable profile: {u}")),
        );
        for dir in p.verified.legacy_platform_dirs() {
            out.push(format!(
                "the loader also searches {dir}, a legacy platform directory it picks by CPU vendor and model, which no tunable fixes: libraries there may differ across CPUs"
            ));
        }
        out
    }

    /// The valgrind command line for benchmark `index`, and its output directory.
    pub fn wrap(
        &self,
        index: usize,
        argv: &[String],
        cache: Option<&callgrind::CacheModel>,
    ) -> Result<(Vec<String>, PathBuf), RunError> {
        let dir = self.scratch.path().join(format!("bench-{index}"));
        std::fs::create_dir_all(&dir).map_err(|source| RunError::Scratch {
            what: "cannot create",
            path: dir.clone(),
            source,
        })?;
        let cfg = SimulationConfig {
            out_dir: dir.clone(),
            collect: self.collect.clone(),
            cache: cache.copied().unwrap_or(self.cache),
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

/// This process's own `GLIBC_TUNABLES`, which the profile merges in.
fn own_tunables() -> Result<Option<String>, portable::Refusal> {
    match std::env::var_os("GLIBC_TUNABLES") {
        None => Ok(None),
        Some(v) => v.into_string().map(Some).map_err(|_| {
            portable::Refusal(
                "GLIBC_TUNABLES is not valid UTF-8, so it cannot be merged with the profile: correct it"
                    .into(),
            )
        }),
    }
}

/// Builds the profile for this machine's glibc (`user`, the user's own
/// `GLIBC_TUNABLES`, merged in) and checks it under valgrind.
fn prepare_portable(
    valgrind: &Path,
    baseline: Baseline,
    user: Option<&str>,
) -> Result<Portable, portable::Refusal> {
    let profile = portable::live_profile(baseline, user)?;
    let verified = portable::verify_live(&profile, &callgrind::plain_valgrind_argv(valgrind))?;
    Ok(Portable { profile, verified })
}

/// Objects whose code glibc's tunables do not reach: the loader and libc
/// are what the portable profile configures; valgrind's own preloads run
/// no program code.
fn dispatch_is_glibcs(object: &str) -> bool {
    let name = object.rsplit('/').next().unwrap_or(object);
    name.starts_with("ld-linux") || name == "libc.so.6" || name.starts_with("vgpreload_")
}

/// The run fact naming the objects that execute CPUID themselves.
pub const CPUID_KEY: &str = "sim.cpuid_dispatch";

/// Finds, among the objects each benchmark's profile ran code in, those
/// that contain CPUID instructions themselves (so may choose code by the
/// CPU whatever glibc was told); records them as the run's
/// [`CPUID_KEY`] fact (`none` when there are none) and returns a warning
/// per benchmark that has any.
pub fn cpuid_check(benchmarks: &[Benchmark], env: &mut Environment) -> Vec<String> {
    let mut seen: BTreeMap<String, Result<usize, perfsleuth_env::ElfError>> = BTreeMap::new();
    let mut warnings = Vec::new();
    let mut all: Vec<String> = Vec::new();
    for b in benchmarks {
        let Some(profile) = &b.profile else {
            continue;
        };
        let mut objects: Vec<&str> = profile
            .functions
            .iter()
            .map(|f| f.object.as_str())
            .filter(|o| o.starts_with('/') && !dispatch_is_glibcs(o))
            .collect();
        objects.sort_unstable();
        objects.dedup();
        let mut own: Vec<String> = Vec::new();
        for object in objects {
            let sites = seen
                .entry(object.to_string())
                .or_insert_with(|| perfsleuth_env::cpuid_sites(Path::new(object)));
            let name = object.rsplit('/').next().unwrap_or(object);
            let entry = match sites {
                Ok(0) => continue,
                Ok(n) => format!("{name} ({n} CPUID)"),
                // Unknown is not "none": the object may dispatch itself.
                Err(why) => format!("{name} (not scanned: {why})"),
            };
            // One library under two paths (/lib is /usr/lib on Debian) is
            // named once.
            if !own.iter().any(|o| o.starts_with(&format!("{name} ("))) {
                own.push(entry);
            }
        }
        if own.is_empty() {
            continue;
        }
        let warning = format!(
            "`{}`: {} executes CPUID itself, or may: its own dispatch can still differ across CPUs, which the portable profile cannot fix",
            b.name,
            own.join(", ")
        );
        // `ab` measures the same benchmark name on both sides.
        if !warnings.contains(&warning) {
            warnings.push(warning);
        }
        for o in own {
            if !all.contains(&o) {
                all.push(o);
            }
        }
    }
    let value = if all.is_empty() {
        "none".to_string()
    } else {
        all.join(", ")
    };
    env.set(CPUID_KEY, value, ImpactClass::Context);
    warnings
}

/// One warning per benchmark whose runs did not count the same instructions
/// by more than [`perfsleuth_model::NONDETERMINISM_WARNING`]: under simulation that means the
/// program itself is not deterministic.
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
            // A few instructions in millions (a thread's start, the size of
            // the environment) are below any threshold: the summary shows
            // them; only a spread a comparison could mistake is a warning.
            (ir.len() > 1 && max > min && max / min - 1.0 >= perfsleuth_model::NONDETERMINISM_WARNING).then(|| {
                format!(
                    "`{}` is NOT deterministic: two runs of the same binary counted different instruction totals (Ir {min:.0} … {max:.0}, {:.0} apart, {}). \
                     Its inputs, timing, addresses or threads vary between runs; fix that before trusting small differences",
                    b.name,
                    max - min,
                    perfsleuth_model::quantity::format_relative(max / min - 1.0)
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
        assert!(w[0].contains("1 apart, 0.10%"), "{}", w[0]);
    }

    #[test]
    fn a_library_under_two_paths_is_named_once() {
        // "libgcc_s.so.1 (13 CPUID); libgcc_s.so.1 (13 CPUID)": /lib and
        // /usr/lib are one directory on Debian (issue 38).
        let function = |object: &str| perfsleuth_model::FunctionProfile {
            object: object.into(),
            function: "f".into(),
            ..Default::default()
        };
        let b = Benchmark {
            name: "b".into(),
            profile: Some(Box::new(perfsleuth_model::Profile {
                functions: vec![
                    function("/nonexistent/lib/libx.so.1"),
                    function("/nonexistent/usr/lib/libx.so.1"),
                ],
                ..Default::default()
            })),
            ..Benchmark::default()
        };
        let mut env = Environment::default();
        let w = cpuid_check(&[b], &mut env);
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].matches("libx.so.1 (").count(), 1, "{}", w[0]);
        assert_eq!(
            env.get(CPUID_KEY).map(|v| v.matches("libx.so.1 (").count()),
            Some(1)
        );
    }

    #[test]
    fn a_few_instructions_in_millions_are_no_warning_and_never_read_as_zero() {
        // "NOT deterministic (+0.000 %)" for 16 instructions (issue 38).
        assert!(nondeterminism(&[bench(&[1_200_000.0, 1_200_016.0])]).is_empty());
        assert_eq!(
            perfsleuth_model::quantity::format_relative(16.0 / 1_200_000.0),
            "0.0013%"
        );
        assert_eq!(perfsleuth_model::quantity::format_relative(0.001), "0.10%");
        assert_eq!(perfsleuth_model::quantity::format_relative(0.25), "25.0%");
    }
}
