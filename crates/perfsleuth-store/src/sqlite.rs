//! The SQLite backend's connection: opening, the checks before the first
//! write, and the pragmas every connection runs with.

use crate::error::{At, StoreError, sql_err};
use crate::location::ensure_gitignore;
use crate::migrations::{FileState, Identity, STORE_SCHEMA_VERSION, migrate, precheck};
use crate::queries::{Admin, Backend, RunReader, RunWriter};
use crate::schema;
use crate::sql::{Db, Dialect, Row, Session, TxOp, Val};
use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a writer waits for another process holding the store's lock.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// An open perfsleuth store in one SQLite file; its operations are the [`crate::Store`] trait's.
pub struct SqliteStore {
    pub(crate) conn: Connection,
    session: Session,
    /// The data version and changes [`Db::data_revision`] last saw.
    last_seen: std::cell::Cell<Option<(i64, i64)>>,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.session.place)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens or creates a store, creating parent directories (and `.perfsleuth/.gitignore`) as needed.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
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
        let store = SqliteStore::connect(path, true)?;
        // After connecting, so a refused file leaves no trace beside it either.
        ensure_gitignore(path)?;
        Ok(store)
    }

    /// Opens an existing store for listing and showing; a missing store is a [`StoreError::NoResults`].
    pub fn open_existing(path: &Path) -> Result<SqliteStore, StoreError> {
        match precheck(path)? {
            FileState::Missing | FileState::Empty => Err(StoreError::NoResults {
                path: path.to_path_buf(),
            }),
            FileState::Sqlite => match SqliteStore::connect(path, false) {
                Err(e) if on_read_only_file_system(path) => {
                    SqliteStore::connect_immutable(path).map_err(|_| e)
                }
                other => other,
            },
        }
    }

    /// Opens a store on a read-only file system for reading: as immutable
    /// (SQLite's `immutable=1`: no locks, no `-shm` to create), which is
    /// true there, since no process can change the file. Writes fail.
    fn connect_immutable(path: &Path) -> Result<SqliteStore, StoreError> {
        let mut uri = String::from("file:");
        // Percent-encoded but for the plainest bytes: SQLite decodes them.
        for &b in path.as_os_str().as_encoded_bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-' | b'~') {
                uri.push(char::from(b));
            } else {
                uri.push_str(&format!("%{b:02X}"));
            }
        }
        uri.push_str("?immutable=1");
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&uri, flags).at(path)?;
        let id = Identity::read(&conn, path)?;
        id.check(path)?;
        if id.version >= 1 {
            schema::probe(&conn, path, id.version)?;
        }
        if id.version < STORE_SCHEMA_VERSION {
            return Err(StoreError::Unreadable {
                path: path.to_path_buf(),
                detail: "the store needs an upgrade, which a read-only file system does not allow"
                    .into(),
            });
        }
        Ok(SqliteStore {
            last_seen: std::cell::Cell::new(None),
            conn,
            session: Session::new(path.to_path_buf()),
        })
    }

    /// Connects, verifies the file is ours, then (and only then) configures and migrates it.
    fn connect(path: &Path, create: bool) -> Result<SqliteStore, StoreError> {
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
            schema::probe(&conn, path, id.version)?;
        }

        set_wal(&conn, path)?;
        conn.pragma_update(None, "synchronous", "NORMAL").at(path)?;
        conn.pragma_update(None, "foreign_keys", true).at(path)?;
        if id.version < STORE_SCHEMA_VERSION {
            migrate(&mut conn, path)?;
        }
        Ok(SqliteStore {
            last_seen: std::cell::Cell::new(None),
            conn,
            session: Session::new(path.to_path_buf()),
        })
    }

    /// The store's file.
    pub fn path(&self) -> &Path {
        &self.session.place
    }
}

/// Whether the file at `path` is on a read-only file system (`EROFS` on
/// opening it for writing). Only asked after a connection failed, when
/// this process holds no other descriptor of the file.
fn on_read_only_file_system(path: &Path) -> bool {
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .is_err_and(|e| e.kind() == std::io::ErrorKind::ReadOnlyFilesystem)
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

/// Whether an error means another connection holds the lock.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

impl rusqlite::ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Owned(match self {
            Val::Null => Value::Null,
            Val::Int(v) => Value::Integer(*v),
            Val::Real(v) => Value::Real(*v),
            Val::Text(v) => Value::Text(v.clone()),
            Val::Bool(v) => Value::Integer(i64::from(*v)),
        }))
    }
}

