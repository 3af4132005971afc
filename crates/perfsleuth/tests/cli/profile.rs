//! `--profile`: wall-time profiles end to end (docs/PROFILES.md). Real C
//! programs built with gcc, sampled through perf_event_open by the
//! perfsleuth the tests built: the hottest functions named in their shares,
//! stored and exported, folded stacks, `ab` naming the function a change
//! sits in, flame graphs opened in headless Chromium, and every refusal.
//! Where the kernel refuses the cpu-clock event the tests say so and skip
//! (fail when `PERFSLEUTH_TEST_REQUIRE` names `perf_software`).

use crate::common::Sandbox;
use std::path::Path;

/// Programs that wait (poll, a lock, sleep), the wall-profile studies'.
const WAITS: &str = include_str!("../../../../bench/profiles/waits.c");

/// Three functions whose self time is in the proportion of their
/// arguments (millions of iterations of one dependent loop each),
/// interleaved in 20 slices, called from `work`: the studies' program
/// (docs/PROFILES.md), which the sampler's own test builds too.
const SHARES: &str = include_str!("../../../../bench/profiles/three.c");

/// Whether this machine samples cpu-clock at all (perf_event_open on a
/// child); otherwise the test is skipped, saying why.
fn sampling_works(sb: &Sandbox) -> bool {
    let out = sb.bench(["--runs", "2", "--profile=auto", "true"]);
    match out
        .stderr
        .lines()
        .find(|l| l.contains("not profiled: the kernel refused"))
    {
        Some(line) => {
            perfsleuth_testkit::skip("perf_software", format!("cpu-clock sampling: {line}"));
            false
        }
        None => true,
    }
}

/// A sandbox with the three-function program built (with line tables) as
/// `shares`, where this machine samples; `None` (the skip said) elsewhere.
fn sandbox_with_three() -> Option<(Sandbox, std::path::PathBuf)> {
    let sb = Sandbox::new();
    if !sampling_works(&sb) {
        return None;
    }
    let prog = sb.gcc("shares", SHARES, &["-g"]);
    Some((sb, prog))
}

/// The text after `Profile:` in a run's summary ("" without one).
fn headline(out: &crate::common::Out) -> &str {
    out.stdout
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("Profile:"))
        .unwrap_or_default()
        .trim_start()
}

