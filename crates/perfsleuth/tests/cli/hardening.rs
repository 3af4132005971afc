//! What a hostile user found (issue 13): outputs that would overwrite the
//! store, reads that hung or never ended, failures that exited 0. Each test
//! here failed before its fix.

use crate::common::{Out, Sandbox};
use std::path::Path;
use std::time::Duration;

/// A read that blocks is the bug: far less than the suite's hang guard.
const QUICK: Duration = Duration::from_secs(30);

fn quick(sb: &Sandbox, args: &[&str]) -> Out {
    sb.cmd()
        .args(args)
        .timeout(QUICK)
        .output()
        .expect("start perfsleuth")
        .into()
}

fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo")
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

/// One stored run in `r.db`, and the bytes of the store file after it.
fn stored(sb: &Sandbox) -> Vec<u8> {
    sb.bench(["--runs", "2", "--no-history", "true"]).ok();
    std::fs::read(sb.db()).unwrap()
}

#[track_caller]
fn store_intact(sb: &Sandbox, before: &[u8]) {
    assert_eq!(
        std::fs::read(sb.db()).unwrap(),
        before,
        "the store file changed"
    );
    assert_eq!(sb.runs_json().len(), 1, "the stored run is gone");
}

#[test]
fn no_output_option_overwrites_the_store() {
    let sb = Sandbox::new();
    let before = stored(&sb);
    let store = sb.store();
    std::os::unix::fs::symlink("r.db", sb.path("link.db")).unwrap();
    std::fs::hard_link(sb.db(), sb.path("hard.db")).unwrap();
    for (option, path) in [
        ("--export-json", "r.db"),
        ("--export-csv", "r.db"),
        ("--export-markdown", "./r.db"),
        ("--output", "r.db"),
        ("--export-json", "link.db"),
        ("--export-json", "hard.db"),
        ("--export-csv", "r.db-wal"),
        ("--export-csv", "r.db-shm"),
    ] {
        let out = sb
            .bench(["--runs", "2", option, path, "true"])
            .usage_error("would destroy the stored results");
        assert!(out.stderr.contains(option), "{out:?}");
        store_intact(&sb, &before);
        for side in ["r.db-wal", "r.db-shm"] {
            assert!(!sb.path(side).exists() || path != side, "{side} created");
        }
    }
    // The same through PERFSLEUTH_STORE, and for the scale chart.
    let out: Out = sb
        .cmd()
        .env("PERFSLEUTH_STORE", &store)
        .args(["run", "--runs", "2", "--export-json", "r.db", "true"])
        .output()
        .unwrap()
        .into();
    out.usage_error("is the store");
    sb.run([
        "scale",
        "--store",
        &store,
        "--param",
        "n=1,2",
        "--work",
        "1",
        "--plot",
        "r.db",
        "sleep 0.00{n}",
    ])
    .usage_error("is the store");
    store_intact(&sb, &before);
}

#[test]
fn no_output_overwrites_a_database_or_a_store_about_to_be_created() {
    let sb = Sandbox::new();
    let before = stored(&sb);
    // Any SQLite file is refused, whichever store this run uses.
    sb.run([
        "run",
        "--store",
        "sqlite:other.db",
        "--runs",
        "2",
        "--export-json",
        "r.db",
        "true",
    ])
    .usage_error("a SQLite database");
    sb.write("n.csv", "N,X\n1,10\n2,19\n4,35\n8,60\n");
    let out: Out = sb
        .cmd()
        .env("PERFSLEUTH_STORE", sb.store())
        .args(["scale", "fit", "n.csv", "--plot", "r.db"])
        .output()
        .unwrap()
        .into();
    out.usage_error("would destroy the stored results");
    store_intact(&sb, &before);
    // A store that does not exist yet, named the same as an export.
    sb.run([
        "run",
        "--store",
        "sqlite:new.db",
        "--runs",
        "2",
        "--export-json",
        "new.db",
        "true",
    ])
    .usage_error("is the store");
    assert!(!sb.path("new.db").exists());
}

