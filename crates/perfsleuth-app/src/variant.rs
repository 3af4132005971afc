//! `run --variant NAME=SPEC` and `[variant.NAME]` in perfsleuth.toml: named
//! machine set-ups the same commands run under, interleaved, next to the
//! unchanged one (`base`).
//!
//! A SPEC is settings separated by `;` (values may hold `,` and `=`, as
//! `GLIBC_TUNABLES` does): `env:NAME=VALUE`, `unset:NAME`, `cpus:LIST`
//! (`0`, `0-3,8`) or `cpus:same-core` / `cross-core` / `cross-llc` (two
//! CPUs chosen from the topology), `numa:NODE` (memory bound to one node
//! of several), `aslr:off`, `thp:off`, `nice:N`,
//! `sched:other|batch|idle`, and in simulation mode `cache-model:from:RUN`
//! or `cache-model:I1=SIZE,WAYS,LINE/D1=…/LL=…`.

use crate::error::Fail;
use perfsleuth_measure::parse_cpu_list;
use perfsleuth_runner::{Planned, Variant};
use std::path::Path;

const HINT: &str = "a SPEC is settings separated by `;`: env:NAME=VALUE, unset:NAME, cpus:LIST|same-core|cross-core|cross-llc, numa:NODE, aslr:off, thp:off, nice:N, sched:other|batch|idle, cache-model:from:RUN (simulation)";

/// The name of the unchanged set-up every variant is compared with.
pub const BASE: &str = "base";

/// `NAME=SPEC`, or `NAME` for a `[variant.NAME]` of the config file.
pub fn parse(
    arg: &str,
    config: &std::collections::BTreeMap<String, crate::config::VariantConfig>,
    store: Option<String>,
    notes: &mut Vec<String>,
) -> Result<Variant, Fail> {
    let (name, spec) = match arg.split_once('=') {
        Some((n, s)) => (n.trim(), Some(s)),
        None => (arg.trim(), None),
    };
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(Fail::usage(
            format!("--variant `{arg}`: the name must be letters, digits, - _ or ."),
            "write --variant NAME=SPEC, e.g. --variant pinned='cpus:0'",
        ));
    }
    if name == BASE {
        return Err(Fail::usage(
            "--variant base: `base` is the unchanged set-up every variant is compared with",
            "give the variant another name",
        ));
    }
    let settings: Vec<String> = match spec {
        Some(spec) => spec
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect(),
        None => match config.get(name) {
            Some(c) => c.settings(),
            None => {
                return Err(Fail::usage(
                    format!(
                        "--variant {name}: no SPEC given and no [variant.{name}] in perfsleuth.toml"
                    ),
                    "write --variant NAME=SPEC, or define [variant.NAME] in perfsleuth.toml",
                ));
            }
        },
    };
    if settings.is_empty() {
        return Err(Fail::usage(
            format!("--variant {name} changes nothing"),
            HINT,
        ));
    }
    build(name, settings, store, notes)
}

/// The variant `name` of these settings (each `KEY:VALUE` as in a SPEC),
/// checked as far as it can be before measuring.
pub fn build(
    name: &str,
    settings: Vec<String>,
    store: Option<String>,
    notes: &mut Vec<String>,
) -> Result<Variant, Fail> {
    let mut v = Variant {
        name: name.to_string(),
        ..Variant::default()
    };
    for setting in settings {
        if let Some(model) = setting.strip_prefix("cache-model:") {
            let (cache, fitted) = cache_model(model.trim(), store.clone()).map_err(|f| {
                Fail::usage(
                    format!("--variant {name}: `{setting}`: {}", f.message),
                    f.hint,
                )
            })?;
            notes.extend(fitted.into_iter().map(|n| format!("--variant {name}: {n}")));
            v.cache_model = Some(cache);
            continue;
        }
        apply(&mut v, &setting)
            .map_err(|why| Fail::usage(format!("--variant {name}: `{setting}`: {why}"), HINT))?;
    }
    // The child gets the last change of each variable: keep that one only,
    // in the order first written.
    let mut env: Vec<(String, Option<String>)> = Vec::new();
    for (k, val) in std::mem::take(&mut v.env) {
        match env.iter_mut().find(|(e, _)| *e == k) {
            Some(slot) => slot.1 = val,
            None => env.push((k, val)),
        }
    }
    v.env = env;
    // Tried (and undone) on a throwaway thread now, not found out after base ran.
    perfsleuth_measure::check_possible(&v.settings).map_err(|why| {
        Fail::usage(
            format!("--variant {name}: its settings cannot be used here: {why}"),
            "run as root, or leave out nice and sched:idle",
        )
    })?;
    Ok(v)
}

