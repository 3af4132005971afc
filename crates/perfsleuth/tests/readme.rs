//! Every command README.md shows, run as written, in order, by bash: each
//! `sh` block after its `<!-- readme-test: CONTEXT -->` line, where CONTEXT
//! says where it runs:
//! - `repo`: a directory that looks like this repository (its `Cargo.toml`,
//!   `Cargo.lock`, `crates/`, `bench/` and `target/` linked in), so
//!   `cc … bench/simulation/strings.c` and `cargo build --release --example
//!   counters` work as in a checkout, and what the commands write stays in
//!   the sandbox;
//! - `ab`: a git repository of a small project on a branch: `make` builds
//!   `./bench`, `cargo build --release` builds `target/release/app`, a tag
//!   `v1.2`, and the candidate does twice the work;
//! - `imports`: a directory with criterion's real output in
//!   `target/criterion` (tests/fixtures/criterion) and a Go benchmark.
//!
//! A command passes when it exits 0, or 1 where the README says a gate may
//! exit 1 (`--fail-on`, `history --check`, `probe diff`); never 2, never a
//! panic. The few commands that cannot run as written here are in
//! [`REWRITES`], each with what runs instead and why.

// A binary of its own: its commands include `ab` and `run` verdicts judged
// against `--fail-on`, so no other test shares the machine with them (in
// the CLI binary they ran beside the profile tests and failed under that
// load).
#[path = "cli/common.rs"]
mod common;

use crate::common::Sandbox;
use std::path::{Path, PathBuf};
use std::process::Command;

/// README text this test runs differently, what it runs instead (`None`:
/// nothing), and why.
const REWRITES: &[(&str, Option<&str>, &str)] = &[
    (
        "cargo run --release -- ",
        Some("perfsleuth "),
        "the quickstart's release build of the same source: the test runs the perfsleuth it built",
    ),
    (
        "cargo test --workspace --locked",
        None,
        "the quickstart's test command is the command running this test",
    ),
    (
        "perfsleuth exec --format criterion -- cargo bench",
        Some("perfsleuth import target/criterion"),
        "exec runs the suite and then imports what it wrote; a criterion suite would be built from crates.io here, so the import of criterion's real output (tests/fixtures/criterion) stands for it (exec itself is run with Google Benchmark, pytest-benchmark and go in the import tests)",
    ),
    (
        "pst_…",
        Some("$README_TOKEN"),
        "the token `server token create` printed one block earlier",
    ),
];

/// The README's `sh` blocks: (context, commands), comments and line
/// continuations removed.
fn blocks() -> Vec<(String, Vec<String>)> {
    crate::common::marked_sh_blocks("README.md", "readme-test")
        .into_iter()
        .map(|(ctx, body)| {
            let cmds = body
                .replace("\\\n", " ")
                .lines()
                .map(strip_comment)
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
                .filter(|l| !l.is_empty())
                .collect();
            (ctx, cmds)
        })
        .collect()
}

/// The line without a trailing `# comment` (outside quotes).
fn strip_comment(line: &str) -> &str {
    let (mut single, mut double) = (false, false);
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => return line[..i].trim_end(),
            _ => {}
        }
        prev = c;
    }
    line.trim_end()
}

fn top() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The target directory this test was built in.
fn target_dir() -> PathBuf {
    Path::new(crate::common::BIN)
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf()
}

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `repo`: this repository's sources linked into `dir`.
fn repo_view(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for name in ["Cargo.toml", "Cargo.lock", "crates", "bench"] {
        std::os::unix::fs::symlink(top().join(name).canonicalize().unwrap(), dir.join(name))
            .unwrap();
    }
    std::os::unix::fs::symlink(target_dir().canonicalize().unwrap(), dir.join("target")).unwrap();
}

