//! Simulation mode: running a command under callgrind and reading its output.
//!
//! Two halves:
//!
//! - **Parsing** ([`parse_file`], [`parse_reader`]): callgrind's profile
//!   format into a [`Profile`], from `perfsleuth_import::callgrind_format`
//!   (pure, shared with `import`; what the numbers mean is documented there).
//! - **Simulation** ([`valgrind_argv`], [`find_valgrind`], [`collect_outputs`],
//!   [`estimated_cycles`], [`counters`], [`collect_function_seen`]) builds the
//!   valgrind command line with a fixed cache model, gathers every
//!   `callgrind.out.*` file a run wrote (one per process with
//!   `--trace-children=yes`, one per thread with `--separate-threads=yes`),
//!   merges them and turns them into counters.

mod sim;

pub use perfsleuth_import::callgrind_format::{
    EVENTS, FunctionProfile, ParseError, Profile, counters, estimated_cycles, parse_file,
    parse_files, parse_reader,
};
pub use sim::{
    CACHE_MODEL, CacheGeom, CacheModel, INSTALL_HINT, SimError, SimulationConfig,
    collect_function_seen, collect_outputs, find_valgrind, plain_valgrind_argv, valgrind_argv,
    valgrind_version,
};
