//! Persistence for perfsleuth runs: one SQLite file per store, versioned with
//! `PRAGMA user_version` and marked as ours with `PRAGMA application_id`.
//!
//! The store is written while measuring, one committed row per sample, so a
//! crash loses at most the sample in flight. It runs in WAL mode with a long
//! busy timeout so several perfsleuth processes can share one store.
//!
//! Opening is careful never to modify a file that is not ours: the SQLite
//! header is checked by hand before SQLite sees the file, and every check runs
//! before the first write (switching to WAL mode is a write).

use perfsleuth_model::{
    Benchmark, Environment, GitInfo, ImpactClass, Mode, ProbeResult, Profile, Run, RunStatus,
    Sample,
};
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior, params};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `PRAGMA application_id` of every perfsleuth store: "PSLT" in ASCII.
pub const APPLICATION_ID: u32 = 0x5053_4c54;

/// Newest store schema this build understands (`PRAGMA user_version`).
pub const STORE_SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// How long a writer waits for another process holding the store's lock.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Forward migrations; step `i` takes the schema from version `i` to `i + 1`.
/// Append only: a released step must never change, since stores in the wild
/// have already run it.
const MIGRATIONS: &[&str] = &[
    // 1: the initial schema.
    "CREATE TABLE environments (
        id INTEGER PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        facts TEXT NOT NULL
    );
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        started_at TEXT NOT NULL,
        ended_at TEXT,
        status TEXT NOT NULL,
        tool_version TEXT NOT NULL,
        git_commit TEXT,
        git_branch TEXT,
        git_dirty INTEGER,
        mode TEXT NOT NULL,
        options TEXT NOT NULL,
        environment_id INTEGER NOT NULL REFERENCES environments(id),
        context TEXT NOT NULL
    );
    CREATE INDEX runs_environment ON runs(environment_id);
    CREATE TABLE benchmarks (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        name TEXT NOT NULL,
        command TEXT NOT NULL,
        argv TEXT NOT NULL,
        parameters TEXT NOT NULL,
        UNIQUE (run_id, position)
    );
    CREATE TABLE samples (
        benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
        iteration INTEGER NOT NULL,
        wall_ns INTEGER NOT NULL,
        user_ns INTEGER NOT NULL,
        sys_ns INTEGER NOT NULL,
        peak_rss_bytes INTEGER NOT NULL,
        minor_faults INTEGER NOT NULL,
        major_faults INTEGER NOT NULL,
        voluntary_cs INTEGER NOT NULL,
        involuntary_cs INTEGER NOT NULL,
        exit_code INTEGER,
        signal INTEGER,
        counters TEXT,
        PRIMARY KEY (benchmark_id, iteration)
    ) WITHOUT ROWID;",
    // 2: facts about each benchmarked program (hash, ELF class, ABI), JSON.
    "ALTER TABLE benchmarks ADD COLUMN facts TEXT",
    // 3: the per-function profile of a simulation-mode benchmark, JSON.
    "ALTER TABLE benchmarks ADD COLUMN profile TEXT",
    // 4: machine microbenchmark results (`perfsleuth probe`), one row per
    // metric. REAL columns are nullable: SQLite stores NaN as NULL.
    "CREATE TABLE probe_results (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        probe TEXT NOT NULL,
        metric TEXT NOT NULL,
        value REAL,
        unit TEXT NOT NULL,
        lower_is_better INTEGER NOT NULL,
        cycles REAL,
        spread REAL,
        stable INTEGER NOT NULL,
        headline INTEGER NOT NULL,
        note TEXT,
        PRIMARY KEY (run_id, position)
    ) WITHOUT ROWID;",
];

/// The first 16 bytes of every SQLite 3 database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Hint appended to errors where another store location is the way out.
const HINT_OTHER: &str = "pass another path with --store sqlite:PATH";

/// Everything that can go wrong with a store; each message is one line with the path and a hint.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file exists but is not a perfsleuth store (another program's file or database).
    #[error("{}: not a perfsleuth database (hint: {HINT_OTHER})", path.display())]
    NotADatabase {
        /// The offending file.
        path: PathBuf,
    },
    /// The file is a SQLite database whose contents are damaged.
    #[error(
        "{}: the store is corrupt: {detail} (hint: move the file aside to start a fresh store, or {HINT_OTHER})",
        path.display()
    )]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// What SQLite or the loader found.
        detail: String,
    },
    /// The store was written by a newer perfsleuth with a schema this build cannot read.
    #[error(
        "{}: store schema version {found} is newer than the {supported} this perfsleuth supports (hint: upgrade perfsleuth, or {HINT_OTHER})",
        path.display()
    )]
    NewerSchema {
        /// The store file.
        path: PathBuf,
        /// Its `user_version`.
        found: u32,
        /// [`STORE_SCHEMA_VERSION`].
        supported: u32,
    },
    /// The store or its directory cannot be created or written.
    #[error("{}: cannot write the store: {detail} (hint: {HINT_OTHER} in a writable location)", path.display())]
    Unwritable {
        /// The store file.
        path: PathBuf,
        /// The OS or SQLite reason.
        detail: String,
    },
    /// The store file exists but cannot be read.
    #[error("{}: cannot read the store: {detail} (hint: check its permissions, or {HINT_OTHER})", path.display())]
    Unreadable {
        /// The store file.
        path: PathBuf,
        /// The OS reason.
        detail: String,
    },
    /// Listing or showing was asked of a store that does not exist yet.
    #[error("no results stored yet at {} (run `perfsleuth run` first)", path.display())]
    NoResults {
        /// Where the store was looked for.
        path: PathBuf,
    },
    /// A `--store` value with a scheme other than `sqlite:`.
    #[error("unsupported store {url:?}: {reason} (hint: use sqlite:PATH or a bare PATH)")]
    UnsupportedUrl {
        /// The value as given.
        url: String,
        /// Why it was rejected.
        reason: String,
    },
    /// Any other SQLite failure.
    #[error(
        "{}: SQLite error: {source} (hint: retry; if it persists, check the file and its directory, or {HINT_OTHER})",
        path.display()
    )]
    Sqlite {
        /// The store file.
        path: PathBuf,
        /// The underlying error.
        source: rusqlite::Error,
    },
    /// No stored run matches the given id or spec.
    #[error(
        "no stored run matches {0:?} (hint: run `perfsleuth runs` to list stored runs; use an id, latest or latest~N)"
    )]
    NotFound(String),
    /// A JSON column could not be encoded or decoded.
    #[error("{}: stored JSON is malformed: {source} (hint: the store may be damaged; {HINT_OTHER})", path.display())]
    Json {
        /// The store file.
        path: PathBuf,
        /// The underlying error.
        source: serde_json::Error,
    },
}

