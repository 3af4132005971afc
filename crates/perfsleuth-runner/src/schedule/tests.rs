//! The schedule, driven by the fake spawner: order, warmups, stopping,
//! failures and interrupts, without starting a process.

use super::*;
use crate::error::Role;
use crate::fake::{Collect, FakeSpawner, exit, ok};
use crate::{RunError, conclude};
use perfsleuth_measure::{CommandId, IoConfig, Outcome};
use perfsleuth_model::{Run, RunStatus, Sample};

fn planned(name: &str) -> Planned {
    Planned {
        name: name.into(),
        command: name.into(),
        argv: vec![name.into()],
        ..Planned::default()
    }
}

fn with_helpers(name: &str) -> Planned {
    let argv = |what: &str| Some(vec![format!("{what}-{name}")]);
    Planned {
        prepare: argv("prep"),
        setup: argv("setup"),
        cleanup: argv("clean"),
        ..planned(name)
    }
}

fn exact(n: u32) -> StopRule {
    StopRule {
        exact: Some(n),
        min_runs: 1,
        max_runs: None,
        budget: Duration::from_secs(3600),
        precision: 0.01,
    }
}

fn schedule(rule: StopRule, warmup: u32, overlap: bool) -> Schedule {
    Schedule {
        rule,
        warmup,
        interleave: true,
        tolerate: Tolerate::Nothing,
        overlap,
        auto_counters: false,
        progress: RoundProgress::default(),
    }
}

fn benches(spawner: &mut FakeSpawner, plans: Vec<Planned>) -> Vec<Bench> {
    benches_with(spawner, plans)
}

fn benches_with(spawner: &mut impl Spawn, plans: Vec<Planned>) -> Vec<Bench> {
    prepare(
        spawner,
        plans,
        &IoConfig::default(),
        &IoConfig::default(),
        None,
        false,
    )
    .expect("prepare")
}

#[test]
fn timed_runs_interleave_in_sweeps_that_alternate_direction_after_the_warmups() {
    for overlap in [false, true] {
        let mut sp = FakeSpawner::new(|_, _| ok(1_000_000));
        let mut b = benches(&mut sp, vec![planned("a"), planned("b")]);
        let mut sink = Collect::default();
        let m = schedule(exact(3), 1, overlap).measure(&mut sp, &mut sink, &mut b, None);
        assert!(m.result.is_ok(), "{:?}", m.result);
        assert_eq!(
            sp.trace(),
            ["a~0", "b~0", "a#0", "b#0", "b#1", "a#1", "a#2", "b#2"],
            "overlap {overlap}"
        );
        // Every sample reached the sink once, in the order measured.
        let order: Vec<(usize, u32)> = sink
            .samples
            .iter()
            .map(|(i, s)| (*i, s.iteration))
            .collect();
        assert_eq!(order, [(0, 0), (1, 0), (1, 1), (0, 1), (0, 2), (1, 2)]);
        assert_eq!(b[0].samples().len(), 3);
        assert_eq!(sp.queued(), 0);
        assert_eq!(sink.progress, 6);
        // Pipelining keeps the spawner ahead only where overlap is allowed.
        assert_eq!(sp.max_queued > 1, overlap, "max queued {}", sp.max_queued);
    }
}

#[test]
fn without_interleaving_each_benchmark_runs_whole_with_its_helpers() {
    let mut sp = FakeSpawner::new(|_, _| ok(1_000_000));
    let mut b = benches(&mut sp, vec![with_helpers("a"), with_helpers("b")]);
    let mut s = schedule(exact(2), 1, false);
    s.interleave = false;
    let m = s.measure(&mut sp, &mut Collect::default(), &mut b, None);
    assert!(m.result.is_ok());
    assert_eq!(
        sp.trace(),
        [
            "setup-a~0",
            "prep-a~0",
            "a~0",
            "prep-a~0",
            "a#0",
            "prep-a~0",
            "a#1",
            "clean-a~0",
            "setup-b~0",
            "prep-b~0",
            "b~0",
            "prep-b~0",
            "b#0",
            "prep-b~0",
            "b#1",
            "clean-b~0",
        ]
    );
}

