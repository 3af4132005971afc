//! perfsleuth's application layer, between the command line and the engine:
//! a run's settings ([`args`]) checked into one configuration and measured in
//! one session ([`session`]: store, sink, counters, lock tracer, Ctrl-C,
//! noise snapshots, conclude); the sides of a comparison ([`sides`]); the
//! verdict options every command and the server judge with ([`verdict`],
//! [`config`]); the plans `run`, variants and `explain` measure ([`plan`],
//! [`variant`]). The binary parses, calls these, and prints.

#![forbid(unsafe_code)]

pub mod ab;
pub mod bisect;
pub mod checkout;
pub mod config;
pub mod error;
pub mod explain;
#[cfg(test)]
mod fuzz;
pub mod git;
pub mod locks;
pub mod options;
pub mod output;
pub mod parse;
pub mod plan;
pub mod scale;
pub mod session;
pub mod sides;
pub mod sink;
pub mod term;
pub mod variant;
pub mod verdict;

pub use error::Fail;
