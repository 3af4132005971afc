//! From an environment diff to experiments: each difference this machine
//! can reproduce for one process becomes a set of variant settings; each
//! one it cannot is listed with the reason.

use perfsleuth_env::{Change, portable};
use perfsleuth_model::{Environment, ImpactClass};
use std::collections::BTreeSet;

/// What the experiments start from and what they are.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Plan {
    /// The side the experiments start from, as a set-up: its recorded
    /// environment variables where this process's differ, and its
    /// `GLIBC_TUNABLES` entries.
    pub base: Setup,
    /// The from side's `GLIBC_TUNABLES` differs from this process's, so the
    /// base writes (or removes) it.
    pub base_tunables: bool,
    /// One experiment per difference that can be reproduced here.
    pub experiments: Vec<Experiment>,
    /// The differences that cannot be, with the reason.
    pub untested: Vec<Untested>,
    /// Remarks on how an experiment was derived.
    pub notes: Vec<String>,
}

/// Environment variables and `GLIBC_TUNABLES` entries of a set-up.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Setup {
    /// Variables set (`Some`) or removed (`None`), GLIBC_TUNABLES aside.
    pub env: Vec<(String, Option<String>)>,
    /// The `GLIBC_TUNABLES` entries, in order (`None`: that tunable removed).
    pub tunables: Vec<(String, Option<String>)>,
    /// `glibc.cpu.hwcaps` entries added to whatever mask the set-up has
    /// (the ISA experiment), where `tunables` replaces the entry.
    pub hwcaps_add: Vec<String>,
    /// Settings of the process (`cpus:…`, `thp:off`, `aslr:off`).
    pub process: Vec<String>,
}

/// One hypothesis tested by running under it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Experiment {
    /// The variant's name (`isa`, `cache-sizes`, `env.MALLOC_ARENA_MAX`, …).
    pub name: String,
    /// The facts it reproduces.
    pub facts: Vec<String>,
    /// What it does, in words.
    pub what: String,
    /// Changes on top of the base set-up.
    pub change: Setup,
    /// Other variant settings (`cpus:…`, `thp:off`, `cache-model:…`).
    pub settings: Vec<String>,
}

/// A difference no experiment here reproduces.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Untested {
    /// The fact's key.
    pub key: String,
    /// What differs, in words.
    pub summary: String,
    /// Why it cannot be tested here.
    pub reason: String,
}

/// What derivation needs to know about this machine and the runs.
pub(crate) struct Context<'a> {
    /// This machine's fingerprint.
    pub here: &'a Environment,
    /// The CPU features the benchmark sees here, as `cpu.flags` names (in
    /// simulation, those valgrind presents): what a mask works on.
    pub flags: String,
    /// The runs are simulation runs.
    pub simulation: bool,
    /// They were counted with the portable profile, which fixes GLIBC_TUNABLES.
    pub portable: bool,
    /// The tunables this glibc lists (`ld.so --list-tunables`); `None`
    /// where it could not be read.
    pub tunables: Option<BTreeSet<String>>,
    /// The CPUs this process may run on (its affinity).
    pub cpus: Vec<usize>,
}

/// The `GLIBC_TUNABLES` entries recorded on a side (`env.GLIBC_TUNABLES`,
/// or `libc.tunables` of an older run), and whether it was set.
fn recorded_tunables(env: &Environment) -> (Vec<(String, String)>, bool) {
    match env
        .get("env.GLIBC_TUNABLES")
        .or_else(|| env.get("libc.tunables"))
    {
        None | Some("unset") => (Vec::new(), false),
        Some(v) => (portable::tunable_pairs(v), true),
    }
}

/// The environment variables recorded on a side (`env.NAME`), GLIBC_TUNABLES aside.
fn recorded_env(env: &Environment) -> Vec<(String, Option<String>)> {
    env.facts
        .iter()
        .filter_map(|(k, f)| {
            let name = k.strip_prefix("env.")?;
            (name != "GLIBC_TUNABLES" && f.value != perfsleuth_model::UNKNOWN).then(|| {
                let v = (f.value != "unset").then(|| f.value.clone());
                (name.to_string(), v)
            })
        })
        .collect()
}

impl Plan {
    /// The settings of the base set-up (the `from` side's variables where
    /// this process's differ).
    pub(crate) fn base_settings(&self) -> Vec<String> {
        render(
            &self.base,
            &Setup::default(),
            &self.base.process,
            self.base_tunables,
        )
    }

