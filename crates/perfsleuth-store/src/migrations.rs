//! Recognising our files and bringing them forward: the `application_id`
//! and `user_version` checks (on the raw header before SQLite opens the file,
//! and again under SQLite's lock) and the forward migrations.

use crate::error::{At, StoreError};
use crate::schema;
use rusqlite::{Connection, TransactionBehavior};
use std::io;
use std::path::Path;

/// `PRAGMA application_id` of every perfsleuth store: "PSLT" in ASCII.
pub const APPLICATION_ID: u32 = 0x5053_4c54;

/// Newest store schema this build understands (`PRAGMA user_version`).
pub const STORE_SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Forward migrations; step `i` takes the schema from version `i` to `i + 1`.
/// Append only: a released step must never change, since stores in the wild
/// have already run it.
pub(crate) const MIGRATIONS: &[&str] = &[
    schema::INITIAL_TABLES,
    schema::BENCHMARK_FACTS,
    schema::BENCHMARK_PROFILE,
    schema::PROBE_RESULTS,
    schema::SAMPLE_ROUND,
    schema::METRIC_SUMMARIES,
    schema::SAMPLE_WALL_EXACT,
    schema::BENCHMARK_SUMMARIES,
    schema::PROJECTS_AND_TOKENS,
    schema::BENCHMARK_LOCKS,
    schema::BENCHMARK_STACKS,
    schema::BENCHMARK_ALLOCS,
    schema::RUN_BISECTION,
    schema::BENCHMARK_BINARY,
    schema::READ_INDEXES,
    schema::SAMPLE_KEY_PER_STATEMENT,
];

/// The first 16 bytes of every SQLite 3 database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// What the hand-made header check found at a path.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FileState {
    /// Nothing there (or a parent is not a directory).
    Missing,
    /// A 0-byte file: SQLite treats it as an empty database.
    Empty,
    /// A SQLite file that may be ours; SQLite must confirm.
    Sqlite,
}

