//! How many CPUs a benchmark can really use, from the fingerprint: the
//! logical CPUs, narrowed by the affinity mask, the cgroup cpuset and the
//! cgroup CPU quota. `scale` needs it to tell oversubscription from
//! contention.

use crate::process::parse_cpu_list;
use perfsleuth_model::Environment;

/// The CPUs available to measured commands.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuCapacity {
    /// Logical CPUs of the machine.
    pub logical: Option<usize>,
    /// Physical cores (None when the kernel does not say, common in VMs).
    pub physical: Option<usize>,
    /// CPUs a process here can keep busy at once (a quota can make it fractional).
    pub usable: Option<f64>,
    /// What narrows `usable` below `logical`, in words (e.g. "cgroup quota 0.5 CPU").
    pub limited_by: Option<String>,
}

/// Reads the capacity from an environment's facts.
pub fn cpu_capacity(env: &Environment) -> CpuCapacity {
    let count = |key: &str| env.get(key).and_then(|v| v.trim().parse::<usize>().ok());
    let list = |key: &str| {
        env.get(key)
            .and_then(|v| parse_cpu_list(v).ok())
            .map(|cpus| cpus.len())
    };
    let logical = count("cpu.logical_cores");
    let physical = count("cpu.physical_cores");
    let mut usable = logical.map(|n| n as f64);
    let mut limited_by = None;
    let mut narrow = |value: Option<f64>, why: String| {
        if let Some(v) = value.filter(|v| *v > 0.0)
            && usable.is_none_or(|u| v < u)
        {
            usable = Some(v);
            limited_by = Some(why);
        }
    };
    let affinity = list("process.affinity");
    narrow(
        affinity.map(|n| n as f64),
        format!(
            "affinity mask {}",
            env.get("process.affinity").unwrap_or("")
        ),
    );
    let cpuset = list("cgroup.cpuset");
    narrow(
        cpuset.map(|n| n as f64),
        format!("cgroup cpuset {}", env.get("cgroup.cpuset").unwrap_or("")),
    );
    let quota = env
        .get("cgroup.cpu.quota")
        .and_then(|v| v.strip_suffix(" CPU"))
        .and_then(|v| v.trim().parse::<f64>().ok());
    narrow(
        quota,
        format!("cgroup quota {}", env.get("cgroup.cpu.quota").unwrap_or("")),
    );
    CpuCapacity {
        logical,
        physical,
        usable,
        limited_by,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfsleuth_model::ImpactClass::Performance;

    fn env(facts: &[(&str, &str)]) -> Environment {
        let mut e = Environment::default();
        for (k, v) in facts {
            e.set(*k, *v, Performance);
        }
        e
    }

    #[test]
    fn the_narrowest_limit_wins_and_is_named() {
        let c = cpu_capacity(&env(&[
            ("cpu.logical_cores", "16"),
            ("cpu.physical_cores", "8"),
            ("process.affinity", "0-7"),
            ("cgroup.cpuset", "0-11"),
            ("cgroup.cpu.quota", "2.5 CPU"),
        ]));
        assert_eq!(c.logical, Some(16));
        assert_eq!(c.physical, Some(8));
        assert_eq!(c.usable, Some(2.5));
        assert_eq!(c.limited_by.as_deref(), Some("cgroup quota 2.5 CPU"));

        let c = cpu_capacity(&env(&[
            ("cpu.logical_cores", "16"),
            ("process.affinity", "0-3,8"),
            ("cgroup.cpu.quota", "none"),
        ]));
        assert_eq!(c.usable, Some(5.0));
        assert_eq!(c.limited_by.as_deref(), Some("affinity mask 0-3,8"));
    }

    #[test]
    fn unknown_facts_leave_the_logical_count() {
        let c = cpu_capacity(&env(&[
            ("cpu.logical_cores", "4"),
            ("process.affinity", "garbage"),
        ]));
        assert_eq!(c.usable, Some(4.0));
        assert_eq!(c.limited_by, None);
        assert_eq!(c.physical, None);
        let none = cpu_capacity(&Environment::default());
        assert_eq!(none.usable, None);
    }
}
