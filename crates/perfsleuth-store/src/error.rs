//! The store's one error type and the conversions that name the store file.

use rusqlite::ErrorCode;
use std::path::{Path, PathBuf};

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
        /// [`STORE_SCHEMA_VERSION`](crate::STORE_SCHEMA_VERSION).
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
    /// A `--store` value with a scheme other than `sqlite:` or `postgres://`.
    #[error(
        "unsupported store {url:?}: {reason} (hint: use sqlite:PATH, a bare PATH or postgres://USER@HOST/DB)"
    )]
    UnsupportedUrl {
        /// The value as given.
        url: String,
        /// Why it was rejected.
        reason: String,
    },
    /// The store's `user_version` says one schema, its tables another: it
    /// was changed outside perfsleuth. Nothing is migrated.
    #[error(
        "{}: the store says schema version {version} but its tables do not match ({detail}), so it was changed outside perfsleuth; it was left untouched (hint: restore it from a backup, or {HINT_OTHER})",
        path.display()
    )]
    SchemaMismatch {
        /// The store file.
        path: PathBuf,
        /// Its `user_version`.
        version: u32,
        /// What SQLite refused, one line.
        detail: String,
    },
    /// Any other SQLite failure.
    #[error(
        "{}: SQLite error: {} (hint: retry; if it persists, check the file and its directory, or {HINT_OTHER})",
        path.display(), one_line(source)
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
    /// A PostgreSQL database that holds another application's tables.
    #[error(
        "{place}: not a perfsleuth database: it holds other tables and no perfsleuth_meta; it was left untouched (hint: give an empty database, e.g. one made with createdb, or one perfsleuth set up)"
    )]
    ForeignDatabase {
        /// The URL without its password.
        place: String,
    },
    /// A PostgreSQL server could not be reached or refused the login.
    #[error(
        "cannot connect to {place}: {detail} (hint: check the URL, that the server runs and that the user may log in, or use --store sqlite:PATH)"
    )]
    Unreachable {
        /// The URL without its password.
        place: String,
        /// What the client library said, one line.
        detail: String,
    },
    /// An open PostgreSQL connection broke during a statement (the server
    /// restarted or was stopped, the network failed): its transaction may
    /// or may not have committed (a lost COMMIT's answer), and a fresh
    /// connection may work at once.
    #[error(
        "lost the connection to {place}: {detail} (hint: the database server restarted or the network failed; run the command again: what was stored before is kept)"
    )]
    Lost {
        /// The URL without its password.
        place: String,
        /// What the client library said, one line.
        detail: String,
    },
    /// Any other PostgreSQL failure.
    #[error(
        "{place}: PostgreSQL error: {detail} (hint: retry; if it persists, check the server's log)"
    )]
    Postgres {
        /// The URL without its password.
        place: String,
        /// What the server said, one line.
        detail: String,
    },
    /// The database refused a value of the run (PostgreSQL's data and
    /// integrity errors, e.g. a NUL character in a text): sending it again
    /// will not help.
    #[error(
        "{place}: the database refused the data: {detail} (hint: check the run for text PostgreSQL cannot store, such as NUL characters)"
    )]
    Rejected {
        /// The URL without its password.
        place: String,
        /// What the server said.
        detail: String,
    },
    /// A row that must be unique already exists (a run's UUID, a token).
    #[error("{0} already exists")]
    Conflict(String),
    /// No project of that name on this store.
    #[error(
        "no project {0:?} on this store (hint: `perfsleuth server token create --project NAME` creates it)"
    )]
    NoProject(String),
    /// A JSON column could not be encoded or decoded.
    #[error("{}: stored JSON is malformed: {source} (hint: the store may be damaged; {HINT_OTHER})", path.display())]
    Json {
        /// The store file.
        path: PathBuf,
        /// The underlying error.
        source: serde_json::Error,
    },
}

/// The first line of an error, without the SQL text rusqlite appends
/// ("… in CREATE TABLE …"): an error message is one line.
pub(crate) fn one_line(e: &dyn std::fmt::Display) -> String {
    const SQL: [&str; 9] = [
        "CREATE", "SELECT", "INSERT", "UPDATE", "DELETE", "ALTER", "DROP", "PRAGMA", "WITH",
    ];
    let text = e.to_string();
    let line = text.lines().next().unwrap_or_default();
    let sql_at = line.match_indices(" in ").find(|(i, _)| {
        let rest = line[i + 4..].trim_start();
        SQL.iter().any(|k| rest.starts_with(k))
    });
    match sql_at {
        Some((i, _)) => line[..i].to_string(),
        None => line.to_string(),
    }
}

/// Turns a SQLite error into the most specific [`StoreError`], so callers and
/// users see "corrupt" or "unwritable" rather than a raw SQLite code.
pub(crate) fn sql_err(path: &Path, e: rusqlite::Error) -> StoreError {
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
            // What a full disk often looks like when it hits the WAL or its
            // shared-memory file rather than the database itself.
            ErrorCode::SystemIoFailure => {
                return StoreError::Unwritable {
                    path,
                    detail: format!("{detail} (a full disk or a failing device)"),
                };
            }
            _ => {}
        }
    }
    StoreError::Sqlite { path, source: e }
}

/// Attaches the store path to library errors.
pub(crate) trait At<T> {
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