/// `I1=SIZE,WAYS,LINE/D1=…/LL=…` (bytes), or `from:RUN` (a stored run or
/// an export, whose fingerprint gives L1i, L1d and the last level), fitted
/// to what valgrind can simulate; the notes say what was cut.
pub fn cache_model(
    value: &str,
    store: Option<String>,
) -> Result<(perfsleuth_measure::callgrind::CacheModel, Vec<String>), Fail> {
    use perfsleuth_measure::callgrind::{CacheGeom, CacheModel};
    let hint = "give cache-model:from:RUN (a stored run or an export) or cache-model:I1=32768,8,64/D1=49152,12,64/LL=33554432,16,64";
    let bad = |why: String| Fail::usage(why, hint);
    let mut model = CacheModel::DEFAULT;
    if let Some(spec) = value.strip_prefix("from:") {
        let mut handle = crate::sides::StoreHandle::new(store);
        let side = crate::sides::resolve(spec, &mut handle)?;
        let run = side
            .runs
            .last()
            .ok_or_else(|| bad(format!("`{spec}` has no runs")))?;
        let env = &run.environment;
        let geom = |level: &str| -> Option<CacheGeom> {
            let get = |k: &str| env.get(&format!("cpu.cache.{level}.{k}"));
            Some(CacheGeom {
                size: perfsleuth_probe::parse_size(get("size")?)?,
                assoc: get("ways")?.parse().ok()?,
                line: get("line")?.parse().ok()?,
            })
        };
        model.i1 = geom("l1i")
            .ok_or_else(|| bad(format!("run `{spec}` recorded no L1i cache geometry")))?;
        model.d1 = geom("l1d")
            .ok_or_else(|| bad(format!("run `{spec}` recorded no L1d cache geometry")))?;
        model.ll = geom("l3").or_else(|| geom("l2")).ok_or_else(|| {
            bad(format!(
                "run `{spec}` recorded no last-level cache geometry"
            ))
        })?;
    } else {
        for part in value.split('/') {
            let (which, geom) = part
                .split_once('=')
                .ok_or_else(|| bad(format!("`{part}` is not I1=, D1= or LL=SIZE,WAYS,LINE")))?;
            let n: Vec<u64> = geom
                .split(',')
                .map(|x| x.trim().parse::<u64>())
                .collect::<Result<_, _>>()
                .map_err(|_| bad(format!("`{geom}`: three numbers, SIZE,WAYS,LINE in bytes")))?;
            let [size, assoc, line] = n[..] else {
                return Err(bad(format!(
                    "`{geom}`: three numbers, SIZE,WAYS,LINE in bytes"
                )));
            };
            let g = CacheGeom { size, assoc, line };
            match which.trim() {
                "I1" => model.i1 = g,
                "D1" => model.d1 = g,
                "LL" => model.ll = g,
                other => return Err(bad(format!("`{other}`: the caches are I1, D1 and LL"))),
            }
        }
    }
    let mut notes = Vec::new();
    for (which, g) in [
        ("I1", &mut model.i1),
        ("D1", &mut model.d1),
        ("LL", &mut model.ll),
    ] {
        let (fitted, note) = g.fitted(which).map_err(|e| bad(e.to_string()))?;
        *g = fitted;
        notes.extend(note);
    }
    Ok((model, notes))
}

