//! Our parser against `callgrind_annotate` on real callgrind output of small
//! C programs compiled here: totals and every function's self cost must be
//! identical; inclusive costs must match for non-recursive functions.
//! Needs valgrind, gcc and callgrind_annotate; prints "skipped: …" without
//! (fails instead for those `PERFSLEUTH_TEST_REQUIRE` names).

#[macro_use]
#[path = "callgrind_common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use perfsleuth_measure::callgrind::{Profile, parse_file};

use common::{TempDir, annotate, callgrind, compile};

const FIB: &str = r#"
#include <stdio.h>
int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(void) { printf("%d\n", fib(20)); return 0; }
"#;

const ALLOC: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static char *make(size_t n, int seed) { char *p = malloc(n); memset(p, seed, n); return p; }
static long churn(int rounds) {
    long sum = 0;
    char *keep[64] = {0};
    for (int i = 0; i < rounds; i++) {
        int k = (i * 7) % 64;
        free(keep[k]);
        keep[k] = make(16 + (size_t)(i * 37) % 4000, i);
        sum += keep[k][0];
    }
    for (int k = 0; k < 64; k++) free(keep[k]);
    return sum;
}
int main(void) { printf("%ld\n", churn(3000)); return 0; }
"#;

const SORT: &str = r#"
#include <stdio.h>
#include <stdlib.h>
static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}
static void fill(int *v, int n) {
    unsigned s = 1;
    for (int i = 0; i < n; i++) { s = s * 1103515245u + 12345u; v[i] = (int)(s >> 8); }
}
int main(void) {
    int n = 5000;
    int *v = malloc(n * sizeof *v);
    fill(v, n);
    qsort(v, n, sizeof *v, cmp_int);
    printf("%d %d\n", v[0], v[n - 1]);
    free(v);
    return 0;
}
"#;

const THREADS: &str = r#"
#include <pthread.h>
#include <stdio.h>
static long work(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * i % 7; return s; }
static void *worker(void *a) { return (void *)work((long)a); }
int main(void) {
    pthread_t t[2];
    long r = 0;
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, worker, (void *)(long)(20000 * (i + 1)));
    for (int i = 0; i < 2; i++) { void *x; pthread_join(t[i], &x); r += (long)x; }
    printf("%ld\n", r);
    return 0;
}
"#;

/// Self cost per function name (summed over objects), all-zero dropped:
/// the shape `Annotated::by_function` has.
fn self_by_name(p: &Profile) -> BTreeMap<String, Vec<u64>> {
    let mut m: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for f in &p.functions {
        let e = m
            .entry(f.function.clone())
            .or_insert(vec![0; f.self_cost.len()]);
        for (a, b) in e.iter_mut().zip(&f.self_cost) {
            *a += b;
        }
    }
    m.retain(|_, v| v.iter().any(|c| *c != 0));
    m
}

fn inclusive_of(p: &Profile, name: &str) -> Vec<u64> {
    let mut fs = p.functions_named(name);
    let f = fs.next().unwrap_or_else(|| panic!("no {name}"));
    assert!(fs.next().is_none(), "{name} in several objects");
    f.inclusive.clone()
}

/// Compares one output file with callgrind_annotate. `plain` are functions
/// that do not recurse (their inclusive cost must match exactly),
/// `recursive` ones that do (callgrind_annotate counts the recursive calls
/// again, so it shows more than we do, and we show self cost).
fn check_file(file: &Path, plain: &[&str], recursive: &[&str]) -> Profile {
    let ours = parse_file(file).unwrap_or_else(|e| panic!("{e}"));
    let theirs = annotate(file, false);
    assert_eq!(ours.events, theirs.events, "{}", file.display());
    assert_eq!(ours.totals, theirs.totals, "totals of {}", file.display());
    let (a, b) = (self_by_name(&ours), theirs.by_function());
    for (name, costs) in &b {
        assert_eq!(
            a.get(name),
            Some(costs),
            "self cost of {name} in {}",
            file.display()
        );
    }
    assert_eq!(a, b, "self costs of {}", file.display());
    // And the top of the list, as a reader sees it.
    let top: Vec<&str> = ours
        .top_by_self("Ir", 5)
        .iter()
        .map(|f| f.function.as_str())
        .collect();
    assert!(!top.is_empty());

    let inc = annotate(file, true);
    for name in plain {
        let entries = inc.named(name);
        assert!(!entries.is_empty(), "callgrind_annotate shows no {name}");
        let ours_inc = inclusive_of(&ours, name);
        for (key, _, costs) in entries {
            assert_eq!(
                &ours_inc,
                costs,
                "inclusive cost of {key} in {}",
                file.display()
            );
        }
    }
    for name in recursive {
        let f = ours.functions_named(name).next().unwrap();
        assert_eq!(f.inclusive, f.self_cost, "{name} only calls itself");
        let entries = inc.named(name);
        let ir_theirs = entries.iter().map(|(_, _, c)| c[0]).max().unwrap();
        assert!(
            ir_theirs > f.inclusive[0],
            "callgrind_annotate double counts {name}: {ir_theirs} vs {}",
            f.inclusive[0]
        );
        assert!(f.inclusive[0] <= ours.totals[0]);
    }
    ours
}

