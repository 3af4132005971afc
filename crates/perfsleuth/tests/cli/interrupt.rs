//! Ctrl-C: SIGINT to perfsleuth's whole process group, as a terminal sends it.

use crate::common::{Out, Sandbox, own_sleep, process_running_with, samples};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `perfsleuth ARGS…` as the leader of a new process group.
fn spawn_in_own_group(sb: &Sandbox, args: &[&str]) -> Child {
    sb.std_cmd()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("spawn perfsleuth")
}

fn signal_group(pgid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([signal, "--", &format!("-{pgid}")])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {signal} -{pgid} failed");
}

/// Waits for the child, killing its group if it hangs.
fn finish(mut child: Child) -> Out {
    let pgid = child.id();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stdout.read_to_end(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            signal_group(pgid, "-KILL");
            let _ = child.wait();
            panic!("perfsleuth did not exit after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Out {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out_t.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err_t.join().unwrap()).into_owned(),
    }
}

/// Polls the store until the latest run has at least `n` samples.
fn wait_for_samples(sb: &Sandbox, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = sb.run(["runs", "--json", "--store", &sb.store()]);
        if out.code == 0 {
            let doc = crate::common::parse_json(&out.stdout);
            if doc["runs"][0]["samples"].as_u64().is_some_and(|s| s >= n) {
                return;
            }
        }
        assert!(Instant::now() < deadline, "no samples appeared: {out:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits (briefly) for processes matching `needle` to be gone.
fn none_left(needle: &str) -> Vec<String> {
    let mut left = process_running_with(needle);
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        left = process_running_with(needle);
    }
    left
}

fn group_is_empty(pgid: u32) -> bool {
    let out = Command::new("pgrep")
        .args(["-g", &pgid.to_string()])
        .output()
        .expect("run pgrep");
    out.stdout.is_empty()
}

#[test]
fn ctrl_c_stores_an_interrupted_run_and_prints_the_partial_summary() {
    let sb = Sandbox::new();
    let sleep = own_sleep(&sb);
    let sleep_cmd = format!("{} 0.05", sleep.display());
    let store = sb.store();
    let child = spawn_in_own_group(
        &sb,
        &[
            "run", "--store", &store, "--warmup", "0", "--runs", "1000", "-n", "sleepy", &sleep_cmd,
        ],
    );
    let pgid = child.id();
    std::thread::sleep(Duration::from_secs(1));
    wait_for_samples(&sb, 2);
    signal_group(pgid, "-INT");
    let out = finish(child);

    assert_eq!(out.code, 130, "{out:?}");
    crate::common::assert_no_panic(&out);
    assert!(out.stdout.contains("Benchmark 1: sleepy"), "{out:?}");
    assert!(
        out.stdout.to_lowercase().contains("interrupted"),
        "the summary says it is partial: {out:?}"
    );
    assert!(out.stderr.contains("Interrupted"), "{out:?}");
    assert!(out.stderr.contains("status interrupted"), "{out:?}");

    let doc = sb.show_json("latest");
    assert_eq!(doc["run"]["status"], "interrupted");
    assert!(doc["run"]["ended_at"].is_string(), "{doc}");
    let n = samples(&doc, 0).len();
    assert!((1..1000).contains(&n), "{n} samples");
    let listed = sb.runs_json();
    assert_eq!(listed[0]["status"], "interrupted");
    assert_eq!(listed[0]["samples"], n as u64);

    let left = none_left(&sleep.display().to_string());
    assert!(left.is_empty(), "sleep children survived Ctrl-C: {left:?}");
    assert!(
        group_is_empty(pgid),
        "processes of perfsleuth's group survived"
    );
}

#[test]
fn ctrl_c_without_a_store_still_summarises() {
    let sb = Sandbox::new();
    let sleep = own_sleep(&sb);
    let sleep_cmd = format!("{} 0.05", sleep.display());
    let child = spawn_in_own_group(
        &sb,
        &[
            "run",
            "--no-store",
            "--warmup",
            "0",
            "--runs",
            "1000",
            "--output",
            "ticks.txt",
            &format!("sh -c 'echo tick; exec {sleep_cmd}'"),
        ],
    );
    let pgid = child.id();
    // No store to poll: wait for a few iterations to have written output.
    let deadline = Instant::now() + Duration::from_secs(30);
    while sb.lines("ticks.txt").len() < 3 {
        assert!(Instant::now() < deadline, "the command never ran");
        std::thread::sleep(Duration::from_millis(50));
    }
    signal_group(pgid, "-INT");
    let out = finish(child);
    assert_eq!(out.code, 130, "{out:?}");
    crate::common::assert_no_panic(&out);
    assert!(out.stdout.contains("Benchmark 1:"), "{out:?}");
    assert!(out.stderr.contains("Interrupted"), "{out:?}");
    assert!(!out.stderr.contains("stored as run"), "{out:?}");
    assert!(sb.files_named(".db").is_empty());
    let left = none_left(&sleep.display().to_string());
    assert!(left.is_empty(), "children survived Ctrl-C: {left:?}");
}

#[test]
fn ctrl_c_during_warmup_stores_an_interrupted_run_without_samples() {
    let sb = Sandbox::new();
    let sleep = own_sleep(&sb);
    let store = sb.store();
    let child = spawn_in_own_group(
        &sb,
        &[
            "run",
            "--store",
            &store,
            "--warmup",
            "1000",
            "--runs",
            "2",
            "--output",
            "ticks.txt",
            &format!("sh -c 'echo tick; exec {} 0.05'", sleep.display()),
        ],
    );
    let pgid = child.id();
    let deadline = Instant::now() + Duration::from_secs(30);
    while sb.lines("ticks.txt").len() < 3 {
        assert!(Instant::now() < deadline, "the command never ran");
        std::thread::sleep(Duration::from_millis(50));
    }
    signal_group(pgid, "-INT");
    let out = finish(child);
    assert_eq!(out.code, 130, "{out:?}");
    crate::common::assert_no_panic(&out);
    let doc = sb.show_json("latest");
    assert_eq!(doc["run"]["status"], "interrupted");
    assert_eq!(samples(&doc, 0).len(), 0);
    let left = none_left(&sleep.display().to_string());
    assert!(left.is_empty(), "children survived Ctrl-C: {left:?}");
}

/// Sends `signal` to a measuring run's group: the run stops with exit
/// `code`, is stored as interrupted with its samples, and leaves no child.
fn stops_like_ctrl_c(signal: &str, code: i32) {
    let sb = Sandbox::new();
    let sleep = own_sleep(&sb);
    let child = long_sleep_run(&sb, &sleep);
    let pgid = child.id();
    wait_for_samples(&sb, 2);
    signal_group(pgid, signal);
    let out = finish(child);
    crate::common::assert_no_panic(&out);
    assert_eq!(out.code, code, "128 + {signal} expected: {out:?}");
    let doc = sb.show_json("latest");
    assert_eq!(doc["run"]["status"], "interrupted");
    assert!(!samples(&doc, 0).is_empty());
    let left = none_left(&sleep.display().to_string());
    assert!(left.is_empty(), "children survived {signal}: {left:?}");
}

#[test]
fn sigterm_is_handled_like_ctrl_c() {
    stops_like_ctrl_c("-TERM", 143);
}

#[test]
fn a_killed_run_keeps_its_samples_and_the_store_stays_usable() {
    let sb = Sandbox::new();
    let sleep = own_sleep(&sb);
    let store = sb.store();
    let child = long_sleep_run(&sb, &sleep);
    let pgid = child.id();
    wait_for_samples(&sb, 3);
    signal_group(pgid, "-KILL");
    let out = finish(child);
    assert_eq!(out.code, -1, "killed by a signal: {out:?}");

    let runs = sb.runs_json();
    assert_eq!(
        runs[0]["status"], "running",
        "nobody could mark it: {runs:?}"
    );
    assert!(runs[0]["samples"].as_u64().unwrap() >= 3, "{runs:?}");
    assert_eq!(runs[0]["ended_at"], serde_json::Value::Null);
    sb.run(["show", "--store", &store]).ok();

    sb.bench(["--warmup", "0", "--runs", "2", "true"]).ok();
    let runs = sb.runs_json();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["id"], 2);
    assert_eq!(runs[0]["status"], "complete");
    let _ = none_left(&sleep.display().to_string());
}

/// `perfsleuth run --store … sleep 0.05` (many runs) started in its own group.
fn long_sleep_run(sb: &Sandbox, sleep: &std::path::Path) -> Child {
    sleep_run(sb, sleep, "1000", "0.05")
}

/// `perfsleuth run --store … --runs RUNS 'SLEEP SECONDS'` in its own group.
fn sleep_run(sb: &Sandbox, sleep: &std::path::Path, runs: &str, seconds: &str) -> Child {
    let store = sb.store();
    spawn_in_own_group(
        sb,
        &[
            "run",
            "--store",
            &store,
            "--warmup",
            "0",
            "--runs",
            runs,
            &format!("{} {seconds}", sleep.display()),
        ],
    )
}

#[test]
fn sighup_is_handled_like_sigterm() {
    // A closed terminal hangs up the whole session.
    stops_like_ctrl_c("-HUP", 129);
}

/// Starts a run of a 300 s sleep, kills perfsleuth with SIGKILL (its pid
/// alone, or its whole group), and returns the sleeps still alive after.
fn sleeps_left_after_kill_9(group: bool) -> Vec<String> {
    let sb = Sandbox::new();
    let sleep = own_sleep(&sb);
    // A sleep long enough that only being killed ends it within the test.
    let child = sleep_run(&sb, &sleep, "3", "300");
    // perfsleuth's own command line holds the same words: only processes
    // whose command line starts with them are the sleep.
    let needle = format!("{} 300", sleep.display());
    let sleeping = || -> Vec<String> {
        process_running_with(&needle)
            .into_iter()
            .filter(|p| {
                p.split_once(": ")
                    .is_some_and(|(_, cmd)| cmd.starts_with(&needle))
            })
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while sleeping().is_empty() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let target = if group {
        format!("-{}", child.id())
    } else {
        child.id().to_string()
    };
    let status = Command::new("kill")
        .args(["-KILL", "--", &target])
        .status()
        .unwrap();
    assert!(status.success());
    let out = finish(child);
    assert_eq!(out.code, -1, "{out:?}");
    let mut left = sleeping();
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        left = sleeping();
    }
    for p in &left {
        let _ = Command::new("kill")
            .args(["-KILL", p.split(':').next().unwrap()])
            .status();
    }
    left
}

#[test]
fn a_command_running_when_perfsleuth_is_killed_is_not_orphaned() {
    let left = sleeps_left_after_kill_9(false);
    assert!(left.is_empty(), "the command outlived perfsleuth: {left:?}");
}

#[test]
fn a_command_running_when_perfsleuths_group_is_killed_is_not_orphaned() {
    // What a CI runner does when a job is cancelled.
    let left = sleeps_left_after_kill_9(true);
    assert!(
        left.is_empty(),
        "the command outlived perfsleuth's group: {left:?}"
    );
}

/// Issue 53: samples are committed a batch at a time (every 0.1 s). A run
/// killed with SIGKILL mid-measurement keeps every sample committed before
/// the kill — its first iterations, each once — and stays `running`.
#[test]
fn a_run_killed_with_sigkill_keeps_what_it_committed_and_stays_running() {
    let sb = Sandbox::new();
    let store = sb.store();
    let child = spawn_in_own_group(
        &sb,
        &[
            "run", "--warmup", "0", "--runs", "1000000", "--store", &store, "true",
        ],
    );
    let stored = || -> (String, Vec<u64>) {
        let out = sb.run(["show", "--json", "1", "--store", &store]);
        if out.code != 0 {
            return (String::new(), Vec::new());
        }
        let doc = crate::common::parse_json(&out.stdout);
        let iterations = samples(&doc, 0)
            .iter()
            .map(|s| s["iteration"].as_u64().unwrap())
            .collect();
        (
            doc["run"]["status"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            iterations,
        )
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let seen = loop {
        let (_, iterations) = stored();
        if iterations.len() >= 20 {
            break iterations;
        }
        assert!(Instant::now() < deadline, "no samples were committed");
        std::thread::sleep(Duration::from_millis(50));
    };
    let status = Command::new("kill")
        .args(["-KILL", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = finish(child);
    assert_eq!(out.code, -1, "{out:?}");
    let (status, after) = stored();
    assert_eq!(status, "running", "a killed run stays incomplete");
    assert!(
        after.len() >= seen.len(),
        "{} < {}",
        after.len(),
        seen.len()
    );
    assert_eq!(after[..seen.len()], seen[..], "what was committed is kept");
    let first = after[0];
    assert!(
        after
            .iter()
            .enumerate()
            .all(|(i, &it)| it == first + i as u64),
        "the first iterations, each once: {after:?}"
    );
}