impl SqliteStore {
    /// Runs a query and hands `f` each row in one buffer, which `f` may
    /// keep (taking it) or leave to be refilled.
    fn each_row(
        &self,
        sql: &str,
        params: &[Val],
        mut f: impl FnMut(&mut Row) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        crate::sql::count_statement();
        let path = &self.session.place;
        let mut stmt = self.conn.prepare_cached(sql).at(path)?;
        let n = stmt.column_count();
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params.iter()))
            .map_err(|e| conflict_or(path, e))?;
        let mut row = Row(Vec::with_capacity(n));
        // An INSERT … RETURNING fails on its first step.
        while let Some(r) = rows.next().map_err(|e| conflict_or(path, e))? {
            row.0.clear();
            row.0.reserve(n);
            for i in 0..n {
                row.0.push(match r.get_ref(i).at(path)? {
                    ValueRef::Null => Val::Null,
                    ValueRef::Integer(v) => Val::Int(v),
                    ValueRef::Real(v) => Val::Real(v),
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        Val::Text(String::from_utf8_lossy(t).into_owned())
                    }
                });
            }
            f(&mut row)?;
        }
        Ok(())
    }
}

impl Db for SqliteStore {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn data_revision(&self) -> Result<String, StoreError> {
        // The data version moves with other connections' commits, the
        // total of changed rows with this one's (rolled back ones too: a
        // token that moves needlessly only costs a recomputation). Both
        // are this connection's own counters, so what is shared between a
        // process's connections is a generation, moved by any connection
        // that sees its counters move — or that looks for the first time,
        // not knowing what the others saw (one per file). Read after the
        // counters, the generation is never older than the data read after.
        static GENERATIONS: std::sync::LazyLock<
            std::sync::Mutex<std::collections::HashMap<std::path::PathBuf, u64>>,
        > = std::sync::LazyLock::new(Default::default);
        let seen: (i64, i64) = self
            .conn
            .query_row(
                "SELECT data_version, total_changes() FROM pragma_data_version",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .at(&self.session.place)?;
        let moved = self.last_seen.replace(Some(seen)) != Some(seen);
        let mut generations = GENERATIONS.lock().unwrap_or_else(|p| p.into_inner());
        let generation = generations.entry(self.session.place.clone()).or_default();
        if moved {
            *generation += 1;
        }
        // The file's name too: a generation counts for its own file only.
        Ok(format!(
            "sqlite {} {}",
            self.session.place.display(),
            *generation
        ))
    }

    fn query(&self, sql: &str, params: &[Val]) -> Result<Vec<Row>, StoreError> {
        let mut out = Vec::new();
        self.each_row(sql, params, |row| {
            out.push(std::mem::replace(row, Row(Vec::new())));
            Ok(())
        })?;
        Ok(out)
    }

    fn query_each(
        &self,
        sql: &str,
        params: &[Val],
        each: &mut dyn FnMut(&Row) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.each_row(sql, params, |row| each(row))
    }

    fn execute(&self, sql: &str, params: &[Val]) -> Result<u64, StoreError> {
        crate::sql::count_statement();
        let mut stmt = self.conn.prepare_cached(sql).at(&self.session.place)?;
        let n = stmt
            .execute(rusqlite::params_from_iter(params.iter()))
            .map_err(|e| conflict_or(&self.session.place, e))?;
        Ok(n as u64)
    }

    fn control(&self, op: TxOp) -> Result<(), StoreError> {
        self.conn
            .execute_batch(match op {
                // IMMEDIATE takes the write lock now, so a writer waits for
                // another here (busy timeout) rather than failing mid-way.
                TxOp::BeginWrite => "BEGIN IMMEDIATE",
                TxOp::BeginRead => "BEGIN",
                TxOp::Commit => "COMMIT",
                TxOp::Rollback => "ROLLBACK",
            })
            .at(&self.session.place)
    }

    fn session(&self) -> &Session {
        &self.session
    }

    fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }
}

/// A unique-constraint failure is a [`StoreError::Conflict`]; anything else as usual.
fn conflict_or(path: &Path, e: rusqlite::Error) -> StoreError {
    if let rusqlite::Error::SqliteFailure(f, msg) = &e
        && (f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
            || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY)
    {
        return StoreError::Conflict(msg.clone().unwrap_or_else(|| "a unique row".into()));
    }
    crate::error::sql_err(path, e)
}

impl Backend for SqliteStore {}
impl RunWriter for SqliteStore {}
impl RunReader for SqliteStore {}
impl Admin for SqliteStore {}