fn apply(v: &mut Variant, setting: &str) -> Result<(), String> {
    let (key, raw) = setting.split_once(':').ok_or("not KEY:VALUE")?;
    let value = raw.trim();
    match key.trim() {
        "env" => {
            // The value is kept as written: spaces are part of it.
            let (k, val) = raw
                .trim_start()
                .split_once('=')
                .ok_or("env needs NAME=VALUE")?;
            check_var(k)?;
            if val.contains('\0') {
                return Err(format!(
                    "the value of {k} holds a NUL byte, which no environment can carry"
                ));
            }
            v.env.push((k.to_string(), Some(val.to_string())));
        }
        "unset" => {
            check_var(value)?;
            v.env.push((value.to_string(), None));
        }
        "cpus" => v.settings.cpus = Some(cpus(value)?),
        "aslr" => v.aslr_off = off(value)?,
        "thp" => v.settings.thp_disable = off(value)?,
        "numa" => v.settings.numa_node = Some(numa(value)?),
        "nice" => {
            let n: i32 = value
                .parse()
                .map_err(|_| format!("`{value}` is not a nice value"))?;
            if !(-20..=19).contains(&n) {
                return Err(format!("nice {n} is outside -20..19"));
            }
            v.settings.nice = Some(n);
        }
        "sched" => {
            let policy = perfsleuth_measure::Policy::parse(value)
                .ok_or_else(|| format!("`{value}`: give other, batch or idle"))?;
            v.settings.policy = Some(policy);
        }
        other => return Err(format!("unknown setting `{other}`")),
    }
    Ok(())
}

fn check_var(name: &str) -> Result<(), String> {
    if name.is_empty() || name.contains(['=', '\0']) {
        return Err(format!("`{name}` is not an environment variable name"));
    }
    Ok(())
}

fn off(value: &str) -> Result<bool, String> {
    match value {
        "off" => Ok(true),
        "on" => {
            Err("`on` is how perfsleuth runs already: a variant names what it changes (off)".into())
        }
        v => Err(format!("`{v}`: the setting takes off")),
    }
}

/// The CPUs of a `cpus:` value, every one of them online.
fn cpus(value: &str) -> Result<Vec<usize>, String> {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|l| parse_cpu_list(&l))
        .ok_or("cannot read the online CPUs (/sys/devices/system/cpu/online)")?;
    let chosen = match value {
        "same-core" | "cross-core" | "cross-llc" => pair(value, &online)?,
        list => parse_cpu_list(list).ok_or_else(|| {
            let too_high = list
                .split([',', '-'])
                .filter_map(|n| n.trim().parse::<u64>().ok())
                .any(|n| n > perfsleuth_measure::MAX_CPU as u64);
            if too_high {
                format!(
                    "`{list}` names a CPU above {}, the highest the kernel interface takes",
                    perfsleuth_measure::MAX_CPU
                )
            } else {
                format!("`{list}` is not a CPU list like 0-3,8")
            }
        })?,
    };
    if let Some(c) = chosen.iter().find(|c| !online.contains(c)) {
        return Err(format!(
            "CPU {c} is not online here (online: {})",
            list_text(&online)
        ));
    }
    Ok(chosen)
}

/// A NUMA node of this machine, which must have more than one.
fn numa(value: &str) -> Result<usize, String> {
    let node: usize = value
        .parse()
        .map_err(|_| format!("`{value}` is not a NUMA node number"))?;
    let online = std::fs::read_to_string("/sys/devices/system/node/online")
        .ok()
        .and_then(|l| parse_cpu_list(&l))
        .ok_or("cannot read the NUMA nodes (/sys/devices/system/node/online)")?;
    if online.len() < 2 {
        return Err(format!(
            "this machine has one NUMA node (node {}): there is no other node's memory to bind to",
            list_text(&online)
        ));
    }
    if !online.contains(&node) {
        return Err(format!(
            "NUMA node {node} is not online here (online: {})",
            list_text(&online)
        ));
    }
    Ok(node)
}