/// Turns a SQLite error into the most specific [`StoreError`], so callers and
/// users see "corrupt" or "unwritable" rather than a raw SQLite code.
fn sql_err(path: &Path, e: rusqlite::Error) -> StoreError {
    let path = path.to_path_buf();
    if let rusqlite::Error::SqliteFailure(f, msg) = &e {
        let detail = msg.clone().unwrap_or_else(|| f.to_string());
        match f.code {
            ErrorCode::NotADatabase => return StoreError::NotADatabase { path },
            ErrorCode::DatabaseCorrupt => return StoreError::Corrupt { path, detail },
            ErrorCode::ReadOnly
            | ErrorCode::CannotOpen
            | ErrorCode::DiskFull
            | ErrorCode::PermissionDenied => return StoreError::Unwritable { path, detail },
            _ => {}
        }
    }
    StoreError::Sqlite { path, source: e }
}

/// Attaches the store path to library errors.
trait At<T> {
    /// Converts the error, naming `path`.
    fn at(self, path: &Path) -> Result<T, StoreError>;
}

impl<T> At<T> for rusqlite::Result<T> {
    fn at(self, path: &Path) -> Result<T, StoreError> {
        self.map_err(|e| sql_err(path, e))
    }
}

impl<T> At<T> for Result<T, serde_json::Error> {
    fn at(self, path: &Path) -> Result<T, StoreError> {
        self.map_err(|source| StoreError::Json {
            path: path.to_path_buf(),
            source,
        })
    }
}

// The `perfsleuth/runs` entries are part of the typed schema in the model.
pub use perfsleuth_model::schema::RunListing;

/// Which runs `latest` and `latest~N` count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// Every run.
    Any,
    /// Runs that measured commands: every mode but `probe`.
    Benchmarks,
    /// Runs of `perfsleuth probe`.
    Probes,
    /// Runs measured like this one: the same mode, and `scale` sweeps only
    /// with `scale` sweeps (a default baseline must measure the same things).
    Like {
        /// The mode.
        mode: Mode,
        /// Whether it is a `perfsleuth scale` sweep.
        scale: bool,
    },
}

impl RunKind {
    /// The SQL condition on `runs.mode` selecting this kind.
    fn condition(self) -> String {
        match self {
            RunKind::Any => "1".into(),
            RunKind::Benchmarks => "mode <> 'probe'".into(),
            RunKind::Probes => "mode = 'probe'".into(),
            RunKind::Like { mode, scale } => format!(
                "mode = '{}' AND (coalesce(json_extract(options, '$.kind'), '') = '{}') = {}",
                mode.as_str(),
                perfsleuth_model::SCALE_KIND,
                if scale { 1 } else { 0 }
            ),
        }
    }
}

/// What the hand-made header check found at a path.
#[derive(Debug, PartialEq, Eq)]
enum FileState {
    /// Nothing there (or a parent is not a directory).
    Missing,
    /// A 0-byte file: SQLite treats it as an empty database.
    Empty,
    /// A SQLite file that may be ours; SQLite must confirm.
    Sqlite,
}

/// Checks the file by hand before SQLite sees it, because SQLite treats some
/// non-databases as empty databases and would happily write into them.
fn precheck(path: &Path) -> Result<FileState, StoreError> {
    let unreadable = |e: io::Error| StoreError::Unreadable {
        path: path.to_path_buf(),
        detail: e.to_string(),
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(FileState::Missing);
        }
        Err(e) => return Err(unreadable(e)),
    };
    if !meta.is_file() {
        return Err(StoreError::NotADatabase {
            path: path.to_path_buf(),
        });
    }
    if meta.len() == 0 {
        return Ok(FileState::Empty);
    }
    let mut header = Vec::with_capacity(100);
    std::fs::File::open(path)
        .and_then(|f| f.take(100).read_to_end(&mut header))
        .map_err(unreadable)?;
    // A real database is at least one 512-byte page; anything shorter with the
    // magic is not a database SQLite would refuse, so refuse it here.
    if header.len() < 100 || !header.starts_with(SQLITE_MAGIC) {
        return Err(StoreError::NotADatabase {
            path: path.to_path_buf(),
        });
    }
    let be32 = |at: usize| {
        u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    // The header may be stale while a WAL holds newer pages, so these are only
    // early exits; SQLite re-checks the same values under a lock later.
    let app_id = be32(68);
    if app_id != 0 && app_id != APPLICATION_ID {
        return Err(StoreError::NotADatabase {
            path: path.to_path_buf(),
        });
    }
    let version = be32(60);
    if app_id == APPLICATION_ID && version > STORE_SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found: version,
            supported: STORE_SCHEMA_VERSION,
        });
    }
    Ok(FileState::Sqlite)
}

