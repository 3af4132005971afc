//! Comparing two probe results, with the environment facts that could
//! explain each difference (without depending on the env crate: only the
//! facts' keys and values from the model are needed).

use crate::{ProbeDelta, ProbeResult};
use perfsleuth_model::quantity::MISSING;
use perfsleuth_model::{Environment, UNKNOWN};
use perfsleuth_stats::{Direction, Evidence, Verdict, VerdictRule, decide};

/// Facts that move every probe: the CPU itself, its clock, the hypervisor.
const COMMON: &[&str] = &[
    "cpu.vendor",
    "cpu.brand",
    "cpu.family",
    "cpu.model",
    "cpu.stepping",
    "cpu.freq.",
    "cpu.boost",
    "virt.hypervisor",
];

/// The environment fact key prefixes that can move a probe's numbers
/// (`COMMON` comes on top of these). A key matches a prefix when it starts
/// with it (so `cpu.model` also covers `cpu.model_id`).
pub fn fact_prefixes(probe: &str) -> &'static [&'static str] {
    match probe {
        "calls" => &[
            "mitigation.",
            "kernel.param.",
            "kernel.release",
            "cpu.microcode",
            "virt.",
        ],
        "syscall" => &[
            "mitigation.",
            "kernel.param.",
            "kernel.release",
            "kernel.clocksource",
            "cpu.microcode",
            "virt.",
        ],
        "memory" => &[
            "cpu.cache.",
            "mem.",
            "cgroup.memory.",
            "virt.",
            "kernel.param.",
        ],
        "bandwidth" => &[
            "cpu.cache.",
            "mem.",
            "cgroup.memory.",
            "virt.",
            "libc.version",
            "libc.tunables",
            "libc.ld_so.x86_",
            "env.GLIBC_TUNABLES",
        ],
        "coherency" => &[
            "cpu.smt",
            "cpu.logical_cores",
            "cpu.physical_cores",
            "cpu.sockets",
            "cpu.online",
            "cpu.idle.",
            "cpu.cache.l3.shared_cpus",
            "mem.numa.",
            "cgroup.cpu",
            "process.affinity",
            "virt.",
            "kernel.param.",
        ],
        "clock" => &[
            "kernel.clocksource",
            "kernel.release",
            "kernel.param.",
            "virt.",
        ],
        "spawn" => &[
            "kernel.",
            "mitigation.",
            "virt.",
            "cgroup.",
            "libc.version",
            "mem.thp.",
            "kernel.aslr",
        ],
        _ => &[],
    }
}

/// Smallest relative change called significant.
pub const SIGNIFICANT_CHANGE: f64 = 0.10;

/// The verdict rule of probe diffs: the one verdict function of
/// perfsleuth-stats, on spread bands, with a 10 % threshold (probes compare
/// machines, whose differences worth naming are large).
const RULE: VerdictRule = VerdictRule {
    alpha: 0.05,
    noise_threshold: SIGNIFICANT_CHANGE,
    min_samples: 1,
    no_change_within: 0.0,
};

/// How far a probe's numbers move between two runs on the same machine,
/// as a share of the value, assumed where nothing was learned: above the
/// largest spread (max/min − 1) of each probe's headline numbers over ten
/// `probe --quick` runs in a row on the 2-vCPU KVM guest of docs/PROBES.md
/// (calls 0.82, syscall 0.40, memory latencies 0.14 but the L3 latency,
/// measured where no step was found, 1.38; bandwidth 0.12, coherency 0.71,
/// clock 0.46, spawn 0.79). A run's own spread (its samples' inter-quartile
/// range) misses this: two runs minutes apart on that machine differed by
/// 10–45 % in 13 of 31 headline numbers.
pub fn assumed_noise(probe: &str, metric: &str) -> f64 {
    match (probe, metric) {
        ("memory", "l3_latency") => 1.5,
        ("calls" | "coherency" | "spawn", _) => 1.0,
        ("syscall", _) => 0.5,
        ("clock", _) => 0.6,
        ("memory", _) => 0.2,
        ("bandwidth", _) => 0.2,
        _ => 0.5,
    }
}

