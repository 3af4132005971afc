//! The tracer on real programs: a C program with two mutexes of 9:1
//! contention, the same behind a shell that forks it, a command that exits
//! at once, and nothing left loaded afterwards. Needs root and a kernel
//! with BTF (`bpf` in PERFSLEUTH_TEST_REQUIRE makes a skip a failure).

use perfsleuth_locks::{Tracer, check, loaded_programs, program_names};
use perfsleuth_model::{LockReport, LockSite};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The tracer follows every child of this process: one test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const SOURCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/two_locks.c");

/// This test's turn, where the tracer can load here (else the skip).
fn traceable(test: &str) -> Option<MutexGuard<'static, ()>> {
    let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    match check() {
        Ok(()) => Some(turn),
        Err(e) => {
            perfsleuth_testkit::skip("bpf", format!("{test}: {e}"));
            None
        }
    }
}

/// two_locks built with line tables, in a fresh directory.
fn two_locks(test: &str) -> Option<(tempfile::TempDir, PathBuf)> {
    if !perfsleuth_testkit::tools_present(test, &["gcc"]) {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("two_locks");
    let ok = Command::new("gcc")
        .args(["-O2", "-g", "-pthread", "-o"])
        .arg(&exe)
        .arg(SOURCE)
        .status()
        .unwrap()
        .success();
    assert!(ok, "gcc failed on {SOURCE}");
    Some((dir, exe))
}

/// Traces one command (the first run of this process's children).
fn trace(program: &Path, args: &[&str]) -> LockReport {
    let tracer = Tracer::start(std::process::id()).expect("the tracer loads");
    let status = Command::new(program).args(args).output().unwrap();
    assert!(status.status.success(), "{program:?} {args:?}: {status:?}");
    tracer.finish().expect("the trace reads").report(&[1])
}

/// The line of the source that contains `text`, as `two_locks.c:N`.
fn line_of(text: &str) -> String {
    let src = std::fs::read_to_string(SOURCE).unwrap();
    let n = src.lines().position(|l| l.contains(text)).unwrap() + 1;
    format!("two_locks.c:{n}")
}

fn site<'a>(r: &'a LockReport, function: &str) -> &'a LockSite {
    r.sites
        .iter()
        .find(|s| s.function == function)
        .unwrap_or_else(|| panic!("no site {function} in {r:#?}"))
}

#[test]
fn two_mutexes_are_named_ranked_and_shared_nine_to_one() {
    let test = "two_mutexes_are_named_ranked_and_shared_nine_to_one";
    let Some(_turn) = traceable(test) else {
        return;
    };
    let Some((_dir, exe)) = two_locks(test) else {
        return;
    };
    let r = trace(&exe, &["400", "200"]);
    let locks: Vec<&LockSite> = r.locks().collect();
    assert_eq!(locks.len(), 2, "two lock sites: {r:#?}");
    let (hot, cold) = (site(&r, "hot_add"), site(&r, "cold_add"));
    assert_eq!(locks[0], hot, "the hot mutex ranks first");
    assert_eq!((hot.kind.as_str(), cold.kind.as_str()), ("mutex", "mutex"));
    assert_eq!(hot.location, line_of("pthread_mutex_lock(&hot)"));
    assert_eq!(cold.location, line_of("pthread_mutex_lock(&cold)"));
    assert_eq!(hot.caller.as_deref(), Some("worker"));
    assert_eq!(
        hot.object.as_deref(),
        Some("hot"),
        "the static mutex's own name"
    );
    assert_eq!(cold.object.as_deref(), Some("cold"));
    assert_eq!(r.futexes, 2);
    // Every operation waits about the hold time, so 9:1 in time and count
    // by construction; how much of it is waited is the scheduler's too (a
    // worker descheduled past the hold time does not wait), so the test
    // checks the order in time and count, not the shares.
    assert!(hot.wait_ns > cold.wait_ns, "{hot:?} {cold:?}");
    assert!(hot.waits > cold.waits && cold.waits > 0, "{hot:?} {cold:?}");
    // main's pthread_join is a wait, not a lock.
    assert!(r.sites.iter().any(|s| s.kind == "join"), "{r:#?}");
    assert!(r.other_wait_ns > 0);
    // Each thread's off-CPU time is traced (main and the worker block; the
    // holder spins and may never leave its CPU); the blocked time is the
    // lock waits and the join.
    assert!(r.threads >= 2, "{r:#?}");
    assert!(r.blocked_ns >= r.lock_wait_ns, "{r:#?}");
    // Its share of the time off the CPU is the scheduler's too (preemption
    // counts there): the sign, not the size.
    assert!(r.lock_share_of_off_cpu().is_some_and(|s| s > 0.0), "{r:#?}");
    assert!(!r.lost_anything(), "{:?}", r.events);
    assert_eq!(r.events.unresolved_samples, 0);
}