/// The identifying pragmas and the number of schema objects, read in one go.
struct Identity {
    app_id: u32,
    version: u32,
    objects: i64,
}

impl Identity {
    fn read(conn: &Connection, path: &Path) -> Result<Identity, StoreError> {
        // One statement, so all three come from one snapshot: read one by one,
        // a concurrent first migration can show an id of 0 next to its tables.
        let (app_id, version, objects): (i32, i32, i64) = conn
            .query_row(
                "SELECT a.application_id, v.user_version, (SELECT count(*) FROM sqlite_schema) \
                 FROM pragma_application_id AS a, pragma_user_version AS v",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .at(path)?;
        Ok(Identity {
            // The pragmas are signed 32-bit; the header bytes are what we compare.
            app_id: app_id as u32,
            version: version as u32,
            objects,
        })
    }

    /// Errors unless this is our store or a pristine empty database.
    fn check(&self, path: &Path) -> Result<(), StoreError> {
        let pristine = self.app_id == 0 && self.version == 0 && self.objects == 0;
        if self.app_id != APPLICATION_ID && !pristine {
            return Err(StoreError::NotADatabase {
                path: path.to_path_buf(),
            });
        }
        if self.version > STORE_SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                path: path.to_path_buf(),
                found: self.version,
                supported: STORE_SCHEMA_VERSION,
            });
        }
        Ok(())
    }
}

/// Whether an error means another connection holds the lock.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Writes `.perfsleuth/.gitignore` so a store inside a work tree never dirties it.
fn ensure_gitignore(path: &Path) -> Result<(), StoreError> {
    let Some(dir) = path.parent() else {
        return Ok(());
    };
    if dir.file_name() != Some(OsStr::new(".perfsleuth")) {
        return Ok(());
    }
    let ignore = dir.join(".gitignore");
    if ignore.symlink_metadata().is_ok() {
        return Ok(());
    }
    // create_new: two processes racing here must not clobber each other or a user's file.
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&ignore)
        .and_then(|mut f| io::Write::write_all(&mut f, b"*\n"));
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(StoreError::Unwritable {
            path: ignore,
            detail: e.to_string(),
        }),
    }
}

/// The comparability hash: the first 12 hex digits of the SHA-256 of the
/// identity facts' keys and values. Equal hashes mean the same CPU, caches,
/// ISA, kernel release, libc and hypervisor; unknown facts count as the text
/// `unknown`, whatever the reason.
pub fn comparability_hash(env: &Environment) -> String {
    let identity: std::collections::BTreeMap<&str, &str> = env
        .facts_of(&[ImpactClass::Identity])
        .map(|(k, f)| (k.as_str(), f.value.as_str()))
        .collect();
    let canonical = serde_json::to_string(&identity).unwrap_or_default();
    sha256_hex(canonical.as_bytes())[..12].to_string()
}