#[test]
fn conclude_runs_after_every_warmup_and_timed_run_and_must_succeed() {
    for overlap in [false, true] {
        let mut sp = FakeSpawner::new(|_, _| ok(1_000_000));
        let mut p = planned("a");
        p.conclude = Some(vec!["after-a".into()]);
        let mut b = benches(&mut sp, vec![p, planned("b")]);
        let m =
            schedule(exact(2), 1, overlap).measure(&mut sp, &mut Collect::default(), &mut b, None);
        assert!(m.result.is_ok());
        assert_eq!(
            sp.trace(),
            [
                "a~0",
                "after-a~0",
                "b~0",
                "a#0",
                "after-a~0",
                "b#0",
                "b#1",
                "a#1",
                "after-a~0"
            ],
            "overlap {overlap}"
        );
        assert_eq!(b[0].samples().len(), 2);
    }
    // A failing --conclude stops the run, naming it.
    let mut sp = FakeSpawner::new(|cmd, _| {
        if cmd == "after-a" {
            exit(1)
        } else {
            ok(1_000_000)
        }
    });
    let mut p = planned("a");
    p.conclude = Some(vec!["after-a".into()]);
    let mut b = benches(&mut sp, vec![p]);
    let m = schedule(exact(2), 0, true).measure(&mut sp, &mut Collect::default(), &mut b, None);
    let err = format!("{:?}", m.result.unwrap_err());
    assert!(err.contains("--conclude"), "{err}");
}

#[test]
fn the_eta_counts_every_planned_round_not_only_the_current_one() {
    // Two runs a round, three rounds, 1 ms a run: after run k, 6 - k runs
    // (of 1 ms) are left, across the rounds still to come.
    let mut sp = FakeSpawner::new(|_, _| ok(1_000_000));
    let mut b = benches(&mut sp, vec![planned("a")]);
    let mut sink = Collect::default();
    let (m, rounds, _) = schedule(exact(2), 0, false).measure_until(
        &mut sp,
        &mut sink,
        &mut b,
        None,
        3,
        Duration::ZERO,
        |_, _| false,
    );
    assert!(m.result.is_ok());
    assert_eq!(rounds, 3);
    let ms: Vec<u128> = sink.etas.iter().map(|d| d.as_millis()).collect();
    assert_eq!(ms, [5, 4, 3, 2, 1, 0]);
}

#[test]
fn interleaved_helpers_wrap_all_benchmarks() {
    let mut sp = FakeSpawner::new(|_, _| ok(1_000_000));
    let mut b = benches(&mut sp, vec![with_helpers("a"), planned("b")]);
    let m = schedule(exact(1), 0, true).measure(&mut sp, &mut Collect::default(), &mut b, None);
    assert!(m.result.is_ok());
    assert_eq!(
        sp.trace(),
        ["setup-a~0", "prep-a~0", "a#0", "b#0", "clean-a~0"]
    );
}

#[test]
fn identical_samples_stop_at_min_runs_noisy_ones_at_max_runs() {
    let rule = StopRule {
        exact: None,
        min_runs: 10,
        max_runs: Some(40),
        budget: Duration::from_secs(3600),
        precision: 0.01,
    };
    let mut sp = FakeSpawner::new(|p, n| {
        if p == "steady" {
            ok(1_000_000)
        } else {
            ok(1_000_000 + (n as u64 % 2) * 600_000)
        }
    });
    let mut b = benches(&mut sp, vec![planned("steady"), planned("noisy")]);
    let m = schedule(rule, 0, true).measure(&mut sp, &mut Collect::default(), &mut b, None);
    assert!(m.result.is_ok());
    // The precision rule is met at the 10th sample; runs already queued then
    // still count (the decision is never undone), so a few more may arrive.
    let steady = b[0].samples().len();
    assert!((10..=12).contains(&steady), "steady took {steady} runs");
    assert_eq!(b[1].samples().len(), 40, "noisy runs until --max-runs");
    assert_eq!(sp.queued(), 0);
}

#[test]
fn the_time_budget_stops_a_benchmark_that_never_gets_precise() {
    let rule = StopRule {
        exact: None,
        min_runs: 3,
        max_runs: None,
        budget: Duration::from_millis(50),
        precision: 0.0001,
    };
    let mut sp = FakeSpawner::new(|_, n| ok(10_000_000 + (n as u64 % 3) * 3_000_000));
    let mut b = benches(&mut sp, vec![planned("a")]);
    let m = schedule(rule, 0, false).measure(&mut sp, &mut Collect::default(), &mut b, None);
    assert!(m.result.is_ok());
    let n = b[0].samples().len();
    assert!(
        (4..=6).contains(&n),
        "{n} runs of ~12 ms for a 50 ms budget"
    );
}

