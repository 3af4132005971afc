//! The CLI's integration tests, one binary: each module tests a command
//! or a concern through the real `perfsleuth` binary in a sandbox
//! (`common`); `layering` checks the crates' dependencies against the
//! table of docs/ARCHITECTURE.md. One binary links once (30 used to take
//! ~350 MiB of disk and a link each); the README's commands run in
//! `tests/readme.rs`, a binary of their own, alone on the machine.

mod common;

mod ab;
mod bisect;
mod ci;
mod compare;
mod docs;
mod env;
mod errors;
mod explain;
mod export;
mod failures;
mod hardening;
mod history;
mod hyperfine;
mod import;
mod interrupt;
mod judged;
mod layering;
mod locks;
mod outputs;
mod portable;
mod probe;
mod profile;
mod report;
mod run;
mod scale;
mod schema;
mod server;
mod simulation;
mod store;
mod variant;