/// Checks the file by hand before SQLite sees it, because SQLite treats some
/// non-databases as empty databases and would happily write into them.
pub(crate) fn precheck(path: &Path) -> Result<FileState, StoreError> {
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
    let header = read_header(path, &meta).map_err(unreadable)?;
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

/// Descriptors of the store files whose header this process read, never
/// closed. Closing any descriptor of a file drops every POSIX lock the
/// process holds on it (fcntl semantics) — SQLite's own included, whose
/// connections keep theirs in a shared table for exactly this reason, but
/// know nothing of ours. A server opening a connection while others of its
/// own were live lost its locks that way; another process closing what it
/// then took for the last connection checkpointed and deleted the WAL and
/// shared memory the server still wrote to, and its runs and token
/// revocations were gone (issue 37). One descriptor per live store file is
/// the price; a file no longer at its path (a removed temporary store, a
/// replaced one) lets its descriptor go, since no connection can reach it
/// by that path any more.
static HEADERS: std::sync::Mutex<Vec<Held>> = std::sync::Mutex::new(Vec::new());

/// A store file whose header was read: its path, device and inode, and the
/// descriptor kept open.
type Held = (std::path::PathBuf, (u64, u64), std::fs::File);

/// The first 100 bytes of the file at `path` (`meta` its metadata), through
/// a descriptor this process keeps open (see [`HEADERS`]).
fn read_header(path: &Path, meta: &std::fs::Metadata) -> io::Result<Vec<u8>> {
    use std::os::unix::fs::{FileExt, MetadataExt};
    let id = |m: &std::fs::Metadata| (m.dev(), m.ino());
    let key = id(meta);
    let mut held = HEADERS.lock().unwrap_or_else(|p| p.into_inner());
    held.retain(|(p, k, _)| std::fs::metadata(p).is_ok_and(|m| id(&m) == *k));
    let at = match held.iter().position(|(_, k, _)| *k == key) {
        Some(i) => i,
        None => {
            let file = std::fs::File::open(path)?;
            // Replaced between the look and the open: kept under the
            // identity of what was opened.
            let opened = id(&file.metadata()?);
            held.push((path.to_path_buf(), opened, file));
            held.len() - 1
        }
    };
    let mut header = vec![0u8; 100];
    let mut filled = 0;
    while filled < header.len() {
        match held[at].2.read_at(&mut header[filled..], filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    header.truncate(filled);
    Ok(header)
}

/// The identifying pragmas and the number of schema objects, read in one go.
pub(crate) struct Identity {
    app_id: u32,
    pub(crate) version: u32,
    objects: i64,
}

impl Identity {
    /// Reads them from `conn`, whose file is `path`.
    pub(crate) fn read(conn: &Connection, path: &Path) -> Result<Identity, StoreError> {
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
    pub(crate) fn check(&self, path: &Path) -> Result<(), StoreError> {
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

/// Applies pending migrations in one IMMEDIATE transaction; the version is
/// re-read under the lock because another process may have migrated meanwhile.
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .at(path)?;
    let id = Identity::read(&tx, path)?;
    id.check(path)?;
    if id.version < STORE_SCHEMA_VERSION {
        for step in &MIGRATIONS[id.version as usize..] {
            // The transaction rolls back: a store whose tables are ahead of
            // its version number is left exactly as it was.
            tx.execute_batch(step)
                .map_err(|e| StoreError::SchemaMismatch {
                    path: path.to_path_buf(),
                    version: id.version,
                    detail: crate::error::one_line(&e),
                })?;
        }
        tx.pragma_update(None, "application_id", APPLICATION_ID as i32)
            .at(path)?;
        tx.pragma_update(None, "user_version", STORE_SCHEMA_VERSION as i32)
            .at(path)?;
    }
    tx.commit().at(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RunReader as _, SqliteStore};

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
            conn.execute(
                "INSERT INTO benchmarks (id, run_id, position, name, command, argv, parameters) \
                 VALUES (2, 1, 1, 'hashed', 'true', '[\"true\"]', '{}')",
                [],
            )
            .unwrap();
            // A bisection's run stored before runs had a bisection column.
            conn.execute(
                "INSERT INTO runs (id, started_at, status, tool_version, mode, options, environment_id, context) \
                 VALUES (2, '2026-01-01T00:01:00.000Z', 'complete', '0.1.0', 'walltime', \
                 '{\"bisect\":{\"id\":\"b1\",\"step\":3,\"kind\":\"verify\"}}', 1, '{}')",
                [],
            )
            .unwrap();
        }
        {
            // Facts came with version 2: a benchmark's program hash before
            // benchmarks had a column for it.
            let conn = Connection::open(&path).unwrap();
            for step in &MIGRATIONS[1..13] {
                conn.execute_batch(step).unwrap();
            }
            conn.pragma_update(None, "user_version", 13).unwrap();
            conn.execute(
                "UPDATE benchmarks SET facts = '{\"binary.sha256\":{\"class\":\"identity\",\"value\":\"abc\"}}' WHERE id = 2",
                [],
            )
            .unwrap();
        }
        let store = SqliteStore::open(&path).unwrap();
        let hashed: Option<String> = store
            .conn
            .query_row(
                "SELECT binary_sha256 FROM benchmarks WHERE id = 2",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(hashed.as_deref(), Some("abc"));
        let run = store.load_run(1).unwrap().unwrap();
        assert_eq!(run.benchmarks[0].name, "old");
        assert!(run.benchmarks[0].facts.facts.is_empty());
        let bisection = store.bisection_runs("b1").unwrap();
        assert_eq!(bisection.len(), 1);
        assert_eq!((bisection[0].run.id, bisection[0].step), (2, 3));
        let version: u32 = store
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, STORE_SCHEMA_VERSION);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn migrations_define_the_schema_version() {
        assert_eq!(STORE_SCHEMA_VERSION as usize, MIGRATIONS.len());
        assert_eq!(&APPLICATION_ID.to_be_bytes(), b"PSLT");
    }
}