fn only_file(files: &[PathBuf]) -> &Path {
    assert_eq!(files.len(), 1, "{files:?}");
    &files[0]
}

fn run(exe: &Path, out: &TempDir, collect: Option<&str>, extra: &[&str]) -> Vec<PathBuf> {
    let argv = [exe.display().to_string()];
    let (code, files) = callgrind(out.path(), &argv, collect, extra);
    assert_eq!(code, Some(0));
    files
}

#[test]
fn recursive_fib_matches_annotate() {
    require_tools!(true);
    let dir = TempDir::new("cg-fib");
    let exe = compile(dir.path(), "fib", FIB, &[]);
    let out = TempDir::new("cg-fib-out");
    let files = run(&exe, &out, None, &[]);
    let full = check_file(only_file(&files), &["main", "fib"], &["fib'2"]);
    assert_eq!(
        full.functions_named("fib'2").next().unwrap().calls,
        2 * 10945
    );

    // Collecting only inside fib gives exactly fib's inclusive cost.
    let out = TempDir::new("cg-fib-toggle");
    let files = run(&exe, &out, Some("fib"), &[]);
    let toggled = check_file(only_file(&files), &["fib"], &["fib'2"]);
    assert_eq!(toggled.totals, inclusive_of(&full, "fib"));
}

#[test]
fn fib_with_instr_positions_and_jumps_matches_annotate() {
    require_tools!(true);
    let dir = TempDir::new("cg-fibi");
    let exe = compile(dir.path(), "fib", FIB, &[]);
    let out = TempDir::new("cg-fibi-out");
    let files = run(
        &exe,
        &out,
        None,
        &["--dump-instr=yes", "--collect-jumps=yes"],
    );
    check_file(only_file(&files), &["main", "fib"], &["fib'2"]);
}

#[test]
fn malloc_loop_with_instr_positions_matches_annotate() {
    require_tools!(true);
    let dir = TempDir::new("cg-alloc");
    let exe = compile(dir.path(), "alloc", ALLOC, &[]);
    let out = TempDir::new("cg-alloc-out");
    let files = run(&exe, &out, None, &["--dump-instr=yes"]);
    let p = check_file(only_file(&files), &["main", "churn", "make"], &[]);
    assert_eq!(p.functions_named("make").next().unwrap().calls, 3000);
    assert!(p.functions_named("malloc").next().unwrap().calls >= 3000);
}

#[test]
fn qsort_callback_uncompressed_matches_annotate() {
    require_tools!(true);
    let dir = TempDir::new("cg-sort");
    let exe = compile(dir.path(), "sort", SORT, &[]);
    let out = TempDir::new("cg-sort-out");
    let files = run(
        &exe,
        &out,
        None,
        &["--compress-strings=no", "--compress-pos=no"],
    );
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(!text.contains("fl=("), "strings are not compressed");
    let p = check_file(only_file(&files), &["main", "fill", "cmp_int"], &[]);
    assert!(p.functions_named("cmp_int").next().unwrap().calls > 5000);
}

#[test]
fn threads_in_one_file_match_annotate() {
    require_tools!(true);
    let dir = TempDir::new("cg-thr");
    let exe = compile(dir.path(), "threads", THREADS, &["-pthread"]);
    let out = TempDir::new("cg-thr-out");
    let files = run(&exe, &out, None, &[]);
    let p = check_file(only_file(&files), &["main", "worker", "work"], &[]);
    assert_eq!(p.functions_named("worker").next().unwrap().calls, 2);
}

#[test]
fn separate_threads_files_each_match_annotate_and_merge() {
    require_tools!(true);
    let dir = TempDir::new("cg-sep");
    let exe = compile(dir.path(), "threads", THREADS, &["-pthread"]);
    let out = TempDir::new("cg-sep-out");
    let files = run(&exe, &out, None, &["--separate-threads=yes"]);
    // callgrind.out.PID stays empty; callgrind.out.PID-01, -02, … hold data.
    let data: Vec<&PathBuf> = files
        .iter()
        .filter(|f| std::fs::metadata(f).unwrap().len() > 0)
        .collect();
    assert!(data.len() >= 2, "{files:?}");
    let mut sum = vec![0u64; 9];
    let mut worker_calls = 0;
    for f in &data {
        let name = f.file_name().unwrap().to_str().unwrap();
        assert!(name.contains('-'), "{name}");
        let p = check_file(f, &[], &[]);
        for (s, t) in sum.iter_mut().zip(&p.totals) {
            *s += t;
        }
        worker_calls += p.functions_named("worker").map(|f| f.calls).sum::<u64>();
    }
    assert_eq!(worker_calls, 2);
    let merged = perfsleuth_measure::callgrind::collect_outputs(out.path()).unwrap();
    assert_eq!(merged.totals, sum);
    assert_eq!(merged.files_read, data.len());
    assert!(
        std::fs::read_dir(out.path()).unwrap().next().is_none(),
        "files deleted"
    );
}
