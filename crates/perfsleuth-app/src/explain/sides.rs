//! The two sides of an explanation: stored runs, exports, fingerprints or
//! this machine as it is, and which of them this machine stands for.

use crate::error::Fail;
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
