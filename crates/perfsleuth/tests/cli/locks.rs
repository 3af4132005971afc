//! `run --locks` and `scale --locks` through the real binary, on the
//! repository's `counters` example (built by `cargo test` with the other
//! examples): the mutex named, the padded design without lock waits, the
//! lock named in the scale diagnosis, the report stored; and the bad
//! input: no privileges (an error when asked, a note under `auto`),
//! simulation mode, Ctrl-C while attached (nothing left loaded, by bpftool).
//! Needs root and BTF (`bpf` in PERFSLEUTH_TEST_REQUIRE).

use crate::common::{BIN, Out, Sandbox, parse_json};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One test at a time: the bpftool check must not see another test's tracer.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// This test's turn, where the tracer can load here: root and BTF (else the skip).
fn traceable(test: &str) -> Option<std::sync::MutexGuard<'static, ()>> {
    let turn = one_at_a_time();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let btf = std::path::Path::new("/sys/kernel/btf/vmlinux").exists();
    if !(root && btf) {
        perfsleuth_testkit::skip("bpf", format!("{test}: needs root and BTF"));
        return None;
    }
    Some(turn)
}

/// The `counters` example next to this test binary (target/<profile>/examples).
fn counters() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    let path = dir.join("examples").join("counters");
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/counters.rs");
    let modified = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    assert!(
        modified(&path) >= modified(std::path::Path::new(source)),
        "{path:?} is missing or older than its source: `cargo test --workspace` builds the examples"
    );
    path
}

fn locks_of(doc: &Value, bench: usize) -> &Value {
    &doc["run"]["benchmarks"][bench]["locks"]
}

#[test]
fn run_locks_names_the_mutex_and_the_padded_design_has_no_lock_waits() {
    let Some(_turn) =
        traceable("run_locks_names_the_mutex_and_the_padded_design_has_no_lock_waits")
    else {
        return;
    };
    let sb = Sandbox::new();
    let c = counters();
    let mutex = format!("{} --mode mutex --threads 4 --ops 100000", c.display());
    let padded = format!("{} --mode padded --threads 4 --ops 100000", c.display());
    let out = sb
        .bench([
            "--locks",
            "--runs",
            "3",
            "--warmup",
            "1",
            "-n",
            "mutex",
            &mutex,
            "-n",
            "padded",
            &padded,
            "--export-json",
            "out.json",
        ])
        .ok();
    let doc = parse_json(&std::fs::read_to_string(sb.path("out.json")).unwrap());
    let m = locks_of(&doc, 0);
    assert_eq!(m["runs"], 4, "three timed runs and the warmup: {m}");
    let first = &m["sites"][0];
    assert_eq!(first["function"], "counters::count_locked", "{m}");
    assert_eq!(first["kind"], "mutex");
    assert!(
        first["location"]
            .as_str()
            .unwrap()
            .starts_with("counters.rs:"),
        "line tables of the debug build: {first}"
    );
    // Ranked first by its wait, above every other site (a share of the
    // wait is the scheduler's as much as the program's: order, not share).
    let wait = |s: &Value| s["wait_ns"].as_u64().unwrap();
    assert!(
        m["sites"].as_array().unwrap()[1..]
            .iter()
            .filter(|s| perfsleuth_model::LockSite::is_lock_kind(s["kind"].as_str().unwrap()))
            .all(|s| wait(s) < wait(first)),
        "the mutex waits longest of the locks: {m}"
    );
    assert!(m["lock_waits"].as_u64().unwrap() > 0);
    assert_eq!(m["events"]["dropped_waits"], 0);
    assert_eq!(m["events"]["dropped_samples"], 0);
    let p = locks_of(&doc, 1);
    assert_eq!(p["lock_waits"], 0, "padded counters take no lock: {p}");
    assert!(
        out.stdout
            .contains("at `counters::count_locked` (counters.rs:"),
        "{out:?}"
    );
    assert!(out.stdout.contains("no lock waits"), "{out:?}");
    assert!(out.stdout.contains("none lost"), "{out:?}");
    // In the HTML report, with its sites and stacks.
    let store = sb.store();
    sb.run(["report", "--store", &store, "latest", "-o", "locks.html"])
        .ok();
    let html = std::fs::read_to_string(sb.path("locks.html")).unwrap();
    assert!(html.contains("Lock waits (eBPF)"), "no lock section");
    assert!(
        html.contains("<td>counters::count_locked</td>"),
        "no site row"
    );
    assert!(html.contains("Stack at counters::count_locked (mutex)"));
    // Stored with the run.
    let shown = sb.show_json("latest");
    assert_eq!(
        shown["run"]["benchmarks"][0]["locks"]["sites"][0]["function"], "counters::count_locked",
        "{shown}"
    );
}