/// Lowercase hex SHA-256.
fn sha256_hex(data: &[u8]) -> String {
    use fmt::Write;
    let digest = Sha256::digest(data);
    let mut out = String::with_capacity(64);
    for b in digest {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Facts that identify a machine configuration; context facts change every run.
const STABLE_CLASSES: [ImpactClass; 2] = [ImpactClass::Identity, ImpactClass::Performance];

const INSERT_PROBE_RESULT: &str = "INSERT INTO probe_results (run_id, position, probe, metric, \
    value, unit, lower_is_better, cycles, spread, stable, headline, note) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";

const INSERT_SAMPLE: &str = "INSERT INTO samples (benchmark_id, iteration, wall_ns, user_ns, sys_ns, \
    peak_rss_bytes, minor_faults, major_faults, voluntary_cs, involuntary_cs, exit_code, signal, counters) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";

/// An open perfsleuth store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Stores u64 counters in SQLite's i64; the bit pattern round-trips exactly.
fn to_i64(v: u64) -> i64 {
    v as i64
}

/// Inverse of [`to_i64`].
fn to_u64(v: i64) -> u64 {
    v as u64
}

impl Store {
    /// Parses `--store` values: "sqlite:PATH" or a bare PATH. Anything else (e.g. "postgres://…") -> error naming the supported schemes.
    pub fn path_from_url(url: &str) -> Result<PathBuf, StoreError> {
        let bad = |reason: String| StoreError::UnsupportedUrl {
            url: url.to_string(),
            reason,
        };
        if url.is_empty() {
            return Err(bad("the value is empty".into()));
        }
        if let Some(rest) = url.strip_prefix("sqlite:") {
            // Accept the URL spelling too: sqlite:///abs/path and sqlite://rel/path.
            let rest = rest.strip_prefix("//").unwrap_or(rest);
            if rest.is_empty() {
                return Err(bad("no path after `sqlite:`".into()));
            }
            return Ok(PathBuf::from(rest));
        }
        // Only `scheme://` counts as a URL, so a file named `a:b.db` still works.
        if let Some((scheme, _)) = url.split_once("://") {
            let looks_like_scheme = scheme
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
            if looks_like_scheme {
                return Err(bad(format!(
                    "scheme `{scheme}` is not supported; the only supported scheme is `sqlite`"
                )));
            }
        }
        Ok(PathBuf::from(url))
    }

    /// Default location: `<git-toplevel>/.perfsleuth/results.db` inside a git work tree, else under `$XDG_DATA_HOME`, else under `$HOME/.local/share`; `cwd` should be absolute.
    pub fn default_path(
        cwd: &Path,
        xdg_data_home: Option<&OsStr>,
        home: Option<&OsStr>,
    ) -> Option<PathBuf> {
        // `.git` is a file in worktrees and submodules, hence symlink_metadata, not is_dir.
        if let Some(top) = cwd
            .ancestors()
            .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        {
            return Some(top.join(".perfsleuth").join("results.db"));
        }
        // The XDG spec says relative values are invalid and must be ignored.
        if let Some(xdg) = xdg_data_home.map(Path::new).filter(|p| p.is_absolute()) {
            return Some(xdg.join("perfsleuth").join("results.db"));
        }
        let home = home.filter(|h| !h.is_empty())?;
        Some(Path::new(home).join(".local/share/perfsleuth/results.db"))
    }

    /// Opens or creates a store, creating parent directories (and `.perfsleuth/.gitignore`) as needed.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let state = precheck(path)?;
        if state == FileState::Missing
            && let Some(parent) = path.parent()
        {
            std::fs::create_dir_all(parent).map_err(|e| {
                // create_dir_all reports "File exists" when a component is a
                // regular file: name that component instead.
                let blocker = parent.ancestors().find(|a| a.is_file());
                StoreError::Unwritable {
                    path: path.to_path_buf(),
                    detail: match blocker {
                        Some(file) => format!("{} is a file, not a directory", file.display()),
                        None => format!("cannot create directory {}: {e}", parent.display()),
                    },
                }
            })?;
        }
        let store = Store::connect(path, true)?;
        // After connecting, so a refused file leaves no trace beside it either.
        ensure_gitignore(path)?;
        Ok(store)
    }

    /// Opens an existing store for listing and showing; a missing store is a [`StoreError::NoResults`].
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        match precheck(path)? {
            FileState::Missing | FileState::Empty => Err(StoreError::NoResults {
                path: path.to_path_buf(),
            }),
            FileState::Sqlite => Store::connect(path, false),
        }
    }

    /// Connects, verifies the file is ours, then (and only then) configures and migrates it.
    fn connect(path: &Path, create: bool) -> Result<Store, StoreError> {
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let mut conn = Connection::open_with_flags(path, flags).at(path)?;
        // Before anything that takes a lock, so concurrent openers wait instead of failing.
        conn.busy_timeout(BUSY_TIMEOUT).at(path)?;

        // Read-only checks first: nothing below may run on a file that is not ours.
        let id = Identity::read(&conn, path)?;
        id.check(path)?;
        if id.version >= 1 {
            probe(&conn, path, id.version)?;
        }

        set_wal(&conn, path)?;
        conn.pragma_update(None, "synchronous", "NORMAL").at(path)?;
        conn.pragma_update(None, "foreign_keys", true).at(path)?;
        if id.version < STORE_SCHEMA_VERSION {
            migrate(&mut conn, path)?;
        }
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// The store's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Inserts the environment (deduplicated) and a run row with status `running`; `run.benchmarks` are not inserted. Returns the new run id.
    pub fn begin_run(&mut self, run: &Run) -> Result<i64, StoreError> {
        let path = &self.path;
        let stable = run.environment.only(&STABLE_CLASSES);
        let context = run.environment.only(&[ImpactClass::Context]);
        // Environment serialises as a BTreeMap, so this JSON is canonical.
        let facts = serde_json::to_string(&stable).at(path)?;
        let context = serde_json::to_string(&context).at(path)?;
        let options = serde_json::to_string(&run.options).at(path)?;
        let hash = sha256_hex(facts.as_bytes());

        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .at(path)?;
        tx.execute(
            "INSERT INTO environments (hash, facts) VALUES (?1, ?2) ON CONFLICT (hash) DO NOTHING",
            params![hash, facts],
        )
        .at(path)?;
        let env_id: i64 = tx
            .query_row(
                "SELECT id FROM environments WHERE hash = ?1",
                [&hash],
                |r| r.get(0),
            )
            .at(path)?;
        let git = run.git.as_ref();
        tx.execute(
            "INSERT INTO runs (started_at, ended_at, status, tool_version, git_commit, git_branch, \
             git_dirty, mode, options, environment_id, context) \
             VALUES (?1, NULL, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                run.started_at,
                RunStatus::Running.as_str(),
                run.tool_version,
                git.map(|g| &g.commit),
                git.and_then(|g| g.branch.as_ref()),
                git.map(|g| g.dirty),
                run.mode.as_str(),
                options,
                env_id,
                context,
            ],
        )
        .at(path)?;
        let id = tx.last_insert_rowid();
        tx.commit().at(path)?;
        Ok(id)
    }

    /// Inserts a benchmark row (name, command, argv, parameters) for a run and returns its id; insertion order is display order.
    pub fn add_benchmark(&mut self, run_id: i64, bench: &Benchmark) -> Result<i64, StoreError> {
        let path = &self.path;
        let argv = serde_json::to_string(&bench.argv).at(path)?;
        let parameters = serde_json::to_string(&bench.parameters).at(path)?;
        let facts = if bench.facts.facts.is_empty() {
            None
        } else {
            Some(serde_json::to_string(&bench.facts).at(path)?)
        };
        let profile = bench
            .profile
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .at(path)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .at(path)?;
        let position = next_position(&tx, path, run_id, "benchmarks")?;
        tx.execute(
            "INSERT INTO benchmarks (run_id, position, name, command, argv, parameters, facts, profile) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                run_id,
                position,
                bench.name,
                bench.command,
                argv,
                parameters,
                facts,
                profile
            ],
        )
        .at(path)?;
        let id = tx.last_insert_rowid();
        tx.commit().at(path)?;
        Ok(id)
    }

    /// Inserts one sample and commits it at once, so a crash loses at most the sample in flight.
    pub fn add_sample(&mut self, benchmark_id: i64, sample: &Sample) -> Result<(), StoreError> {
        // Hot path: one cached statement, one autocommit insert, JSON only when needed.
        let counters = if sample.counters.is_empty() {
            None
        } else {
            Some(serde_json::to_string(&sample.counters).at(&self.path)?)
        };
        let mut stmt = self.conn.prepare_cached(INSERT_SAMPLE).at(&self.path)?;
        stmt.execute(params![
            benchmark_id,
            sample.iteration,
            to_i64(sample.wall_ns),
            to_i64(sample.user_ns),
            to_i64(sample.sys_ns),
            to_i64(sample.peak_rss_bytes),
            to_i64(sample.minor_faults),
            to_i64(sample.major_faults),
            to_i64(sample.voluntary_cs),
            to_i64(sample.involuntary_cs),
            sample.exit_code,
            sample.signal,
            counters,
        ])
        .at(&self.path)?;
        Ok(())
    }

    /// Replaces a run's context facts (those only known at the end, such as
    /// the measured peak-RSS floor); identity and performance facts are fixed
    /// at [`Store::begin_run`].
    pub fn update_context(&mut self, run_id: i64, env: &Environment) -> Result<(), StoreError> {
        let context = serde_json::to_string(&env.only(&[ImpactClass::Context])).at(&self.path)?;
        let changed = self
            .conn
            .execute(
                "UPDATE runs SET context = ?1 WHERE id = ?2",
                params![context, run_id],
            )
            .at(&self.path)?;
        if changed == 0 {
            return Err(StoreError::NotFound(run_id.to_string()));
        }
        Ok(())
    }

    /// Records a benchmark's per-function profile (simulation mode), once
    /// its runs are done.
    pub fn set_profile(&mut self, benchmark_id: i64, profile: &Profile) -> Result<(), StoreError> {
        let json = serde_json::to_string(profile).at(&self.path)?;
        let changed = self
            .conn
            .execute(
                "UPDATE benchmarks SET profile = ?1 WHERE id = ?2",
                params![json, benchmark_id],
            )
            .at(&self.path)?;
        if changed == 0 {
            return Err(StoreError::NotFound(format!("benchmark {benchmark_id}")));
        }
        Ok(())
    }

    /// Appends probe results to a run in one transaction (after any stored
    /// before), so each probe's numbers are kept as soon as it finishes.
    pub fn add_probe_results(
        &mut self,
        run_id: i64,
        results: &[ProbeResult],
    ) -> Result<(), StoreError> {
        let path = &self.path;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .at(path)?;
        let first = next_position(&tx, path, run_id, "probe_results")?;
        {
            let mut stmt = tx.prepare_cached(INSERT_PROBE_RESULT).at(path)?;
            for (i, p) in results.iter().enumerate() {
                stmt.execute(params![
                    run_id,
                    first + i as i64,
                    p.probe,
                    p.metric,
                    p.value,
                    p.unit,
                    p.lower_is_better,
                    p.cycles,
                    p.spread,
                    p.stable,
                    p.headline,
                    p.note,
                ])
                .at(path)?;
            }
        }
        tx.commit().at(path)
    }

    /// Sets a run's final status and end time.
    pub fn finish_run(
        &mut self,
        run_id: i64,
        status: RunStatus,
        ended_at: &str,
    ) -> Result<(), StoreError> {
        let changed = self
            .conn
            .execute(
                "UPDATE runs SET status = ?1, ended_at = ?2 WHERE id = ?3",
                params![status.as_str(), ended_at, run_id],
            )
            .at(&self.path)?;
        if changed == 0 {
            return Err(StoreError::NotFound(run_id.to_string()));
        }
        Ok(())
    }

    /// Loads a whole run: environment merged from its env row and context, benchmarks in insertion order, samples in iteration order, probe results in the order stored; `Ok(None)` if no such id.
    pub fn load_run(&self, id: i64) -> Result<Option<Run>, StoreError> {
        let path = &self.path;
        // One read transaction, so a concurrent writer cannot show us half a state.
        let tx = self.conn.unchecked_transaction().at(path)?;
        let row = tx
            .query_row(
                "SELECT r.started_at, r.ended_at, r.status, r.tool_version, r.git_commit, \
                 r.git_branch, r.git_dirty, r.mode, r.options, e.facts, r.context \
                 FROM runs r JOIN environments e ON e.id = r.environment_id WHERE r.id = ?1",
                [id],
                |r| {
                    Ok(RunRow {
                        started_at: r.get(0)?,
                        ended_at: r.get(1)?,
                        status: r.get(2)?,
                        tool_version: r.get(3)?,
                        git_commit: r.get(4)?,
                        git_branch: r.get(5)?,
                        git_dirty: r.get(6)?,
                        mode: r.get(7)?,
                        options: r.get(8)?,
                        facts: r.get(9)?,
                        context: r.get(10)?,
                    })
                },
            )
            .optional()
            .at(path)?;
        let Some(row) = row else { return Ok(None) };

        let mut benchmarks = Vec::new();
        {
            let mut stmt = tx
                .prepare_cached(
                    "SELECT id, name, command, argv, parameters, facts, profile FROM benchmarks \
                     WHERE run_id = ?1 ORDER BY position",
                )
                .at(path)?;
            let rows = stmt
                .query_map([id], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, Option<String>>(5)?,
                        r.get::<_, Option<String>>(6)?,
                    ))
                })
                .at(path)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .at(path)?;
            for (bench_id, name, command, argv, parameters, facts, profile) in rows {
                benchmarks.push(Benchmark {
                    name,
                    command,
                    argv: serde_json::from_str(&argv).at(path)?,
                    parameters: serde_json::from_str(&parameters).at(path)?,
                    facts: match facts {
                        Some(json) => serde_json::from_str(&json).at(path)?,
                        None => Environment::default(),
                    },
                    samples: load_samples(&tx, path, bench_id)?,
                    profile: profile
                        .map(|json| serde_json::from_str(&json))
                        .transpose()
                        .at(path)?,
                });
            }
        }

        let probes = load_probe_results(&tx, path, id)?;
        let run = Run {
            id: Some(id),
            status: parse_status(path, id, &row.status)?,
            mode: parse_mode(path, id, &row.mode)?,
            git: git_info(row.git_commit, row.git_branch, row.git_dirty),
            options: serde_json::from_str(&row.options).at(path)?,
            environment: merged_environment(path, &row.facts, &row.context)?,
            started_at: row.started_at,
            ended_at: row.ended_at,
            tool_version: row.tool_version,
            benchmarks,
            probes,
        };
        Ok(Some(run))
    }

    /// Lists runs newest first, at most `limit` of them.
    pub fn list_runs(&self, limit: Option<usize>) -> Result<Vec<RunListing>, StoreError> {
        let path = &self.path;
        // SQLite treats a negative LIMIT as "no limit".
        let limit = limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let tx = self.conn.unchecked_transaction().at(path)?;
        let rows = {
            let mut stmt = tx
                .prepare_cached(
                    "SELECT r.id, r.started_at, r.ended_at, r.status, r.mode, r.git_commit, \
                     r.git_branch, r.git_dirty, e.facts, r.context \
                     FROM runs r JOIN environments e ON e.id = r.environment_id \
                     ORDER BY r.id DESC LIMIT ?1",
                )
                .at(path)?;
            stmt.query_map([limit], |r| {
                Ok(ListRow {
                    id: r.get(0)?,
                    started_at: r.get(1)?,
                    ended_at: r.get(2)?,
                    status: r.get(3)?,
                    mode: r.get(4)?,
                    git_commit: r.get(5)?,
                    git_branch: r.get(6)?,
                    git_dirty: r.get(7)?,
                    facts: r.get(8)?,
                    context: r.get(9)?,
                })
            })
            .at(path)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .at(path)?
        };
        let mut names = tx
            .prepare_cached("SELECT name FROM benchmarks WHERE run_id = ?1 ORDER BY position")
            .at(path)?;
        let mut count = tx
            .prepare_cached(
                "SELECT count(*) FROM samples WHERE benchmark_id IN \
                 (SELECT id FROM benchmarks WHERE run_id = ?1)",
            )
            .at(path)?;
        let mut probe_names = tx
            .prepare_cached(
                "SELECT probe FROM probe_results WHERE run_id = ?1 \
                 GROUP BY probe ORDER BY min(position)",
            )
            .at(path)?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let env = merged_environment(path, &row.facts, &row.context)?;
            let benchmarks = names
                .query_map([row.id], |r| r.get::<_, String>(0))
                .at(path)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .at(path)?;
            let samples: i64 = count.query_row([row.id], |r| r.get(0)).at(path)?;
            let probes = probe_names
                .query_map([row.id], |r| r.get::<_, String>(0))
                .at(path)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .at(path)?;
            out.push(RunListing {
                id: row.id,
                status: parse_status(path, row.id, &row.status)?,
                mode: parse_mode(path, row.id, &row.mode)?,
                git: git_info(row.git_commit, row.git_branch, row.git_dirty),
                started_at: row.started_at,
                ended_at: row.ended_at,
                benchmarks,
                samples: to_u64(samples),
                cpu_model: env.get("cpu.model").map(str::to_string),
                host: env.get("host.name").map(str::to_string),
                comparability: comparability_hash(&env),
                probes,
            });
        }
        Ok(out)
    }

    /// Resolves "latest", "latest~N" (the N-th run before the latest) or a numeric id to a run id.
    pub fn resolve_run(&self, spec: &str) -> Result<i64, StoreError> {
        self.resolve_run_of(spec, RunKind::Any)
    }

    /// Like [`Store::resolve_run`], but `latest` and `latest~N` count only
    /// runs of `kind`; a numeric id names any run.
    pub fn resolve_run_of(&self, spec: &str, kind: RunKind) -> Result<i64, StoreError> {
        let path = &self.path;
        let not_found = || StoreError::NotFound(spec.to_string());
        let spec_t = spec.trim();
        let back = if spec_t == "latest" {
            Some(0)
        } else if let Some(n) = spec_t.strip_prefix("latest~") {
            // Like git's HEAD~: a bare `~` means one back.
            Some(if n.is_empty() {
                1
            } else {
                n.parse::<i64>().map_err(|_| not_found())?
            })
        } else {
            None
        };
        let found: Option<i64> = match back {
            Some(n) if n < 0 => return Err(not_found()),
            Some(n) => self
                .conn
                .query_row(
                    &format!(
                        "SELECT id FROM runs WHERE {} ORDER BY id DESC LIMIT 1 OFFSET ?1",
                        kind.condition()
                    ),
                    [n],
                    |r| r.get(0),
                )
                .optional()
                .at(path)?,
            None => {
                let id: i64 = spec_t.parse().map_err(|_| not_found())?;
                self.conn
                    .query_row("SELECT id FROM runs WHERE id = ?1", [id], |r| r.get(0))
                    .optional()
                    .at(path)?
            }
        };
        found.ok_or_else(not_found)
    }

    /// Complete runs of commands (not `probe` runs) made at this git commit
    /// (full hash), newest first.
    pub fn runs_at_commit(&self, commit: &str) -> Result<Vec<i64>, StoreError> {
        self.ids(
            "SELECT id FROM runs WHERE git_commit = ?1 AND status = 'complete' \
             AND mode <> 'probe' ORDER BY id DESC",
            commit,
        )
    }

    /// Complete runs of commands (not `probe` runs) made on this git branch, newest first.
    pub fn runs_on_branch(&self, branch: &str) -> Result<Vec<i64>, StoreError> {
        self.ids(
            "SELECT id FROM runs WHERE git_branch = ?1 AND status = 'complete' \
             AND mode <> 'probe' ORDER BY id DESC",
            branch,
        )
    }

    /// The newest run stored before run `id`, if any.
    pub fn run_before(&self, id: i64) -> Result<Option<i64>, StoreError> {
        self.run_before_of(id, RunKind::Any)
    }

    /// The newest run of `kind` stored before run `id`, if any.
    pub fn run_before_of(&self, id: i64, kind: RunKind) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row(
                &format!(
                    "SELECT id FROM runs WHERE id < ?1 AND {} ORDER BY id DESC LIMIT 1",
                    kind.condition()
                ),
                [id],
                |r| r.get(0),
            )
            .optional()
            .at(&self.path)
    }

    /// The newest run with probe results made on the machine `env` describes:
    /// one with the same identity and performance facts if there is one (so a
    /// changed mitigation or governor finds its own probes), else one with
    /// the same [`comparability_hash`].
    pub fn latest_probe_run_for(&self, env: &Environment) -> Result<Option<i64>, StoreError> {
        let path = &self.path;
        let stable = serde_json::to_string(&env.only(&STABLE_CLASSES)).at(path)?;
        let exact = sha256_hex(stable.as_bytes());
        let wanted = comparability_hash(env);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT r.id, e.hash, e.facts FROM runs r JOIN environments e ON e.id = r.environment_id \
                 WHERE EXISTS (SELECT 1 FROM probe_results p WHERE p.run_id = r.id) \
                 ORDER BY r.id DESC",
            )
            .at(path)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .at(path)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .at(path)?;
        if let Some((id, _, _)) = rows.iter().find(|(_, hash, _)| *hash == exact) {
            return Ok(Some(*id));
        }
        for (id, _, facts) in rows {
            let facts: Environment = serde_json::from_str(&facts).at(path)?;
            if comparability_hash(&facts) == wanted {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    fn ids(&self, sql: &str, arg: &str) -> Result<Vec<i64>, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql).at(&self.path)?;
        let rows = stmt.query_map([arg], |r| r.get(0)).at(&self.path)?;
        rows.collect::<rusqlite::Result<Vec<i64>>>().at(&self.path)
    }
}