#[test]
fn devices_fifos_and_directories_are_named_not_read() {
    let sb = Sandbox::new();
    mkfifo(&sb.path("fifo"));
    std::fs::create_dir(sb.path("dir")).unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["scale", "fit", "/dev/zero"], "a character device"),
        (&["scale", "fit", "dir"], "a directory"),
        (
            &["env", "show", "--cpuid", "/dev/zero"],
            "a character device",
        ),
        (&["env", "show", "--cpuid", "fifo"], "a FIFO"),
        (
            &["compare", "--config", "/dev/zero", "a", "b"],
            "a character device",
        ),
        (&["compare", "--config", "fifo", "a", "b"], "a FIFO"),
        (&["compare", "/dev/zero", "/dev/zero"], "a character device"),
        (&["run", "--no-store", "--input", "fifo", "true"], "a FIFO"),
        (
            &["run", "--no-store", "--input", "dir", "true"],
            "a directory",
        ),
        (&["run", "--no-store", "--output", "fifo", "true"], "a FIFO"),
        (
            &["run", "--no-store", "--export-json", "fifo", "true"],
            "a FIFO",
        ),
    ];
    for (args, needle) in cases {
        quick(&sb, args).usage_error(needle);
    }
    // A FIFO nobody writes to reads as empty where a pipe is accepted.
    quick(&sb, &["scale", "fit", "fifo"]).usage_error("no data rows");
    // A pipe (process substitution) is a file to read from.
    let out: Out = sb
        .cmd()
        .args(["scale", "fit", "/dev/stdin"])
        .write_stdin("N,X\n1,10\n2,19\n4,35\n8,60\n")
        .timeout(QUICK)
        .output()
        .unwrap()
        .into();
    out.ok();
}

#[test]
fn a_fifo_in_a_root_tree_does_not_block_env() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("tree/lib")).unwrap();
    std::fs::create_dir_all(sb.path("tree/proc")).unwrap();
    mkfifo(&sb.path("tree/lib/libc.so.6"));
    mkfifo(&sb.path("tree/proc/cpuinfo"));
    let out = quick(&sb, &["env", "show", "--root", "tree"]).ok();
    assert!(
        out.stdout
            .contains("a FIFO (named pipe), not a regular file"),
        "{out:?}"
    );
    let check = quick(&sb, &["env", "check", "--root", "tree"]);
    assert!(check.code >= 0, "killed by the hang guard: {check:?}");
}

#[test]
fn a_run_reads_its_input_from_a_device() {
    let sb = Sandbox::new();
    sb.bench(["--runs", "2", "--input", "/dev/zero", "head -c 10"])
        .ok();
}

/// `perfsleuth ARGS… > /dev/full`.
fn to_full_disk(sb: &Sandbox, args: &[&str]) -> Out {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    sb.std_cmd()
        .args(args)
        .stdout(full)
        .output()
        .expect("start perfsleuth")
        .into()
}

#[test]
fn output_lost_on_a_full_disk_is_a_failure_but_a_closed_pipe_is_not() {
    let sb = Sandbox::new();
    stored(&sb);
    let store = sb.store();
    for args in [
        &["runs", "--store", &store][..],
        &["show", "--json", "--store", &store],
    ] {
        to_full_disk(&sb, args).usage_error("cannot write to standard output: No space left");
    }
    // The summary goes to stderr when an export owns stdout, so the error
    // comes after it.
    let out = to_full_disk(
        &sb,
        &[
            "run",
            "--store",
            &store,
            "--runs",
            "2",
            "--export-csv",
            "-",
            "true",
        ],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("error: cannot write to standard output: No space left"),
        "{out:?}"
    );
    // The run itself was still stored.
    assert_eq!(sb.runs_json().len(), 2);
    // `perfsleuth runs | head -c1`: the reader leaves early, which is fine.
    let mut child = sb
        .std_cmd()
        .args(["show", "--json", "--store", &store])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 1];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let out: Out = child.wait_with_output().unwrap().into();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
}

#[test]
fn oversized_parameter_scans_are_refused() {
    let sb = Sandbox::new();
    for scan in [
        &["-P", "n", "1", "1e308"][..],
        &["-P", "n", "0", "1", "-D", "1e-300"],
        &["-P", "n", "0", "18446744073709551615"],
    ] {
        let mut args = vec!["--runs", "2"];
        args.extend_from_slice(scan);
        args.push("sleep 0.00{n}");
        sb.bench(&args).usage_error("at most 100000");
        assert!(!sb.db().exists(), "a refused scan stored a run");
    }
    // Combinations are counted before they are built (issue 37): two scans
    // of 10 000 values each would be 10^8 benchmarks, refused at once.
    let started = std::time::Instant::now();
    sb.bench([
        "--runs",
        "2",
        "-P",
        "a",
        "1",
        "10000",
        "-P",
        "b",
        "1",
        "10000",
        "echo {a} {b}",
    ])
    .usage_error("would make 100000000 benchmarks (at most 100000)");
    assert!(!sb.db().exists());
    eprintln!("refused in {:?}", started.elapsed());
}