fn list_text(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Two CPUs for a placement: SMT siblings of one core, two cores that share
/// the last-level cache, or two CPUs on different last-level caches.
fn pair(kind: &str, online: &[usize]) -> Result<Vec<usize>, String> {
    let sys = Path::new("/sys/devices/system/cpu");
    let read = |cpu: usize, rel: &str| {
        std::fs::read_to_string(sys.join(format!("cpu{cpu}")).join(rel))
            .ok()
            .map(|s| s.trim().to_string())
    };
    let siblings =
        |cpu| read(cpu, "topology/thread_siblings_list").and_then(|l| parse_cpu_list(&l));
    let llc = |cpu| {
        (0..8)
            .rev()
            .find_map(|i| {
                let level = read(cpu, &format!("cache/index{i}/level"))?;
                let kind = read(cpu, &format!("cache/index{i}/type"))?;
                (kind != "Instruction").then_some((level, i))
            })
            .and_then(|(_, i)| read(cpu, &format!("cache/index{i}/shared_cpu_list")))
            .and_then(|l| parse_cpu_list(&l))
    };
    for &a in online {
        for &b in online.iter().filter(|&&b| b > a) {
            let same_core = siblings(a).is_some_and(|s| s.contains(&b));
            let same_llc = llc(a).is_some_and(|s| s.contains(&b));
            let fits = match kind {
                "same-core" => same_core,
                "cross-core" => !same_core && same_llc,
                _ => llc(a).is_some() && !same_llc,
            };
            if fits {
                return Ok(vec![a, b]);
            }
        }
    }
    Err(match kind {
        "same-core" => "this machine has no two online CPUs on one core (no SMT siblings)".to_string(),
        "cross-core" => "this machine has no two online CPUs on different cores that share a last-level cache".to_string(),
        _ => "this machine has one last-level cache for all its online CPUs: there is no cross-LLC pair".to_string(),
    })
}

/// Every planned benchmark under the unchanged set-up (`base`) and under
/// each variant, with the variant's name as a parameter so the runs pair
/// across stores as parameters do.
pub fn expand(planned: Vec<Planned>, variants: &[Variant]) -> Result<Vec<Planned>, Fail> {
    if variants.is_empty() {
        return Ok(planned);
    }
    let base = Variant {
        name: BASE.to_string(),
        ..Variant::default()
    };
    expand_with_base(planned, &base, variants)
}

/// [`expand`] with a `base` of its own (`explain`: the settings of the side
/// it starts from).
pub fn expand_with_base(
    planned: Vec<Planned>,
    base: &Variant,
    variants: &[Variant],
) -> Result<Vec<Planned>, Fail> {
    if planned.iter().any(|p| p.parameters.contains_key("variant")) {
        return Err(Fail::usage(
            "a parameter is named `variant`, which --variant uses for the set-up's name",
            "rename the parameter",
        ));
    }
    for (i, v) in variants.iter().enumerate() {
        if variants[..i].iter().any(|o| o.name == v.name) {
            return Err(Fail::usage(
                format!("--variant {} is given twice", v.name),
                "give each variant a name of its own",
            ));
        }
    }
    let mut out = Vec::with_capacity(planned.len() * (variants.len() + 1));
    for p in planned {
        for v in std::iter::once(base).chain(variants) {
            let mut q = p.clone();
            q.parameters.insert("variant".to_string(), v.name.clone());
            q.name = format!("{} [{}]", p.name, v.name);
            q.variant = Some(v.clone());
            out.push(q);
        }
    }
    Ok(out)
}

/// The benchmarks of `run` measured under `variant`, as a run of their own
/// with the names and parameters they had without variants (so the two
/// sides pair).
pub fn side_run(run: &perfsleuth_model::Run, variant: &str) -> perfsleuth_model::Run {
    let mut r = run.clone();
    let suffix = format!(" [{variant}]");
    r.benchmarks
        .retain(|b| b.parameters.get("variant").map(String::as_str) == Some(variant));
    for b in &mut r.benchmarks {
        b.parameters.remove("variant");
        if let Some(name) = b.name.strip_suffix(&suffix) {
            b.name = name.to_string();
        }
    }
    r
}

/// Each variant of a `run --variant` against `base`, with the verdict rule
/// of `compare` on the adjacent pairs of runs, rendered for the terminal; `None`
/// when the run has no variants.
pub fn against_base(
    run: &perfsleuth_model::Run,
    verdict: &crate::options::VerdictOptions,
    color: crate::options::ColorChoice,
) -> Result<Option<String>, Fail> {
    let mut names: Vec<&str> = Vec::new();
    for b in &run.benchmarks {
        if let Some(v) = b.parameters.get("variant")
            && v != BASE
            && !names.contains(&v.as_str())
        {
            names.push(v);
        }
    }
    if names.is_empty() {
        return Ok(None);
    }
    let opts = crate::verdict::paired_options(verdict)?;
    let baseline = perfsleuth_compare::Side {
        label: BASE.to_string(),
        runs: vec![side_run(run, BASE)],
    };
    let mut out = String::new();
    for name in names {
        let candidate = perfsleuth_compare::Side {
            label: name.to_string(),
            runs: vec![side_run(run, name)],
        };
        let comparison = perfsleuth_compare::compare(&baseline, &candidate, &opts);
        out.push_str(&format!(
            "\nVariant `{name}` against `{BASE}` (interleaved, round k paired with round k):\n"
        ));
        out.push_str(&crate::verdict::render(
            &comparison,
            crate::options::CompareFormat::Terminal,
            color,
        )?);
    }
    Ok(Some(out))
}

/// The comparison a `run` of two commands or more gives, through the one
/// verdict rule of `compare` on the adjacent pairs of runs: each benchmark
/// against the reference (`reference`, else the first), as one comparison
/// whose rows are the other benchmarks' — for `--fail-on`, `--format
/// github` and `--export-junit`. `None` for fewer than two benchmarks, or
/// a run of variants (compared with `base` instead).
pub fn in_run(
    run: &perfsleuth_model::Run,
    reference: Option<usize>,
    verdict: &crate::options::VerdictOptions,
) -> Result<Option<perfsleuth_compare::Comparison>, Fail> {
    let variants = run
        .benchmarks
        .iter()
        .any(|b| b.parameters.contains_key("variant"));
    if run.benchmarks.len() < 2 || variants {
        return Ok(None);
    }
    let r = reference.filter(|&r| r < run.benchmarks.len()).unwrap_or(0);
    let reference = &run.benchmarks[r];
    // The baseline side holds, under each other benchmark's name, a copy
    // of the reference: the rows pair each benchmark with it, run by run.
    let mut base = run.clone();
    let mut cand = run.clone();
    base.benchmarks.clear();
    cand.benchmarks.clear();
    for (i, b) in run.benchmarks.iter().enumerate() {
        if i == r {
            continue;
        }
        base.benchmarks.push(perfsleuth_model::Benchmark {
            name: b.name.clone(),
            parameters: b.parameters.clone(),
            ..reference.clone()
        });
        cand.benchmarks.push(b.clone());
    }
    let opts = crate::verdict::paired_options(verdict)?;
    let side = |label: &str, run: perfsleuth_model::Run| perfsleuth_compare::Side {
        label: label.to_string(),
        runs: vec![run],
    };
    Ok(Some(perfsleuth_compare::compare(
        &side(&reference.name, base),
        &side("each command", cand),
        &opts,
    )))
}
