//! The data model of perfsleuth: runs, benchmarks, samples, metrics and the
//! environment fingerprint. These types are what the store persists and what
//! the JSON export serialises, so changes here are schema changes: bump
//! [`SCHEMA_VERSION`] and document them in `docs/SCHEMA.md`.

#![forbid(unsafe_code)]

pub mod allocs;
pub mod exit;
pub mod hex;
pub mod input;
mod judged;
pub mod quantity;

/// The share of a count by which a simulated benchmark's runs may differ
/// before it is called not deterministic: 0.01 %, a fiftieth of the
/// smallest threshold a comparison uses (0.2 %), so a spread below it
/// cannot turn a verdict (a thread's start, the size of the environment).
pub const NONDETERMINISM_WARNING: f64 = 1e-4;
pub mod schema;
pub mod url;

/// Characters of a commit hash shown for it: 12, as the Linux kernel's
/// convention, because a shown hash is pasted back (`ab --baseline`) and
/// git's minimum of 7 becomes ambiguous in large repositories.
pub const SHORT_COMMIT: usize = 12;

/// The first [`SHORT_COMMIT`] characters of a commit hash (all of a shorter one).
pub fn short_commit(commit: &str) -> &str {
    commit.get(..SHORT_COMMIT).unwrap_or(commit)
}

pub use allocs::{ALLOC_COUNTERS, AllocProfile, AllocStack, FunctionAllocs};
pub use judged::{BUSY_MAX, BUSY_MIN, JudgedTime, WAITS_MAX, judged_time};

mod benchmark;
mod callgrind;
mod environment;
mod locks;
mod metric;
mod run;
mod stacks;
pub use benchmark::*;
pub use callgrind::*;
pub use environment::*;
pub use locks::*;
pub use metric::*;
pub use run::*;
pub use stacks::*;

/// Version of the JSON export schema and of the model as a whole.
pub const SCHEMA_VERSION: u32 = 1;

