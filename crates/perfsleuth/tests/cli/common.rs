//! Shared helpers of the CLI integration tests: a temporary sandbox directory
//! that is the working directory of every `perfsleuth` process, with HOME and
//! XDG_DATA_HOME pointed inside it so nothing is ever written elsewhere.

#![allow(dead_code)]

use serde_json::Value;
use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;
use tempfile::TempDir;

/// Path of the binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_perfsleuth");

/// Kills a `perfsleuth` that hangs, so a bug fails the test instead of the suite.
pub const HANG_GUARD: Duration = Duration::from_secs(120);

/// What a finished `perfsleuth` process left behind.
pub struct Out {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
}

impl fmt::Debug for Out {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "exit code {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl From<Output> for Out {
    fn from(o: Output) -> Out {
        Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Out {
    /// Asserts exit code 0 and returns self.
    #[track_caller]
    pub fn ok(self) -> Out {
        assert_eq!(self.code, 0, "expected success, got {self:?}");
        assert_no_panic(&self);
        self
    }

    /// Asserts a perfsleuth usage error (exit 2) in the tool's own format:
    /// a one-line `error:` first line, only indented continuation lines after
    /// it, a hint, and `needle` somewhere in the text.
    #[track_caller]
    pub fn usage_error(self, needle: &str) -> Out {
        assert_eq!(self.code, 2, "expected exit 2, got {self:?}");
        assert_no_panic(&self);
        let mut lines = self.stderr.lines();
        let first = lines.next().unwrap_or_default();
        assert!(
            first.starts_with("error: ") && first.len() > "error: ".len(),
            "first stderr line is not a one-line `error:` message: {self:?}"
        );
        for line in lines {
            assert!(
                line.starts_with("  "),
                "the error should be one line plus indented details/hint, found {line:?} in {self:?}"
            );
        }
        assert!(
            self.stderr.contains("hint:"),
            "the error carries no hint: {self:?}"
        );
        assert!(
            self.stderr.contains(needle),
            "stderr does not mention {needle:?}: {self:?}"
        );
        self
    }

    /// Asserts an argument-parsing error reported by clap (exit 2): the first
    /// line is `error: …` and it points at `--help` or gives a tip.
    #[track_caller]
    pub fn clap_error(self, needle: &str) -> Out {
        assert_eq!(self.code, 2, "expected exit 2, got {self:?}");
        assert_no_panic(&self);
        let first = self.stderr.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("error: "),
            "first stderr line is not `error:`: {self:?}"
        );
        assert!(
            self.stderr
                .lines()
                .nth(1)
                .is_some_and(|l| l.starts_with("  hint: ")),
            "the error's second line is not a hint: {self:?}"
        );
        assert!(
            self.stderr.contains(needle),
            "stderr does not mention {needle:?}: {self:?}"
        );
        self
    }
}

/// No Rust panic message in either stream.
#[track_caller]
pub fn assert_no_panic(out: &Out) {
    assert!(
        !out.stderr.contains("panicked") && !out.stdout.contains("panicked"),
        "perfsleuth panicked: {out:?}"
    );
}

/// A temporary directory that is the cwd of every perfsleuth it starts.
pub struct Sandbox {
    dir: TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::Builder::new()
            .prefix("perfsleuth-cli-")
            .tempdir()
            .expect("create a temp dir");
        std::fs::create_dir(dir.path().join("home")).unwrap();
        Sandbox { dir }
    }

    /// The sandbox directory (absolute).
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// A path inside the sandbox.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The default test store file, `<sandbox>/r.db`.
    pub fn db(&self) -> PathBuf {
        self.path("r.db")
    }

    /// `sqlite:<sandbox>/r.db`.
    pub fn store(&self) -> String {
        format!("sqlite:{}", self.db().display())
    }

    /// A perfsleuth command with the sandbox as cwd and a clean environment.
    pub fn cmd(&self) -> assert_cmd::Command {
        let mut cmd = assert_cmd::Command::from_std(self.std_cmd());
        cmd.timeout(HANG_GUARD);
        cmd
    }

    /// The same setup for a plain `std::process::Command` (for spawned processes).
    pub fn std_cmd(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(BIN);
        self.configure(&mut cmd);
        cmd
    }