#[test]
fn a_failing_benchmark_is_set_aside_and_the_others_are_measured_to_the_end() {
    let mut sp = FakeSpawner::new(|p, n| {
        // b's third execution (its second timed run) fails; its re-run too.
        if p == "b" && n >= 2 {
            exit(3)
        } else {
            ok(1_000_000)
        }
    });
    let mut b = benches(&mut sp, vec![with_helpers("a"), planned("b")]);
    let mut sink = Collect::default();
    let m = schedule(exact(5), 1, true).measure(&mut sp, &mut sink, &mut b, None);
    let Err(Stop::Failed(RunError::CommandFailed {
        label,
        how,
        details,
        role,
    })) = m.result
    else {
        panic!("expected a command failure, got {:?}", m.result);
    };
    assert_eq!(label, "command `b`");
    assert_eq!(how, "exited with code 3");
    assert_eq!(role, Role::Timed);
    assert!(
        details.iter().any(|d| d.contains("stderr of b")),
        "{details:?}"
    );
    assert_eq!(sp.queued(), 0, "every queued request was answered");
    let trace = sp.trace();
    let failed = trace.iter().position(|r| r == "b#1").expect("b#1 ran");
    // After the failure: the untimed re-run of b for its stderr; then a
    // goes on to its 5 runs (the run queued behind the failure, skipped,
    // again under its iteration) and its cleanup. (It stopped here with a
    // one run measured: an export got nothing of it.)
    assert_eq!(
        trace[failed + 1..],
        [
            "b~0",
            "prep-a~0",
            "a#1",
            "prep-a~0",
            "a#2",
            "prep-a~0",
            "a#3",
            "prep-a~0",
            "a#4",
            "clean-a~0"
        ],
        "{trace:?}"
    );
    assert_eq!(b[0].samples().len(), 5);
    assert_eq!(b[1].samples().len(), 1);
    // Every sample was handed to the sink.
    assert_eq!(sink.samples.len(), 6);
}

#[test]
fn a_warmup_that_fails_sets_its_benchmark_aside_before_any_timed_run() {
    // hyperfine's `true false` with a warmup: false fails at once.
    let mut sp = FakeSpawner::new(|p, _| if p == "false" { exit(1) } else { ok(1_000) });
    let mut b = benches(&mut sp, vec![planned("true"), planned("false")]);
    let m = schedule(exact(3), 1, true).measure(&mut sp, &mut Collect::default(), &mut b, None);
    assert!(
        matches!(&m.result, Err(Stop::Failed(RunError::CommandFailed { label, .. })) if label == "command `false`"),
        "{:?}",
        m.result
    );
    assert_eq!(b[0].samples().len(), 3, "true measured to the end");
    assert_eq!(b[1].samples().len(), 0);
}

#[test]
fn an_intermittent_failure_says_so() {
    let mut sp = FakeSpawner::new(|p, n| if p == "a" && n == 1 { exit(1) } else { ok(5) });
    let mut b = benches(&mut sp, vec![planned("a")]);
    let m = schedule(exact(3), 0, false).measure(&mut sp, &mut Collect::default(), &mut b, None);
    let Err(Stop::Failed(RunError::CommandFailed { details, .. })) = m.result else {
        panic!("{:?}", m.result);
    };
    assert_eq!(
        details[0],
        "a re-run succeeded: the failure is intermittent"
    );
}

#[test]
fn tolerated_failures_are_measurements() {
    let mut sp = FakeSpawner::new(|_, _| exit(7));
    let mut s = schedule(exact(4), 0, true);
    s.tolerate = Tolerate::ExitCodes(vec![7]);
    // The spawner tolerates what its command was prepared with.
    let mut b2 = prepare(
        &mut sp,
        vec![planned("a")],
        &IoConfig {
            tolerate: s.tolerate.clone(),
            ..IoConfig::default()
        },
        &IoConfig::default(),
        None,
        false,
    )
    .expect("prepare");
    let m = s.measure(&mut sp, &mut Collect::default(), &mut b2, None);
    assert!(m.result.is_ok(), "{:?}", m.result);
    assert_eq!(b2[0].samples().len(), 4);
    assert!(b2[0].samples().iter().all(|x| x.exit_code == Some(7)));
}

