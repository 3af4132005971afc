//! Where results are stored, and reading them back with `runs` and `show`.

use crate::common::{Out, Sandbox, database_of, parse_json, psql, samples};
use std::path::Path;
use std::process::Stdio;

/// `perfsleuth run --warmup 0 --runs N ARGS…` with an explicit `--store`.
fn quick(sb: &Sandbox, store: &str, runs: &str, cmds: &[&str]) -> Out {
    sb.run(
        ["run", "--store", store, "--warmup", "0", "--runs", runs]
            .iter()
            .chain(cmds),
    )
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap())
        .env("HOME", dir.join("home"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("GIT_CONFIG_GLOBAL")
        .args([
            "-c",
            "user.name=x",
            "-c",
            "user.email=y",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

// ---------------------------------------------------------------- --store spellings

#[test]
fn store_accepts_sqlite_urls_and_bare_paths() {
    let sb = Sandbox::new();
    let abs = sb.path("abs.db");
    quick(&sb, "sqlite:rel.db", "2", &["true"]).ok();
    quick(&sb, "bare.db", "2", &["true"]).ok();
    quick(&sb, &format!("sqlite://{}", abs.display()), "2", &["true"]).ok();
    for f in ["rel.db", "bare.db", "abs.db"] {
        assert!(sb.path(f).is_file(), "{f} not created");
    }
    // Either spelling reads the same file.
    let out = sb.run(["runs", "--json", "--store", "rel.db"]).ok();
    assert_eq!(parse_json(&out.stdout)["runs"][0]["samples"], 2);
    let out = sb.run(["runs", "--json", "--store", "sqlite:bare.db"]).ok();
    assert_eq!(parse_json(&out.stdout)["runs"][0]["samples"], 2);
}

#[test]
fn store_rejects_other_schemes_and_empty_values() {
    let sb = Sandbox::new();
    let out = quick(&sb, "mysql://localhost/db", "2", &["true"]).usage_error("hint:");
    assert!(out.stderr.contains("`sqlite` and `postgres`"), "{out:?}");
    // A PostgreSQL store that cannot be reached: one line, the hint, no password.
    let out = quick(&sb, "postgres://u:hunter2@127.0.0.1:1/db", "2", &["true"])
        .usage_error("cannot connect to postgres://u@127.0.0.1:1/db");
    assert!(!out.stderr.contains("hunter2"), "{out:?}");
    quick(&sb, "sqlite:", "2", &["true"]).usage_error("no path after `sqlite:`");
    quick(&sb, "", "2", &["true"]).usage_error("empty");
}

/// The CLI on a PostgreSQL store: runs stored, listed, shown and compared
/// there, as in a SQLite file; a project's runs only with
/// `PERFSLEUTH_STORE_PROJECT`.
#[test]
fn a_postgres_store_serves_every_command_like_a_sqlite_file() {
    let Some(url) = perfsleuth_testkit::fresh_postgres("cli_store") else {
        return;
    };
    let sb = Sandbox::new();
    quick(&sb, &url, "3", &["true"]).ok();
    quick(&sb, &url, "3", &["true"]).ok();
    let out = sb.run(["runs", "--json", "--store", &url]).ok();
    let runs = parse_json(&out.stdout);
    assert_eq!(runs["runs"].as_array().unwrap().len(), 2, "{runs}");
    assert_eq!(runs["runs"][0]["samples"], 3);
    let shown = sb.run(["show", "latest", "--json", "--store", &url]).ok();
    let doc = parse_json(&shown.stdout);
    assert_eq!(doc["run"]["uuid"].as_str().map(str::len), Some(36), "{doc}");
    let out = sb
        .run([
            "compare", "latest~1", "latest", "--format", "json", "--store", &url,
        ])
        .ok();
    assert_eq!(
        parse_json(&out.stdout)["rows"][0]["metric"],
        "wall",
        "{}",
        out.stdout
    );
    // Another project of the same database holds none of them.
    let out: Out = sb
        .cmd()
        .env("PERFSLEUTH_STORE_PROJECT", "elsewhere")
        .args(["runs", "--json", "--store", &url])
        .output()
        .unwrap()
        .into();
    assert_eq!(
        parse_json(&out.stdout)["runs"].as_array().map(Vec::len),
        Some(0),
        "{out:?}"
    );
    // Where the runs are, when the project read holds none; a bad name refused.
    sb.run(["server", "project", "app", "--store", &url]).ok();
    let out: Out = sb
        .cmd()
        .env("PERFSLEUTH_STORE_PROJECT", "app")
        .args([
            "run", "--warmup", "0", "--runs", "2", "--store", &url, "true",
        ])
        .output()
        .unwrap()
        .into();
    out.ok();
    let out: Out = sb
        .cmd()
        .env("PERFSLEUTH_STORE_PROJECT", "elsewhere")
        .args(["runs", "--store", &url])
        .output()
        .unwrap()
        .into();
    assert!(
        out.stdout.contains("No runs stored")
            && out.stdout.contains("app (1 runs)")
            && out.stdout.contains("PERFSLEUTH_STORE_PROJECT"),
        "{out:?}"
    );
    let out: Out = sb
        .cmd()
        .env("PERFSLEUTH_STORE_PROJECT", "team/app")
        .args(["runs", "--store", &url])
        .output()
        .unwrap()
        .into();
    out.usage_error("not a project name");
}

#[test]
fn store_from_the_environment_variable() {
    let sb = Sandbox::new();
    let out: Out = sb
        .cmd()
        .env("PERFSLEUTH_STORE", "sqlite:env.db")
        .args(["run", "--warmup", "0", "--runs", "2", "true"])
        .output()
        .unwrap()
        .into();
    out.ok();
    assert!(sb.path("env.db").is_file());
    let out: Out = sb
        .cmd()
        .env("PERFSLEUTH_STORE", "env.db")
        .args(["runs", "--json"])
        .output()
        .unwrap()
        .into();
    let doc = parse_json(&out.ok().stdout);
    assert_eq!(doc["runs"].as_array().unwrap().len(), 1);
    // --store wins over the variable.
    let out: Out = sb
        .cmd()
        .env("PERFSLEUTH_STORE", "env.db")
        .args([
            "run", "--store", "flag.db", "--warmup", "0", "--runs", "2", "true",
        ])
        .output()
        .unwrap()
        .into();
    out.ok();
    assert!(sb.path("flag.db").is_file());
    assert_eq!(
        parse_json(&sb.run(["runs", "--json", "--store", "env.db"]).ok().stdout)["runs"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn no_store_leaves_no_database_anywhere() {
    let sb = Sandbox::new();
    let out = sb
        .run(["run", "--no-store", "--warmup", "0", "--runs", "2", "true"])
        .ok();
    assert!(out.stdout.contains("Benchmark 1: true"), "{out:?}");
    assert!(!out.stderr.contains("Stored as"), "{out:?}");
    assert!(
        sb.files_named(".db").is_empty(),
        "{:?}",
        sb.files_named(".db")
    );
    assert!(!sb.path("xdg").exists() && !sb.path(".perfsleuth").exists());
}

#[test]
fn no_store_conflicts_with_store() {
    let sb = Sandbox::new();
    sb.run(["run", "--no-store", "--store", "x.db", "true"])
        .clap_error("--no-store");
    assert!(!sb.path("x.db").exists());
}

#[test]
fn no_store_works_with_the_environment_variable_set() {
    let sb = Sandbox::new();
    let out: Out = sb
        .cmd()
        .env("PERFSLEUTH_STORE", "sqlite:env.db")
        .args(["run", "--no-store", "--warmup", "0", "--runs", "2", "true"])
        .output()
        .unwrap()
        .into();
    out.ok();
    assert!(!sb.path("env.db").exists());
}

// ---------------------------------------------------------------- default location

#[test]
fn default_store_inside_a_git_repository() {
    let sb = Sandbox::new();
    let root = sb.root();
    git(root, &["init", "-q"]);
    // The sandbox's HOME lives inside this repository; perfsleuth's cache
    // there (ld.so diagnostics) is not the store under test.
    std::fs::write(root.join(".git/info/exclude"), "home/\n").unwrap();
    std::fs::write(root.join("tracked.txt"), "v1\n").unwrap();
    git(root, &["add", "tracked.txt"]);
    git(root, &["commit", "-q", "-m", "first"]);
    let head = git(root, &["rev-parse", "HEAD"]);
    let branch = git(root, &["symbolic-ref", "--short", "HEAD"]);

    let out = sb.run(["run", "--warmup", "0", "--runs", "2", "true"]).ok();
    let db = root.join(".perfsleuth/results.db");
    assert!(db.is_file(), "{out:?}");
    assert!(out.stderr.contains(".perfsleuth/results.db"), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(root.join(".perfsleuth/.gitignore")).unwrap(),
        "*\n"
    );
    assert_eq!(
        git(root, &["status", "--porcelain", "--untracked-files=all"]),
        "",
        "the store must not show up in git status"
    );
    assert!(!sb.path("xdg").exists(), "nothing under XDG_DATA_HOME");

    let doc = parse_json(&sb.run(["show", "--json"]).ok().stdout);
    assert_eq!(doc["run"]["git"]["commit"], head.as_str());
    assert_eq!(doc["run"]["git"]["branch"], branch.as_str());
    assert_eq!(doc["run"]["git"]["dirty"], false);

    // A tracked change makes the next run dirty; runs from a subdirectory
    // land in the same top-level store.
    std::fs::write(root.join("tracked.txt"), "v2\n").unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    let out: Out = sb
        .cmd()
        .current_dir(root.join("sub"))
        .args(["run", "--warmup", "0", "--runs", "2", "true"])
        .output()
        .unwrap()
        .into();
    out.ok();
    assert!(!root.join("sub/.perfsleuth").exists());
    let runs = parse_json(&sb.run(["runs", "--json"]).ok().stdout);
    let runs = runs["runs"].as_array().unwrap().clone();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["git"]["dirty"], true);
    assert_eq!(runs[0]["git"]["commit"], head.as_str());
    let table = sb.run(["runs"]).ok().stdout;
    assert!(table.contains(&format!("{}+", &head[..12])), "{table}");
}

#[test]
fn git_repository_without_commits_records_no_git_info() {
    let sb = Sandbox::new();
    git(sb.root(), &["init", "-q"]);
    sb.run(["run", "--warmup", "0", "--runs", "2", "true"]).ok();
    assert!(sb.path(".perfsleuth/results.db").is_file());
    let doc = parse_json(&sb.run(["show", "--json"]).ok().stdout);
    assert_eq!(doc["run"]["git"], serde_json::Value::Null);
}

#[test]
fn default_store_outside_git_uses_xdg_data_home_then_home() {
    let sb = Sandbox::new();
    assert!(
        !sb.root().ancestors().any(|d| d.join(".git").exists()),
        "the temp dir must not be inside a git repository for this test"
    );
    sb.run(["run", "--warmup", "0", "--runs", "2", "true"]).ok();
    assert!(sb.path("xdg/perfsleuth/results.db").is_file());
    assert!(!sb.path(".perfsleuth").exists());

    let out: Out = sb
        .cmd()
        .env_remove("XDG_DATA_HOME")
        .args(["run", "--warmup", "0", "--runs", "2", "true"])
        .output()
        .unwrap()
        .into();
    out.ok();
    assert!(sb.path("home/.local/share/perfsleuth/results.db").is_file());

    // A relative XDG_DATA_HOME is invalid per the spec and ignored.
    let out: Out = sb
        .cmd()
        .env("XDG_DATA_HOME", "relative")
        .args(["runs", "--json"])
        .output()
        .unwrap()
        .into();
    let doc = parse_json(&out.ok().stdout);
    assert_eq!(doc["runs"].as_array().unwrap().len(), 1, "read from HOME");
    assert!(!sb.path("relative").exists());
}

// ---------------------------------------------------------------- runs

#[test]
fn runs_lists_ids_and_statuses_newest_first() {
    let sb = Sandbox::new();
    sb.bench(["--warmup", "0", "--runs", "2", "-n", "good", "true"])
        .ok();
    sb.bench(["--warmup", "0", "--runs", "2", "-n", "bad", "false"])
        .usage_error("exited with code 1");
    sb.bench(["--warmup", "0", "--runs", "3", "true", "echo x"])
        .ok();

    let out = sb.run(["runs", "--store", &sb.store()]).ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{out:?}");
    for col in ["ID", "STATUS", "SAMPLES", "BENCHMARKS"] {
        assert!(lines[0].contains(col), "{out:?}");
    }
    let row = |i: usize| lines[i].split_whitespace().collect::<Vec<_>>();
    assert_eq!(row(1)[0], "3");
    assert_eq!(row(2)[0], "2");
    assert_eq!(row(3)[0], "1");
    assert!(
        row(1).contains(&"complete") && row(1).contains(&"6"),
        "{out:?}"
    );
    assert!(row(2).contains(&"failed"), "{out:?}");
    assert!(lines[2].contains("bad"), "{out:?}");
    assert!(lines[1].contains("(+1 more)"), "{out:?}");
    assert!(row(3).contains(&"complete"), "{out:?}");
}

#[test]
fn runs_json_and_limit() {
    let sb = Sandbox::new();
    sb.bench(["--warmup", "0", "--runs", "2", "true"]).ok();
    sb.bench(["--warmup", "0", "--runs", "3", "-n", "second", "true"])
        .ok();
    let runs = sb.runs_json();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["id"], 2);
    assert_eq!(runs[0]["samples"], 3);
    assert_eq!(runs[0]["status"], "complete");
    assert_eq!(runs[0]["benchmarks"], serde_json::json!(["second"]));
    assert!(runs[0]["ended_at"].is_string());
    assert_eq!(runs[1]["id"], 1);
    assert_eq!(runs[1]["samples"], 2);

    let out = sb
        .run(["runs", "--json", "--limit", "1", "--store", &sb.store()])
        .ok();
    let doc = parse_json(&out.stdout);
    let limited = doc["runs"].as_array().unwrap();
    assert_eq!(limited.len(), 1);
    assert_eq!(limited[0]["id"], 2);

    let out = sb
        .run(["runs", "--limit", "1", "--store", &sb.store()])
        .ok();
    assert_eq!(out.stdout.lines().count(), 2, "header + 1 row: {out:?}");
    sb.run(["runs", "--limit", "x", "--store", &sb.store()])
        .clap_error("--limit");
}

#[test]
fn runs_on_a_missing_store_is_an_error_with_a_hint() {
    let sb = Sandbox::new();
    let out = sb.run(["runs", "--store", &sb.store()]);
    assert_eq!(out.code, 2, "{out:?}");
    crate::common::assert_no_panic(&out);
    assert!(out.stderr.starts_with("error: "), "{out:?}");
    assert!(out.stderr.contains("no results stored yet"), "{out:?}");
    assert!(out.stderr.contains("perfsleuth run"), "hint: {out:?}");
    assert!(!sb.db().exists(), "reading must not create the store");
    let out = sb.run(["show", "--store", &sb.store()]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(!sb.db().exists());
}

// ---------------------------------------------------------------- show

#[test]
fn show_defaults_to_latest_and_accepts_ids_and_offsets() {
    let sb = Sandbox::new();
    sb.bench(["--warmup", "0", "--runs", "2", "-n", "one", "true"])
        .ok();
    sb.bench(["--warmup", "0", "--runs", "2", "-n", "two", "true"])
        .ok();
    sb.bench(["--warmup", "0", "--runs", "2", "-n", "three", "true"])
        .ok();
    let show = |spec: Option<&str>| {
        let mut args = vec!["show", "--store"];
        let store = sb.store();
        args.push(&store);
        args.extend(spec);
        sb.run(args).ok().stdout
    };
    assert!(show(None).contains("Benchmark 1: three"));
    assert!(show(Some("latest")).contains("Benchmark 1: three"));
    assert!(show(Some("1")).contains("Benchmark 1: one"));
    assert!(show(Some("latest~1")).contains("Benchmark 1: two"));
    assert!(show(Some("latest~2")).contains("Benchmark 1: one"));
    assert!(show(Some("latest~")).contains("Benchmark 1: two"));
    assert_eq!(sb.show_json("2")["run"]["id"], 2);
}

#[test]
fn show_prints_the_same_summary_as_run() {
    let sb = Sandbox::new();
    let ran = sb
        .bench(["--warmup", "0", "--runs", "3", "true", "echo x"])
        .ok();
    let shown = sb.run(["show", "--store", &sb.store()]).ok();
    assert_eq!(ran.stdout.trim_end(), shown.stdout.trim_end());
}

#[test]
fn show_json_round_trips_the_run() {
    let sb = Sandbox::new();
    let out = sb
        .bench([
            "--warmup",
            "0",
            "--runs",
            "3",
            "--export-json",
            "-",
            "-L",
            "v",
            "a,b",
            "echo {v}",
        ])
        .ok();
    let exported = parse_json(&out.stdout);
    let shown = sb.show_json("latest");
    assert_eq!(shown["schema"], "perfsleuth/run");
    assert_eq!(shown["run"]["benchmarks"], exported["run"]["benchmarks"]);
    assert_eq!(shown["run"]["options"], exported["run"]["options"]);
    assert_eq!(shown["run"]["status"], "complete");
    assert_eq!(samples(&shown, 1).len(), 3);
    assert_eq!(shown["run"]["benchmarks"][1]["parameters"]["v"], "b");
    // The summaries agree too, since they are computed from the same samples.
    assert_eq!(shown["summary"], exported["summary"]);
}

#[test]
fn show_reference_changes_the_comparison() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup", "0", "--runs", "2", "-n", "first", "-n", "second", "true", "echo x",
    ])
    .ok();
    let out = sb
        .run(["show", "--reference", "second", "--store", &sb.store()])
        .ok();
    assert!(out.stdout.contains("Comparison with `second`"), "{out:?}");
    let out = sb
        .run(["show", "--json", "--reference", "2", "--store", &sb.store()])
        .ok();
    assert_eq!(parse_json(&out.stdout)["summary"]["reference"], 1);
    sb.run(["show", "--reference", "9", "--store", &sb.store()])
        .usage_error("out of range");
}

#[test]
fn show_unknown_runs_are_errors() {
    let sb = Sandbox::new();
    sb.bench(["--warmup", "0", "--runs", "2", "true"]).ok();
    for spec in ["999", "latest~5", "abc", "latest~x", "-1"] {
        let out = sb.run(["show", "--store", &sb.store(), "--", spec]);
        assert_eq!(out.code, 2, "{spec}: {out:?}");
        crate::common::assert_no_panic(&out);
        assert!(out.stderr.starts_with("error: "), "{spec}: {out:?}");
        assert!(out.stderr.contains("hint:"), "{spec}: {out:?}");
        assert!(out.stdout.is_empty(), "{spec}: {out:?}");
    }
}

// ---------------------------------------------------------------- damaged and foreign files

#[test]
fn text_file_at_the_store_path_is_refused_and_untouched() {
    let sb = Sandbox::new();
    let original = b"my precious notes\nnot a database\n".repeat(50);
    sb.write("notes.db", &original);
    let out = quick(&sb, "notes.db", "2", &["sh -c 'echo ran >> marker'"])
        .usage_error("not a perfsleuth database");
    assert!(out.stderr.contains("notes.db"), "{out:?}");
    assert_eq!(std::fs::read(sb.path("notes.db")).unwrap(), original);
    assert!(!sb.path("notes.db-wal").exists() && !sb.path("notes.db-shm").exists());
    assert!(!sb.path("marker").exists(), "the command must not run");
    sb.run(["runs", "--store", "notes.db"])
        .usage_error("not a perfsleuth database");
    assert_eq!(std::fs::read(sb.path("notes.db")).unwrap(), original);
}

#[test]
fn foreign_or_newer_sqlite_headers_are_refused_and_untouched() {
    let sb = Sandbox::new();
    quick(&sb, "r.db", "2", &["true"]).ok();
    let good = std::fs::read(sb.db()).unwrap();
    assert_eq!(&good[..16], b"SQLite format 3\0");
    assert!(
        !sb.path("r.db-wal").exists(),
        "the WAL should be checkpointed on exit"
    );

    // application_id (offset 68) of another program.
    let mut foreign = good.clone();
    foreign[68..72].copy_from_slice(&0x1234_5678u32.to_be_bytes());
    sb.write("foreign.db", &foreign);
    quick(&sb, "foreign.db", "2", &["true"]).usage_error("not a perfsleuth database");
    assert_eq!(std::fs::read(sb.path("foreign.db")).unwrap(), foreign);

    // user_version (offset 60) from the future.
    let mut newer = good.clone();
    newer[60..64].copy_from_slice(&999u32.to_be_bytes());
    sb.write("newer.db", &newer);
    quick(&sb, "newer.db", "2", &["true"]).usage_error("newer");
    sb.run(["runs", "--store", "newer.db"]).usage_error("newer");
    assert_eq!(std::fs::read(sb.path("newer.db")).unwrap(), newer);
}

#[test]
fn corrupted_store_is_refused_without_panicking() {
    let sb = Sandbox::new();
    quick(&sb, "r.db", "3", &["true"]).ok();
    let mut bytes = std::fs::read(sb.db()).unwrap();
    assert!(bytes.len() >= 8192, "store is {} bytes", bytes.len());
    for (i, b) in bytes[4096..8192].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(167) ^ 0x5a;
    }
    sb.write("r.db", &bytes);

    for args in [
        vec!["run", "--warmup", "0", "--runs", "2", "true"],
        vec!["runs"],
        vec!["runs", "--json"],
        vec!["show"],
        vec!["show", "--json", "1"],
    ] {
        let mut all = args.clone();
        let store = sb.store();
        all.extend(["--store", &store]);
        let out = sb.run(&all);
        crate::common::assert_no_panic(&out);
        assert!(
            out.code == 0 || out.code == 2,
            "{args:?}: unexpected exit: {out:?}"
        );
        if out.code == 0 {
            // Still working is allowed; later refusals compare with this state.
            bytes = std::fs::read(sb.db()).unwrap();
        } else {
            assert!(out.stderr.starts_with("error: "), "{args:?}: {out:?}");
            assert!(out.stderr.contains("hint"), "{args:?}: {out:?}");
            let now = std::fs::read(sb.db()).unwrap();
            assert_eq!(
                now.len(),
                bytes.len(),
                "{args:?}: refused but the file grew"
            );
            assert!(now == bytes, "{args:?}: refused but the file was rewritten");
        }
    }
}

#[test]
fn store_path_whose_parent_is_a_file_is_refused() {
    let sb = Sandbox::new();
    sb.write("plain", "I am a file\n");
    let out = quick(
        &sb,
        "sqlite:plain/r.db",
        "2",
        &["sh -c 'echo ran >> marker'"],
    );
    assert_eq!(out.code, 2, "{out:?}");
    crate::common::assert_no_panic(&out);
    assert!(out.stderr.starts_with("error: "), "{out:?}");
    assert!(
        out.stderr.contains("plain/r.db") && out.stderr.contains("hint"),
        "{out:?}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.path("plain")).unwrap(),
        "I am a file\n"
    );
    assert!(!sb.path("marker").exists(), "the command must not run");
}

#[test]
fn store_path_that_is_a_directory_is_refused() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path("dir.db")).unwrap();
    quick(&sb, "dir.db", "2", &["true"]).usage_error("not a perfsleuth database");
    assert_eq!(std::fs::read_dir(sb.path("dir.db")).unwrap().count(), 0);
}