/// The between-run noise of each metric: [`assumed_noise`], widened where
/// stored probe runs of the same machine type spread further (max/min − 1;
/// see [`NoiseBands::band`]). The `Default` assumes none (each run's own
/// spread only, and the learned spread), for tests of the rule.
#[derive(Debug, Clone, Default)]
pub struct NoiseBands {
    /// (probe, metric) → learned relative spread between runs.
    pub learned: std::collections::HashMap<(String, String), f64>,
    /// How many runs the learned bands come from (0: none learned).
    pub runs: usize,
    /// Whether metrics with nothing learned get [`assumed_noise`].
    pub assume: bool,
}

impl NoiseBands {
    /// Learns from the results of several runs of one machine type; needs
    /// at least three runs of a metric (two would only repeat the pair
    /// being compared).
    pub fn learn(runs: &[Vec<ProbeResult>]) -> NoiseBands {
        let mut values: std::collections::HashMap<(String, String), Vec<f64>> = Default::default();
        for run in runs {
            for m in run {
                if m.value.is_finite() && m.value > 0.0 {
                    values
                        .entry((m.probe.clone(), m.metric.clone()))
                        .or_default()
                        .push(m.value);
                }
            }
        }
        let learned = values
            .into_iter()
            .filter(|(_, v)| v.len() >= 3)
            .map(|(k, v)| {
                let (lo, hi) = v.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
                    (lo.min(*x), hi.max(*x))
                });
                (k, hi / lo - 1.0)
            })
            .collect();
        NoiseBands {
            learned,
            runs: runs.len(),
            assume: true,
        }
    }

    /// Nothing learned: the assumed noise for every metric.
    pub fn assumed() -> NoiseBands {
        NoiseBands {
            assume: true,
            ..NoiseBands::default()
        }
    }

    /// The band for one metric: the learned spread where it is wider than
    /// the assumed one, never narrower. A band learned from other runs
    /// alone missed a pair with one odd run in it: on the 2-vCPU guest, 5 of
    /// 9 A/A pairs of ten quick runs exited 1 with it (one run had every call
    /// 1.6–1.8× faster), 0 of 9 with learning that only widens.
    pub fn band(&self, probe: &str, metric: &str) -> f64 {
        let assumed = if self.assume {
            assumed_noise(probe, metric)
        } else {
            0.0
        };
        self.learned
            .get(&(probe.to_string(), metric.to_string()))
            .map_or(assumed, |l| l.max(assumed))
    }
}

/// [`diff`] of two stored runs' probes and machines under the assumed noise
/// bands: what the report's probe section and `compare`'s notes show when
/// no probe history is at hand.
pub fn diff_runs(a: &perfsleuth_model::Run, b: &perfsleuth_model::Run) -> Vec<ProbeDelta> {
    diff(
        &a.probes,
        &a.environment,
        &b.probes,
        &b.environment,
        &NoiseBands::assumed(),
    )
}