#[test]
fn an_interrupt_stops_without_cleanup_and_keeps_the_samples() {
    let mut sp = FakeSpawner::new(|p, n| {
        if p == "a" && n == 3 {
            Outcome::Interrupted
        } else {
            ok(1_000)
        }
    });
    let mut b = benches(&mut sp, vec![with_helpers("a")]);
    let mut sink = Collect::default();
    let m = schedule(exact(10), 0, true).measure(&mut sp, &mut sink, &mut b, None);
    assert!(matches!(m.result, Err(Stop::Interrupted)), "{:?}", m.result);
    assert!(
        !sp.trace().iter().any(|r| r.starts_with("clean")),
        "{:?}",
        sp.trace()
    );
    assert_eq!(sp.queued(), 0);
    assert_eq!(sink.samples.len(), b[0].samples().len());
    assert!(!b[0].samples().is_empty());

    let mut run = Run {
        id: None,
        uuid: None,
        started_at: String::new(),
        ended_at: None,
        status: RunStatus::Running,
        tool_version: String::new(),
        git: None,
        mode: perfsleuth_model::Mode::Walltime,
        options: serde_json::Value::Null,
        environment: Environment::default(),
        benchmarks: Vec::new(),
        probes: Vec::new(),
    };
    conclude(&mut run, &m.result, &sp, &mut sink).expect("conclude");
    assert_eq!(run.status, RunStatus::Interrupted);
    let finished = sink.finished.expect("the sink saw the end");
    assert_eq!(finished.status, RunStatus::Interrupted);
    assert_eq!(
        finished.environment.get("measure.peak_rss_floor_bytes"),
        Some("1048576")
    );
}

#[test]
fn a_failing_sink_stops_the_run() {
    let mut sp = FakeSpawner::new(|_, _| ok(1_000));
    let mut b = benches(&mut sp, vec![planned("a")]);
    let mut sink = Collect {
        fail_at: Some(2),
        ..Collect::default()
    };
    let m = schedule(exact(10), 0, true).measure(&mut sp, &mut sink, &mut b, None);
    assert!(
        matches!(&m.result, Err(Stop::Failed(RunError::Sink(e))) if e.to_string() == "disk full"),
        "{:?}",
        m.result
    );
    assert_eq!(sp.queued(), 0);
}

#[test]
fn auto_counters_are_decided_from_the_warmups() {
    for (wall, opened) in [(20_000_000u64, true), (1_000_000, false)] {
        let mut sp = FakeSpawner::new(move |_, _| ok(wall));
        let mut b = benches(&mut sp, vec![planned("a")]);
        let mut s = schedule(exact(2), 1, false);
        s.auto_counters = true;
        let m = s.measure(&mut sp, &mut Collect::default(), &mut b, None);
        assert!(m.result.is_ok());
        assert_eq!(!sp.counters.is_empty(), opened, "warmup of {wall} ns");
        assert!(m.counter_env.get("measure.counters_auto").is_some());
    }
}

#[test]
fn precision_stop_is_not_undone_by_runs_still_in_flight() {
    let rule = StopRule {
        exact: None,
        min_runs: 10,
        max_runs: None,
        budget: Duration::from_secs(3600),
        precision: 0.01,
    };
    let mut sp = FakeSpawner::new(|_, _| ok(1));
    let mut l = benches(&mut sp, vec![planned("x")]).remove(0);
    let push = |l: &mut Bench, wall_ns: u64| {
        l.samples.push(Sample {
            wall_ns,
            ..Sample::default()
        });
        l.update_done(&rule);
    };
    for _ in 0..9 {
        push(&mut l, 1_000_000);
        assert!(!l.done, "below --min-runs");
    }
    push(&mut l, 1_000_000);
    assert!(l.done, "identical samples: the CI is zero wide");
    // Queued runs arrive after the decision (and before the next check point).
    push(&mut l, 1_000_000);
    push(&mut l, 1_300_000);
    assert!(l.done);
    assert!(!l.wants_more(&rule));
}

