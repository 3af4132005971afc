//! `env check`: is this machine fit to benchmark on? Each finding names the
//! fact it comes from and says what to do about it.

use perfsleuth_model::{Environment, UNKNOWN};

pub use perfsleuth_model::schema::{Finding, Severity};

/// Judges whether the machine described by `env` is fit to benchmark on,
/// most serious findings first.
pub fn check(env: &Environment) -> Vec<Finding> {
    let mut checker = Checker {
        env,
        out: Vec::new(),
    };
    checker.tuning();
    checker.load();
    checker.tools();
    checker.coverage();
    let mut out = checker.out;
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

/// The facts being judged and the findings so far, in the order found (the
/// sort by severity keeps that order within a severity).
struct Checker<'a> {
    env: &'a Environment,
    out: Vec<Finding>,
}

impl<'a> Checker<'a> {
    /// A fact's value, unless it is unknown.
    fn get(&self, key: &str) -> Option<&'a str> {
        self.env.get(key).filter(|v| *v != UNKNOWN)
    }

    /// The number a fact's value starts with.
    fn num(&self, key: &str) -> Option<f64> {
        self.get(key)
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<f64>().ok())
    }

    /// Adds a finding.
    fn add(&mut self, severity: Severity, key: &str, message: String, recommendation: &str) {
        self.out.push(Finding {
            severity,
            key: key.to_string(),
            message,
            recommendation: recommendation.to_string(),
        })
    }

    /// The clock, and the kernel and memory settings a tuned machine changes.
    fn tuning(&mut self) {
        use Severity::*;
        const GOVERNORS: [&str; 6] = [
            "performance",
            "powersave",
            "ondemand",
            "conservative",
            "schedutil",
            "userspace",
        ];
        match self.get("cpu.freq.governor") {
            Some("performance") => {}
            Some(g) if !GOVERNORS.contains(&g) => self.add(
                Info,
                "cpu.freq.governor",
                format!("unrecognised CPU frequency governor `{g}`"),
                "check /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            ),
            Some(g) => self.add(
                Warning,
                "cpu.freq.governor",
                format!("CPU frequency governor is `{g}`: the clock follows the load"),
                "sudo cpupower frequency-set -g performance (or pyperf system tune)",
            ),
            None => self.add(
                Info,
                "cpu.freq.governor",
                "no CPU frequency control visible (typical in VMs): the host decides the clock"
                    .into(),
                "compare results only from the same instance type",
            ),
        }
        if self.get("cpu.boost") == Some("on") {
            self.add(
                Warning,
                "cpu.boost",
                "turbo/boost is on: the clock depends on temperature and on the other cores".into(),
                "echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo (Intel) or echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/boost",
            );
        }
        if self.get("cpu.smt") == Some("on") {
            self.add(
                Info,
                "cpu.smt",
                "SMT is on: a sibling thread can share the benchmark's core".into(),
                "pin the benchmark to one thread per core, or echo off | sudo tee /sys/devices/system/cpu/smt/control",
            );
        }
        if self.get("kernel.param.isolcpus").is_none()
            && self.get("kernel.param.nohz_full").is_none()
        {
            self.add(
                Info,
                "kernel.param.isolcpus",
                "no CPUs are isolated from the scheduler".into(),
                "boot with isolcpus=N nohz_full=N and run under taskset -c N",
            );
        }
        if let Some(aslr) = self
            .get("kernel.aslr")
            .filter(|v| !matches!(*v, "off" | "0"))
        {
            self.add(
                Info,
                "kernel.aslr",
                format!("ASLR is on ({aslr}): memory layout changes from run to run"),
                "keep it on and rely on many runs, or use setarch -R for layout-sensitive comparisons",
            );
        }
        if self.get("mem.thp.enabled") == Some("always") {
            self.add(
                Info,
                "mem.thp.enabled",
                "transparent huge pages are `always`: page-fault costs vary with memory fragmentation"
                    .into(),
                "echo madvise | sudo tee /sys/kernel/mm/transparent_hugepage/enabled",
            );
        }
    }

    /// Other work, the hypervisor, cgroup limits and the battery taking or slowing the CPU.
    fn load(&mut self) {
        use Severity::*;
        if let Some((severity, key, message, recommendation)) =
            noise_finding(&|k| self.num(k), &STEAL)
        {
            self.add(severity, key, message, recommendation);
        } else if self
            .get("virt.hypervisor")
            .is_some_and(|h| h != "none" && h != UNKNOWN)
            && let Some(boot) = self.num("noise.steal_pct")
        {
            // A run's steal warning points here: a VM says what it measured,
            // low as it may be now, since steal comes and goes with the host.
            let watched = self
                .num("noise.run.steal_pct")
                .zip(self.num("noise.run.seconds"))
                .map_or(String::new(), |(v, secs)| {
                    format!("{v:.1}% over the {secs:.1} s watched, ")
                });
            self.add(
                Info,
                "noise.steal_pct",
                format!(
                    "the hypervisor takes CPU time from this VM (steal): {watched}{boot:.1}% since boot"
                ),
                "steal comes and goes with the host's other tenants: a run warns with its own figure; measure the sides interleaved (ab, two commands in one run) so both see it alike",
            );
        }
        let cores = self.num("cpu.logical_cores").unwrap_or(1.0);
        // procs_running counts perfsleuth itself; an instant's count, not
        // judged once the pressure over the run is known.
        let runnable = self
            .num("noise.runnable")
            .filter(|_| self.num("noise.run.psi.cpu.some_pct").is_none());
        if let Some(others) = runnable.map(|r| r - 1.0).filter(|o| *o >= 1.0) {
            let busy = others >= cores.max(1.0);
            self.add(
                if busy { Problem } else { Warning },
                "noise.runnable",
                format!(
                    "{others} other tasks were runnable at start on {cores} CPUs{}",
                    if busy { ": the machine is busy" } else { "" }
                ),
                "stop other work (look at top or pidstat) before measuring",
            );
        }
        if let Some((severity, key, message, recommendation)) =
            noise_finding(&|k| self.num(k), &PRESSURE)
        {
            self.add(severity, key, message, recommendation);
        }
        if let Some(n) = self.num("cgroup.cpu.nr_throttled").filter(|n| *n > 0.0) {
            self.add(
                Problem,
                "cgroup.cpu.nr_throttled",
                format!("this cgroup has been CPU-throttled {n} times"),
                "raise the container's CPU limit or benchmark outside it; throttling stalls the benchmark for whole periods",
            );
        }
        if let Some(q) = self.get("cgroup.cpu.quota").filter(|q| *q != "none") {
            self.add(
                Warning,
                "cgroup.cpu.quota",
                format!("a cgroup CPU quota of {q} applies"),
                "parallel benchmarks will be throttled; give the container whole CPUs or no limit",
            );
        }
        if self.get("power.source") == Some("battery") {
            self.add(
                Problem,
                "power.source",
                "running on battery: power saving lowers and varies the clock".into(),
                "plug in the charger",
            );
        }
    }

    /// What the measurements rely on: counters, tracepoints, valgrind, the clocksource.
    fn tools(&mut self) {
        use Severity::*;
        if self.get("perf.hw_counters").is_none()
            && self
                .num("kernel.perf_event_paranoid")
                .is_some_and(|p| p >= 3.0)
        {
            self.add(
                Warning,
                "kernel.perf_event_paranoid",
                "perf_event_paranoid ≥ 3: unprivileged processes cannot read performance counters"
                    .into(),
                "sudo sysctl kernel.perf_event_paranoid=1 for counter measurements",
            );
        }
        match self.get("perf.hw_counters") {
            Some("available") => {}
            Some(why) => self.add(
                Warning,
                "perf.hw_counters",
                format!("hardware performance counters are not usable: {why}"),
                "cycles/instructions will not be recorded; use --mode simulation (callgrind) for deterministic counts",
            ),
            None => {}
        }
        match self.get("perf.sw_counters") {
            Some("available") | None => {}
            Some(why) => self.add(
                Warning,
                "perf.sw_counters",
                format!("software performance counters are not usable: {why}"),
                "task clock, context switches, migrations and page faults will not be recorded per run; sudo sysctl kernel.perf_event_paranoid=1 (or grant CAP_PERFMON)",
            ),
        }
        match self.get("perf.tracepoints") {
            Some("available") | None => {}
            // Not mounted is fixed by mounting it, whoever runs: "run as root"
            // told root nothing.
            Some(why) if why.contains("not mounted") => self.add(
                Warning,
                "perf.tracepoints",
                format!("tracepoints are not usable: {why}"),
                "futex calls and scheduler switches will not be counted; mount tracefs: sudo mount -t tracefs nodev /sys/kernel/tracing",
            ),
            Some(why) => self.add(
                Warning,
                "perf.tracepoints",
                format!("tracepoints are not usable: {why}"),
                "futex calls and scheduler switches will not be counted; run as root (or with CAP_PERFMON and a readable tracefs) with tracefs mounted at /sys/kernel/tracing",
            ),
        }
        if self.get("tools.valgrind").is_none() {
            self.add(
                Info,
                "tools.valgrind",
                "valgrind is not installed: deterministic (callgrind) measurements are unavailable"
                    .into(),
                "sudo apt-get install valgrind",
            );
        }
        if let Some(cs) = self
            .get("kernel.clocksource")
            .filter(|c| matches!(*c, "hpet" | "acpi_pm" | "jiffies"))
        {
            self.add(
                Warning,
                "kernel.clocksource",
                format!("the clocksource is `{cs}`: every clock read is a slow hardware access"),
                "use tsc if the CPU's TSC is stable (clocksource=tsc tsc=reliable)",
            );
        }
    }

    /// Too many unknown facts to judge at all.
    fn coverage(&mut self) {
        use Severity::*;
        // Every other step passes on facts it cannot read: a tree with nothing
        // in it must not come out "fit". Judged only on a whole capture (one
        // that has the identity facts at all), not on a hand-made fact map.
        let unknown = self
            .env
            .facts
            .values()
            .filter(|f| f.value == UNKNOWN)
            .count();
        let captured = ["cpu.model", "kernel.release"]
            .iter()
            .all(|k| self.env.facts.contains_key(*k));
        if captured && unknown * 2 > self.env.facts.len() {
            self.add(
                Problem,
                "facts",
                format!(
                    "{unknown} of {} facts are unknown, so whether this machine is fit cannot be judged",
                    self.env.facts.len()
                ),
                "with --root, give a copy of / holding proc/, sys/ and etc/; `perfsleuth env show` says why each fact is unknown",
            );
        }
    }
}