/// Raw columns of one run, decoded after the query so JSON errors keep their type.
struct RunRow {
    started_at: String,
    ended_at: Option<String>,
    status: String,
    tool_version: String,
    git_commit: Option<String>,
    git_branch: Option<String>,
    git_dirty: Option<bool>,
    mode: String,
    options: String,
    facts: String,
    context: String,
}

/// Raw columns of one `list_runs` row.
struct ListRow {
    id: i64,
    started_at: String,
    ended_at: Option<String>,
    status: String,
    mode: String,
    git_commit: Option<String>,
    git_branch: Option<String>,
    git_dirty: Option<bool>,
    facts: String,
    context: String,
}

/// Switches to WAL, retrying while another opener holds the lock: the journal
/// mode change does not always go through the busy handler.
fn set_wal(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    loop {
        // The result may be another mode on file systems without shared memory;
        // the store still works there, just with less concurrency.
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
            Ok(_) => return Ok(()),
            Err(e) if is_busy(&e) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(sql_err(path, e)),
        }
    }
}

/// Touches the root page of every table of schema `version`, so a damaged
/// store fails on open rather than halfway through a run, and before
/// anything is written.
fn probe(conn: &Connection, path: &Path, version: u32) -> Result<(), StoreError> {
    let since_4 = ["SELECT 1 FROM probe_results LIMIT 1"];
    for sql in [
        "SELECT 1 FROM environments LIMIT 1",
        "SELECT max(id) FROM runs",
        "SELECT 1 FROM benchmarks LIMIT 1",
        "SELECT 1 FROM samples LIMIT 1",
    ]
    .into_iter()
    .chain(since_4.into_iter().filter(|_| version >= 4))
    {
        conn.query_row(sql, [], |_| Ok(())).optional().at(path)?;
    }
    Ok(())
}