#[test]
fn scale_names_the_lock_at_each_level_and_in_the_diagnosis() {
    let Some(_turn) = traceable("scale_names_the_lock_at_each_level_and_in_the_diagnosis") else {
        return;
    };
    let sb = Sandbox::new();
    let c = counters();
    let store = sb.store();
    // --locks is auto by default in scale.
    let out = sb
        .run([
            "scale",
            "--store",
            &store,
            "--warmup",
            "0",
            "--runs",
            "2",
            "--param",
            "threads=1,2,4,8",
            "--work-per-thread",
            "100000",
            "--json",
            "--",
            c.to_str().unwrap(),
            "--mode",
            "mutex",
            "--threads",
            "{threads}",
            "--ops",
            "100000",
        ])
        .ok();
    let doc = parse_json(&out.stdout);
    let points = doc["points"].as_array().unwrap();
    assert!(
        points.iter().all(|p| p["locks"].is_object()),
        "every level traced: {doc}"
    );
    let eight = &points[3]["locks"];
    assert_eq!(
        eight["sites"][0]["function"], "counters::count_locked",
        "{eight}"
    );
    let evidence = doc["diagnosis"][0]["evidence"].to_string();
    assert!(
        evidence.contains("lock wait") && evidence.contains("counters::count_locked"),
        "the diagnosis names the lock: {doc}"
    );
    if doc["diagnosis"][0]["kind"] == "coherency" {
        assert!(
            doc["diagnosis"][0]["headline"]
                .as_str()
                .unwrap()
                .starts_with("coherency/contention at `counters::count_locked`'s mutex"),
            "{doc}"
        );
    }
}

/// perfsleuth as user nobody (no privileges), in /tmp.
fn as_nobody(args: &[&str]) -> Out {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(BIN)
        .args(args)
        .current_dir("/tmp")
        .env("HOME", "/tmp")
        .env("NO_COLOR", "1")
        .env_remove("PERFSLEUTH_STORE")
        .output()
        .expect("setpriv runs")
        .into()
}

#[test]
fn without_privileges_locks_is_an_error_and_auto_a_note() {
    let Some(_turn) = traceable("without_privileges_locks_is_an_error_and_auto_a_note") else {
        return;
    };
    as_nobody(&["run", "--locks", "--no-store", "--runs", "2", "true"])
        .usage_error("cannot trace locks: tracing locks needs root");
    // Refused before anything is stored: no run is left behind.
    let shared = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        shared.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let store = format!("sqlite:{}/r.db", shared.path().display());
    as_nobody(&["run", "--locks", "--store", &store, "--runs", "2", "true"])
        .usage_error("cannot trace locks");
    let listed = Command::new(BIN)
        .args(["runs", "--json", "--store", &store])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        !listed.status.success()
            || parse_json(&text)["runs"]
                .as_array()
                .is_some_and(Vec::is_empty),
        "a refused --locks stored a run: {text}"
    );
    let out = as_nobody(&[
        "scale",
        "--no-store",
        "--warmup",
        "0",
        "--runs",
        "1",
        "--param",
        "n=1,2",
        "--throughput-regex",
        "ops/s: ([0-9]+)",
        "--",
        "sh",
        "-c",
        "echo ops/s: {n}000",
    ])
    .ok();
    assert!(
        out.stderr
            .contains("note: locks not traced: tracing locks needs root"),
        "{out:?}"
    );
    assert!(!out.stdout.contains("Locks (eBPF)"), "{out:?}");
}

#[test]
fn locks_with_simulation_or_a_bad_value_is_refused() {
    let _one = one_at_a_time();
    let sb = Sandbox::new();
    sb.run(["run", "--locks=sometimes", "--no-store", "true"])
        .clap_error("sometimes");
    if perfsleuth_testkit::tools_present("locks_with_simulation_is_refused", &["valgrind"]) {
        sb.run([
            "run",
            "--mode",
            "simulation",
            "--locks",
            "--no-store",
            "true",
        ])
        .usage_error("--locks traces the threads of real runs");
    }
}

/// The names of our programs that `bpftool prog` lists.
fn loaded_by_us() -> Vec<String> {
    let out = Command::new("bpftool")
        .args(["prog", "show"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("psl_")))
        .map(str::to_string)
        .collect()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_while_attached_leaves_nothing_loaded() {
    let test = "ctrl_c_while_attached_leaves_nothing_loaded";
    let Some(_turn) = traceable(test) else {
        return;
    };
    if !perfsleuth_testkit::tools_present(test, &["bpftool"]) {
        return;
    }
    // The kernel frees detached programs after an RCU grace period.
    wait_for("no programs of ours before the test", || {
        loaded_by_us().is_empty()
    });
    let sb = Sandbox::new();
    let mut child = sb
        .std_cmd()
        .args(["run", "--locks", "--no-store", "--runs", "50", "sleep 0.2"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the tracer to attach", || loaded_by_us().len() == 5);
    // SAFETY: kill on the child's pid with a valid signal.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "Ctrl-C exits 130");
    wait_for("every program detached and freed", || {
        loaded_by_us().is_empty()
    });
}
