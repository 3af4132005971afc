//! Asking the spawner for perf_event counters and saying, once, which could
//! not be had and why.

use crate::spawn::Spawn;
use perfsleuth_measure::{CounterConfig, CounterSelection};
use perfsleuth_model::{Environment, ImpactClass};
use std::time::Duration;

/// Which counters a run records (`--counters`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Counters {
    /// `run`: software counters where they do not perturb the timing (every
    /// command's warmup ≥ 10 ms), else none. `scale`: as software.
    Auto,
    /// No counters.
    None,
    /// Software counters (task clock, context switches, migrations, page faults).
    Software,
    /// Software counters, tracepoints and hardware events (instructions, cycles, caches, branches).
    All,
}

/// Opens the chosen counters in the spawner. Returns the notes to print
/// (one per unavailable group, with its reason) and records what is counted
/// as `measure.counters*` facts in `env`. `Auto` opens the software ones;
/// call [`enable_auto`] to decide it from the warmups instead.
pub fn enable(
    spawner: &mut impl Spawn,
    choice: Counters,
    include_kernel: bool,
    tracepoints: bool,
    env: &mut Environment,
) -> Vec<String> {
    let selection = match choice {
        Counters::None => CounterSelection::None,
        Counters::Auto | Counters::Software => CounterSelection::Software,
        Counters::All => CounterSelection::All,
    };
    if selection == CounterSelection::None {
        env.set("measure.counters", "none", ImpactClass::Context);
        return Vec::new();
    }
    let config = CounterConfig {
        selection,
        include_kernel,
        tracepoints,
        tracefs: None,
    };
    match spawner.enable_counters(&config) {
        Ok(status) => {
            let opened = if status.opened.is_empty() {
                "none".to_string()
            } else {
                status.opened.join(",")
            };
            env.set("measure.counters", opened, ImpactClass::Context);
            if !status.unavailable.is_empty() {
                let why: Vec<String> = status
                    .unavailable
                    .iter()
                    .map(|(what, reason)| format!("{what}: {reason}"))
                    .collect();
                env.set(
                    "measure.counters_unavailable",
                    why.join("; "),
                    ImpactClass::Context,
                );
            }
            status
                .unavailable
                .iter()
                .map(|(what, reason)| format!("{what} counters not recorded: {reason}"))
                .collect()
        }
        Err(e) => {
            env.set("measure.counters", "none", ImpactClass::Context);
            vec![format!("counters not recorded: {e}")]
        }
    }
}

/// Commands faster than this per run get no counters under `--counters
/// auto`: inheriting the counters costs the kernel ~15 µs per process,
/// inside the measured time (4 % of a 400 µs command, 0.15 % of 10 ms).
pub const AUTO_MIN_RUN: Duration = Duration::from_millis(10);

/// `--counters auto`, decided once the warmup runs have shown how long a run
/// takes (`fastest`: the fastest command's latest warmup, if any ran).
/// Returns the notes to print, as [`enable`] does; the decision itself is
/// recorded in `measure.counters` / `measure.counters_auto`.
pub fn enable_auto(
    spawner: &mut impl Spawn,
    fastest: Option<Duration>,
    env: &mut Environment,
) -> Vec<String> {
    let why = match fastest {
        Some(d) if d >= AUTO_MIN_RUN => {
            env.set(
                "measure.counters_auto",
                format!("software: the fastest warmup took {d:.1?} (≥ {AUTO_MIN_RUN:?})"),
                ImpactClass::Context,
            );
            return enable(spawner, Counters::Software, false, false, env);
        }
        Some(d) => format!(
            "off: the fastest warmup took {d:.1?}; counters would add ~15 µs to every measured time (--counters software records them anyway)"
        ),
        None => {
            "off: no warmup run to judge their cost by (--counters software records them anyway)"
                .to_string()
        }
    };
    env.set("measure.counters", "none", ImpactClass::Context);
    env.set("measure.counters_auto", why, ImpactClass::Context);
    Vec::new()
}