    /// `program` (a shell) as a CI job runs it: the sandbox's environment,
    /// with the perfsleuth under test first on PATH.
    pub fn shell(&self, program: &str) -> std::process::Command {
        let mut cmd = std::process::Command::new(program);
        self.configure(&mut cmd);
        let mut paths = vec![Path::new(BIN).parent().unwrap().to_path_buf()];
        paths.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        cmd.env("PATH", std::env::join_paths(paths).unwrap());
        cmd
    }

    fn configure(&self, cmd: &mut std::process::Command) {
        let root = self.dir.path();
        cmd.current_dir(root)
            .env("NO_COLOR", "1")
            .env("HOME", root.join("home"))
            .env("XDG_DATA_HOME", root.join("xdg"))
            .env_remove("PERFSLEUTH_STORE")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            // git must not find a repository above the sandbox.
            .env(
                "GIT_CEILING_DIRECTORIES",
                root.parent().unwrap_or(Path::new("/")),
            );
    }

    /// Runs perfsleuth with these arguments.
    pub fn run<I, S>(&self, args: I) -> Out
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd()
            .args(args)
            .output()
            .expect("start perfsleuth")
            .into()
    }

    /// `perfsleuth run --store sqlite:<sandbox>/r.db ARGS…`.
    pub fn bench<I, S>(&self, args: I) -> Out
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd()
            .arg("run")
            .arg("--store")
            .arg(self.store())
            .args(args)
            .output()
            .expect("start perfsleuth")
            .into()
    }

    /// `perfsleuth show --json RUN` on the sandbox store, parsed.
    #[track_caller]
    pub fn show_json(&self, run: &str) -> Value {
        let out = self
            .run(["show", "--json", "--store", &self.store(), run])
            .ok();
        parse_json(&out.stdout)
    }

    /// `perfsleuth runs --json` on the sandbox store, parsed; the `runs` array.
    #[track_caller]
    pub fn runs_json(&self) -> Vec<Value> {
        let out = self.run(["runs", "--json", "--store", &self.store()]).ok();
        let doc = parse_json(&out.stdout);
        assert_eq!(doc["schema"], "perfsleuth/runs", "{doc}");
        doc["runs"].as_array().expect("runs array").clone()
    }

    /// Lines of a text file in the sandbox (empty when it does not exist).
    pub fn lines(&self, rel: &str) -> Vec<String> {
        std::fs::read_to_string(self.path(rel))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Writes a file in the sandbox.
    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(rel);
        std::fs::write(&path, contents).unwrap();
        path
    }

    /// Builds `src` as the C program `name` in the sandbox with `gcc -O2`
    /// (and `extra` flags); returns its path. The caller checks for gcc.
    #[track_caller]
    pub fn gcc(&self, name: &str, src: &str, extra: &[&str]) -> PathBuf {
        let file = self.write(&format!("{name}.c"), src);
        let prog = self.path(name);
        let ok = std::process::Command::new("gcc")
            .args(["-O2", "-o"])
            .arg(&prog)
            .arg(&file)
            .args(extra)
            .status()
            .expect("gcc runs")
            .success();
        assert!(ok, "gcc builds {name}.c");
        prog
    }

    /// Every file below the sandbox whose name contains `needle`.
    pub fn files_named(&self, needle: &str) -> Vec<PathBuf> {
        fn walk(dir: &Path, needle: &str, found: &mut Vec<PathBuf>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, needle, found);
                } else if e.file_name().to_string_lossy().contains(needle) {
                    found.push(p);
                }
            }
        }
        let mut found = Vec::new();
        walk(self.root(), needle, &mut found);
        found
    }
}

/// Parses JSON or fails with the text.
#[track_caller]
pub fn parse_json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("invalid JSON ({e}):\n{text}"))
}

/// The samples of benchmark `i` in a `show --json` / `--export-json` document.
#[track_caller]
pub fn samples(doc: &Value, i: usize) -> Vec<Value> {
    doc["run"]["benchmarks"][i]["samples"]
        .as_array()
        .unwrap_or_else(|| panic!("no samples for benchmark {i} in {doc}"))
        .clone()
}