#[test]
fn a_static_rust_mutex_is_named_in_an_lld_linked_binary() {
    let Some(_turn) = traceable("a_static_rust_mutex_is_named_in_an_lld_linked_binary") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("static_mutex");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/static_mutex.rs");
    let built = Command::new(rustc)
        .args(["-O", "-g", "-o"])
        .arg(&exe)
        .arg(source)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let r = trace(&exe, &[]);
    let top = r
        .locks()
        .next()
        .unwrap_or_else(|| panic!("no lock: {r:#?}"));
    assert_eq!(top.function, "static_mutex::bump", "{r:#?}");
    assert_eq!(top.kind, "mutex");
    // The static's own symbol, found with the executable segment's bias
    // (lld's layout put the mapping's page offset in the read-only segment).
    assert_eq!(top.object.as_deref(), Some("static_mutex::HOT"), "{r:#?}");
    assert!(top.location.starts_with("static_mutex.rs:"), "{top:?}");
}

#[test]
fn a_command_that_forks_and_execs_is_followed() {
    let test = "a_command_that_forks_and_execs_is_followed";
    let Some(_turn) = traceable(test) else {
        return;
    };
    let Some((_dir, exe)) = two_locks(test) else {
        return;
    };
    // `; true` keeps the shell from exec'ing the program in its own place:
    // it forks a child, which execs.
    let script = format!("{} 200 200; true", exe.display());
    let r = trace(Path::new("sh"), &["-c", &script]);
    assert!(
        r.events.processes >= 2,
        "the shell and its child: {:?}",
        r.events
    );
    assert_eq!(
        r.locks().next().map(|s| s.function.as_str()),
        Some("hot_add"),
        "{r:#?}"
    );
    // 20 of the 200 operations take the cold mutex; nearly all of them wait
    // (one whose worker was descheduled past the hold time finds it free).
    let cold = site(&r, "cold_add").waits;
    assert!((10..=20).contains(&cold), "{cold} cold waits: {r:#?}");
}

#[test]
fn a_command_that_exits_at_once_has_no_waits() {
    let test = "a_command_that_exits_at_once_has_no_waits";
    let Some(_turn) = traceable(test) else {
        return;
    };
    let r = trace(Path::new("true"), &[]);
    assert_eq!(
        (r.lock_waits, r.lock_wait_ns, r.futexes),
        (0, 0, 0),
        "{r:#?}"
    );
    assert!(r.sites.is_empty());
    assert_eq!(r.runs, 1);
}

#[test]
fn nothing_stays_loaded_after_the_tracer_is_dropped() {
    let Some(_turn) = traceable("nothing_stays_loaded_after_the_tracer_is_dropped") else {
        return;
    };
    let ours = || {
        loaded_programs()
            .iter()
            .filter(|n| program_names().any(|p| p == n.as_str()))
            .count()
    };
    // The kernel frees a detached program after an RCU grace period, so
    // "gone" is waited for (a few ms), not expected at once.
    let settles_at = |want: usize| {
        let deadline = Instant::now() + Duration::from_secs(5);
        while ours() != want && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        ours()
    };
    let before = settles_at(0);
    assert_eq!(before, 0, "programs of ours left loaded before the test");
    let tracer = Tracer::start(std::process::id()).unwrap();
    assert_eq!(ours(), 5, "five programs attached");
    drop(tracer);
    assert_eq!(settles_at(0), 0, "all detached and freed");
    // And after a full trace, too.
    let tracer = Tracer::start(std::process::id()).unwrap();
    tracer.finish().unwrap();
    assert_eq!(settles_at(0), 0);
}