#[test]
fn descriptors_do_not_grow_with_the_number_of_commands() {
    // Issue 37: `-P n 1 300` under `ulimit -n 1024` failed with "cannot
    // open /dev/null: Too many open files"; each command held descriptors
    // in perfsleuth and in its spawner. 400 commands now run under 64.
    let sb = Sandbox::new();
    let out: Out = std::process::Command::new("sh")
        .args([
            "-c",
            "ulimit -n 64 && exec \"$0\" \"$@\"",
            crate::common::BIN,
        ])
        .args(["run", "--store", &sb.store(), "--color", "never"])
        .args(["-P", "n", "1", "400", "--runs", "2", "--warmup", "0"])
        .arg("true {n}")
        .current_dir(sb.path(""))
        .env("NO_COLOR", "1")
        .output()
        .expect("start sh")
        .into();
    out.ok();
    assert_eq!(
        sb.runs_json()[0]["benchmarks"].as_array().map(Vec::len),
        Some(400)
    );
}

#[test]
fn a_store_variable_that_is_not_utf8_is_an_error_not_the_default_store() {
    use std::os::unix::ffi::OsStrExt;
    let sb = Sandbox::new();
    let out: Out = sb
        .cmd()
        .env("PERFSLEUTH_STORE", std::ffi::OsStr::from_bytes(b"x\xff.db"))
        .args(["run", "--runs", "2", "true"])
        .output()
        .unwrap()
        .into();
    out.usage_error("PERFSLEUTH_STORE is not valid UTF-8");
    assert!(
        sb.files_named("results.db").is_empty(),
        "the default store was used"
    );
}

#[test]
fn an_absurd_warmup_count_ends_at_the_time_budget() {
    let sb = Sandbox::new();
    let out = quick(
        &sb,
        &[
            "run",
            "--no-store",
            "--warmup",
            "4294967295",
            "--time-budget",
            "1s",
            "true",
        ],
    )
    .ok();
    assert!(out.stderr.contains("warmup stopped after"), "{out:?}");
    // scale has no time budget: its counts are bounded instead.
    for option in ["--warmup", "--runs"] {
        quick(
            &sb,
            &[
                "scale",
                "--no-store",
                "--param",
                "n=1,2",
                option,
                "4294967295",
                "--work",
                "1",
                "sleep 0.00{n}",
            ],
        )
        .clap_error("4294967295");
    }
}

#[test]
fn a_command_that_runs_on_without_a_timeout_gets_a_note() {
    let sb = Sandbox::new();
    // Ten time budgets of 0.1 s: the note is due after 1 s of a 3 s run.
    let out = quick(
        &sb,
        &[
            "run",
            "--no-store",
            "--warmup",
            "0",
            "--runs",
            "1",
            "--time-budget",
            "100ms",
            "sleep 3",
        ],
    )
    .ok();
    assert!(
        out.stderr
            .contains("no --timeout is set; Ctrl-C stops the run"),
        "{out:?}"
    );
    // Not when the run is quick, nor with --timeout.
    for args in [
        &[
            "run",
            "--no-store",
            "--runs",
            "2",
            "--time-budget",
            "100ms",
            "sleep 0.1",
        ][..],
        &[
            "run",
            "--no-store",
            "--warmup",
            "0",
            "--runs",
            "1",
            "--time-budget",
            "100ms",
            "--timeout",
            "10s",
            "sleep 2",
        ],
    ] {
        let out = quick(&sb, args).ok();
        assert!(!out.stderr.contains("no --timeout"), "{out:?}");
    }
}