/// `ab`: a project whose candidate (branch `feature`, checked out) does
/// twice the work of `main` (tagged `v1.2`).
fn ab_project(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let source = |work: u32| {
        format!(
            "fn main() {{\n    let input = std::env::args().nth(1).map(|p| std::fs::read(p).unwrap()).unwrap_or_default();\n    let mut h: u64 = 1;\n    for _ in 0..{work} {{\n        for b in &input {{\n            h = h.wrapping_mul(31).wrapping_add(u64::from(*b));\n        }}\n    }}\n    println!(\"{{h}}\");\n}}\n"
        )
    };
    let bench = |work: u32| {
        format!(
            "#include <stdio.h>\n#include <string.h>\nint main(int argc, char **argv) {{\n    long n = {work}L * (argc > 1 && strcmp(argv[1], \"large\") == 0 ? 4 : 1);\n    volatile unsigned long h = 1;\n    for (long i = 0; i < n; i++) h = h * 31 + i;\n    printf(\"%lu\\n\", h);\n    return 0;\n}}\n"
        )
    };
    write(
        dir,
        "Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(dir, "src/main.rs", &source(2000));
    write(dir, "input.txt", &"perfsleuth ".repeat(100));
    write(
        dir,
        "Makefile",
        "bench: bench.c\n\tcc -O2 -o bench bench.c\n",
    );
    write(dir, "bench.c", &bench(2_000_000));
    write(dir, ".gitignore", "target/\nbench\n.perfsleuth/\n");
    crate::common::git(dir, &["init", "-q", "-b", "main"]);
    crate::common::git(dir, &["add", "-A"]);
    crate::common::git(dir, &["commit", "-qm", "v1.2"]);
    crate::common::git(dir, &["tag", "v1.2"]);
    crate::common::git(dir, &["checkout", "-qb", "feature"]);
    write(dir, "src/main.rs", &source(4000));
    write(dir, "bench.c", &bench(4_000_000));
    crate::common::git(dir, &["commit", "-qam", "twice the work"]);
}

/// `imports`: criterion's real output where `cargo bench` leaves it,
/// imported once already (the "previous import" the README compares
/// with), and a Go package with a benchmark.
fn imports(sb: &Sandbox, dir: &Path) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/criterion");
    copy_dir(&fixture, &dir.join("target/criterion"));
    write(dir, "go.mod", "module fib\n\ngo 1.19\n");
    write(
        dir,
        "fib_test.go",
        "package fib\n\nimport \"testing\"\n\nfunc fib(n int) int {\n\tif n < 2 {\n\t\treturn n\n\t}\n\treturn fib(n-1) + fib(n-2)\n}\n\nfunc BenchmarkFib(b *testing.B) {\n\tfor i := 0; i < b.N; i++ {\n\t\tfib(15)\n\t}\n}\n",
    );
    let out: crate::common::Out = sb
        .shell(crate::common::BIN)
        .current_dir(dir)
        .args(["import", "target/criterion"])
        .output()
        .unwrap()
        .into();
    out.ok();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// README commands that run a program the quickstart's set-up does not
/// install, and the test feature naming it: each is skipped, saying so,
/// where the program is not on `PATH` (and fails where the feature is
/// required, as `.ci/run` requires `go`).
const NEEDS: &[(&str, &str)] = &[("go test ", "go")];

/// Whether `program` is an executable file in a directory of `PATH`.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|d| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(d.join(program))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// Whether `cmd` can run here: `false` (the skip said) where it needs a
/// program of [`NEEDS`] that is not installed.
fn runnable(cmd: &str) -> bool {
    for (text, program) in NEEDS {
        if cmd.contains(text) && !on_path(program) {
            perfsleuth_testkit::skip(
                program,
                format!("README's `{cmd}` is not run: {program} is not installed"),
            );
            return false;
        }
    }
    true
}

/// Which exit codes the README allows `cmd`.
fn allowed(cmd: &str, root: bool) -> Vec<i32> {
    let gate =
        cmd.contains("--fail-on") || cmd.contains("history --check") || cmd.contains("probe diff");
    let mut codes = if gate { vec![0, 1] } else { vec![0] };
    // Lock tracing needs root (or CAP_BPF and CAP_PERFMON); elsewhere it
    // is an error with the reason, as the README says.
    if cmd.contains("--locks") && !root {
        codes.push(2);
    }
    codes
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[test]
fn every_readme_command_runs_as_written() {
    let sb = Sandbox::new();
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let dirs = [
        ("repo", sb.path("repo")),
        ("ab", sb.path("ab")),
        ("imports", sb.path("imports")),
    ];
    repo_view(&dirs[0].1);
    ab_project(&dirs[1].1);
    std::fs::create_dir_all(&dirs[2].1).unwrap();
    imports(&sb, &dirs[2].1);
    // hyperfine's welch_ttest.py where the README runs it.
    let welch = std::env::var_os("PERFSLEUTH_HYPERFINE_SCRIPTS")
        .map(|d| PathBuf::from(d).join("welch_ttest.py"))
        .filter(|p| p.exists());
    match &welch {
        Some(p) => {
            std::fs::copy(p, dirs[0].1.join("welch_ttest.py")).unwrap();
        }
        None => perfsleuth_testkit::skip(
            "hyperfine_scripts",
            "README's `python3 welch_ttest.py` is not run: hyperfine's scripts are not in $PERFSLEUTH_HYPERFINE_SCRIPTS",
        ),
    }

    let logs = sb.path("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let mut script =
        String::from("README_SERVE=\ntrap '[ -n \"$README_SERVE\" ] && kill $README_SERVE' EXIT\n");
    let mut expected: Vec<(String, Vec<i32>)> = Vec::new();
    let blocks = blocks();
    assert!(blocks.len() >= 10, "{blocks:?}");
    for (context, cmds) in &blocks {
        let dir = &dirs
            .iter()
            .find(|(name, _)| name == context)
            .unwrap_or_else(|| panic!("README: unknown readme-test context {context}"))
            .1;
        script.push_str(&format!("cd {}\n", shell_quote(&dir.display().to_string())));
        for shown in cmds {
            let mut cmd = shown.clone();
            let mut skip = false;
            for (text, instead, _why) in REWRITES {
                if cmd.contains(text) {
                    match instead {
                        Some(i) => cmd = cmd.replace(text, i),
                        None => skip = true,
                    }
                }
            }
            if skip
                || (cmd.starts_with("python3 welch_ttest.py") && welch.is_none())
                || !runnable(&cmd)
            {
                continue;
            }
            let i = expected.len();
            let (out, err) = (logs.join(format!("{i}.out")), logs.join(format!("{i}.err")));
            let (out, err) = (out.display(), err.display());
            if cmd.starts_with("perfsleuth serve ") {
                // It runs until stopped: in the background, until the end.
                let listen = cmd
                    .split("--listen ")
                    .nth(1)
                    .unwrap()
                    .split(' ')
                    .next()
                    .unwrap();
                script.push_str(&format!(
                    "{cmd} >{out} 2>{err} &\nREADME_SERVE=$!\nfor _ in $(seq 1 100); do curl -fs http://{listen}/api/v1/health >/dev/null && break; sleep 0.1; done\necho \"{i} $?\" >> {codes}\n",
                    codes = logs.join("codes").display()
                ));
            } else {
                script.push_str(&format!(
                    "{{ {cmd}\n}} >{out} 2>{err}\necho \"{i} $?\" >> {codes}\n",
                    codes = logs.join("codes").display()
                ));
            }
            if cmd.starts_with("perfsleuth server token create") {
                script.push_str(&format!(
                    "README_TOKEN=$(grep -o 'pst_[A-Za-z0-9_-]*' {out} | head -1)\n"
                ));
            }
            expected.push((cmd.clone(), allowed(&cmd, root)));
        }
    }
    let file = sb.path("readme.sh");
    std::fs::write(&file, &script).unwrap();
    let real_home = std::env::var("HOME").unwrap_or_default();
    let mut bash = sb.shell("bash");
    bash.arg(&file)
        .env("GITHUB_STEP_SUMMARY", sb.path("summary.md"))
        .env("TMPDIR", sb.path("tmp"));
    std::fs::create_dir_all(sb.path("tmp")).unwrap();
    // cargo and rustup find their toolchains under the real home.
    for (var, default) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
        let value = std::env::var(var).unwrap_or_else(|_| format!("{real_home}/{default}"));
        bash.env(var, value);
    }
    bash.env_remove("CARGO_TARGET_DIR");
    let status = bash.status().expect("bash starts");
    assert!(
        status.success(),
        "the README script itself failed: {status:?}"
    );

    let codes = std::fs::read_to_string(logs.join("codes")).unwrap_or_default();
    let got: Vec<i32> = codes
        .lines()
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect();
    assert_eq!(got.len(), expected.len(), "every command ran:\n{codes}");
    println!("{} README commands run", expected.len());
    let mut failures = Vec::new();
    for (i, (cmd, allow)) in expected.iter().enumerate() {
        let err = std::fs::read_to_string(logs.join(format!("{i}.err"))).unwrap_or_default();
        let code = got.get(i).copied();
        if code.is_none_or(|c| !allow.contains(&c)) || err.contains("panicked") {
            let lines: Vec<&str> = err.lines().collect();
            let tail = lines[lines.len().saturating_sub(6)..].join("\n");
            failures.push(format!(
                "`{cmd}`: exit {code:?} (allowed {allow:?})\n{tail}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} README commands failed:\n\n{}",
        failures.len(),
        expected.len(),
        failures.join("\n\n")
    );
    // What some of them promise, checked: the exports and reports exist,
    // the PR summary was appended to, the server answered the comparison.
    let repo = &dirs[0].1;
    for f in [
        "results.json",
        "samples.csv",
        "summary.md",
        "run.html",
        "pr.html",
        "history.html",
        "change.svg",
        "mutex.svg",
        "cisco.svg",
        "scale.html",
        "probe.html",
        "here.json",
        "sleep.json",
        "three.folded",
        "three.html",
    ] {
        assert!(repo.join(f).exists(), "README's {f} was not written");
    }
    let summary = std::fs::read_to_string(sb.path("summary.md")).unwrap();
    assert!(summary.contains("| Benchmark |"), "{summary}");
}

#[test]
fn the_readme_blocks_are_read_as_bash_reads_them() {
    assert_eq!(
        strip_comment("perfsleuth probe   # the suite"),
        "perfsleuth probe"
    );
    assert_eq!(
        strip_comment("run 'a # b' \"c#d\" # e"),
        "run 'a # b' \"c#d\""
    );
    assert_eq!(strip_comment("echo a#b"), "echo a#b");
    let all: Vec<String> = blocks().into_iter().flat_map(|(_, c)| c).collect();
    assert!(all.len() > 60, "{all:?}");
    // A continued line is one command.
    assert!(
        all.iter().any(|c| c
            .starts_with("perfsleuth run --mode simulation --no-portable -n strings --variant")),
        "{all:?}"
    );
    // Every rewrite still names something the README shows.
    for (text, _, why) in REWRITES {
        assert!(
            all.iter().any(|c| c.contains(text)),
            "stale rewrite {text:?} ({why})"
        );
    }
}