/// The functions a `Profile:` line names, hottest first. Tests assert
/// names and their order, never a share: a share moves with the CPU and
/// the kernel's part of the run (`[kernel]` took 9–11 % on one VM).
fn ranked(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// Whether `names` holds each of `order`, in that order.
fn in_order(names: &[&str], order: &[&str]) -> bool {
    let at: Option<Vec<usize>> = order
        .iter()
        .map(|o| names.iter().position(|n| n == o))
        .collect();
    at.is_some_and(|at| at.windows(2).all(|w| w[0] < w[1]))
}

/// Per function: self samples summed over its stacks and runs.
fn self_samples(stacks: &serde_json::Value) -> Vec<(String, u64)> {
    let frames = stacks["frames"].as_array().unwrap();
    let mut by: std::collections::BTreeMap<String, u64> = Default::default();
    for s in stacks["stacks"].as_array().unwrap() {
        let leaf = s["frames"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .as_u64()
            .unwrap();
        let n: u64 = s["counts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .sum();
        let function = frames[leaf as usize]["function"].as_str().unwrap();
        // On-CPU self time only: a wall profile's waits end in an
        // `[off-cpu: REASON]` frame, and on a loaded machine a CPU-bound
        // program's `runnable` waits (preempted) can outweigh any function.
        if function.starts_with("[off-cpu: ") {
            continue;
        }
        *by.entry(function.to_string()).or_default() += n;
    }
    let mut v: Vec<_> = by.into_iter().collect();
    v.sort_by_key(|e| std::cmp::Reverse(e.1));
    v
}

#[test]
fn a_profiled_run_names_its_hot_functions_stores_them_and_exports_folded_stacks() {
    let Some((sb, prog)) = sandbox_with_three() else {
        return;
    };
    let cmd = format!("{} 50 30 20", prog.display());
    let folded = sb.path("out.folded");
    // On the CPU only: the shares are of the time computing.
    let out = sb
        .bench([
            "--runs",
            "6",
            "--profile=cpu",
            "--export-folded",
            folded.to_str().unwrap(),
            &cmd,
        ])
        .ok();
    let names = ranked(headline(&out));
    assert_eq!(names.first(), Some(&"alpha"), "{out:?}");
    assert!(in_order(&names, &["alpha", "beta", "gamma_"]), "{out:?}");
    assert!(
        out.stdout.contains("(off-CPU time is not recorded)"),
        "{out:?}"
    );

    // Stored with the run, typed: 6 timed runs, alpha > beta > gamma.
    let doc = sb.show_json("latest");
    let stacks = &doc["run"]["benchmarks"][0]["stacks"];
    assert_eq!(stacks["event"], "cpu-clock", "{doc}");
    assert_eq!(stacks["iterations"].as_array().unwrap().len(), 6);
    let ranked = self_samples(stacks);
    let names: Vec<&str> = ranked.iter().take(3).map(|(f, _)| f.as_str()).collect();
    assert_eq!(names, ["alpha", "beta", "gamma_"], "{ranked:?}");
    // Alpha does as much work as the other two together: more samples than
    // either (its share is the machine's as much as the program's).
    assert!(ranked[0].1 > ranked[1].1, "{ranked:?}");
    let total: u64 = ranked.iter().map(|(_, n)| n).sum();

    // The folded stacks: one line a stack, counts summing to the samples.
    let text = std::fs::read_to_string(&folded).unwrap();
    let (mut sum, mut in_work) = (0, 0);
    for line in text.lines() {
        let (stack, count) = line.rsplit_once(' ').expect("`stack count`");
        let n = count.parse::<u64>().expect("a count");
        sum += n;
        if stack.starts_with("_start;") && stack.contains(";main;work;") {
            in_work += n;
        }
    }
    assert_eq!(sum, total, "{text}");
    // Unwound without frame pointers to the entry point (a sample or two
    // may fall in start-up or exit).
    assert!(in_work * 100 >= sum * 95, "{text}");
}

#[test]
fn auto_keeps_no_profile_of_runs_too_short_to_sample_and_says_why() {
    let sb = Sandbox::new();
    if !sampling_works(&sb) {
        return;
    }
    let out = sb.bench(["--runs", "5", "--profile=auto", "true"]).ok();
    assert!(
        out.stderr
            .contains("`true` not profiled: 0 samples per run")
            || out
                .stdout
                .contains("`true` not profiled: 0 samples per run"),
        "{out:?}"
    );
    let doc = sb.show_json("latest");
    assert!(doc["run"]["benchmarks"][0].get("stacks").is_none(), "{doc}");
    // Asked for: kept, thin, and said so.
    let out = sb.bench(["--runs", "5", "--profile", "true"]).ok();
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(all.contains("`true`: only 0 samples per run"), "{out:?}");
}

#[test]
fn a_process_tree_is_profiled_whole_and_fork_storms_are_counted_as_one_run_each() {
    let Some((sb, prog)) = sandbox_with_three() else {
        return;
    };
    // A shell that starts 200 short children, then the program: every
    // process of the tree belongs to the run that started it.
    let script = format!(
        "for i in $(seq 200); do /bin/true; done; {} 20 20 20",
        prog.display()
    );
    let out = sb
        .bench(["--runs", "4", "--profile", "-S", "sh", &script])
        .ok();
    assert!(!out.stderr.contains("not profiled"), "{out:?}");
    let doc = sb.show_json("latest");
    let stacks = &doc["run"]["benchmarks"][0]["stacks"];
    assert_eq!(stacks["iterations"].as_array().unwrap().len(), 4, "{doc}");
    let ranked = self_samples(stacks);
    assert!(
        ranked.iter().take(4).any(|(f, _)| f == "alpha"),
        "the program the shell started is in its run's profile: {ranked:?}"
    );
}

/// A C wrapper that runs its arguments (after the errno number) with
/// `perf_event_open` failing with that errno: EACCES as a container's
/// seccomp profile refuses it, ENOENT as a kernel without the event.
const NO_PERF: &str = r#"
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (argc > 1 ? atoi(argv[1]) : EACCES)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    if (argc < 3 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
        perror("seccomp");
        return 125;
    }
    execvp(argv[2], argv + 2);
    perror("exec");
    return 126;
}
"#;

#[test]
fn a_refused_event_is_an_error_when_asked_for_and_a_note_with_auto() {
    let sb = Sandbox::new();
    let wrap = sb.gcc("no_perf", NO_PERF, &[]);
    let exe = env!("CARGO_BIN_EXE_perfsleuth");
    let store = sb.store();
    let errno = std::cell::Cell::new("13");
    let run = |args: &[&str]| -> crate::common::Out {
        let mut c = std::process::Command::new(&wrap);
        c.arg(errno.get())
            .arg(exe)
            .args(["run", "--store", &store])
            .args(args);
        c.env("NO_COLOR", "1");
        c.output().expect("wrapper runs").into()
    };
    let out = run(&["--runs", "2", "--profile", "true"]).usage_error("cannot profile");
    assert!(out.stderr.contains("EACCES"), "{out:?}");
    assert!(
        out.stderr.contains("seccomp") || out.stderr.contains("paranoid"),
        "{out:?}"
    );
    // Nothing stored by the refused run.
    assert!(!sb.db().exists() || sb.runs_json().is_empty());
    let out = run(&["--runs", "2", "--profile=auto", "true"]).ok();
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(all.contains("not profiled: the kernel refused"), "{out:?}");
    // A kernel without the event (ENOENT).
    errno.set("2");
    run(&["--runs", "2", "--profile", "true"]).usage_error("not supported");
    // Simulation mode samples nothing: asked for, it is refused.
    sb.bench(["--mode", "simulation", "--profile", "true"])
        .usage_error("--profile samples real runs");
}

#[test]
fn ab_names_the_function_a_change_is_in_and_the_report_draws_both_flame_graphs() {
    let sb = Sandbox::new();
    if !sampling_works(&sb) {
        return;
    }
    let repo = sb.path("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("shares.c"), SHARES).unwrap();
    let makefile = |flags: &str| {
        std::fs::write(
            repo.join("Makefile"),
            format!("bench: shares.c\n\tgcc -O2 -g {flags} -o bench shares.c\n"),
        )
        .unwrap();
    };
    makefile("");
    crate::common::git(&repo, &["init", "-q", "-b", "main"]);
    crate::common::git(&repo, &["add", "-A"]);
    crate::common::git(&repo, &["commit", "-qm", "base"]);
    // The candidate: alpha does 20 % more work, beta and gamma the same.
    makefile("-DALPHA=120");
    let out = sb
        .cmd()
        .current_dir(&repo)
        .args([
            "ab",
            "--store",
            &sb.store(),
            "--profile",
            "--build",
            "make",
            "--",
            "./bench 30 20 20",
        ])
        .output()
        .unwrap();
    let out: crate::common::Out = out.into();
    assert_eq!(out.code, 0, "{out:?}");
    let note = out
        .stdout
        .lines()
        .find(|l| l.contains("wall is in") || l.contains("cpu is in"))
        .unwrap_or_else(|| panic!("no attribution: {out:?}"));
    assert!(
        note.contains("is in `alpha` (bench): +"),
        "alpha named first, slower: {note}"
    );
    assert!(!note.contains("in `gamma_`"), "gamma_ untouched: {note}");

    let page = sb.path("ab.html");
    sb.cmd()
        .current_dir(&repo)
        .args(["report", "--store", &sb.store(), "latest~1", "latest", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<script"), "the report runs nothing");
    let images = flame_images(&html);
    // Each side's flame graph and the differential one.
    assert!(images.len() >= 3, "{} flame graphs", images.len());
    assert!(
        images
            .iter()
            .all(|svg| svg.contains("alpha") && svg.contains("work"))
    );
    let diff = images
        .iter()
        .find(|svg| svg.contains("./bench 30 20 20") && svg.contains("rgb(255,"))
        .expect("a differential graph with a grown (red) frame");
    assert!(diff.contains("alpha"));
    let (dom, log) =
        crate::common::chromium(&format!("file://{}", page.display()), &["--dump-dom"]);
    assert!(
        !log.lines().any(|l| l.contains("CONSOLE")),
        "console messages: {log}"
    );
    assert!(
        dom.matches("class=\"flame\"").count() >= 3,
        "images in the DOM"
    );
    // Each image decodes and draws in the browser: its natural width is
    // inferno's 1200 px (0 for an image that failed).
    let probe = sb.write(
        "probe.html",
        html.replacen(
            "</body>",
            "<script>window.onload=function(){document.title='['+Array.from(document.querySelectorAll('img.flame')).map(function(i){return i.naturalWidth}).join(',')+']'}</script></body>",
            1,
        ),
    );
    let (dom, _) = crate::common::chromium(
        &format!("file://{}", probe.display()),
        &["--dump-dom", "--virtual-time-budget=2000"],
    );
    let title = &dom[dom.find("<title>[").expect("title set") + 8..];
    let widths: Vec<&str> = title[..title.find(']').unwrap()].split(',').collect();
    assert!(
        widths.len() >= 3 && widths.iter().all(|w| *w == "1200"),
        "{widths:?}"
    );
}

/// The SVG documents of the page's flame graphs, decoded.
fn flame_images(html: &str) -> Vec<String> {
    use base64::Engine as _;
    html.split("class=\"flame\"")
        .skip(1)
        .filter_map(|rest| {
            let start = rest.find("base64,")? + 7;
            let end = start + rest[start..].find('"')?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(&rest[start..end])
                .ok()?;
            String::from_utf8(bytes).ok()
        })
        .collect()
}

#[test]
fn a_profile_taken_with_perf_joins_a_stored_run_once_and_folded_stacks_join_another() {
    let sb = Sandbox::new();
    if !perfsleuth_testkit::tools_present("import --into", &["perf"]) {
        return;
    }
    let prog = sb.gcc("shares", SHARES, &["-g"]);
    let data = sb.path("perf.data");
    // perf's own profile of the program, with DWARF call stacks.
    let recorded = std::process::Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-F",
            "997",
            "--call-graph",
            "dwarf",
            "-o",
        ])
        .arg(&data)
        .arg(&prog)
        .args(["40", "20", "20"])
        .output()
        .unwrap();
    if !recorded.status.success() {
        perfsleuth_testkit::skip(
            "perf",
            format!("perf record: {}", String::from_utf8_lossy(&recorded.stderr)),
        );
        return;
    }
    let script = std::process::Command::new("perf")
        .args(["script", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(script.status.success(), "{script:?}");
    let text = sb.write("perf.txt", &script.stdout);
    let cmd = format!("{} 40 20 20", prog.display());
    sb.bench(["--runs", "3", &cmd]).ok();
    // Detected from the text; joins the latest run's only benchmark.
    let out = sb
        .run(["import", "--store", &sb.store(), text.to_str().unwrap()])
        .ok();
    assert!(out.stdout.contains("samples of perf script to"), "{out:?}");
    // "Attached … to `BENCH` of run N: " and then the profile's headline.
    let attached = out
        .stdout
        .split_once(" of run ")
        .and_then(|(_, rest)| rest.split_once(": "))
        .map_or("", |(_, headline)| headline);
    assert_eq!(ranked(attached).first(), Some(&"alpha"), "{out:?}");
    let doc = sb.show_json("latest");
    let stacks = &doc["run"]["benchmarks"][0]["stacks"];
    assert_eq!(stacks["event"], "cpu-clock", "{doc}");
    assert_eq!(stacks["period_ns"], 1_003_009);
    assert!(
        stacks["source"]
            .as_str()
            .unwrap()
            .starts_with("perf script (")
    );
    assert_eq!(self_samples(stacks)[0].0, "alpha");
    // Nothing stored is replaced.
    let again = sb.run(["import", "--store", &sb.store(), text.to_str().unwrap()]);
    again.usage_error("already has a profile; nothing was changed");
    assert_eq!(
        sb.show_json("latest")["run"]["benchmarks"][0]["stacks"],
        *stacks
    );

    // Folded stacks (perfsleuth's own export) into a run of two benchmarks.
    let folded = sb.path("one.folded");
    sb.bench([
        "--runs",
        "3",
        "--export-folded",
        folded.to_str().unwrap(),
        &cmd,
    ])
    .ok();
    sb.bench(["--runs", "2", "-n", "a", "true", "-n", "b", "true"])
        .ok();
    sb.run([
        "import",
        "--store",
        &sb.store(),
        "--format",
        "folded",
        folded.to_str().unwrap(),
    ])
    .usage_error("which one is profiled?");
    sb.run([
        "import",
        "--store",
        &sb.store(),
        "--format",
        "folded",
        "--into",
        "latest",
        "--name",
        "b",
        folded.to_str().unwrap(),
    ])
    .ok();
    let doc = sb.show_json("latest");
    assert!(doc["run"]["benchmarks"][0].get("stacks").is_none());
    assert_eq!(
        self_samples(&doc["run"]["benchmarks"][1]["stacks"])[0].0,
        "alpha"
    );
    // Folded stacks have no period: the flame graph is drawn in samples.
    let page = sb.path("imported.html");
    sb.run([
        "report",
        "--store",
        &sb.store(),
        "latest",
        "-o",
        page.to_str().unwrap(),
    ])
    .ok();
    let images = flame_images(&std::fs::read_to_string(&page).unwrap());
    assert_eq!(images.len(), 1);
    assert!(images[0].contains("alpha") && images[0].contains("samples a run"));
    // A results file is no profile (the run and benchmark are checked
    // first: a benchmark without a profile is named).
    let hf = sb.write(
        "hf.json",
        r#"{"results": [{"command": "x", "times": [0.1, 0.2]}]}"#,
    );
    sb.bench(["--runs", "2", "true"]).ok();
    sb.run([
        "import",
        "--store",
        &sb.store(),
        "--into",
        "latest",
        hf.to_str().unwrap(),
    ])
    .usage_error("is not one");
}

#[test]
fn scale_keeps_a_profile_per_level_from_its_timed_runs() {
    let Some((sb, prog)) = sandbox_with_three() else {
        return;
    };
    let cmd = format!("{} {{n}} 10 10", prog.display());
    let out = sb.run([
        "scale",
        "--store",
        &sb.store(),
        "--profile",
        "--param",
        "n=20,40",
        "--runs",
        "3",
        "--warmup",
        "1",
        "--work",
        "1",
        "--",
        &cmd,
    ]);
    let out = out.ok();
    // Printed per level, then how the shares moved between the levels.
    let lines: Vec<&str> = out.stdout.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == "Profiles:")
        .unwrap_or_else(|| panic!("{out:?}"));
    for (line, n) in lines[at + 1..].iter().zip(["20", "40"]) {
        assert!(line.starts_with(&format!("  n={n}: `alpha` ")), "{out:?}");
    }
    let moved = lines[at + 3];
    assert!(
        moved.starts_with("  from n=") && moved.contains("shares of the profiled time: `"),
        "{out:?}"
    );
    let doc = sb.show_json("latest");
    let levels = doc["run"]["benchmarks"].as_array().unwrap();
    assert_eq!(levels.len(), 2, "{doc}");
    let mut alpha = Vec::new();
    for l in levels {
        let stacks = &l["stacks"];
        // The three timed runs, not the warmup.
        assert_eq!(stacks["iterations"], serde_json::json!([0, 1, 2]), "{l}");
        let ranked = self_samples(stacks);
        assert_eq!(ranked[0].0, "alpha", "{ranked:?}");
        alpha.push(ranked[0].1);
    }
    assert!(alpha[1] > alpha[0], "twice the work at n=40: {alpha:?}");
}

#[test]
fn a_stripped_binary_is_named_by_offset_and_says_so() {
    let sb = Sandbox::new();
    if !sampling_works(&sb) {
        return;
    }
    let prog = sb.gcc("shares", SHARES, &["-s"]);
    let cmd = format!("{} 40 20 20", prog.display());
    let out = sb.bench(["--runs", "3", "--profile", &cmd]).ok();
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(
        all.contains("which has no symbols (a stripped binary)"),
        "{out:?}"
    );
    assert!(all.contains("`shares+0x"), "named by offset: {out:?}");
}

/// A program whose hot loop is machine code it wrote into anonymous
/// memory at run time, as a JIT compiler's is.
const JIT: &str = r#"
#include <string.h>
#include <sys/mman.h>
int main(void) {
    /* mov ecx, 100000000; loop: dec ecx; jnz loop; ret */
    unsigned char code[] = {0xb9, 0x00, 0xe1, 0xf5, 0x05, 0xff, 0xc9, 0x75, 0xfc, 0xc3};
    void *m = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return 1;
    memcpy(m, code, sizeof code);
    for (int i = 0; i < 3; i++) ((void (*)(void))m)();
    return 0;
}
"#;

#[test]
fn code_in_no_file_is_unknown_and_said_so() {
    let sb = Sandbox::new();
    if !sampling_works(&sb) {
        return;
    }
    let prog = sb.gcc("jit", JIT, &[]);
    let out = sb
        .bench(["--runs", "3", "--profile", prog.to_str().unwrap()])
        .ok();
    let all = format!("{}{}", out.stdout, out.stderr);
    assert_eq!(
        ranked(headline(&out)).first(),
        Some(&"[anonymous code]"),
        "{out:?}"
    );
    assert!(all.contains("code in no file, such as a JIT's"), "{out:?}");
}

#[test]
fn inlined_rust_functions_are_named_and_the_standard_library_inlined_into_them_is_not() {
    let sb = Sandbox::new();
    if !sampling_works(&sb) {
        return;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/profiles/three.rs");
    let prog = sb.path("three");
    let built = std::process::Command::new("rustc")
        .args(["-C", "opt-level=2", "-g", "-o"])
        .arg(&prog)
        .arg(&src)
        .status()
        .expect("rustc runs (the toolchain that builds the tests)");
    assert!(built.success());
    let out = sb
        .bench(["--runs", "4", "--profile", prog.to_str().unwrap()])
        .ok();
    let headline = headline(&out);
    // alpha, beta and gamma exist only as inlined frames of `work`; the
    // `Range::next` and integer methods inlined into them are not theirs.
    let names = ranked(headline);
    assert_eq!(names.first(), Some(&"three::alpha"), "{out:?}");
    assert!(
        headline.contains("`three::beta`") && headline.contains("`three::gamma`"),
        "{out:?}"
    );
    assert!(!headline.contains("core::"), "{out:?}");
}

#[test]
fn a_profiled_run_pushed_to_a_team_server_keeps_its_stacks() {
    let crate::common::Team {
        sandbox: _server_box,
        store: team,
        secret,
        server,
    } = crate::common::team();
    let Some((sb, prog)) = sandbox_with_three() else {
        return;
    };
    let cmd = format!("{} 20 10 10", prog.display());
    let out: crate::common::Out = sb
        .cmd()
        .env("PERFSLEUTH_SERVER", &server.base)
        .env("PERFSLEUTH_PROJECT", "app")
        .env("PERFSLEUTH_TOKEN", &secret)
        .args([
            "run",
            "--store",
            &sb.store(),
            "--runs",
            "3",
            "--profile",
            "--push",
            &cmd,
        ])
        .output()
        .unwrap()
        .into();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("sent to"), "{out:?}");
    let local = sb.show_json("latest");
    let remote: crate::common::Out = sb
        .cmd()
        .env("PERFSLEUTH_STORE_PROJECT", "app")
        .args(["show", "--json", "--store", &team, "latest"])
        .output()
        .unwrap()
        .into();
    let remote = crate::common::parse_json(&remote.stdout);
    let stacks = &remote["run"]["benchmarks"][0]["stacks"];
    assert_eq!(stacks["event"], "cpu-clock", "{remote}");
    assert_eq!(*stacks, local["run"]["benchmarks"][0]["stacks"]);
}

#[test]
fn ctrl_c_keeps_the_runs_measured_and_their_profile() {
    let Some((sb, prog)) = sandbox_with_three() else {
        return;
    };
    let cmd = format!("{} 20 10 10", prog.display());
    let child = sb
        .std_cmd()
        .args([
            "run",
            "--store",
            &sb.store(),
            "--profile",
            "--runs",
            "1000",
            &cmd,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // SAFETY: kill on the child's pid with a valid signal.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "Ctrl-C exits 130: {out:?}");
    let doc = sb.show_json("latest");
    assert_eq!(doc["run"]["status"], "interrupted", "{doc}");
    let bench = &doc["run"]["benchmarks"][0];
    let samples = bench["samples"].as_array().unwrap().len();
    assert!(samples >= 5, "the runs measured are kept: {samples}");
    // The profile of the runs measured, or a note why there is none;
    // never one of runs that were not kept.
    let stderr = String::from_utf8_lossy(&out.stderr);
    match bench.get("stacks") {
        Some(stacks) => {
            let profiled = stacks["iterations"].as_array().unwrap().len();
            assert!(
                profiled >= 1 && profiled <= samples,
                "{profiled} of {samples}"
            );
        }
        None => assert!(stderr.contains("not profiled"), "{stderr}"),
    }
}

#[test]
fn an_unprivileged_user_profiles_user_mode() {
    let sb = Sandbox::new();
    if !sampling_works(&sb) {
        return;
    }
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2);
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root || paranoid > 2 {
        perfsleuth_testkit::skip(
            "perf_software",
            "needs root to switch to nobody, and perf_event_paranoid ≤ 2",
        );
        return;
    }
    // A directory nobody may read, with the program in it.
    let dir = std::env::temp_dir().join(format!("perfsleuth-nobody-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prog = sb.gcc("shares", SHARES, &["-g"]);
    let shared = dir.join("shares");
    std::fs::copy(&prog, &shared).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out: crate::common::Out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_perfsleuth"))
        .args(["run", "--no-store", "--runs", "3", "--profile"])
        .arg(format!("{} 40 20 20", shared.display()))
        .current_dir(&dir)
        .env("HOME", &dir)
        .env("NO_COLOR", "1")
        .env_remove("PERFSLEUTH_STORE")
        .output()
        .expect("setpriv runs")
        .into();
    let _ = std::fs::remove_dir_all(&dir);
    let out = out.ok();
    assert!(out.stdout.contains("at 997 Hz, user mode"), "{out:?}");
    // Time off the CPU needs the context-switch event in kernel mode: the
    // profile is of the CPU alone, and a note says why.
    if paranoid > 1 {
        assert!(
            out.stderr
                .contains("note: profile: off-CPU time is not recorded: the kernel refused the context-switch event: "),
            "{out:?}"
        );
        assert!(!headline(&out).contains("off CPU"), "{out:?}");
    }
    assert_eq!(ranked(headline(&out)).first(), Some(&"alpha"), "{out:?}");
}

/// A C++ function template, its name mangled in the symbol table.
const CPP: &str = r#"
#include <cstdio>
#include <vector>
namespace shapes {
template <typename T> __attribute__((noinline)) T accumulate(const std::vector<T>& v, int reps) {
    T s = 0;
    for (int r = 0; r < reps; r++)
        for (auto x : v) s = s * 3 + x;
    return s;
}
}
int main() {
    std::vector<long> v(1000000, 1);
    std::printf("%ld\n", shapes::accumulate(v, 60));
}
"#;

#[test]
fn cpp_functions_are_named_demangled() {
    let sb = Sandbox::new();
    if !sampling_works(&sb) || !perfsleuth_testkit::tools_present("C++ names", &["g++"]) {
        return;
    }
    let src = sb.write("shapes.cpp", CPP);
    let prog = sb.path("shapes");
    let built = std::process::Command::new("g++")
        .args(["-O2", "-g", "-o"])
        .arg(&prog)
        .arg(&src)
        .status()
        .unwrap();
    assert!(built.success());
    let out = sb
        .bench(["--runs", "3", "--profile", prog.to_str().unwrap()])
        .ok();
    assert_eq!(
        ranked(headline(&out)).first(),
        Some(&"shapes::accumulate<long>"),
        "{out:?}"
    );
}

/// `src` built with `flags` as `DIR/NAME` in the sandbox: a candidate of
/// the same name as the baseline, so the two sides' functions are one
/// program's.
fn variant(sb: &Sandbox, dir: &str, name: &str, src: &str, flags: &[&str]) -> std::path::PathBuf {
    let built = sb.gcc(&format!("{dir}-{name}"), src, flags);
    std::fs::create_dir_all(sb.path(dir)).unwrap();
    let path = sb.path(&format!("{dir}/{name}"));
    std::fs::rename(built, &path).unwrap();
    path
}

/// A sandbox with the wait program built as `waits` (and, with
/// `-DWAIT=150`, its slower twin in `slow/waits`), where this machine
/// records time off the CPU; `None` (the skip said) elsewhere.
fn sandbox_with_waits() -> Option<(Sandbox, std::path::PathBuf, std::path::PathBuf)> {
    let sb = Sandbox::new();
    if !sampling_works(&sb) {
        return None;
    }
    let prog = sb.gcc("waits", WAITS, &["-g", "-pthread"]);
    let out = sb.bench(["--runs", "2", "--profile", "true"]);
    if let Some(line) = out
        .stderr
        .lines()
        .find(|l| l.contains("off-CPU time is not recorded"))
    {
        perfsleuth_testkit::skip("perf_software", format!("off-CPU time: {line}"));
        return None;
    }
    let slow = variant(
        &sb,
        "slow",
        "waits",
        WAITS,
        &["-g", "-pthread", "-DWAIT=150"],
    );
    Some((sb, prog, slow))
}

#[test]
fn a_wall_profile_names_the_wait_in_its_function_stores_exports_and_imports_it() {
    let Some((sb, prog, _)) = sandbox_with_waits() else {
        return;
    };
    // 20 requests a run: a little CPU in crunch, then 2 ms in poll.
    let cmd = format!("{} requests 20 300 2000", prog.display());
    let folded = sb.path("wall.folded");
    // --profile is a wall profile.
    let out = sb
        .bench([
            "--runs",
            "5",
            "--profile",
            "--export-folded",
            folded.to_str().unwrap(),
            &cmd,
        ])
        .ok();
    let line = headline(&out);
    assert!(
        line.starts_with("`fetch_row` (off CPU: poll) "),
        "the wait, in the function that polled: {out:?}"
    );
    assert!(ranked(line).contains(&"crunch"), "{out:?}");
    assert!(line.ends_with("(self time, on and off the CPU)"), "{out:?}");
    assert!(
        out.stdout.contains(" off it (threads summed; wall "),
        "{out:?}"
    );

    // Stored: the exact time off the CPU of each run, at least the 40 ms
    // the program waits.
    let doc = sb.show_json("latest");
    let stacks = &doc["run"]["benchmarks"][0]["stacks"];
    let off: Vec<u64> = stacks["off_cpu_ns"]
        .as_array()
        .unwrap_or_else(|| panic!("{doc}"))
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(off.len(), 5, "{off:?}");
    assert!(off.iter().all(|&ns| ns >= 40_000_000), "{off:?}");
    let env = &doc["run"]["environment"];
    assert!(
        env.to_string()
            .contains("off-CPU time from context switches"),
        "{env}"
    );

    // Exported: the wait's stacks end in the reason's frame.
    let text = std::fs::read_to_string(&folded).unwrap();
    assert!(
        text.lines().any(|l| l.contains(";fetch_row;")
            && l.rsplit_once(' ').unwrap().0.ends_with(";[off-cpu: poll]")),
        "{text}"
    );
    // And read back: an imported profile keeps its waits as waits.
    let cmd2 = format!("{} requests 5 300 1000", prog.display());
    sb.bench(["--runs", "2", &cmd2]).ok();
    let out = sb
        .run([
            "import",
            "--store",
            &sb.store(),
            "--into",
            "latest",
            folded.to_str().unwrap(),
        ])
        .ok();
    assert!(
        out.stdout.contains("`fetch_row` (off CPU: poll) "),
        "{out:?}"
    );

    // The report draws the waits in blue, with the legend.
    let page = sb.path("wall.html");
    sb.run([
        "report",
        "--store",
        &sb.store(),
        "latest~1",
        "-o",
        page.to_str().unwrap(),
    ])
    .ok();
    let html = std::fs::read_to_string(&page).unwrap();
    let images = flame_images(&html);
    let svg = images
        .iter()
        .find(|s| s.contains("[off-cpu: poll]"))
        .unwrap_or_else(|| panic!("no wall flame graph in {html}"));
    assert!(svg.contains("blue: time off the CPU"), "{svg}");
    assert!(svg.contains("rgb(86,143,209)"), "{svg}");
    assert!(html.contains("Profile (time on and off the CPU)"), "{html}");
}

#[test]
fn compare_names_the_longer_wait_with_its_reason_and_cpu_profiles_have_none() {
    let Some((sb, prog, slow)) = sandbox_with_waits() else {
        return;
    };
    // The same program name on both sides; the candidate waits 3 ms, not 2.
    for p in [&prog, &slow] {
        sb.bench([
            "--runs",
            "8",
            "--profile",
            "-n",
            "app",
            &format!("{} requests 20 300 2000", p.display()),
        ])
        .ok();
    }
    let out = sb.run(["compare", "--store", &sb.store(), "latest~1", "latest"]);
    let note = out
        .stdout
        .lines()
        .find(|l| l.contains("wall is in"))
        .unwrap_or_else(|| panic!("no attribution: {out:?}"));
    assert!(
        note.contains("of +") && note.contains("is in `fetch_row` (waits; off CPU: poll): +"),
        "the longer wait, where it waits: {note}"
    );
    assert!(!note.contains("is in `crunch`"), "{note}");
    // The compare document says which time moved: the wait's.
    let json = sb.run([
        "compare",
        "--store",
        &sb.store(),
        "--format",
        "json",
        "latest~1",
        "latest",
    ]);
    let doc = crate::common::parse_json(&json.stdout);
    let functions = doc["rows"][0]["time_functions"].as_array().unwrap();
    assert_eq!(functions[0]["function"], "fetch_row", "{doc}");
    assert_eq!(functions[0]["off_cpu"], "poll", "{doc}");

    // --profile=cpu records no wait: nothing off the CPU is stored.
    let out = sb
        .bench([
            "--runs",
            "3",
            "--profile=cpu",
            &format!("{} requests 5 300 1000", prog.display()),
        ])
        .ok();
    assert!(!headline(&out).contains("off CPU"), "{out:?}");
    let doc = sb.show_json("latest");
    assert!(
        doc["run"]["benchmarks"][0]["stacks"]
            .get("off_cpu_ns")
            .is_none(),
        "{doc}"
    );
}

#[test]
fn profile_values_are_checked() {
    let sb = Sandbox::new();
    sb.bench(["--runs", "2", "--profile=bogus", "true"])
        .clap_error("`bogus` is not a profile");
    sb.bench(["--runs", "2", "--profile=cpu,wall", "true"])
        .clap_error("`cpu` and `wall` both given");
}

/// The allocation program of the studies (bench/profiles/allocs.c).
const ALLOCS: &str = include_str!("../../../../bench/profiles/allocs.c");

/// A sandbox with the allocation program built as `allocs` and, with
/// `-DMORE=110` (10 % more keys copied in `intern`), as `more/allocs`.
fn sandbox_with_allocs() -> (Sandbox, std::path::PathBuf, std::path::PathBuf) {
    let sb = Sandbox::new();
    let prog = sb.gcc("allocs", ALLOCS, &["-g"]);
    let more = variant(&sb, "more", "allocs", ALLOCS, &["-g", "-DMORE=110"]);
    (sb, prog, more)
}

#[test]
fn an_allocation_profile_counts_exactly_stores_the_counts_as_metrics_and_names_who_asked() {
    let (sb, prog, _) = sandbox_with_allocs();
    let cmd = format!("{} 20000", prog.display());
    let out = sb.bench(["--runs", "4", "--profile=alloc", &cmd]).ok();
    // 20 000 keys and cells, the table, 20 log buffers, stdout's buffer.
    let line = out
        .stdout
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("Allocations:"))
        .unwrap_or_else(|| panic!("{out:?}"))
        .trim_start();
    assert!(
        line.starts_with("40022 allocations a run, ")
            && line.contains(" asked for (exact); peak live "),
        "{out:?}"
    );
    assert!(line.contains("`intern` "), "{out:?}");
    // No time profile with alloc alone.
    assert!(headline(&out).is_empty(), "{out:?}");

    let doc = sb.show_json("latest");
    let b = &doc["run"]["benchmarks"][0];
    assert_eq!(
        b["allocs"]["allocations"],
        serde_json::json!([40022, 40022, 40022, 40022]),
        "{b}"
    );
    // Every timed run's sample carries its counts, as metrics.
    for s in b["samples"].as_array().unwrap() {
        assert_eq!(s["counters"]["alloc_count"], 40022.0, "{s}");
        assert!(s["counters"]["alloc_bytes"].as_f64().unwrap() > 0.0, "{s}");
    }
    // The report: the counts, a flame graph of the bytes, the functions.
    let page = sb.path("allocs.html");
    sb.run([
        "report",
        "--store",
        &sb.store(),
        "latest",
        "-o",
        page.to_str().unwrap(),
    ])
    .ok();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("Allocations (exact counts; stacks sampled)"),
        "{html}"
    );
    assert!(
        flame_images(&html)
            .iter()
            .any(|svg| svg.contains("intern") && svg.contains("KiB a run")),
        "{html}"
    );
    // With a wall profile too.
    let out = sb.bench(["--runs", "3", "--profile=wall,alloc", &cmd]).ok();
    assert!(!headline(&out).is_empty(), "{out:?}");
    assert!(out.stdout.contains("Allocations:"), "{out:?}");
}

#[test]
fn compare_judges_allocations_exactly_and_names_the_function_that_allocates_more() {
    let (sb, prog, more) = sandbox_with_allocs();
    for p in [&prog, &more] {
        sb.bench([
            "--runs",
            "8",
            "--profile=alloc",
            // Fine enough that a tenth more of intern's bytes is many samples.
            "--alloc-sample",
            "1KiB",
            "-n",
            "app",
            &format!("{} 20000", p.display()),
        ])
        .ok();
    }
    let out = sb.run(["compare", "--store", &sb.store(), "latest~1", "latest"]);
    let row = out
        .stdout
        .lines()
        .find(|l| l.contains("alloc_count"))
        .unwrap_or_else(|| panic!("{out:?}"));
    // 2 000 more allocations (10 % of the keys copied twice) of 40 022.
    assert!(
        row.contains("+5.0% (exact)") && row.contains("regressed"),
        "{row}"
    );
    let note = out
        .stdout
        .lines()
        .find(|l| l.contains("· alloc_bytes:"))
        .unwrap_or_else(|| panic!("{out:?}"));
    assert!(
        note.contains("allocated a run is in `intern` (allocs): +"),
        "{note}"
    );
}

#[test]
fn what_cannot_be_allocation_profiled_says_why() {
    let sb = Sandbox::new();
    // A static binary: no library can be preloaded; the run is kept.
    let prog = sb.gcc(
        "one",
        "#include <stdlib.h>\nint main(void){return malloc(10)==0;}\n",
        &["-static"],
    );
    let out = sb
        .bench(["--runs", "2", "--profile=alloc", prog.to_str().unwrap()])
        .ok();
    assert!(
        out.stderr
            .contains("not allocation-profiled: 0 of the 3 runs wrote allocation records"),
        "{out:?}"
    );
    assert!(sb.show_json("latest")["run"]["benchmarks"][0]["allocs"].is_null());
    // Simulation mode and scale refuse it with the reason.
    sb.bench([
        "--runs",
        "1",
        "--mode",
        "simulation",
        "--profile=alloc",
        "true",
    ])
    .usage_error("--profile=alloc records real runs");
    sb.run([
        "scale",
        "--store",
        &sb.store(),
        "--profile=alloc",
        "--param",
        "n=1,2",
        "--work",
        "1",
        "--",
        "echo {n}",
    ])
    .usage_error("scale does not record allocations");
}

#[test]
fn import_into_checks_the_run_and_benchmark_before_it_reads_the_file() {
    let sb = Sandbox::new();
    sb.bench(["--runs", "2", "-n", "a", "true", "-n", "b", "true"])
        .ok();
    // A FIFO no one writes to reads as empty ("no stacks in the file"):
    // the error must be the missing --name's, found before the file is
    // read. A large file was read and parsed whole (8.7 s) first.
    let fifo = sb.path("stacks.folded");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let out = sb.run([
        "import",
        "--store",
        &sb.store(),
        "--into",
        "latest",
        "--format",
        "folded",
        fifo.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("has 2 benchmarks: which one is profiled?"),
        "{out:?}"
    );
}

#[test]
fn ab_records_each_sides_allocations_apart_and_names_the_function_that_allocates_more() {
    let sb = Sandbox::new();
    let repo = sb.path("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("allocs.c"), ALLOCS).unwrap();
    let makefile = |flags: &str| {
        std::fs::write(
            repo.join("Makefile"),
            format!("bench: allocs.c\n\tgcc -O2 -g {flags} -o bench allocs.c\n"),
        )
        .unwrap();
    };
    makefile("");
    crate::common::git(&repo, &["init", "-q", "-b", "main"]);
    crate::common::git(&repo, &["add", "-A"]);
    crate::common::git(&repo, &["commit", "-qm", "base"]);
    makefile("-DMORE=110");
    // The two sides' commands were each given directory 0 (one per prepare
    // call): their records mixed, and neither side was profiled.
    let out: crate::common::Out = sb
        .cmd()
        .current_dir(&repo)
        .args([
            "ab",
            "--store",
            &sb.store(),
            "--profile=alloc",
            "--alloc-sample",
            "1KiB",
            "--build",
            "make",
            "--",
            "./bench 20000",
        ])
        .output()
        .unwrap()
        .into();
    let out = out.ok();
    assert!(!out.stderr.contains("not allocation-profiled"), "{out:?}");
    let row = out
        .stdout
        .lines()
        .find(|l| l.contains("alloc_count"))
        .unwrap_or_else(|| panic!("{out:?}"));
    assert!(
        row.contains("+5.0% (exact)") && row.contains("regressed"),
        "{row}"
    );
    assert!(
        out.stdout
            .contains("allocated a run is in `intern` (bench): +"),
        "{out:?}"
    );
}
