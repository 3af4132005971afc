//! Diagnosis on synthetic curves whose cause is known, the CSV reader, and
//! the renderers.

use super::*;

const SECONDS: f64 = 1.0;

/// A machine with `cpus` logical CPUs, all usable.
fn machine(cpus: usize) -> Machine {
    Machine {
        logical: Some(cpus),
        physical: Some(cpus),
        usable: Some(cpus as f64),
        limited_by: None,
    }
}

/// Three runs at each N with a ±0.5 % wobble, the CPU split given by
/// `busy(n)` (share of all CPUs), `cs(n)` voluntary switches per 1000 ops.
fn curve(
    ns: &[f64],
    x: impl Fn(f64) -> f64,
    busy: impl Fn(f64) -> f64,
    cs: impl Fn(f64) -> f64,
) -> Vec<Observation> {
    ns.iter()
        .map(|&n| Observation {
            n,
            locks: None,
            runs: [0.995, 1.0, 1.005]
                .iter()
                .map(|w| {
                    let throughput = x(n) * w;
                    let work = throughput * SECONDS;
                    let b = busy(n);
                    RunObservation {
                        throughput,
                        wall_s: SECONDS,
                        work,
                        cpu: Some(CpuSplit {
                            user: 0.9 * b,
                            system: 0.1 * b,
                            idle: 1.0 - b,
                            iowait: 0.0,
                            steal: 0.0,
                        }),
                        per_cpu_busy: vec![b; 2],
                        cpu_ticks: None,
                        cpu_time_s: None,
                        voluntary_cs: Some(cs(n) * work / 1000.0),
                        futex_calls: None,
                        cpu_migrations: None,
                    }
                })
                .collect(),
        })
        .collect()
}

fn usl(alpha: f64, beta: f64, gamma: f64) -> impl Fn(f64) -> f64 {
    move |n| gamma * n / (1.0 + alpha * (n - 1.0) + beta * n * (n - 1.0))
}

const NS: [f64; 8] = [1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0];

#[test]
fn case_b_lock_contention_with_idle_cpus_is_coherency() {
    // Seed 001: 1.0, 1.9, 2.7, 3.4 at 1-4 threads, 1.6 at 8, CPUs ~40 % idle.
    let ns = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0];
    let speedup = [1.0, 1.9, 2.7, 3.4, 2.4, 1.6];
    let obs = curve(
        &ns,
        |n| 1e6 * speedup[ns.iter().position(|&m| m == n).unwrap_or(0)],
        |n| {
            if n <= 4.0 {
                n / 8.0 * 0.95
            } else {
                0.6 * n / 8.0
            }
        },
        |n| 0.002 + if n > 1.0 { 2.0 * n } else { 0.0 },
    );
    let a = analyze("threads", &obs, &machine(8));
    let f = a.fit.as_ref().expect("fit");
    assert!(f.beta > 0.0 && f.beta_significant, "{f:?}");
    let n_star = f.n_star.expect("N*");
    assert!((3.0..6.0).contains(&n_star), "N* {n_star}");
    assert!(f.retrograde_from.is_some_and(|r| r < 8.0));
    let d = &a.diagnosis[0];
    assert_eq!(d.kind, DiagnosisKind::Coherency, "{a:#?}");
    assert!(
        d.headline.contains("shared lock or cache line"),
        "{}",
        d.headline
    );
    let text = d.evidence.join("\n");
    assert!(text.contains("idle at N = 8"), "{text}");
    assert!(text.contains("voluntary context switches"), "{text}");
    assert!(text.contains("throughput falls from"), "{text}");
}

#[test]
fn contention_on_busy_cpus_points_at_the_cache_line() {
    let obs = curve(
        &NS,
        usl(0.02, 0.01, 1e5),
        |n| (n / 24.0).min(1.0),
        |_| 0.001,
    );
    let a = analyze("threads", &obs, &machine(24));
    let d = &a.diagnosis[0];
    assert_eq!(d.kind, DiagnosisKind::Coherency, "{a:#?}");
    assert!(
        d.evidence.iter().any(|e| e.contains("CPUs stay busy")),
        "{:?}",
        d.evidence
    );
}