#[test]
fn empty_file_becomes_a_store() {
    let sb = Sandbox::new();
    sb.write("r.db", "");
    quick(&sb, "r.db", "2", &["true"]).ok();
    assert_eq!(sb.runs_json().len(), 1);
}

// ---------------------------------------------------------------- concurrency

#[test]
fn two_processes_share_one_store() {
    let sb = Sandbox::new();
    let spawn = || {
        sb.std_cmd()
            .args([
                "run",
                "--store",
                &sb.store(),
                "--warmup",
                "0",
                "--runs",
                "20",
                "true",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn perfsleuth")
    };
    let a = spawn();
    let b = spawn();
    let a: Out = a.wait_with_output().unwrap().into();
    let b: Out = b.wait_with_output().unwrap().into();
    a.ok();
    b.ok();
    let runs = sb.runs_json();
    assert_eq!(runs.len(), 2, "{runs:?}");
    let mut ids: Vec<i64> = runs.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, [1, 2]);
    for r in &runs {
        assert_eq!(r["status"], "complete", "{r}");
        assert_eq!(r["samples"], 20, "{r}");
    }
    for id in ["1", "2"] {
        let doc = sb.show_json(id);
        let it: Vec<u64> = samples(&doc, 0)
            .iter()
            .map(|s| s["iteration"].as_u64().unwrap())
            .collect();
        assert_eq!(it, (0..20).collect::<Vec<u64>>());
    }
}

#[test]
fn runs_limit_zero_does_not_claim_the_store_is_empty() {
    let sb = Sandbox::new();
    sb.bench(["--warmup", "0", "--runs", "2", "true"]).ok();
    let out = sb.run(["runs", "--limit", "0", "--store", &sb.store()]);
    crate::common::assert_no_panic(&out);
    assert!(
        out.code == 2 || !out.stdout.contains("No runs stored"),
        "{out:?}"
    );
}

#[test]
fn runs_filters_mode_column_and_long_names() {
    let sb = Sandbox::new();
    let long = format!("a-very-long-benchmark-name-{}", "x".repeat(40));
    sb.bench(["--warmup", "0", "--runs", "2", "-n", &long, "true"])
        .ok();
    // The next runs on branch `feature` of a repository around the sandbox.
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .current_dir(sb.path(""))
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q", "-b", "feature"]);
    git(&["commit", "-q", "--allow-empty", "-m", "x"]);
    sb.bench(["--warmup", "0", "--runs", "2", "-n", "parse", "true"])
        .ok();
    sb.bench(["--warmup", "0", "--runs", "2", "-n", "render", "true"])
        .ok();
    let store = sb.store();
    let ids = |args: &[&str]| -> Vec<i64> {
        let mut all = vec!["runs", "--json", "--store", &store];
        all.extend_from_slice(args);
        let doc = crate::common::parse_json(&sb.run(all).ok().stdout);
        doc["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(ids(&[]), [3, 2, 1]);
    assert_eq!(ids(&["--bench", "pars"]), [2]);
    assert_eq!(ids(&["--branch", "feature"]), [3, 2]);
    // The limit counts the runs that pass the filters.
    assert_eq!(ids(&["--branch", "feature", "--limit", "1"]), [3]);
    assert_eq!(ids(&["--mode", "walltime"]), [3, 2, 1]);
    assert!(ids(&["--mode", "probe"]).is_empty());
    assert_eq!(ids(&["--since", "1h"]), [3, 2, 1]);
    assert!(ids(&["--since", "2999-01-01"]).is_empty());
    sb.run(["runs", "--store", &sb.store(), "--since", "yesterday"])
        .usage_error("--since `yesterday`");
    for bad in [
        "2026",
        "9999-99-99",
        "2026-02-30",
        "2027-04-31",
        "2020-01-01 junk",
        "2026-11-30T19:00:00-05:00",
    ] {
        sb.run(["runs", "--store", &sb.store(), "--since", bad])
            .usage_error(&format!("--since `{bad}`"));
    }
    assert_eq!(ids(&["--since", "2020-01-01T00:00:00Z"]), [3, 2, 1]);
    // Nothing matches: said as such, not as an empty store.
    let out = sb
        .run(["runs", "--store", &sb.store(), "--bench", "nomatch"])
        .ok();
    assert!(out.stdout.contains("matches the filters"), "{out:?}");
    // The table has a mode column and cuts long names.
    let out = sb.run(["runs", "--store", &sb.store()]).ok();
    assert!(
        out.stdout.lines().next().unwrap().contains("MODE"),
        "{out:?}"
    );
    assert!(out.stdout.contains("walltime"), "{out:?}");
    assert!(
        !out.stdout.contains(&long) && out.stdout.contains("a-very-long-benchmark-name-x"),
        "{out:?}"
    );
    assert!(out.stdout.contains('…'), "{out:?}");
}

#[test]
fn show_says_which_run_it_shows() {
    // `show latest` names the run it resolved to, when it started, where in
    // git and how it was measured, before the summary.
    let sb = Sandbox::new();
    sb.bench(["--warmup", "0", "--runs", "3", "true"]).ok();
    let store = sb.store();
    let out = sb.run(["show", "latest", "--store", &store]).ok();
    let first = out.stderr.lines().next().unwrap_or_default();
    assert!(first.starts_with("Run 1 · "), "{out:?}");
    assert!(first.ends_with(" · walltime · complete"), "{out:?}");
    // The started time, to the second.
    assert!(
        first.split(" · ").nth(1).is_some_and(|t| t.len() == 19),
        "{first}"
    );
    assert!(out.stdout.contains("Benchmark 1: true"), "{out:?}");
}

/// Issue 53: the database restarts while `runs` lists page by page. The
/// listing connects again and goes on after the last run it printed —
/// every run once — and when the database stays away it ends with one
/// line that says the connection was lost (it said "cannot connect", with
/// a hint to check the URL).
#[test]
fn a_database_restart_during_a_listing_neither_loses_nor_repeats_a_run() {
    use std::io::Read;
    let Some(url) = perfsleuth_testkit::fresh_postgres("cli_lost") else {
        return;
    };
    let sb = Sandbox::new();
    quick(&sb, &url, "2", &["true"]).ok();
    // More runs than two pages of the listing (500 a page), copies of the one.
    psql(
        &url,
        "INSERT INTO runs (started_at, ended_at, status, tool_version, git_commit, git_branch, \
         git_dirty, mode, options, environment_id, context, uuid, project) \
         SELECT started_at, ended_at, status, tool_version, git_commit, git_branch, git_dirty, \
         mode, options, environment_id, context, gen_random_uuid()::text, project \
         FROM runs, generate_series(1, 1199)",
    );
    let admin = std::env::var("PERFSLEUTH_TEST_POSTGRES").unwrap();
    let db = database_of(&url);
    let listing = format!("datname = '{db}' AND application_name = 'perfsleuth'");
    let mut terminate = |allow: bool| {
        if !allow {
            psql(
                &admin,
                &format!("ALTER DATABASE \"{db}\" ALLOW_CONNECTIONS false"),
            );
        }
        psql(
            &admin,
            &format!(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE {listing}"
            ),
        );
    };
    // Each time: the listing's first page (some 350 KB of JSON) fills the
    // pipe and the listing waits to write the rest, its connection idle;
    // the connection is then cut.
    let list = |terminate: &mut dyn FnMut(bool), allow: bool| {
        let mut child = sb
            .std_cmd()
            .args(["runs", "--json", "--store", &url])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Its first byte: the first page is read and being written.
        let mut pipe = child.stdout.take().unwrap();
        let mut first = [0u8; 1];
        pipe.read_exact(&mut first).unwrap();
        let mut waited = 0;
        loop {
            let idle = psql(
                &admin,
                &format!(
                    "SELECT count(*) FROM pg_stat_activity WHERE {listing} AND state = 'idle'"
                ),
            );
            if idle == "1" || waited > 300 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
            waited += 1;
        }
        terminate(allow);
        let mut stdout = String::from(char::from(first[0]));
        pipe.read_to_string(&mut stdout).unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.code(),
            stdout,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = list(&mut terminate, true);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("note: lost the connection to") && stderr.contains("connected again"),
        "{stderr}"
    );
    let doc = parse_json(&stdout);
    let ids: Vec<i64> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    let mut once = ids.clone();
    once.sort_unstable_by(|a, b| b.cmp(a));
    once.dedup();
    assert_eq!(ids.len(), 1200, "{stderr}");
    assert_eq!(ids, once, "every run once, newest first");

    // The database stays away: one line, and what was printed before it.
    let (code, stdout, stderr) = list(&mut terminate, false);
    psql(
        &admin,
        &format!("ALTER DATABASE \"{db}\" ALLOW_CONNECTIONS true"),
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error: lost the connection to postgres://"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: the database server restarted"),
        "{stderr}"
    );
    assert!(!stderr.contains("cannot connect"), "{stderr}");
    assert!(
        stdout.contains("\"id\": 1200"),
        "the first page was printed"
    );
}