/// Whether the findings include [`check`]'s "too little is known" problem.
pub fn unjudgeable(findings: &[Finding]) -> bool {
    findings
        .iter()
        .any(|f| f.key == "facts" && f.severity == Severity::Problem)
}

/// Whether any finding makes results unreliable.
pub fn has_problems(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity == Severity::Problem)
}

/// A noise fact judged over the run when it was measured there (or over
/// `env check`'s own interval), else by its start-time average. Over a run,
/// the averages of a past the run did not see (steal since boot, pressure in
/// the 10 s before, which remembers a build) do not judge it.
struct NoiseRule {
    /// The share measured over the run.
    run_key: &'static str,
    /// The start-time average used when the run was not measured.
    start_key: &'static str,
    /// A run shorter than this is not judged at all (nor by `start_key`).
    min_seconds: f64,
    /// Warning and problem thresholds, in per cent.
    warn: f64,
    problem: f64,
    /// The message for a share over a run ("12.0 s") and at start.
    over_run: fn(f64, &str) -> String,
    at_start: fn(f64) -> String,
    recommendation: &'static str,
}

/// Steal is counted in 10 ms ticks: under a second, one tick is several
/// per cent, so a short run's steal says nothing either way.
const STEAL: NoiseRule = NoiseRule {
    run_key: "noise.run.steal_pct",
    start_key: "noise.steal_pct",
    min_seconds: 1.0,
    warn: 1.0,
    problem: 5.0,
    over_run: |v, span| {
        format!("the hypervisor took {v:.1}% of CPU time during the {span} measured (steal)")
    },
    at_start: |v| format!("the hypervisor has taken {v:.1}% of CPU time since boot (steal)"),
    recommendation: "use a dedicated or larger instance; results from this VM will vary with its neighbours",
};