/// The next free `position` of run `run_id`'s rows in `table` (one of ours,
/// never user input); `NotFound` when the run does not exist.
fn next_position(
    tx: &rusqlite::Transaction<'_>,
    path: &Path,
    run_id: i64,
    table: &'static str,
) -> Result<i64, StoreError> {
    let exists: bool = tx
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?1)",
            [run_id],
            |r| r.get(0),
        )
        .at(path)?;
    if !exists {
        return Err(StoreError::NotFound(run_id.to_string()));
    }
    tx.query_row(
        &format!("SELECT coalesce(max(position) + 1, 0) FROM {table} WHERE run_id = ?1"),
        [run_id],
        |r| r.get(0),
    )
    .at(path)
}

/// Applies pending migrations in one IMMEDIATE transaction; the version is
/// re-read under the lock because another process may have migrated meanwhile.
fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .at(path)?;
    let id = Identity::read(&tx, path)?;
    id.check(path)?;
    if id.version < STORE_SCHEMA_VERSION {
        for step in &MIGRATIONS[id.version as usize..] {
            tx.execute_batch(step).at(path)?;
        }
        tx.pragma_update(None, "application_id", APPLICATION_ID as i32)
            .at(path)?;
        tx.pragma_update(None, "user_version", STORE_SCHEMA_VERSION as i32)
            .at(path)?;
    }
    tx.commit().at(path)
}

