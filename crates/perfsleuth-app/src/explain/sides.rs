//! The two sides of an explanation: stored runs, exports, fingerprints or
//! this machine as it is, and which of them this machine stands for.

use crate::error::Fail;
use crate::options::ExplainOptions;
use crate::sides as selectors;
use crate::sides::StoreHandle;
use perfsleuth_compare::Side;
use perfsleuth_model::Environment;
use perfsleuth_model::ImpactClass;

/// One side of an explanation.
pub(crate) enum Input {
    /// This machine as it is: measured now, as the base.
    Current,
    /// A fingerprint without results.
    Fingerprint { label: String, env: Environment },
    /// Stored runs (or an export).
    Runs(Side),
}

impl Input {
    pub(crate) fn label(&self) -> String {
        match self {
            Input::Current => "current machine".into(),
            Input::Fingerprint { label, .. } => label.clone(),
            Input::Runs(s) => s.label.clone(),
        }
    }

    pub(crate) fn runs(&self) -> Option<&Side> {
        match self {
            Input::Runs(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn env<'a>(&'a self, here: &'a Environment) -> &'a Environment {
        match self {
            Input::Current => here,
            Input::Fingerprint { env, .. } => env,
            Input::Runs(s) => perfsleuth_compare::newest(s).map_or(here, |r| &r.environment),
        }
    }
}

pub(crate) fn resolve(spec: &str, store: &mut StoreHandle) -> Result<Input, Fail> {
    if spec == "current" {
        return Ok(Input::Current);
    }
    match selectors::resolve(spec, store) {
        Ok(side) => Ok(Input::Runs(side)),
        Err(e) => {
            // A fingerprint file (`env show --json`) has no runs but says
            // what the other machine is.
            if crate::output::names_a_file(std::path::Path::new(spec))
                && let Ok(env) = crate::sides::environment_file(std::path::Path::new(spec))
            {
                return Ok(Input::Fingerprint {
                    label: spec.to_string(),
                    env,
                });
            }
            Err(e)
        }
    }
}

/// Which side the experiments start from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum From {
    Baseline,
    Candidate,
}

impl From {
    pub(crate) fn name(self) -> &'static str {
        match self {
            From::Baseline => "baseline",
            From::Candidate => "candidate",
        }
    }
}

/// The identity facts in which `env` differs from this machine.
pub(crate) fn identity_gap(env: &Environment, here: &Environment) -> Vec<perfsleuth_env::Change> {
    perfsleuth_env::diff(env, here)
        .into_iter()
        .filter(|c| c.class == ImpactClass::Identity && !c.key.starts_with("sim."))
        .collect()
}

/// The two sides resolved, and the one the experiments start from.
pub(crate) struct Sides {
    pub(crate) baseline: Input,
    pub(crate) candidate: Input,
    /// This machine's fingerprint.
    pub(crate) here: Environment,
    pub(crate) from: From,
    /// The environment of the side the experiments start from.
    pub(crate) from_env: Environment,
    /// The environment of the side they move towards.
    pub(crate) to_env: Environment,
}

impl Sides {
    /// Resolves `explain`'s two sides, refusing a pair with no results or of
    /// two modes, and picks the one the experiments start from.
    pub(crate) fn resolve(args: &ExplainOptions, store: &mut StoreHandle) -> Result<Sides, Fail> {
        let baseline = resolve(&args.baseline, store)?;
        let candidate = resolve(&args.candidate, store)?;
        let usage = |what: String, hint: &str| Err(Fail::usage(what, hint.to_string()));
        if baseline.runs().is_none() && candidate.runs().is_none() {
            return usage(
                format!(
                    "neither {} nor {} has results: explain reruns the benchmarks of a stored run",
                    baseline.label(),
                    candidate.label()
                ),
                "give a stored run (id, latest, an export) on at least one side, e.g. `perfsleuth explain RUN current`",
            );
        }
        if let (Some(b), Some(c)) = (baseline.runs(), candidate.runs()) {
            crate::verdict::same_mode(b, c)?;
        }
        let here = perfsleuth_runner::capture_environment(&perfsleuth_env::Source::live());
        let from = starting_side(&baseline, &candidate, &here);
        let (from_input, to_input) = match from {
            From::Baseline => (&baseline, &candidate),
            From::Candidate => (&candidate, &baseline),
        };
        let from_env = from_input.env(&here).clone();
        let to_env = to_input.env(&here).clone();
        Ok(Sides {
            baseline,
            candidate,
            here,
            from,
            from_env,
            to_env,
        })
    }

    /// The side the experiments start from.
    pub(crate) fn starting(&self) -> &Input {
        match self.from {
            From::Baseline => &self.baseline,
            From::Candidate => &self.candidate,
        }
    }

    /// The side the experiments move towards.
    pub(crate) fn other(&self) -> &Input {
        match self.from {
            From::Baseline => &self.candidate,
            From::Candidate => &self.baseline,
        }
    }
}

/// The experiments start from `current` where it is given, from the runs
/// where the other side is a bare fingerprint, else from the side whose
/// machine is this one (the baseline on a tie).
fn starting_side(baseline: &Input, candidate: &Input, here: &Environment) -> From {
    match (baseline, candidate) {
        (Input::Current, _) | (Input::Runs(_), Input::Fingerprint { .. }) => From::Baseline,
        (_, Input::Current) | (Input::Fingerprint { .. }, Input::Runs(_)) => From::Candidate,
        _ => {
            let gb = identity_gap(baseline.env(here), here).len();
            let gc = identity_gap(candidate.env(here), here).len();
            if gc < gb {
                From::Candidate
            } else {
                From::Baseline
            }
        }
    }
}