/// Pairs the metrics of two probe results (by probe and metric name, in A's
/// order) and explains each difference with the environment facts that
/// changed under that probe's prefixes. A difference is significant when it
/// is at least 10 %, beyond both runs' own spreads, and beyond the
/// between-run noise of `noise`. Explanations are listed for every pair
/// (they describe the machines, not the numbers); callers show them where
/// `significant`.
pub fn diff(
    a: &[ProbeResult],
    a_env: &Environment,
    b: &[ProbeResult],
    b_env: &Environment,
    noise: &NoiseBands,
) -> Vec<ProbeDelta> {
    let mut cache: Vec<(String, Vec<String>)> = Vec::new();
    let mut out = Vec::new();
    for ma in a {
        let Some(mb) = b
            .iter()
            .find(|m| m.probe == ma.probe && m.metric == ma.metric && m.unit == ma.unit)
        else {
            continue;
        };
        if !(ma.value.is_finite() && mb.value.is_finite()) || ma.value == 0.0 {
            continue;
        }
        let ratio = mb.value / ma.value;
        let worse = if ma.lower_is_better {
            ratio > 1.0
        } else {
            ratio < 1.0
        };
        // Both runs' spreads, and what runs of one machine move by anyway.
        let within = (ma.spread.abs() * ma.value.abs() + mb.spread.abs() * mb.value.abs()) / 2.0;
        let between = noise.band(&ma.probe, &ma.metric) * ma.value.abs();
        let band = within.max(between);
        let direction = if ma.lower_is_better {
            Direction::LowerIsBetter
        } else {
            Direction::HigherIsBetter
        };
        let evidence = Evidence::Bands {
            change: ratio - 1.0,
            band: band / ma.value.abs(),
        };
        let significant = matches!(
            decide(&RULE, &evidence, direction),
            Verdict::Regressed | Verdict::Improved
        );
        let explanations = match cache.iter().find(|(p, _)| *p == ma.probe) {
            Some((_, e)) => e.clone(),
            None => {
                let e = explain(&ma.probe, a_env, b_env);
                cache.push((ma.probe.clone(), e.clone()));
                e
            }
        };
        out.push(ProbeDelta {
            probe: ma.probe.clone(),
            metric: ma.metric.clone(),
            unit: ma.unit.clone(),
            a: ma.value,
            b: mb.value,
            ratio,
            worse,
            significant,
            noise: band / ma.value.abs(),
            headline: ma.headline || mb.headline,
            explanations,
        });
    }
    out
}

/// The facts under `probe`'s prefixes whose values differ, "key: A → B".
/// Facts unknown on either side are left out (an unreadable fact explains
/// nothing).
pub fn explain(probe: &str, a: &Environment, b: &Environment) -> Vec<String> {
    let prefixes: Vec<&str> = fact_prefixes(probe).iter().chain(COMMON).copied().collect();
    let mut keys: Vec<&String> = a.facts.keys().chain(b.facts.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| prefixes.iter().any(|p| k.starts_with(p)))
        .filter_map(|k| {
            let va = a.get(k);
            let vb = b.get(k);
            if va == vb || va == Some(UNKNOWN) || vb == Some(UNKNOWN) {
                return None;
            }
            let (sa, sb) = shorten(k, va.unwrap_or("absent"), vb.unwrap_or("absent"));
            Some(format!("{k}: {sa} → {sb}"))
        })
        .collect()
}

const MAX_VALUE: usize = 40;

/// Short forms of two differing values: mitigation states by their first
/// differing clause without the "Mitigation: " prefix, word lists (flags,
/// command lines) by what was added and removed, anything else cut to 40
/// characters.
fn shorten(key: &str, a: &str, b: &str) -> (String, String) {
    if key.starts_with("mitigation.") {
        let clauses = |s: &str| -> Vec<String> {
            s.split(';')
                .map(|c| {
                    c.trim()
                        .trim_start_matches("Mitigation:")
                        .trim()
                        .to_string()
                })
                .collect()
        };
        let (ca, cb) = (clauses(a), clauses(b));
        let k = (0..ca.len().max(cb.len()))
            .find(|&i| ca.get(i) != cb.get(i))
            .unwrap_or(0);
        let pick = |c: &[String]| {
            cut(c
                .get(k)
                .map(String::as_str)
                .filter(|s| !s.is_empty())
                .unwrap_or(MISSING))
        };
        return (pick(&ca), pick(&cb));
    }
    if a.len() > MAX_VALUE && b.len() > MAX_VALUE && a.contains(' ') && b.contains(' ') {
        let wa: Vec<&str> = a.split_whitespace().collect();
        let wb: Vec<&str> = b.split_whitespace().collect();
        let removed: Vec<&str> = wa.iter().filter(|w| !wb.contains(w)).copied().collect();
        let added: Vec<&str> = wb.iter().filter(|w| !wa.contains(w)).copied().collect();
        if !removed.is_empty() || !added.is_empty() {
            let show = |sign: char, ws: &[&str]| {
                if ws.is_empty() {
                    "(none)".to_string()
                } else {
                    cut(&ws
                        .iter()
                        .map(|w| format!("{sign}{w}"))
                        .collect::<Vec<_>>()
                        .join(" "))
                }
            };
            return (show('-', &removed), show('+', &added));
        }
    }
    (cut(a), cut(b))
}