/// A share of a few milliseconds is one scheduler hiccup, not a busy machine.
const PRESSURE: NoiseRule = NoiseRule {
    run_key: "noise.run.psi.cpu.some_pct",
    start_key: "noise.psi.cpu.some_avg10",
    min_seconds: 0.5,
    warn: 5.0,
    problem: 20.0,
    over_run: |v, span| {
        format!(
            "tasks waited for a CPU {v:.1}% of the {span} measured (CPU pressure; a benchmark with more threads than CPUs adds its own)"
        )
    },
    at_start: |v| format!("tasks waited for a CPU {v:.1}% of the last 10 s (CPU pressure)"),
    recommendation: "stop other work, or give this machine or container more CPUs",
};

/// The finding of one noise rule, if any.
fn noise_finding(
    num: &impl Fn(&str) -> Option<f64>,
    rule: &NoiseRule,
) -> Option<(Severity, &'static str, String, &'static str)> {
    let (key, value, message) = match num("noise.run.seconds") {
        Some(s) if s < rule.min_seconds => return None,
        Some(s) if num(rule.run_key).is_some() => {
            let span = if s >= 60.0 {
                format!("{:.0} min", s / 60.0)
            } else {
                format!("{s:.1} s")
            };
            let v = num(rule.run_key)?;
            (rule.run_key, v, (rule.over_run)(v, &span))
        }
        _ => {
            let v = num(rule.start_key)?;
            (rule.start_key, v, (rule.at_start)(v))
        }
    };
    if value < rule.warn {
        return None;
    }
    let severity = if value >= rule.problem {
        Severity::Problem
    } else {
        Severity::Warning
    };
    Some((severity, key, message, rule.recommendation))
}