/// Loads one benchmark's samples in iteration order.
fn load_samples(conn: &Connection, path: &Path, bench_id: i64) -> Result<Vec<Sample>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT iteration, wall_ns, user_ns, sys_ns, peak_rss_bytes, minor_faults, \
             major_faults, voluntary_cs, involuntary_cs, exit_code, signal, counters \
             FROM samples WHERE benchmark_id = ?1 ORDER BY iteration",
        )
        .at(path)?;
    let rows = stmt
        .query_map([bench_id], |r| {
            Ok((
                Sample {
                    iteration: r.get(0)?,
                    wall_ns: to_u64(r.get(1)?),
                    user_ns: to_u64(r.get(2)?),
                    sys_ns: to_u64(r.get(3)?),
                    peak_rss_bytes: to_u64(r.get(4)?),
                    minor_faults: to_u64(r.get(5)?),
                    major_faults: to_u64(r.get(6)?),
                    voluntary_cs: to_u64(r.get(7)?),
                    involuntary_cs: to_u64(r.get(8)?),
                    exit_code: r.get(9)?,
                    signal: r.get(10)?,
                    counters: BTreeMap::new(),
                },
                r.get::<_, Option<String>>(11)?,
            ))
        })
        .at(path)?;
    let mut out = Vec::new();
    for row in rows {
        let (mut sample, counters) = row.at(path)?;
        if let Some(json) = counters {
            // serde_json writes non-finite floats as null; read them back as NaN.
            let raw: BTreeMap<String, Option<f64>> = serde_json::from_str(&json).at(path)?;
            sample.counters = raw
                .into_iter()
                .map(|(k, v)| (k, v.unwrap_or(f64::NAN)))
                .collect();
        }
        out.push(sample);
    }
    Ok(out)
}

