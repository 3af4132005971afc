//! The environment fingerprint: facts, their impact classes, and the
//! environment a run was measured in.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use std::collections::BTreeMap;

/// How much a fact matters when two environments are compared.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ImpactClass {
    /// Results are not comparable across a change (CPU model, kernel release, libc, binary hash).
    Identity,
    /// Known to move results (governor, turbo, mitigations, quotas, affinity).
    Performance,
    /// Recorded for the record, never judged (hostname, load at start).
    Context,
}

impl ImpactClass {
    /// The lowercase name used in JSON and in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            ImpactClass::Identity => "identity",
            ImpactClass::Performance => "performance",
            ImpactClass::Context => "context",
        }
    }
}

/// The value written for a fact that could not be read.
pub const UNKNOWN: &str = "unknown";

/// One environment fact: a string value and its impact class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Fact {
    /// The value as text; [`UNKNOWN`] when it could not be read.
    pub value: String,
    /// How a change of this fact affects comparability.
    pub class: ImpactClass,
    /// Why the value is [`UNKNOWN`] (file missing, permission denied, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The environment fingerprint: facts keyed by dotted names (`cpu.model`, `kernel.release`).
///
/// New facts are new keys, so the fingerprint grows without schema changes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Environment {
    /// All facts, ordered by key.
    pub facts: BTreeMap<String, Fact>,
}

impl Environment {
    /// Records a fact, replacing any earlier value under the same key.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>, class: ImpactClass) {
        self.facts.insert(
            key.into(),
            Fact {
                value: value.into(),
                class,
                reason: None,
            },
        );
    }

    /// Records a fact read from somewhere that can fail; on failure the value
    /// is [`UNKNOWN`] and the error text is kept as the reason.
    pub fn set_read(
        &mut self,
        key: impl Into<String>,
        value: Result<String, String>,
        class: ImpactClass,
    ) {
        match value {
            Ok(v) => self.set(key, v, class),
            Err(reason) => {
                self.facts.insert(
                    key.into(),
                    Fact {
                        value: UNKNOWN.to_string(),
                        class,
                        reason: Some(reason),
                    },
                );
            }
        }
    }

    /// Records a fact whose value may be missing; a missing value is stored as [`UNKNOWN`].
    pub fn set_opt(&mut self, key: impl Into<String>, value: Option<String>, class: ImpactClass) {
        self.set(key, value.unwrap_or_else(|| UNKNOWN.to_string()), class);
    }

    /// The value of a fact, if recorded.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.facts.get(key).map(|f| f.value.as_str())
    }

    /// The facts of the given classes, in key order.
    pub fn facts_of<'a>(
        &'a self,
        classes: &'a [ImpactClass],
    ) -> impl Iterator<Item = (&'a String, &'a Fact)> + 'a {
        self.facts
            .iter()
            .filter(move |(_, f)| classes.contains(&f.class))
    }

    /// A copy holding only the facts of the given classes.
    pub fn only(&self, classes: &[ImpactClass]) -> Environment {
        Environment {
            facts: self
                .facts_of(classes)
                .map(|(k, f)| (k.clone(), f.clone()))
                .collect(),
        }
    }

    /// Merges `other` into `self`; facts in `other` win.
    pub fn merge(&mut self, other: Environment) {
        self.facts.extend(other.facts);
    }
}

pub(crate) fn is_empty_env(env: &Environment) -> bool {
    env.facts.is_empty()
}