#[test]
fn short_runs_are_polled_with_a_deep_queue_and_every_sample_still_arrives() {
    // 100 µs runs: below the polling threshold, so the schedule sleeps between
    // looks and keeps enough runs queued to cover a poll interval.
    let mut sp = FakeSpawner::new(|_, _| ok(100_000));
    sp.not_ready = 2;
    let mut b = benches(&mut sp, vec![planned("a"), planned("b")]);
    let mut sink = Collect::default();
    let m = schedule(exact(30), 1, true).measure(&mut sp, &mut sink, &mut b, None);
    assert!(m.result.is_ok(), "{:?}", m.result);
    assert!(sp.empty_polls > 0, "the poll path ran");
    assert!(sp.max_queued > 2, "queued {} ahead", sp.max_queued);
    assert_eq!(sink.samples.len(), 60);
    assert_eq!(sp.queued(), 0);
    // The interleaved order survives the deep queue.
    let timed: Vec<String> = sp.trace().into_iter().filter(|r| r.contains('#')).collect();
    assert_eq!(&timed[..4], ["a#0", "b#0", "b#1", "a#1"]);
}

#[test]
fn a_spawner_error_stops_the_run_with_the_command_named() {
    struct Broken(FakeSpawner);
    impl Spawn for Broken {
        fn prepare(
            &mut self,
            a: &[String],
            io: &IoConfig,
        ) -> Result<CommandId, perfsleuth_measure::MeasureError> {
            self.0.prepare(a, io)
        }
        fn enable_counters(
            &mut self,
            c: &perfsleuth_measure::CounterConfig,
        ) -> Result<perfsleuth_measure::CounterStatus, perfsleuth_measure::MeasureError> {
            self.0.enable_counters(c)
        }
        fn begin(
            &mut self,
            id: CommandId,
            i: u32,
            c: bool,
        ) -> Result<(), perfsleuth_measure::MeasureError> {
            self.0.begin(id, i, c)
        }
        fn finish(&mut self) -> Result<Outcome, perfsleuth_measure::MeasureError> {
            let _ = self.0.finish();
            Err(perfsleuth_measure::MeasureError::Interrupted)
        }
        fn try_finish(&mut self) -> Result<Option<Outcome>, perfsleuth_measure::MeasureError> {
            self.finish().map(Some)
        }
        fn run_anyway(
            &mut self,
            id: CommandId,
        ) -> Result<Outcome, perfsleuth_measure::MeasureError> {
            self.0.run_anyway(id)
        }
        fn stderr_tail(&mut self, id: CommandId, n: usize) -> String {
            self.0.stderr_tail(id, n)
        }
        fn resume(&mut self) -> Result<(), perfsleuth_measure::MeasureError> {
            self.0.resume()
        }
        fn peak_rss_floor(&self) -> Option<u64> {
            None
        }
    }
    let mut sp = Broken(FakeSpawner::new(|_, _| ok(1_000_000)));
    let mut b = benches_with(&mut sp, vec![planned("a")]);
    let m = schedule(exact(3), 0, false).measure(&mut sp, &mut Collect::default(), &mut b, None);
    assert!(
        matches!(&m.result, Err(Stop::Failed(RunError::Measure { what, .. })) if what == "command"),
        "{:?}",
        m.result
    );
}

#[test]
fn undecided_results_get_more_rounds_until_decided_or_out_of_time() {
    let mut sp = FakeSpawner::new(|_, _| ok(1_000));
    let mut b = benches(&mut sp, vec![with_helpers("a"), planned("b")]);
    let mut looks = Vec::new();
    let (m, rounds, last) = schedule(exact(3), 1, true).measure_until(
        &mut sp,
        &mut Collect::default(),
        &mut b,
        None,
        1,
        Duration::from_secs(60),
        |benches, look| {
            looks.push(look);
            // Undecided until each benchmark has 9 samples (three rounds).
            benches.iter().any(|x| x.samples().len() < 9)
        },
    );
    assert!(m.result.is_ok());
    assert_eq!(rounds, 3);
    // Looks at rounds 1, 2 and 3 (the grid from one planned round).
    assert_eq!(looks, [0, 1, 2]);
    assert_eq!(last, Some(2));
    assert_eq!(b[0].samples().len(), 9);
    // Later rounds: setup and cleanup again, no warmup, iterations continue.
    let trace = sp.trace();
    assert_eq!(trace.iter().filter(|r| r.starts_with("setup-a")).count(), 3);
    assert_eq!(trace.iter().filter(|r| r.starts_with("clean-a")).count(), 3);
    assert_eq!(
        trace.iter().filter(|r| *r == "a~0").count(),
        1,
        "one warmup: {trace:?}"
    );
    assert!(trace.contains(&"a#8".to_string()), "{trace:?}");
    // No time for another round: one round only, whatever `undecided` says.
    let mut sp = FakeSpawner::new(|_, _| ok(1_000));
    let mut b = benches(&mut sp, vec![planned("a")]);
    let (_, rounds, last) = schedule(exact(3), 0, true).measure_until(
        &mut sp,
        &mut Collect::default(),
        &mut b,
        None,
        1,
        Duration::ZERO,
        |_, _| true,
    );
    assert_eq!(rounds, 1);
    assert_eq!(last, None, "a comparison made once, at its full α");
    assert_eq!(b[0].samples().len(), 3);
}

