//! Simulation helpers against real valgrind runs: collecting and merging
//! output files, determinism, shell scripts with children, failing programs,
//! `--toggle-collect` of a function that never runs. Tests that need
//! valgrind and gcc print "skipped: …" without them (fail instead for those
//! `PERFSLEUTH_TEST_REQUIRE` names).

#[macro_use]
#[path = "callgrind_common/mod.rs"]
mod common;

use std::path::Path;

use perfsleuth_measure::callgrind::{
    EVENTS, SimError, collect_function_seen, collect_outputs, counters, estimated_cycles,
    find_valgrind,
};

use common::{TempDir, callgrind, compile};

const PROG: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
static long churn(void) {
    long s = 0;
    for (int i = 0; i < 500; i++) { char *p = malloc(64 + i); memset(p, i, 64 + i); s += p[i % 64]; free(p); }
    return s;
}
int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "fail") == 0) { printf("%d\n", fib(15)); return 3; }
    if (argc > 1 && strcmp(argv[1], "crash") == 0) { fib(10); volatile int *p = 0; return *p; }
    printf("%d %ld\n", fib(18), churn());
    return 0;
}
"#;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/callgrind")
        .join(name)
}

#[test]
fn empty_dir_is_no_output() {
    let dir = TempDir::new("cg-empty");
    std::fs::write(dir.path().join("unrelated.txt"), "x").unwrap();
    match collect_outputs(dir.path()) {
        Err(e @ SimError::NoOutput { .. }) => {
            assert!(e.to_string().contains("no callgrind.out.* file"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        collect_outputs(&dir.path().join("missing")),
        Err(SimError::Io { .. })
    ));
}

#[test]
fn truncated_output_names_file_and_line_and_is_kept() {
    let dir = TempDir::new("cg-trunc");
    let text = std::fs::read(fixture("toggle-instr-jumps.out")).unwrap();
    let good = dir.path().join("callgrind.out.100");
    let cut = dir.path().join("callgrind.out.101");
    std::fs::write(&good, &text).unwrap();
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let e = collect_outputs(dir.path()).unwrap_err();
    let SimError::Parse(pe) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(pe.file, cut.display().to_string());
    let lines = text[..text.len() / 2].split(|b| *b == b'\n').count();
    assert_eq!(pe.line, lines);
    assert!(pe.message.contains("truncated"), "{e}");
    assert!(
        e.to_string()
            .contains(&format!("callgrind.out.101:{lines}:")),
        "{e}"
    );
    assert!(
        good.exists() && cut.exists(),
        "files are kept after an error"
    );
}

#[test]
fn merges_files_and_deletes_them() {
    let dir = TempDir::new("cg-merge");
    let text = std::fs::read(fixture("toggle-instr-jumps.out")).unwrap();
    for name in ["callgrind.out.7", "callgrind.out.8-01", "callgrind.out.9"] {
        std::fs::write(dir.path().join(name), &text).unwrap();
    }
    // --separate-threads=yes leaves callgrind.out.PID empty.
    std::fs::write(dir.path().join("callgrind.out.10"), "").unwrap();
    std::fs::write(dir.path().join("other.out"), "keep").unwrap();
    let p = collect_outputs(dir.path()).unwrap();
    assert_eq!(p.files_read, 3);
    assert_eq!(p.total("Ir"), Some(3 * 81834));
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["other.out"]);
    let c = counters(&p);
    assert_eq!(c["Ir"], 3.0 * 81834.0);
    assert!(c["est_cycles"] > c["Ir"]);
}

#[test]
fn finds_valgrind_on_path() {
    require_tools!(false);
    let v = find_valgrind().unwrap();
    assert!(v.ends_with("valgrind"), "{}", v.display());
}

#[test]
fn ten_runs_give_identical_counts() {
    require_tools!(false);
    let dir = TempDir::new("cg-det");
    let exe = compile(dir.path(), "prog", PROG, &[]);
    let argv = [exe.display().to_string()];
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..10)
            .map(|i| {
                let argv = &argv;
                s.spawn(move || {
                    let out = TempDir::new(&format!("cg-det-{i}"));
                    let (code, _) = callgrind(out.path(), argv, None, &[]);
                    assert_eq!(code, Some(0));
                    collect_outputs(out.path()).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let first = results[0].total("Ir").unwrap();
    assert!(first > 100_000);
    for p in &results {
        assert_eq!(p.total("Ir"), Some(first));
        assert_eq!(p.events, EVENTS);
    }
    eprintln!("Ir = {first} in all 10 runs");
}

#[test]
fn shell_script_children_are_traced_and_merged() {
    require_tools!(false);
    let dir = TempDir::new("cg-sh");
    let exe = compile(dir.path(), "prog", PROG, &[]);
    let script = dir.path().join("twice.sh");
    std::fs::write(
        &script,
        format!(
            "{exe} > /dev/null\n{exe} > /dev/null\n",
            exe = exe.display()
        ),
    )
    .unwrap();
    let out = TempDir::new("cg-sh-out");
    let (code, files) = callgrind(
        out.path(),
        &["sh".to_string(), script.display().to_string()],
        None,
        &[],
    );
    assert_eq!(code, Some(0));
    assert!(files.len() >= 3, "sh and two children: {files:?}");
    let p = collect_outputs(out.path()).unwrap();
    assert_eq!(p.files_read, files.len());
    // fib(18) is called once per child.
    let fib_calls: u64 = p.functions_named("fib").map(|f| f.calls).sum();
    assert_eq!(fib_calls, 2);
    assert!(
        p.commands.iter().any(|c| c.contains("twice.sh")),
        "{:?}",
        p.commands
    );
    assert!(
        p.commands.iter().any(|c| c.ends_with("prog")),
        "{:?}",
        p.commands
    );
}

#[test]
fn failing_and_crashing_programs_still_write_output() {
    require_tools!(false);
    let dir = TempDir::new("cg-fail");
    let exe = compile(dir.path(), "prog", PROG, &[]);
    let out = TempDir::new("cg-fail-out");
    let (code, _) = callgrind(
        out.path(),
        &[exe.display().to_string(), "fail".to_string()],
        None,
        &[],
    );
    assert_eq!(code, Some(3), "valgrind passes the exit code on");
    let p = collect_outputs(out.path()).unwrap();
    assert!(p.functions_named("fib").next().is_some());

    let (code, _) = callgrind(
        out.path(),
        &[exe.display().to_string(), "crash".to_string()],
        None,
        &[],
    );
    assert_ne!(code, Some(0));
    let p = collect_outputs(out.path()).unwrap();
    assert!(p.total("Ir").unwrap() > 0);
}

#[test]
fn program_that_does_not_exist_is_no_output() {
    require_tools!(false);
    let out = TempDir::new("cg-nx");
    let (code, files) = callgrind(out.path(), &["/nonexistent/prog".to_string()], None, &[]);
    assert_ne!(code, Some(0));
    assert!(files.is_empty());
    assert!(matches!(
        collect_outputs(out.path()),
        Err(SimError::NoOutput { .. })
    ));
}

#[test]
fn collect_of_a_function_that_never_runs() {
    require_tools!(false);
    let dir = TempDir::new("cg-col");
    let exe = compile(dir.path(), "prog", PROG, &[]);
    let argv = [exe.display().to_string()];

    let out = TempDir::new("cg-col-none");
    callgrind(out.path(), &argv, Some("no_such_function"), &[]);
    let p = collect_outputs(out.path()).unwrap();
    assert_eq!(p.total("Ir"), Some(0));
    assert!(!collect_function_seen(&p, "no_such_function"));
    assert_eq!(estimated_cycles(&p), Some(0.0));

    let out = TempDir::new("cg-col-fib");
    callgrind(out.path(), &argv, Some("fib"), &[]);
    let p = collect_outputs(out.path()).unwrap();
    assert!(collect_function_seen(&p, "fib"));
    // Only fib's cost: everything is inside fib or fib'2.
    let fib = p.functions_named("fib").next().unwrap();
    assert_eq!(fib.inclusive, p.totals);
    assert!(
        p.functions_named("churn")
            .all(|f| f.self_cost.iter().all(|c| *c == 0))
    );
}