/// Benchmark names of a `show --json` / `--export-json` document.
pub fn bench_names(doc: &Value) -> Vec<String> {
    doc["run"]["benchmarks"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|b| b["name"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether any live process has `needle` in its command line (via /proc).
pub fn process_running_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmdline.contains(needle) {
            // A zombie has an empty cmdline, so anything here is really alive.
            found.push(format!("{}: {cmdline}", name.to_string_lossy()));
        }
    }
    found
}

/// Puts a link to the system `sleep` at `<sandbox>/bin/sleep`, so the test can
/// later find (or miss) exactly its own sleeps among all processes.
pub fn own_sleep(sb: &Sandbox) -> PathBuf {
    let bin = sb.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let target = ["/bin/sleep", "/usr/bin/sleep"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("a sleep binary");
    let link = bin.join("sleep");
    std::os::unix::fs::symlink(target, &link).unwrap();
    link
}

/// Headless Chromium on `url` (a `file://` page or a served one) with
/// `args`: the standard output (`--dump-dom`'s DOM) and its log.
pub fn chromium(url: &str, args: &[&str]) -> (String, String) {
    let out = std::process::Command::new("chromium")
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(args)
        .arg(url)
        .output()
        .expect("chromium starts");
    assert!(out.status.success(), "chromium failed: {out:?}");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A JUnit file read back by `junitparser` (the Python reader CI tools
/// use): per test case its suite, name, classname, time, result
/// (`passed`, `failure`, `skipped`), the result's type and message, and
/// its system-out; `None` (the skip reported) when junitparser is absent.
pub fn junit_cases(path: &Path) -> Option<Vec<Value>> {
    const READ: &str = r#"
import json, sys
from junitparser import JUnitXml, Failure, Skipped, Error
xml = JUnitXml.fromfile(sys.argv[1])
suites = [xml] if xml._tag == "testsuite" else list(xml)
out = []
for suite in suites:
    for case in suite:
        result, kind, message = "passed", None, None
        for r in case.result:
            result = {Failure: "failure", Skipped: "skipped", Error: "error"}[type(r)]
            kind, message = r.type, r.message
        out.append({"suite": suite.name, "name": case.name, "classname": case.classname,
                    "time": case.time, "result": result, "type": kind, "message": message,
                    "out": case.system_out or "",
                    "totals": [suite.tests, suite.failures, suite.skipped]})
print(json.dumps(out))
"#;
    let probe = std::process::Command::new("python3")
        .args(["-c", "import junitparser"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        perfsleuth_testkit::skip(
            "junitparser",
            "junitparser is not installed (pip install junitparser)",
        );
        return None;
    }
    let out = std::process::Command::new("python3")
        .args(["-c", READ])
        .arg(path)
        .output()
        .expect("python3 starts");
    assert!(
        out.status.success(),
        "junitparser could not read {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        parse_json(&String::from_utf8_lossy(&out.stdout))
            .as_array()
            .unwrap()
            .clone(),
    )
}

/// A `perfsleuth serve` child; killed when dropped.
pub struct Server {
    pub child: std::process::Child,
    pub base: String,
    /// Its standard error (its log), line by line as it comes.
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Server {
    /// The log's lines once the server has exited and said `last` (a bound
    /// of 60 s only guards against a hang).
    pub fn log_until(&self, last: &str) -> Vec<String> {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let lines = self.log.lock().unwrap().clone();
            if lines.iter().any(|l| l.contains(last)) || std::time::Instant::now() > deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `perfsleuth serve --store STORE --listen ADDR` and waits for its
/// "listening on" line.
pub fn serve(sb: &Sandbox, store: &str, listen: &str) -> Server {
    serve_with(sb, &["serve", "--store", store, "--listen", listen])
}

/// Starts `perfsleuth ARGS…` (a `serve` command line) and waits for its
/// "listening on" line.
pub fn serve_with(sb: &Sandbox, args: &[&str]) -> Server {
    let mut child = sb
        .std_cmd()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("perfsleuth serve starts");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = std::sync::Arc::clone(&log);
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok) {
            if let Some(rest) = line.split("listening on http://").nth(1) {
                let addr = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_string();
                let _ = tx.send(addr);
            }
            kept.lock().unwrap().push(line);
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the server says where it listens");
    Server {
        child,
        base: format!("http://{addr}"),
        log,
    }
}

/// Creates a token on `store` with `server token create`; its secret.
pub fn token(sb: &Sandbox, store: &str, project: &str, scope: &str) -> String {
    let out = sb
        .run([
            "server",
            "token",
            "create",
            "--project",
            project,
            "--scope",
            scope,
            "--name",
            "ci",
            "--json",
            "--store",
            store,
        ])
        .ok();
    parse_json(&out.stdout)["tokens"][0]["secret"]
        .as_str()
        .expect("the secret is printed once")
        .to_string()
}

/// `git -C DIR ARGS…` with a committer identity; its trimmed stdout (fails on an error).
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A team server on a SQLite store of its own sandbox, with an
/// `ingest,read` token of project `app`: what a CI job pushes to.
pub struct Team {
    /// The running server (dropped, so killed, before its sandbox).
    pub server: Server,
    /// The token's secret.
    pub secret: String,
    /// The server's store URL.
    pub store: String,
    /// The server's own sandbox.
    pub sandbox: Sandbox,
}

/// An HTTP GET with an optional bearer token: the status and the body.
pub fn get(url: &str, token: Option<&str>) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut req = agent.get(url);
    if let Some(t) = token {
        req = req.header("Authorization", &format!("Bearer {t}"));
    }
    let mut resp = req.call().expect("the server answers");
    let status = resp.status().as_u16();
    (status, resp.body_mut().read_to_string().unwrap())
}

/// Starts a [`Team`] server on a free loopback port.
pub fn team() -> Team {
    let sandbox = Sandbox::new();
    let store = format!("sqlite:{}", sandbox.path("team.db").display());
    let secret = token(&sandbox, &store, "app", "ingest,read");
    let server = serve(&sandbox, &store, "127.0.0.1:0");
    Team {
        server,
        secret,
        store,
        sandbox,
    }
}

/// The `sh` blocks of a Markdown file (relative to the repository top),
/// each with the text of the `<!-- TAG: TEXT -->` line before it; a block
/// without one fails the test (every block must say how it is run).
pub fn marked_sh_blocks(file: &str, tag: &str) -> Vec<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let open = format!("<!-- {tag}: ");
    let mut blocks = Vec::new();
    let mut marker: Option<String> = None;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(m) = line
            .strip_prefix(&open)
            .and_then(|m| m.strip_suffix(" -->"))
        {
            marker = Some(m.to_string());
        } else if line == "```sh" {
            let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            let m = marker
                .take()
                .unwrap_or_else(|| panic!("{file}: a sh block without a `{tag}` line: {body:?}"));
            blocks.push((m, body.join("\n") + "\n"));
        }
    }
    blocks
}

/// `perfsleuth COMMAND --store … ARGS…` (`ab`, `bisect`) run in the
/// repository `dir`, its worktrees under the sandbox's tmp dir.
pub fn in_repo(sb: &Sandbox, dir: &Path, command: &str, args: &[&str]) -> Out {
    let tmp = sb.path("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cmd = sb.cmd();
    cmd.current_dir(dir)
        .env("TMPDIR", &tmp)
        .args([command, "--store", &sb.store()])
        .args(args);
    cmd.output().expect("start perfsleuth").into()
}

/// Nothing of `ab`'s or `bisect`'s left: no worktree registered in `dir`,
/// nothing in the sandbox's tmp dir.
#[track_caller]
pub fn nothing_left(sb: &Sandbox, dir: &Path) {
    let list = git(dir, &["worktree", "list", "--porcelain"]);
    assert_eq!(
        list.matches("worktree ").count(),
        1,
        "worktrees left: {list}"
    );
    let tmp: Vec<_> = std::fs::read_dir(sb.path("tmp"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(tmp.is_empty(), "left in TMPDIR: {tmp:?}");
}

/// Runs `sql` on the SQLite file `db` (Python's sqlite3: the tests link no
/// SQLite of their own) and commits; it must succeed.
pub fn sqlite_exec(db: &std::path::Path, sql: &str) {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()",
            db.to_str().expect("a UTF-8 path"),
            sql,
        ])
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{sql}: {out:?}");
}

/// `psql URL -qAtc SQL`: its output, trimmed; the statement must succeed.
pub fn psql(url: &str, sql: &str) -> String {
    let out = std::process::Command::new("psql")
        .args([url, "-qAtc", sql])
        .output()
        .expect("psql runs");
    assert!(out.status.success(), "{sql}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The database a `postgres://…/DB[?…]` URL names.
pub fn database_of(url: &str) -> String {
    let tail = url.rsplit('/').next().unwrap_or_default();
    tail.split('?').next().unwrap_or_default().to_string()
}