    /// The settings of `e`: the base set-up with its changes on top.
    pub(crate) fn settings(&self, e: &Experiment) -> Vec<String> {
        // The experiment's own process settings replace the base's of that kind.
        let mut other: Vec<String> = self
            .base
            .process
            .iter()
            .filter(|b| !e.settings.iter().any(|s| kind(s) == kind(b)))
            .cloned()
            .collect();
        other.extend(e.settings.iter().cloned());
        render(&self.base, &e.change, &other, self.base_tunables)
    }
}

/// The changes of every one of `experiments` at once (when there are
/// several): what they explain together.
pub(crate) fn all_together(experiments: &[&Experiment]) -> Option<Experiment> {
    if experiments.len() < 2 {
        return None;
    }
    let mut change = Setup::default();
    let mut settings: Vec<String> = Vec::new();
    let mut facts = Vec::new();
    for e in experiments {
        change.env.extend(e.change.env.iter().cloned());
        change.tunables.extend(e.change.tunables.iter().cloned());
        change
            .hwcaps_add
            .extend(e.change.hwcaps_add.iter().cloned());
        // Two settings of one kind (`cpus:`) cannot both hold: the later wins.
        for s in &e.settings {
            settings.retain(|o| kind(o) != kind(s));
            settings.push(s.clone());
        }
        facts.extend(e.facts.iter().cloned());
    }
    Some(Experiment {
        name: "all".into(),
        facts,
        what: format!(
            "every experiment above at once ({})",
            experiments
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        change,
        settings,
    })
}

/// A setting's kind: `cpus` of `cpus:0-3`.
fn kind(setting: &str) -> &str {
    setting.split(':').next().unwrap_or("")
}

/// Variant settings for `base` with `change` on top, then `other`.
fn render(base: &Setup, change: &Setup, other: &[String], base_tunables: bool) -> Vec<String> {
    let mut env = base.env.clone();
    for (k, v) in &change.env {
        match env.iter_mut().find(|(e, _)| e == k) {
            Some(slot) => slot.1 = v.clone(),
            None => env.push((k.clone(), v.clone())),
        }
    }
    let mut tunables = base.tunables.clone();
    for (k, v) in &change.tunables {
        match tunables.iter_mut().find(|(e, _)| e == k) {
            Some(slot) => slot.1 = v.clone(),
            None => tunables.push((k.clone(), v.clone())),
        }
    }
    if !change.hwcaps_add.is_empty() {
        // A mask adds to the set-up's own: the features it already masks stay masked.
        const HWCAPS: &str = "glibc.cpu.hwcaps";
        let mut entries: Vec<String> = tunables
            .iter()
            .find(|(k, _)| k == HWCAPS)
            .and_then(|(_, v)| v.clone())
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|e| !e.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        for e in &change.hwcaps_add {
            if !entries.contains(e) {
                entries.push(e.clone());
            }
        }
        let value = Some(entries.join(","));
        match tunables.iter_mut().find(|(k, _)| k == HWCAPS) {
            Some(slot) => slot.1 = value,
            None => tunables.push((HWCAPS.to_string(), value)),
        }
    }
    let kept: Vec<String> = tunables
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={v}")))
        .collect();
    let mut out: Vec<String> = env
        .iter()
        .map(|(k, v)| match v {
            Some(v) => format!("env:{k}={v}"),
            None => format!("unset:{k}"),
        })
        .collect();
    if base_tunables || !change.tunables.is_empty() || !change.hwcaps_add.is_empty() {
        out.push(if kept.is_empty() {
            "unset:GLIBC_TUNABLES".into()
        } else {
            format!("env:GLIBC_TUNABLES={}", kept.join(":"))
        });
    }
    out.extend(other.iter().cloned());
    out
}

/// The base set-up's variables: the from side's GLIBC_TUNABLES and
/// environment variables, where this process's differ.
fn base_variables(from: &Environment, cx: &Context, p: &mut Plan) {
    let (from_tunables, from_set) = recorded_tunables(from);
    let (here_tunables, here_set) = recorded_tunables(cx.here);
    p.base.tunables = from_tunables
        .iter()
        .map(|(k, v)| (k.clone(), Some(v.clone())))
        .collect();
    // A side's own GLIBC_TUNABLES still applies under the profile: the
    // runner merges a set-up's value into it as the side's run did.
    p.base_tunables = from_set != here_set || from_tunables != here_tunables;
    let here_env = recorded_env(cx.here);
    for (k, v) in recorded_env(from) {
        let here = here_env
            .iter()
            .find(|(h, _)| *h == k)
            .map(|(_, v)| v.clone());
        if here.as_ref() != Some(&v) {
            p.base.env.push((k, v));
        }
    }
}

/// The from side's process state (CPUs, THP, ASLR) the base takes on where
/// this machine's differs; what one process cannot take on, by kind, with
/// why (the experiments of that kind would start from the wrong state).
fn process_state(from: &Environment, cx: &Context, p: &mut Plan) -> Vec<(&'static str, String)> {
    let mut stuck: Vec<(&str, String)> = Vec::new();
    let here_cpus = cx.cpus.clone();
    if let Some(list) = from
        .get("process.affinity")
        .and_then(perfsleuth_measure::parse_cpu_list)
        && list != here_cpus
    {
        if list.iter().all(|c| here_cpus.contains(c)) {
            p.base.process.push(format!("cpus:{}", cpu_text(&list)));
        } else {
            stuck.push((
                "cpus",
                format!(
                    "the side the experiments start from ran on CPUs {}, which this process cannot use (it has {})",
                    cpu_text(&list),
                    cpu_text(&here_cpus)
                ),
            ));
        }
    }
    match (from.get("mem.thp.enabled"), cx.here.get("mem.thp.enabled")) {
        (Some("never"), Some(h)) if h != "never" => p.base.process.push("thp:off".into()),
        (Some(f), Some("never")) if f != "never" => stuck.push((
            "thp",
            format!("transparent huge pages are off here, and a process cannot turn them on as the starting side's `{f}`"),
        )),
        _ => {}
    }
    match (from.get("kernel.aslr"), cx.here.get("kernel.aslr")) {
        (Some("0"), Some(h)) if h != "0" => p.base.process.push("aslr:off".into()),
        (Some(f), Some("0")) if f != "0" => stuck.push((
            "aslr",
            format!("randomisation is off here, and a process cannot turn it on as the starting side's {f}"),
        )),
        _ => {}
    }
    stuck
}

/// Why no experiment moves glibc's dispatch or cache sizes in simulation
/// runs counted with the portable profile.
const FIXED_REASON: &str = "the simulation runs were counted with the portable profile, which fixes glibc's CPU dispatch and cache sizes on both sides: rerun both sides with --no-portable to test it";

/// The experiments that move a set-up like `from` towards `to`, given the
/// differences `changes` between them.
pub(crate) fn plan(from: &Environment, to: &Environment, changes: &[Change], cx: &Context) -> Plan {
    let mut d = Derivation::new(from, to, cx);
    let significant: Vec<&Change> = changes
        .iter()
        .filter(|c| c.class != ImpactClass::Context)
        .collect();
    d.isa(&significant);
    d.cache_sizes(&significant);
    for c in significant {
        d.difference(c);
    }
    d.p
}

/// A plan in the making: the sides, what this machine can do, and the facts
/// already turned into experiments (or set aside).
struct Derivation<'a> {
    from: &'a Environment,
    to: &'a Environment,
    cx: &'a Context<'a>,
    p: Plan,
    /// Under the portable profile glibc's dispatch and cache sizes are the
    /// profile's on both sides: no experiment can move them.
    tunables_fixed: bool,
    /// The process state the base cannot take on, by kind, with why.
    stuck: Vec<(&'static str, String)>,
    /// Facts (and kinds) already handled.
    done: BTreeSet<&'a str>,
}

impl<'a> Derivation<'a> {
    /// The base set-up: the from side's variables and process state, where
    /// this process's differ.
    fn new(from: &'a Environment, to: &'a Environment, cx: &'a Context<'a>) -> Self {
        let mut p = Plan::default();
        base_variables(from, cx, &mut p);
        let tunables_fixed = cx.simulation && cx.portable;
        let mut done: BTreeSet<&str> = BTreeSet::new();
        if tunables_fixed && recorded_tunables(from) != recorded_tunables(to) {
            // The profile's merged value differs by the sides' own tunables,
            // which the GLIBC_TUNABLES experiments test: not a separate
            // "measured differently" fact.
            done.insert("sim.glibc_tunables");
        }
        // Where one process cannot take on the from side's state, the
        // experiments of that kind would start from the wrong state and are
        // not run.
        let stuck = process_state(from, cx, &mut p);
        Derivation {
            from,
            to,
            cx,
            p,
            tunables_fixed,
            stuck,
            done,
        }
    }

    fn untested(&mut self, c: &Change, reason: String) {
        self.p.untested.push(Untested {
            key: c.key.clone(),
            summary: c.summary.clone(),
            reason,
        });
    }

    /// Why the base could not take on the from side's state of `kind`.
    fn stuck_reason(&self, kind: &str) -> Option<String> {
        self.stuck
            .iter()
            .find(|(s, _)| *s == kind)
            .map(|(_, why)| why.clone())
    }

    /// The ISA: one mask for every feature the other side lacks.
    fn isa(&mut self, significant: &[&'a Change]) {
        const ISA: [&str; 4] = [
            "cpu.flags",
            "cpu.isa_level",
            "libc.hwcaps",
            "libc.ld_so.isa_level",
        ];
        let isa: Vec<&Change> = significant
            .iter()
            .copied()
            .filter(|c| ISA.contains(&c.key.as_str()))
            .collect();
        if isa.is_empty() {
            return;
        }
        let lead = isa[0];
        match self.to.get("cpu.flags") {
            None => self.untested(lead, "the other side recorded no CPU flags".into()),
            Some(to_flags) => {
                let e = portable::emulate_isa(self.cx.flags.as_str(), to_flags);
                if !e.missing_here.is_empty() {
                    self.untested(
                        lead,
                        format!(
                            "the other machine has {}, which this CPU lacks: a mask can only take features away",
                            e.missing_here.join(", ")
                        ),
                    );
                }
                if !e.no_switch.is_empty() && !e.hwcaps.is_empty() && !self.tunables_fixed {
                    self.p.notes.push(format!(
                        "the ISA experiment leaves {} on: glibc has no switch for {}",
                        e.no_switch.join(", "),
                        if e.no_switch.len() == 1 { "it" } else { "them" }
                    ));
                }
                if e.hwcaps.is_empty() {
                    if e.missing_here.is_empty() {
                        self.untested(
                            lead,
                            "the features that differ are none glibc dispatches on: nothing to mask".into(),
                        );
                    }
                } else if self.tunables_fixed {
                    self.untested(lead, FIXED_REASON.into());
                } else {
                    self.p.experiments.push(Experiment {
                        name: "isa".into(),
                        facts: isa.iter().map(|c| c.key.clone()).collect(),
                        what: format!(
                            "glibc dispatches as on the other CPU: {} masked{}",
                            e.masked.join(", "),
                            if self.cx.simulation {
                                ""
                            } else {
                                " (glibc's choice only; code compiled for this CPU keeps its instructions)"
                            }
                        ),
                        change: Setup {
                            hwcaps_add: e.hwcaps.clone(),
                            ..Setup::default()
                        },
                        settings: Vec::new(),
                    });
                }
            }
        }
        for c in &isa {
            self.done.insert(c.key.as_str());
        }
    }

    /// Cache sizes: glibc's thresholds as the other side's glibc derived
    /// them, and in simulation the other side's cache geometry.
    fn cache_sizes(&mut self, significant: &[&'a Change]) {
        let cache: Vec<&Change> = significant
            .iter()
            .copied()
            .filter(|c| {
                (c.key.starts_with("cpu.cache.") && !c.key.ends_with(".shared_cpus"))
                    || (c.key.starts_with("libc.ld_so.x86_"))
            })
            .collect();
        if cache.is_empty() {
            return;
        }
        let lead = cache[0];
        let (tunables, derived) = self.cache_thresholds();
        let facts: Vec<String> = cache.iter().map(|c| c.key.clone()).collect();
        if tunables.is_empty() {
            if !self.cx.simulation {
                self.untested(
                    lead,
                    "glibc's cache thresholds come out the same here: no tunable to set".into(),
                );
            }
        } else if self.tunables_fixed {
            self.untested(lead, FIXED_REASON.into());
        } else {
            if derived {
                self.p.notes.push(
                    "the other side recorded no ld.so cache values: the cache-sizes experiment sets glibc's data and shared sizes from its L1d and last-level caches".into(),
                );
            }
            self.p.experiments.push(Experiment {
                name: "cache-sizes".into(),
                facts: facts.clone(),
                what: format!(
                    "glibc's cache sizes and thresholds as on the other machine ({})",
                    tunables
                        .iter()
                        .map(|(k, v)| format!(
                            "{}={}",
                            k.trim_start_matches("glibc.cpu."),
                            v.as_deref().unwrap_or("")
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                change: Setup {
                    tunables,
                    ..Setup::default()
                },
                settings: Vec::new(),
            });
        }
        if self.cx.simulation {
            match cache_geometry(self.to) {
                Some(spec) => self.p.experiments.push(Experiment {
                    name: "cache-model".into(),
                    facts,
                    what: format!("the simulated caches of the other machine ({spec})"),
                    change: Setup::default(),
                    settings: vec![format!("cache-model:{spec}")],
                }),
                None => self.untested(
                    lead,
                    "the other side recorded no complete L1i/L1d/last-level geometry to simulate"
                        .into(),
                ),
            }
        }
        for c in &cache {
            self.done.insert(c.key.as_str());
        }
    }

    /// The cache tunables this glibc lists whose value on the other side
    /// differs from this one's, and whether a value had to be derived from
    /// the cache sizes (no ld.so value recorded).
    fn cache_thresholds(&self) -> (Vec<(String, Option<String>)>, bool) {
        let size = |env: &Environment, k: &str| env.get(k).and_then(perfsleuth_probe::parse_size);
        let mut tunables = Vec::new();
        let mut derived = false;
        for short in [
            "x86_data_cache_size",
            "x86_shared_cache_size",
            "x86_non_temporal_threshold",
            "x86_rep_movsb_threshold",
            "x86_rep_stosb_threshold",
        ] {
            let name = format!("glibc.cpu.{short}");
            if self
                .cx
                .tunables
                .as_ref()
                .is_some_and(|t| !t.contains(&name))
            {
                continue;
            }
            let recorded = size(self.to, &format!("libc.ld_so.{short}"));
            let value = recorded.or_else(|| {
                // An older perfsleuth or glibc recorded no ld.so values:
                // glibc's own starting points, the L1d and last-level sizes.
                let level = match short {
                    "x86_data_cache_size" => vec!["l1d"],
                    "x86_shared_cache_size" => vec!["l3", "l2"],
                    _ => return None,
                };
                derived = true;
                level
                    .iter()
                    .find_map(|l| size(self.to, &format!("cpu.cache.{l}.size")))
            });
            let here = size(self.cx.here, &format!("libc.ld_so.{short}"));
            if let Some(v) = value
                && Some(v) != here
            {
                tunables.push((name, Some(v.to_string())));
            }
        }
        (tunables, derived)
    }

    /// One difference not handled yet: the experiment its kind of fact
    /// calls for, or why there is none.
    fn difference(&mut self, c: &'a Change) {
        let key = c.key.as_str();
        if self.done.contains(key) {
            return;
        }
        if key == "env.GLIBC_TUNABLES" || key == "libc.tunables" {
            self.glibc_tunables(c);
        } else if let Some(name) = key.strip_prefix("env.") {
            self.variable(c, name);
        } else {
            match key {
                "process.affinity" | "cgroup.cpuset" => self.cpus(c),
                "mem.thp.enabled" => self.thp(c),
                "kernel.aslr" => self.aslr(c),
                _ => self.untested(c, fixed_fact(key).into()),
            }
        }
    }

    /// GLIBC_TUNABLES: one experiment per tunable whose value differs.
    fn glibc_tunables(&mut self, c: &Change) {
        if self.done.contains("GLIBC_TUNABLES") {
            return;
        }
        self.done.insert("GLIBC_TUNABLES");
        let (a, _) = recorded_tunables(self.from);
        let (b, _) = recorded_tunables(self.to);
        let mut names: Vec<&String> = Vec::new();
        for (k, _) in a.iter().chain(&b) {
            if !names.contains(&k) {
                names.push(k);
            }
        }
        for name in names {
            let va = a.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v);
            let vb = b.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v);
            if va == vb {
                continue;
            }
            let what = match vb {
                Some(v) => format!("GLIBC_TUNABLES with {name}={v}, as on the other side"),
                None => format!("GLIBC_TUNABLES without {name}, as on the other side"),
            };
            self.p.experiments.push(Experiment {
                name: name.clone(),
                facts: vec![c.key.clone()],
                what,
                change: Setup {
                    tunables: vec![(name.clone(), vb.cloned())],
                    ..Setup::default()
                },
                settings: Vec::new(),
            });
        }
    }

    /// An environment variable `name`: set (or unset) as on the other side.
    fn variable(&mut self, c: &Change, name: &str) {
        let key = c.key.as_str();
        let v = c.after.clone().filter(|v| v != "unset");
        self.p.experiments.push(Experiment {
            name: key.to_string(),
            facts: vec![key.to_string()],
            what: match &v {
                Some(v) => format!("{name}={v}, as on the other side"),
                None => format!("{name} unset, as on the other side"),
            },
            change: Setup {
                env: vec![(name.to_string(), v)],
                ..Setup::default()
            },
            settings: Vec::new(),
        });
    }

    /// The CPUs: the other side's, or as many of this process's, where it
    /// may use that many.
    fn cpus(&mut self, c: &Change) {
        if self.done.contains("cpus") {
            return;
        }
        self.done.insert("cpus");
        let Some(list) = c
            .after
            .as_deref()
            .and_then(perfsleuth_measure::parse_cpu_list)
        else {
            self.untested(c, "the other side's CPU list cannot be read".into());
            return;
        };
        if let Some(why) = self.stuck_reason("cpus") {
            self.untested(c, why);
            return;
        }
        let here_cpus = &self.cx.cpus;
        let (cpus, how) = if list.iter().all(|x| here_cpus.contains(x)) {
            (list.clone(), "the other side's CPUs".to_string())
        } else if list.len() <= here_cpus.len() {
            (
                here_cpus[..list.len()].to_vec(),
                format!(
                    "as many CPUs as the other side had ({}), not the same numbers",
                    list.len()
                ),
            )
        } else {
            let why = format!(
                "the other side ran on {} CPUs; this process may use {}",
                list.len(),
                here_cpus.len()
            );
            self.untested(c, why);
            return;
        };
        let text = cpus
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(",");
        self.p.experiments.push(Experiment {
            name: "cpus".into(),
            facts: vec![c.key.clone()],
            what: format!("run on CPUs {text}: {how}"),
            change: Setup::default(),
            settings: vec![format!("cpus:{text}")],
        });
    }

    /// Transparent huge pages: a process can only turn them off.
    fn thp(&mut self, c: &Change) {
        if let Some(why) = self.stuck_reason("thp") {
            self.untested(c, why);
        } else if c.after.as_deref() == Some("never") {
            self.p.experiments.push(Experiment {
                name: "thp".into(),
                facts: vec![c.key.clone()],
                what: "transparent huge pages off for the benchmarked process, as the other side's never".into(),
                change: Setup::default(),
                settings: vec!["thp:off".into()],
            });
        } else {
            self.untested(
                c,
                "a process can turn transparent huge pages off, never on: the machine's setting decides".into(),
            );
        }
    }

    /// Address-space randomisation: a process can only turn it off.
    fn aslr(&mut self, c: &Change) {
        if let Some(why) = self.stuck_reason("aslr") {
            self.untested(c, why);
        } else if c.after.as_deref() == Some("0") {
            self.p.experiments.push(Experiment {
                name: "aslr".into(),
                facts: vec![c.key.clone()],
                what: "address-space randomisation off for the benchmarked process, as on the other side".into(),
                change: Setup::default(),
                settings: vec!["aslr:off".into()],
            });
        } else {
            self.untested(
                c,
                "a process can turn randomisation off, never on: the machine's setting decides"
                    .into(),
            );
        }
    }
}

fn cpu_text(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// `I1=…/D1=…/LL=…` of a side's recorded caches (the last level is L3,
/// else L2), for `cache-model:`.
fn cache_geometry(env: &Environment) -> Option<String> {
    let geom = |level: &str| -> Option<String> {
        let get = |k: &str| env.get(&format!("cpu.cache.{level}.{k}"));
        let size = perfsleuth_probe::parse_size(get("size")?)?;
        let ways: u64 = get("ways")?.parse().ok()?;
        let line: u64 = get("line")?.parse().ok()?;
        Some(format!("{size},{ways},{line}"))
    };
    Some(format!(
        "I1={}/D1={}/LL={}",
        geom("l1i")?,
        geom("l1d")?,
        geom("l3").or_else(|| geom("l2"))?
    ))
}

/// Why a fact no experiment changes cannot be tested here.
fn fixed_fact(key: &str) -> &'static str {
    const WHY: &[(&str, &str)] = &[
        (
            "sim.",
            "how the counts were made differs (valgrind, cache model or portable profile), not the machine: measure both sides the same way",
        ),
        (
            "mitigation.",
            "the kernel's mitigations change only with a reboot (boot parameters): quantified by the probes where both machines ran them",
        ),
        (
            "kernel.",
            "the kernel and its parameters cannot change for one process: quantified by the probes where both machines ran them",
        ),
        ("cpu.microcode", "microcode cannot change for one process"),
        (
            "cpu.freq.",
            "frequency settings belong to the whole machine (root, and not in a VM)",
        ),
        (
            "cpu.boost",
            "boost belongs to the whole machine (root, and not in a VM)",
        ),
        (
            "cpu.",
            "the CPU itself differs: no setting of this machine turns it into the other one",
        ),
        ("mem.numa.", "the NUMA layout of the machine"),
        ("mem.", "the machine's memory size"),
        (
            "libc.version",
            "another glibc: run the program with that glibc's loader to test it",
        ),
        ("libc.", "the C library's own state on the other machine"),
        ("virt.", "the hypervisor or container is the machine's"),
        (
            "cgroup.",
            "the cgroup's limits apply to everything in it: perfsleuth starts the child in its own cgroup",
        ),
        ("os.", "the operating system differs"),
        ("power.", "the machine's power source (battery or mains)"),
    ];
    WHY.iter()
        .find(|(p, _)| key.starts_with(p))
        .map_or("no setting of one process changes it", |(_, w)| w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(facts: &[(&str, &str)]) -> Environment {
        let mut e = Environment::default();
        for (k, v) in facts {
            let class = if k.starts_with("cpu.") || k.starts_with("sim.") {
                ImpactClass::Identity
            } else {
                ImpactClass::Performance
            };
            e.set(*k, *v, class);
        }
        e
    }

    fn cx(here: &Environment) -> Context<'_> {
        Context {
            here,
            flags: here.get("cpu.flags").unwrap_or("").to_string(),
            simulation: false,
            portable: false,
            tunables: None,
            cpus: vec![0, 1],
        }
    }

    #[test]
    fn a_tunables_difference_becomes_one_experiment_per_tunable() {
        let a = env(&[
            ("env.GLIBC_TUNABLES", "glibc.malloc.arena_max=2"),
            ("env.OMP_NUM_THREADS", "unset"),
        ]);
        let b = env(&[
            (
                "env.GLIBC_TUNABLES",
                "glibc.malloc.arena_max=2:glibc.cpu.hwcaps=-AVX2",
            ),
            ("env.OMP_NUM_THREADS", "4"),
        ]);
        let here = env(&[
            ("env.GLIBC_TUNABLES", "unset"),
            ("env.OMP_NUM_THREADS", "unset"),
        ]);
        let p = plan(&a, &b, &perfsleuth_env::diff(&a, &b), &cx(&here));
        let names: Vec<&str> = p.experiments.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, vec!["glibc.cpu.hwcaps", "env.OMP_NUM_THREADS"]);
        // The base is side A: its tunables, which this process lacks.
        assert_eq!(
            p.base_settings(),
            vec!["env:GLIBC_TUNABLES=glibc.malloc.arena_max=2"]
        );
        assert_eq!(
            p.settings(&p.experiments[0]),
            vec!["env:GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.cpu.hwcaps=-AVX2"]
        );
        assert_eq!(
            p.settings(&p.experiments[1]),
            vec![
                "env:OMP_NUM_THREADS=4",
                "env:GLIBC_TUNABLES=glibc.malloc.arena_max=2"
            ]
        );
        let all = all_together(&p.experiments.iter().collect::<Vec<_>>()).unwrap();
        assert_eq!(
            p.settings(&all),
            vec![
                "env:OMP_NUM_THREADS=4",
                "env:GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.cpu.hwcaps=-AVX2"
            ]
        );
    }

    #[test]
    fn removing_the_only_tunable_unsets_the_variable() {
        let a = env(&[("env.GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX2")]);
        let b = env(&[("env.GLIBC_TUNABLES", "unset")]);
        let here = a.clone();
        let p = plan(&a, &b, &perfsleuth_env::diff(&a, &b), &cx(&here));
        assert!(p.base_settings().is_empty());
        assert_eq!(p.settings(&p.experiments[0]), vec!["unset:GLIBC_TUNABLES"]);
    }

    #[test]
    fn what_no_process_setting_changes_is_listed_with_its_reason() {
        let a = env(&[
            ("kernel.aslr", "2"),
            ("mem.thp.enabled", "always"),
            ("mitigation.retbleed", "Mitigation: IBRS"),
        ]);
        let b = env(&[
            ("kernel.aslr", "0"),
            ("mem.thp.enabled", "madvise"),
            ("mitigation.retbleed", "Vulnerable"),
        ]);
        let here = a.clone();
        let p = plan(&a, &b, &perfsleuth_env::diff(&a, &b), &cx(&here));
        assert_eq!(p.experiments.len(), 1);
        assert_eq!(p.settings(&p.experiments[0]), vec!["aslr:off"]);
        let keys: Vec<&str> = p.untested.iter().map(|u| u.key.as_str()).collect();
        assert!(keys.contains(&"mem.thp.enabled"), "{keys:?}");
        assert!(keys.contains(&"mitigation.retbleed"), "{keys:?}");
        assert!(p.untested.iter().all(|u| !u.reason.is_empty()));
    }

    #[test]
    fn another_cpus_list_is_reproduced_by_count_where_the_numbers_are_not_online() {
        let a = env(&[("process.affinity", "0-1")]);
        let b = env(&[("process.affinity", "6")]);
        let here = a.clone();
        let p = plan(&a, &b, &perfsleuth_env::diff(&a, &b), &cx(&here));
        assert_eq!(p.settings(&p.experiments[0]), vec!["cpus:0"]);
        let b = env(&[("process.affinity", "0-7")]);
        let p = plan(&a, &b, &perfsleuth_env::diff(&a, &b), &cx(&here));
        assert!(p.experiments.is_empty());
        assert!(p.untested[0].reason.contains("8 CPUs"), "{:?}", p.untested);
    }

    #[test]
    fn portable_simulation_runs_apply_the_other_sides_glibc_tunables() {
        // Case A at the defaults: both sides portable, the candidate's own
        // GLIBC_TUNABLES known. The runner merges it into the profile as the
        // candidate's run did; before, explain refused ("rerun both sides
        // with --no-portable").
        let a = env(&[
            ("env.GLIBC_TUNABLES", "unset"),
            ("sim.glibc_tunables", "glibc.cpu.hwcaps=-AVX512F"),
        ]);
        let b = env(&[
            ("env.GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX2"),
            ("sim.glibc_tunables", "glibc.cpu.hwcaps=-AVX512F,-AVX2"),
        ]);
        let here = a.clone();
        let mut c = cx(&here);
        c.simulation = true;
        c.portable = true;
        let p = plan(&a, &b, &perfsleuth_env::diff(&a, &b), &c);
        assert_eq!(p.experiments.len(), 1, "{p:?}");
        assert_eq!(
            p.settings(&p.experiments[0]),
            vec!["env:GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2"]
        );
        // The profile's merged value differs only through the sides' own
        // tunables: not a separate "measured differently" fact.
        assert!(p.untested.is_empty(), "{:?}", p.untested);
    }

    #[test]
    fn the_base_takes_the_starting_sides_process_state_where_this_one_differs() {
        let a = env(&[("process.affinity", "1"), ("kernel.aslr", "0")]);
        let b = env(&[("process.affinity", "0-1"), ("kernel.aslr", "2")]);
        let here = env(&[("process.affinity", "0-1"), ("kernel.aslr", "2")]);
        let p = plan(&a, &b, &perfsleuth_env::diff(&a, &b), &cx(&here));
        assert_eq!(p.base_settings(), vec!["cpus:1", "aslr:off"]);
        // The CPU experiment replaces the base's CPU set, keeps its ASLR.
        let cpus = p.experiments.iter().find(|e| e.name == "cpus").unwrap();
        assert_eq!(p.settings(cpus), vec!["aslr:off", "cpus:0,1"]);
        // ASLR cannot be turned back on for one process: not tested.
        assert!(
            p.untested.iter().any(|u| u.key == "kernel.aslr"),
            "{:?}",
            p.untested
        );
        // A starting side this process cannot be made into is said, not faked.
        let here = env(&[("process.affinity", "0-1"), ("kernel.aslr", "0")]);
        let a = env(&[("process.affinity", "0-1"), ("kernel.aslr", "2")]);
        let b = env(&[("process.affinity", "0-1"), ("kernel.aslr", "0")]);
        let p = plan(&a, &b, &perfsleuth_env::diff(&a, &b), &cx(&here));
        assert!(p.experiments.is_empty());
        assert!(
            p.untested[0].reason.contains("cannot turn it on"),
            "{:?}",
            p.untested
        );
    }

    #[test]
    fn the_isa_mask_adds_to_the_masks_the_set_up_has() {
        let a = env(&[
            ("cpu.flags", "sse2 avx avx2 erms"),
            ("env.GLIBC_TUNABLES", "glibc.cpu.hwcaps=-ERMS"),
        ]);
        let b = env(&[
            ("cpu.flags", "sse2 avx erms"),
            ("env.GLIBC_TUNABLES", "glibc.cpu.hwcaps=-ERMS"),
        ]);
        let here = a.clone();
        let p = plan(&a, &b, &perfsleuth_env::diff(&a, &b), &cx(&here));
        let isa = p.experiments.iter().find(|e| e.name == "isa").unwrap();
        assert_eq!(
            p.settings(isa),
            vec![
                "env:GLIBC_TUNABLES=glibc.cpu.hwcaps=-ERMS,-AVX2,-AVX_Fast_Unaligned_Load,-Prefer_AVX2_STRCMP"
            ]
        );
    }
}