#[test]
fn a_store_whose_version_does_not_match_its_tables_is_named_in_one_line() {
    let sb = Sandbox::new();
    stored(&sb);
    for version in [0, 3] {
        let copy = sb.path(&format!("v{version}.db"));
        std::fs::copy(sb.db(), &copy).unwrap();
        crate::common::sqlite_exec(&copy, &format!("PRAGMA user_version={version}"));
        let before = std::fs::read(&copy).unwrap();
        let store = format!("sqlite:{}", copy.display());
        for args in [
            &["runs", "--store", &store][..],
            &["run", "--store", &store, "--runs", "2", "true"],
        ] {
            let out = sb
                .run(args)
                .usage_error(&format!("the store says schema version {version}"));
            assert!(!out.stderr.contains("CREATE TABLE"), "{out:?}");
            assert_eq!(out.stderr.lines().count(), 2, "{out:?}");
        }
        assert_eq!(
            std::fs::read(&copy).unwrap(),
            before,
            "the store was changed"
        );
    }
}

#[test]
fn negative_numbers_are_values_where_valid_and_get_a_working_hint_elsewhere() {
    let sb = Sandbox::new();
    let out = sb
        .bench(["--runs", "2", "-P", "n", "-1", "0", "echo {n}"])
        .ok();
    assert!(out.stdout.contains("Benchmark 1: echo -1"), "{out:?}");
    let out = sb
        .bench(["--runs", "2", "-L", "n", "-3,-4", "echo {n}"])
        .ok();
    assert!(out.stdout.contains("Benchmark 2: echo -4"), "{out:?}");
    let out = sb.bench(["--runs", "-1", "true"]).clap_error("'-1'");
    assert!(
        !out.stderr.contains("'-- -1'"),
        "the hint that does not work: {out:?}"
    );
    // A value that still looks like an option: the hint says what works.
    let out = sb.bench(["--runs", "2", "--name", "-x", "true"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--name=-x"), "{out:?}");
    sb.bench(["--runs", "2", "--name=-x", "true"]).ok();
}

#[test]
fn a_script_whose_interpreter_is_missing_names_it() {
    let sb = Sandbox::new();
    let script = sb.write("s.sh", "#!/nonexistent/interpreter -x\necho hi\n");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    sb.bench(["--runs", "2", "./s.sh"])
        .usage_error("names the interpreter `/nonexistent/interpreter` in its #! line");
    assert!(!sb.db().exists());
}

#[test]
fn an_empty_probe_name_is_refused_before_anything_is_stored() {
    let sb = Sandbox::new();
    for name in ["", ","] {
        sb.run(["probe", "--store", &sb.store(), name])
            .usage_error("an empty probe name");
    }
    assert!(!sb.db().exists(), "a failed probe run was stored");
}

#[test]
fn an_empty_root_is_not_called_fit() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path("empty")).unwrap();
    let out = sb.run(["env", "check", "--root", "empty"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(!out.stdout.contains("Fit for benchmarking"), "{out:?}");
    assert!(out.stdout.contains("Cannot tell whether"), "{out:?}");
    let out = sb.run(["env", "check", "--root", "empty", "--json"]);
    let doc = crate::common::parse_json(&out.stdout);
    assert_eq!(doc["fit"], false, "{doc}");
}

#[test]
fn duplicate_names_are_refused_and_stray_placeholders_warned_about() {
    let sb = Sandbox::new();
    sb.bench(["--runs", "2", "-n", "a", "-n", "a", "true", "true"])
        .usage_error("gives two commands the same name `a`");
    sb.bench([
        "--runs",
        "2",
        "-L",
        "n",
        "1,2",
        "-n",
        "a",
        "-n",
        "a",
        "echo {n}",
        "echo x{n}",
    ])
    .usage_error("gives two commands the same name `a`");
    assert!(!sb.db().exists());
    // One name over a parameter's values is one benchmark per value.
    sb.bench(["--runs", "2", "-L", "n", "1,2", "-n", "job", "echo {n}"])
        .ok();
    let out = sb
        .bench(["--runs", "2", "-L", "n", "1,2", "echo {n} {m}"])
        .ok();
    assert!(
        out.stderr
            .contains("warning: `{m}` in `echo {n} {m}` is not a parameter (parameters: n)"),
        "{out:?}"
    );
    // Braces with no parameter defined are the command's own business.
    let out = sb.bench(["--runs", "2", "echo {x}"]).ok();
    assert!(!out.stderr.contains("warning: `{x}`"), "{out:?}");
}