#[test]
fn the_comparison_is_looked_at_on_a_geometric_grid_of_rounds() {
    // Two planned rounds; undecided until the fourth look: the looks see
    // 2, 3, 5 and 8 rounds (1.5× each, rounded up), never one in between.
    let mut sp = FakeSpawner::new(|_, _| ok(1_000));
    let mut b = benches(&mut sp, vec![planned("a"), planned("b")]);
    let mut seen = Vec::new();
    let (m, rounds, last) = schedule(exact(2), 0, true).measure_until(
        &mut sp,
        &mut Collect::default(),
        &mut b,
        None,
        2,
        Duration::from_secs(600),
        |benches, look| {
            seen.push((look, benches[0].samples().len() / 2));
            look < 3
        },
    );
    assert!(m.result.is_ok());
    assert_eq!(seen, [(0, 2), (1, 3), (2, 5), (3, 8)]);
    assert_eq!((rounds, last), (8, Some(3)));
}

#[test]
fn fixed_rounds_rotate_the_first_benchmark_and_number_their_samples() {
    let mut sp = FakeSpawner::new(|_, _| ok(1_000));
    let mut b = benches(&mut sp, vec![planned("a"), planned("b"), planned("c")]);
    let mut sink = Collect::default();
    let (m, rounds, _) = schedule(exact(1), 0, false).measure_until(
        &mut sp,
        &mut sink,
        &mut b,
        None,
        3,
        Duration::ZERO,
        |_, _| false,
    );
    assert!(m.result.is_ok());
    assert_eq!(rounds, 3);
    assert_eq!(
        sp.trace(),
        [
            "a#0", "b#0", "c#0", "b#1", "c#1", "a#1", "c#2", "a#2", "b#2"
        ]
    );
    let of_a: Vec<(u32, u32)> = sink
        .samples
        .iter()
        .filter(|(i, _)| *i == 0)
        .map(|(_, s)| (s.iteration, s.round))
        .collect();
    assert_eq!(of_a, [(0, 0), (1, 1), (2, 2)]);
}

#[test]
fn a_sink_that_keeps_nothing_still_leaves_every_sample_in_the_benchmarks() {
    let mut sp = FakeSpawner::new(|_, _| ok(1_000));
    let mut b = benches(&mut sp, vec![planned("a")]);
    let m = schedule(exact(4), 0, true).measure(&mut sp, &mut crate::Discard, &mut b, None);
    assert!(m.result.is_ok());
    assert_eq!(b[0].samples().len(), 4);
}

#[test]
fn every_other_sweep_runs_backwards_so_each_side_of_a_pair_goes_first_as_often() {
    let order = |start, n, len| -> Vec<usize> {
        let s = super::Serpentine::new(start);
        (0..len).map(|k| s.at(k, n)).collect()
    };
    assert_eq!(order(0, 2, 8), [0, 1, 1, 0, 0, 1, 1, 0]);
    assert_eq!(order(1, 2, 4), [1, 0, 0, 1]);
    assert_eq!(order(0, 3, 9), [0, 1, 2, 2, 1, 0, 0, 1, 2]);
    assert_eq!(order(2, 3, 6), [2, 0, 1, 1, 0, 2]);
    assert_eq!(order(0, 1, 3), [0, 0, 0]);
}