#[cfg(test)]
mod run_noise_tests {
    use super::*;
    use perfsleuth_model::ImpactClass::Context;

    #[test]
    fn a_vm_says_its_steal_even_when_it_is_low_now() {
        // Runs warn "the hypervisor took 12.8 % … (see perfsleuth env
        // check)"; env check did not mention steal at all (issue 38).
        let mut e = Environment::default();
        e.set("virt.hypervisor", "KVM", Context);
        e.set("noise.steal_pct", "0.4", Context);
        e.set("noise.run.seconds", "1.0", Context);
        e.set("noise.run.steal_pct", "0.0", Context);
        let f = check(&e);
        let steal = f
            .iter()
            .find(|x| x.key == "noise.steal_pct")
            .expect("a steal line");
        assert_eq!(steal.severity, Severity::Info);
        assert!(
            steal
                .message
                .contains("0.0% over the 1.0 s watched, 0.4% since boot"),
            "{}",
            steal.message
        );
        // High steal is still a problem, not this line.
        e.set("noise.run.steal_pct", "12.8", Context);
        let f = check(&e);
        assert!(
            f.iter()
                .any(|x| x.key == "noise.run.steal_pct" && x.severity == Severity::Problem)
        );
        // Bare metal: nothing to say.
        e.set("virt.hypervisor", "none", Context);
        e.set("noise.run.steal_pct", "0.0", Context);
        assert!(!check(&e).iter().any(|x| x.key.contains("steal")));
    }