/// A traced level's lock report: `sites` as (function, wait ns).
fn locks(sites: &[(&str, u64)]) -> perfsleuth_model::LockReport {
    perfsleuth_model::LockReport {
        runs: 3,
        lock_wait_ns: sites.iter().map(|s| s.1).sum(),
        lock_waits: 30,
        blocked_ns: 3_000_000,
        futexes: 1,
        sites: sites
            .iter()
            .map(|&(function, wait_ns)| perfsleuth_model::LockSite {
                kind: "mutex".into(),
                function: function.into(),
                location: "c.rs:7".into(),
                wait_ns,
                waits: 10,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

#[test]
fn a_traced_lock_is_named_in_the_contention_diagnosis() {
    let mut obs = curve(
        &NS,
        usl(0.02, 0.01, 1e5),
        |n| (n / 24.0).min(1.0),
        |_| 0.001,
    );
    let last = obs.len() - 1;
    obs[last].locks = Some(locks(&[("count_locked", 900), ("other", 100)]));
    obs[1].locks = Some(locks(&[("count_locked", 10)]));
    let a = analyze("threads", &obs, &machine(24));
    let d = &a.diagnosis[0];
    assert_eq!(d.kind, DiagnosisKind::Coherency, "{a:#?}");
    assert!(
        d.headline
            .starts_with("coherency/contention at `count_locked`'s mutex:"),
        "{}",
        d.headline
    );
    assert!(
        !d.headline.contains("look for a shared lock"),
        "{}",
        d.headline
    );
    assert!(
        d.evidence
            .iter()
            .any(|e| e.starts_with("at N = 24, lock wait:") && e.contains("90% at `count_locked`")),
        "the level that waited most: {:?}",
        d.evidence
    );
    assert!(
        d.evidence
            .iter()
            .any(|e| e.contains("although threads sleep on the lock")),
        "{:?}",
        d.evidence
    );
    // No site with half of the wait: nothing is named.
    obs[last].locks = Some(locks(&[("a", 400), ("b", 300), ("c", 300)]));
    let a = analyze("threads", &obs, &machine(24));
    assert!(
        a.diagnosis[0].headline.contains("look for a shared lock"),
        "{a:#?}"
    );
    // The level table shows the lock per level.
    let text = crate::render_terminal(&a, false);
    assert!(
        text.contains("Locks (eBPF):") && text.contains("threads = 24: lock wait"),
        "{text}"
    );
}

#[test]
fn amdahl_curve_is_serialised_with_its_ceiling() {
    let obs = curve(&NS, usl(0.05, 0.0, 1000.0), |n| n / 24.0, |_| 0.001);
    let a = analyze("threads", &obs, &machine(24));
    let f = a.fit.as_ref().expect("fit");
    assert!((f.alpha - 0.05).abs() < 0.005, "{f:?}");
    let d = &a.diagnosis[0];
    assert_eq!(d.kind, DiagnosisKind::Serialised, "{a:#?}");
    assert!(
        d.headline.contains("serialised fraction ≈ 5."),
        "{}",
        d.headline
    );
    assert!(
        d.headline.contains("Amdahl ceiling 20.0k"),
        "{}",
        d.headline
    );
}

#[test]
fn linear_busy_curve_is_compute_bound() {
    let obs = curve(&NS, |n| 500.0 * n, |n| n / 24.0, |_| 0.001);
    let a = analyze("threads", &obs, &machine(24));
    assert_eq!(a.diagnosis[0].kind, DiagnosisKind::ComputeBound, "{a:#?}");
    assert_eq!(a.diagnosis[0].headline, "scales; compute-bound");
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
}

#[test]
fn idle_cpus_without_blocking_are_waiting() {
    // Throughput flattens at 4 while CPUs sit idle and switches stay flat.
    let obs = curve(
        &NS,
        |n| 100.0 * n.min(4.0),
        |n| n.min(4.0) / 24.0 * 0.9,
        |_| 0.5,
    );
    let a = analyze("clients", &obs, &machine(24));
    let d = &a.diagnosis[0];
    assert_eq!(d.kind, DiagnosisKind::Waiting, "{a:#?}");
    assert!(
        d.evidence.iter().any(|e| e.contains("idle at N = 24")),
        "{:?}",
        d.evidence
    );
}

#[test]
fn linear_scaling_with_idle_cpus_is_waiting_work_that_scales() {
    // Clients that sleep on the network: linear well past the 2 CPUs, CPUs idle.
    let obs = curve(&NS, |n| 50.0 * n, |n| (0.01 * n).min(1.0), |_| 300.0);
    let a = analyze("clients", &obs, &machine(2));
    let d = &a.diagnosis[0];
    assert_eq!(d.kind, DiagnosisKind::ScalesWaiting, "{a:#?}");
    assert!(
        d.evidence.iter().all(|e| !e.contains("usable CPUs")),
        "{:?}",
        d.evidence
    );
    assert_eq!(
        a.fit.as_ref().and_then(|f| f.capacity),
        None,
        "sleeping work is not capped"
    );
}

#[test]
fn oversubscribed_parallel_work_is_compute_bound_not_contention() {
    // The padded-counter example on 2 CPUs, up to 8 threads: flat past 2.
    let ns = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0];
    let obs = curve(&ns, |n| 7e7 * n.min(2.0), |n| (n / 2.0).min(1.0), |_| 0.0);
    let a = analyze("threads", &obs, &machine(2));
    let f = a.fit.as_ref().expect("fit");
    assert_eq!(f.capacity, Some(2.0));
    assert!(!f.beta_significant || f.beta * 56.0 < 0.05, "{f:?}");
    let d = &a.diagnosis[0];
    assert_eq!(d.kind, DiagnosisKind::ComputeBound, "{a:#?}");
    assert!(d.headline.contains("2 usable CPUs"), "{}", d.headline);
    assert!(
        a.warnings
            .iter()
            .any(|w| w.contains("exceeds the 2 usable CPUs"))
    );
}

#[test]
fn oversubscribed_mutex_is_contention() {
    // The mutex example on 2 CPUs: slower at 2 than at 1, blocking grows.
    let ns = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0];
    let x = [7.5e7, 3.4e7, 3.0e7, 2.7e7, 2.5e7, 2.3e7];
    let obs = curve(
        &ns,
        |n| x[ns.iter().position(|&m| m == n).unwrap_or(0)],
        |n| if n == 1.0 { 0.5 } else { 0.7 },
        |n| if n == 1.0 { 0.0 } else { 3.0 },
    );
    let a = analyze("threads", &obs, &machine(2));
    let f = a.fit.as_ref().expect("fit");
    assert!(f.beta_significant || f.alpha_significant, "{f:?}");
    assert_eq!(a.diagnosis[0].kind, DiagnosisKind::Coherency, "{a:#?}");
}

#[test]
fn a_fall_from_the_second_thread_is_contention_not_a_serial_fraction() {
    // Measured here: the mutex example on 2 CPUs halves at 2 threads and
    // stays there; the fit is Amdahl with α ≈ 2.5, which is no "fraction".
    let ns = [1.0, 2.0, 4.0, 8.0];
    let x = [61.8e6, 31.9e6, 29.0e6, 29.5e6];
    let obs = curve(
        &ns,
        |n| x[ns.iter().position(|&m| m == n).unwrap_or(0)],
        |n| (n / 2.0).min(1.0),
        |_| 0.005,
    );
    let a = analyze("threads", &obs, &machine(2));
    let f = a.fit.as_ref().expect("fit");
    assert!(f.alpha > 1.0, "{f:?}");
    let d = &a.diagnosis[0];
    assert_eq!(d.kind, DiagnosisKind::Coherency, "{a:#?}");
    assert!(
        d.evidence.iter().any(|e| e.contains("α ≥ 1")),
        "{:?}",
        d.evidence
    );
    assert!(!d.headline.contains('%'), "{}", d.headline);
}

#[test]
fn few_levels_refuse_or_warn_and_n_star_is_not_extrapolated() {
    let obs = curve(&[1.0, 2.0, 4.0], |n| 10.0 * n, |_| 0.5, |_| 0.0);
    let a = analyze("threads", &obs, &machine(8));
    assert!(a.fit.is_none());
    assert!(
        a.fit_error
            .as_deref()
            .is_some_and(|e| e.contains("at least 4"))
    );

    let obs = curve(
        &[1.0, 2.0, 3.0, 4.0],
        usl(0.02, 0.0001, 10.0),
        |_| 0.5,
        |_| 0.0,
    );
    let a = analyze("threads", &obs, &machine(8));
    assert!(
        a.warnings
            .iter()
            .any(|w| w.contains("only 4 concurrency levels"))
    );
    let f = a.fit.as_ref().expect("fit");
    // N* = sqrt(0.98 / 1e-4) ≈ 99, far beyond 2 × 4.
    assert_eq!(f.n_star, None);
    assert!(f.n_star_beyond_limit);
    let svg_chart = chart(&a, "t");
    assert!(svg_chart.fitted.iter().all(|(n, _)| *n <= 8.0));
}

#[test]
fn steal_smt_and_unstable_points_are_warned() {
    let mut obs = curve(&NS, |n| 100.0 * n, |n| n / 24.0, |_| 0.0);
    for o in &mut obs {
        for r in &mut o.runs {
            if let Some(c) = r.cpu.as_mut() {
                c.steal = 0.08;
                c.idle -= 0.08;
            }
        }
    }
    obs[2].runs[0].throughput *= 0.5;
    let m = Machine {
        logical: Some(24),
        physical: Some(12),
        usable: Some(24.0),
        limited_by: None,
    };
    let a = analyze("threads", &obs, &m);
    let w = a.warnings.join("\n");
    assert!(w.contains("stole 8%"), "{w}");
    assert!(w.contains("SMT boundary"), "{w}");
    assert!(w.contains("at N = 4 varies"), "{w}");
}

#[test]
fn other_load_is_not_idle_cpus_and_is_warned() {
    // The command gets half the CPUs it could use, but the machine is busy:
    // someone else ran, so the CPUs were not idle.
    let mut obs = curve(
        &[1.0, 2.0, 3.0, 4.0],
        |n| 100.0 * n.min(2.0),
        |_| 1.0,
        |_| 0.0,
    );
    for o in &mut obs {
        for r in &mut o.runs {
            r.cpu_time_s = Some(0.5 * r.wall_s * o.n.min(2.0));
        }
    }
    let a = analyze("threads", &obs, &machine(2));
    assert!(
        a.points.iter().all(|p| p.idle_of_usable == Some(0.0)),
        "{:?}",
        a.points
    );
    // Busy at every level: each level is named, and the diagnosis says it
    // cannot be trusted.
    assert!(
        a.warnings.iter().any(|w| w
            .contains("other processes kept CPUs busy at every level (1.5 at N = 1")
            && w.contains("unreliable")),
        "{:?}",
        a.warnings
    );
    assert!(
        a.diagnosis[0]
            .evidence
            .iter()
            .any(|e| e.starts_with("unreliable: other processes")),
        "{:?}",
        a.diagnosis
    );
    // Busy at one level only: that level is warned, the diagnosis stands.
    for o in &mut obs {
        if o.n > 1.0 {
            for r in &mut o.runs {
                r.cpu_time_s = Some(r.wall_s * o.n.min(2.0));
            }
        }
    }
    let a = analyze("threads", &obs, &machine(2));
    assert!(
        a.warnings
            .iter()
            .any(|w| w.contains("other processes kept 1.5 CPUs busy during the runs at N = 1")),
        "{:?}",
        a.warnings
    );
    assert!(
        !a.diagnosis[0]
            .evidence
            .iter()
            .any(|e| e.starts_with("unreliable"))
    );
}

#[test]
fn idle_is_never_claimed_where_the_machine_s_idle_was_not_measured() {
    // No CPU split (too few ticks): the command's own CPU time says it used
    // one CPU of two, and the words say where that comes from.
    let mut obs = curve(&[1.0, 2.0, 3.0, 4.0], |_| 100.0, |_| 0.5, |_| 0.0);
    for o in &mut obs {
        for r in &mut o.runs {
            r.cpu = None;
            r.per_cpu_busy.clear();
            r.cpu_time_s = Some(r.wall_s);
        }
    }
    let a = analyze("n", &obs, &machine(2));
    assert!(a.points.iter().all(|p| p.cpu.is_none()));
    let text = a.diagnosis[0].evidence.join("\n");
    assert!(!text.contains("% idle"), "{text}");
    assert!(
        text.contains("the machine's idle time was not measured"),
        "{text}"
    );
}

#[test]
fn a_sleep_that_grows_with_n_is_waiting_not_contention() {
    // `sleep 0.0{n}` with fixed work: X falls as 1/N while the CPUs idle.
    let ns = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let obs = curve(&ns, |n| 100_000.0 / n, |_| 0.005, |_| 5.0);
    let a = analyze("n", &obs, &machine(2));
    let f = a.fit.as_ref().expect("fit");
    assert!(
        f.n_star.is_none_or(|n| n >= 1.0),
        "N* below the data: {f:?}"
    );
    assert!(f.peak_n.is_none_or(|n| n >= 1.0), "{f:?}");
    assert!(f.retrograde_from.is_none_or(|n| n >= 1.0), "{f:?}");
    assert_ne!(a.diagnosis[0].kind, DiagnosisKind::Coherency, "{a:#?}");
    assert_eq!(a.diagnosis[0].kind, DiagnosisKind::Waiting, "{a:#?}");
}

#[test]
fn capacity_fit_has_no_amdahl_ceiling_and_no_retrograde_without_a_fall() {
    let ns = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0];
    // Padded counters on 2 CPUs with a little noise: flat past 2.
    let obs = curve(
        &ns,
        |n| 7e7 * n.min(2.0) * if n == 3.0 { 0.97 } else { 1.0 },
        |n| (n / 2.0).min(1.0),
        |_| 0.0,
    );
    let a = analyze("threads", &obs, &machine(2));
    let f = a.fit.as_ref().expect("fit");
    assert_eq!(f.capacity, Some(2.0));
    assert_eq!(f.amdahl_ceiling, None, "{f:?}");
    assert_eq!(f.retrograde_from, None, "{f:?}");
    let text = render_terminal(&a, false);
    assert!(!text.contains("retrograde"), "{text}");
}

#[test]
fn short_runs_give_no_machine_split_and_long_ones_are_pooled_by_ticks() {
    let mut obs = curve(&[1.0, 2.0, 3.0, 4.0], |n| 100.0 * n, |_| 0.5, |_| 0.0);
    // 2 CPUs, 3 runs of 4 ticks each: 12 ticks < 20 per CPU.
    for o in &mut obs {
        for r in &mut o.runs {
            r.cpu_ticks = Some(4.0);
        }
    }
    let a = analyze("n", &obs, &machine(2));
    assert!(
        a.points
            .iter()
            .all(|p| p.cpu.is_none() && p.busy_cpus.is_none()),
        "{:?}",
        a.points
    );
    assert!(
        !a.warnings.iter().any(|w| w.contains("other processes")),
        "{:?}",
        a.warnings
    );
    // A long run outweighs a short one.
    let mut obs = curve(&[1.0, 2.0, 3.0, 4.0], |n| 100.0 * n, |_| 0.5, |_| 0.0);
    for o in &mut obs {
        o.runs[0].cpu_ticks = Some(400.0);
        o.runs[1].cpu_ticks = Some(4.0);
        o.runs[2].cpu_ticks = Some(4.0);
        if let Some(c) = o.runs[1].cpu.as_mut() {
            c.idle = 0.0;
            c.user = 1.0;
            c.system = 0.0;
        }
    }
    let a = analyze("n", &obs, &machine(2));
    let idle = a.points[0].cpu.expect("pooled").idle;
    assert!((idle - (0.5 * 404.0) / 408.0).abs() < 1e-9, "{idle}");
}

#[test]
fn csv_reference_dataset_matches_usl4j() {
    // usl4j's Cisco benchmark (Schwartz, Practical Scalability Analysis).
    let x = [
        955.16, 1878.91, 2688.01, 3548.68, 4315.54, 5130.43, 5931.37, 6531.08, 7219.8, 7867.61,
        8278.71, 8646.7, 9047.84, 9426.55, 9645.37, 9897.24, 10097.6, 10240.5, 10532.39, 10798.52,
        11151.43, 11518.63, 11806.0, 12089.37, 12075.41, 12177.29, 12211.41, 12158.93, 12155.27,
        12118.04, 12140.4, 12074.39,
    ];
    let mut text = String::from("N,X\n");
    for (i, v) in x.iter().enumerate() {
        text.push_str(&format!("{},{v}\n", i + 1));
    }
    let obs = read_csv(&text).expect("csv");
    let a = analyze("N", &obs, &Machine::default());
    let f = a.fit.clone().expect("fit");
    let close = |a: f64, b: f64| ((a - b) / b).abs() < 1e-3;
    assert!(close(f.alpha, 0.02671591), "{}", f.alpha);
    assert!(close(f.beta, 7.690945e-4), "{}", f.beta);
    assert!(close(f.gamma, 995.6486), "{}", f.gamma);
    assert_eq!(f.capacity, None);
    let d = &a.diagnosis[0];
    assert_eq!(d.kind, DiagnosisKind::SubLinear);
    assert!(
        d.evidence
            .iter()
            .any(|e| e.contains("the fit peaks at N* ≈ 35.")),
        "{:?}",
        d.evidence
    );
}

#[test]
fn csv_variants_and_errors() {
    let obs = read_csv("threads;throughput\n1;10\n2;19\n2;21\n# note\n\n4;30\n").expect("csv");
    assert_eq!(obs.len(), 3);
    assert_eq!(obs[1].runs.len(), 2);
    let headerless = read_csv("1 10\n2 20\n").expect("csv");
    assert_eq!(headerless.len(), 2);
    // An Excel export: byte-order mark, CRLF, semicolons and decimal commas.
    let excel = read_csv("\u{feff}N;X\r\n1;1,5\r\n2;2,75\r\n").expect("csv");
    assert_eq!(excel[1].runs[0].throughput, 2.75);

    let err = |t: &str| read_csv(t).expect_err(t).to_string();
    assert_eq!(
        err("N,X\n1,10\n2,abc\n"),
        "line 3: throughput \"abc\" is not a number"
    );
    assert_eq!(
        err("N,X\n1,10\n0,5\n"),
        "line 3: concurrency must be positive, got 0"
    );
    assert_eq!(
        err("N,X\n1,-10\n"),
        "line 2: throughput must be positive, got -10"
    );
    assert!(err("a,b\n1,2\n").contains("no concurrency and throughput columns"));
    assert!(err("N,X\n").contains("no data rows"));
    assert!(err("").contains("no data rows"));
    assert_eq!(err("N,X\n1\n"), "line 2: missing the throughput column");
}

#[test]
fn csv_without_header_with_decimal_commas() {
    // Found by tests/fuzz_csv.rs: the header test parsed `2,5` without the
    // decimal comma, took the first data row for a header and refused it.
    let obs = read_csv("1;2,5\n2;4,75\n").expect("headerless, decimal commas");
    assert_eq!(obs.len(), 2);
    assert_eq!(obs[0].runs[0].throughput, 2.5);
    assert_eq!(obs[1].runs[0].throughput, 4.75);
}

#[test]
fn csv_with_many_levels_is_read_in_linear_time() {
    // Found while writing tests/fuzz_csv.rs: each row looked for its N among all the levels
    // so far, so 100 000 distinct levels took 5·10⁹ comparisons (minutes
    // in a debug build); a map keeps it to one lookup a row.
    let text: String = (1..=100_000).map(|n| format!("{n},{}\n", n * 2)).collect();
    let start = std::time::Instant::now();
    let obs = read_csv(&text).expect("csv");
    assert_eq!(obs.len(), 100_000);
    assert_eq!(obs[99_999].n, 100_000.0);
    assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
}

#[test]
fn renderers_show_table_fit_diagnosis_and_valid_json() {
    let obs = curve(
        &NS,
        usl(0.02, 0.01, 1e5),
        |n| (n / 24.0).min(1.0),
        |_| 0.001,
    );
    let a = analyze("threads", &obs, &machine(24));
    let text = render_terminal(&a, false);
    assert!(text.starts_with("threads"), "{text}");
    for needle in [
        "throughput",
        "machine busy",
        "vol. cs/kop",
        "fitted",
        "Fit (USL)",
        "N* =",
        "Diagnosis: coherency",
    ] {
        assert!(text.contains(needle), "missing {needle}:\n{text}");
    }
    assert!(!text.contains('\x1b'));
    let json = serde_json::to_value(to_json(&a, None)).unwrap();
    assert_eq!(json["schema"], "perfsleuth/scale");
    assert_eq!(json["points"].as_array().map(Vec::len), Some(NS.len()));
    assert_eq!(json["diagnosis"][0]["kind"], "coherency");
    let svg = perfsleuth_report::chart::scaling(&chart(&a, "counters"));
    assert!(svg.starts_with("<svg"));
}

#[test]
fn a_coefficient_is_present_at_two_standard_errors_as_before() {
    // Through `decide` now, at the level the diagnosis always used.
    assert!(super::significant(2.01, 1.0));
    assert!(!super::significant(1.99, 1.0));
    assert!(!super::significant(1.97, 1.0), "not the 1.96 of α = 5 %");
    assert!(super::significant(0.001, f64::NAN));
    assert!(!super::significant(0.0, f64::NAN));
    assert!(!super::significant(-0.5, f64::NAN));
}