/// Name written into every exported document so a reader can tell what it holds.
pub const EXPORT_KIND_RUN: &str = "perfsleuth/run";

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn a_blocking_call_is_told_by_its_c_library_name_in_any_spelling() {
        use OffCpuReason::*;
        for (name, reason) in [
            ("__GI___poll", Poll),
            ("ppoll", Poll),
            ("epoll_wait", Poll),
            ("__futex_abstimed_wait_common64", Lock),
            ("__lll_lock_wait", Lock),
            ("___pthread_cond_wait", Lock),
            ("__libc_read", Io),
            ("__GI___libc_write", Io),
            ("fsync", Io),
            ("__GI___clock_nanosleep", Sleep),
            ("__nanosleep", Sleep),
            ("madvise", Other),
            ("fetch_row", Other),
        ] {
            assert_eq!(OffCpuReason::of_blocking_function(name), reason, "{name}");
        }
        assert!(OffCpuReason::is_blocking_call("__poll"));
        assert!(!OffCpuReason::is_blocking_call("poll_events"));
        for r in OffCpuReason::ALL {
            assert_eq!(OffCpuReason::of_frame(&r.frame().function), Some(r));
        }
        assert_eq!(OffCpuReason::of_frame("[off-cpu: nap]"), None);
    }

    #[test]
    fn a_wait_is_the_time_of_the_innermost_program_function_and_apart_from_its_cpu() {
        let f = |n: &str, m: &str| ProfileFrame {
            function: n.into(),
            module: m.into(),
            inlined: false,
        };
        let p = StackProfile {
            event: "cpu-clock".into(),
            period_ns: 1_000_000,
            iterations: vec![0, 1],
            samples: 30,
            frames: vec![
                f("main", "prog"),
                f("fetch_row", "prog"),
                f("__poll", "libc.so.6"),
                OffCpuReason::Poll.frame(),
            ],
            stacks: vec![
                ProfileStack {
                    frames: vec![0, 1],
                    counts: vec![2, 3],
                },
                ProfileStack {
                    frames: vec![0, 1, 2, 3],
                    counts: vec![12, 13],
                },
            ],
            off_cpu_ns: vec![12_100_000, 12_900_000],
            ..StackProfile::default()
        };
        assert!(p.has_off_cpu());
        let functions = p.functions();
        let label: Vec<String> = functions.iter().map(FunctionSamples::label).collect();
        // The wait first, then fetch_row's own CPU; the pseudo-frame and the
        // C library's wrapper own nothing.
        assert_eq!(label[0], "`fetch_row` (off CPU: poll)");
        assert_eq!(functions[0].self_counts, vec![12, 13]);
        assert_eq!(label[1], "`fetch_row`");
        assert_eq!(functions[1].self_counts, vec![2, 3]);
        assert_eq!(functions[1].inclusive, vec![14, 16]);
        assert!(!label.iter().any(|l| l.contains("[off-cpu")), "{label:?}");
        assert_eq!(p.run_samples(), vec![2, 3]);
        assert_eq!(p.run_totals(), vec![14, 16]);
        assert_eq!(p.run_cpu_ns(), vec![2e6, 3e6]);
        assert_eq!(p.run_time_ns(), vec![14e6, 16e6]);
        assert_eq!(p.on_cpu_samples(), 5);
    }

    #[test]
    fn the_top_functions_are_the_first_rows_of_all_and_the_rest_is_counted() {
        let f = |n: &str, inlined: bool| ProfileFrame {
            function: n.into(),
            module: "m".into(),
            inlined,
        };
        let stack = |frames: Vec<u32>, counts: Vec<u32>| ProfileStack { frames, counts };
        let p = StackProfile {
            event: "cpu-clock".into(),
            period_ns: 1_000_000,
            iterations: vec![0, 1],
            frames: vec![
                f("main", false),
                f("rec", false),
                f("tie_b", false),
                f("tie_a", false),
                f("hot", true),
                f("hot", false),
                ProfileFrame {
                    module: "libc.so.6".into(),
                    ..f("__poll", false)
                },
                OffCpuReason::Poll.frame(),
                f("cold", false),
            ],
            stacks: vec![
                // `rec` calls itself: its stack counts once in its total.
                stack(vec![0, 1, 1, 1], vec![3, 4]),
                // Equal totals: the name breaks the tie, then the order.
                stack(vec![0, 2], vec![2, 2]),
                stack(vec![0, 3], vec![2, 2]),
                // The inlined and outlined copies of `hot` are one function.
                stack(vec![0, 4], vec![5, 0]),
                stack(vec![0, 5], vec![0, 6]),
                stack(vec![0, 1, 6, 7], vec![1, 1]),
                stack(vec![0, 8], vec![0, 1]),
            ],
            ..StackProfile::default()
        };
        let all = p.functions();
        let label: Vec<String> = all.iter().map(FunctionSamples::label).collect();
        assert_eq!(
            label,
            [
                "`hot`",
                "`rec`",
                "`tie_a`",
                "`tie_b`",
                "`rec` (off CPU: poll)",
                "`cold`",
                "`main`",
                "`__poll`"
            ]
        );
        assert_eq!(all[0].self_counts, vec![5, 6]);
        assert_eq!(all[1].inclusive, vec![4, 5]);
        assert_eq!(all[6].inclusive, vec![13, 16]);
        for n in 0..=all.len() + 1 {
            let top = p.top_functions(n);
            let rest = &all[n.min(all.len())..];
            assert_eq!(top.named, all[..n.min(all.len())], "{n}");
            assert_eq!(
                top.others,
                rest.iter().filter(|f| f.self_total() > 0).count(),
                "{n}"
            );
            assert_eq!(
                top.others_self,
                rest.iter().map(FunctionSamples::self_total).sum::<u64>(),
                "{n}"
            );
        }
    }

    #[test]
    fn a_profile_keeps_only_the_runs_whose_samples_were_kept() {
        let f = |n: &str| ProfileFrame {
            function: n.into(),
            module: "m".into(),
            inlined: false,
        };
        let mut p = StackProfile {
            event: "cpu-clock".into(),
            period_ns: 1_000_000,
            periods_ns: vec![900_000, 1_000_000, 1_100_000],
            iterations: vec![0, 1, 2],
            samples: 16,
            frames: vec![f("main"), f("a"), f("b")],
            stacks: vec![
                ProfileStack {
                    frames: vec![0, 1],
                    counts: vec![5, 5, 0],
                },
                ProfileStack {
                    frames: vec![0, 2],
                    counts: vec![0, 0, 6],
                },
            ],
            ..StackProfile::default()
        };
        // Run 2 was cut short: its samples and the frame only it saw go.
        p.keep_iterations(&[0, 1]);
        assert_eq!(p.iterations, vec![0, 1]);
        assert_eq!(p.periods_ns, vec![900_000, 1_000_000]);
        assert_eq!(p.samples, 10);
        assert_eq!(p.stacks.len(), 1);
        assert_eq!(p.frames, vec![f("main"), f("a")]);
        assert_eq!(p.stacks[0].frames, vec![0, 1]);
    }

    #[test]
    fn floats_read_back_to_the_same_bits() {
        // Found by tests/fuzz_schema.rs: serde_json's default float parser
        // is off by one unit in the last place for some values, so a document
        // read back was not the one written (and a re-export not byte-stable).
        for v in [30461527329.522346f64, -4.1525251228329174e-231] {
            let text = crate::schema::to_json_pretty(&v).expect("serialises");
            let back: f64 = serde_json::from_str(&text).expect("reads");
            assert_eq!(back.to_bits(), v.to_bits(), "{v} came back as {back}");
        }
    }

    #[test]
    fn rfc3339_formats_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_709_210_096_123);
        assert_eq!(rfc3339(t), "2024-02-29T12:34:56.123Z");
    }

    #[test]
    fn environment_json_is_a_flat_map_of_facts() {
        let mut env = Environment::default();
        env.set("cpu.model", "Test CPU", ImpactClass::Identity);
        env.set_opt("host.name", None, ImpactClass::Context);
        let json = serde_json::to_value(&env).unwrap();
        assert_eq!(json["cpu.model"]["class"], "identity");
        assert_eq!(json["host.name"]["value"], UNKNOWN);
        let back: Environment = serde_json::from_value(json).unwrap();
        assert_eq!(back, env);
        assert_eq!(env.only(&[ImpactClass::Identity]).facts.len(), 1);
    }

    #[test]
    fn probe_results_read_null_numbers_as_nan() {
        let r = ProbeResult {
            probe: "memory".into(),
            metric: "dram_latency".into(),
            value: f64::NAN,
            unit: "ns".into(),
            lower_is_better: true,
            cycles: None,
            spread: f64::NAN,
            stable: false,
            headline: true,
            note: None,
        };
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["value"], serde_json::Value::Null);
        let back: ProbeResult = serde_json::from_value(json).unwrap();
        assert!(back.value.is_nan() && back.spread.is_nan());
        let mode: Mode = serde_json::from_value(serde_json::json!("probe")).unwrap();
        assert_eq!(
            (mode, Mode::parse("probe")),
            (Mode::Probe, Some(Mode::Probe))
        );
        assert_eq!(Mode::Probe.as_str(), "probe");
        // Runs written before probes existed have no `probes` key.
        let run: Run = serde_json::from_value(serde_json::json!({
            "id": null, "started_at": "x", "ended_at": null, "status": "complete",
            "tool_version": "0.1.0", "git": null, "mode": "walltime", "options": null,
            "environment": {}, "benchmarks": []
        }))
        .unwrap();
        assert!(run.probes.is_empty());
        assert!(serde_json::to_value(&run).unwrap().get("probes").is_none());
    }

    #[test]
    fn scale_runs_are_told_by_their_typed_options() {
        let mut run: Run = serde_json::from_value(serde_json::json!({
            "id": null, "started_at": "x", "ended_at": null, "status": "complete",
            "tool_version": "0.1.0", "git": null, "mode": "walltime",
            "options": {"kind": "scale", "param": "threads", "values": ["1", "2"],
                        "throughput": {"work_per_thread": 1000.0}, "runs": 5, "warmup": 1,
                        "shell": null, "timeout_s": null, "counters": "software"},
            "environment": {}, "benchmarks": []
        }))
        .unwrap();
        let o = run.scale_options().expect("a sweep");
        assert_eq!(o.param, "threads");
        assert_eq!(
            o.throughput,
            Some(schema::ThroughputMethod::WorkPerThread(1000.0))
        );
        // Written back, the options are the same JSON.
        let back = serde_json::to_value(&o).unwrap();
        assert_eq!(back, run.options);
        // Only kind and param are needed; a run of `perfsleuth run` is no sweep.
        run.options = serde_json::json!({"kind": "scale", "param": "n"});
        assert!(run.is_scale_sweep());
        assert_eq!(run.origin(), RunOrigin::Scale);
        run.options = serde_json::json!({"commands": ["true"], "warmup": 3});
        assert!(!run.is_scale_sweep());
        run.options = serde_json::Value::Null;
        assert!(!run.is_scale_sweep());
    }

    #[test]
    fn metric_reads_the_matching_sample_field() {
        let s = Sample {
            wall_ns: 5,
            peak_rss_bytes: 7,
            involuntary_cs: 9,
            ..Sample::default()
        };
        assert_eq!(Metric::Wall.of(&s), 5.0);
        assert_eq!(Metric::PeakRss.of(&s), 7.0);
        assert_eq!(Metric::InvoluntaryCs.of(&s), 9.0);
        let ir = Metric::parse("Ir").expect("Ir is a counter");
        assert!(ir.of(&s).is_nan());
        let mut with = s.clone();
        with.counters.insert("Ir".into(), 1234.0);
        assert_eq!(ir.of(&with), 1234.0);
        assert_eq!(
            Metric::parse("throughput").map(|m| m.direction()),
            Some(Direction::Higher)
        );
        assert_eq!(Metric::parse("wall"), Some(Metric::Wall));
        assert_eq!(Metric::parse("nope"), None);
        assert_eq!(serde_json::to_value(ir).unwrap(), "Ir");
        let back: Metric = serde_json::from_value(serde_json::json!("peak_rss")).unwrap();
        assert_eq!(back, Metric::PeakRss);
        let b = Benchmark {
            locks: None,
            stacks: None,
            allocs: None,
            name: "b".into(),
            command: "b".into(),
            argv: vec![],
            parameters: Default::default(),
            facts: Default::default(),
            samples: vec![with.clone(), s.clone()],
            profile: None,
            summaries: Vec::new(),
        };
        assert_eq!(b.values(ir), vec![1234.0]);
        assert!(b.counters().is_empty(), "one sample lacks Ir");
        assert_eq!(
            RunStatus::parse("interrupted"),
            Some(RunStatus::Interrupted)
        );
    }
}

#[cfg(test)]
mod short_commit_tests {
    #[test]
    fn a_commit_is_shown_by_its_first_twelve_characters_and_never_cut_inside_one() {
        let full = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(crate::short_commit(full), "0123456789ab");
        assert_eq!(crate::short_commit("abc"), "abc");
        // A pushed run's commit is any text: `runs` sliced it by bytes and
        // would have panicked inside a multi-byte character.
        assert_eq!(crate::short_commit("aéééééééé"), "aéééééééé");
    }
}
