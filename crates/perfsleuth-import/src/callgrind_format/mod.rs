//! callgrind's profile format (<https://valgrind.org/docs/manual/cl-format.html>):
//! the parser simulation mode and `import` share, and what a profile's event
//! totals mean as counters. Pure: it reads bytes and computes, so `import`
//! uses it without the spawner, and `perfsleuth-measure` re-exports it for
//! the simulation runs it collects.
//!
//! [`parse_file`] and [`parse_reader`] read the format line by line into a
//! [`Profile`]: the event names, the totals, and per function its self
//! cost, inclusive cost and call count. Memory is proportional to the
//! number of distinct functions and names, never to the file size. A file
//! that is truncated or not callgrind output is an `Err(`[`ParseError`]`)`
//! naming the file and line; the parser never panics.
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
//!   code); they are one [`FunctionProfile`], whose `file` is the first seen.
//!   Recursion levels that callgrind names apart (`fib'2`, with the default
//!   `--separate-recs=2`) stay separate functions.

mod parse;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

pub use parse::{parse_file, parse_reader};
pub use perfsleuth_model::{FunctionProfile, Profile};

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

/// Reads every file and merges them; the first error stops.
pub fn parse_files<P: AsRef<Path>>(paths: &[P]) -> Result<Profile, ParseError> {
    let mut profile = Profile::default();
    for p in paths {
        profile.merge(parse_file(p.as_ref())?);
    }
    Ok(profile)
}

/// The events simulation mode reports, in callgrind's order: instruction
/// reads, data reads, data writes, then L1 and last-level misses of each.
pub const EVENTS: [&str; 9] = [
    "Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw",
];

/// Estimated CPU cycles from the simulated cache events, the model
/// iai-callgrind and gungraun use (after Valgrind's cachegrind docs):
///
/// ```text
/// ram     = ILmr + DLmr + DLmw                 (last-level misses)
/// ll_hits = (I1mr + D1mr + D1mw) − ram         (L1 misses that hit LL)
/// l1_hits = (Ir + Dr + Dw) − (I1mr + D1mr + D1mw)
/// cycles  = l1_hits + 5 · ll_hits + 35 · ram
/// ```
///
/// `None` unless all nine [`EVENTS`] are in the profile (run with
/// `--cache-sim=yes`). Differences saturate at 0.
pub fn estimated_cycles(p: &Profile) -> Option<f64> {
    let mut v = [0u128; 9];
    for (slot, event) in v.iter_mut().zip(EVENTS) {
        *slot = u128::from(p.total(event)?);
    }
    let [ir, dr, dw, i1mr, d1mr, d1mw, ilmr, dlmr, dlmw] = v;
    let ram = ilmr + dlmr + dlmw;
    let l1_misses = i1mr + d1mr + d1mw;
    let ll_hits = l1_misses.saturating_sub(ram);
    let l1_hits = (ir + dr + dw).saturating_sub(l1_misses);
    Some((l1_hits + 5 * ll_hits + 35 * ram) as f64)
}

/// The nine [`EVENTS`] totals (0 for an event the profile lacks) and
/// `est_cycles` when [`estimated_cycles`] can compute it.
pub fn counters(p: &Profile) -> BTreeMap<String, f64> {
    let mut m: BTreeMap<String, f64> = EVENTS
        .iter()
        .map(|e| (e.to_string(), p.total(e).unwrap_or(0) as f64))
        .collect();
    if let Some(c) = estimated_cycles(p) {
        m.insert("est_cycles".to_string(), c);
    }
    m
}
