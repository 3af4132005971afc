//! Simulation mode: running a command under callgrind and reading its output.
//!
//! Two halves:
//!
//! - **Parsing** ([`parse_file`], [`parse_reader`]) reads callgrind's profile
//!   format (<https://valgrind.org/docs/manual/cl-format.html>) line by line
//!   into a [`Profile`]: the event names, the totals, and per function its
//!   self cost, inclusive cost and call count. Memory is proportional to the
//!   number of distinct functions and names, never to the file size. A file
//!   that is truncated or not callgrind output is an `Err(`[`ParseError`]`)`
//!   naming the file and line; the parser never panics.
//! - **Simulation** ([`valgrind_argv`], [`find_valgrind`], [`collect_outputs`],
//!   [`estimated_cycles`], [`counters`], [`collect_function_seen`]) builds the
//!   valgrind command line with a fixed cache model, gathers every
//!   `callgrind.out.*` file a run wrote (one per process with
//!   `--trace-children=yes`, one per thread with `--separate-threads=yes`),
//!   merges them and turns them into counters.
//!
//! # What the numbers mean
//!
//! - **Self cost** of a function: the sum of its cost lines (the code of the
//!   function itself, inlined code included). Identical to
//!   `callgrind_annotate`'s per-function figures summed over the source files
//!   of the function (`callgrind_annotate` splits inlined code by file).
//! - **Inclusive cost**: self cost plus the inclusive cost of every call it
//!   made (the cost line after `calls=`), *except calls to itself*. Those are
//!   already in the self cost (all recursion levels with the same name are one
//!   function), so direct recursion is never counted twice. `callgrind_annotate
//!   --inclusive=yes` does count them (a recursive function can show 900 % of
//!   the program). Mutual recursion between differently named functions cannot
//!   be untangled from the file alone, so an inclusive cost is additionally
//!   capped at the file's totals. A function that only appears as a call
//!   target (never as `fn=`) gets the sum of the calls into it.
//! - **Calls**: how often the function was called (all `calls=` counts
//!   targeting it, recursive calls included).
//! - **Totals** of one part: the `summary:` line when present and non-zero
//!   (what `callgrind_annotate` prints as `PROGRAM TOTALS`), else the `totals:`
//!   line, else the sum of all self costs. Callgrind's `summary:` can exceed
//!   the sum of the cost lines by a few instructions; [`Profile::self_sum`]
//!   gives the latter. A file with several parts (`--combine-dumps=yes`) gets
//!   the sum of its parts (`callgrind_annotate` keeps only the last part's).
//! - Functions are identified by **(object, name)**: callgrind may emit one
//!   function under several `fl=` files (when a basic block starts in inlined
//!   code); they are one [`FunctionCost`], whose `file` is the first seen.
//!   Recursion levels that callgrind names apart (`fib'2`, with the default
//!   `--separate-recs=2`) stay separate functions.

mod parse;
mod sim;

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

pub use parse::{parse_file, parse_reader};
pub use sim::{
    EVENTS, INSTALL_HINT, SimError, SimulationConfig, collect_function_seen, collect_outputs,
    counters, estimated_cycles, find_valgrind, valgrind_argv,
};

/// One or more callgrind output files, parsed and merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    /// Event names (`Ir`, `Dr`, …), in order of first appearance; every cost
    /// vector below is indexed like this.
    pub events: Vec<String>,
    /// Total cost per event (see the module docs for where it comes from).
    pub totals: Vec<u64>,
    /// Every function with cost or calls, in order of first appearance.
    pub functions: Vec<FunctionCost>,
    /// The distinct `cmd:` lines seen, in order.
    pub commands: Vec<String>,
    /// How many files were parsed into this profile.
    pub files_read: usize,
    /// How many parts (dumps) the files held in all.
    pub parts: usize,
}

/// The cost of one function, identified by object and name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FunctionCost {
    /// The object file (`ob=`), empty when the file names none.
    pub object: String,
    /// The source file (`fl=`) the function was first seen in; `???` when
    /// callgrind had no debug information.
    pub file: String,
    /// The function name as callgrind wrote it (`fib'2` is recursion level 2
    /// of `fib`).
    pub name: String,
    /// Cost of the function's own code, per event.
    pub self_cost: Vec<u64>,
    /// Self cost plus the cost of the calls it made to other functions.
    pub inclusive: Vec<u64>,
    /// How often it was called.
    pub calls: u64,
}

/// A file that could not be read or is not valid callgrind output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The file name (as given to [`parse_reader`] or the path's display).
    pub file: String,
    /// 1-based line number; 0 when the error is not about a line (the file
    /// cannot be opened).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    /// `FILE:LINE: message`, or `FILE: message` when `line` is 0.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

impl std::error::Error for ParseError {}

impl Profile {
    /// Index of `event` in [`Profile::events`].
    pub fn event_index(&self, event: &str) -> Option<usize> {
        self.events.iter().position(|e| e == event)
    }

    /// The total of `event`, `None` when the profile has no such event.
    pub fn total(&self, event: &str) -> Option<u64> {
        self.event_index(event)
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
    pub fn top_by_inclusive(&self, event: &str, n: usize) -> Vec<&FunctionCost> {
        self.top_by(event, n, |f| &f.inclusive)
    }

    /// The `n` functions with the highest self cost of `event`, ties by name;
    /// empty when the event is unknown.
    pub fn top_by_self(&self, event: &str, n: usize) -> Vec<&FunctionCost> {
        self.top_by(event, n, |f| &f.self_cost)
    }

    fn top_by(
        &self,
        event: &str,
        n: usize,
        costs: impl Fn(&FunctionCost) -> &Vec<u64>,
    ) -> Vec<&FunctionCost> {
        let Some(i) = self.event_index(event) else {
            return Vec::new();
        };
        let cost = |f: &FunctionCost| costs(f).get(i).copied().unwrap_or(0);
        let mut all: Vec<&FunctionCost> = self.functions.iter().collect();
        all.sort_by(|a, b| {
            cost(b)
                .cmp(&cost(a))
                .then_with(|| a.name.cmp(&b.name))
                .then_with(|| a.object.cmp(&b.object))
        });
        all.truncate(n);
        all
    }

    /// Functions with exactly this name (several objects may define one).
    pub fn functions_named<'a>(
        &'a self,
        name: &str,
    ) -> impl Iterator<Item = &'a FunctionCost> + use<'a> {
        let name = name.to_string();
        self.functions.iter().filter(move |f| f.name == name)
    }

    /// Adds `other` to this profile: events are united by name (an event
    /// missing on one side counts 0 there), totals add up, functions with the
    /// same (object, name) are summed (costs saturate instead of overflowing),
    /// new ones are appended, commands are united.
    pub fn merge(&mut self, other: Profile) {
        let map: Vec<usize> = other
            .events
            .iter()
            .map(|e| match self.event_index(e) {
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
        let mut index: HashMap<(String, String), usize> = self
            .functions
            .iter()
            .enumerate()
            .map(|(i, f)| ((f.object.clone(), f.name.clone()), i))
            .collect();
        for f in other.functions {
            let key = (f.object.clone(), f.name.clone());
            let i = *index.entry(key).or_insert_with(|| {
                self.functions.push(FunctionCost {
                    object: f.object.clone(),
                    file: f.file.clone(),
                    name: f.name.clone(),
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

/// Reads every file and merges them; the first error stops.
pub fn parse_files<P: AsRef<Path>>(paths: &[P]) -> Result<Profile, ParseError> {
    let mut profile = Profile::default();
    for p in paths {
        profile.merge(parse_file(p.as_ref())?);
    }
    Ok(profile)
}
