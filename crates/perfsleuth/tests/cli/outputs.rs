//! Outputs that never replace what is not theirs (issue 37): `report -o`,
//! the exports and `--plot` write through one writer that renames a
//! temporary file only over a regular file, writes into devices and FIFOs,
//! keeps links, permissions and hard links, and refuses the files of
//! another live store; and the inputs and store names a hostile user tried.
//! Each test here failed before its fix.

use crate::common::{Out, Sandbox};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

/// One stored run in the sandbox store.
fn one_run(sb: &Sandbox) {
    sb.bench(["--runs", "2", "--no-history", "true"]).ok();
}

/// `perfsleuth report latest -o PATH` on the sandbox store.
fn report_to(sb: &Sandbox, path: &Path) -> Out {
    sb.cmd()
        .args(["report", "latest", "--store", &sb.store(), "-o"])
        .arg(path)
        .timeout(Duration::from_secs(60))
        .output()
        .expect("start perfsleuth")
        .into()
}

/// A FIFO made with `mkfifo` in the sandbox.
fn fifo(sb: &Sandbox, name: &str) -> std::path::PathBuf {
    let path = sb.path(name);
    let made = std::process::Command::new("mkfifo").arg(&path).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", path.display());
    path
}

/// A character device node in the sandbox (root only; `None` elsewhere).
fn device(sb: &Sandbox, name: &str, minor: u32) -> Option<std::path::PathBuf> {
    let path = sb.path(name);
    let made = std::process::Command::new("mknod")
        .arg(&path)
        .args(["c", "1", &minor.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!("mknod needs root: the device cases are not run here");
    }
    made.then_some(path)
}

#[test]
fn a_report_is_written_into_devices_and_fifos_never_renamed_over_them() {
    let sb = Sandbox::new();
    one_run(&sb);
    if let (Some(null), Some(full)) = (device(&sb, "null", 3), device(&sb, "full", 7)) {
        report_to(&sb, &null).ok();
        assert!(
            std::fs::metadata(&null)
                .unwrap()
                .file_type()
                .is_char_device()
        );
        let out = report_to(&sb, &full);
        assert_eq!(out.code, 2, "a full device is a failure: {out:?}");
        assert!(out.stderr.contains("No space left"), "{out:?}");
        assert!(
            std::fs::metadata(&full)
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }
    // A FIFO with a reader gets the report; it stays a FIFO.
    let fifo = fifo(&sb, "pipe");
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    std::thread::sleep(Duration::from_millis(200));
    report_to(&sb, &fifo).ok();
    let html = reader.join().unwrap();
    assert!(html.contains("<html"), "{} bytes read", html.len());
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    // Without a reader: an error at once, not a wait.
    let out = report_to(&sb, &fifo);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("nobody reads"), "{out:?}");
}

#[test]
fn a_report_keeps_the_links_permissions_and_hard_links_of_what_it_replaces() {
    let sb = Sandbox::new();
    one_run(&sb);
    // A private file stays private.
    let private = sb.write("private.html", "old");
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
    report_to(&sb, &private).ok();
    let meta = std::fs::metadata(&private).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o600);
    assert!(std::fs::read_to_string(&private).unwrap().contains("<html"));
    // A hard link keeps seeing the file.
    let linked = sb.write("linked.html", "old");
    std::fs::hard_link(&linked, sb.path("other-name.html")).unwrap();
    report_to(&sb, &linked).ok();
    assert_eq!(std::fs::metadata(&linked).unwrap().nlink(), 2);
    assert!(
        std::fs::read_to_string(sb.path("other-name.html"))
            .unwrap()
            .contains("<html")
    );
    // A symbolic link stays a link; the file it names gets the report.
    let target = sb.write("target.html", "old");
    std::os::unix::fs::symlink(&target, sb.path("link.html")).unwrap();
    report_to(&sb, &sb.path("link.html")).ok();
    assert!(
        std::fs::symlink_metadata(sb.path("link.html"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(std::fs::read_to_string(&target).unwrap().contains("<html"));
    // A link to nothing is refused, and creates nothing.
    std::os::unix::fs::symlink(sb.path("nowhere/x.html"), sb.path("dangling.html")).unwrap();
    let out = report_to(&sb, &sb.path("dangling.html"));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("link to nothing"), "{out:?}");
    // No temporary file is left behind by any of them.
    let left: Vec<String> = std::fs::read_dir(sb.root())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn the_files_of_another_live_store_are_refused_as_outputs() {
    let sb = Sandbox::new();
    one_run(&sb);
    // Another store, held open (in WAL mode) by this process while the CLI runs.
    let other = sb.path("walv.db");
    let url = format!("sqlite:{}", other.display());
    let live = perfsleuth_store::StoreUrl::parse(&url)
        .unwrap()
        .open()
        .unwrap();
    live.list_runs(None).unwrap();
    let shm = sb.path("walv.db-shm");
    assert!(shm.exists(), "the live store has its shared memory");
    let before = std::fs::read(&shm).unwrap();
    let out = report_to(&sb, &shm);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("shared-memory index"), "{out:?}");
    let out = sb.bench([
        "--runs",
        "2",
        "--no-history",
        "--export-csv",
        shm.to_str().unwrap(),
        "true",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(std::fs::read(&shm).unwrap(), before);
    drop(live);
}

#[test]
fn two_outputs_that_are_one_file_are_refused_whatever_their_spelling() {
    let sb = Sandbox::new();
    let out = sb.bench([
        "--runs",
        "2",
        "--export-json",
        "same.out",
        "--export-csv",
        "./same.out",
        "true",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("both write to"), "{out:?}");
    std::fs::create_dir(sb.path("d")).unwrap();
    sb.write("exists.out", "");
    let out = sb.bench([
        "--runs",
        "2",
        "--export-json",
        "exists.out",
        "--export-markdown",
        "d/../exists.out",
        "true",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
}

#[test]
fn a_store_in_memory_is_refused_since_it_keeps_nothing() {
    let sb = Sandbox::new();
    for store in ["sqlite::memory:", ":memory:"] {
        let out = sb.run(["run", "--runs", "2", "--store", store, "true"]);
        assert_eq!(out.code, 2, "{store}: {out:?}");
        assert!(out.stderr.contains("keeps nothing"), "{out:?}");
        assert!(!out.stderr.contains("Stored as run"), "{out:?}");
    }
}

#[test]
fn probe_diff_reads_fifos_and_names_devices_and_directories() {
    let sb = Sandbox::new();
    let out = sb
        .run(["probe", "--quick", "--json", "--no-store", "calls"])
        .ok();
    let a = sb.write("a.json", &out.stdout);
    // A FIFO fed by a writer, as `<(cat a.json)` is.
    let fifo = fifo(&sb, "side");
    let writer = {
        let (fifo, text) = (fifo.clone(), out.stdout.clone());
        std::thread::spawn(move || std::fs::write(fifo, text).unwrap())
    };
    let diff = sb.run(["probe", "diff", fifo.to_str().unwrap(), a.to_str().unwrap()]);
    writer.join().unwrap();
    assert_eq!(diff.code, 0, "{diff:?}");
    for (side, says) in [("/dev/zero", "device"), (".", "directory")] {
        let out = sb.run(["probe", "diff", side, a.to_str().unwrap()]);
        assert_eq!(out.code, 2, "{side}: {out:?}");
        assert!(out.stderr.contains(says), "{side}: {out:?}");
        assert!(!out.stderr.contains("no such file"), "{side}: {out:?}");
    }
}

#[test]
fn a_link_planted_where_the_temporary_file_goes_is_not_written_through() {
    let sb = Sandbox::new();
    one_run(&sb);
    // The temporary name was `.NAME.PID.tmp`: links for the next few hundred
    // process ids, each pointing at the store.
    let last: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1000);
    for pid in last + 1..last + 400 {
        let _ = std::os::unix::fs::symlink(sb.db(), sb.path(&format!(".report.html.{pid}.tmp")));
    }
    report_to(&sb, &sb.path("report.html")).ok();
    let head = std::fs::read(sb.db()).unwrap();
    assert!(
        head.starts_with(b"SQLite format 3\0"),
        "the store is intact"
    );
    assert_eq!(sb.runs_json().len(), 1);
    assert!(
        std::fs::read_to_string(sb.path("report.html"))
            .unwrap()
            .contains("<html")
    );
}

#[test]
fn a_store_on_a_read_only_file_system_can_be_read() {
    let sb = Sandbox::new();
    let dir = sb.path("ro");
    std::fs::create_dir(&dir).unwrap();
    let store = format!("sqlite:{}/r.db", dir.display());
    for _ in 0..2 {
        sb.run([
            "run",
            "--runs",
            "2",
            "--no-history",
            "--store",
            &store,
            "true",
        ])
        .ok();
    }
    // The directory bound read-only in a private mount namespace (as root).
    let bin = env!("CARGO_BIN_EXE_perfsleuth");
    let d = dir.display();
    let (read_err, write_err) = (sb.path("read.err"), sb.path("write.err"));
    let script = format!(
        "mount --bind {d} {d} && mount -o remount,ro,bind {d} || exit 77; \
         {{ {bin} runs --store {store} && {bin} show latest --store {store} && \
         {bin} compare latest~1 latest --store {store} && {bin} history --store {store} && \
         {bin} report latest --store {store} -o {out}; }} 2>{re}; echo \"read exit $?\"; \
         {bin} run --runs 2 --store {store} true 2>{we}; echo \"write exit $?\"",
        out = sb.path("report.html").display(),
        re = read_err.display(),
        we = write_err.display(),
    );
    let out: Out = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .current_dir(sb.root())
        .env("NO_COLOR", "1")
        .env("HOME", sb.path("home"))
        .output()
        .expect("unshare")
        .into();
    if out.code == 77 || out.stderr.contains("unshare failed") {
        eprintln!("no private read-only mount here (needs root): {out:?}");
        return;
    }
    let read = std::fs::read_to_string(&read_err).unwrap_or_default();
    assert!(out.stdout.contains("read exit 0"), "{out:?} {read}");
    assert!(out.stdout.contains("true"), "runs listed: {out:?}");
    assert!(!read.contains("error"), "{read}");
    assert!(
        std::fs::read_to_string(sb.path("report.html"))
            .unwrap()
            .contains("<html")
    );
    // Writing is what fails, with exit 2 and one error line.
    let write = std::fs::read_to_string(&write_err).unwrap_or_default();
    assert!(out.stdout.contains("write exit 2"), "{out:?} {write}");
    assert_eq!(write.matches("error:").count(), 1, "{write}");
}
