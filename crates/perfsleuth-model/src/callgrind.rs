//! Simulation's per-function profile (callgrind): inclusive and exclusive
//! costs per function.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

/// Where the cost of simulated runs went, per function (callgrind): what the
/// parser in `perfsleuth-measure` produces and, cut to the top functions,
/// what a benchmark stores.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Profile {
    /// Event names (`Ir`, `Dr`, …), the order of every cost vector.
    pub events: Vec<String>,
    /// Program totals per event.
    pub totals: Vec<u64>,
    /// Functions with cost or calls: every one as parsed (in order of first
    /// appearance); a stored profile keeps the most expensive by inclusive
    /// Ir, most expensive first.
    pub functions: Vec<FunctionProfile>,
    /// The distinct `cmd:` lines seen, in order (parser bookkeeping, not stored).
    #[serde(skip)]
    pub commands: Vec<String>,
    /// How many files were parsed into this profile (not stored).
    #[serde(skip)]
    pub files_read: usize,
    /// How many parts (dumps) the files held in all (not stored).
    #[serde(skip)]
    pub parts: usize,
}

/// One function's costs, identified by object and name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FunctionProfile {
    /// Shared object or executable (`ob=`), empty when the file names none.
    pub object: String,
    /// Source file (`fl=`) the function was first seen in, when known
    /// (callgrind writes `???` without debug information).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub file: String,
    /// Function name as callgrind wrote it (`fib'2` is recursion level 2 of `fib`).
    pub function: String,
    /// Cost in the function itself, per event.
    pub self_cost: Vec<u64>,
    /// Cost including its callees, per event.
    pub inclusive: Vec<u64>,
    /// Calls into it.
    pub calls: u64,
}

impl Profile {
    /// Index of an event in the cost vectors.
    pub fn event(&self, name: &str) -> Option<usize> {
        self.events.iter().position(|e| e == name)
    }

    /// The total of `event`, `None` when the profile has no such event.
    pub fn total(&self, event: &str) -> Option<u64> {
        self.event(event)
            .map(|i| self.totals.get(i).copied().unwrap_or(0))
    }

    /// The sum of all functions' self costs per event (equal to the
    /// `totals:` lines of callgrind's files; may be a little below
    /// [`Profile::totals`], which prefers `summary:`).
    pub fn self_sum(&self) -> Vec<u64> {
        let mut sum = vec![0u64; self.events.len()];
        for f in &self.functions {
            for (s, c) in sum.iter_mut().zip(&f.self_cost) {
                *s = s.saturating_add(*c);
            }
        }
        sum
    }

    /// The `n` functions with the highest inclusive cost of `event`, ties by
    /// name; empty when the event is unknown.
    pub fn top_by_inclusive(&self, event: &str, n: usize) -> Vec<&FunctionProfile> {
        self.top_by(event, n, |f| &f.inclusive)
    }

    /// The `n` functions with the highest self cost of `event`, ties by name;
    /// empty when the event is unknown.
    pub fn top_by_self(&self, event: &str, n: usize) -> Vec<&FunctionProfile> {
        self.top_by(event, n, |f| &f.self_cost)
    }

    pub(crate) fn top_by(
        &self,
        event: &str,
        n: usize,
        costs: impl Fn(&FunctionProfile) -> &Vec<u64>,
    ) -> Vec<&FunctionProfile> {
        let Some(i) = self.event(event) else {
            return Vec::new();
        };
        let cost = |f: &FunctionProfile| costs(f).get(i).copied().unwrap_or(0);
        let mut all: Vec<&FunctionProfile> = self.functions.iter().collect();
        all.sort_by(|a, b| {
            cost(b)
                .cmp(&cost(a))
                .then_with(|| a.function.cmp(&b.function))
                .then_with(|| a.object.cmp(&b.object))
        });
        all.truncate(n);
        all
    }

    /// The stored form: events and totals, the `n` most expensive functions
    /// by inclusive Ir, and none of the parser's bookkeeping.
    pub fn top(&self, n: usize) -> Profile {
        Profile {
            events: self.events.clone(),
            totals: self.totals.clone(),
            functions: self
                .top_by_inclusive("Ir", n)
                .into_iter()
                .cloned()
                .collect(),
            ..Profile::default()
        }
    }

    /// Functions with exactly this name (several objects may define one).
    pub fn functions_named<'a>(
        &'a self,
        name: &str,
    ) -> impl Iterator<Item = &'a FunctionProfile> + use<'a> {
        let name = name.to_string();
        self.functions.iter().filter(move |f| f.function == name)
    }

    /// Adds `other` to this profile: events are united by name (an event
    /// missing on one side counts 0 there), totals add up, functions with the
    /// same (object, name) are summed (costs saturate instead of overflowing),
    /// new ones are appended, commands are united.
    pub fn merge(&mut self, other: Profile) {
        let map: Vec<usize> = other
            .events
            .iter()
            .map(|e| match self.event(e) {
                Some(i) => i,
                None => {
                    self.events.push(e.clone());
                    self.events.len() - 1
                }
            })
            .collect();
        let n = self.events.len();
        let widen = |v: &mut Vec<u64>| v.resize(n, 0);
        widen(&mut self.totals);
        for f in &mut self.functions {
            widen(&mut f.self_cost);
            widen(&mut f.inclusive);
        }
        let add = |dst: &mut Vec<u64>, src: &[u64]| {
            for (j, c) in src.iter().enumerate() {
                if let Some(&i) = map.get(j) {
                    dst[i] = dst[i].saturating_add(*c);
                }
            }
        };
        add(&mut self.totals, &other.totals);
        let mut index: std::collections::HashMap<(String, String), usize> = self
            .functions
            .iter()
            .enumerate()
            .map(|(i, f)| ((f.object.clone(), f.function.clone()), i))
            .collect();
        for f in other.functions {
            let key = (f.object.clone(), f.function.clone());
            let i = *index.entry(key).or_insert_with(|| {
                self.functions.push(FunctionProfile {
                    object: f.object.clone(),
                    file: f.file.clone(),
                    function: f.function.clone(),
                    self_cost: vec![0; n],
                    inclusive: vec![0; n],
                    calls: 0,
                });
                self.functions.len() - 1
            });
            let dst = &mut self.functions[i];
            add(&mut dst.self_cost, &f.self_cost);
            add(&mut dst.inclusive, &f.inclusive);
            dst.calls = dst.calls.saturating_add(f.calls);
        }
        for c in other.commands {
            if !self.commands.contains(&c) {
                self.commands.push(c);
            }
        }
        self.files_read += other.files_read;
        self.parts += other.parts;
    }
}