fn cut(s: &str) -> String {
    if s.chars().count() <= MAX_VALUE {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(MAX_VALUE - 1).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfsleuth_model::ImpactClass;

    fn m(probe: &str, metric: &str, value: f64, spread: f64, lower: bool) -> ProbeResult {
        ProbeResult {
            probe: probe.into(),
            metric: metric.into(),
            value,
            unit: "ns".into(),
            lower_is_better: lower,
            cycles: None,
            spread,
            stable: spread <= 0.1,
            headline: true,
            note: None,
        }
    }

    fn env(pairs: &[(&str, &str)]) -> Environment {
        let mut e = Environment::default();
        for (k, v) in pairs {
            e.set(*k, *v, ImpactClass::Performance);
        }
        e
    }

    #[test]
    fn a_spectre_v2_change_explains_the_indirect_call() {
        let a_env = env(&[
            (
                "mitigation.spectre_v2",
                "Mitigation: Retpolines; STIBP: disabled; RSB filling",
            ),
            ("kernel.release", "6.1.0"),
            ("cpu.model", "AMD EPYC"),
            ("mem.thp.enabled", "madvise"),
            ("kernel.clocksource", "tsc"),
        ]);
        let b_env = env(&[
            (
                "mitigation.spectre_v2",
                "Mitigation: IBRS; STIBP: disabled; RSB filling",
            ),
            ("kernel.release", "6.1.0"),
            ("cpu.model", "AMD EPYC"),
            ("mem.thp.enabled", "always"),
            ("kernel.clocksource", "tsc"),
        ]);
        let a = vec![
            m("calls", "inline_loop", 0.50, 0.01, true),
            m("calls", "indirect_call", 2.0, 0.02, true),
            m("memory", "l2_latency", 3.4, 0.02, true),
            m("bandwidth", "read_bandwidth", 20.0, 0.02, false),
        ];
        let b = vec![
            m("calls", "indirect_call", 9.8, 0.03, true),
            m("calls", "inline_loop", 0.51, 0.01, true),
            m("memory", "l2_latency", 3.5, 0.02, true),
            m("bandwidth", "read_bandwidth", 15.0, 0.02, false),
        ];
        let d = diff(&a, &a_env, &b, &b_env, &NoiseBands::default());
        assert_eq!(d.len(), 4);
        let ind = &d[1];
        assert_eq!(ind.metric, "indirect_call");
        assert!((ind.ratio - 4.9).abs() < 1e-9);
        assert!(ind.worse && ind.significant);
        assert_eq!(
            ind.explanations,
            vec!["mitigation.spectre_v2: Retpolines → IBRS"]
        );
        let inl = &d[0];
        assert!(!inl.significant, "2 % is not significant");
        // The memory probe is not moved by spectre_v2, but by THP.
        assert_eq!(d[2].explanations, vec!["mem.thp.enabled: madvise → always"]);
        assert!(!d[2].significant);
        // Higher is better: lower bandwidth is worse.
        assert!(d[3].worse && d[3].significant);
    }

    #[test]
    fn run_to_run_noise_is_assumed_or_learned_and_must_be_cleared() {
        let e = Environment::default();
        let run = |v: f64| vec![m("calls", "direct_call", v, 0.02, true)];
        // 1.4× with tight spreads: a difference by the runs' own spreads,
        // not beyond the 2× the same VM moved by between runs.
        let (a, b) = (run(2.0), run(2.8));
        assert!(diff(&a, &e, &b, &e, &NoiseBands::default())[0].significant);
        let d = diff(&a, &e, &b, &e, &NoiseBands::assumed());
        assert!(!d[0].significant && d[0].noise == 1.0, "{:?}", d[0]);
        // Learned from three runs of a quiet machine (spread 5 %): the band
        // stays the assumed one, since learning only widens it.
        let quiet = NoiseBands::learn(&[run(2.0), run(2.1), run(2.05)]);
        assert_eq!(quiet.runs, 3);
        let d = diff(&a, &e, &b, &e, &quiet);
        assert!(!d[0].significant && d[0].noise == 1.0, "{:?}", d[0]);
        // A noisier history widens it (3.5× apart: a band of 2.5).
        let noisy = NoiseBands::learn(&[run(2.0), run(7.0), run(4.0)]);
        assert!((noisy.band("calls", "direct_call") - 2.5).abs() < 1e-9);
        // Without the assumption, the learned 5 % is the band and 1.4× is real.
        let unassumed = NoiseBands {
            assume: false,
            ..quiet
        };
        let d = diff(&a, &e, &b, &e, &unassumed);
        assert!(
            d[0].significant && (d[0].noise - 0.05).abs() < 1e-9,
            "{:?}",
            d[0]
        );
        // Two runs teach nothing (they would only repeat the pair compared).
        let two = NoiseBands::learn(&[run(2.0), run(2.8)]);
        assert!(two.learned.is_empty());
    }

    #[test]
    fn spread_bands_that_overlap_are_not_significant() {
        let e = Environment::default();
        let a = vec![m("spawn", "spawn_true", 100.0, 0.30, true)];
        let b = vec![m("spawn", "spawn_true", 115.0, 0.30, true)];
        let d = diff(&a, &e, &b, &e, &NoiseBands::default());
        assert!(d[0].worse && !d[0].significant);
        let b = vec![m("spawn", "spawn_true", 160.0, 0.05, true)];
        let d = diff(&a, &e, &b, &e, &NoiseBands::default());
        assert!(d[0].significant);
        // A size carries the ladder's resolution as its spread: one √2 step
        // is not significant, two are.
        let size = |v: f64| ProbeResult {
            unit: "bytes".into(),
            lower_is_better: false,
            ..m("memory", "l3_size", v, 2f64.sqrt() - 1.0, false)
        };
        let mib = 1024.0 * 1024.0;
        let d = diff(
            &[size(8.0 * mib)],
            &e,
            &[size(11.3 * mib)],
            &e,
            &NoiseBands::default(),
        );
        assert!(!d[0].significant && !d[0].worse);
        let d = diff(
            &[size(8.0 * mib)],
            &e,
            &[size(4.0 * mib)],
            &e,
            &NoiseBands::default(),
        );
        assert!(d[0].significant && d[0].worse);
        // Unpaired metrics are left out.
        let b = vec![m("spawn", "fork_wait", 160.0, 0.05, true)];
        assert!(diff(&a, &e, &b, &e, &NoiseBands::default()).is_empty());
    }

    #[test]
    fn explanations_shorten_and_skip_unknowns() {
        let a = env(&[
            (
                "mitigation.spectre_v2",
                "Mitigation: Retpolines; STIBP: disabled; RSB filling",
            ),
            ("kernel.param.mitigations", "auto"),
            ("cpu.microcode", UNKNOWN),
            ("virt.hypervisor", "KVM"),
            ("kernel.release", "4.4.0-112-generic"),
        ]);
        let b = env(&[
            (
                "mitigation.spectre_v2",
                "Mitigation: Retpolines; STIBP: forced; RSB filling",
            ),
            ("cpu.microcode", "0x10"),
            ("virt.hypervisor", "VMware"),
            ("kernel.release", "4.4.0-116-generic"),
        ]);
        let e = explain("calls", &a, &b);
        assert_eq!(
            e,
            vec![
                "kernel.param.mitigations: auto → absent",
                "kernel.release: 4.4.0-112-generic → 4.4.0-116-generic",
                "mitigation.spectre_v2: STIBP: disabled → STIBP: forced",
                "virt.hypervisor: KVM → VMware",
            ]
        );
        let flags_a = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge constant_tsc";
        let flags_b = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge nonstop_tsc";
        assert_eq!(
            shorten("cpu.flags", flags_a, flags_b),
            ("-constant_tsc".to_string(), "+nonstop_tsc".to_string())
        );
        let (l, _) = shorten("x", &"y".repeat(100), "z");
        assert_eq!(l.chars().count(), MAX_VALUE);
        assert!(
            explain("no-such-probe", &a, &b)
                .iter()
                .all(|x| x.starts_with("virt.hypervisor"))
        );
    }
}