    #[test]
    fn the_run_is_judged_by_its_own_noise_not_by_the_build_before_it() {
        // Right after a build: the start-time averages are high, the run was quiet.
        let mut e = Environment::default();
        e.set("cpu.logical_cores", "2", Context);
        e.set("noise.psi.cpu.some_avg10", "80.00", Context);
        e.set("noise.steal_pct", "7.5", Context);
        e.set("noise.runnable", "4", Context);
        e.set("noise.run.seconds", "12.0", Context);
        e.set("noise.run.steal_pct", "0.2", Context);
        e.set("noise.run.psi.cpu.some_pct", "0.4", Context);
        let f = check(&e);
        assert!(
            !f.iter().any(|x| x.key.starts_with("noise.")),
            "a quiet run is not warned about: {f:?}"
        );
        // A run that was disturbed is, and the message says over what.
        e.set("noise.run.psi.cpu.some_pct", "35.0", Context);
        e.set("noise.run.steal_pct", "6.0", Context);
        let f = check(&e);
        let psi = f
            .iter()
            .find(|x| x.key == "noise.run.psi.cpu.some_pct")
            .unwrap();
        assert_eq!(psi.severity, Severity::Problem);
        assert!(
            psi.message.contains("of the 12.0 s measured"),
            "{}",
            psi.message
        );
        assert!(
            f.iter()
                .any(|x| x.key == "noise.run.steal_pct" && x.severity == Severity::Problem)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfsleuth_model::ImpactClass::*;

    #[test]
    fn a_busy_throttled_machine_has_problems() {
        let mut e = Environment::default();
        e.set("cpu.freq.governor", "powersave", Performance);
        e.set("cpu.logical_cores", "4", Identity);
        e.set("noise.runnable", "6", Context);
        e.set("noise.steal_pct", "7.5", Context);
        e.set("cgroup.cpu.nr_throttled", "12", Context);
        e.set("cgroup.cpu.quota", "0.5 CPU", Performance);
        e.set("perf.hw_counters", "available", Context);
        e.set("tools.valgrind", "/usr/bin/valgrind", Context);
        let f = check(&e);
        assert!(has_problems(&f));
        assert_eq!(f[0].severity, Severity::Problem);
        let keys: Vec<&str> = f
            .iter()
            .filter(|x| x.severity == Severity::Problem)
            .map(|x| x.key.as_str())
            .collect();
        assert_eq!(
            keys,
            [
                "noise.steal_pct",
                "noise.runnable",
                "cgroup.cpu.nr_throttled"
            ]
        );
        assert!(
            f.iter()
                .any(|x| x.key == "cpu.freq.governor" && x.recommendation.contains("performance"))
        );
    }

    #[test]
    fn a_tuned_machine_has_none() {
        let mut e = Environment::default();
        e.set("cpu.freq.governor", "performance", Performance);
        e.set("cpu.boost", "off", Performance);
        e.set("cpu.smt", "off", Performance);
        e.set("kernel.param.isolcpus", "2-3", Performance);
        e.set("kernel.aslr", "off", Performance);
        e.set("noise.runnable", "1", Context);
        e.set("noise.steal_pct", "0.0", Context);
        e.set("perf.hw_counters", "available", Context);
        e.set("perf.sw_counters", "available", Context);
        e.set("perf.tracepoints", "available", Context);
        e.set("tools.valgrind", "/usr/bin/valgrind", Context);
        e.set("cgroup.cpu.quota", "none", Performance);
        assert_eq!(check(&e), vec![]);
    }

    #[test]
    fn unusable_tracepoints_and_software_counters_are_warnings() {
        let mut e = Environment::default();
        e.set(
            "perf.tracepoints",
            "tracefs not mounted at /sys/kernel/tracing or /sys/kernel/debug/tracing",
            Context,
        );
        e.set("perf.sw_counters", "not permitted in kernel mode", Context);
        e.set(
            "perf.hw_counters",
            "not supported by this CPU or hypervisor",
            Context,
        );
        let f = check(&e);
        for key in ["perf.tracepoints", "perf.sw_counters", "perf.hw_counters"] {
            let x = f
                .iter()
                .find(|x| x.key == key)
                .unwrap_or_else(|| panic!("{key}: {f:?}"));
            assert_eq!(x.severity, Severity::Warning);
        }
        let tp = f.iter().find(|x| x.key == "perf.tracepoints").unwrap();
        assert!(tp.message.contains("not mounted"), "{tp:?}");
        assert!(tp.recommendation.contains("futex"), "{tp:?}");
        // Not mounted: the hint mounts it, and does not tell root to be
        // root (issue 38); unreadable: the permissions are the hint.
        assert!(
            tp.recommendation.contains("mount -t tracefs")
                && !tp.recommendation.contains("run as root"),
            "{tp:?}"
        );
        let mut e = Environment::default();
        e.set(
            "perf.tracepoints",
            "tracefs not readable at /sys/kernel/tracing (permission denied)",
            Context,
        );
        let f = check(&e);
        let tp = f.iter().find(|x| x.key == "perf.tracepoints").unwrap();
        assert!(tp.recommendation.contains("CAP_PERFMON"), "{tp:?}");
        // Not probed (a --root tree): no finding.
        let mut e = Environment::default();
        e.set_read(
            "perf.tracepoints",
            Err("not recorded in the tree".into()),
            Context,
        );
        assert!(check(&e).iter().all(|x| x.key != "perf.tracepoints"));
    }

    #[test]
    fn cpu_pressure_paranoid_counters_and_odd_governors_are_reported() {
        let mut e = Environment::default();
        e.set("noise.psi.cpu.some_avg10", "41.37", Context);
        e.set("kernel.perf_event_paranoid", "4", Performance);
        e.set("cpu.freq.governor", "1 2 3", Performance);
        let f = check(&e);
        assert!(
            f.iter()
                .any(|x| x.key == "noise.psi.cpu.some_avg10" && x.severity == Severity::Problem)
        );
        assert!(f.iter().any(|x| x.key == "kernel.perf_event_paranoid"));
        assert!(f.iter().any(|x| x.message.contains("unrecognised")));
    }

    #[test]
    fn unknown_facts_do_not_produce_false_problems() {
        let mut e = Environment::default();
        for k in [
            "noise.steal_pct",
            "noise.runnable",
            "cgroup.cpu.nr_throttled",
            "power.source",
        ] {
            e.set_read(k, Err("cannot read".into()), Context);
        }
        assert!(!has_problems(&check(&e)));
    }

    #[test]
    fn a_capture_that_read_almost_nothing_cannot_be_judged_fit() {
        let mut e = Environment::default();
        for k in [
            "cpu.model",
            "kernel.release",
            "cpu.freq.governor",
            "noise.steal_pct",
        ] {
            e.set_read(k, Err("cannot read".into()), Context);
        }
        e.set("os.name", "Debian", Context);
        let f = check(&e);
        assert!(unjudgeable(&f) && has_problems(&f), "{f:?}");
        e.set("cpu.model", "AMD EPYC", Context);
        e.set("kernel.release", "6.1", Context);
        e.set("noise.steal_pct", "0.0", Context);
        assert!(!unjudgeable(&check(&e)));
    }
}
