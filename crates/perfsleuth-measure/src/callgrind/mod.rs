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
//!   code); they are one [`FunctionProfile`], whose `file` is the first seen.
//!   Recursion levels that callgrind names apart (`fib'2`, with the default
//!   `--separate-recs=2`) stay separate functions.

mod parse;
mod sim;

use std::fmt;
use std::path::Path;

pub use parse::{parse_file, parse_reader};
pub use sim::{
    CACHE_MODEL, CacheGeom, CacheModel, EVENTS, INSTALL_HINT, SimError, SimulationConfig,
    collect_function_seen, collect_outputs, counters, estimated_cycles, find_valgrind,
    plain_valgrind_argv, valgrind_argv, valgrind_version,
};

/// One or more callgrind output files, parsed and merged: the model's
/// [`Profile`], so a benchmark stores what the parser produced.
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