/// Loads a run's probe results in the order stored; NULL numbers (NaN when
/// written) load as NaN.
fn load_probe_results(
    conn: &Connection,
    path: &Path,
    run_id: i64,
) -> Result<Vec<ProbeResult>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT probe, metric, value, unit, lower_is_better, cycles, spread, stable, \
             headline, note FROM probe_results WHERE run_id = ?1 ORDER BY position",
        )
        .at(path)?;
    let rows = stmt
        .query_map([run_id], |r| {
            Ok(ProbeResult {
                probe: r.get(0)?,
                metric: r.get(1)?,
                value: r.get::<_, Option<f64>>(2)?.unwrap_or(f64::NAN),
                unit: r.get(3)?,
                lower_is_better: r.get(4)?,
                cycles: r.get(5)?,
                spread: r.get::<_, Option<f64>>(6)?.unwrap_or(f64::NAN),
                stable: r.get(7)?,
                headline: r.get(8)?,
                note: r.get(9)?,
            })
        })
        .at(path)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().at(path)
}

/// Rebuilds the full environment from the shared env row and the run's context facts.
fn merged_environment(path: &Path, facts: &str, context: &str) -> Result<Environment, StoreError> {
    let mut env: Environment = serde_json::from_str(facts).at(path)?;
    let context: Environment = serde_json::from_str(context).at(path)?;
    env.merge(context);
    Ok(env)
}

fn git_info(
    commit: Option<String>,
    branch: Option<String>,
    dirty: Option<bool>,
) -> Option<GitInfo> {
    commit.map(|commit| GitInfo {
        commit,
        branch,
        dirty: dirty.unwrap_or(false),
    })
}

fn parse_status(path: &Path, id: i64, s: &str) -> Result<RunStatus, StoreError> {
    RunStatus::parse(s).ok_or_else(|| StoreError::Corrupt {
        path: path.to_path_buf(),
        detail: format!("run {id} has unknown status {s:?}"),
    })
}

fn parse_mode(path: &Path, id: i64, s: &str) -> Result<Mode, StoreError> {
    Mode::parse(s).ok_or_else(|| StoreError::Corrupt {
        path: path.to_path_buf(),
        detail: format!("run {id} has unknown mode {s:?}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_1_store_is_migrated_forward_and_keeps_its_runs() {
        let dir = std::env::temp_dir().join(format!("perfsleuth-migrate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("v1.db");
        {
            // A store exactly as version 1 of perfsleuth left it.
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(MIGRATIONS[0]).unwrap();
            conn.pragma_update(None, "application_id", APPLICATION_ID as i32)
                .unwrap();
            conn.pragma_update(None, "user_version", 1).unwrap();
            conn.execute(
                "INSERT INTO environments (id, hash, facts) VALUES (1, 'h', '{}')",
                [],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO runs (id, started_at, status, tool_version, mode, options, environment_id, context) \
                 VALUES (1, '2026-01-01T00:00:00.000Z', 'complete', '0.1.0', 'walltime', 'null', 1, '{}')",
                [],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO benchmarks (id, run_id, position, name, command, argv, parameters) \
                 VALUES (1, 1, 0, 'old', 'true', '[\"true\"]', '{}')",
                [],
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        let run = store.load_run(1).unwrap().unwrap();
        assert_eq!(run.benchmarks[0].name, "old");
        assert!(run.benchmarks[0].facts.facts.is_empty());
        let version: u32 = store
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, STORE_SCHEMA_VERSION);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn comparability_depends_on_identity_facts_only() {
        let mut a = Environment::default();
        a.set("cpu.model", "X", ImpactClass::Identity);
        a.set("noise.loadavg", "0.1", ImpactClass::Context);
        let mut b = a.clone();
        b.set("noise.loadavg", "3.0", ImpactClass::Context);
        b.set("cpu.freq.governor", "powersave", ImpactClass::Performance);
        assert_eq!(comparability_hash(&a), comparability_hash(&b));
        b.set("cpu.model", "Y", ImpactClass::Identity);
        assert_ne!(comparability_hash(&a), comparability_hash(&b));
        assert_eq!(comparability_hash(&a).len(), 12);
    }

    #[test]
    fn migrations_define_the_schema_version() {
        assert_eq!(STORE_SCHEMA_VERSION as usize, MIGRATIONS.len());
        assert_eq!(&APPLICATION_ID.to_be_bytes(), b"PSLT");
    }

    #[test]
    fn sha256_hex_matches_a_known_digest() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
