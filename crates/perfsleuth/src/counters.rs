//! Asking the spawner for perf_event counters and saying, once, which could
//! not be had and why.

use crate::cli::CounterChoice;
use perfsleuth_measure::{CounterConfig, CounterSelection, Spawner};
use perfsleuth_model::{Environment, ImpactClass};

/// Opens the chosen counters in the spawner. Returns the notes to print
/// (one per unavailable group, with its reason) and records what is counted
/// as `measure.counters*` facts in `env`.
pub fn enable(
    spawner: &mut Spawner,
    choice: CounterChoice,
    include_kernel: bool,
    tracepoints: bool,
    env: &mut Environment,
) -> Vec<String> {
    let selection = match choice {
        CounterChoice::None => CounterSelection::None,
        CounterChoice::Software => CounterSelection::Software,
        CounterChoice::All => CounterSelection::All,
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
