//! Facts `env check` needs about the measuring tools: hardware and software
//! counters, tracepoints, valgrind, and the power supply.

use crate::Source;
use crate::error::{Record, Unknown};
use perfsleuth_model::{Environment, ImpactClass};

/// Which perf_event counter groups (`hardware`, `software`, `tracepoints`)
/// this process may open: each `Ok` or the one-line reason it was refused.
/// The caller asks the code that opens them for a run
/// (`perfsleuth_measure::counters::availability`), so the fingerprint and the
/// measurement never disagree, and capturing opens no counter itself.
pub type CounterAvailability = [(&'static str, Result<(), String>)];

/// Captures power source, counter availability and valgrind presence.
pub fn capture(src: &Source, counters: Option<&CounterAvailability>, env: &mut Environment) {
    env.record("power.source", power_source(src), ImpactClass::Performance);
    for (key, group) in [
        ("perf.hw_counters", "hardware"),
        ("perf.sw_counters", "software"),
        ("perf.tracepoints", "tracepoints"),
    ] {
        let answer = match counters {
            // A tree has no kernel to ask.
            _ if !src.is_live() => Err("not recorded in the tree".to_string()),
            None => Err("not probed".to_string()),
            Some(groups) => Ok(groups.iter().find(|(g, _)| *g == group).map_or_else(
                || "not probed".to_string(),
                |(_, r)| match r {
                    Ok(()) => "available".to_string(),
                    Err(why) => why.clone(),
                },
            )),
        };
        env.record(key, answer, ImpactClass::Context);
    }
    env.record(
        "tools.valgrind",
        find_on_path(src, "valgrind"),
        ImpactClass::Context,
    );
}

/// `ac`, `battery`, or `none` (no power supply: a server or a VM).
fn power_source(src: &Source) -> Result<String, Unknown> {
    let Ok(supplies) = src.list_dir("/sys/class/power_supply") else {
        return Ok("none".into());
    };
    let mut battery = false;
    for name in supplies {
        let base = format!("/sys/class/power_supply/{name}");
        let kind = src.read_line(&format!("{base}/type")).unwrap_or_default();
        let online = src.read_line(&format!("{base}/online")).unwrap_or_default();
        match kind.as_str() {
            "Mains" if online == "1" => return Ok("ac".into()),
            "Battery" => battery = true,
            _ => {}
        }
    }
    Ok(if battery { "battery" } else { "none" }.into())
}

fn find_on_path(src: &Source, program: &str) -> Result<String, Unknown> {
    let path = src
        .env_var("PATH")
        .ok_or_else(|| "PATH is not set".to_string())?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| src.path(&p.to_string_lossy()).is_file())
        .map(|p| p.display().to_string())
        .ok_or_else(|| format!("{program} not found on PATH").into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_supplies_in_a_tree() {
        let dir = std::env::temp_dir().join(format!("perfsleuth-power-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let bat = dir.join("sys/class/power_supply/BAT0");
        let ac = dir.join("sys/class/power_supply/AC");
        std::fs::create_dir_all(&bat).unwrap();
        std::fs::create_dir_all(&ac).unwrap();
        std::fs::write(bat.join("type"), "Battery\n").unwrap();
        std::fs::write(ac.join("type"), "Mains\n").unwrap();
        std::fs::write(ac.join("online"), "0\n").unwrap();
        let src = Source::root(&dir);
        assert_eq!(power_source(&src).unwrap(), "battery");
        std::fs::write(ac.join("online"), "1\n").unwrap();
        assert_eq!(power_source(&src).unwrap(), "ac");
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            power_source(&Source::root("/nonexistent-root")).unwrap(),
            "none"
        );
    }

    #[test]
    fn live_counter_facts_say_what_the_caller_found() {
        let groups = [
            ("hardware", Err("no PMU (ENOENT)".to_string())),
            ("software", Ok(())),
            ("tracepoints", Err("tracefs is not mounted".to_string())),
        ];
        let mut env = Environment::default();
        capture(&Source::live(), Some(&groups), &mut env);
        for (key, group) in [
            ("perf.hw_counters", "hardware"),
            ("perf.sw_counters", "software"),
            ("perf.tracepoints", "tracepoints"),
        ] {
            let fact = env.get(key).expect(key);
            let (_, answer) = groups.iter().find(|(g, _)| *g == group).expect(group);
            match answer {
                Ok(()) => assert_eq!(fact, "available", "{key}"),
                Err(why) => assert_eq!(fact, why, "{key}"),
            }
        }
        let mut unasked = Environment::default();
        capture(&Source::live(), None, &mut unasked);
        assert_eq!(
            unasked.facts["perf.sw_counters"].reason.as_deref(),
            Some("not probed")
        );
    }

    #[test]
    fn a_tree_is_not_probed() {
        let mut env = Environment::default();
        let groups = [("software", Ok(()))];
        capture(&Source::root("/nonexistent-root"), Some(&groups), &mut env);
        for key in ["perf.hw_counters", "perf.sw_counters", "perf.tracepoints"] {
            let fact = &env.facts[key];
            assert_eq!(fact.value, perfsleuth_model::UNKNOWN, "{key}");
            assert_eq!(fact.reason.as_deref(), Some("not recorded in the tree"));
        }
    }
}
